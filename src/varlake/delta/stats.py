"""Per-file statistics: Delta stats JSON from a Parquet footer, and back into ``FileStats``.

Writing (``stats_from_footer``): ``numRecords``; ``nullCount`` for every indexed leaf;
``minValues``/``maxValues`` for orderable primitives (the first
``delta.dataSkippingNumIndexedCols`` leaf columns, default 32); Variant columns get
their ``nullCount`` and Z85 per-path bounds from the shredded footer. Bounds stay
sound: strings are cut to 32 characters with the max raised, timestamps are stored
at millisecond precision with the min floored and the max ceiled, and no bounds are
written for float/double (Parquet's min/max ignore NaN, which Spark sorts above
every number), booleans or binary. Other writers' float/double bounds are read
(``expr.bounds`` decides what they prove).

Reading (``file_stats``): Delta's JSON, from varlake or any other writer, decoded by
the table schema into typed values; Variant stats decoded into per-path bounds with
their type family. Anything missing or not understood is simply left out, which the
skipping evaluator reads as "might match".
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import functools
import json
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any, Iterator, Mapping

import pyarrow.parquet as pq

from varlake.delta import config
from varlake.delta.json_fields import LONG_MAX, LONG_MIN, load_json
from varlake.delta.schema import ArrayType, DataType, MapType, PathVisitor, PrimitiveType, StructField, StructType, VariantType, visit
import numpy as np

from varlake.errors import VarlakeError
from varlake.expr import FileStats, TypeFamily, VariantBound
from varlake.semantics.numbers import float32_of_fraction, to_float32
from varlake.shred.stats import delta_stats, string_bounds, variant_footer_stats
from varlake.variant import Float32, TimestampNanos
from varlake.variant.constants import FAMILY_OF_PRIMITIVE
from varlake.variant.decoder import MetadataView, guarded, object_entries, primitive_to_python, read_uint, type_info
from varlake.variant.z85 import ALPHABET as Z85_ALPHABET

ColumnPath = tuple[str, ...]
DEFAULT_NUM_INDEXED_COLS = config.DEFAULT_NUM_INDEXED_COLS
STRING_PREFIX_LENGTH = 32
_BOUNDED = ("byte", "short", "integer", "long", "string", "date", "timestamp", "timestamp_ntz")
_UTC = _dt.timezone.utc
_DECIMAL_TYPE = re.compile(r"^decimal\((\d+),(\d+)\)$")


def leaf_columns(schema: StructType, prefix: ColumnPath = ()) -> Iterator[tuple[ColumnPath, DataType]]:
    """Stats-bearing leaves in schema order: primitives and Variants, descending into structs
    (arrays and maps hold no statistics)."""
    found = _LeafColumns()
    visit(schema, found)
    return iter([((*prefix, *path), t) for path, t in found.leaves])


class _LeafColumns(PathVisitor[None]):
    """``leaf_columns``: primitives and Variants reached through structs alone."""

    def __init__(self) -> None:
        super().__init__()
        self.leaves: list[tuple[ColumnPath, DataType]] = []
        self.inside = 0  # arrays and maps around the current node

    def before_field(self, field: StructField) -> None:
        super().before_field(field)
        if not self.inside and isinstance(field.type, (PrimitiveType, VariantType)):
            self.leaves.append((tuple(self.path), field.type))

    def before_element(self, array: ArrayType) -> None:
        super().before_element(array)
        self.inside += 1

    def after_element(self, array: ArrayType) -> None:
        super().after_element(array)
        self.inside -= 1

    def before_key(self, map_type: MapType) -> None:
        super().before_key(map_type)
        self.inside += 1

    def after_value(self, map_type: MapType) -> None:
        super().after_value(map_type)
        self.inside -= 1


def _set(target: dict[str, Any], path: ColumnPath, value: Any) -> None:
    for name in path[:-1]:
        target = target.setdefault(name, {})
    target[path[-1]] = value


def _get(source: Mapping[str, Any] | None, path: ColumnPath) -> Any:
    for name in path:
        if type(source) is not dict or name not in source:
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
        if isinstance(raw, Decimal):  # never int() a huge exponent: 1e999999999 has a billion digits
            if not raw.is_finite() or raw.adjusted() > 18 or raw != raw.to_integral_value():
                return None
            raw = int(raw)
        return raw if isinstance(raw, int) and LONG_MIN <= raw <= LONG_MAX else None
    if type_name.startswith("decimal("):
        value = Decimal(raw) if isinstance(raw, (int, Decimal)) else None
        m = _DECIMAL_TYPE.match(type_name)
        if value is None or m is None or not value.is_finite():
            return None
        # A bound the column's precision cannot hold is a lie (and could be astronomically long).
        precision, scale = int(m.group(1)), int(m.group(2))
        return value if value.is_zero() or -scale <= value.adjusted() < precision - scale else None
    if type_name == "string":
        return raw if isinstance(raw, str) else None
    if type_name == "date":
        try:
            return _dt.date.fromisoformat(raw) if isinstance(raw, str) else None
        except ValueError:
            return None
    if type_name in ("timestamp", "timestamp_ntz") and isinstance(raw, str):
        return _parse_timestamp(raw, type_name == "timestamp", is_max)
    if type_name in ("float", "double"):
        return _float_bound(raw, type_name == "float", is_max)
    return None  # boolean/binary bounds are never trusted


_NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _float_bound(raw: Any, float32: bool, is_max: bool) -> float | None:
    """A float/double bound: a JSON number or Jackson's ``"NaN"``/``"Infinity"``/``"-Infinity"``
    (NaN is kept; the skipping rules drop it). Text is rounded once to the column's
    precision; a double column's bound is widened to also cover the float the text may
    name (a file written before the column was widened from float)."""
    if isinstance(raw, str):
        return _NON_FINITE.get(raw)
    if isinstance(raw, float):
        return to_float32(raw) if float32 else raw
    if not isinstance(raw, (int, Decimal)) or (isinstance(raw, Decimal) and not raw.is_finite()):
        return None
    if isinstance(raw, Decimal) and not raw.is_zero() and not -400 < raw.adjusted() < 400:
        return None  # outside every float's range: garbage, not a bound
    narrow = float32_of_fraction(Fraction(raw))
    if float32:
        return narrow
    return max(float(raw), narrow) if is_max else min(float(raw), narrow)


_Z85_TABLE = np.full(256, 255, dtype=np.uint8)
_Z85_TABLE[np.frombuffer(Z85_ALPHABET.encode("ascii"), dtype=np.uint8)] = np.arange(85, dtype=np.uint8)
_Z85_POWERS = np.array([85**4, 85**3, 85**2, 85, 1], dtype=np.uint64)


def _z85_bytes(text: str) -> bytes | None:
    """Z85 decoding vectorised with numpy (stats are decoded for every file of a scan)."""
    raw = text.encode("ascii", "replace")
    if len(raw) % 5:
        return None
    digits = _Z85_TABLE[np.frombuffer(raw, dtype=np.uint8)]
    if (digits == 255).any():
        return None
    words = digits.reshape(-1, 5).astype(np.uint64) @ _Z85_POWERS
    if (words > 0xFFFFFFFF).any():
        return None
    return words.astype(">u4").tobytes()


@guarded
def _decode_bounds(data: bytes) -> list[tuple[str, Any, int]]:
    meta = MetadataView(data)
    start = meta.strings_start + read_uint(data, meta.strings_start - meta.offset_size, meta.offset_size)
    if data[start] & 0x03 != 2:
        return []
    out = []
    for key, pos in object_entries(meta, data, start):
        basic, type_id = type_info(data, pos)
        if basic == 0:
            out.append((key, primitive_to_python(data, pos), type_id))
    return out


@functools.lru_cache(maxsize=65536)
def _variant_bounds_cached(text: str) -> tuple[tuple[str, VariantBound], ...]:
    data = _z85_bytes(text)
    if data is None:
        return ()
    try:
        decoded = _decode_bounds(data)
    except VarlakeError:
        return ()
    out = []
    for key, value, type_id in decoded:
        family = FAMILY_OF_PRIMITIVE.get(type_id)
        if family is None or family is TypeFamily.NULL or isinstance(value, TimestampNanos):
            continue
        out.append((key, VariantBound(float(value) if isinstance(value, Float32) else value, family)))
    return tuple(out)


def _variant_bounds(column: ColumnPath, text: Any) -> dict[tuple[ColumnPath, str], VariantBound]:
    """Per-path bounds of a Z85 Variant stat; {} when absent or unreadable (never a wrong bound)."""
    if not isinstance(text, str):
        return {}
    return {(column, key): bound for key, bound in _variant_bounds_cached(text)}


def parse_stats(stats: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """The stats JSON of an ``add`` as a dict (decimals exact); {} when absent or unreadable.

    Unreadable includes nested deeper than ``json_fields.MAX_JSON_DEPTH`` (refused before
    decoding). Like Delta, which reads stats it cannot parse as null, a file with unreadable
    stats is simply never skipped.
    """
    if stats is None:
        return {}
    if isinstance(stats, Mapping):
        return dict(stats)
    try:
        parsed = load_json(stats, "add", "stats", parse_float=Decimal)
    except VarlakeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def file_stats(
    stats: str | Mapping[str, Any] | None,
    schema: StructType,
    partition_values: Mapping[str, Any] | None = None,
) -> FileStats:
    """``FileStats`` for the skipping evaluator from an ``add``'s stats and partition values.

    Decoding is cached by stats text: a table's files keep their stats for life, so
    only the first scan of a snapshot pays for it.
    """
    if isinstance(stats, str):
        base = _file_stats_cached(stats, _schema_key(schema))
        return dataclasses.replace(base, partition_values=dict(partition_values)) if partition_values else base
    return _file_stats(stats, schema, partition_values)


_SCHEMAS: dict[int, tuple[StructType, str]] = {}
_SCHEMA_BY_TEXT: dict[str, StructType] = {}


def _schema_key(schema: StructType) -> str:
    """The schema's JSON text, computed once per schema object (held so ids stay unique)."""
    entry = _SCHEMAS.get(id(schema))
    if entry is None or entry[0] is not schema:
        if len(_SCHEMAS) > 256:
            _SCHEMAS.clear()
        entry = _SCHEMAS[id(schema)] = (schema, schema.to_schema_string())
        _SCHEMA_BY_TEXT.setdefault(entry[1], schema)
    return entry[1]


