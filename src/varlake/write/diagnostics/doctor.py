"""The shredding doctor: how well a table's Variant data is shredded, and what would help.

``diagnose(table)`` (``Table.doctor()``, ``varlake doctor TABLE``) reads the live rows of
every Variant column -- only the Variant columns, only the row groups holding the rows it
analyses -- and reports, per column and per Variant path:

* **coverage**: of the *values* at the path, how many are held in a typed column
  (``typed``: a non-null ``typed_value`` at the path in its file's layout), how many only in
  residual Variant bytes (``residual``: the ``value`` at the path, or inside an enclosing
  level's ``value``), and how many are ``missing``. A path's *slots* are one per analysed
  row, or, under an array (``$.tags[*]``, ``$.items[*].id``), one per element of the
  innermost array. ``slots = typed + residual + missing`` and ``missing = absent +
  variant_null + sql_null``: ``absent`` -- the row (element) holds no value at the path
  (the key is not there, or an enclosing value is not an object/array); ``variant_null``
  -- the value there is Variant ``null``; ``sql_null`` -- the whole column is SQL NULL in
  that row (zero for paths under arrays). Paths come from the table's stable shredding
  schema, from the typed columns of every file, and from the values seen.
* **headline**: ``typed_scalar_share`` -- of every non-null scalar value at any path, the
  share held in a typed leaf column.
* **footer pass**: for typed primitive leaves outside arrays, ``footer_typed`` counts the
  typed values in *every* row of every live file from the Parquet footers alone (rows
  minus the leaf's null count per row group; deleted rows included, out of
  ``footer_rows``) -- the whole table at no read cost, also when the rows are sampled.
* **type conflicts**: paths whose non-null values belong to more than one type family
  (integers and decimals are one family, as are timestamps of both precisions), with the
  counts per type overall and per file.
* **drifted files**: files whose physical layout differs from the table's stable
  shredding schema, with the reason (``write.layout_drift``, the rule optimize acts on).
* **suggestions**: ``add`` -- a leaf the analysed data would shred
  (``shred.infer.infer_shredding_schema`` over ``SAMPLE_ROWS`` of the analysed rows -- as
  many as a write infers from -- at the table's stable widths) that the stored
  schema lacks; ``retype`` -- a stored leaf the data would shred as
  another type; ``drop`` -- a stored leaf whose typed share is below ``empty_threshold``.
* **optimize**: which files ``optimize`` would rewrite, why, and the bytes it would save
  (``write.optimize.plan_optimize``'s summary: ``estimated_bytes_saved`` counts the deleted
  rows purged and the footers merged), plus ``estimated_reshred_bytes_saved``: what
  re-shredding the drifted files into the table's layout saves, estimated by writing a
  sample of each (``reshred_sample_rows`` rows of up to ``reshred_files_sampled`` files,
  ``write.layout_savings``) in both layouts to memory; ``estimated_total_bytes_saved`` is
  the sum. Each drifted file carries its own ``estimated_bytes_saved`` (null: not sampled).

Rows deleted by a deletion vector are never counted (``rows``, ``deleted_rows``). Rows of a
file whose Variant layout or bytes are invalid are left out, each such file named in
``notes`` (a column's ``rows_analyzed`` counts the rows it did analyse). When the
table has more live rows than ``sample``, ``sample`` of them are analysed, spread over
every file in proportion to its live rows and drawn at random within a file with a fixed
seed (``sample_rows``: deterministic), and every count is of the analysed rows
(``rows_analyzed``, ``sampled``). Drift and optimize facts cover every file.

The report's classes are in ``report``; ``DoctorReport.to_dict()`` is the machine form (``varlake doctor --json``)::

    {"table", "version", "files", "rows", "deleted_rows", "rows_analyzed", "sampled",
     "empty_threshold",
     "columns": [{"column", "schema", "suggested_schema", "rows_analyzed", "footer_rows",
                  "scalar_values", "typed_scalars", "typed_scalar_share",
                  "paths": [{"path", "in_schema", "schema_type", "slots", "typed",
                             "residual", "missing", "absent", "variant_null", "sql_null",
                             "typed_share", "residual_share", "missing_share", "types",
                             "footer_typed"}],
                  "conflicts": [{"path", "types", "files": [{"path", "types"}]}],
                  "suggestions": [{"kind", "path", "type", "current_type", "typed_share",
                                   "reason"}]}],
     "drifted_files": [{"path", "size", "rows", "reason",
                        "columns": [{"column", "kind", "file_schema", "table_schema"}],
                        "differences": [str], "estimated_bytes_saved"}],
     "optimize": null | {"files_to_rewrite", "bytes_to_rewrite", "estimated_output_bytes",
                         "estimated_bytes_saved", "estimated_reshred_bytes_saved",
                         "reshred_files", "reshred_files_sampled", "reshred_sample_rows",
                         "estimated_total_bytes_saved", "reasons", ...},
     "notes": [str]}

Shares are fractions of ``slots`` (0.0 when a path has no slot), rounded to 6 digits;
``types`` maps type names (``integer``, ``decimal``, ``string``, ``object``, ...) to value
counts; shredding schemas are Spark DDL (null: unshredded).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from varlake.delta.column_mapping import column_mapping
from varlake.delta.config import is_true
from varlake.errors import ShreddingError, ShreddingSchemaError, TableError, VariantError, VarlakeError
from varlake.read.planner import ScanTask, plan_scan
from varlake.shred import infer
from varlake.read.layout import FileLayout, file_layout
from varlake.shred.layout import ArrayLayout, ObjectLayout, PrimitiveLayout, ValueLayout, recognise_layout
from varlake.shred.schema import ShreddingSchema, type_ddl
from varlake.shred.unshred import unshred_variant
from varlake.write.maintenance.layout_drift import FileLayoutStatus, layout_status
from varlake.write.maintenance.layout_savings import LayoutSavings, estimate_layout_savings
from varlake.write.maintenance.optimize import plan_optimize
from varlake.write.diagnostics.report import (
    ColumnReport,
    DoctorReport,
    DriftedFile,
    PathCoverage,
    Segments,
    Suggestion,
    TypeConflict,
    path_text,
)
from varlake.write.staging.shredding import ENABLE_SHREDDING, SAMPLE_ROWS, SHREDDING_PROPERTY, stable_widths, stored_schemas, variant_columns
from varlake.write.staging.handle import TableHandle

__all__ = ["DEFAULT_EMPTY_THRESHOLD", "DEFAULT_SAMPLE", "diagnose", "sample_rows"]

DEFAULT_SAMPLE = 100_000  # rows analysed at most (spread over every file)
DEFAULT_EMPTY_THRESHOLD = 0.05  # a stored leaf whose typed share is below this is "nearly empty"


#: type names of the inference's kinds of value (``shred.infer``)
_TYPE_NAMES = {
    infer.NULL: "null", infer.BOOL: "boolean", infer.INT: "integer", infer.DECIMAL: "decimal",
    infer.DOUBLE: "double", infer.FLOAT: "float", infer.STRING: "string", infer.BINARY: "binary",
    infer.DATE: "date", infer.TIME: "time", infer.TS_US: "timestamp", infer.TS_NS: "timestamp_ns",
    infer.NTZ_US: "timestamp_ntz", infer.NTZ_NS: "timestamp_ntz_ns", infer.UUID: "uuid",
    infer.OBJECT: "object", infer.ARRAY: "array",
}  # fmt: skip
_CONTAINERS = frozenset({infer.NULL, infer.OBJECT, infer.ARRAY})
#: type families: values of one family fit one typed column
_FAMILY = {"integer": "exact", "decimal": "exact", "timestamp_ns": "timestamp", "timestamp_ntz_ns": "timestamp_ntz"}


def _order(segments: Segments) -> tuple[tuple[int, bytes], ...]:
    return tuple((0, b"") if s is None else (1, s.encode("utf-8")) for s in segments)


# --- counting ---------------------------------------------------------------------------------------------


@dataclass
class _Counts:
    """Per path of one column: typed values, values by type (from the unshredded rows), per file."""

    rows: int = 0
    sql_null: int = 0
    typed: dict[Segments, int] = field(default_factory=dict)
    typed_scalars: int = 0
    kinds: dict[Segments, dict[int, int]] = field(default_factory=dict)
    file_kinds: dict[Segments, list[tuple[str, dict[int, int]]]] = field(default_factory=dict)
    samples: list[pa.Array] = field(default_factory=list)


def _child(group: pa.Array, name: str) -> pa.Array:
    """Child ``name`` of a struct array, null wherever the struct is null."""
    if isinstance(group, pa.ChunkedArray):
        group = group.combine_chunks()
    return group.flatten()[group.type.get_field_index(name)]


def _count_typed(group: pa.Array, node: ValueLayout, segments: Segments, out: _Counts) -> None:
    """Add, per path, the entries of ``group`` (a ``value``/``typed_value`` level reached
    through typed objects and arrays) whose ``typed_value`` holds the value."""
    if node.typed is None or len(group) == 0:
        return
    typed = _child(group, "typed_value")
    valid = typed.is_valid()
    n = int(pc.sum(valid).as_py() or 0)
    out.typed[segments] = out.typed.get(segments, 0) + n
    if n == 0:
        return
    if isinstance(node.typed, ObjectLayout):
        present = typed.filter(valid)
        for key, child in node.typed.fields:
            _count_typed(_child(present, key), child, segments + (key,), out)
    elif isinstance(node.typed, ArrayLayout):
        elements = pc.list_flatten(typed.filter(valid))
        _count_typed(elements, node.typed.element, segments + (None,), out)
    else:
        out.typed_scalars += n


def _flatten_stats(node: infer.PathStats, segments: Segments, out: dict[Segments, dict[int, int]]) -> None:
    if node.kinds:
        out[segments] = dict(node.kinds)
    for key, child in node.children.items():
        _flatten_stats(child, segments + (key,), out)
    if node.element is not None:
        _flatten_stats(node.element, segments + (None,), out)


def _add_kinds(into: dict[int, int], kinds: Mapping[int, int]) -> None:
    for k, n in kinds.items():
        into[k] = into.get(k, 0) + n


def _type_counts(kinds: Mapping[int, int]) -> dict[str, int]:
    named = {_TYPE_NAMES.get(k, str(k)): n for k, n in kinds.items() if k != infer.NULL and n}
    return dict(sorted(named.items(), key=lambda kv: (-kv[1], kv[0])))


def _families(kinds: Mapping[int, int]) -> set[str]:
    return {_FAMILY.get(name, name) for name in _type_counts(kinds)}


# --- choosing and reading rows ----------------------------------------------------------------------------


def _quotas(live: Sequence[int], sample: int | None) -> list[int]:
    """Rows to analyse per file: all, or ``sample`` spread in proportion to live rows
    (largest remainders first, ties to the earlier file)."""
    total = sum(live)
    if sample is None or total <= sample:
        return list(live)
    exact = [sample * n / total for n in live]
    quotas = [math.floor(x) for x in exact]
    order = sorted(range(len(live)), key=lambda i: (-(exact[i] - quotas[i]), i))
    for i in order[: sample - sum(quotas)]:
        quotas[i] += 1
    return quotas


def sample_rows(live: np.ndarray, quota: int, seed: int = 0) -> np.ndarray:
    """``quota`` of the live row indexes ``live`` (ascending), drawn at random with ``seed``
    (deterministic; random rather than evenly spaced, so periodic data does not alias), or
    all of them when the quota covers them."""
    if quota >= len(live):
        return live
    if quota <= 0:
        return live[:0]
    picks = np.random.default_rng(seed).choice(len(live), size=quota, replace=False)
    return live[np.sort(picks)]


def _storage_type(t: pa.DataType) -> pa.DataType:
    """An extension type's storage (a Variant column read as ``arrow.parquet.variant``)."""
    return t.storage_type if isinstance(t, pa.BaseExtensionType) else t


