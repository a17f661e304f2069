"""The DataFrame a table's view stands for (``table_frame``): the union of its file groups'
reads, each projected to the view's columns in one ``selectExpr`` (``derived_sql``), files
with deletion vectors read without their deleted rows (``deleted_rows``), column-mapped
files under their read names (``mapped_read``), and rebuilt structs and arrays computed
apart from the query where that pays (``_keep_apart``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import reduce
from typing import Any

from varlake.delta.schema import PrimitiveType
from varlake.semantics.types import backquote
from varlake.spark.reading.deleted_rows import without_deleted_rows
from varlake.spark.reading.derived_sql import (
    derived_column_sql,
    node_sql,
    partition_sql,
    rebuilt,
    shredded_field,
    spark_type_sql,
    target_sql,
)
from varlake.spark.reading.leaf_casts import failure_sql
from varlake.spark.reading.mapped_read import mapped_reads, read_path
from varlake.spark.reading.placeholders import FLAG_COLUMN
from varlake.spark.reading.planner import ISNULL, FileGroup, PathUse, TablePlan, is_nested, read_use, target_type
from varlake.spark.session.local import PARQUET_READ_OPTIONS
from varlake.spark.types import to_spark_schema, to_spark_type

__all__ = ["NO_MERGE_PARTITIONS", "all_shredded", "table_frame"]


#: a coalesce target above any partition count: the coalesce merges nothing (``_keep_apart``)
NO_MERGE_PARTITIONS = 1 << 30


def all_shredded(plan: TablePlan) -> bool:
    """Whether every file a plan reads is in a shredded group (at least one): its view then
    has no flag column and the query reads the derived columns directly (``rewrite.rewrite``)."""
    return bool(plan.groups) and all(g.kind == "shredded" for g in plan.groups)


def _group_frame(session: Any, plan: TablePlan, group: FileGroup, derived: Mapping[PathUse, str]) -> Any:
    """One file group read as asked, projected to the view's columns (SQL, so one JVM call
    per read); a column-mapped table's files may take more than one read (``mapped_reads``)."""
    if plan.scan.column_mapping is None:
        return _read_frame(session, plan, group, derived, group.tasks, None)
    frames = [_read_frame(session, plan, group, derived, tasks, files) for tasks, files in mapped_reads(plan, group.tasks)]
    return reduce(lambda a, b: a.unionByName(b), frames)


def _read_frame(
    session: Any, plan: TablePlan, group: FileGroup, derived: Mapping[PathUse, str], tasks: Sequence[Any], files: list[Any] | None
) -> Any:
    """``tasks`` of a group read with ``files`` (a mapped table's read fields, in the
    table's order) or the table's own fields, projected to the view's columns."""
    from pyspark.sql.types import StructType as SparkStruct

    partitions = dict(group.partition_values)
    spark_schema = to_spark_schema(plan.schema)
    shredded = group.kind == "shredded"
    leaves = group.leaves
    read_fields, columns = [], []
    read_names: dict[tuple[str, ...], tuple[str, ...]] = {}  # a used Variant column's path -> its read names
    for i, f in enumerate(spark_schema.fields):
        if f.name in partitions:
            columns.append(f"{partition_sql(plan, f.name, partitions[f.name])} AS {backquote(f.name)}")
            continue
        source = files[i] if files is not None else f
        if shredded:
            read, value = shredded_field(source, (f.name,), leaves, (source.name,), f)
            if files is not None:
                for use in leaves:
                    if use.column[0] == f.name:
                        read_names[use.column] = read_path(source, f, use.column)
        else:
            read, value = source, backquote(source.name)
        if read is not None:
            read_fields.append(read)
        if files is not None:  # the read names; CAST renames nested fields by position
            value = f"CAST({value} AS {spark_type_sql(plan.schema.fields[i].type)})"
        columns.append(f"{value} AS {backquote(f.name)}")
    read_schema = SparkStruct(read_fields)
    plain = [task for task in tasks if task.deletion_vector is None]
    frames = [_parquet_read(session, plan, plain, read_schema)] if plain else []
    deleting = [task for task in tasks if task.deletion_vector is not None]
    if deleting:
        frames.append(without_deleted_rows(_parquet_read(session, plan, deleting, read_schema), plan, deleting, read_schema))
    frame = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    if not all_shredded(plan):  # with only shredded groups nothing reads the flag
        columns.append(f"{'true' if shredded else 'false'} AS {FLAG_COLUMN}")
    apart = shredded and plan.keep_apart and any(rebuilt(use) for use in derived)
    tested: dict[PathUse, str] = {}  # failure columns computed over their use's rebuilt value
    for use, name in derived.items():
        if use.failure and replace(use, failure=False) in group.proven:
            columns.append(f"CAST(NULL AS VARIANT) AS {name}")  # never fails in these files
            continue
        if apart and use.failure and is_nested(use.target) and replace(use, failure=False) in derived:
            tested[use] = name
            continue
        leaf = leaves[read_use(use)] if shredded else ""
        value = derived_column_sql(use, leaf, read_names.get(use.column)) if shredded else f"CAST(NULL AS {target_sql(use)})"
        columns.append(f"{value} AS {name}")
    if not apart:
        return frame.selectExpr(*columns)
    return _keep_apart(_over_rebuilt(frame, columns, tested, derived, leaves, read_names))


