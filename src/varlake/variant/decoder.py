"""Reading Variant bytes: headers, primitives, object/array access, full decode.

Everything works on ``(metadata, value, pos)`` without copying, so navigation
(``variant_get``) touches only the bytes on its path. Every read is
bounds-checked; a full traversal carries a ``Budget`` so that values whose
offsets alias each other (an object whose 255 fields all point at one nested
array, five levels deep) are rejected after at most ``len(value)`` steps instead
of exploding into exponential work or output. Python's own
``IndexError``/``struct.error``/``RecursionError`` are translated into
``MalformedVariantError`` at the public entry points (see ``guarded``).

Spark-semantics facts this module relies on (checked against Spark 4.3):
decimal4/8/16 hold at most 9/18/38 digits with a scale of at most 9/18/38, and
Spark rejects wider ones as ``MALFORMED_VARIANT``; field ids are sorted by the
key's UTF-16 code units in Spark's output (by UTF-8 bytes in the spec), so
lookups never rely on that order.
"""

from __future__ import annotations

import datetime as _dt
import functools
import struct
import sys
import uuid
from collections.abc import Callable, Sequence
from decimal import Context, Decimal
from typing import Any, TypeVar

from varlake.errors import MalformedVariantError, UnsupportedValueError, VarlakeError
from varlake.semantics.json_text import quote
from varlake.variant.constants import METADATA_VERSION, PrimitiveType
from varlake.variant.temporal import Float32, TimestampNanos

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I8 = struct.Struct("<b")
_I16 = struct.Struct("<h")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_F32 = struct.Struct("<f")

EPOCH_DATE = _dt.date(1970, 1, 1)
EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
EPOCH_NTZ = _dt.datetime(1970, 1, 1)
# Decimal arithmetic without rounding (the default context keeps only 28 digits).
_EXACT = Context(prec=100)

T = TypeVar("T")

# Python frames allowed while walking a deep value: room for the 10,000 levels
# ``encode_python`` accepts (two frames a level at most) and Spark's 1000.
DEEP_RECURSION_LIMIT = 25_000


def with_deep_stack(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call ``fn``; if Python's recursion limit stops it, retry once with a higher limit.

    The codec walks values recursively (fast and simple); the default limit of 1000
    frames would reject valid values only a little deeper than Spark's 1000-level JSON.
    Still-deeper values raise ``RecursionError`` from the retry, for the caller to name.
    """
    try:
        return fn(*args, **kwargs)
    except RecursionError:
        pass
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, DEEP_RECURSION_LIMIT))
    try:
        return fn(*args, **kwargs)
    finally:
        sys.setrecursionlimit(old)


def guarded(fn: Callable[..., T]) -> Callable[..., T]:
    """Turn low-level read failures of ``fn`` into ``MalformedVariantError``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return with_deep_stack(fn, *args, **kwargs)
        except VarlakeError:
            raise
        except (IndexError, struct.error) as exc:
            raise MalformedVariantError(f"truncated or inconsistent Variant ({exc})") from None
        except UnicodeDecodeError as exc:
            raise MalformedVariantError(f"string is not valid UTF-8 ({exc.reason})") from None
        except RecursionError:
            raise MalformedVariantError("Variant nested too deeply to decode") from None
        except (OverflowError, ValueError) as exc:
            raise MalformedVariantError(f"invalid primitive value ({exc})") from None

    return wrapper


def read_uint(buf: bytes, pos: int, size: int) -> int:
    """Unsigned little-endian integer of 1-4 bytes; raises IndexError past the end."""
    if size == 1:
        return buf[pos]
    if size == 2:
        return _U16.unpack_from(buf, pos)[0]
    if size == 4:
        return _U32.unpack_from(buf, pos)[0]
    return buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)


_UINT_CODES = {2: "H", 4: "I"}
# Compiled ``<nH`` / ``<nI`` unpackers by (size, n): objects of one shape recur row after row.
_UINT_UNPACKERS: dict[tuple[int, int], struct.Struct] = {}


