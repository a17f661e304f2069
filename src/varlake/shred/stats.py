"""Delta statistics for Variant columns, read from a Parquet footer alone.

Delta (PROTOCOL "Statistics for Variant Columns") records, per Variant column, its
``nullCount`` and, in ``minValues``/``maxValues``, a Variant *object* keyed by normalized
paths (``$['a']['b']``) whose values are the per-path bounds, Z85-encoded in JSON.

A shredded leaf ``...typed_value`` qualifies when its sibling ``value`` column is null in
every row of every row group (so every value at that path has the typed column's type),
and when its type is one Delta writes stats for. Bounds are merged over row groups.
Left out, conservatively:
* leaves under a shredded array (an element path is not a single value per row);
* booleans, binary, UUID, TIME and nanosecond timestamps (Delta writes none for them);
* FLOAT and DOUBLE: Parquet min/max skip NaN and pyarrow writes no ``nan_count``, so the
  footer cannot prove a column NaN-free, and a NaN-blind bound would skip files wrongly.
Strings are cut to ``string_prefix_length`` UTF-16 units (Delta's
``dataSkippingStringPrefixLength``, 32); a cut max gets U+10FFFF appended so it stays an
upper bound, and is dropped when that is not enough (Delta does the same).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from varlake.errors import ShreddingError
from varlake.shred.schema import find_variant_columns, is_variant_struct
from varlake.variant import Variant, VariantPath, encode_variant_stat
from varlake.variant.constants import PrimitiveType
from varlake.variant.encoder import (
    MetadataBuilder,
    encode_date_days,
    encode_decimal_as,
    encode_int_as,
    encode_object,
    encode_string,
    encode_timestamp_micros,
)

DEFAULT_STRING_PREFIX_LENGTH = 32
MAX_CODE_POINT = "\U0010ffff"

ColumnPath = tuple[str, ...]


@dataclass(frozen=True)
class VariantColumnStats:
    """Footer statistics of one Variant column."""

    column: ColumnPath
    null_count: int | None
    min_values: Variant | None
    max_values: Variant | None

    @property
    def min_z85(self) -> str | None:
        return None if self.min_values is None else encode_variant_stat(self.min_values)

    @property
    def max_z85(self) -> str | None:
        return None if self.max_values is None else encode_variant_stat(self.max_values)


# --- the footer's layout -----------------------------------------------------------------------------


def _leaf_paths(schema: pa.Schema) -> list[ColumnPath]:
    """Parquet leaf column paths in file order, from the Arrow form of the footer schema."""
    out: list[ColumnPath] = []

    def walk(t: pa.DataType, path: ColumnPath) -> None:
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i).type, path + (t.field(i).name,))
        elif pa.types.is_map(t):
            walk(t.key_type, path + ("key_value", "key"))
            walk(t.item_type, path + ("key_value", "value"))
        elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            walk(t.value_type, path + ("list", t.value_field.name))
        else:
            out.append(path)

    for f in schema:
        walk(f.type, (f.name,))
    return out


def _object_leaves(t: pa.DataType, segments: tuple[str, ...], file_path: ColumnPath) -> Iterator[tuple[tuple[str, ...], ColumnPath]]:
    """``(object path, parquet path of typed_value)`` of every typed leaf reached through
    objects only, starting at a ``typed_value`` of type ``t`` at ``file_path``."""
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            group = t.field(i)
            gt = group.type
            if pa.types.is_struct(gt) and gt.get_field_index("typed_value") >= 0:
                yield from _object_leaves(gt.field("typed_value").type, segments + (group.name,), file_path + (group.name, "typed_value"))
    elif not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t) or pa.types.is_fixed_size_list(t)):
        yield segments, file_path


# --- bounds from one column chunk statistic -------------------------------------------------------------


def _kind(stat: Any) -> str | None:
    """Which Variant primitive a typed column's statistics become, or None for no stats."""
    physical = stat.physical_type
    lt = json.loads(stat.logical_type.to_json())
    name = lt.get("Type")
    if physical == "INT32":
        if name == "Int" and lt.get("isSigned"):
            return {8: "int8", 16: "int16", 32: "int32"}.get(lt.get("bitWidth"))
        if name == "None":
            return "int32"
        if name == "Date":
            return "date"
        if name == "Decimal":
            return "decimal4"
        return None
    if physical == "INT64":
        if name == "None" or (name == "Int" and lt.get("isSigned") and lt.get("bitWidth") == 64):
            return "int64"
        if name == "Timestamp" and lt.get("timeUnit") == "microseconds":
            return "timestamp" if lt.get("isAdjustedToUTC") else "timestamp_ntz"
        if name == "Decimal":
            return "decimal8"
        return None
    if physical == "BYTE_ARRAY" and name == "String":
        return "string"
    if physical in ("FIXED_LEN_BYTE_ARRAY", "BYTE_ARRAY") and name == "Decimal":
        return "decimal16"
    return None


