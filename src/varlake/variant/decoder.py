"""Reading Variant bytes: headers, primitives, object/array access, full decode.

Everything works on ``(metadata, value, pos)`` without copying, so navigation
(``variant_get``) touches only the bytes on its path. Every read is
bounds-checked; a full traversal carries an element budget so that values whose
offsets alias each other cannot blow up into exponential work. Python's own
``IndexError``/``struct.error`` are translated into ``MalformedVariantError`` at
the public entry points (see ``guarded``).
"""

from __future__ import annotations

import datetime as _dt
import functools
import struct
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeVar

from varlake.errors import MalformedVariantError
from varlake.variant.constants import METADATA_VERSION, PrimitiveType
from varlake.variant.temporal import Float32, TimestampNanos

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_I16 = struct.Struct("<h")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_F32 = struct.Struct("<f")

EPOCH_DATE = _dt.date(1970, 1, 1)
EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
EPOCH_NTZ = _dt.datetime(1970, 1, 1)

T = TypeVar("T")


def guarded(fn: Callable[..., T]) -> Callable[..., T]:
    """Turn low-level read failures of ``fn`` into ``MalformedVariantError``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except MalformedVariantError:
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


# --- metadata ------------------------------------------------------------------------


class MetadataView:
    """Random access to a metadata dictionary without decoding all of it."""

    __slots__ = ("raw", "offset_size", "size", "offsets_start", "strings_start", "is_sorted", "_keys")

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
        return self.keys()[index] if self._keys is not None else self.key_bytes(index).decode("utf-8")

    def keys(self) -> list[str]:
        """All dictionary strings, decoded once and cached."""
        if self._keys is None:
            self._keys = [self.key_bytes(i).decode("utf-8") for i in range(self.size)]
        return self._keys


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
    large = header & 0x10
    if large:
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


def object_field(meta: MetadataView, value: bytes, pos: int, key: bytes) -> int | None:
    """Position of field ``key`` (UTF-8 bytes) in the object at ``pos``, or None.

    Binary search over the field ids, which the spec keeps sorted by unsigned
    UTF-8 bytes. Spark sorts by UTF-16 code units instead; the two orders only
    disagree for keys holding characters >= U+E000, so a miss on such a key
    falls back to a linear scan.
    """
    n, id_size, osz, ids, offs, data = object_layout(value, pos)
    lo, hi = 0, n - 1
    while lo <= hi:
        mid = (lo + hi) >> 1
        k = meta.key_bytes(read_uint(value, ids + mid * id_size, id_size))
        if k < key:
            lo = mid + 1
        elif k > key:
            hi = mid - 1
        else:
            return data + read_uint(value, offs + mid * osz, osz)
    if not key.isascii() and n:
        for i in range(n):
            if meta.key_bytes(read_uint(value, ids + i * id_size, id_size)) == key:
                return data + read_uint(value, offs + i * osz, osz)
    return None


def array_element(value: bytes, pos: int, index: int) -> int | None:
    """Position of element ``index`` of the array at ``pos``, or None if out of range."""
    n, osz, offs, data = array_layout(value, pos)
    if index < 0 or index >= n:
        return None
    return data + read_uint(value, offs + index * osz, osz)


def object_entries(meta: MetadataView, value: bytes, pos: int) -> list[tuple[str, int]]:
    """``(key, position)`` of every field, in field-id (sorted key) order."""
    n, id_size, osz, ids, offs, data = object_layout(value, pos)
    keys = meta.keys()
    out = []
    for i in range(n):
        fid = read_uint(value, ids + i * id_size, id_size)
        if fid >= len(keys):
            raise MalformedVariantError(f"field id {fid} outside a dictionary of {len(keys)}", ids + i * id_size)
        out.append((keys[fid], data + read_uint(value, offs + i * osz, osz)))
    return out


def array_positions(value: bytes, pos: int) -> list[int]:
    """Position of every element of the array at ``pos``."""
    n, osz, offs, data = array_layout(value, pos)
    return [data + read_uint(value, offs + i * osz, osz) for i in range(n)]


# --- primitives ------------------------------------------------------------------------


def _decimal(value: bytes, pos: int, width: int) -> Decimal:
    scale = value[pos + 1]
    if scale > 38:
        raise MalformedVariantError(f"decimal scale {scale} > 38", pos + 1)
    end = pos + 2 + width
    if end > len(value):
        raise MalformedVariantError("decimal truncated", pos)
    unscaled = int.from_bytes(value[pos + 2 : end], "little", signed=True)
    return Decimal(unscaled).scaleb(-scale)


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
    return (EPOCH_UTC if aware else EPOCH_NTZ) + _dt.timedelta(microseconds=micros)


def micros_to_time(micros: int) -> _dt.time:
    if not 0 <= micros < 86_400_000_000:
        raise MalformedVariantError(f"time of day {micros} us out of range")
    s, us = divmod(micros, 1_000_000)
    return _dt.time(s // 3600, (s // 60) % 60, s % 60, us)


def primitive_to_python(value: bytes, pos: int) -> Any:
    """Decode the primitive or short string at ``pos`` into a Python value."""
    header = value[pos]
    basic = header & 0x03
    if basic == 1:
        return _text(value, pos + 1, header >> 2)
    t = header >> 2
    if t == 0:
        return None
    if t == 1:
        return True
    if t == 2:
        return False
    if t == 3:
        return struct.unpack_from("<b", value, pos + 1)[0]
    if t == 4:
        return _I16.unpack_from(value, pos + 1)[0]
    if t == 5:
        return _I32.unpack_from(value, pos + 1)[0]
    if t == 6:
        return _I64.unpack_from(value, pos + 1)[0]
    if t == 7:
        return _F64.unpack_from(value, pos + 1)[0]
    if t == 16:
        return _text(value, pos + 5, _U32.unpack_from(value, pos + 1)[0])
    if t == 8:
        return _decimal(value, pos, 4)
    if t == 9:
        return _decimal(value, pos, 8)
    if t == 10:
        return _decimal(value, pos, 16)
    if t == 11:
        return EPOCH_DATE + _dt.timedelta(days=_I32.unpack_from(value, pos + 1)[0])
    if t == 12 or t == 13:
        return micros_to_datetime(_I64.unpack_from(value, pos + 1)[0], t == 12)
    if t == 14:
        return Float32(_F32.unpack_from(value, pos + 1)[0])
    if t == 15:
        return _blob(value, pos + 5, _U32.unpack_from(value, pos + 1)[0])
    if t == 17:
        return micros_to_time(_I64.unpack_from(value, pos + 1)[0])
    if t == 18 or t == 19:
        return TimestampNanos(_I64.unpack_from(value, pos + 1)[0], t == 18)
    if t == 20:
        if pos + 17 > len(value):
            raise MalformedVariantError("uuid truncated", pos)
        return uuid.UUID(bytes=bytes(value[pos + 1 : pos + 17]))
    raise MalformedVariantError(f"unknown primitive type id {t}", pos)


def primitive_int(value: bytes, pos: int) -> int | None:
    """The integer of an int8-int64 value at ``pos``, else None (fast path for casts)."""
    t = value[pos]
    if t == 0x0C:
        return struct.unpack_from("<b", value, pos + 1)[0]
    if t == 0x10:
        return _I16.unpack_from(value, pos + 1)[0]
    if t == 0x14:
        return _I32.unpack_from(value, pos + 1)[0]
    if t == 0x18:
        return _I64.unpack_from(value, pos + 1)[0]
    return None


# --- full decode ---------------------------------------------------------------------------


class Budget:
    """Counts container elements visited; a well-formed value has fewer than it has bytes."""

    __slots__ = ("left",)

    def __init__(self, value: bytes) -> None:
        self.left = len(value) + 1

    def spend(self, n: int, pos: int) -> None:
        self.left -= n + 1
        if self.left < 0:
            raise MalformedVariantError("object/array offsets overlap (value visits more elements than it has bytes)", pos)


def to_python(meta: MetadataView, value: bytes, pos: int = 0, budget: Budget | None = None) -> Any:
    """Decode the whole value at ``pos`` into Python objects (dict, list, primitives)."""
    if budget is None:
        budget = Budget(value)
    basic = value[pos] & 0x03
    if basic == 2:
        entries = object_entries(meta, value, pos)
        budget.spend(len(entries), pos)
        return {k: to_python(meta, value, p, budget) for k, p in entries}
    if basic == 3:
        positions = array_positions(value, pos)
        budget.spend(len(positions), pos)
        return [to_python(meta, value, p, budget) for p in positions]
    return primitive_to_python(value, pos)


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
    strings, decimal scales, element budget, and that the value spans exactly its bytes.
    """
    meta = MetadataView(metadata)
    meta.keys()
    budget = Budget(value)
    end = _validate_at(meta, value, 0, budget)
    if end != len(value):
        raise MalformedVariantError(f"{len(value) - end} trailing bytes after the value", end)