def read_uints(buf: bytes, start: int, n: int, size: int) -> Sequence[int]:
    """``n`` unsigned little-endian integers of ``size`` bytes; the caller has checked the bounds."""
    if size == 1:
        return buf[start : start + n]
    if size == 3:
        return [buf[i] | (buf[i + 1] << 8) | (buf[i + 2] << 16) for i in range(start, start + 3 * n, 3)]
    unpacker = _UINT_UNPACKERS.get((size, n))
    if unpacker is None:
        if len(_UINT_UNPACKERS) > 4096:
            _UINT_UNPACKERS.clear()
        unpacker = _UINT_UNPACKERS[(size, n)] = struct.Struct(f"<{n}{_UINT_CODES[size]}")
    return unpacker.unpack_from(buf, start)


# --- metadata ------------------------------------------------------------------------


class MetadataView:
    """Random access to a metadata dictionary without decoding all of it."""

    __slots__ = ("raw", "offset_size", "size", "offsets_start", "strings_start", "is_sorted",
                 "_keys", "_quoted", "_index")

    def __init__(self, raw: bytes) -> None:
        if not raw:
            raise MalformedVariantError("empty metadata", 0, "metadata")
        header = raw[0]
        if header & 0x0F != METADATA_VERSION:
            raise MalformedVariantError(f"unsupported metadata version {header & 0x0F}", 0, "metadata")
        self.raw = raw
        self.offset_size = ((header >> 6) & 0x03) + 1
        self.is_sorted = bool(header & 0x10)
        if len(raw) < 1 + self.offset_size:
            raise MalformedVariantError("metadata shorter than its header", len(raw), "metadata")
        self.size = read_uint(raw, 1, self.offset_size)
        self.offsets_start = 1 + self.offset_size
        self.strings_start = self.offsets_start + (self.size + 1) * self.offset_size
        if self.strings_start > len(raw):
            raise MalformedVariantError(
                f"dictionary of {self.size} keys does not fit in {len(raw)} bytes", 1, "metadata"
            )
        last = read_uint(raw, self.strings_start - self.offset_size, self.offset_size)
        if self.strings_start + last > len(raw):
            raise MalformedVariantError("dictionary strings run past the end", self.strings_start, "metadata")
        self._keys: list[str] | None = None
        self._quoted: list[str] | None = None
        self._index: dict[bytes, tuple[int, ...]] | None = None

    def key_bytes(self, index: int) -> bytes:
        """UTF-8 bytes of dictionary entry ``index``."""
        if index >= self.size:
            raise MalformedVariantError(f"field id {index} outside a dictionary of {self.size}", None, "value")
        osz = self.offset_size
        at = self.offsets_start + index * osz
        start = read_uint(self.raw, at, osz)
        end = read_uint(self.raw, at + osz, osz)
        if start > end:
            raise MalformedVariantError(f"dictionary offsets decrease at entry {index}", at, "metadata")
        return self.raw[self.strings_start + start : self.strings_start + end]

    def key(self, index: int) -> str:
        if self._keys is not None:
            if index >= self.size:
                raise MalformedVariantError(f"field id {index} outside a dictionary of {self.size}", None, "value")
            return self._keys[index]
        return self.key_bytes(index).decode("utf-8")

    def _all_key_bytes(self) -> list[bytes]:
        offsets = read_uints(self.raw, self.offsets_start, self.size + 1, self.offset_size)
        base = self.strings_start
        raw = self.raw
        out = []
        start = offsets[0]
        for i in range(self.size):
            end = offsets[i + 1]
            if start > end:
                raise MalformedVariantError(f"dictionary offsets decrease at entry {i}",
                                            self.offsets_start + i * self.offset_size, "metadata")
            out.append(raw[base + start : base + end])
            start = end
        return out

    def keys(self) -> list[str]:
        """All dictionary strings, decoded once and cached."""
        if self._keys is None:
            try:
                self._keys = [k.decode("utf-8") for k in self._all_key_bytes()]
            except UnicodeDecodeError as exc:
                raise MalformedVariantError(f"dictionary key is not valid UTF-8 ({exc.reason})", None, "metadata") from None
        return self._keys

    def quoted_keys(self) -> list[str]:
        """Every key as a JSON string literal followed by ``:``, for rendering objects."""
        if self._quoted is None:
            self._quoted = [quote(k) + ":" for k in self.keys()]
        return self._quoted

    def field_ids(self, key: bytes) -> tuple[int, ...]:
        """Dictionary ids holding ``key`` (UTF-8). A sorted dictionary is binary-searched; an
        unsorted one may repeat a string, so every id of it is returned."""
        if self.is_sorted:
            lo, hi = 0, self.size - 1
            while lo <= hi:
                mid = (lo + hi) >> 1
                k = self.key_bytes(mid)
                if k < key:
                    lo = mid + 1
                elif k > key:
                    hi = mid - 1
                else:
                    return (mid,)
            return ()
        index = self._index
        if index is None:
            built: dict[bytes, tuple[int, ...]] = {}
            for i, k in enumerate(self._all_key_bytes()):
                built[k] = built.get(k, ()) + (i,)
            index = self._index = built
        return index.get(key, ())


