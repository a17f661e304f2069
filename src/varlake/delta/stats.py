"""Per-file statistics: Delta stats JSON from a Parquet footer, and back into ``FileStats``.

Writing (``stats_from_footer``): ``numRecords``; ``nullCount`` for every indexed leaf;
``minValues``/``maxValues`` for orderable primitives (the first
``delta.dataSkippingNumIndexedCols`` leaf columns, default 32); Variant columns get
their ``nullCount`` and Z85 per-path bounds from the shredded footer. Bounds stay
sound: strings are cut to 32 characters with the max raised, timestamps are stored
at millisecond precision with the min floored and the max ceiled, and no bounds are
written for float/double (Parquet's min/max ignore NaN, which Spark sorts above
every number), booleans or binary.

Reading (``file_stats``): Delta's JSON, from varlake or any other writer, decoded by
the table schema into typed values; Variant stats decoded into per-path bounds with
their type family. Anything missing or not understood is simply left out, which the
skipping evaluator reads as "might match".
"""

from __future__ import annotations

import datetime as _dt
import json
from decimal import Decimal
from typing import Any, Iterator, Mapping

import pyarrow.parquet as pq

from varlake.delta.schema import ArrayType, DataType, MapType, PrimitiveType, StructType, VariantType
from varlake.errors import MalformedVariantError, VarlakeError
from varlake.expr import FileStats, TypeFamily, VariantBound
from varlake.shred.stats import delta_stats, string_bounds, variant_footer_stats
from varlake.variant import Float32, decode_variant_stat
from varlake.variant.constants import TypeFamily as CodecFamily

ColumnPath = tuple[str, ...]
DEFAULT_NUM_INDEXED_COLS = 32
STRING_PREFIX_LENGTH = 32
_BOUNDED = ("byte", "short", "integer", "long", "string", "date", "timestamp", "timestamp_ntz")
_UTC = _dt.timezone.utc


def leaf_columns(schema: StructType, prefix: ColumnPath = ()) -> Iterator[tuple[ColumnPath, DataType]]:
    """Stats-bearing leaves in schema order: primitives and Variants, descending into structs
    (arrays and maps hold no statistics)."""
    for f in schema.fields:
        path = (*prefix, f.name)
        if isinstance(f.type, StructType):
            yield from leaf_columns(f.type, path)
        elif not isinstance(f.type, (ArrayType, MapType)):
            yield path, f.type


def _set(target: dict[str, Any], path: ColumnPath, value: Any) -> None:
    for name in path[:-1]:
        target = target.setdefault(name, {})
    target[path[-1]] = value


def _get(source: Mapping[str, Any] | None, path: ColumnPath) -> Any:
    for name in path:
        if not isinstance(source, Mapping) or name not in source:
            return None
        source = source[name]
    return source


# --- writing ------------------------------------------------------------------------------


def _millis(value: _dt.datetime, up: bool) -> _dt.datetime:
    extra = value.microsecond % 1000
    value = value - _dt.timedelta(microseconds=extra)
    return value + _dt.timedelta(milliseconds=1) if up and extra else value


def _json_bound(type_name: str, value: Any, is_max: bool) -> Any:
    if type_name in ("byte", "short", "integer", "long"):
        return int(value)
    if type_name.startswith("decimal("):
        return _DecimalText(value)
    if type_name == "date":
        return value.isoformat()
    if type_name == "timestamp":
        v = _millis(value.astimezone(_UTC), is_max)
        return v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}Z"
    if type_name == "timestamp_ntz":
        v = _millis(value, is_max)
        return v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}"
    return value


class _DecimalText:
    """A decimal bound written as an exact JSON number (json cannot emit Decimal)."""

    def __init__(self, value: Decimal) -> None:
        self.text = format(value, "f")


