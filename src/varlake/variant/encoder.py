"""Writing Variant bytes: one function per primitive, containers, the metadata dictionary.

Choices follow Spark 4.3's ``VariantBuilder`` so that ``parse_json`` output is
byte-identical to Spark's (confirmed by tests/test_spark_oracle_codec.py): dictionary
keys in first-seen order (unsorted flag), the narrowest metadata offset width that holds
both the key count and the string bytes, the narrowest id/offset widths in containers,
``is_large`` only past 255 elements, values in insertion order with field ids sorted by
key, NaN written with Java's canonical bits, decimals in the narrowest of decimal4/8/16
that holds both precision and scale. The one deliberate difference: keys are sorted in
code point order (= unsigned UTF-8 bytes, as the spec requires), where Spark sorts by
UTF-16 code units (they differ only for keys holding characters >= U+E000 next to
supplementary characters). ``assemble_object``/``assemble_array`` can also force wider
widths and the large header, which readers must accept.
"""

from __future__ import annotations

import datetime as _dt
import struct
import sys
import uuid
from array import array
from collections.abc import Iterable, Sequence
from decimal import Decimal
from itertools import accumulate

from varlake.errors import DuplicateKeyError, UnsupportedValueError, VariantSizeLimitError
from varlake.variant.constants import (
    MAX_DECIMAL4_PRECISION,
    MAX_DECIMAL8_PRECISION,
    MAX_DECIMAL16_PRECISION,
    MAX_SHORT_STRING,
    SIZE_LIMIT,
    PrimitiveType,
    int_size,
)

_I16 = struct.Struct("<Bh")
_I32 = struct.Struct("<Bi")
_I64 = struct.Struct("<Bq")
_F64 = struct.Struct("<Bd")
_F32 = struct.Struct("<Bf")
_U32 = struct.Struct("<BI")

NULL = b"\x00"
TRUE = b"\x04"
FALSE = b"\x08"
_INT8 = [bytes((0x0C, i & 0xFF)) for i in range(-128, 128)]
_EPOCH_DATE_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_NTZ = _dt.datetime(1970, 1, 1)


# --- metadata ----------------------------------------------------------------------------


class MetadataBuilder:
    """Collects object keys into a deduplicated dictionary, in first-seen order."""

    __slots__ = ("ids", "keys")

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self.ids: dict[str, int] = {}
        self.keys: list[str] = []
        for k in keys:
            self.add(k)

    def add(self, key: str) -> int:
        """Id of ``key``, adding it if new."""
        fid = self.ids.get(key)
        if fid is None:
            fid = self.ids[key] = len(self.keys)
            self.keys.append(key)
        return fid

    def build(self, sort: bool = False) -> bytes:
        """Encoded metadata. ``sort=True`` writes keys sorted and sets the sorted flag.

        With ``sort`` the ids change, so only use it before encoding values.
        """
        return metadata_from_keys(sorted(self.keys) if sort else self.keys, sort)


def metadata_from_keys(keys: Sequence[str], sorted_flag: bool = False) -> bytes:
    """Metadata holding ``keys`` in this order (their ids); ``sorted_flag`` sets the header bit.

    The offset width is the narrowest that holds both the key count and the string bytes,
    as Spark chooses it. Linear in the key bytes: one joined UTF-8 string and a 4-byte
    offset per key, no per-key bytes objects.
    """
    try:
        blob = "".join(keys).encode("utf-8")
    except UnicodeEncodeError:
        raise UnsupportedValueError("object key is not valid Unicode (lone surrogate)") from None
    n = len(keys)
    total = len(blob)
    osz = int_size(max(total, n))
    if max(total, n) > SIZE_LIMIT or 1 + osz * (n + 2) + total > SIZE_LIMIT:
        raise VariantSizeLimitError(f"Variant metadata of {n} keys and {total} key bytes exceeds the 128 MiB size limit")
    header = 0x01 | (0x10 if sorted_flag else 0) | ((osz - 1) << 6)
    # A key's UTF-8 length is its length when it is ASCII (an O(1) test).
    lengths = (len(k) if k.isascii() else len(k.encode("utf-8")) for k in keys)
    if osz == 1:
        return bytes((header, n, *accumulate(lengths, initial=0))) + blob
    offsets = uint32_array(accumulate(lengths, initial=0))
    return b"".join((bytes((header,)), n.to_bytes(osz, "little"), pack_uints(offsets, osz), blob))


