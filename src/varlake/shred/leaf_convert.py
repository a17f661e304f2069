"""Which Variant values a typed leaf holds, and as what: one converter per leaf type.

A converter takes ``(buffer, position)`` of a Variant value and returns the Python value
for the typed column, or ``NO`` when the value does not fit and stays in ``value``
(VariantShredding.md): integers of a narrower width fit wider integer leaves; integers
and decimals of a smaller scale fit a decimal leaf when rescaling loses nothing.
Shredding row by row (``shred``) uses them for every value; the column-at-a-time
kernels (``columnar``) use them for the rare values they leave to Python.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from varlake.errors import ShreddingError
from varlake.shred.schema import UUID_TYPE

_I16 = struct.Struct("<h")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
NO = object()  # "this value does not fit the typed leaf"
_NO = NO

Converter = Callable[[bytes, int], Any]


def _int_converter(bits: int) -> Converter:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def conv(b: bytes, p: int) -> Any:
        h = b[p]
        if h == 0x0C:
            v = b[p + 1]
            return v - 256 if v > 127 else v
        if h == 0x10:
            v = _I16.unpack_from(b, p + 1)[0]
        elif h == 0x14:
            v = _I32.unpack_from(b, p + 1)[0]
        elif h == 0x18:
            v = _I64.unpack_from(b, p + 1)[0]
        else:
            return _NO
        return v if lo <= v <= hi else _NO

    return conv


def _fixed_converter(header: int, unpacker: struct.Struct) -> Converter:
    def conv(b: bytes, p: int) -> Any:
        return unpacker.unpack_from(b, p + 1)[0] if b[p] == header else _NO

    return conv


def _bool(b: bytes, p: int) -> Any:
    h = b[p]
    return True if h == 0x04 else False if h == 0x08 else _NO


def _string(b: bytes, p: int) -> Any:
    h = b[p]
    if h & 0x03 == 1:
        return b[p + 1 : p + 1 + (h >> 2)].decode("utf-8")
    if h == 0x40:
        n = _U32.unpack_from(b, p + 1)[0]
        return b[p + 5 : p + 5 + n].decode("utf-8")
    return _NO


def _binary(b: bytes, p: int) -> Any:
    if b[p] == 0x3C:
        n = _U32.unpack_from(b, p + 1)[0]
        return b[p + 5 : p + 5 + n]
    return _NO


def _uuid(b: bytes, p: int) -> Any:
    return b[p + 1 : p + 17] if b[p] == 0x50 else _NO


def _decimal_converter(precision: int, scale: int) -> Converter:
    """Decimals of scale <= ``scale`` and integers, rescaled when that loses nothing (as
    Spark does with numeric scale changes allowed); they read back logically equal."""
    limit = 10**precision
    widths = {0x20: 4, 0x24: 8, 0x28: 16}
    pow10 = [10**k for k in range(scale + 1)]
    int_conv = _int_converter(64)

    def conv(b: bytes, p: int) -> Any:
        width = widths.get(b[p])
        if width is None:
            v = int_conv(b, p)
            if v is _NO:
                return _NO
            unscaled = v * pow10[scale]
        else:
            s = b[p + 1]
            if s > scale:
                return _NO
            unscaled = int.from_bytes(b[p + 2 : p + 2 + width], "little", signed=True) * pow10[scale - s]
        return unscaled if -limit < unscaled < limit else _NO

    return conv


def leaf_converter(t: pa.DataType) -> Converter:
    """The converter deciding which Variant values a typed leaf of type ``t`` holds."""
    if pa.types.is_integer(t):
        return _int_converter(t.bit_width)
    if pa.types.is_decimal(t):
        return _decimal_converter(t.precision, t.scale)
    if t == UUID_TYPE:
        return _uuid
    simple: dict[pa.DataType, Converter] = {
        pa.bool_(): _bool,
        pa.string(): _string,
        pa.binary(): _binary,
        pa.float64(): _fixed_converter(0x1C, _F64),
        pa.float32(): _fixed_converter(0x38, _F32),
        pa.date32(): _fixed_converter(0x2C, _I32),
        pa.time64("us"): _fixed_converter(0x44, _I64),
        pa.timestamp("us", tz="UTC"): _fixed_converter(0x30, _I64),
        pa.timestamp("us"): _fixed_converter(0x34, _I64),
        pa.timestamp("ns", tz="UTC"): _fixed_converter(0x48, _I64),
        pa.timestamp("ns"): _fixed_converter(0x4C, _I64),
    }
    conv = simple.get(t)
    if conv is None:
        raise ShreddingError(f"no shredding for leaf type {t}")
    return conv
