"""A table's candidate files read by Spark with each row's file and index: the target side
of Spark's DELETE, UPDATE and MERGE (``varlake.spark.changes.dml``).

``target_frame`` reads the planned files (``read.plan_scan``: the same sound skipping as a
scan) with the table's schema -- Variant columns as Spark ``VariantType``, so Spark's own
Variant semantics apply -- the partition columns as typed literals, and two more columns:
``FILE_COLUMN`` (``_metadata.file_path`` as Spark spells it) and ``ROW_COLUMN``
(``_metadata.row_index``, the row's index in its file, which Spark's Parquet scan keeps
right while it prunes columns and row groups). Rows a file's current deletion vector
deletes are dropped by the reader's deletion test (``spark.deleted_rows.keep_sql``) in a
filter right above the scan, ahead of every expression of the change, and Variant
columns masked by it (as ``spark.reader`` does), so no condition ever sees a deleted row.

``file_rows`` turns the row indexes Spark found in one file back into the
engine-neutral ``read.row_matches.FileRows`` that ``write.row_changes`` retires rows by.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from varlake.delta.column_mapping import column_mapping
from varlake.delta.deletion_vectors import keep_mask
from varlake.delta.snapshot import Snapshot
from varlake.errors import TableError, UnsupportedFeatureError, VarlakeError
from varlake.read import ScanPlan, ScanTask, plan_scan
from varlake.read.row_matches import FileRows
from varlake.semantics.types import backquote
from varlake.spark.reading.deleted_rows import keep_sql
from varlake.spark.session.local import PARQUET_READ_OPTIONS
from varlake.spark.reading.deleted_rows import deleted_rows_by_name, variants_masked
from varlake.spark.reading.derived_sql import partition_sql, spark_type_sql
from varlake.spark.reading.mapped_read import ID_NAME, mapped_reads
from varlake.spark.types import to_spark_schema
from varlake.table import Table

__all__ = ["FILE_COLUMN", "ROW_COLUMN", "TargetFrame", "file_rows", "plan_candidates", "target_frame"]

FILE_COLUMN, ROW_COLUMN = "__vl_file", "__vl_row"
_SIZE, _KEEP = "__vl_size", "__vl_keep"
_EMPTY_ROWS = pa.table({})


@dataclass(frozen=True)
class TargetFrame:
    """The candidate files' rows as a DataFrame (table columns, then file and row index),
    the plan they come from and each file's task by its Spark name."""

    table: Table
    snapshot: Snapshot
    plan: ScanPlan
    frame: Any
    tasks: Mapping[str, ScanTask]

    @property
    def columns(self) -> list[str]:
        return [f.name for f in self.snapshot.schema.fields]


def plan_candidates(table: Table, snapshot: Snapshot, where: Any) -> ScanPlan:
    """The files a condition may match (``read.plan_scan``); a condition varlake cannot read
    for skipping (Spark syntax it does not parse) plans every file -- sound, only slower."""
    try:
        return plan_scan(snapshot, table.log.root_location, where)
    except VarlakeError:
        return plan_scan(snapshot, table.log.root_location, None)