def _storage(column: pa.Array) -> pa.Array:
    return column.storage if isinstance(column.type, pa.BaseExtensionType) else column


def _read_rows(pf: pq.ParquetFile, physical: Sequence[str], rows: np.ndarray, where: str) -> pa.Array | None:
    """The Variant group at dotted ``physical`` for file rows ``rows`` (ascending), reading
    only that column of the row groups holding them; None if the file lacks the column."""
    schema = pf.schema_arrow
    index = schema.get_field_index(physical[0])
    if index < 0:
        return None
    t = _storage_type(schema.field(index).type)
    for name in physical[1:]:
        if not pa.types.is_struct(t) or t.get_field_index(name) < 0:
            return None
        t = _storage_type(t.field(name).type)
    meta = pf.metadata
    starts = np.cumsum([0] + [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]).astype(np.int64)
    group_of = np.searchsorted(starts, rows, side="right") - 1
    groups = np.unique(group_of)
    if len(groups) == 0:
        return pa.array([], type=t)
    try:
        table = pf.read_row_groups(groups.tolist(), columns=[".".join(physical)], use_threads=True)
    except (pa.ArrowException, OSError) as exc:
        raise TableError(f"{where}: cannot read column {'.'.join(physical)!r} ({exc})") from None
    column: pa.Array = _storage(table.column(physical[0]).combine_chunks())
    for name in physical[1:]:
        column = _storage(_child(column, name))
    sizes = np.diff(starts)[groups]
    first_read = np.zeros(len(starts), dtype=np.int64)  # where each group read starts in ``column``
    first_read[groups] = np.cumsum(sizes) - sizes
    local = rows - starts[group_of] + first_read[group_of]
    return column.take(pa.array(local, pa.int64()))