_UINT32 = "I" if array("I").itemsize == 4 else "L"


def uint32_array(values: Iterable[int] = ()) -> array:  # type: ignore[type-arg]
    """Unsigned 32-bit integers packed 4 bytes each (offsets, ids: no per-value Python objects)."""
    return array(_UINT32, values)


_LITTLE_ENDIAN = sys.byteorder == "little"


def pack_uints(values: Sequence[int], size: int) -> bytes:
    """Little-endian unsigned integers of ``size`` (1-4) bytes each (linear, no per-value objects)."""
    if size == 1:
        return array("B", values).tobytes() if type(values) is array else bytes(values)
    if len(values) < 64:  # a few values: cheaper one by one than through an array
        if size == 3:
            return b"".join([v.to_bytes(3, "little") for v in values])
        return struct.pack(f"<{len(values)}{'H' if size == 2 else 'I'}", *values)
    if size == 2:
        packed = array("H", values)
    else:
        packed = values if type(values) is array and values.typecode == _UINT32 else uint32_array(values)  # type: ignore[assignment]
    if not _LITTLE_ENDIAN:  # pragma: no cover - every supported platform is little-endian
        packed = array(packed.typecode, packed)
        packed.byteswap()
    raw = packed.tobytes()
    if size != 3:
        return raw
    out = bytearray(3 * len(packed))  # drop the high byte of every 4-byte integer
    out[0::3] = raw[0::4]
    out[1::3] = raw[1::4]
    out[2::3] = raw[2::4]
    return bytes(out)


# --- primitives ----------------------------------------------------------------------------


def encode_bool(value: bool) -> bytes:
    return TRUE if value else FALSE


def encode_int(value: int) -> bytes:
    """The narrowest of int8..int64 (as Spark's parse_json does)."""
    if -128 <= value <= 127:
        return _INT8[value + 128]
    if -32768 <= value <= 32767:
        return _I16.pack(0x10, value)
    if -2147483648 <= value <= 2147483647:
        return _I32.pack(0x14, value)
    if -(1 << 63) <= value < (1 << 63):
        return _I64.pack(0x18, value)
    return encode_decimal(Decimal(value))


def encode_int_as(value: int, type_id: PrimitiveType) -> bytes:
    """An integer with an exact width (int8/16/32/64); raises if it does not fit."""
    fmt = {PrimitiveType.INT8: "<Bb", PrimitiveType.INT16: "<Bh", PrimitiveType.INT32: "<Bi", PrimitiveType.INT64: "<Bq"}[type_id]
    try:
        return struct.pack(fmt, type_id << 2, value)
    except struct.error:
        raise UnsupportedValueError(f"{value} does not fit {type_id.name.lower()}") from None


# NaN with Java's canonical bits (doubleToLongBits/floatToIntBits), as Spark writes it.
_NAN_DOUBLE = b"\x1c\x00\x00\x00\x00\x00\x00\xf8\x7f"
_NAN_FLOAT = b"\x38\x00\x00\xc0\x7f"


def encode_double(value: float) -> bytes:
    return _F64.pack(0x1C, value) if value == value else _NAN_DOUBLE


def encode_float(value: float) -> bytes:
    """A float32 (the value is rounded to the nearest float32; beyond its range is an error)."""
    if value != value:
        return _NAN_FLOAT
    try:
        return _F32.pack(0x38, value)
    except OverflowError:
        raise UnsupportedValueError(f"{value!r} is outside the float32 range") from None


