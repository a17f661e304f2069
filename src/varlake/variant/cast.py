"""Spark 4.3's casts from Variant values to SQL types: the engine behind ``variant_get``.

Spark casts a Variant scalar by wrapping it in a typed literal (int8..int64 become BIGINT,
decimals lose trailing zeros) and running its ``Cast`` in TRY mode; a NULL result is an
invalid cast. So every rule here is one of Spark's ANSI cast rules, taken from
``varlake.semantics`` (string grammars, Java number text, zones, calendar) and checked cell
by cell against Spark in ``tests/variant/test_spark_oracle_functions.py``: fractions
truncate towards zero into integers, decimals round half-up, overflow fails.

Everything works on integers (epoch days, epoch microseconds, unscaled decimals) so that
values outside Python's ``datetime`` range still convert; only the final Python value
(``date``/``datetime``) is limited to years 1-9999.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import struct
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from varlake.errors import InvalidTypeStringError, VariantCastError, VariantError
from varlake.semantics.calendar import (
    EPOCH_ORDINAL,
    INT64_MAX,
    INT64_MIN,
    MICROS_PER_DAY,
    MICROS_PER_SECOND,
    micros_of_datetime,
)
from varlake.semantics.datetime_text import (
    format_date,
    format_timestamp,
    string_to_date,
    string_to_time,
    string_to_timestamp,
    string_to_timestamp_ntz,
)
from varlake.semantics.numbers import (
    INTEGRAL_RANGES,
    decimal_text,
    decimal_to_integral,
    float32_of_fraction,
    fractional_to_integral,
    java_double,
    java_float,
    to_float32,
)
from varlake.semantics.string_casts import decimal_fit, parse_decimal, parse_double, parse_integer, string_to_boolean
from varlake.semantics.types import SparkType, walk_types
from varlake.semantics.types import parse_type as parse_spark_type
from varlake.semantics.zones import instant_to_local, local_to_instant
from varlake.variant import decoder as dec
from varlake.variant.constants import int_size
from varlake.variant.encoder import MetadataBuilder, encode_array
from varlake.variant.json_render import to_json
from varlake.variant.value import Variant

# --- target types ------------------------------------------------------------------------------


class TypeParseError(InvalidTypeStringError, VariantError):
    """A Spark type string does not parse or names a type Variant cannot be cast to."""


@functools.lru_cache(maxsize=1024)
def parse_type(text: str) -> SparkType:
    """A ``variant_get`` target type (``'int'``, ``'decimal(10,2)'``, ``'array<struct<a: int>>'``):
    Spark's type grammar, minus what a Variant cannot be cast to (map keys other than STRING,
    CHAR/VARCHAR, TIME other than TIME(6))."""
    try:
        parsed = parse_spark_type(text)
    except InvalidTypeStringError as exc:
        raise TypeParseError(f"cannot use type {text!r} with variant_get: {exc}") from None
    for t in walk_types(parsed):
        why = None
        if t.name == "map" and t.key is not None and t.key.name != "string":
            why = f"map keys must be STRING to cast from VARIANT, not {t.key.sql}"
        elif t.name in ("char", "varchar"):
            why = "CHAR/VARCHAR cannot be the target of a Variant cast; use STRING"
        elif t.name == "time" and t.precision != 6:
            why = "only TIME(6) is supported"
        if why is not None:
            raise TypeParseError(f"cannot use type {text!r} with variant_get: {why}")
    return parsed


# --- Python values -------------------------------------------------------------------------------

_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_NTZ = _dt.datetime(1970, 1, 1)


class OutOfPythonRange(VariantError):
    """A Spark date/timestamp outside the years 1-9999 that Python's datetime can hold."""


def date_value(days: int) -> _dt.date:
    ordinal = days + EPOCH_ORDINAL
    if not 1 <= ordinal <= 3_652_059:
        raise OutOfPythonRange(f"date {format_date(days)} is outside the years 1-9999 Python can represent")
    return _dt.date.fromordinal(ordinal)


def timestamp_value(micros: int, aware: bool) -> _dt.datetime:
    try:
        return (_EPOCH_UTC if aware else _EPOCH_NTZ) + _dt.timedelta(microseconds=micros)
    except OverflowError:
        raise OutOfPythonRange(
            f"timestamp {format_timestamp(micros)} is outside the years 1-9999 Python can represent"
        ) from None