@functools.lru_cache(maxsize=131072)
def _file_stats_cached(stats: str, schema_text: str) -> FileStats:
    return _file_stats(stats, _SCHEMA_BY_TEXT[schema_text], None, _leaves_of(schema_text))


@functools.lru_cache(maxsize=256)
def _leaves_of(schema_text: str) -> tuple[tuple[ColumnPath, DataType], ...]:
    """``leaf_columns`` of a schema, by its text (once per schema, not once per file)."""
    return tuple(leaf_columns(_SCHEMA_BY_TEXT[schema_text]))


def _file_stats(
    stats: str | Mapping[str, Any] | None,
    schema: StructType,
    partition_values: Mapping[str, Any] | None,
    leaves: tuple[tuple[ColumnPath, DataType], ...] | None = None,
) -> FileStats:
    parsed = parse_stats(stats)
    mins: dict[ColumnPath, Any] = {}
    maxs: dict[ColumnPath, Any] = {}
    nulls: dict[ColumnPath, int] = {}
    vmin: dict[tuple[ColumnPath, str], VariantBound] = {}
    vmax: dict[tuple[ColumnPath, str], VariantBound] = {}
    min_values, max_values, null_count = parsed.get("minValues"), parsed.get("maxValues"), parsed.get("nullCount")
    for path, t in leaves if leaves is not None else leaf_columns(schema):
        n = _get(null_count, path)
        if type(n) is int and 0 <= n <= LONG_MAX:
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
        num_records=num if type(num) is int and 0 <= num <= LONG_MAX else None,
        min_values=mins,
        max_values=maxs,
        null_count=nulls,
        variant_min=vmin,
        variant_max=vmax,
        partition_values=dict(partition_values or {}),
    )
