"""Spark 4.3's ``is_valid_variant``: the checks Spark's ``VariantUtil.isValidVariant`` makes, no more.

Spark calls a Variant valid when the metadata header has version 1 and every value reachable
from the root can be read: a known type id (Spark 4.3 does not know TIME or the nanosecond
timestamps, ids 17-19), all bytes of each primitive in bounds, decimals within their
precision and scale (4: 9, 8: 18, 16: 38), each object field's key id inside the dictionary
with in-bounds, ordered key offsets, container sizes, ids and offsets in bounds (Java int
arithmetic). It does not check key order or uniqueness, the sorted flag, UTF-8, trailing
bytes or that offsets are increasing; varlake's own ``Variant.validate`` is stricter.

The walk is iterative and visits each position once (offsets may share children), so no
input, however deep or self-overlapping, can exhaust the stack or loop for long.
"""

from __future__ import annotations

from varlake.errors import MalformedVariantError
from varlake.variant.spark_reader import (
    SHORT_STR,
    KeyReader,
    array_layout,
    check_index,
    i32,
    object_layout,
    read_unsigned,
    type_name,
)
from varlake.variant.value import Variant

__all__ = ["is_valid_variant", "is_valid_variant_bytes"]

_LONG_WIDTH = {3: 1, 4: 2, 5: 4, 6: 8, 11: 4, 12: 8, 13: 8}
_DECIMAL = {8: (4, 9), 9: (8, 18), 10: (16, 38)}


def is_valid_variant(v: Variant | tuple[bytes, bytes] | None) -> bool | None:
    """Spark's ``is_valid_variant(v)``: True when Spark can read the whole value, False when it is
    malformed, None for None. ``v`` is a ``Variant`` (e.g. ``Variant.trusted`` over untrusted
    bytes) or a ``(metadata, value)`` pair of raw bytes."""
    if v is None:
        return None
    if isinstance(v, Variant):
        return is_valid_variant_bytes(v.metadata, v.value)
    metadata, value = v
    return is_valid_variant_bytes(bytes(metadata), bytes(value))


def is_valid_variant_bytes(metadata: bytes, value: bytes) -> bool:
    """``is_valid_variant`` over raw ``metadata`` and ``value`` bytes."""
    if len(metadata) < 1 or (metadata[0] & 0x0F) != 1:
        return False
    try:
        _walk(metadata, value)
    except MalformedVariantError:  # also UnknownVariantTypeError
        return False
    return True


def _walk(metadata: bytes, value: bytes) -> None:
    keys = KeyReader(metadata)
    length = len(value)
    seen: set[int] = set()
    todo = [0]
    while todo:
        pos = todo.pop()
        if pos in seen:
            continue
        seen.add(pos)
        kind = type_name(value, pos)  # bounds and known type id
        if kind == "object":
            size, isz, osz, ids, offs, data = object_layout(value, pos)
            for i in range(size):
                fid = read_unsigned(value, i32(ids + isz * i), isz)
                off = read_unsigned(value, i32(offs + osz * i), osz)
                keys.key(fid)
                todo.append(i32(data + off))
        elif kind == "array":
            size, osz, offs, data = array_layout(value, pos)
            for i in range(size):
                todo.append(i32(data + read_unsigned(value, i32(offs + osz * i), osz)))
        else:
            _primitive(value, pos, length)


def _primitive(value: bytes, pos: int, length: int) -> None:
    header = value[pos]
    if header & 0x03 == SHORT_STR:
        check_index(pos + (header >> 2), length)  # start + length - 1
        return
    info = header >> 2
    width = _LONG_WIDTH.get(info)
    if width is not None:
        check_index(pos + 1, length)
        check_index(pos + width, length)
    elif info in (7, 14):  # double, float
        check_index(pos + 1, length)
        check_index(pos + (8 if info == 7 else 4), length)
    elif info in _DECIMAL:
        size, digits = _DECIMAL[info]
        check_index(pos + 1, length)
        scale = value[pos + 1]
        check_index(pos + 2, length)
        check_index(pos + 1 + size, length)
        unscaled = int.from_bytes(value[pos + 2 : pos + 2 + size], "little", signed=True)
        if len(str(abs(unscaled))) > digits or scale > digits:
            raise MalformedVariantError("[MALFORMED_VARIANT] decimal out of range", pos)
    elif info in (15, 16):  # binary, long string
        n = read_unsigned(value, pos + 1, 4)
        check_index(i32(pos + 5 + n - 1), length)
    elif info == 20:  # uuid
        check_index(pos + 16, length)
    # null and booleans need only the header byte (checked by type_name)