def _physical_value(raw: Any, kind: str) -> Any:
    """A comparable Python value of a raw statistic (ints stay ints, strings become str)."""
    if kind == "decimal16":
        return int.from_bytes(raw, "big", signed=True)
    if kind == "string":
        return raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else str(raw)
    return int(raw)


def _encode(kind: str, value: Any, scale: int) -> bytes:
    if kind in ("int8", "int16", "int32", "int64"):
        return encode_int_as(value, PrimitiveType[kind.upper()])
    if kind == "date":
        return encode_date_days(value)
    if kind in ("timestamp", "timestamp_ntz"):
        return encode_timestamp_micros(value, kind == "timestamp")
    if kind.startswith("decimal"):
        return encode_decimal_as(value, scale, PrimitiveType[kind.upper()])
    return encode_string(value)


def utf16_prefix(text: str, units: int) -> str:
    """The longest prefix of ``text`` within ``units`` UTF-16 code units (no split pairs)."""
    n = 0
    for i, ch in enumerate(text):
        n += 2 if ord(ch) > 0xFFFF else 1
        if n > units:
            return text[:i]
    return text


def _utf16_len(text: str) -> int:
    return sum(2 if ord(ch) > 0xFFFF else 1 for ch in text)


def string_bounds(lo: str, hi: str, prefix_length: int) -> tuple[str, str | None]:
    """Delta's string stat bounds: the min's prefix, and the max (or its prefix followed by
    U+10FFFF when cut; None when even that is not above the max)."""
    lower = utf16_prefix(lo, prefix_length)
    if _utf16_len(hi) <= prefix_length:
        return lower, hi
    upper = utf16_prefix(hi, prefix_length) + MAX_CODE_POINT
    return lower, (upper if upper > hi else None)


# --- the public entry point --------------------------------------------------------------------------------


def _metadata_of(source: str | os.PathLike[str] | pq.FileMetaData) -> pq.FileMetaData:
    if isinstance(source, pq.FileMetaData):
        return source
    try:
        return pq.read_metadata(os.fspath(source))
    except (OSError, pa.ArrowException) as exc:
        raise ShreddingError(f"{os.fspath(source)}: cannot read the Parquet footer ({exc})") from None


def variant_footer_stats(
    source: str | os.PathLike[str] | pq.FileMetaData,
    columns: Sequence[str | Sequence[str]] | None = None,
    string_prefix_length: int = DEFAULT_STRING_PREFIX_LENGTH,
) -> dict[ColumnPath, VariantColumnStats]:
    """Delta ``nullCount``/``minValues``/``maxValues`` of each Variant column, from the footer.

    ``columns`` (dotted names or tuples) default to every Variant column in the file.
    """
    meta = _metadata_of(source)
    schema = meta.schema.to_arrow_schema()
    leaves = _leaf_paths(schema)
    if len(leaves) != meta.num_columns:
        raise ShreddingError(f"footer has {meta.num_columns} leaf columns but its schema gives {len(leaves)}")
    for i, path in enumerate(leaves):
        if ".".join(path) != meta.schema.column(i).path:
            raise ShreddingError(f"footer column {i} is {meta.schema.column(i).path!r}, expected {'.'.join(path)!r}")
    index = {p: i for i, p in enumerate(leaves)}
    wanted = (
        [tuple(c.split(".")) if isinstance(c, str) else tuple(c) for c in columns]
        if columns is not None
        else find_variant_columns(schema)
    )
    types = {f.name: f.type for f in schema}
    out: dict[ColumnPath, VariantColumnStats] = {}
    for col in wanted:
        t = _type_at(types, col)
        if t is None or not is_variant_struct(t):
            raise ShreddingError(f"{'.'.join(col)!r} is not a Variant column in this file")
        out[col] = _column_stats(meta, index, col, t, string_prefix_length)
    return out