# --- the diagnosis ------------------------------------------------------------------------------------------


def diagnose(
    table: TableHandle,
    *,
    sample: int | None = DEFAULT_SAMPLE,
    empty_threshold: float = DEFAULT_EMPTY_THRESHOLD,
    version: int | None = None,
) -> DoctorReport:
    """Diagnose the shredding of ``table`` (a ``varlake.Table``) at ``version`` (latest):
    analyse at most ``sample`` live rows (None: all), flag stored leaves whose typed share
    is below ``empty_threshold``. See the module for what is counted and how."""
    if sample is not None and (not isinstance(sample, int) or isinstance(sample, bool) or sample < 1):
        raise TableError(f"{table.path}: doctor sample must be a positive number of rows (or None for all), got {sample!r}")
    if not isinstance(empty_threshold, (int, float)) or not 0 <= empty_threshold <= 1:
        raise TableError(f"{table.path}: doctor empty_threshold must be between 0 and 1, got {empty_threshold!r}")
    snapshot = table.snapshot(version)
    columns = variant_columns(snapshot.schema)
    stored = stored_schemas(snapshot.properties, columns)
    mapping = column_mapping(snapshot.protocol, snapshot.metadata, snapshot.schema)
    tasks = list(plan_scan(snapshot, table.log.root_location).tasks)
    notes: list[str] = []
    if columns and not is_true(snapshot.properties, ENABLE_SHREDDING):
        notes.append(f"shredding is off ({ENABLE_SHREDDING} is not true): new files are written unshredded")

    deleted = [table.deleted_rows(t) for t in tasks]
    footers = [file_layout(table.storage, table.data_file(t.add)) for t in tasks]  # cached; the file's own row count
    physical_rows = [f.metadata.num_rows for f in footers]
    live = [n - len(d) for n, d in zip(physical_rows, deleted)]
    quotas = _quotas(live, sample)
    counts = {c: _Counts() for c in columns}
    if columns:
        for ordinal, (task, footer, dead, quota) in enumerate(zip(tasks, footers, deleted, quotas)):
            if quota == 0:
                continue
            kept = np.setdiff1d(np.arange(footer.metadata.num_rows, dtype=np.int64), dead.astype(np.int64), assume_unique=True)
            rows = sample_rows(kept, quota, ordinal)
            _analyse_file(table, task, footer, columns, mapping, rows, counts, notes)
    analysed = sum(quotas)

    optimize, statuses = _optimize_plan(table, snapshot, notes)
    footer_typed = {c: _footer_typed(footers, c, mapping) for c in columns}
    for c in columns:
        if stored[c] and not _valid_ddl(stored[c]):
            notes.append(f"{c}: the stored shredding schema {stored[c]!r} ({SHREDDING_PROPERTY}{c}) is not valid DDL; read as unshredded")
            stored[c] = ""
    savings = estimate_layout_savings(table, snapshot, statuses, {c: stored[c] or None for c in columns}) if statuses else None
    if savings is not None:
        notes.extend(savings.notes)
        if optimize is not None:
            optimize = _with_layout_savings(optimize, savings)
    reports = tuple(_column_report(c, stored[c] or None, counts[c], footer_typed[c], empty_threshold) for c in columns)
    return DoctorReport(
        table=table.path,
        version=snapshot.version,
        files=len(tasks),
        rows=sum(live),
        deleted_rows=sum(len(d) for d in deleted),
        rows_analyzed=analysed,
        sampled=analysed < sum(live),
        empty_threshold=float(empty_threshold),
        columns=reports,
        drifted_files=_drifted_files(statuses, savings),
        optimize=optimize,
        notes=tuple(notes),
    )