def _dumps(stats: dict[str, Any]) -> str:
    marks: dict[str, str] = {}

    def default(obj: Any) -> Any:
        if isinstance(obj, _DecimalText):
            key = f"\x00{len(marks)}\x00"
            marks[json.dumps(key)] = obj.text
            return key
        raise TypeError(f"cannot serialise {type(obj).__name__} in stats")

    text = json.dumps(stats, default=default, separators=(",", ":"), ensure_ascii=False)
    for quoted, number in marks.items():
        text = text.replace(quoted, number)
    return text


def _footer_column_bounds(meta: pq.FileMetaData, index: int) -> tuple[Any, Any, int | None]:
    lo = hi = None
    nulls: int | None = 0
    for rg in range(meta.num_row_groups):
        col = meta.row_group(rg).column(index)
        st = col.statistics
        if st is None:
            return None, None, None
        if nulls is not None:
            nulls = nulls + st.null_count if st.has_null_count else None
        if col.num_values == st.null_count:
            continue  # an all-null row group has no bounds and needs none
        if not st.has_min_max:
            return None, None, nulls
        lo = st.min if lo is None or st.min < lo else lo
        hi = st.max if hi is None or st.max > hi else hi
    return lo, hi, nulls


def stats_from_footer(
    meta: pq.FileMetaData, schema: StructType, num_indexed_cols: int = DEFAULT_NUM_INDEXED_COLS
) -> dict[str, Any]:
    """The Delta stats object of a data file, computed from its Parquet footer alone."""
    out: dict[str, Any] = {"numRecords": meta.num_rows, "minValues": {}, "maxValues": {}, "nullCount": {}}
    index = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    leaves = list(leaf_columns(schema))
    if num_indexed_cols >= 0:
        leaves = leaves[:num_indexed_cols]
    variants = [path for path, t in leaves if isinstance(t, VariantType)]
    for path, t in leaves:
        if isinstance(t, VariantType) or not isinstance(t, PrimitiveType):
            continue
        i = index.get(".".join(path))
        if i is None:
            continue
        lo, hi, nulls = _footer_column_bounds(meta, i)
        if nulls is not None:
            _set(out["nullCount"], path, nulls)
        name = t.name
        if lo is None or hi is None or not (name in _BOUNDED or name.startswith("decimal(")):
            continue
        if name == "string":
            if not isinstance(lo, str) or not isinstance(hi, str):
                continue
            lo, hi_bound = string_bounds(lo, hi, STRING_PREFIX_LENGTH)
            if hi_bound is None:
                _set(out["minValues"], path, lo)
                continue
            hi = hi_bound
        _set(out["minValues"], path, _json_bound(name, lo, False))
        _set(out["maxValues"], path, _json_bound(name, hi, True))
    if variants:
        fragments = delta_stats(variant_footer_stats(meta, [list(p) for p in variants]))
        for key in ("nullCount", "minValues", "maxValues"):
            for path in variants:
                value = _get(fragments[key], path)
                if value is not None:
                    _set(out[key], path, value)
    return out


def stats_json(meta: pq.FileMetaData, schema: StructType, num_indexed_cols: int = DEFAULT_NUM_INDEXED_COLS) -> str:
    """``stats_from_footer`` serialised as the ``add`` action's ``stats`` string."""
    return _dumps(stats_from_footer(meta, schema, num_indexed_cols))


# --- reading --------------------------------------------------------------------------------

_FAMILY = {
    CodecFamily.EXACT_NUMERIC: TypeFamily.EXACT_NUMERIC,
    CodecFamily.DOUBLE: TypeFamily.DOUBLE,
    CodecFamily.FLOAT: TypeFamily.FLOAT,
    CodecFamily.STRING: TypeFamily.STRING,
    CodecFamily.BOOLEAN: TypeFamily.BOOLEAN,
    CodecFamily.DATE: TypeFamily.DATE,
    CodecFamily.TIMESTAMP: TypeFamily.TIMESTAMP,
    CodecFamily.TIMESTAMP_NTZ: TypeFamily.TIMESTAMP_NTZ,
    CodecFamily.BINARY: TypeFamily.BINARY,
    CodecFamily.TIME: TypeFamily.TIME,
    CodecFamily.UUID: TypeFamily.UUID,
}