@functools.lru_cache(maxsize=1024)
def metadata_view(raw: bytes) -> MetadataView:
    """Cached ``MetadataView``: rows of one column often share their dictionary."""
    return MetadataView(raw)


# --- value headers ---------------------------------------------------------------------


def object_layout(value: bytes, pos: int) -> tuple[int, int, int, int, int, int]:
    """``(num_fields, id_size, offset_size, ids_start, offsets_start, data_start)``."""
    header = value[pos] >> 2
    offset_size = (header & 0x03) + 1
    id_size = ((header >> 2) & 0x03) + 1
    if header & 0x10:
        n = _U32.unpack_from(value, pos + 1)[0]
        ids_start = pos + 5
    else:
        n = value[pos + 1]
        ids_start = pos + 2
    offsets_start = ids_start + n * id_size
    data_start = offsets_start + (n + 1) * offset_size
    if data_start > len(value):
        raise MalformedVariantError(f"object of {n} fields does not fit", pos)
    return n, id_size, offset_size, ids_start, offsets_start, data_start


def array_layout(value: bytes, pos: int) -> tuple[int, int, int, int]:
    """``(num_elements, offset_size, offsets_start, data_start)``."""
    header = value[pos] >> 2
    offset_size = (header & 0x03) + 1
    if header & 0x04:
        n = _U32.unpack_from(value, pos + 1)[0]
        offsets_start = pos + 5
    else:
        n = value[pos + 1]
        offsets_start = pos + 2
    data_start = offsets_start + (n + 1) * offset_size
    if data_start > len(value):
        raise MalformedVariantError(f"array of {n} elements does not fit", pos)
    return n, offset_size, offsets_start, data_start


_FIXED_SIZES = {
    PrimitiveType.NULL: 1, PrimitiveType.TRUE: 1, PrimitiveType.FALSE: 1,
    PrimitiveType.INT8: 2, PrimitiveType.INT16: 3, PrimitiveType.INT32: 5, PrimitiveType.INT64: 9,
    PrimitiveType.DOUBLE: 9, PrimitiveType.DECIMAL4: 6, PrimitiveType.DECIMAL8: 10,
    PrimitiveType.DECIMAL16: 18, PrimitiveType.DATE: 5, PrimitiveType.TIMESTAMP: 9,
    PrimitiveType.TIMESTAMP_NTZ: 9, PrimitiveType.FLOAT: 5, PrimitiveType.TIME: 9,
    PrimitiveType.TIMESTAMP_NANOS: 9, PrimitiveType.TIMESTAMP_NTZ_NANOS: 9, PrimitiveType.UUID: 17,
}


