"""Spark 4.3's Variant SQL functions in Python, with Spark's exact results.

``variant_get``/``try_variant_get`` navigate by binary search on the raw bytes (only the
bytes on the path are touched) and cast with ``varlake.variant.cast``; paths and types are
parsed once and cached. ``variant_explode``, ``is_variant_null``, ``to_variant_object`` and
``cast_to_variant`` complete the set; ``schema_of_variant`` lives in ``schema``.

The functions take and return Python values: SQL NULL is None, a Variant null is a
``Variant`` (``is_variant_null`` tells them apart), timestamps are UTC-aware datetimes,
TIMESTAMP_NTZ naive ones, structs and maps dicts.
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from varlake.errors import InvalidPathError, UnsupportedValueError, VariantCastError
from varlake.variant import decoder as dec
from varlake.semantics.numbers import to_float32
from varlake.semantics.string_casts import decimal_fit
from varlake.semantics.types import SparkType
from varlake.variant.cast import CastContext, cast_variant, copy_value, datetime_micros, parse_type
from varlake.variant.json_render import session_zone
from varlake.variant.encoder import (
    FALSE,
    NULL,
    TRUE,
    MetadataBuilder,
    check_size,
    encode_array,
    encode_binary,
    encode_date,
    encode_decimal,
    encode_double,
    encode_float,
    encode_int,
    encode_object,
    encode_scalar,
    encode_string,
    encode_timestamp_micros,
)
from varlake.variant.path import VariantPath
from varlake.variant.value import Variant

__all__ = [
    "cast_to_variant",
    "is_variant_null",
    "parse_variant_path",
    "to_variant_object",
    "try_variant_get",
    "variant_explode",
    "variant_explode_outer",
    "variant_get",
]

_Compiled = tuple[bytes | int, ...]


# --- paths ---------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def parse_variant_path(text: str) -> VariantPath:
    """Parse a ``variant_get`` path with Spark's exact grammar (see ``VariantPath.parse``)."""
    return VariantPath.parse(text)


def _encode_segments(path: VariantPath) -> _Compiled:
    """Object keys pre-encoded to UTF-8, as the binary search compares bytes."""
    return tuple(s.encode("utf-8") if isinstance(s, str) else s for s in path.segments)


@functools.lru_cache(maxsize=4096)
def _compile_text(path: str) -> _Compiled:
    return _encode_segments(parse_variant_path(path))


@functools.lru_cache(maxsize=4096)
def _compile_path(path: VariantPath) -> _Compiled:
    return _encode_segments(path)


def _locate(metadata: bytes, value: bytes, segments: _Compiled) -> int | None:
    """Position of the value at ``segments``, or None when a step is missing or mistyped."""
    pos = 0
    meta = None
    for seg in segments:
        basic = value[pos] & 0x03
        if seg.__class__ is bytes:
            if basic != 2:
                return None
            if meta is None:
                meta = dec.metadata_view(metadata)
            found = dec.object_field(meta, value, pos, seg)  # type: ignore[arg-type]
        else:
            if basic != 3:
                return None
            found = dec.array_element(value, pos, seg)  # type: ignore[arg-type]
        if found is None:
            return None
        pos = found
    return pos


# --- variant_get ------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _context(strict: bool, zone: str) -> CastContext:
    return CastContext(strict, session_zone(zone), zone)


def _target(type_: str | SparkType) -> SparkType:
    return type_ if isinstance(type_, SparkType) else parse_type(type_)


def _get(v: Variant | None, path: str | VariantPath | None, type_: str | SparkType, zone: str, strict: bool) -> Any:
    if path is None:
        segments = None
    elif path.__class__ is str:
        segments = _compile_text(path)  # type: ignore[arg-type]
    elif isinstance(path, VariantPath):
        segments = _compile_path(path)
    else:
        raise InvalidPathError(f"variant_get path must be a str or VariantPath, got {type(path).__name__}")
    target = type_ if type_.__class__ is SparkType else parse_type(type_)  # type: ignore[arg-type]
    ctx = _context(strict, zone)
    if v is None or segments is None:
        return None
    if not isinstance(v, Variant):
        raise UnsupportedValueError(f"variant_get needs a Variant, got {type(v).__name__}")
    return _navigate_and_cast(v, segments, target, ctx, path)


