"""Execute scan tasks with pyarrow: read files, add partition columns, filter exactly.

Every file is read through ``varlake.io.parquet_read.read_parquet`` so Variant columns
come back unshredded (``struct<metadata, value>``) whatever the file's layout. Files
written before a column was added get nulls for it. The residual filter is evaluated
row by row with Spark's semantics -- each file's residual filter (partition values
folded in), so a cast that could raise is evaluated on exactly the rows Spark would
evaluate it on, and a failing one raises ``ExpressionEvaluationError`` (the skipping only
removed whole files that cannot match and on which nothing could raise). As Spark does,
a row group in which no row satisfies a plain-column conjunct is dropped unevaluated,
typed ``variant_get`` calls are extracted from every row read, and each row's checks run
in Spark's order (``read.residual.filter_steps``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from varlake.delta.schema import PrimitiveType, StructType, VariantType, to_arrow_schema, variant_arrow_type
from varlake.delta.stats import leaf_columns
from varlake.errors import DataFileMissingError, TableError
from varlake.expr import AlwaysFalse, AlwaysTrue, IsNotNull, Predicate, RowEvaluator
from varlake.io.parquet_read import read_parquet
from varlake.read.planner import ScanPlan, ScanTask
from varlake.read.residual import eager_terms, filter_steps, row_group_guards
from varlake.semantics import partition_values
from varlake.variant import Variant, VariantPath
from varlake.variant.functions import variant_get

FileOpener = Callable[[str], Any]
VARIANT_ARROW_TYPE = variant_arrow_type()


def _variant_get(value: Any, path: str, type_name: str) -> Any:
    """The row evaluator's extraction: ``path`` is the expression layer's normalized path."""
    if value is None:
        return None
    return variant_get(Variant(value["metadata"], value["value"]), VariantPath.from_normalized(path), type_name)


def _partition_value(text: str | None, type_name: str, where: str) -> Any:
    """A stored partition value, typed (``varlake.semantics.partition_values``; None and '' are NULL)."""
    return partition_values.parse(text, type_name, "UTC", where)


def _variant_paths(schema: StructType) -> list[str]:
    return [".".join(path) for path, t in leaf_columns(schema) if isinstance(t, VariantType)]


def read_task(
    task: ScanTask,
    schema: StructType,
    partition_columns: Sequence[str],
    open_file: FileOpener,
    columns: Sequence[str] | None = None,
    paths: Mapping[str, Sequence[str]] | None = None,
) -> pa.Table:
    """One file as an Arrow table in the table's schema (all columns, or ``columns``), plus a
    ``"<column>:<path>"`` Variant column per requested path (reading only what they need)."""
    target = to_arrow_schema(schema)
    wanted = list(columns) if columns is not None else target.names
    data_columns = [c for c in wanted if c not in partition_columns]
    source = open_file(task.relative_path)
    try:
        available = set(_file_column_names(source))
    except FileNotFoundError:
        raise DataFileMissingError(
            f"data file {task.relative_path!r} is listed in the table log but missing from storage"
        ) from None
    present = [c for c in data_columns if c in available]
    variants = [v for v in _variant_paths(schema) if v.split(".")[0] in present]
    path_request = {c: list(p) for c, p in (paths or {}).items() if c in available}
    if present or path_request:
        table = read_parquet(source, columns=present, variant_columns=variants or None, paths=path_request or None)
    else:
        table = None
    n = task.num_records if table is None else table.num_rows
    if n is None:
        raise TableError(f"{task.relative_path}: file has no numRecords and no data columns to count")
    arrays = []
    for name in wanted:
        field = target.field(name)
        if name in partition_columns:
            t = schema.field(name).type
            value = _partition_value(
                task.partition_values.get(name),
                t.name if isinstance(t, PrimitiveType) else "string",
                f"{task.relative_path}: partition column {name!r}",
            )
            arrays.append(pa.array([value] * n, type=field.type))
        elif table is not None and name in table.column_names:
            arrays.append(_conform(table.column(name), field.type, task.relative_path, name))
        else:
            arrays.append(pa.nulls(n, field.type))
    fields = [target.field(c) for c in wanted]
    for column, requested in (paths or {}).items():
        for path in requested:
            name = f"{column}:{path}"
            fields.append(pa.field(name, VARIANT_ARROW_TYPE))
            if table is not None and name in table.column_names:
                arrays.append(_conform(table.column(name), VARIANT_ARROW_TYPE, task.relative_path, name))
            else:
                arrays.append(pa.nulls(n, VARIANT_ARROW_TYPE))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _file_column_names(source: Any) -> list[str]:
    import pyarrow.parquet as pq

    if hasattr(source, "seek"):
        names = pq.ParquetFile(source).schema_arrow.names
        source.seek(0)
        return names
    return pq.read_schema(source).names


def _after(computed: Sequence[Callable[[Mapping[str, Any]], Any]], row: Mapping[str, Any]) -> bool:
    """Evaluate each of ``computed`` on the row (a cast that fails raises); always True."""
    for compute in computed:
        compute(row)
    return True


class _RowFilter:
    """A residual filter run on rows as its ``filter_steps`` say (the order Spark checks them)."""

    def __init__(self, residual: Predicate) -> None:
        self.steps: list[Callable[[Mapping[str, Any]], bool]] = []
        for kind, what, first in filter_steps(residual):
            if kind == "not null":
                self.steps.append(lambda row, name=what: row.get(name) is not None)
            elif first:
                computed = [RowEvaluator(IsNotNull(t), variant_get=_variant_get).evaluate for t in first]
                matches = RowEvaluator(what, variant_get=_variant_get).matches
                self.steps.append(lambda row, computed=computed, matches=matches: _after(computed, row) and matches(row))
            else:
                self.steps.append(RowEvaluator(what, variant_get=_variant_get).matches)

    def mask(self, table: pa.Table) -> list[bool]:
        steps = self.steps
        return [all(step(row) for step in steps) for row in table.to_pylist()]


def _evaluated_row_groups(part: pa.Table, guards: Sequence[RowEvaluator], source: Any) -> pa.Table:
    """The rows of the row groups on which the filter is evaluated: a row group in which no
    row satisfies one of the ``guards`` (``read.residual.row_group_guards``) is dropped
    unevaluated, as a Parquet reader drops it on statistics or dictionary pages."""
    import pyarrow.parquet as pq

    try:
        if hasattr(source, "seek"):
            metadata = pq.ParquetFile(source).metadata
            source.seek(0)
        else:
            metadata = pq.read_metadata(source)
    except (OSError, pa.ArrowException):
        return part  # the data itself was read: evaluate every row
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    if sum(sizes) != part.num_rows:
        sizes = [part.num_rows]
    kept, offset = [], 0
    for size in sizes:
        group = part.slice(offset, size)
        offset += size
        if all(any(r is True for r in g.evaluate_table(group)) for g in guards):
            kept.append(group)
    return pa.concat_tables(kept) if kept else part.slice(0, 0)


def _conform(column: pa.ChunkedArray, target: pa.DataType, where: str, name: str) -> pa.ChunkedArray:
    if column.type == target:
        return column
    try:
        return column.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise TableError(f"{where}: column {name!r} has type {column.type}, table says {target}: {exc}") from None


def read_tasks(
    plan: ScanPlan,
    open_file: FileOpener,
    columns: Sequence[str] | None = None,
    paths: Mapping[str, Sequence[str]] | None = None,
) -> pa.Table:
    """Read every task of ``plan``, apply its filter exactly, and project ``columns`` and
    Variant ``paths`` (``{"v": ["$.a"]}`` adds a ``"v:$.a"`` column of Variants)."""
    target = to_arrow_schema(plan.schema)
    if columns is not None:
        unknown = [c for c in columns if c not in target.names]
        if unknown:
            raise TableError(f"unknown columns {unknown}; the table has {target.names}")
    for column in paths or {}:
        if column not in target.names or not isinstance(plan.schema.field(column).type, VariantType):
            raise TableError(f"paths: {column!r} is not a top-level Variant column")
    if paths and columns is None:
        columns = []
    needed = list(columns) if columns is not None else target.names
    if plan.filter is not None and columns is not None:
        from varlake.expr import referenced_columns

        extra = [c.path[0] for c in referenced_columns(plan.filter) if c.path[0] not in needed]
        needed = needed + sorted(set(extra), key=target.names.index)
    filters: dict[Predicate, _RowFilter] = {}
    guard_evaluators: dict[Predicate, list[RowEvaluator]] = {}
    eager_evaluators: dict[Predicate, list[RowEvaluator]] = {}
    parts = []
    for task in plan.tasks:
        residual = task.residual if task.residual is not None else plan.filter
        if isinstance(residual, AlwaysFalse):
            continue
        part = read_task(task, plan.schema, plan.partition_columns, open_file, needed, paths)
        if residual is not None and not isinstance(residual, AlwaysTrue) and part.num_rows:
            guards = guard_evaluators.get(residual)
            if guards is None:
                guards = guard_evaluators[residual] = [RowEvaluator(g) for g in row_group_guards(residual)]
            if guards:
                part = _evaluated_row_groups(part, guards, open_file(task.relative_path))
            eager = eager_evaluators.get(residual)
            if eager is None:
                eager = eager_evaluators[residual] = [
                    RowEvaluator(IsNotNull(t), variant_get=_variant_get) for t in eager_terms(residual)
                ]
            for extraction in eager:
                extraction.evaluate_table(part)  # a value that does not convert raises, on any row
            row_filter = filters.get(residual)
            if row_filter is None:
                row_filter = filters[residual] = _RowFilter(residual)
            part = part.filter(pa.array(row_filter.mask(part), pa.bool_()))
        parts.append(part)
    path_names = [f"{c}:{p}" for c, ps in (paths or {}).items() for p in ps]
    out_schema = pa.schema([target.field(c) for c in needed] + [pa.field(n, VARIANT_ARROW_TYPE) for n in path_names])
    table = pa.concat_tables(parts) if parts else out_schema.empty_table()
    if columns is not None:
        table = table.select(list(columns) + path_names)
    return table