def _validate_at(meta: MetadataView, value: bytes, pos: int, budget: Budget) -> int:
    basic = value[pos] & 0x03
    if basic == 2:
        n, id_size, osz, ids, offs, data = object_layout(value, pos)
        budget.spend(n, pos)
        keys = meta.keys()
        last = read_uint(value, offs + n * osz, osz)
        seen: set[str] = set()
        for i in range(n):
            fid = read_uint(value, ids + i * id_size, id_size)
            if fid >= len(keys):
                raise MalformedVariantError(f"field id {fid} outside a dictionary of {len(keys)}", ids + i * id_size)
            if keys[fid] in seen:
                raise MalformedVariantError(f"duplicate object key {keys[fid]!r}", ids + i * id_size)
            seen.add(keys[fid])
            start = read_uint(value, offs + i * osz, osz)
            if start >= last:
                raise MalformedVariantError(f"field {keys[fid]!r} starts past the object's data", offs + i * osz)
            child_end = _validate_at(meta, value, data + start, budget)
            if child_end > data + last:
                raise MalformedVariantError(f"field {keys[fid]!r} runs past the object's data", data + start)
        return data + last
    if basic == 3:
        n, osz, offs, data = array_layout(value, pos)
        budget.spend(n, pos)
        last = read_uint(value, offs + n * osz, osz)
        for i in range(n):
            start = read_uint(value, offs + i * osz, osz)
            if start >= last:
                raise MalformedVariantError(f"element {i} starts past the array's data", offs + i * osz)
            if _validate_at(meta, value, data + start, budget) > data + last:
                raise MalformedVariantError(f"element {i} runs past the array's data", data + start)
        return data + last
    primitive_to_python(value, pos)
    size = value_size(value, pos)
    if pos + size > len(value):
        raise MalformedVariantError("primitive runs past the end", pos)
    return pos + size