@dec.guarded
def _navigate_and_cast(v: Variant, segments: _Compiled, target: SparkType, ctx: CastContext, path: Any) -> Any:
    metadata = v.metadata
    value = v.value
    pos = _locate(metadata, value, segments) if segments else 0
    if pos is None:
        return None
    try:
        return cast_variant(dec.metadata_view(metadata), value, pos, target, ctx)
    except VariantCastError as exc:
        where = path if isinstance(path, str) else path.normalized
        raise VariantCastError(f"{exc} (variant_get path {where})") from None


def variant_get(
    v: Variant | None, path: str | VariantPath | None, type: str | SparkType = "variant", *, zone: str = "UTC"
) -> Any:
    """Spark's ``variant_get(v, path, type)``: the value at ``path`` cast to ``type``.

    None when ``v`` or ``path`` is None, the path is missing, or the value is a Variant
    null (except for ``type='variant'``, which returns the Variant null itself). A value
    Spark cannot cast raises ``VariantCastError`` (INVALID_VARIANT_CAST); a bad path raises
    ``InvalidPathError``. ``zone`` is the session time zone of timestamp conversions.
    """
    return _get(v, path, type, zone, True)


def try_variant_get(
    v: Variant | None, path: str | VariantPath | None, type: str | SparkType = "variant", *, zone: str = "UTC"
) -> Any:
    """Spark's ``try_variant_get``: like ``variant_get`` but a failed cast gives None
    (inside arrays, maps and structs only the failing element becomes None)."""
    return _get(v, path, type, zone, False)


def is_variant_null(v: Variant | None) -> bool:
    """True only for a Variant null; SQL NULL (None) and every other value give False."""
    if v is None:
        return False
    return v.value[0] == 0


# --- variant_explode ----------------------------------------------------------------------------------


@dec.guarded
def variant_explode(v: Variant | None) -> list[tuple[int, str | None, Variant]]:
    """Spark's ``variant_explode``: ``(pos, key, value)`` per object field (in key order) or
    array element (key None); any other input, None included, gives no rows."""
    if v is None:
        return []
    value = v.value
    basic = value[0] & 0x03
    metadata = v.metadata
    if basic == 2:
        meta = dec.metadata_view(metadata)
        return [(i, k, _sub(metadata, value, p)) for i, (k, p) in enumerate(dec.object_entries(meta, value, 0))]
    if basic == 3:
        return [(i, None, _sub(metadata, value, p)) for i, p in enumerate(dec.array_positions(value, 0))]
    return []


def variant_explode_outer(v: Variant | None) -> list[tuple[int | None, str | None, Variant | None]]:
    """Spark's ``variant_explode_outer``: as ``variant_explode`` but one all-None row instead of none."""
    rows: list[tuple[int | None, str | None, Variant | None]] = list(variant_explode(v))
    return rows or [(None, None, None)]


def _sub(metadata: bytes, value: bytes, pos: int) -> Variant:
    """The value at ``pos`` sharing the parent's metadata (as Spark's explode returns it)."""
    size = dec.value_size(value, pos)
    if pos + size > len(value):
        raise dec.MalformedVariantError("nested value runs past the end", pos)
    return Variant(metadata, value[pos : pos + size])


# --- building Variants ---------------------------------------------------------------------------------


def to_variant_object(obj: Mapping[str, Any] | Sequence[Any] | None) -> Variant | None:
    """Spark's ``to_variant_object`` for Python data: a dict becomes an object, a list/tuple
    an array, nested Variants are embedded (their keys merged into one dictionary).

    Scalars map as Spark maps the SQL types PySpark infers for them: int -> the narrowest
    int8..int64, float -> double, Decimal -> decimal (its own scale), str, bytes, bool,
    date, aware datetime -> timestamp, naive datetime -> timestamp_ntz, None -> Variant null.
    Only a dict or list/tuple may be at the root (Spark accepts only struct/map/array).
    """
    if obj is None:
        return None
    if not isinstance(obj, (Mapping, list, tuple)):
        raise UnsupportedValueError(
            f"to_variant_object needs a dict, list or tuple at the root, got {type(obj).__name__}"
        )
    keys = MetadataBuilder()
    body = check_size(_deep(_encode_python, obj, keys, 0))
    return Variant(keys.build(), body)