def decimal_parts(value: Decimal) -> tuple[int, int, int]:
    """``(unscaled, scale, precision)`` like Java's BigDecimal, scale clamped to >= 0."""
    if not value.is_finite():
        raise UnsupportedValueError(f"decimal {value} is not finite")
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    unscaled = int("".join(map(str, digits)) or "0")
    if exponent > 0:
        unscaled *= 10**exponent
        exponent = 0
    if sign:
        unscaled = -unscaled
    scale = -exponent
    precision = len(str(abs(unscaled))) if unscaled else 1
    return unscaled, scale, precision


def encode_decimal(value: Decimal) -> bytes:
    """The narrowest decimal4/8/16 that holds ``value`` (Spark's appendDecimal)."""
    unscaled, scale, precision = decimal_parts(value)
    if scale <= MAX_DECIMAL4_PRECISION and precision <= MAX_DECIMAL4_PRECISION:
        return struct.pack("<BBi", 0x20, scale, unscaled)
    if scale <= MAX_DECIMAL8_PRECISION and precision <= MAX_DECIMAL8_PRECISION:
        return struct.pack("<BBq", 0x24, scale, unscaled)
    if scale <= MAX_DECIMAL16_PRECISION and precision <= MAX_DECIMAL16_PRECISION:
        return bytes((0x28, scale)) + unscaled.to_bytes(16, "little", signed=True)
    raise UnsupportedValueError(f"decimal {value} needs more than 38 digits")


_DECIMAL_LAYOUTS = {PrimitiveType.DECIMAL4: (4, 9), PrimitiveType.DECIMAL8: (8, 18), PrimitiveType.DECIMAL16: (16, 38)}


def encode_decimal_as(unscaled: int, scale: int, type_id: PrimitiveType) -> bytes:
    """A decimal with an exact physical width: decimal4/8/16 hold up to 9/18/38 digits and
    a scale up to the same (wider values are malformed for Spark and the spec)."""
    width, digits = _DECIMAL_LAYOUTS[type_id]
    if not 0 <= scale <= digits:
        raise UnsupportedValueError(f"decimal scale {scale} outside [0, {digits}] for {type_id.name.lower()}")
    if not -(10**digits) < unscaled < 10**digits:
        raise UnsupportedValueError(f"unscaled decimal {unscaled} has more than {digits} digits for {type_id.name.lower()}")
    return bytes((type_id << 2, scale)) + unscaled.to_bytes(width, "little", signed=True)


def encode_date(value: _dt.date) -> bytes:
    return _I32.pack(0x2C, value.toordinal() - _EPOCH_DATE_ORDINAL)


def encode_date_days(days: int) -> bytes:
    return _I32.pack(0x2C, days)


def encode_timestamp_micros(micros: int, utc: bool) -> bytes:
    return _I64.pack(0x30 if utc else 0x34, micros)


def encode_timestamp_nanos(nanos: int, utc: bool) -> bytes:
    return _I64.pack(0x48 if utc else 0x4C, nanos)


def datetime_micros(value: _dt.datetime) -> int:
    """Epoch microseconds of an aware (instant) or naive (wall clock) datetime."""
    delta = value - (_EPOCH_UTC if value.tzinfo is not None else _EPOCH_NTZ)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def encode_datetime(value: _dt.datetime) -> bytes:
    """Aware datetime -> timestamp (UTC), naive -> timestamp_ntz."""
    return encode_timestamp_micros(datetime_micros(value), value.tzinfo is not None)


def encode_time_micros(micros: int) -> bytes:
    if not 0 <= micros < 86_400_000_000:
        raise UnsupportedValueError(f"time of day {micros} us out of range")
    return _I64.pack(0x44, micros)