def _group_frame(
    spark: Any, table: Table, snapshot: Snapshot, tasks: Sequence[ScanTask], names: dict[str, ScanTask], mapped: list[Any] | None = None
) -> Any:
    """``tasks`` read as one relation (``mapped``: a column-mapped table's read fields, in
    the table's order, from the reader's ``mapped_reads``), with each row's file and index."""
    from pyspark.sql.types import StructType as SparkStruct


    partition_columns = tuple(snapshot.partition_columns)
    spark_schema = to_spark_schema(snapshot.schema)
    data = SparkStruct([f for f in spark_schema.fields if f.name not in partition_columns])
    data_names = [backquote(f.name) for f in data.fields]
    read_schema, reads = data, data_names
    if mapped is not None:  # physical names; CAST renames nested fields by position
        read_schema = SparkStruct([r for r, f in zip(mapped, spark_schema.fields) if f.name not in partition_columns])
        reads = [
            f"CAST({backquote(r.name)} AS {spark_type_sql(snapshot.schema.field(f.name).type)}) AS {backquote(f.name)}"
            for r, f in zip(read_schema.fields, data.fields)
        ]
    locations = [table.open_file(task.relative_path) for task in tasks]
    relation = spark.read.schema(read_schema).options(**PARQUET_READ_OPTIONS).parquet(*locations)
    files = []
    for found, task in deleted_rows_by_name(relation, table, tasks):
        names[found.name] = task
        files.append(found)
    meta = [f"_metadata.file_path AS {FILE_COLUMN}", f"_metadata.row_index AS {ROW_COLUMN}"]
    frame = relation.selectExpr(*reads, *meta, f"_metadata.file_size AS {_SIZE}")
    if any(task.deletion_vector is not None for task in tasks):
        guard = f"{table.path}: a file with a deletion vector is named otherwise than varlake expects"
        keep = keep_sql(files, ROW_COLUMN, FILE_COLUMN, _SIZE, guard)
        masked = variants_masked(data.fields, data_names, _KEEP)
        frame = frame.selectExpr(*data_names, FILE_COLUMN, ROW_COLUMN, f"{keep} AS {_KEEP}").where(_KEEP)
        frame = frame.selectExpr(*masked, FILE_COLUMN, ROW_COLUMN)
    values = dict(tasks[0].partition_values) if partition_columns else {}
    plan = SimpleNamespace(schema=snapshot.schema)
    columns = [
        f"{partition_sql(plan, f.name, values.get(f.name))} AS {backquote(f.name)}"  # type: ignore[arg-type]
        if f.name in partition_columns
        else backquote(f.name)
        for f in spark_schema.fields
    ]
    return frame.selectExpr(*columns, FILE_COLUMN, ROW_COLUMN)


def target_frame(spark: Any, table: Table, snapshot: Snapshot, plan: ScanPlan) -> TargetFrame:
    """The planned files of ``plan`` read by Spark, with each row's file and index (module doc)."""
    from pyspark.sql.types import LongType, StringType, StructField

    mapping = column_mapping(snapshot.protocol, snapshot.metadata, snapshot.schema)
    groups: dict[tuple[Any, ...], list[ScanTask]] = {}
    for task in plan.tasks:
        key = tuple(sorted(dict(task.partition_values).items(), key=lambda kv: kv[0])) if snapshot.partition_columns else ()
        groups.setdefault(key, []).append(task)
    names: dict[str, ScanTask] = {}
    frames = []
    for tasks in groups.values():
        if mapping is None:
            frames.append(_group_frame(spark, table, snapshot, tasks, names))
            continue
        for read_tasks, fields in mapped_reads(SimpleNamespace(scan=plan, table=table), tasks):  # type: ignore[arg-type]
            if any(f.name.startswith(ID_NAME) for f in fields):
                raise UnsupportedFeatureError(
                    f"{table.path}: Spark DELETE/UPDATE/MERGE on an id-mode table whose files are not laid out under "
                    "their physical names is not supported; use Table.delete/update/merge"
                )
            frames.append(_group_frame(spark, table, snapshot, read_tasks, names, fields))
    if frames:
        frame = reduce(lambda a, b: a.unionByName(b), frames)
    else:
        schema = to_spark_schema(snapshot.schema)
        fields = list(schema.fields) + [StructField(FILE_COLUMN, StringType()), StructField(ROW_COLUMN, LongType())]
        frame = spark.createDataFrame([], type(schema)(fields))
    return TargetFrame(table, snapshot, plan, frame, names)


def file_rows(target: TargetFrame, name: str, positions: Sequence[int]) -> FileRows:
    """The ``FileRows`` of file ``name`` (its Spark name) with ``positions`` matched."""
    task = target.tasks[name]
    n = task.physical_records
    if n is None:
        n = pq.ParquetFile(target.table.read_source(task.relative_path)).metadata.num_rows
    where = f"{target.table.path}: data file {task.relative_path!r}"
    if task.deletion_vector is not None:
        deleted = np.asarray(target.table.deleted_rows(task), dtype=np.uint64)
        live = keep_mask(deleted, n, where)
    else:
        deleted, live = np.empty(0, np.uint64), np.ones(n, dtype=bool)
    matched = np.zeros(n, dtype=bool)
    index = np.asarray(positions, dtype=np.int64)
    if len(index) and (index.min() < 0 or index.max() >= n):
        raise TableError(f"{where}: Spark found row {int(index.max())} beyond the file's {n} rows")
    matched[index] = True
    return FileRows(task, _EMPTY_ROWS, deleted, live, matched & live)