def datetime_micros(value: _dt.datetime, zone: _dt.tzinfo, instant: bool) -> int:
    """Epoch micros of a Python datetime as TIMESTAMP (``instant``; a naive value is wall-clock
    time in ``zone``) or as TIMESTAMP_NTZ (must be naive)."""
    if value.tzinfo is not None:
        if not instant:
            raise VariantError(f"TIMESTAMP_NTZ needs a naive datetime, got {value.isoformat()}")
        return micros_of_datetime(value)
    local = micros_of_datetime(value)
    return local_to_instant(local, zone) if instant else local


# --- the cast ------------------------------------------------------------------------------------------

_I8 = struct.Struct("<b")
_I16 = struct.Struct("<h")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")
_EMPTY_METADATA = b"\x01\x00\x00"

# Source kinds: the Spark literal type a Variant scalar becomes before the cast.
K_BOOLEAN, K_LONG, K_STRING, K_DOUBLE, K_DECIMAL, K_DATE, K_TIMESTAMP, K_NTZ, K_FLOAT, K_BINARY = range(10)
K_UUID, K_NULL, K_UNSUPPORTED = 10, 11, 12


class _Failed:
    """Marks a cast Spark rejects (TRY mode would give NULL)."""

    __slots__ = ()


FAIL = _Failed()


@dataclass(frozen=True, slots=True)
class CastContext:
    """How to cast: fail (``variant_get``) or give None (``try_variant_get``), and the session zone."""

    strict: bool
    zone: _dt.tzinfo
    zone_name: str  # as given: ``to_json`` of nested values resolves it again


def stripped_decimal(unscaled: int, scale: int) -> tuple[int, int]:
    """``Variant.getDecimal``: trailing zeros removed, but never a negative scale."""
    while scale > 0 and unscaled % 10 == 0:
        unscaled //= 10
        scale -= 1
    if unscaled == 0:
        scale = 0
    return unscaled, scale


def source_of(value: bytes, pos: int) -> tuple[int, object]:
    """``(kind, python value)`` of the scalar at ``pos`` as Spark's cast sees it."""
    header = value[pos]
    basic = header & 0x03
    if basic == 1:
        n = header >> 2
        end = pos + 1 + n
        if end > len(value):
            raise IndexError("short string runs past the end")
        return K_STRING, value[pos + 1 : end].decode("utf-8")
    t = header >> 2
    if t == 0:
        return K_NULL, None
    if t == 1 or t == 2:
        return K_BOOLEAN, t == 1
    if t == 3:
        return K_LONG, _I8.unpack_from(value, pos + 1)[0]
    if t == 4:
        return K_LONG, _I16.unpack_from(value, pos + 1)[0]
    if t == 5:
        return K_LONG, _I32.unpack_from(value, pos + 1)[0]
    if t == 6:
        return K_LONG, _I64.unpack_from(value, pos + 1)[0]
    if t == 7:
        return K_DOUBLE, _F64.unpack_from(value, pos + 1)[0]
    if t == 16:
        n = _U32.unpack_from(value, pos + 1)[0]
        end = pos + 5 + n
        if end > len(value):
            raise IndexError("string runs past the end")
        return K_STRING, value[pos + 5 : end].decode("utf-8")
    if 8 <= t <= 10:
        width = 4 << (t - 8) if t < 10 else 16
        scale = value[pos + 1]
        end = pos + 2 + width
        if scale > 38 or end > len(value):
            raise dec.MalformedVariantError(f"invalid decimal (scale {scale})", pos)
        return K_DECIMAL, stripped_decimal(int.from_bytes(value[pos + 2 : end], "little", signed=True), scale)
    if t == 11:
        return K_DATE, _I32.unpack_from(value, pos + 1)[0]
    if t == 12:
        return K_TIMESTAMP, _I64.unpack_from(value, pos + 1)[0]
    if t == 13:
        return K_NTZ, _I64.unpack_from(value, pos + 1)[0]
    if t == 14:
        return K_FLOAT, _F32.unpack_from(value, pos + 1)[0]
    if t == 15:
        n = _U32.unpack_from(value, pos + 1)[0]
        end = pos + 5 + n
        if end > len(value):
            raise IndexError("binary runs past the end")
        return K_BINARY, bytes(value[pos + 5 : end])
    if t == 20:
        return K_UUID, dec.primitive_to_python(value, pos)
    if t in (17, 18, 19):
        return K_UNSUPPORTED, t
    raise dec.MalformedVariantError(f"unknown primitive type id {t}", pos)