def _encode_python(obj: Any, keys: MetadataBuilder, depth: int) -> bytes:
    if isinstance(obj, Variant):
        return copy_value(dec.metadata_view(obj.metadata), obj.value, 0, keys)
    if depth > 10_000:
        raise UnsupportedValueError("value nested more than 10000 levels deep")
    if isinstance(obj, Mapping):
        fields = []
        for k, item in obj.items():
            if not isinstance(k, str):
                raise UnsupportedValueError(f"object keys must be str, got {type(k).__name__} {k!r}")
            fields.append((k, keys.add(k), _encode_python(item, keys, depth + 1)))
        return encode_object(fields)
    if isinstance(obj, (list, tuple)):
        return encode_array([_encode_python(item, keys, depth + 1) for item in obj])
    return encode_scalar(obj)


def cast_to_variant(value: Any, type: str | SparkType, *, zone: str = "UTC") -> Variant | None:
    """Spark's ``cast(value AS VARIANT)`` for a Python value of the given Spark SQL type.

    Integers of every width take the narrowest int8..int64 (Spark's ``appendLong``), FLOAT
    becomes a Variant float, DECIMAL(p,s) a decimal with scale ``s`` in the narrowest of
    decimal4/8/16 for its digits, DATE/TIMESTAMP/TIMESTAMP_NTZ/BINARY/STRING/BOOLEAN their
    Variant types; ARRAY, MAP<STRING,_> and STRUCT build arrays and objects. A naive
    datetime for TIMESTAMP is read as wall-clock time in ``zone``. None gives None (SQL NULL);
    a value that does not fit the type raises ``UnsupportedValueError``.
    """
    if value is None:
        return None
    target = _target(type)
    keys = MetadataBuilder()
    body = check_size(_deep(_encode_typed, value, target, keys, session_zone(zone)))
    return Variant(keys.build(), body)


def _deep(fn: Any, *args: Any) -> bytes:
    """Run a recursive encoder with room for deep values; too deep is a clear error."""
    try:
        return dec.with_deep_stack(fn, *args)
    except RecursionError:
        raise UnsupportedValueError("value nested too deeply to encode as a Variant") from None


