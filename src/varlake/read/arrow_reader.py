"""Execute scan tasks with pyarrow: read files, add partition columns, filter exactly.

Every file is read through ``varlake.io.parquet_read.read_parquet`` so Variant columns
come back unshredded (``struct<metadata, value>``) whatever the file's layout; a scan
handed to users (``Scan.to_arrow``) types them ``arrow.parquet.variant`` at any depth
(``tag_variants``), internal readers keep the plain struct. Files
written before a column was added get nulls for it. The residual filter is evaluated
row by row with Spark's semantics -- each file's residual filter (partition values
folded in), so a cast that could raise is evaluated on exactly the rows Spark would
evaluate it on, and a failing one raises ``ExpressionEvaluationError`` (the skipping only
removed whole files that cannot match and on which nothing could raise). As Spark does,
a row group in which no row satisfies a plain-column conjunct is dropped unevaluated,
typed ``variant_get`` calls are extracted from every row read, and each row's checks run
in Spark's order (``read.residual.filter_steps``).

Rows a file's deletion vector deletes are dropped by their index in the file (counted
across row groups, before any row is filtered); a row group is dropped unevaluated on
all of its rows, deleted ones included (a Parquet reader's statistics cover them), and
the filter is then evaluated only on the rows that are not deleted. Rows are dropped
without copying when they are few (``read.arrow_filter.keep_rows``: slices of the kept
runs), and a filter in which nothing can raise is evaluated vectorised
(``read.arrow_filter.arrow_predicate``), with the same result as row by row.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from typing import Any

import numpy as np
import pyarrow as pa

from varlake.delta.column_mapping import ColumnMapping, to_table_type
from varlake.delta.deletion_vectors import keep_mask
from varlake.delta.schema import (
    ArrayType,
    DataType,
    MapType,
    PrimitiveType,
    SchemaVisitor,
    StructField,
    StructType,
    VariantType,
    to_arrow_schema,
    variant_arrow_type,
    visit,
)
from varlake.delta.stats import leaf_columns
from varlake.errors import DataFileMissingError, TableError
from varlake.expr.rows import row_variant_get
from varlake.expr import AlwaysFalse, AlwaysTrue, IsNotNull, Predicate, RowEvaluator
from varlake.io.parquet_read import file_summary, read_parquet
from varlake.read.arrow_filter import ArrowPredicate, arrow_predicate, keep_rows, matches
from varlake.read.planner import ScanPlan, ScanTask
from varlake.read.residual import eager_terms, filter_steps, row_group_guards
from varlake.semantics import partition_values
from varlake.shred.nested import LIST_ELEMENT, MAP_VALUE, ArrowPath
from varlake.shred.variant_columns import with_variant_extension

#: what pyarrow reads a data file from, given its relative path and the size the log gives
#: (``Table.read_source``: a local path, or a file object on an object store, that need not
#: ask the store for the size)
FileOpener = Callable[[str, "int | None"], Any]
#: the deleted row indexes (sorted ``uint64``) of a task's deletion vector
DeletedRows = Callable[[ScanTask], np.ndarray]
VARIANT_ARROW_TYPE = variant_arrow_type()


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
    deleted_rows: DeletedRows | None = None,
    mapping: ColumnMapping | None = None,
) -> pa.Table:
    """One file as an Arrow table in the table's schema (all columns, or ``columns``), plus a
    ``"<column>:<path>"`` Variant column per requested path (reading only what they need),
    without the rows its deletion vector deletes (loaded with ``deleted_rows``); ``mapping``
    (``ScanPlan.column_mapping``) says how the file names columns."""
    part = read_file(task, schema, partition_columns, open_file, columns, paths, mapping)
    keep = _keep_mask(task, part.num_rows, deleted_rows)
    return part if keep is None else keep_rows(part, keep)


def _keep_mask(task: ScanTask, num_rows: int, deleted_rows: DeletedRows | None) -> np.ndarray | None:
    """False for each row of the file its deletion vector deletes (None: no DV)."""
    if task.deletion_vector is None:
        return None
    if deleted_rows is None:
        raise TableError(f"{task.relative_path}: the file has a deletion vector and no way to load it was given")
    return keep_mask(deleted_rows(task), num_rows, f"data file {task.relative_path!r}")


def read_file(
    task: ScanTask,
    schema: StructType,
    partition_columns: Sequence[str],
    open_file: FileOpener,
    columns: Sequence[str] | None = None,
    paths: Mapping[str, Sequence[str]] | None = None,
    mapping: ColumnMapping | None = None,
) -> pa.Table:
    """Every row of the data file (deleted ones too, in file order), as ``read_task`` gives them:
    columns found by display name, or as ``mapping`` says (physical name / field id), in the
    table's types (``delta.column_mapping.to_table_type``: old files' types widened)."""
    return read_opened(task, schema, partition_columns, open_task(open_file, task), columns, paths, mapping)


def open_task(open_file: FileOpener, task: ScanTask) -> Any:
    """What pyarrow reads ``task``'s data file from (``open_file`` given the log's size of it)."""
    return open_file(task.relative_path, task.add.size)


#: how many data files ``opened_ahead`` opens (on an object store: fetches) ahead of the reader
OPEN_AHEAD = 8


def opened_ahead(open_file: FileOpener, tasks: Sequence[ScanTask]) -> Iterator[Any]:
    """``open_task`` of each task, in order, the next ``OPEN_AHEAD`` opened meanwhile in
    threads: a small file on an object store is fetched whole when opened, so the round
    trips overlap. An error opening a file is raised when its turn comes."""
    if len(tasks) < 2:
        for task in tasks:
            yield open_task(open_file, task)
        return
    pool = ThreadPoolExecutor(max_workers=min(OPEN_AHEAD, len(tasks)), thread_name_prefix="varlake-open")
    try:
        pending: deque[Future[Any]] = deque()
        upcoming = iter(tasks)
        for task in islice(upcoming, OPEN_AHEAD):
            pending.append(pool.submit(open_task, open_file, task))
        while pending:
            source = pending.popleft().result()
            following = next(upcoming, None)
            if following is not None:
                pending.append(pool.submit(open_task, open_file, following))
            yield source
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def read_opened(
    task: ScanTask,
    schema: StructType,
    partition_columns: Sequence[str],
    source: Any,
    columns: Sequence[str] | None = None,
    paths: Mapping[str, Sequence[str]] | None = None,
    mapping: ColumnMapping | None = None,
) -> pa.Table:
    """``read_file`` of the data file already opened as ``source`` (``open_task``: one open of
    a file on an object store serves its footer, its data and its row groups)."""
    target = to_arrow_schema(schema)
    wanted = list(columns) if columns is not None else target.names
    data_columns = [c for c in wanted if c not in partition_columns]
    try:
        names, file_rows = file_summary(source)  # the file's own count: a log's numRecords may lie
        available = set(names)
    except FileNotFoundError:
        raise DataFileMissingError(
            f"data file {task.relative_path!r} is listed in the table log but missing from storage"
        ) from None
    in_file = _file_columns(mapping, source, names, [*data_columns, *(paths or {})], f"data file {task.relative_path!r}")
    present = [c for c in data_columns if c in in_file]
    variants = [_file_path(mapping, in_file, v) for v in _variant_paths(schema) if v.split(".")[0] in present]
    path_request = {in_file[c]: list(p) for c, p in (paths or {}).items() if c in in_file}
    if present or path_request:
        table = read_parquet(
            source,
            columns=[in_file[c] for c in present],
            variant_columns=variants or None,
            paths=path_request or None,
            arrow_extension=False,
        )
    else:
        table = None
    n = file_rows if table is None else table.num_rows
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
        elif table is not None and name in in_file:
            column = table.column(in_file[name])
            arrays.append(to_table_type(column, schema.field(name).type, mapping, f"{task.relative_path}: column {name!r}"))
        else:
            arrays.append(pa.nulls(n, field.type))
    fields = [target.field(c) for c in wanted]
    for column, requested in (paths or {}).items():
        for path in requested:
            name = f"{column}:{path}"
            fields.append(pa.field(name, VARIANT_ARROW_TYPE))
            read_as = f"{in_file.get(column)}:{path}"
            if table is not None and column in in_file and read_as in table.column_names:
                arrays.append(_conform(table.column(read_as), VARIANT_ARROW_TYPE, task.relative_path, name))
            else:
                arrays.append(pa.nulls(n, VARIANT_ARROW_TYPE))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _file_columns(
    mapping: ColumnMapping | None, source: Any, file_names: Sequence[str], wanted: Sequence[str], where: str
) -> dict[str, str]:
    """Top-level columns of ``wanted`` the file has -> their names in the file."""
    if mapping is None:
        available = set(file_names)
        return {c: c for c in wanted if c in available}
    return mapping.file_columns(wanted, file_names, lambda: _arrow_schema(source), where)


def _arrow_schema(source: Any) -> pa.Schema:
    """The Arrow schema of a data file (field ids as field metadata); a file object is left at 0."""
    import pyarrow.parquet as pq

    if hasattr(source, "seek"):
        schema = pq.ParquetFile(source).schema_arrow
        source.seek(0)
        return schema
    return pq.read_schema(source)


def _file_path(mapping: ColumnMapping | None, in_file: Mapping[str, str], path: str) -> str:
    """A dotted Variant column path as the file spells it."""
    if mapping is None:
        return path
    parts = path.split(".")
    return ".".join([in_file[parts[0]], *mapping.physical_path(parts)[1:]])


def _after(computed: Sequence[Callable[[Mapping[str, Any]], Any]], row: Mapping[str, Any]) -> bool:
    """Evaluate each of ``computed`` on the row (a cast that fails raises); always True."""
    for compute in computed:
        compute(row)
    return True


class RowFilter:
    """A residual filter run on rows as its ``filter_steps`` say (the order Spark checks them),
    or vectorised (``read.arrow_filter``) when nothing in it can raise or differ from the rows'."""

    def __init__(self, residual: Predicate) -> None:
        self.residual = residual
        self._vectors: dict[pa.Schema, ArrowPredicate | None] = {}
        self.steps: list[Callable[[Mapping[str, Any]], bool]] = []
        for kind, what, first in filter_steps(residual):
            if kind == "not null":
                self.steps.append(lambda row, name=what: row.get(name) is not None)
            elif first:
                computed = [RowEvaluator(IsNotNull(t), variant_get=row_variant_get).evaluate for t in first]
                matches = RowEvaluator(what, variant_get=row_variant_get).matches
                self.steps.append(lambda row, computed=computed, matches=matches: _after(computed, row) and matches(row))
            else:
                self.steps.append(RowEvaluator(what, variant_get=row_variant_get).matches)

    def vector(self, schema: pa.Schema) -> ArrowPredicate | None:
        """The residual compiled for tables of ``schema`` (None: it is evaluated row by row)."""
        if schema not in self._vectors:
            self._vectors[schema] = arrow_predicate(self.residual, schema)
        return self._vectors[schema]

    def mask(self, table: pa.Table) -> np.ndarray:
        """Which rows of ``table`` the residual keeps."""
        compiled = self.vector(table.schema)
        if compiled is not None:
            return matches(compiled, table)
        steps = self.steps
        return np.fromiter((all(step(row) for step in steps) for row in table.to_pylist()), dtype=bool, count=table.num_rows)