def _analyse_file(
    table: TableHandle,
    task: ScanTask,
    footer: FileLayout,
    columns: Sequence[str],
    mapping: Any,
    rows: np.ndarray,
    counts: Mapping[str, _Counts],
    notes: list[str],
) -> None:
    where = f"{table.path}: data file {task.relative_path!r}"
    try:
        pf = pq.ParquetFile(table.read_source(task.relative_path), metadata=footer.metadata)
    except (pa.ArrowException, OSError) as exc:
        raise TableError(f"{where}: cannot open as Parquet ({exc})") from None
    for column in columns:
        c = counts[column]
        physical = (mapping.physical_dotted(column) if mapping is not None else column).split(".")
        group = _read_rows(pf, physical, rows, where)
        if group is None:  # a column added after the file was written: NULL in every row
            c.rows += len(rows)
            c.sql_null += len(rows)
            continue
        try:
            layout = recognise_layout(group.type, f"{where}: column {column!r}")
            values = unshred_variant(group, layout, where=f"{where}: column {column!r}")
            root, _ = infer.collect(values)
        except (ShreddingError, VariantError) as exc:  # invalid layout or bytes: reported, not counted
            notes.append(f"{column}: {len(rows)} row(s) of {task.relative_path} not analysed: {exc}")
            continue
        c.rows += len(rows)
        c.sql_null += group.null_count
        _count_typed(group, layout.root, (), c)
        c.samples.append(values)
        flat: dict[Segments, dict[int, int]] = {}
        _flatten_stats(root, (), flat)
        for segments, kinds in flat.items():
            _add_kinds(c.kinds.setdefault(segments, {}), kinds)
            c.file_kinds.setdefault(segments, []).append((task.add.path, kinds))