def _encode_typed(value: Any, t: SparkType, keys: MetadataBuilder, zone: _dt.tzinfo) -> bytes:
    if value is None:
        return NULL
    name = t.name
    if name == "variant":
        if not isinstance(value, Variant):
            raise UnsupportedValueError(f"VARIANT needs a Variant, got {type(value).__name__}")
        return copy_value(dec.metadata_view(value.metadata), value.value, 0, keys)
    if name == "boolean":
        if not isinstance(value, bool):
            raise _mismatch(value, t)
        return TRUE if value else FALSE
    if name in ("tinyint", "smallint", "int", "bigint"):
        bits = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise _mismatch(value, t)
        if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
            raise UnsupportedValueError(f"{value} does not fit {t.sql}")
        return encode_int(value)
    if name in ("float", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _mismatch(value, t)
        return encode_float(to_float32(float(value))) if name == "float" else encode_double(float(value))
    if name == "decimal":
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            raise _mismatch(value, t)
        fitted = decimal_fit(Decimal(value), t.precision, t.scale) if Decimal(value).is_finite() else None
        if fitted is None:
            raise UnsupportedValueError(f"{value} does not fit {t.sql}")
        return encode_decimal(fitted)
    if name == "string":
        if not isinstance(value, str):
            raise _mismatch(value, t)
        return encode_string(value)
    if name == "binary":
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise _mismatch(value, t)
        return encode_binary(bytes(value))
    if name == "date":
        if isinstance(value, _dt.datetime) or not isinstance(value, _dt.date):
            raise _mismatch(value, t)
        return encode_date(value)
    if name in ("timestamp", "timestamp_ntz"):
        if not isinstance(value, _dt.datetime):
            raise _mismatch(value, t)
        return encode_timestamp_micros(datetime_micros(value, zone, name == "timestamp"), name == "timestamp")
    if name == "array":
        if not isinstance(value, (list, tuple)):
            raise _mismatch(value, t)
        return encode_array([_encode_typed(item, t.element, keys, zone) for item in value])  # type: ignore[arg-type]
    if name in ("map", "struct"):
        if not isinstance(value, Mapping):
            raise _mismatch(value, t)
        types = {f.name: f.type for f in t.fields} if name == "struct" else None
        fields = []
        for k, item in value.items():
            if not isinstance(k, str):
                raise UnsupportedValueError(f"object keys must be str, got {type(k).__name__} {k!r}")
            ft = t.element if types is None else types.get(k)
            if ft is None:
                raise UnsupportedValueError(f"field {k!r} is not in {t.sql}")
            fields.append((k, keys.add(k), _encode_typed(item, ft, keys, zone)))
        return encode_object(fields)
    raise UnsupportedValueError(f"cannot cast a Python value to VARIANT as {t.sql}")


def _mismatch(value: Any, t: SparkType) -> UnsupportedValueError:
    return UnsupportedValueError(f"{type(value).__name__} {value!r} is not a {t.sql} value")


# --- patch functions (Spark 4.3): varlake.variant.patch and .validity; here ``value_type`` casts ----------

from varlake.variant import patch as _patch  # noqa: E402
from varlake.variant.patch import variant_delete, variant_strip_nulls  # noqa: E402
from varlake.variant.validity import is_valid_variant  # noqa: E402


def _patch_value(value: Any, value_type: str | SparkType | None) -> Any:
    """The value argument of a patch function: ``cast(value AS VARIANT)`` when a type is given."""
    if value_type is None or value is None or isinstance(value, Variant):
        return value
    return cast_to_variant(value, value_type)


def variant_set(v: Variant | None, path: str | None, value: Any, create_if_missing: bool | None = True, *,
                value_type: str | SparkType | None = None) -> Variant | None:
    """Spark's ``variant_set`` (see ``varlake.variant.patch``); ``value_type`` (e.g. ``'decimal(10,2)'``)
    converts a Python ``value`` as Spark's ``cast(value AS VARIANT)`` of that SQL type."""
    return _patch.variant_set(v, path, _patch_value(value, value_type), create_if_missing)


def try_variant_set(v: Variant | None, path: str | None, value: Any, create_if_missing: bool | None = True, *,
                    value_type: str | SparkType | None = None) -> Variant | None:
    """Spark's ``try_variant_set``: None where ``variant_set`` raises VARIANT_PATH_TYPE_MISMATCH."""
    return _patch.try_variant_set(v, path, _patch_value(value, value_type), create_if_missing)


def variant_insert(v: Variant | None, path: str | None, value: Any, *,
                   value_type: str | SparkType | None = None) -> Variant | None:
    """Spark's ``variant_insert`` (see ``varlake.variant.patch``)."""
    return _patch.variant_insert(v, path, _patch_value(value, value_type))


def try_variant_insert(v: Variant | None, path: str | None, value: Any, *,
                       value_type: str | SparkType | None = None) -> Variant | None:
    """Spark's ``try_variant_insert``: None for a type mismatch or an existing key."""
    return _patch.try_variant_insert(v, path, _patch_value(value, value_type))


def variant_array_append(v: Variant | None, path: str | None, value: Any, *,
                         value_type: str | SparkType | None = None) -> Variant | None:
    """Spark's ``variant_array_append`` (see ``varlake.variant.patch``)."""
    return _patch.variant_array_append(v, path, _patch_value(value, value_type))


def try_variant_array_append(v: Variant | None, path: str | None, value: Any, *,
                             value_type: str | SparkType | None = None) -> Variant | None:
    """Spark's ``try_variant_array_append``: None where ``variant_array_append`` raises a type mismatch."""
    return _patch.try_variant_array_append(v, path, _patch_value(value, value_type))


__all__ += [
    "is_valid_variant",
    "try_variant_array_append",
    "try_variant_insert",
    "try_variant_set",
    "variant_array_append",
    "variant_delete",
    "variant_insert",
    "variant_set",
    "variant_strip_nulls",
]
