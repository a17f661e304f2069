"""Execute scan tasks with pyarrow: read files, add partition columns, filter exactly.

Every file is read through ``varlake.io.parquet_read.read_parquet`` so Variant columns
come back unshredded (``struct<metadata, value>``) whatever the file's layout. Files
written before a column was added get nulls for it. The residual filter is evaluated
row by row with Spark's semantics (the skipping only ever removed whole files that
cannot match, so this decides the answer).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

from varlake.delta.schema import PrimitiveType, StructType, VariantType, to_arrow_schema, variant_arrow_type
from varlake.delta.stats import leaf_columns
from varlake.errors import DataFileMissingError, TableError
from varlake.expr import RowEvaluator
from varlake.io.parquet_read import read_parquet
from varlake.read.planner import ScanPlan, ScanTask
from varlake.variant import Variant, VariantPath
from varlake.variant.functions import variant_get

FileOpener = Callable[[str], Any]
VARIANT_ARROW_TYPE = variant_arrow_type()


def _variant_get(value: Any, path: str, type_name: str) -> Any:
    """The row evaluator's extraction: ``path`` is the expression layer's normalized path."""
    if value is None:
        return None
    return variant_get(Variant(value["metadata"], value["value"]), VariantPath.from_normalized(path), type_name)


def _partition_value(text: str | None, type_name: str) -> Any:
    """A partition value as Delta serialises it, typed (None and '' are NULL)."""
    if text is None or text == "":
        return None
    if type_name in ("byte", "short", "integer", "long"):
        return int(text)
    if type_name.startswith("decimal("):
        return Decimal(text)
    if type_name in ("float", "double"):
        return float(text)
    if type_name == "boolean":
        return text.lower() == "true"
    if type_name == "date":
        return _dt.date.fromisoformat(text)
    if type_name == "timestamp":
        value = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        return value.replace(tzinfo=_dt.timezone.utc) if value.tzinfo is None else value
    if type_name == "timestamp_ntz":
        return _dt.datetime.fromisoformat(text)
    if type_name == "binary":
        return text.encode("utf-8")
    return text


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
            value = _partition_value(task.partition_values.get(name), t.name if isinstance(t, PrimitiveType) else "string")
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
    evaluator = RowEvaluator(plan.filter, variant_get=_variant_get) if plan.filter is not None else None
    parts = []
    for task in plan.tasks:
        part = read_task(task, plan.schema, plan.partition_columns, open_file, needed, paths)
        if evaluator is not None and part.num_rows:
            mask = [r is True for r in evaluator.evaluate_table(part)]
            part = part.filter(pa.array(mask, pa.bool_()))
        parts.append(part)
    path_names = [f"{c}:{p}" for c, ps in (paths or {}).items() for p in ps]
    out_schema = pa.schema([target.field(c) for c in needed] + [pa.field(n, VARIANT_ARROW_TYPE) for n in path_names])
    table = pa.concat_tables(parts) if parts else out_schema.empty_table()
    if columns is not None:
        table = table.select(list(columns) + path_names)
    return table