def value_size(value: bytes, pos: int) -> int:
    """Size in bytes of the value starting at ``pos`` (header included)."""
    header = value[pos]
    basic = header & 0x03
    if basic == 1:
        return 1 + (header >> 2)
    if basic == 0:
        type_id = header >> 2
        fixed = _FIXED_SIZES.get(type_id)
        if fixed is not None:
            return fixed
        if type_id in (PrimitiveType.BINARY, PrimitiveType.STRING):
            return 5 + _U32.unpack_from(value, pos + 1)[0]
        raise MalformedVariantError(f"unknown primitive type id {type_id}", pos)
    if basic == 2:
        n, _, osz, _, offs, data = object_layout(value, pos)
    else:
        n, osz, offs, data = array_layout(value, pos)
    return data - pos + read_uint(value, offs + n * osz, osz)


# --- navigation --------------------------------------------------------------------------


def _index_of_id(value: bytes, ids_start: int, n: int, id_size: int, fid: int, ordered: bool) -> int:
    """Index of field id ``fid`` among the object's ``n`` ids, or -1."""
    if ordered and n > 16:  # sorted dictionary: ids ascend with the keys
        lo, hi = 0, n - 1
        while lo <= hi:
            mid = (lo + hi) >> 1
            got = read_uint(value, ids_start + mid * id_size, id_size)
            if got < fid:
                lo = mid + 1
            elif got > fid:
                hi = mid - 1
            else:
                return mid
        # not found: fall through to a scan, in case the writer ordered ids otherwise
    if id_size == 1:
        if fid > 0xFF:
            return -1
        at = value.find(_BYTE[fid], ids_start, ids_start + n)
        return -1 if at < 0 else at - ids_start
    try:
        return list(read_uints(value, ids_start, n, id_size)).index(fid)
    except ValueError:
        return -1


_BYTE = [bytes((i,)) for i in range(256)]


def object_field(meta: MetadataView, value: bytes, pos: int, key: bytes) -> int | None:
    """Position of field ``key`` (UTF-8 bytes) in the object at ``pos``, or None.

    The key is looked up in the dictionary first (a binary search when it is
    sorted, a cached index otherwise), then its id among the object's field ids:
    a byte search, which holds whatever order the writer sorted the ids in.
    """
    n, id_size, osz, ids, offs, data = object_layout(value, pos)
    for fid in meta.field_ids(key):
        i = _index_of_id(value, ids, n, id_size, fid, meta.is_sorted)
        if i >= 0:
            return data + read_uint(value, offs + i * osz, osz)
    return None


def array_element(value: bytes, pos: int, index: int) -> int | None:
    """Position of element ``index`` of the array at ``pos``, or None if out of range."""
    n, osz, offs, data = array_layout(value, pos)
    if index < 0 or index >= n:
        return None
    return data + read_uint(value, offs + index * osz, osz)


def object_ids_offsets(meta: MetadataView, value: bytes, pos: int) -> tuple[Sequence[int], Sequence[int], int]:
    """``(field ids, field offsets, data start)`` of the object at ``pos``; ids checked against the dictionary."""
    n, id_size, osz, ids_at, offs_at, data = object_layout(value, pos)
    ids = read_uints(value, ids_at, n, id_size)
    if n and max(ids) >= meta.size:
        raise MalformedVariantError(f"field id {max(ids)} outside a dictionary of {meta.size}", ids_at)
    return ids, read_uints(value, offs_at, n, osz), data


def object_entries(meta: MetadataView, value: bytes, pos: int) -> list[tuple[str, int]]:
    """``(key, position)`` of every field, in field-id (sorted key) order."""
    ids, offs, data = object_ids_offsets(meta, value, pos)
    keys = meta.keys()
    return [(keys[i], data + o) for i, o in zip(ids, offs)]