def _footer_typed(footers: Sequence[FileLayout], column: str, mapping: Any) -> tuple[int, dict[Segments, int]]:
    """The cheap first pass, from footers alone: the rows of every live file (deleted ones
    included: footers cannot leave them out) and, per typed primitive leaf outside arrays,
    how many of those rows hold a typed value there (rows minus the leaf's null count, summed
    over row groups). A path is left out when a row group holding it lacks null counts."""
    physical = tuple((mapping.physical_dotted(column) if mapping is not None else column).split("."))
    total = 0
    typed: dict[Segments, int] = {}
    unknown: set[Segments] = set()
    for layout in footers:
        meta = layout.metadata
        total += meta.num_rows
        root = layout.variant_root(physical)
        if root is None:
            continue
        stack: list[tuple[ValueLayout, str, Segments]] = [(root, ".".join(physical), ())]
        while stack:
            node, parquet, segments = stack.pop()
            if isinstance(node.typed, ObjectLayout):
                stack.extend((child, f"{parquet}.typed_value.{key}", segments + (key,)) for key, child in node.typed.fields)
                continue
            index = layout.columns.get(f"{parquet}.typed_value")
            if not isinstance(node.typed, PrimitiveLayout) or index is None:
                continue
            found = 0
            for g in range(meta.num_row_groups):
                chunk = meta.row_group(g).column(index)
                stats = chunk.statistics
                if stats is None or not stats.has_null_count:
                    unknown.add(segments)
                    break
                found += meta.row_group(g).num_rows - stats.null_count
            typed[segments] = typed.get(segments, 0) + found
    return total, {p: n for p, n in typed.items() if p not in unknown}