def evaluated_row_groups(num_rows: int, guards: Sequence[RowEvaluator], source: Any, part: pa.Table) -> np.ndarray | None:
    """Which rows of a file are in row groups on which the filter is evaluated (None: all):
    a row group in which no row satisfies one of the ``guards``
    (``read.residual.row_group_guards``) is dropped unevaluated, as a Parquet reader drops
    it on statistics or dictionary pages. ``part`` holds every row of the file."""
    import pyarrow.parquet as pq

    try:
        if hasattr(source, "seek"):
            metadata = pq.ParquetFile(source).metadata
            source.seek(0)
        else:
            metadata = pq.read_metadata(source)
    except (OSError, pa.ArrowException):
        return None  # the data itself was read: evaluate every row
    sizes = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    if sum(sizes) != num_rows:
        sizes = [num_rows]
    kept = np.zeros(num_rows, dtype=bool)
    vectors = [arrow_predicate(g.predicate, part.schema) for g in guards]
    offset = 0
    for size in sizes:
        group = part.slice(offset, size)
        if all(
            matches(v, group).any() if v is not None else any(r is True for r in g.evaluate_table(group))
            for g, v in zip(guards, vectors)
        ):
            kept[offset : offset + size] = True
        offset += size
    return None if kept.all() else kept


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
    deleted_rows: DeletedRows | None = None,
    *,
    arrow_extension: bool = False,
) -> pa.Table:
    """Read every task of ``plan``, drop the rows deletion vectors delete (``deleted_rows``
    loads a task's; a task with one and no loader raises), apply its filter exactly, and
    project ``columns`` and Variant ``paths`` (``{"v": ["$.a"]}`` adds a ``"v:$.a"``
    column of Variants). Variants are plain ``struct<metadata, value>``, or with
    ``arrow_extension`` typed ``arrow.parquet.variant`` at any depth (``Scan.to_arrow``)."""
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
    filters: dict[Predicate, RowFilter] = {}
    guard_evaluators: dict[Predicate, list[RowEvaluator]] = {}
    eager_evaluators: dict[Predicate, list[RowEvaluator]] = {}
    parts = []
    residuals = [(t, t.residual if t.residual is not None else plan.filter) for t in plan.tasks]
    to_read = [(t, r) for t, r in residuals if not isinstance(r, AlwaysFalse)]
    for (task, residual), source in zip(to_read, opened_ahead(open_file, [t for t, _ in to_read])):
        part = read_opened(task, plan.schema, plan.partition_columns, source, needed, paths, plan.column_mapping)
        keep = _keep_mask(task, part.num_rows, deleted_rows)
        filtered = residual is not None and not isinstance(residual, AlwaysTrue) and part.num_rows
        if filtered:
            guards = guard_evaluators.get(residual)
            if guards is None:
                guards = guard_evaluators[residual] = [RowEvaluator(g) for g in row_group_guards(residual)]
            if guards:
                groups = evaluated_row_groups(part.num_rows, guards, source, part)
                keep = groups if keep is None else keep if groups is None else keep & groups
        if keep is not None:
            part = keep_rows(part, keep)
        if filtered and part.num_rows:
            eager = eager_evaluators.get(residual)
            if eager is None:
                eager = eager_evaluators[residual] = [
                    RowEvaluator(IsNotNull(t), variant_get=row_variant_get) for t in eager_terms(residual)
                ]
            for extraction in eager:
                extraction.evaluate_table(part)  # a value that does not convert raises, on any row
            row_filter = filters.get(residual)
            if row_filter is None:
                row_filter = filters[residual] = RowFilter(residual)
            part = keep_rows(part, row_filter.mask(part))
        parts.append(part)
    path_names = [f"{c}:{p}" for c, ps in (paths or {}).items() for p in ps]
    out_schema = pa.schema([target.field(c) for c in needed] + [pa.field(n, VARIANT_ARROW_TYPE) for n in path_names])
    table = pa.concat_tables(parts) if parts else out_schema.empty_table()
    if columns is not None:
        table = table.select(list(columns) + path_names)
    return tag_variants(table, plan.schema) if arrow_extension else table