def encode_time(value: _dt.time) -> bytes:
    if value.tzinfo is not None:
        raise UnsupportedValueError("Variant TIME has no time zone; pass a naive time")
    return encode_time_micros(((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond)


def encode_binary(value: bytes) -> bytes:
    return _U32.pack(0x3C, len(value)) + bytes(value)


def encode_string(value: str) -> bytes:
    try:
        data = value.encode("utf-8")
    except UnicodeEncodeError:
        raise UnsupportedValueError("string is not valid Unicode (lone surrogate)") from None
    return encode_utf8(data)


def encode_utf8(data: bytes) -> bytes:
    """A string from its UTF-8 bytes: short string when it fits 63 bytes."""
    n = len(data)
    if n <= MAX_SHORT_STRING:
        return bytes(((n << 2) | 1,)) + data
    return _U32.pack(0x40, n) + data


def encode_uuid(value: uuid.UUID) -> bytes:
    return b"\x50" + value.bytes


# --- containers ------------------------------------------------------------------------------


def _width(needed: int, forced: int | None, what: str) -> int:
    """``forced`` when given (it must hold ``needed``), else the narrowest width."""
    if forced is None:
        return needed
    if not needed <= forced <= 4:
        raise UnsupportedValueError(f"{what} width {forced} cannot hold this container (needs {needed}..4)")
    return forced


def assemble_array(offsets: Sequence[int], data: bytes, *, offset_size: int | None = None,
                   large: bool | None = None) -> bytes:
    """An array from its ``n + 1`` offsets (the last is ``len(data)``) and element bytes.

    Widths default to the narrowest (Spark's choice); ``offset_size`` (1-4) and ``large``
    force wider encodings, which readers must accept as well.
    """
    n = len(offsets) - 1
    osz = _width(int_size(len(data)), offset_size, "offset")
    if large is None:
        large = n > 0xFF
    elif not large and n > 0xFF:
        raise UnsupportedValueError(f"an array of {n} elements needs the large header")
    header = 0x03 | ((osz - 1) << 2) | (0x10 if large else 0)
    if osz == 1 and not large:
        return bytes((header, n, *offsets)) + data
    return b"".join((bytes((header,)), n.to_bytes(4 if large else 1, "little"), pack_uints(offsets, osz), data))


def assemble_object(ids: Sequence[int], offsets: Sequence[int], data: bytes, *, id_size: int | None = None,
                    offset_size: int | None = None, large: bool | None = None) -> bytes:
    """An object from its field ids and ``n + 1`` offsets, both in sorted-key order, and value bytes.

    Widths default to the narrowest (Spark's choice); ``id_size``/``offset_size`` (1-4) and
    ``large`` force wider encodings.
    """
    n = len(ids)
    osz = _width(int_size(len(data)), offset_size, "offset")
    isz = _width(int_size(max(ids, default=0)), id_size, "field id")
    if large is None:
        large = n > 0xFF
    elif not large and n > 0xFF:
        raise UnsupportedValueError(f"an object of {n} fields needs the large header")
    header = 0x02 | ((osz - 1) << 2) | ((isz - 1) << 4) | (0x40 if large else 0)
    if osz == 1 and isz == 1 and not large:
        return bytes((header, n, *ids, *offsets)) + data
    return b"".join((bytes((header,)), n.to_bytes(4 if large else 1, "little"),
                     pack_uints(ids, isz), pack_uints(offsets, osz), data))


def encode_array(elements: Sequence[bytes], *, offset_size: int | None = None, large: bool | None = None) -> bytes:
    """An array of already-encoded values."""
    offsets = [0] * (len(elements) + 1)
    total = 0
    for i, e in enumerate(elements):
        offsets[i] = total
        total += len(e)
    offsets[-1] = total
    return assemble_array(offsets, b"".join(elements), offset_size=offset_size, large=large)


def encode_object(fields: Sequence[tuple[str, int, bytes]], allow_duplicates: bool = False, *,
                  id_size: int | None = None, offset_size: int | None = None, large: bool | None = None) -> bytes:
    """An object from ``(key, field_id, encoded_value)`` in insertion order.

    Values are laid out in insertion order; ids/offsets are sorted by key (code point
    order, which is UTF-8 byte order). With ``allow_duplicates`` the last value of a
    repeated key wins (Spark's rule); otherwise a repeated key raises ``DuplicateKeyError``.
    """
    if len({f[0] for f in fields}) != len(fields):
        if not allow_duplicates:
            seen: set[str] = set()
            for f in fields:
                if f[0] in seen:
                    raise DuplicateKeyError(f[0])
                seen.add(f[0])
        last = {f[0]: i for i, f in enumerate(fields)}
        fields = [f for i, f in enumerate(fields) if last[f[0]] == i]
    offsets = [0] * len(fields)
    total = 0
    for i, f in enumerate(fields):
        offsets[i] = total
        total += len(f[2])
    order = sorted(range(len(fields)), key=lambda i: fields[i][0])
    sorted_offsets = [offsets[i] for i in order]
    sorted_offsets.append(total)
    return assemble_object([fields[i][1] for i in order], sorted_offsets, b"".join(f[2] for f in fields),
                           id_size=id_size, offset_size=offset_size, large=large)


# --- Python values ---------------------------------------------------------------------------


def encode_python(obj: object, meta: MetadataBuilder, depth: int = 0) -> bytes:
    """Encode a Python value; containers recurse. Unsupported types raise."""
    if obj is None:
        return NULL
    if obj is True:
        return TRUE
    if obj is False:
        return FALSE
    t = type(obj)
    if t is int:
        return encode_int(obj)  # type: ignore[arg-type]
    if t is str:
        return encode_string(obj)  # type: ignore[arg-type]
    if t is float:
        return encode_double(obj)  # type: ignore[arg-type]
    if depth >= 10_000:
        raise UnsupportedValueError("value nested more than 10000 levels deep")
    if isinstance(obj, dict):
        fields = []
        for k, v in obj.items():
            if not isinstance(k, str):
                raise UnsupportedValueError(f"object keys must be str, got {type(k).__name__} {k!r}")
            fields.append((k, meta.add(k), encode_python(v, meta, depth + 1)))
        return encode_object(fields)
    if isinstance(obj, (list, tuple)):
        return encode_array([encode_python(v, meta, depth + 1) for v in obj])
    return encode_scalar(obj)


def encode_scalar(obj: object) -> bytes:
    """Encode a non-container Python value (the part of ``encode_python`` without recursion)."""
    from varlake.variant.temporal import Float32, TimestampNanos

    if obj is None:
        return NULL
    if isinstance(obj, bool):
        return encode_bool(obj)
    if isinstance(obj, int):
        if not -(1 << 63) <= obj < (1 << 63):
            if len(str(abs(obj))) > MAX_DECIMAL16_PRECISION:
                raise UnsupportedValueError(f"integer {obj} does not fit int64 or decimal(38)")
        return encode_int(obj)
    if isinstance(obj, Float32):
        return encode_float(obj)
    if isinstance(obj, float):
        return encode_double(obj)
    if isinstance(obj, str):
        return encode_string(obj)
    if isinstance(obj, Decimal):
        return encode_decimal(obj)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return encode_binary(bytes(obj))
    if isinstance(obj, _dt.datetime):
        return encode_datetime(obj)
    if isinstance(obj, _dt.date):
        return encode_date(obj)
    if isinstance(obj, _dt.time):
        return encode_time(obj)
    if isinstance(obj, uuid.UUID):
        return encode_uuid(obj)
    if isinstance(obj, TimestampNanos):
        return encode_timestamp_nanos(obj.nanos, obj.utc)
    try:
        import numpy as np

        if isinstance(obj, np.generic):
            return encode_scalar(obj.item())
    except ImportError:  # pragma: no cover - numpy ships with pyarrow
        pass
    raise UnsupportedValueError(f"no Variant representation for {type(obj).__name__}: {obj!r}")


def check_size(value: bytes) -> bytes:
    if len(value) > SIZE_LIMIT:
        raise VariantSizeLimitError(f"Variant value of {len(value)} bytes exceeds the 128 MiB size limit")
    return value