def _valid_ddl(ddl: str) -> bool:
    try:
        ShreddingSchema.parse(ddl)
    except ShreddingSchemaError:
        return False
    return True


def _schema_nodes(t: pa.DataType, segments: Segments, out: dict[Segments, str]) -> None:
    if pa.types.is_struct(t):
        out[segments] = "object"
        for f in t:
            _schema_nodes(f.type, segments + (f.name,), out)
    elif pa.types.is_list(t):
        out[segments] = "array"
        _schema_nodes(t.value_type, segments + (None,), out)
    else:
        out[segments] = type_ddl(t)


def _slots(segments: Segments, counts: _Counts) -> tuple[int, int]:
    """(slots, SQL-null slots) of a path: rows, or the values at its innermost array's elements."""
    if None not in segments:
        return counts.rows, counts.sql_null
    last = max(i for i, s in enumerate(segments) if s is None)
    return sum(counts.kinds.get(segments[: last + 1], {}).values()), 0


def _column_report(
    column: str, ddl: str | None, counts: _Counts, footer: tuple[int, Mapping[Segments, int]], empty_threshold: float
) -> ColumnReport:
    schema_types: dict[Segments, str] = {}
    if ddl:
        _schema_nodes(ShreddingSchema.parse(ddl).arrow_type, (), schema_types)
    paths = set(counts.kinds) | set(counts.typed) | set(schema_types)
    if counts.rows:
        paths.add(())
    coverage = []
    conflicts = []
    for segments in sorted(paths, key=_order):
        kinds = counts.kinds.get(segments, {})
        slots, sql_null = _slots(segments, counts)
        present = sum(kinds.values())
        nulls = kinds.get(infer.NULL, 0)
        typed = counts.typed.get(segments, 0)
        text = path_text(segments)
        coverage.append(
            PathCoverage(
                path=text,
                in_schema=segments in schema_types,
                schema_type=schema_types.get(segments),
                slots=slots,
                typed=typed,
                residual=present - nulls - typed,
                absent=slots - sql_null - present,
                variant_null=nulls,
                sql_null=sql_null,
                types=_type_counts(kinds),
                footer_typed=footer[1].get(segments),
            )
        )
        if len(_families(kinds)) > 1:
            files = tuple((p, _type_counts(k)) for p, k in counts.file_kinds.get(segments, []) if _type_counts(k))
            conflicts.append(TypeConflict(text, _type_counts(kinds), files))
    suggested = _suggested_schema(counts)
    suggestions = _suggestions(ddl, suggested, {p.path: p for p in coverage}, empty_threshold)
    return ColumnReport(
        column=column,
        schema=ddl,
        suggested_schema=suggested.ddl if suggested is not None else None,
        rows_analyzed=counts.rows,
        footer_rows=footer[0],
        paths=tuple(coverage),
        conflicts=tuple(conflicts),
        suggestions=tuple(suggestions),
        scalar_values=sum(n for kinds in counts.kinds.values() for k, n in kinds.items() if k not in _CONTAINERS),
        typed_scalars=counts.typed_scalars,
    )


def _suggested_schema(counts: _Counts) -> ShreddingSchema | None:
    """What the analysed rows would shred (``infer_shredding_schema``), at stable widths:
    inferred from ``SAMPLE_ROWS`` of them (``sample_rows``) -- as many as a write infers from."""
    if not counts.samples:
        return None
    values = pa.chunked_array(counts.samples).combine_chunks()
    if len(values) > SAMPLE_ROWS:
        values = values.take(pa.array(sample_rows(np.arange(len(values), dtype=np.int64), SAMPLE_ROWS)))
    inferred = infer.infer_shredding_schema(values)
    return ShreddingSchema(stable_widths(inferred.arrow_type)) if inferred is not None else None


