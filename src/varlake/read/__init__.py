"""Read planning: snapshot + filter + projection -> scan tasks; and a pyarrow executor.

Planning and reading are separate steps (as pyiceberg does it): ``plan_scan`` skips
files by partition values and statistics and returns tasks; ``read_tasks`` reads
them with varlake's Parquet reader and applies the exact residual filter.
"""

from varlake.read.arrow_reader import read_tasks
from varlake.read.planner import ScanPlan, ScanTask, bind_filter, plan_scan, schema_types

__all__ = ["ScanPlan", "ScanTask", "bind_filter", "plan_scan", "read_tasks", "schema_types"]