def _over_rebuilt(
    frame: Any,
    columns: list[str],
    tested: Mapping[PathUse, str],
    derived: Mapping[PathUse, str],
    leaves: Mapping[PathUse, str],
    read_names: Mapping[tuple[str, ...], tuple[str, ...]],
) -> Any:
    """The view's projection, the failure columns of rebuilt arrays (``tested``) computed by
    a second projection that reads each use's rebuilt value (``leaf_casts.failure_sql``'s
    ``rebuilt``) instead of casting every leaf again inside the test: the first projection
    passes the read Variant columns on under ``__vl_read_<n>``. Spark keeps the two apart
    (it does not collapse a projection whose costly column the next one reads more than
    once), so each array is rebuilt once and its leaves cast once. Measured on TPC-H Q12
    at 150k orders (three date leaves per line item): 0.59 s of CPU against 0.72 s."""
    if not tested:
        return frame.selectExpr(*columns)
    sources: dict[str, str] = {}
    later = []
    for use, name in tested.items():
        column = read_names.get(use.column) or use.column
        alias = sources.setdefault(column[0], f"__vl_read_{len(sources)}")
        node = node_sql(use, (alias, *column[1:]))
        later.append(f"{failure_sql(node, target_type(use.target), target_type(leaves[use]), derived[replace(use, failure=False)])} AS {name}")
    passed = [f"{backquote(read)} AS {alias}" for read, alias in sources.items()]
    return frame.selectExpr(*columns, *passed).selectExpr("*", *later).drop(*sources.values())


def _keep_apart(frame: Any) -> Any:
    """The view's rows behind a node Spark neither pushes filters through nor collapses
    projections across: a sample of fraction 1 (every row: Bernoulli sampling keeps a row
    when a draw in [0, 1) is below 1), so a rebuilt struct or array is computed once.
    Otherwise Spark substitutes it into every filter it pushes down -- e.g. the ``size(a) >
    0 AND a IS NOT NULL`` it infers below ``explode(a)`` -- and rebuilds the array once per
    filter as well as in the projection. Only where the query filters on none of the
    table's paths (``_kept_apart``): such a filter would run above the node, after every
    row's rebuild instead of before it (measured: TPC-H Q3 and Q10 took twice the CPU).

    Below the sample, a coalesce that merges no partitions (``CoalescedRDD`` keeps the
    parent's partitions when asked for more) ends Spark's whole-stage code generation: the
    rebuild is compiled in a stage of its own, whose code is the same for every query over
    the view, and only the query's smaller stage is compiled again when its literals change.
    In one stage with the query, each new literal recompiled and re-warmed the whole
    rebuild (TPC-H Q1, Q6 and Q12 at 150k orders, a new literal every run: 2.03x
    relational's wall time in one stage, 1.57x split)."""
    return frame.coalesce(NO_MERGE_PARTITIONS).sample(fraction=1.0, seed=0)


def _parquet_read(session: Any, plan: TablePlan, tasks: Sequence[Any], read_schema: Any) -> Any:
    """One Parquet relation over the data files of ``tasks``, reading ``read_schema``."""
    locations = [plan.table.open_file(task.relative_path) for task in tasks]
    return session.read.schema(read_schema).options(**PARQUET_READ_OPTIONS).parquet(*locations)


def _empty_frame(session: Any, plan: TablePlan, derived: Mapping[PathUse, str]) -> Any:
    from pyspark.sql.types import BooleanType, StructField
    from pyspark.sql.types import StructType as SparkStruct

    fields = list(to_spark_schema(plan.schema).fields) + [StructField(FLAG_COLUMN, BooleanType(), True)]
    for use, name in derived.items():
        if use.target == ISNULL:
            dtype = BooleanType()
        else:
            dtype = to_spark_type(target_type(use.target) if is_nested(use.target) else PrimitiveType(use.target))
        fields.append(StructField(name, dtype, True))
    return session.createDataFrame([], SparkStruct(fields))


def table_frame(session: Any, plan: TablePlan, derived: Mapping[PathUse, str] | None = None) -> Any:
    """The DataFrame a table's view stands for: the union of its file groups' reads.

    With ``derived`` columns it also has the flag column saying which branch a row came
    from, unless every group is shredded (``all_shredded``).
    """
    derived = derived or {}
    frames = [_group_frame(session, plan, g, derived) for g in plan.groups]
    frame = reduce(lambda a, b: a.unionByName(b), frames) if frames else _empty_frame(session, plan, derived)
    if derived or all_shredded(plan):  # the flag is there only when the query reads it
        return frame
    return frame.drop(FLAG_COLUMN)  # nothing refers to it: keep SELECT * clean