def array_positions(value: bytes, pos: int) -> list[int]:
    """Position of every element of the array at ``pos``."""
    n, osz, offs, data = array_layout(value, pos)
    return [data + o for o in read_uints(value, offs, n, osz)]


# --- primitives ------------------------------------------------------------------------

# (width, digit limit) of decimal4/8/16 by type id; Spark rejects wider values as malformed.
DECIMAL_WIDTHS = {8: (4, 9), 9: (8, 18), 10: (16, 38)}
_DECIMAL_LIMITS = {4: 10**9, 8: 10**18, 16: 10**38}


def read_decimal(value: bytes, pos: int) -> tuple[int, int]:
    """``(unscaled, scale)`` of the decimal4/8/16 at ``pos``, range-checked."""
    width, max_digits = DECIMAL_WIDTHS[value[pos] >> 2]
    scale = value[pos + 1]
    if scale > max_digits:
        raise MalformedVariantError(f"decimal{width} scale {scale} > {max_digits}", pos + 1)
    end = pos + 2 + width
    if end > len(value):
        raise MalformedVariantError("decimal truncated", pos)
    unscaled = int.from_bytes(value[pos + 2 : end], "little", signed=True)
    limit = _DECIMAL_LIMITS[width]
    if not -limit < unscaled < limit:
        raise MalformedVariantError(f"decimal{width} unscaled value {unscaled} has more than {max_digits} digits", pos + 2)
    return unscaled, scale


def _text(value: bytes, start: int, length: int) -> str:
    end = start + length
    if end > len(value):
        raise MalformedVariantError(f"string of {length} bytes runs past the end", start)
    return value[start:end].decode("utf-8")


def _blob(value: bytes, start: int, length: int) -> bytes:
    end = start + length
    if end > len(value):
        raise MalformedVariantError(f"binary of {length} bytes runs past the end", start)
    return bytes(value[start:end])


def micros_to_datetime(micros: int, aware: bool) -> _dt.datetime:
    """Epoch microseconds to a datetime (UTC-aware or naive)."""
    try:
        return (EPOCH_UTC if aware else EPOCH_NTZ) + _dt.timedelta(microseconds=micros)
    except OverflowError:
        raise UnsupportedValueError(f"timestamp {micros} us from the epoch is outside Python's years 1-9999") from None