class _VariantPaths(SchemaVisitor[list[ArrowPath]]):
    def struct(self, struct: StructType, field_results: list[list[ArrowPath]]) -> list[ArrowPath]:
        return [p for r in field_results for p in r]

    def field(self, field: StructField, type_result: list[ArrowPath]) -> list[ArrowPath]:
        return [(field.name, *p) for p in type_result]

    def array(self, array: ArrayType, element_result: list[ArrowPath]) -> list[ArrowPath]:
        return [(LIST_ELEMENT, *p) for p in element_result]

    def map(self, map_type: MapType, key_result: list[ArrowPath], value_result: list[ArrowPath]) -> list[ArrowPath]:
        return [(MAP_VALUE, *p) for p in value_result]

    def primitive(self, primitive: PrimitiveType) -> list[ArrowPath]:
        return []

    def variant(self, variant: VariantType) -> list[ArrowPath]:
        return [()]


def variant_arrow_paths(dtype: DataType) -> list[ArrowPath]:
    """Arrow paths (``shred.nested``) of the Variants in a column of Delta type ``dtype``."""
    return visit(dtype, _VariantPaths())


def tag_variants(table: pa.Table, schema: StructType) -> pa.Table:
    """``table`` (columns of ``schema``, and ``"<column>:<path>"`` Variants) with every
    Variant typed ``arrow.parquet.variant`` (``shred.variant_columns``), zero-copy."""
    wanted: dict[str, list[ArrowPath]] = {}
    for name in table.column_names:
        if name in schema.names:
            wanted[name] = variant_arrow_paths(schema.field(name).type)
        elif ":" in name:
            wanted[name] = [()]
    return with_variant_extension(table, wanted)
