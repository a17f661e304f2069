"""Read planning: snapshot + filter + projection -> scan tasks; and a pyarrow executor.

Planning and reading are separate steps (as pyiceberg does it): ``plan_scan`` skips
files by partition values and statistics, puts back those on which a cast in the
filter could raise, and returns tasks (each with its deletion vector, if any);
``read_tasks`` reads them with varlake's Parquet reader, drops the rows deletion vectors
delete and applies each file's exact residual filter. Every engine (``Table.scan``,
``varlake.spark``) plans with ``plan_scan``; ``file_layout`` gives a file's footer facts
(where its Variant paths are perfectly shredded), read through ``Storage``.
"""

from varlake.read.arrow_reader import read_tasks
from varlake.read.layout import FileLayout, file_layout
from varlake.read.planner import PutBack, ScanPlan, ScanTask, bind_filter, partition_types, plan_scan, schema_types
from varlake.read.residual import fold_partitions

__all__ = [
    "FileLayout",
    "PutBack",
    "ScanPlan",
    "ScanTask",
    "bind_filter",
    "file_layout",
    "fold_partitions",
    "partition_types",
    "plan_scan",
    "read_tasks",
    "schema_types",
]