def micros_to_time(micros: int) -> _dt.time:
    if not 0 <= micros < 86_400_000_000:
        raise MalformedVariantError(f"time of day {micros} us out of range")
    s, us = divmod(micros, 1_000_000)
    return _dt.time(s // 3600, (s // 60) % 60, s % 60, us)


def _decimal(value: bytes, pos: int) -> Decimal:
    unscaled, scale = read_decimal(value, pos)
    return Decimal(unscaled).scaleb(-scale, _EXACT)


def _date(value: bytes, pos: int) -> _dt.date:
    days = _I32.unpack_from(value, pos + 1)[0]
    try:
        return EPOCH_DATE + _dt.timedelta(days=days)
    except OverflowError:
        raise UnsupportedValueError(f"date {days} days from the epoch is outside Python's years 1-9999") from None


def _uuid(value: bytes, pos: int) -> uuid.UUID:
    if pos + 17 > len(value):
        raise MalformedVariantError("uuid truncated", pos)
    return uuid.UUID(bytes=bytes(value[pos + 1 : pos + 17]))


# Decoders of primitive type ids 0-20 (short strings are handled before).
_PRIMITIVES: tuple[Callable[[bytes, int], Any], ...] = (
    lambda v, p: None,
    lambda v, p: True,
    lambda v, p: False,
    lambda v, p: _I8.unpack_from(v, p + 1)[0],
    lambda v, p: _I16.unpack_from(v, p + 1)[0],
    lambda v, p: _I32.unpack_from(v, p + 1)[0],
    lambda v, p: _I64.unpack_from(v, p + 1)[0],
    lambda v, p: _F64.unpack_from(v, p + 1)[0],
    _decimal,
    _decimal,
    _decimal,
    _date,
    lambda v, p: micros_to_datetime(_I64.unpack_from(v, p + 1)[0], True),
    lambda v, p: micros_to_datetime(_I64.unpack_from(v, p + 1)[0], False),
    lambda v, p: Float32(_F32.unpack_from(v, p + 1)[0]),
    lambda v, p: _blob(v, p + 5, _U32.unpack_from(v, p + 1)[0]),
    lambda v, p: _text(v, p + 5, _U32.unpack_from(v, p + 1)[0]),
    lambda v, p: micros_to_time(_I64.unpack_from(v, p + 1)[0]),
    lambda v, p: TimestampNanos(_I64.unpack_from(v, p + 1)[0], True),
    lambda v, p: TimestampNanos(_I64.unpack_from(v, p + 1)[0], False),
    _uuid,
)


def payload_length(value: bytes, pos: int) -> int:
    """Byte length of the long string or binary at ``pos``, checked against the value's end."""
    length = _U32.unpack_from(value, pos + 1)[0]
    if pos + 5 + length > len(value):
        raise MalformedVariantError(f"string or binary of {length} bytes runs past the end", pos)
    return length


def primitive_to_python(value: bytes, pos: int) -> Any:
    """Decode the primitive or short string at ``pos`` into a Python value."""
    header = value[pos]
    if header & 0x03 == 1:
        return _text(value, pos + 1, header >> 2)
    t = header >> 2
    if t > 20:
        raise MalformedVariantError(f"unknown primitive type id {t}", pos)
    return _PRIMITIVES[t](value, pos)


def primitive_int(value: bytes, pos: int) -> int | None:
    """The integer of an int8-int64 value at ``pos``, else None (fast path for casts)."""
    t = value[pos]
    if t == 0x0C:
        return _I8.unpack_from(value, pos + 1)[0]
    if t == 0x10:
        return _I16.unpack_from(value, pos + 1)[0]
    if t == 0x14:
        return _I32.unpack_from(value, pos + 1)[0]
    if t == 0x18:
        return _I64.unpack_from(value, pos + 1)[0]
    return None


# --- full decode ---------------------------------------------------------------------------


class Budget:
    """What a traversal may still visit: container elements plus long string and binary bytes.

    A value whose children do not overlap has more bytes than it has elements and
    payload, so ``len(value)`` is never exceeded by a well-formed value; aliased
    offsets exceed it quickly and are rejected.
    """

    __slots__ = ("left",)

    def __init__(self, value: bytes) -> None:
        self.left = len(value) + 1

    def spend(self, n: int, pos: int) -> None:
        """Charge a container of ``n`` elements (it has at least ``n + 3`` bytes)."""
        self.left -= n + 1
        if self.left < 0:
            raise MalformedVariantError("object/array offsets overlap (value visits more elements than it has bytes)", pos)

    def take(self, n: int, pos: int) -> None:
        """Charge ``n`` payload bytes of a long string or binary."""
        self.left -= n
        if self.left < 0:
            raise MalformedVariantError("offsets overlap (value reads more string bytes than it has)", pos)


def _to_python(meta: MetadataView, keys: list[str], value: bytes, pos: int, budget: Budget) -> Any:
    header = value[pos]
    basic = header & 0x03
    if basic == 1:
        end = pos + 1 + (header >> 2)
        if end > len(value):
            raise MalformedVariantError("short string runs past the end", pos)
        return value[pos + 1 : end].decode("utf-8")
    if basic == 2:
        ids, offs, data = object_ids_offsets(meta, value, pos)
        budget.spend(len(ids), pos)
        return {keys[i]: _to_python(meta, keys, value, data + o, budget) for i, o in zip(ids, offs)}
    if basic == 3:
        n, osz, offs_at, data = array_layout(value, pos)
        budget.spend(n, pos)
        return [_to_python(meta, keys, value, data + o, budget) for o in read_uints(value, offs_at, n, osz)]
    t = header >> 2
    if t == 15 or t == 16:
        budget.take(payload_length(value, pos), pos)
    elif t > 20:
        raise MalformedVariantError(f"unknown primitive type id {t}", pos)
    return _PRIMITIVES[t](value, pos)


def to_python(meta: MetadataView, value: bytes, pos: int = 0, budget: Budget | None = None) -> Any:
    """Decode the whole value at ``pos`` into Python objects (dict, list, primitives)."""
    return _to_python(meta, meta.keys(), value, pos, budget if budget is not None else Budget(value))


def type_info(value: bytes, pos: int) -> tuple[int, int]:
    """``(basic_type, primitive_type_id)``; a short string reports STRING."""
    header = value[pos]
    basic = header & 0x03
    if basic == 0:
        t = header >> 2
        if t > 20:
            raise MalformedVariantError(f"unknown primitive type id {t}", pos)
        return 0, t
    if basic == 1:
        return 0, PrimitiveType.STRING
    return basic, -1


@guarded
def validate(metadata: bytes, value: bytes) -> None:
    """Check ``metadata``/``value`` fully against the spec; raise MalformedVariantError if not.

    Checks what a decoder relies on: sizes, offsets and ids in range, UTF-8 keys and
    strings, decimal widths and scales, a sorted dictionary really sorted and unique,
    no duplicate keys in an object, the element budget, and that the value spans
    exactly its bytes.
    """
    meta = MetadataView(metadata)
    keys = meta.keys()
    if meta.is_sorted and any(a >= b for a, b in zip(keys, keys[1:])):
        raise MalformedVariantError("dictionary flagged sorted is not sorted and unique", None, "metadata")
    if not value:
        raise MalformedVariantError("empty value", 0)
    budget = Budget(value)
    end = _validate_at(meta, value, 0, budget)
    if end != len(value):
        raise MalformedVariantError(f"{len(value) - end} trailing bytes after the value", end)


def _validate_at(meta: MetadataView, value: bytes, pos: int, budget: Budget) -> int:
    basic = value[pos] & 0x03
    if basic == 2:
        n, id_size, osz, ids_at, offs, data = object_layout(value, pos)
        budget.spend(n, pos)
        ids, starts, _ = object_ids_offsets(meta, value, pos)
        keys = meta.keys()
        last = read_uint(value, offs + n * osz, osz)
        seen: set[str] = set()
        for i in range(n):
            key = keys[ids[i]]
            if key in seen:
                raise MalformedVariantError(f"duplicate object key {key!r}", ids_at + i * id_size)
            seen.add(key)
            start = starts[i]
            if start >= last:
                raise MalformedVariantError(f"field {key!r} starts past the object's data", offs + i * osz)
            if _validate_at(meta, value, data + start, budget) > data + last:
                raise MalformedVariantError(f"field {key!r} runs past the object's data", data + start)
        return data + last
    if basic == 3:
        n, osz, offs, data = array_layout(value, pos)
        budget.spend(n, pos)
        last = read_uint(value, offs + n * osz, osz)
        for i, start in enumerate(read_uints(value, offs, n, osz)):
            if start >= last:
                raise MalformedVariantError(f"element {i} starts past the array's data", offs + i * osz)
            if _validate_at(meta, value, data + start, budget) > data + last:
                raise MalformedVariantError(f"element {i} runs past the array's data", data + start)
        return data + last
    primitive_to_python(value, pos)
    size = value_size(value, pos)
    if pos + size > len(value):
        raise MalformedVariantError("primitive runs past the end", pos)
    if size > 17:
        budget.take(size, pos)
    return pos + size