def _suggestions(
    ddl: str | None,
    suggested: ShreddingSchema | None,
    coverage: Mapping[str, PathCoverage],
    empty_threshold: float,
) -> list[Suggestion]:
    current = {path_text(p): type_ddl(t) for p, t in ShreddingSchema.parse(ddl).leaves()} if ddl else {}
    wanted = {path_text(p): type_ddl(t) for p, t in suggested.leaves()} if suggested is not None else {}
    out = []
    for path, t in wanted.items():
        share = coverage[path].typed_share if path in coverage else 0.0
        if path not in current:
            out.append(Suggestion("add", path, t, None, share, f"the analysed data would shred {path} as {t}; the schema lacks it"))
        elif current[path] != t:
            out.append(
                Suggestion("retype", path, t, current[path], share, f"the analysed data would shred {path} as {t}, not {current[path]}")
            )
    for path, t in current.items():
        cov = coverage.get(path)
        share = cov.typed_share if cov is not None else 0.0
        if share < empty_threshold:
            out.append(
                Suggestion(
                    "drop", path, None, t, share,
                    f"typed share {share:.1%} is below {empty_threshold:.1%}: the typed column is nearly empty",
                )  # fmt: skip
            )
    order = {"add": 0, "retype": 1, "drop": 2}
    return sorted(out, key=lambda s: (order[s.kind], s.path))


def _with_layout_savings(summary: Mapping[str, Any], savings: LayoutSavings) -> dict[str, Any]:
    """The optimize summary with the re-shredding estimate (``write.layout_savings``) and the
    total: footers merged and deleted rows purged (the plan's ``estimated_bytes_saved``)
    plus what the table's layout saves."""
    out = dict(summary)
    out.update(savings.summary())
    out["estimated_total_bytes_saved"] = int(out.get("estimated_bytes_saved") or 0) + savings.bytes_saved
    return out


def _drifted_files(statuses: Sequence[FileLayoutStatus], savings: LayoutSavings | None = None) -> tuple[DriftedFile, ...]:
    out = []
    for status in statuses:
        if not status.drifted:
            continue
        rows = status.num_records - status.deleted_rows if status.num_records is not None else None
        out.append(
            DriftedFile(
                path=status.path,
                size=status.size,
                rows=rows,
                reason=status.reason or "",
                columns=tuple((d.column, d.kind, d.file_ddl, d.table_ddl) for d in status.drift),
                differences=tuple(line for d in status.drift for line in _leaf_differences(d.column, d.kind, d.file_ddl, d.table_ddl)),
                estimated_bytes_saved=savings.per_file.get(status.path) if savings is not None else None,
            )
        )
    return tuple(sorted(out, key=lambda f: f.path))


def _leaf_differences(column: str, kind: str, file_ddl: str | None, table_ddl: str | None) -> list[str]:
    """The typed leaves in which a file's layout of ``column`` differs from the table's."""
    if kind == "unrecognised":
        return [f"{column}: the file's layout is not one varlake knows"]
    if file_ddl is None:
        return [f"{column}: unshredded in the file"]
    if table_ddl is None:
        return [f"{column}: shredded in the file, unshredded in the table"]
    have = {path_text(p): type_ddl(t) for p, t in ShreddingSchema.parse(file_ddl).leaves()}
    want = {path_text(p): type_ddl(t) for p, t in ShreddingSchema.parse(table_ddl).leaves()}
    out = []
    for path in sorted(set(have) | set(want)):
        if path not in want:
            out.append(f"{column} {path}: {have[path]} in the file, not in the table's schema")
        elif path not in have:
            out.append(f"{column} {path}: {want[path]} in the table's schema, not in the file")
        elif have[path] != want[path]:
            out.append(f"{column} {path}: {have[path]} in the file, {want[path]} in the table's schema")
    return out


def _optimize_plan(table: TableHandle, snapshot: Any, notes: list[str]) -> tuple[Mapping[str, Any] | None, Sequence[FileLayoutStatus]]:
    """What ``optimize`` would rewrite and save (``write.optimize.plan_optimize``'s summary),
    and every live file's layout status; the summary is None, with a note, when the table
    cannot be optimized (e.g. a protocol varlake cannot write), and the statuses empty, with
    a note, when even the layouts cannot be compared (e.g. a stored schema that is not DDL)."""
    try:
        plan = plan_optimize(table, snapshot=snapshot)
    except VarlakeError as exc:
        notes.append(f"optimize cannot be planned: {exc}")
    else:
        return plan.summary(), plan.statuses
    try:
        return None, layout_status(table, snapshot)
    except VarlakeError as exc:
        notes.append(f"file layouts cannot be compared with the table's: {exc}")
        return None, ()
