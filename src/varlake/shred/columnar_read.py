"""The input of the column-at-a-time kernels (``columnar``, ``columnar_stats``): a Variant
column's ``value`` buffer as numpy (``EncodedColumn``: per row its start and end, per
distinct metadata dictionary its keys) and the numpy readers of its headers, unsigned
ids and offsets, signed integers and byte strings at many positions at once.

Input the kernels do not expect raises ``Fallback``; the caller then runs the row path,
which owns the error messages for malformed Variants.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.variant import decoder as dec

__all__ = [
    "DECIMAL_WIDTH",
    "FIXED",
    "I64",
    "INT_DTYPE",
    "INT_WIDTH",
    "PRIMITIVE_SIZE",
    "STRING_IDS",
    "EncodedColumn",
    "Fallback",
    "check",
    "int_size",
    "not_mask",
    "read_bytes",
    "read_signed",
    "read_uint",
    "uniform",
    "validity",
]


class Fallback(Exception):
    """The column holds something the vectorised kernels leave to the row path."""


I64 = np.int64
INT_WIDTH = np.zeros(256, dtype=I64)  # payload bytes of the integer headers (0: not an integer)
INT_WIDTH[0x0C], INT_WIDTH[0x10], INT_WIDTH[0x14], INT_WIDTH[0x18] = 1, 2, 4, 8
PRIMITIVE_SIZE = np.full(64, -1, dtype=I64)  # value size by primitive type id (-1: not fixed)
for _tid, _size in dec._FIXED_SIZES.items():
    PRIMITIVE_SIZE[int(_tid)] = _size
STRING_IDS = (15, 16)  # binary and long string: 4-byte length after the header
DECIMAL_WIDTH = {0x20: 4, 0x24: 8, 0x28: 16}
# (header, payload bytes, numpy dtype of the typed column) of the fixed-width leaves
FIXED: dict[pa.DataType, tuple[int, int, str]] = {
    pa.float64(): (0x1C, 8, "<f8"),
    pa.float32(): (0x38, 4, "<f4"),
    pa.date32(): (0x2C, 4, "<i4"),
    pa.time64("us"): (0x44, 8, "<i8"),
    pa.timestamp("us", tz="UTC"): (0x30, 8, "<i8"),
    pa.timestamp("us"): (0x34, 8, "<i8"),
    pa.timestamp("ns", tz="UTC"): (0x48, 8, "<i8"),
    pa.timestamp("ns"): (0x4C, 8, "<i8"),
}
INT_DTYPE = {8: "<i1", 16: "<i2", 32: "<i4", 64: "<i8"}


def check(ok: np.ndarray | bool) -> None:
    if not np.all(ok):
        raise Fallback


def validity(valid: np.ndarray) -> tuple[pa.Buffer | None, int]:
    nulls = int(len(valid) - np.count_nonzero(valid))
    return (pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None), nulls


def _views(buf: np.ndarray) -> dict[str, np.ndarray]:
    """Unaligned little-endian views of ``buf`` starting at every byte (``view[i]`` reads at ``i``)."""
    out = {}
    for dtype in ("<u2", "<u4", "<i2", "<i4", "<i8"):
        w = int(dtype[2])
        count = max(0, len(buf) - w + 1)
        out[dtype] = np.ndarray((count,), dtype=dtype, buffer=buf, offset=0, strides=(1,)) if count else np.zeros(0, dtype)
    return out


def read_uint(buf: np.ndarray, views: dict[str, np.ndarray], at: np.ndarray, width: np.ndarray | int) -> np.ndarray:
    """Little-endian unsigned ints of 1-4 bytes (per slot or one width) at ``at``."""
    if isinstance(width, (int, np.integer)):
        if width == 1:
            return buf[at].astype(I64)
        if width in (2, 4):
            return views[f"<u{width}"][at].astype(I64)
        return buf[at].astype(I64) | (buf[at + 1].astype(I64) << 8) | (buf[at + 2].astype(I64) << 16)
    v = buf[at].astype(I64)
    for k in range(1, 4):
        m = width > k
        if m.any():
            v[m] |= buf[at[m] + k].astype(I64) << (8 * k)
    return v


def uniform(width: np.ndarray) -> np.ndarray | int:
    if len(width) and width.min() == width.max():
        return int(width[0])
    return width


def read_bytes(buf: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """A ``(len(at), width)`` uint8 matrix of the bytes at ``at``."""
    return buf[at[:, None] + np.arange(width, dtype=I64)]


def read_signed(buf: np.ndarray, views: dict[str, np.ndarray], at: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Little-endian signed ints of 1, 2, 4 or 8 bytes (per slot) at ``at``, as int64."""
    out = np.zeros(len(at), dtype=I64)
    for w in (1, 2, 4, 8):
        m = width == w
        if not m.any():
            continue
        if w == 1:
            out[m] = buf[at[m]].view(np.int8)
        else:
            out[m] = views[f"<i{w}"][at[m]]
    return out