def _type_at(types: dict[str, pa.DataType], path: ColumnPath) -> pa.DataType | None:
    t = types.get(path[0])
    for name in path[1:]:
        if t is None or not pa.types.is_struct(t) or t.get_field_index(name) < 0:
            return None
        t = t.field(name).type
    return t


def _column_stats(
    meta: pq.FileMetaData, index: dict[ColumnPath, int], col: ColumnPath, t: pa.StructType, prefix_length: int
) -> VariantColumnStats:
    null_count = _null_count(meta, index[col + ("metadata",)])
    if t.get_field_index("typed_value") < 0:
        return VariantColumnStats(col, null_count, None, None)
    mins: list[tuple[str, bytes]] = []
    maxs: list[tuple[str, bytes]] = []
    for segments, typed_path in _object_leaves(t.field("typed_value").type, (), col + ("typed_value",)):
        bounds = _leaf_bounds(meta, index, typed_path, prefix_length)
        if bounds is None:
            continue
        key = VariantPath(segments).normalized
        lo, hi = bounds
        mins.append((key, lo))
        if hi is not None:
            maxs.append((key, hi))
    return VariantColumnStats(col, null_count, _stat_object(mins), _stat_object(maxs))


def _null_count(meta: pq.FileMetaData, column: int) -> int | None:
    total = 0
    for g in range(meta.num_row_groups):
        st = meta.row_group(g).column(column).statistics
        if st is None or not st.has_null_count:
            return None
        total += st.null_count
    return total


def _leaf_bounds(
    meta: pq.FileMetaData, index: dict[ColumnPath, int], typed_path: ColumnPath, prefix_length: int
) -> tuple[bytes, bytes | None] | None:
    """Encoded (min, max) of one typed leaf over all row groups, or None if not allowed."""
    typed_col = index.get(typed_path)
    value_col = index.get(typed_path[:-1] + ("value",))
    if typed_col is None:
        return None
    kind: str | None = None
    physical: str | None = None
    lo: Any = None
    hi: Any = None
    scale = 0
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        if value_col is not None:
            vst = rg.column(value_col).statistics
            if vst is None or not vst.has_null_count or vst.null_count != rg.column(value_col).num_values:
                return None  # some value at this path is not of the typed column's type
        tcol = rg.column(typed_col)
        tst = tcol.statistics
        if tst is None:
            return None
        k = _kind(tst)
        if k is None or (kind is not None and (k != kind or tcol.physical_type != physical)):
            return None
        kind, physical = k, tcol.physical_type
        if kind.startswith("decimal"):
            scale = json.loads(tst.logical_type.to_json())["scale"]
        if not tst.has_min_max:
            continue  # every value missing in this row group
        try:
            mn, mx = _physical_value(tst.min_raw, kind), _physical_value(tst.max_raw, kind)
        except UnicodeDecodeError:
            return None
        lo = mn if lo is None or mn < lo else lo
        hi = mx if hi is None or mx > hi else hi
    if kind is None or lo is None:
        return None
    if kind == "string":
        lo, hi = string_bounds(lo, hi, prefix_length)
        return _encode(kind, lo, 0), (None if hi is None else _encode(kind, hi, 0))
    return _encode(kind, lo, scale), _encode(kind, hi, scale)


def _stat_object(entries: list[tuple[str, bytes]]) -> Variant | None:
    if not entries:
        return None
    meta = MetadataBuilder()
    fields = [(key, meta.add(key), value) for key, value in entries]
    return Variant(meta.build(), encode_object(fields))


def delta_stats(stats: dict[ColumnPath, VariantColumnStats]) -> dict[str, dict[str, Any]]:
    """Nested ``{"nullCount": ..., "minValues": ..., "maxValues": ...}`` fragments for a Delta
    ``add`` action's stats JSON, Z85 strings in place of the Variants."""
    out: dict[str, dict[str, Any]] = {"nullCount": {}, "minValues": {}, "maxValues": {}}
    for col, st in stats.items():
        for key, value in (("nullCount", st.null_count), ("minValues", st.min_z85), ("maxValues", st.max_z85)):
            if value is not None:
                _set_nested(out[key], col, value)
    return out


def _set_nested(target: dict[str, Any], path: ColumnPath, value: Any) -> None:
    for name in path[:-1]:
        target = target.setdefault(name, {})
    target[path[-1]] = value