def _to_boolean(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_BOOLEAN:
        return v
    if kind in (K_LONG, K_DOUBLE, K_FLOAT):
        return v != 0
    if kind == K_DECIMAL:
        return v[0] != 0  # type: ignore[index]
    if kind == K_STRING:
        b = string_to_boolean(v)  # type: ignore[arg-type]
        return FAIL if b is None else b
    return FAIL


def _to_integral(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    lo, hi = INTEGRAL_RANGES[t.name]
    if kind == K_LONG:
        n = v
    elif kind == K_BOOLEAN:
        n = 1 if v else 0
    elif kind in (K_DOUBLE, K_FLOAT):
        r = fractional_to_integral(v, lo, hi)  # type: ignore[arg-type]
        return FAIL if r is None else r
    elif kind == K_DECIMAL:
        r = decimal_to_integral(*v, lo, hi)  # type: ignore[misc]
        return FAIL if r is None else r
    elif kind == K_STRING:
        n = parse_integer(v)  # type: ignore[arg-type]
        if n is None:
            return FAIL
    elif kind == K_TIMESTAMP:
        n = v // MICROS_PER_SECOND  # type: ignore[operator]
    else:
        return FAIL
    return n if lo <= n <= hi else FAIL  # type: ignore[operator]


def _to_double(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_DOUBLE or kind == K_FLOAT:
        return v
    if kind == K_LONG:
        return float(v)  # type: ignore[arg-type]
    if kind == K_DECIMAL:
        unscaled, scale = v  # type: ignore[misc]
        return unscaled / 10**scale
    if kind == K_BOOLEAN:
        return 1.0 if v else 0.0
    if kind == K_STRING:
        d = parse_double(v, False)  # type: ignore[arg-type]
        return FAIL if d is None else d
    if kind == K_TIMESTAMP:
        return float(v) / 1e6  # type: ignore[arg-type]
    return FAIL


def _to_float(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_FLOAT:
        return v
    if kind == K_DOUBLE:
        return to_float32(v)  # type: ignore[arg-type]
    if kind == K_LONG:
        return float(v) if -(1 << 24) <= v <= (1 << 24) else float32_of_fraction(Fraction(v))  # type: ignore[operator, arg-type]
    if kind == K_DECIMAL:
        unscaled, scale = v  # type: ignore[misc]
        return float32_of_fraction(Fraction(unscaled, 10**scale))
    if kind == K_BOOLEAN:
        return 1.0 if v else 0.0
    if kind == K_STRING:
        d = parse_double(v, True)  # type: ignore[arg-type]
        return FAIL if d is None else d
    if kind == K_TIMESTAMP:
        return to_float32(float(v) / 1e6)  # type: ignore[arg-type]
    return FAIL


def _to_decimal(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_DECIMAL:
        unscaled, scale = v  # type: ignore[misc]
        d = Decimal((0 if unscaled >= 0 else 1, tuple(map(int, str(abs(unscaled)))), -scale))
    elif kind == K_LONG:
        d = Decimal(v)  # type: ignore[arg-type]
    elif kind == K_BOOLEAN:
        d = Decimal(1 if v else 0)
    elif kind in (K_DOUBLE, K_FLOAT):
        if v != v or v in (math.inf, -math.inf):
            return FAIL
        d = Decimal(java_double(v))  # type: ignore[arg-type]
    elif kind == K_STRING:
        parsed = parse_decimal(v)  # type: ignore[arg-type]
        if parsed is None:
            return FAIL
        d = parsed
    elif kind == K_TIMESTAMP:
        d = Decimal(java_double(float(v) / 1e6))  # type: ignore[arg-type]
    else:
        return FAIL
    fitted = decimal_fit(d, t.precision, t.scale)
    return FAIL if fitted is None else fitted


def _to_string(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_STRING:
        return v
    if kind == K_LONG:
        return str(v)
    if kind == K_BOOLEAN:
        return "true" if v else "false"
    if kind == K_DOUBLE:
        return java_double(v)  # type: ignore[arg-type]
    if kind == K_FLOAT:
        return java_float(v)  # type: ignore[arg-type]
    if kind == K_DECIMAL:
        return decimal_text(*v)  # type: ignore[misc]
    if kind == K_DATE:
        return format_date(v)  # type: ignore[arg-type]
    if kind == K_TIMESTAMP:
        return format_timestamp(instant_to_local(v, ctx.zone))  # type: ignore[arg-type]
    if kind == K_NTZ:
        return format_timestamp(v)  # type: ignore[arg-type]
    if kind == K_BINARY:
        return v.decode("utf-8", "replace")  # type: ignore[union-attr]
    if kind == K_UUID:
        return str(v)
    return FAIL


def _to_binary(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_BINARY:
        return v
    if kind == K_STRING:
        return v.encode("utf-8")  # type: ignore[union-attr]
    return FAIL


def _to_date(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_DATE:
        days = v
    elif kind == K_STRING:
        days = string_to_date(v)  # type: ignore[arg-type]
        if days is None:
            return FAIL
    elif kind == K_TIMESTAMP:
        days = instant_to_local(v, ctx.zone) // MICROS_PER_DAY  # type: ignore[arg-type]
    elif kind == K_NTZ:
        days = v // MICROS_PER_DAY  # type: ignore[operator]
    else:
        return FAIL
    return date_value(days)  # type: ignore[arg-type]


def _to_timestamp(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_TIMESTAMP:
        micros = v
    elif kind == K_STRING:
        micros = string_to_timestamp(v, ctx.zone)  # type: ignore[arg-type]
        if micros is None:
            return FAIL
    elif kind == K_LONG:
        micros = v * MICROS_PER_SECOND  # type: ignore[operator]
    elif kind == K_DECIMAL:
        unscaled, scale = v  # type: ignore[misc]
        micros = abs(unscaled) * MICROS_PER_SECOND // 10**scale
        if unscaled < 0:
            micros = -micros
    elif kind in (K_DOUBLE, K_FLOAT):
        micros = fractional_to_integral(v * 1e6, INT64_MIN, INT64_MAX)  # type: ignore[operator]
        if micros is None:
            return FAIL
    elif kind == K_DATE:
        micros = local_to_instant(v * MICROS_PER_DAY, ctx.zone)  # type: ignore[operator]
    elif kind == K_NTZ:
        micros = local_to_instant(v, ctx.zone)  # type: ignore[arg-type]
    else:
        return FAIL
    if not INT64_MIN <= micros <= INT64_MAX:  # type: ignore[operator]
        return FAIL
    return timestamp_value(micros, True)  # type: ignore[arg-type]


def _to_timestamp_ntz(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_NTZ:
        micros = v
    elif kind == K_STRING:
        micros = string_to_timestamp_ntz(v)  # type: ignore[arg-type]
        if micros is None:
            return FAIL
    elif kind == K_DATE:
        micros = v * MICROS_PER_DAY  # type: ignore[operator]
    elif kind == K_TIMESTAMP:
        micros = instant_to_local(v, ctx.zone)  # type: ignore[arg-type]
    else:
        return FAIL
    return timestamp_value(micros, False)  # type: ignore[arg-type]


def _to_time(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_STRING:
        micros = string_to_time(v)  # type: ignore[arg-type]
        if micros is None:
            return FAIL
    elif kind == K_TIMESTAMP:
        micros = instant_to_local(v, ctx.zone) % MICROS_PER_DAY  # type: ignore[arg-type]
    elif kind == K_NTZ:
        micros = v % MICROS_PER_DAY  # type: ignore[operator]
    else:
        return FAIL
    seconds, frac = divmod(micros, MICROS_PER_SECOND)
    return _dt.time(seconds // 3600, seconds // 60 % 60, seconds % 60, frac)


_SCALAR_CASTS = {
    "boolean": _to_boolean,
    "tinyint": _to_integral,
    "smallint": _to_integral,
    "int": _to_integral,
    "bigint": _to_integral,
    "float": _to_float,
    "double": _to_double,
    "decimal": _to_decimal,
    "string": _to_string,
    "binary": _to_binary,
    "date": _to_date,
    "timestamp": _to_timestamp,
    "timestamp_ntz": _to_timestamp_ntz,
    "time": _to_time,
}


def copy_value(meta: dec.MetadataView, value: bytes, pos: int, keys: MetadataBuilder) -> bytes:
    """Re-encode the value at ``pos`` against the dictionary ``keys`` (Spark's ``appendVariant``:
    fields in id order, each key added before its value, primitives copied byte for byte)."""
    basic = value[pos] & 0x03
    if basic == 2:
        n, id_size, osz, ids, offs, data = dec.object_layout(value, pos)
        names = meta.keys()
        new_ids = []
        parts = []
        for i in range(n):
            fid = dec.read_uint(value, ids + i * id_size, id_size)
            if fid >= len(names):
                raise dec.MalformedVariantError(f"field id {fid} outside a dictionary of {len(names)}", ids + i * id_size)
            new_ids.append(keys.add(names[fid]))
            parts.append(copy_value(meta, value, data + dec.read_uint(value, offs + i * osz, osz), keys))
        return _object_bytes(new_ids, parts)
    if basic == 3:
        return encode_array([copy_value(meta, value, p, keys) for p in dec.array_positions(value, pos)])
    size = dec.value_size(value, pos)
    if pos + size > len(value):
        raise dec.MalformedVariantError("value runs past the end", pos)
    return value[pos : pos + size]


def _object_bytes(ids: list[int], parts: list[bytes]) -> bytes:
    """An object whose fields are already in key order, values laid out in that order."""
    n = len(ids)
    body = b"".join(parts)
    osz = int_size(len(body))
    isz = int_size(max(ids)) if ids else 1
    large = n > 0xFF
    out = bytearray((0x02 | ((osz - 1) << 2) | ((isz - 1) << 4) | (0x40 if large else 0),))
    out += n.to_bytes(4 if large else 1, "little")
    for fid in ids:
        out += fid.to_bytes(isz, "little")
    offset = 0
    for part in parts:
        out += offset.to_bytes(osz, "little")
        offset += len(part)
    out += offset.to_bytes(osz, "little")
    out += body
    return bytes(out)


def extract_variant(meta: dec.MetadataView, value: bytes, pos: int) -> tuple[bytes, bytes]:
    """``(metadata, value)`` of a self-contained copy of the value at ``pos`` with only its own keys."""
    if value[pos] & 0x03 < 2:
        size = dec.value_size(value, pos)
        if pos + size > len(value):
            raise dec.MalformedVariantError("value runs past the end", pos)
        return _EMPTY_METADATA, value[pos : pos + size]
    keys = MetadataBuilder()
    body = copy_value(meta, value, pos, keys)
    return keys.build(), body


def invalid_cast_message(meta: dec.MetadataView, value: bytes, pos: int, t: SparkType, zone_name: str) -> str:
    """Spark's INVALID_VARIANT_CAST text, naming the value (as JSON) and the target type."""
    return (
        f"[INVALID_VARIANT_CAST] The variant value `{to_json(meta, value, pos, zone_name)}` "
        f'cannot be cast into `"{t.sql}"`. Please use `try_variant_get` instead.'
    )


def cast_variant(meta: dec.MetadataView, value: bytes, pos: int, t: SparkType, ctx: CastContext) -> object:
    """Cast the value at ``pos`` to ``t`` (Spark's ``VariantGet.cast``).

    Returns the Python value, None for a Variant null, or for a failed cast None
    (``ctx.strict`` False) / ``VariantCastError`` (``ctx.strict`` True). Inside arrays, maps
    and structs a failed element becomes None in TRY mode, as in Spark.
    """
    name = t.name
    if name == "variant":
        metadata, body = extract_variant(meta, value, pos)
        return Variant(metadata, body)
    header = value[pos]
    basic = header & 0x03
    if basic >= 2:
        if name == "string":
            return to_json(meta, value, pos, ctx.zone_name)
        if name == "array" and basic == 3:
            elem = t.element
            return [cast_variant(meta, value, p, elem, ctx) for p in dec.array_positions(value, pos)]  # type: ignore[arg-type]
        if name == "map" and basic == 2:
            elem = t.element
            return {k: cast_variant(meta, value, p, elem, ctx) for k, p in dec.object_entries(meta, value, pos)}  # type: ignore[arg-type]
        if name == "struct" and basic == 2:
            out: dict[str, object] = {f.name: None for f in t.fields}
            types = {f.name: f.type for f in t.fields}
            for k, p in dec.object_entries(meta, value, pos):
                ft = types.get(k)
                if ft is not None:
                    out[k] = cast_variant(meta, value, p, ft, ctx)
            return out
        return _failed(meta, value, pos, t, ctx)
    if header == 0:
        return None
    kind, v = source_of(value, pos)
    if kind == K_UNSUPPORTED:
        raise VariantError(
            f"Variant primitive type {v} (TIME or nanosecond timestamp) has no Spark 4.3 SQL type to cast from"
        )
    if kind == K_UUID and name != "string":
        return _failed(meta, value, pos, t, ctx)
    fn = _SCALAR_CASTS.get(name)
    result = fn(kind, v, t, ctx) if fn is not None else FAIL
    if result is FAIL:
        return _failed(meta, value, pos, t, ctx)
    return result


def _failed(meta: dec.MetadataView, value: bytes, pos: int, t: SparkType, ctx: CastContext) -> None:
    if ctx.strict:
        raise VariantCastError(invalid_cast_message(meta, value, pos, t, ctx.zone_name))
    return None