def int_size(values: np.ndarray) -> np.ndarray:
    """``constants.int_size`` per value: bytes (1-4) of an unsigned id/offset."""
    return 1 + (values > 0xFF).astype(I64) + (values > 0xFFFF) + (values > 0xFFFFFF)


class EncodedColumn:
    """The input ``value`` column as numpy, and per distinct metadata dictionary its keys."""

    def __init__(self, values: pa.Array, valid: np.ndarray, codes: np.ndarray, keys: list[list[str]]) -> None:
        offsets = np.frombuffer(values.buffers()[1], dtype=np.int32, count=len(values) + 1 + values.offset)
        offsets = offsets[values.offset :].astype(I64)
        data = values.buffers()[2]
        self.data = data if data is not None else pa.py_buffer(b"")
        self.buf = np.frombuffer(self.data, dtype=np.uint8)
        self.views = _views(self.buf)
        self._rank: np.ndarray | None = None
        self.start = offsets[:-1]
        self.end = offsets[1:]
        self.valid = valid
        self.codes = codes
        self.keys = keys
        all_keys = [k for ks in keys for k in ks]
        self.key_array = pa.array(all_keys, pa.string())
        self.key_base = np.zeros(len(keys) + 1, dtype=I64)
        np.cumsum([len(ks) for ks in keys], out=self.key_base[1:])
        self.num_keys = np.diff(self.key_base)

    def field_index(self, names: list[str]) -> np.ndarray:
        """Per key of every dictionary (``key_base[code] + id``): its index in ``names``, or -1."""
        found = pc.index_in(self.key_array, value_set=pa.array(names, pa.string()))
        return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(I64)

    def key_rank(self) -> np.ndarray:
        """Per key of every dictionary: its dense rank in UTF-8 byte order (equal keys, equal rank)."""
        if self._rank is None:
            m = len(self.key_array)
            order = pc.sort_indices(self.key_array).to_numpy(zero_copy_only=False)
            ordered = self.key_array.take(pa.array(order))
            new = np.ones(m, dtype=I64)
            if m > 1:
                new[1:] = pc.not_equal(ordered.slice(1), ordered.slice(0, m - 1)).to_numpy(zero_copy_only=False)
            rank = np.empty(m, dtype=I64)
            rank[order] = np.cumsum(new) - 1
            self._rank = rank
        return self._rank

    # --- bytes out of the buffer ---------------------------------------------------------

    def row_bytes(self, row: int) -> bytes:
        return self.data[int(self.start[row]) : int(self.end[row])].to_pybytes()

    def gather(self, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
        """A non-null binary array of the byte ranges ``starts[i]:starts[i]+lengths[i]``."""
        m = len(starts)
        if m == 0:
            return pa.array([], pa.binary())
        ends = starts + lengths
        order = None
        if m > 1 and (starts[1:] < ends[:-1]).any():
            order = np.argsort(starts, kind="stable")
            starts, ends = starts[order], ends[order]
            if (starts[1:] < ends[:-1]).any():  # overlapping ranges: copy byte by byte
                lens = ends - starts
                offs = np.zeros(m + 1, dtype=I64)
                np.cumsum(lens, out=offs[1:])
                index = np.repeat(starts - offs[:-1], lens) + np.arange(int(offs[-1]), dtype=I64)
                arr = pa.Array.from_buffers(
                    pa.large_binary(), m, [None, pa.py_buffer(offs), pa.py_buffer(self.buf[index])]
                ).cast(pa.binary())
                return arr.take(pa.array(np.argsort(order, kind="stable"), pa.int64()))
        bounds = np.empty(2 * m, dtype=I64)
        bounds[0::2] = starts
        bounds[1::2] = ends
        large = bounds[-1] > 2**31 - 1
        spans = pa.Array.from_buffers(
            pa.large_binary() if large else pa.binary(),
            2 * m - 1,
            [None, pa.py_buffer(bounds if large else bounds.astype(np.int32)), self.data],
        )
        picked = spans.take(pa.array(np.arange(0, 2 * m, 2, dtype=I64)))
        if large:
            picked = picked.cast(pa.binary())
        if order is not None:
            picked = picked.take(pa.array(np.argsort(order, kind="stable"), pa.int64()))
        return picked

    def sizes(self, p: np.ndarray, end: np.ndarray) -> np.ndarray:
        """``decoder.value_size`` of the values at ``p`` (each inside its row, ending at ``end``)."""
        buf = self.buf
        check(p < end)
        h = buf[p].astype(I64)
        basic = h & 3
        size = np.zeros(len(p), dtype=I64)
        short = basic == 1
        size[short] = 1 + (h[short] >> 2)
        prim = np.flatnonzero(basic == 0)
        if len(prim):
            tid = h[prim] >> 2
            fixed = PRIMITIVE_SIZE[tid]
            long = (tid == STRING_IDS[0]) | (tid == STRING_IDS[1])
            check((fixed >= 0) | long)
            size[prim] = fixed
            lp = prim[long]
            if len(lp):
                check(p[lp] + 5 <= end[lp])
                size[lp] = 5 + read_uint(buf, self.views, p[lp] + 1, 4)
        for kind in (2, 3):
            c = np.flatnonzero(basic == kind)
            if not len(c):
                continue
            if kind == 2:
                count, _, osz, _, offs, data = self.object_heads(p[c], h[c], end[c])
            else:
                count, osz, offs, data = self.array_heads(p[c], h[c], end[c])
            size[c] = data - p[c] + read_uint(buf, self.views, offs + count * osz, osz)
        return size

    def object_heads(self, p: np.ndarray, h: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
        """``decoder.object_layout`` for many objects: count, id size, offset size, ids, offsets, data."""
        osz = ((h >> 2) & 3) + 1
        isz = ((h >> 4) & 3) + 1
        large = (h & 0x40) != 0
        check(p + np.where(large, 5, 2) <= end)
        count = self.buf[p + 1].astype(I64)
        if large.any():
            count[large] = read_uint(self.buf, self.views, p[large] + 1, 4)
        ids = p + np.where(large, 5, 2)
        offs = ids + count * isz
        data = offs + (count + 1) * osz
        check(data <= end)
        return count, isz, osz, ids, offs, data

    def array_heads(self, p: np.ndarray, h: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
        """``decoder.array_layout`` for many arrays: count, offset size, offsets, data."""
        osz = ((h >> 2) & 3) + 1
        large = (h & 0x10) != 0
        check(p + np.where(large, 5, 2) <= end)
        count = self.buf[p + 1].astype(I64)
        if large.any():
            count[large] = read_uint(self.buf, self.views, p[large] + 1, 4)
        offs = p + np.where(large, 5, 2)
        data = offs + (count + 1) * osz
        check(data <= end)
        return count, osz, offs, data


def not_mask(mask: np.ndarray) -> pa.Array:
    return pa.array(~mask, pa.bool_())