def _parse_timestamp(text: str, aware: bool, is_max: bool) -> _dt.datetime | None:
    try:
        value = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if aware:
        value = value.replace(tzinfo=_UTC) if value.tzinfo is None else value.astimezone(_UTC)
    elif value.tzinfo is not None:
        return None
    if is_max and value.microsecond % 1000 == 0:
        # Delta writers keep milliseconds: the true max may lie up to 999 us later.
        value += _dt.timedelta(microseconds=999)
    return value


def _typed_bound(type_name: str, raw: Any, is_max: bool) -> Any:
    """A stats JSON value as a Python value of the column's type, or None if unusable."""
    if raw is None or isinstance(raw, bool):
        return None
    if type_name in ("byte", "short", "integer", "long"):
        return int(raw) if isinstance(raw, (int, Decimal)) and raw == int(raw) else None
    if type_name.startswith("decimal("):
        return Decimal(raw) if isinstance(raw, (int, Decimal)) else None
    if type_name == "string":
        return raw if isinstance(raw, str) else None
    if type_name == "date":
        try:
            return _dt.date.fromisoformat(raw) if isinstance(raw, str) else None
        except ValueError:
            return None
    if type_name in ("timestamp", "timestamp_ntz") and isinstance(raw, str):
        return _parse_timestamp(raw, type_name == "timestamp", is_max)
    return None  # float/double/boolean/binary bounds are never trusted


def _variant_bounds(column: ColumnPath, text: Any) -> dict[tuple[ColumnPath, str], VariantBound]:
    if not isinstance(text, str):
        return {}
    try:
        obj = decode_variant_stat(text)
    except (MalformedVariantError, VarlakeError):
        return {}
    out = {}
    for key, value in obj.items():
        family = _FAMILY.get(value.type_family)
        if family is None:
            continue
        py = value.to_python()
        if isinstance(py, Float32):
            py = float(py)
        out[(column, key)] = VariantBound(py, family)
    return out


def parse_stats(stats: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """The stats JSON of an ``add`` as a dict (decimals exact); {} when absent or unreadable."""
    if stats is None:
        return {}
    if isinstance(stats, Mapping):
        return dict(stats)
    try:
        parsed = json.loads(stats, parse_float=Decimal)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def file_stats(
    stats: str | Mapping[str, Any] | None,
    schema: StructType,
    partition_values: Mapping[str, Any] | None = None,
) -> FileStats:
    """``FileStats`` for the skipping evaluator from an ``add``'s stats and partition values."""
    parsed = parse_stats(stats)
    mins: dict[ColumnPath, Any] = {}
    maxs: dict[ColumnPath, Any] = {}
    nulls: dict[ColumnPath, int] = {}
    vmin: dict[tuple[ColumnPath, str], VariantBound] = {}
    vmax: dict[tuple[ColumnPath, str], VariantBound] = {}
    min_values, max_values, null_count = parsed.get("minValues"), parsed.get("maxValues"), parsed.get("nullCount")
    for path, t in leaf_columns(schema):
        n = _get(null_count, path)
        if isinstance(n, int) and not isinstance(n, bool):
            nulls[path] = n
        if isinstance(t, VariantType):
            vmin.update(_variant_bounds(path, _get(min_values, path)))
            vmax.update(_variant_bounds(path, _get(max_values, path)))
            continue
        if not isinstance(t, PrimitiveType):
            continue
        lo = _typed_bound(t.name, _get(min_values, path), False)
        hi = _typed_bound(t.name, _get(max_values, path), True)
        if lo is not None:
            mins[path] = lo
        if hi is not None:
            maxs[path] = hi
    num = parsed.get("numRecords")
    return FileStats(
        num_records=num if isinstance(num, int) and not isinstance(num, bool) else None,
        min_values=mins,
        max_values=maxs,
        null_count=nulls,
        variant_min=vmin,
        variant_max=vmax,
        partition_values=dict(partition_values or {}),
    )
