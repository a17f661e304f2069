"""Shredding column-at-a-time: the row path's result (``shred.shred_rows``) built with numpy and Arrow.

Every schema level works on *positions*: per slot, the offset of its sub-value in the
data buffer of the input ``value`` column (-1 = missing) and the input row it belongs
to. Headers, field ids, offsets and fixed-width payloads are read with numpy gathers;
strings and the bytes of values that stay in ``value`` are cut out of the data buffer
by one Arrow ``take``. Only objects with fields outside the schema (a residual object)
are rebuilt row by row, with the codec's own ``encode_object``, and decimals too wide
for int64 arithmetic go through the row path's converter.

The result equals the row path's, value for value and byte for byte. Input the kernels
do not expect -- bytes past the end of a row, unknown type ids, a field twice in one
object, field ids outside the dictionary, invalid UTF-8 or metadata -- raises
``Fallback``; the caller then runs the row path, which stays the reference and owns
the error messages for malformed Variants.

``collect_columnar`` computes schema inference's path statistics (``infer.collect``)
the same way, equal to the row-by-row collector's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.shred.leaf_convert import NO, leaf_converter
from varlake.shred.schema import UUID_TYPE
from varlake.shred.variant_arrays import put_uint
from varlake.variant import decoder as dec
from varlake.variant.encoder import encode_object

__all__ = ["Fallback", "shred_columnar"]


class Fallback(Exception):
    """The column holds something the vectorised kernels leave to the row path."""


_I64 = np.int64
_INT_WIDTH = np.zeros(256, dtype=_I64)  # payload bytes of the integer headers (0: not an integer)
_INT_WIDTH[0x0C], _INT_WIDTH[0x10], _INT_WIDTH[0x14], _INT_WIDTH[0x18] = 1, 2, 4, 8
_PRIMITIVE_SIZE = np.full(64, -1, dtype=_I64)  # value size by primitive type id (-1: not fixed)
for _tid, _size in dec._FIXED_SIZES.items():
    _PRIMITIVE_SIZE[int(_tid)] = _size
_STRING_IDS = (15, 16)  # binary and long string: 4-byte length after the header
_DECIMAL_WIDTH = {0x20: 4, 0x24: 8, 0x28: 16}
# (header, payload bytes, numpy dtype of the typed column) of the fixed-width leaves
_FIXED: dict[pa.DataType, tuple[int, int, str]] = {
    pa.float64(): (0x1C, 8, "<f8"),
    pa.float32(): (0x38, 4, "<f4"),
    pa.date32(): (0x2C, 4, "<i4"),
    pa.time64("us"): (0x44, 8, "<i8"),
    pa.timestamp("us", tz="UTC"): (0x30, 8, "<i8"),
    pa.timestamp("us"): (0x34, 8, "<i8"),
    pa.timestamp("ns", tz="UTC"): (0x48, 8, "<i8"),
    pa.timestamp("ns"): (0x4C, 8, "<i8"),
}
_INT_DTYPE = {8: "<i1", 16: "<i2", 32: "<i4", 64: "<i8"}


def _check(ok: np.ndarray | bool) -> None:
    if not np.all(ok):
        raise Fallback


def _validity(valid: np.ndarray) -> tuple[pa.Buffer | None, int]:
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


def _read_uint(buf: np.ndarray, views: dict[str, np.ndarray], at: np.ndarray, width: np.ndarray | int) -> np.ndarray:
    """Little-endian unsigned ints of 1-4 bytes (per slot or one width) at ``at``."""
    if isinstance(width, (int, np.integer)):
        if width == 1:
            return buf[at].astype(_I64)
        if width in (2, 4):
            return views[f"<u{width}"][at].astype(_I64)
        return buf[at].astype(_I64) | (buf[at + 1].astype(_I64) << 8) | (buf[at + 2].astype(_I64) << 16)
    v = buf[at].astype(_I64)
    for k in range(1, 4):
        m = width > k
        if m.any():
            v[m] |= buf[at[m] + k].astype(_I64) << (8 * k)
    return v


def _uniform(width: np.ndarray) -> np.ndarray | int:
    if len(width) and width.min() == width.max():
        return int(width[0])
    return width


def _read_bytes(buf: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """A ``(len(at), width)`` uint8 matrix of the bytes at ``at``."""
    return buf[at[:, None] + np.arange(width, dtype=_I64)]


def _read_signed(buf: np.ndarray, views: dict[str, np.ndarray], at: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Little-endian signed ints of 1, 2, 4 or 8 bytes (per slot) at ``at``, as int64."""
    out = np.zeros(len(at), dtype=_I64)
    for w in (1, 2, 4, 8):
        m = width == w
        if not m.any():
            continue
        if w == 1:
            out[m] = buf[at[m]].view(np.int8)
        else:
            out[m] = views[f"<i{w}"][at[m]]
    return out


def _int_size(values: np.ndarray) -> np.ndarray:
    """``constants.int_size`` per value: bytes (1-4) of an unsigned id/offset."""
    return 1 + (values > 0xFF).astype(_I64) + (values > 0xFFFF) + (values > 0xFFFFFF)


@dataclass
class _Slots:
    """Sub-values of one schema level: absolute position (-1 = missing) and input row per slot."""

    pos: np.ndarray
    row: np.ndarray
    top: bool = False


class _Column:
    """The input ``value`` column as numpy, and per distinct metadata dictionary its keys."""

    def __init__(self, values: pa.Array, valid: np.ndarray, codes: np.ndarray, keys: list[list[str]]) -> None:
        offsets = np.frombuffer(values.buffers()[1], dtype=np.int32, count=len(values) + 1 + values.offset)
        offsets = offsets[values.offset :].astype(_I64)
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
        self.key_base = np.zeros(len(keys) + 1, dtype=_I64)
        np.cumsum([len(ks) for ks in keys], out=self.key_base[1:])
        self.num_keys = np.diff(self.key_base)

    def field_index(self, names: list[str]) -> np.ndarray:
        """Per key of every dictionary (``key_base[code] + id``): its index in ``names``, or -1."""
        found = pc.index_in(self.key_array, value_set=pa.array(names, pa.string()))
        return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(_I64)

    def key_rank(self) -> np.ndarray:
        """Per key of every dictionary: its dense rank in UTF-8 byte order (equal keys, equal rank)."""
        if self._rank is None:
            m = len(self.key_array)
            order = pc.sort_indices(self.key_array).to_numpy(zero_copy_only=False)
            ordered = self.key_array.take(pa.array(order))
            new = np.ones(m, dtype=_I64)
            if m > 1:
                new[1:] = pc.not_equal(ordered.slice(1), ordered.slice(0, m - 1)).to_numpy(zero_copy_only=False)
            rank = np.empty(m, dtype=_I64)
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
                offs = np.zeros(m + 1, dtype=_I64)
                np.cumsum(lens, out=offs[1:])
                index = np.repeat(starts - offs[:-1], lens) + np.arange(int(offs[-1]), dtype=_I64)
                arr = pa.Array.from_buffers(
                    pa.large_binary(), m, [None, pa.py_buffer(offs), pa.py_buffer(self.buf[index])]
                ).cast(pa.binary())
                return arr.take(pa.array(np.argsort(order, kind="stable"), pa.int64()))
        bounds = np.empty(2 * m, dtype=_I64)
        bounds[0::2] = starts
        bounds[1::2] = ends
        large = bounds[-1] > 2**31 - 1
        spans = pa.Array.from_buffers(
            pa.large_binary() if large else pa.binary(),
            2 * m - 1,
            [None, pa.py_buffer(bounds if large else bounds.astype(np.int32)), self.data],
        )
        picked = spans.take(pa.array(np.arange(0, 2 * m, 2, dtype=_I64)))
        if large:
            picked = picked.cast(pa.binary())
        if order is not None:
            picked = picked.take(pa.array(np.argsort(order, kind="stable"), pa.int64()))
        return picked

    def sizes(self, p: np.ndarray, end: np.ndarray) -> np.ndarray:
        """``decoder.value_size`` of the values at ``p`` (each inside its row, ending at ``end``)."""
        buf = self.buf
        _check(p < end)
        h = buf[p].astype(_I64)
        basic = h & 3
        size = np.zeros(len(p), dtype=_I64)
        short = basic == 1
        size[short] = 1 + (h[short] >> 2)
        prim = np.flatnonzero(basic == 0)
        if len(prim):
            tid = h[prim] >> 2
            fixed = _PRIMITIVE_SIZE[tid]
            long = (tid == _STRING_IDS[0]) | (tid == _STRING_IDS[1])
            _check((fixed >= 0) | long)
            size[prim] = fixed
            lp = prim[long]
            if len(lp):
                _check(p[lp] + 5 <= end[lp])
                size[lp] = 5 + _read_uint(buf, self.views, p[lp] + 1, 4)
        for kind in (2, 3):
            c = np.flatnonzero(basic == kind)
            if not len(c):
                continue
            if kind == 2:
                count, _, osz, _, offs, data = self.object_heads(p[c], h[c], end[c])
            else:
                count, osz, offs, data = self.array_heads(p[c], h[c], end[c])
            size[c] = data - p[c] + _read_uint(buf, self.views, offs + count * osz, osz)
        return size

    def object_heads(self, p: np.ndarray, h: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
        """``decoder.object_layout`` for many objects: count, id size, offset size, ids, offsets, data."""
        osz = ((h >> 2) & 3) + 1
        isz = ((h >> 4) & 3) + 1
        large = (h & 0x40) != 0
        _check(p + np.where(large, 5, 2) <= end)
        count = self.buf[p + 1].astype(_I64)
        if large.any():
            count[large] = _read_uint(self.buf, self.views, p[large] + 1, 4)
        ids = p + np.where(large, 5, 2)
        offs = ids + count * isz
        data = offs + (count + 1) * osz
        _check(data <= end)
        return count, isz, osz, ids, offs, data

    def array_heads(self, p: np.ndarray, h: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
        """``decoder.array_layout`` for many arrays: count, offset size, offsets, data."""
        osz = ((h >> 2) & 3) + 1
        large = (h & 0x10) != 0
        _check(p + np.where(large, 5, 2) <= end)
        count = self.buf[p + 1].astype(_I64)
        if large.any():
            count[large] = _read_uint(self.buf, self.views, p[large] + 1, 4)
        offs = p + np.where(large, 5, 2)
        data = offs + (count + 1) * osz
        _check(data <= end)
        return count, osz, offs, data


def _spread(n: int, slots: np.ndarray, values: pa.Array) -> pa.Array:
    """A binary array of ``n`` slots: ``values`` at ``slots`` (ascending), null elsewhere."""
    if len(slots) == 0:
        return pa.nulls(n, pa.binary())
    offs = np.frombuffer(values.buffers()[1], dtype=np.int32, count=len(values) + 1 + values.offset)[values.offset :]
    lengths = np.zeros(n, dtype=_I64)
    lengths[slots] = np.diff(offs.astype(_I64))
    out = np.empty(n + 1, dtype=np.int32)
    out[0] = offs[0]
    np.cumsum(lengths, out=out[1:])
    out[1:] += offs[0]
    valid = np.zeros(n, dtype=bool)
    valid[slots] = True
    vbuf, nulls = _validity(valid)
    data = values.buffers()[2] if values.buffers()[2] is not None else pa.py_buffer(b"")
    return pa.Array.from_buffers(pa.binary(), n, [vbuf, pa.py_buffer(out), data], nulls)


def _combine(n: int, pieces: list[tuple[np.ndarray, pa.Array]]) -> pa.Array:
    """One binary array of ``n`` slots from disjoint ``(slots, values)`` pieces, null elsewhere."""
    if not pieces:
        return pa.nulls(n, pa.binary())
    if len(pieces) == 1:
        return _spread(n, *pieces[0])
    slots = np.concatenate([sl for sl, _ in pieces])
    order = np.argsort(slots, kind="stable")
    merged = pa.concat_arrays([v for _, v in pieces]).take(pa.array(order, pa.int64()))
    return _spread(n, slots[order], merged)


def _group(value: pa.Array, typed_value: pa.Array) -> pa.StructArray:
    return pa.StructArray.from_arrays(
        [value, typed_value], fields=[pa.field("value", pa.binary()), pa.field("typed_value", typed_value.type)]
    )


def _not(mask: np.ndarray) -> pa.Array:
    return pa.array(~mask, pa.bool_())


class _Shredder:
    def __init__(self, col: _Column) -> None:
        self.col = col

    def level(self, t: pa.DataType, s: _Slots) -> tuple[pa.Array, pa.Array]:
        if pa.types.is_struct(t):
            return self.object(t, s)
        if pa.types.is_list(t):
            return self.array(t, s)
        return self.leaf(t, s)

    # --- residual bytes ---------------------------------------------------------------------

    def raw(self, s: _Slots, slots: np.ndarray) -> pa.Array:
        """The stored bytes of the values at ``slots`` (a top-level value is its whole row)."""
        col = self.col
        rows = s.row[slots]
        if s.top:
            return col.gather(col.start[rows], col.end[rows] - col.start[rows])
        p = s.pos[slots]
        end = col.end[rows]
        size = col.sizes(p, end)
        _check(p + size <= end)
        return col.gather(p, size)

    def present(self, s: _Slots) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Slots holding a value, their positions, row ends and header bytes."""
        idx = np.flatnonzero(s.pos >= 0)
        p = s.pos[idx]
        end = self.col.end[s.row[idx]]
        _check(p < end)
        return idx, p, end, self.col.buf[p].astype(_I64)

    # --- leaves ----------------------------------------------------------------------------------

    def leaf(self, t: pa.DataType, s: _Slots) -> tuple[pa.Array, pa.Array]:
        n = len(s.pos)
        idx, p, end, h = self.present(s)
        fit, typed = self.typed_leaf(t, n, idx, p, end, h, s)
        rest = idx[~fit]
        value = _spread(n, rest, self.raw(s, rest)) if len(rest) else pa.nulls(n, pa.binary())
        return value, typed

    def typed_leaf(
        self, t: pa.DataType, n: int, idx: np.ndarray, p: np.ndarray, end: np.ndarray, h: np.ndarray, s: _Slots
    ) -> tuple[np.ndarray, pa.Array]:
        buf = self.col.buf
        if pa.types.is_integer(t):
            width = _INT_WIDTH[h]
            isint = width > 0
            _check(~isint | (p + 1 + width <= end))
            v = _read_signed(buf, self.col.views, p + 1, width)
            lo, hi = -(1 << (t.bit_width - 1)), (1 << (t.bit_width - 1)) - 1
            fit = isint & (v >= lo) & (v <= hi)
            return fit, _numeric(t, n, idx[fit], v[fit].astype(_INT_DTYPE[t.bit_width]))
        if t == pa.bool_():
            fit = (h == 0x04) | (h == 0x08)
            full = np.zeros(n, dtype=bool)
            full[idx[fit]] = h[fit] == 0x04
            valid = np.zeros(n, dtype=bool)
            valid[idx[fit]] = True
            vbuf, nulls = _validity(valid)
            return fit, pa.Array.from_buffers(pa.bool_(), n, [vbuf, pa.py_buffer(np.packbits(full, bitorder="little"))], nulls)
        if t in _FIXED:
            header, width, dtype = _FIXED[t]
            fit = h == header
            _check(p[fit] + 1 + width <= end[fit])
            vals = self.col.views[f"<i{width}"][p[fit] + 1].view(dtype)
            if dtype == "<f4":  # the row path goes through a Python float (a double) and back
                with np.errstate(invalid="ignore"):
                    vals = vals.astype(np.float64).astype(np.float32)
            return fit, _numeric(t, n, idx[fit], vals)
        if t == pa.string() or t == pa.binary():
            if t == pa.string():
                short = (h & 3) == 1
                long = h == 0x40
            else:
                short = np.zeros(len(h), dtype=bool)
                long = h == 0x3C
            fit = short | long
            _check(p[long] + 5 <= end[long])
            length = np.where(short, h >> 2, 0)
            length[long] = _read_uint(buf, self.col.views, p[long] + 1, 4)
            start = p + np.where(short, 1, 5)
            _check(start[fit] + length[fit] <= end[fit])
            typed = _spread(n, idx[fit], self.col.gather(start[fit], length[fit]))
            if t == pa.string():
                try:
                    typed = typed.cast(pa.string())
                except (pa.ArrowInvalid, pa.ArrowException):
                    raise Fallback from None
            return fit, typed
        if t == UUID_TYPE:
            fit = h == 0x50
            _check(p[fit] + 17 <= end[fit])
            full = np.zeros((n, 16), dtype=np.uint8)
            full[idx[fit]] = _read_bytes(buf, p[fit] + 1, 16)
            valid = np.zeros(n, dtype=bool)
            valid[idx[fit]] = True
            vbuf, nulls = _validity(valid)
            storage = pa.Array.from_buffers(pa.binary(16), n, [vbuf, pa.py_buffer(full)], nulls)
            return fit, pa.ExtensionArray.from_storage(UUID_TYPE, storage)
        if pa.types.is_decimal(t):
            return self.decimal_leaf(t, n, idx, p, end, h, s)
        raise Fallback

    def decimal_leaf(
        self, t: pa.DataType, n: int, idx: np.ndarray, p: np.ndarray, end: np.ndarray, h: np.ndarray, s: _Slots
    ) -> tuple[np.ndarray, pa.Array]:
        buf = self.col.buf
        precision, scale = t.precision, t.scale
        int_width = _INT_WIDTH[h]
        isint = int_width > 0
        dec_width = np.zeros(len(h), dtype=_I64)
        for header, w in _DECIMAL_WIDTH.items():
            dec_width[h == header] = w
        isdec = dec_width > 0
        _check(~isint | (p + 1 + int_width <= end))
        _check(~isdec | (p + 2 <= end))
        src_scale = np.zeros(len(h), dtype=_I64)
        src_scale[isdec] = buf[p[isdec] + 1]
        isdec &= src_scale <= scale
        _check(~isdec | (p + 2 + dec_width <= end))
        unscaled = np.zeros(len(h), dtype=_I64)
        unscaled[isint] = _read_signed(buf, self.col.views, p[isint] + 1, int_width[isint])
        narrow = isdec & (dec_width <= 8)
        unscaled[narrow] = _read_signed(buf, self.col.views, p[narrow] + 2, dec_width[narrow])
        shift = np.where(isdec, scale - src_scale, scale)
        # int64 arithmetic is exact where |unscaled| * 10**shift stays below 2**63
        room = np.array([(2**63 - 1) // 10**k if k <= 18 else 0 for k in range(39)], dtype=_I64)
        exact = (isint | narrow) & (np.abs(unscaled) <= room[shift]) & (unscaled != np.iinfo(_I64).min)
        exact |= (isint | narrow) & (unscaled == 0)
        pow10 = np.array([10**k if k <= 18 else 0 for k in range(39)], dtype=_I64)
        value = np.where(exact, unscaled * np.where(exact, pow10[np.minimum(shift, 18)], 0), 0)
        if precision <= 18:
            fit = exact & (np.abs(value) < 10**precision)
        else:
            fit = exact.copy()
        lo = value
        hi = np.where(value < 0, -1, 0).astype(_I64)
        python = np.flatnonzero((isint | isdec) & ~exact)
        full = np.zeros((n, 2), dtype=_I64)
        if len(python):  # decimal16 values and rescalings past int64: the row path's converter
            conv = leaf_converter(t)
            col = self.col
            extra = []
            for k in python:
                r = int(s.row[idx[k]])
                base = int(col.start[r])
                u = conv(col.row_bytes(r), int(p[k]) - base)
                if u is not NO:
                    fit[k] = True
                    extra.append((k, u))
            for k, u in extra:
                full[idx[k]] = np.frombuffer(u.to_bytes(16, "little", signed=True), dtype=_I64)
        direct = fit.copy()
        direct[python] = False
        full[idx[direct], 0] = lo[direct]
        full[idx[direct], 1] = hi[direct]
        valid = np.zeros(n, dtype=bool)
        valid[idx[fit]] = True
        vbuf, nulls = _validity(valid)
        return fit, pa.Array.from_buffers(t, n, [vbuf, pa.py_buffer(full)], nulls)

    # --- containers ---------------------------------------------------------------------------------

    def object(self, t: pa.StructType, s: _Slots) -> tuple[pa.Array, pa.Array]:
        col = self.col
        n = len(s.pos)
        k = t.num_fields
        names = [t.field(j).name for j in range(k)]
        idx, p, end, h = self.present(s)
        isobj = (h & 3) == 2
        oi = idx[isobj]
        count, isz, osz, ids, offs, data = col.object_heads(p[isobj], h[isobj], end[isobj])
        total = int(count.sum())
        entry_obj = np.repeat(np.arange(len(oi), dtype=_I64), count)
        first = np.zeros(len(oi), dtype=_I64)
        if len(oi):
            np.cumsum(count[:-1], out=first[1:])
        along = np.arange(total, dtype=_I64)
        e_isz, e_osz = _uniform(isz), _uniform(osz)
        if isinstance(e_isz, int):
            id_at = np.repeat(ids - first * e_isz, count) + along * e_isz
        else:
            e_isz = e_isz[entry_obj]
            id_at = ids[entry_obj] + (along - first[entry_obj]) * e_isz
        if isinstance(e_osz, int):
            off_at = np.repeat(offs - first * e_osz, count) + along * e_osz
        else:
            e_osz = e_osz[entry_obj]
            off_at = offs[entry_obj] + (along - first[entry_obj]) * e_osz
        fid = _read_uint(col.buf, col.views, id_at, e_isz)
        child_pos = np.repeat(data, count) + _read_uint(col.buf, col.views, off_at, e_osz)
        rows = s.row[oi]
        if len(col.keys) == 1:
            _check(fid < col.num_keys[0])
            key_at = fid
        else:
            code = np.repeat(col.codes[rows], count)
            _check(fid < col.num_keys[code])
            key_at = col.key_base[code] + fid
        j = col.field_index(names)[key_at]
        shredded = j >= 0
        child = np.full(k * n, -1, dtype=_I64)
        written = np.repeat(oi, count)[shredded] + j[shredded] * n
        child[written] = child_pos[shredded]
        _check(np.count_nonzero(child >= 0) == len(written))  # no field twice in one object
        # value: non-objects as stored, objects with unshredded fields as a residual object
        pieces: list[tuple[np.ndarray, pa.Array]] = []
        if (~isobj).any():
            pieces.append((idx[~isobj], self.raw(s, idx[~isobj])))
        if not shredded.all():
            pieces.extend(self.residuals(np.flatnonzero(~shredded), entry_obj, fid, key_at, child_pos, oi, s))
        value = _combine(n, pieces)
        groups = []
        for jj, name in enumerate(names):
            v, tv = self.level(t.field(jj).type, _Slots(child[jj * n : (jj + 1) * n], s.row))
            groups.append(_group(v, tv))
        isobj_full = np.zeros(n, dtype=bool)
        isobj_full[oi] = True
        typed = pa.StructArray.from_arrays(
            groups,
            fields=[pa.field(name, g.type, nullable=False) for name, g in zip(names, groups)],
            mask=_not(isobj_full),
        )
        return value, typed

    def residuals(
        self,
        entries: np.ndarray,
        entry_obj: np.ndarray,
        fid: np.ndarray,
        key_at: np.ndarray,
        child_pos: np.ndarray,
        oi: np.ndarray,
        s: _Slots,
    ) -> list[tuple[np.ndarray, pa.Array]]:
        """Residual objects (the fields outside the schema, in stored order) of the objects
        that have any, as ``(slots, encoded)`` pieces: ``encode_object``'s bytes, built a
        column at a time when the fields' keys ascend (always, in valid Variants), else row by row."""
        col = self.col
        obj = entry_obj[entries]
        rank = col.key_rank()[key_at[entries]]
        same = obj[1:] == obj[:-1]
        unordered = np.unique(obj[1:][same & (rank[1:] <= rank[:-1])])
        pieces = []
        if len(unordered):
            slow = np.isin(obj, unordered)
            pieces.append(self.residuals_by_row(entries[slow], entry_obj, fid, child_pos, oi, s))
            entries, obj = entries[~slow], obj[~slow]
        if not len(entries):
            return pieces
        objs, starts, cnt = np.unique(obj, return_index=True, return_counts=True)
        at = child_pos[entries]
        end = col.end[s.row[oi[obj]]]
        size = col.sizes(at, end)
        _check(at + size <= end)
        values = col.gather(at, size)
        ids = fid[entries]
        csum = np.zeros(len(entries) + 1, dtype=_I64)
        np.cumsum(size, out=csum[1:])
        data_size = csum[starts + cnt] - csum[starts]
        osz = _int_size(data_size)
        isz = _int_size(np.maximum.reduceat(ids, starts))
        large = cnt > 0xFF
        cb = np.where(large, 4, 1)
        hlen = 1 + cb + cnt * isz + (cnt + 1) * osz
        hoff = np.zeros(len(objs) + 1, dtype=_I64)
        np.cumsum(hlen, out=hoff[1:])
        head = np.zeros(int(hoff[-1]), dtype=np.uint8)
        h0 = hoff[:-1]
        head[h0] = 0x02 | ((osz - 1) << 2) | ((isz - 1) << 4) | (large.astype(_I64) << 6)
        put_uint(head, h0 + 1, cnt, cb)
        e_obj = np.repeat(np.arange(len(objs), dtype=_I64), cnt)
        nth = np.arange(len(entries), dtype=_I64) - starts[e_obj]
        ids_at = h0 + 1 + cb
        offs_at = ids_at + cnt * isz
        put_uint(head, ids_at[e_obj] + nth * isz[e_obj], ids, isz[e_obj])
        put_uint(head, offs_at[e_obj] + nth * osz[e_obj], csum[:-1] - csum[starts][e_obj], osz[e_obj])
        put_uint(head, offs_at + cnt * osz, data_size, osz)
        headers = pa.Array.from_buffers(pa.binary(), len(objs), [None, pa.py_buffer(hoff.astype(np.int32)), pa.py_buffer(head)])
        voffs = np.frombuffer(values.buffers()[1], dtype=np.int32, count=len(values) + 1 + values.offset)[values.offset :]
        bounds = np.append(starts, len(entries))
        vdata = values.buffers()[2] if values.buffers()[2] is not None else pa.py_buffer(b"")
        grouped = pa.Array.from_buffers(pa.binary(), len(objs), [None, pa.py_buffer(np.ascontiguousarray(voffs[bounds])), vdata])
        pieces.append((oi[objs], pc.binary_join_element_wise(headers, grouped, b"")))
        return pieces

    def residuals_by_row(
        self, entries: np.ndarray, entry_obj: np.ndarray, fid: np.ndarray, child_pos: np.ndarray, oi: np.ndarray, s: _Slots
    ) -> tuple[np.ndarray, pa.Array]:
        """Residual objects through the codec, one row at a time (keys not in ascending order)."""
        col = self.col
        objs, starts = np.unique(entry_obj[entries], return_index=True)
        bounds = list(starts) + [len(entries)]
        out = []
        for i, o in enumerate(objs):
            r = int(s.row[oi[o]])
            b = col.row_bytes(r)
            base = int(col.start[r])
            keys = col.keys[col.codes[r]]
            fields = []
            try:
                for e in entries[bounds[i] : bounds[i + 1]]:
                    f = int(fid[e])
                    cp = int(child_pos[e]) - base
                    fields.append((keys[f], f, b[cp : cp + dec.value_size(b, cp)]))
                out.append(encode_object(fields))
            except Exception:  # noqa: BLE001 - whatever it is, the row path reports it
                raise Fallback from None
        return oi[objs], pa.array(out, pa.binary())

    def array(self, t: pa.ListType, s: _Slots) -> tuple[pa.Array, pa.Array]:
        col = self.col
        n = len(s.pos)
        idx, p, end, h = self.present(s)
        isarr = (h & 3) == 3
        ai = idx[isarr]
        count, osz, offs, data = col.array_heads(p[isarr], h[isarr], end[isarr])
        total = int(count.sum())
        _check(total < 2**31)
        entry_arr = np.repeat(np.arange(len(ai), dtype=_I64), count)
        first = np.zeros(len(ai), dtype=_I64)
        if len(ai):
            np.cumsum(count[:-1], out=first[1:])
        nth = np.arange(total, dtype=_I64) - first[entry_arr]
        e_osz = _uniform(osz)
        e_osz = e_osz if isinstance(e_osz, int) else e_osz[entry_arr]
        epos = data[entry_arr] + _read_uint(col.buf, col.views, offs[entry_arr] + nth * e_osz, e_osz)
        ev, etv = self.level(t.value_type, _Slots(epos, s.row[ai][entry_arr]))
        element = _group(ev, etv)
        counts = np.zeros(n, dtype=_I64)
        counts[ai] = count
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        isarr_full = np.zeros(n, dtype=bool)
        isarr_full[ai] = True
        list_type = pa.list_(pa.field("element", element.type, nullable=False))
        typed = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), element, type=list_type, mask=_not(isarr_full))
        rest = idx[~isarr]
        value = _spread(n, rest, self.raw(s, rest)) if len(rest) else pa.nulls(n, pa.binary())
        return value, typed


def _numeric(t: pa.DataType, n: int, slots: np.ndarray, values: np.ndarray) -> pa.Array:
    full = np.zeros(n, dtype=values.dtype)
    full[slots] = values
    valid = np.zeros(n, dtype=bool)
    valid[slots] = True
    vbuf, nulls = _validity(valid)
    return pa.Array.from_buffers(t, n, [vbuf, pa.py_buffer(full)], nulls)


def shred_columnar(variants: pa.StructArray, t: pa.DataType) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    """``(metadata, value, typed_value, null mask)`` of a Variant column shredded by logical type ``t``.

    ``variants`` is a ``struct<metadata, value>`` array (binary fields). Raises ``Fallback``
    for anything the row path must handle (and report)."""
    n = len(variants)
    valid_arr = variants.is_valid()
    valid = valid_arr.to_numpy(zero_copy_only=False)
    try:
        meta = variants.field("metadata").cast(pa.binary())
        values = variants.field("value").cast(pa.binary())
    except pa.ArrowException:
        raise Fallback from None
    # a non-null Variant needs non-null metadata and a non-empty value (else the row path reports it)
    broken = valid & (~meta.is_valid().to_numpy(zero_copy_only=False) | ~values.is_valid().to_numpy(zero_copy_only=False))
    _check(~broken)
    vlen = pc.binary_length(values).fill_null(0).to_numpy(zero_copy_only=False)
    mlen = pc.binary_length(meta).fill_null(0).to_numpy(zero_copy_only=False)
    _check(~valid | ((vlen > 0) & (mlen > 0)))
    meta_out = pc.if_else(valid_arr, meta, pa.scalar(b"", pa.binary())) if not valid.all() else meta
    if meta_out.null_count:
        meta_out = meta_out.fill_null(b"")
    encoded = pc.dictionary_encode(meta_out)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(_I64)
    keys: list[list[str]] = []
    for i, m in enumerate(encoded.dictionary.to_pylist()):
        if not m:
            keys.append([])  # the null rows' placeholder
            continue
        try:
            keys.append(dec.MetadataView(m).keys())
        except Exception:  # noqa: BLE001 - malformed metadata: the row path reports it
            raise Fallback from None
    col = _Column(values, valid, codes, keys)
    pos = np.where(valid, col.start, -1)
    value, typed = _Shredder(col).level(t, _Slots(pos, np.arange(n, dtype=_I64), top=True))
    return meta_out, value, typed, _not(valid)


# --- path statistics for schema inference (``infer.collect``) ------------------------------------------

_POW10 = np.array([10**k for k in range(19)], dtype=np.uint64)


@dataclass(frozen=True)
class Kinds:
    """The kind codes of ``infer`` (passed in: ``infer`` imports this module)."""

    primitive: dict[int, int]
    object: int
    array: int
    string: int
    integer: int
    decimal: int


def _variant_rows(variants: pa.StructArray) -> tuple[_Column, np.ndarray]:
    """The input as a ``_Column`` and which rows hold a Variant (non-null, with metadata and value)."""
    valid = variants.is_valid().to_numpy(zero_copy_only=False)
    try:
        meta = variants.field("metadata").cast(pa.binary())
        values = variants.field("value").cast(pa.binary())
    except (pa.ArrowException, KeyError):
        raise Fallback from None
    used = valid & meta.is_valid().to_numpy(zero_copy_only=False) & values.is_valid().to_numpy(zero_copy_only=False)
    vlen = pc.binary_length(values).fill_null(0).to_numpy(zero_copy_only=False)
    _check(~used | (vlen > 0))
    meta_used = pc.if_else(pa.array(used), meta, pa.scalar(b"", pa.binary())).fill_null(b"")
    encoded = pc.dictionary_encode(meta_used)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(_I64)
    keys: list[list[str]] = []
    for m in encoded.dictionary.to_pylist():
        if not m:
            keys.append([])
            continue
        try:
            keys.append(dec.metadata_view(m).keys())
        except Exception:  # noqa: BLE001 - malformed metadata: the row path reports it
            raise Fallback from None
    _check(~used | (pc.binary_length(meta_used).to_numpy(zero_copy_only=False) > 0))
    return _Column(values, used, codes, keys), used


class _Collector:
    def __init__(self, col: _Column, kinds: Kinds, new_node: Any, max_depth: int) -> None:
        self.col = col
        self.k = kinds
        self.new_node = new_node
        self.max_depth = max_depth
        table = np.full(256, -1, dtype=_I64)
        for h in range(256):
            basic = h & 3
            table[h] = (
                kinds.object if basic == 2 else kinds.array if basic == 3 else kinds.string if basic == 1
                else kinds.primitive.get(h >> 2, -1)
            )
        self.kind_of = table
        self.rank = np.cumsum(col.valid) - 1
        unique = pc.dictionary_encode(col.key_array)
        self.key_uid = unique.indices.to_numpy(zero_copy_only=False).astype(_I64)
        self.key_names = unique.dictionary.to_pylist()

    def observe(self, node: Any, pos: np.ndarray, row: np.ndarray, depth: int) -> None:
        if not len(pos):
            return
        col, k = self.col, self.k
        end = col.end[row]
        _check(pos < end)
        node.rows += int(np.count_nonzero(row[1:] != row[:-1])) + (0 if node.last_row == self.rank[row[0]] else 1)
        node.last_row = int(self.rank[row[-1]])  # rows count among the observed ones, as the row path does
        h = col.buf[pos].astype(_I64)
        kind = self.kind_of[h]
        _check(kind >= 0)
        found, first, counts = np.unique(kind, return_index=True, return_counts=True)
        for j in np.argsort(first, kind="stable"):
            kk = int(found[j])
            node.kinds[kk] = node.kinds.get(kk, 0) + int(counts[j])
        sel = np.flatnonzero(kind == k.integer)
        if len(sel):
            p = pos[sel]
            width = _INT_WIDTH[h[sel]]
            _check(p + 1 + width <= end[sel])
            v = _read_signed(col.buf, col.views, p + 1, width)
            lo, hi = int(v.min()), int(v.max())
            if node.kinds[k.integer] == len(sel):  # the first integers at this path
                node.int_min, node.int_max = lo, hi
            else:
                node.int_min, node.int_max = min(node.int_min, lo), max(node.int_max, hi)
        sel = np.flatnonzero(kind == k.decimal)
        if len(sel):
            self.decimals(node, pos[sel], h[sel], end[sel], row[sel])
        if depth >= self.max_depth:
            return
        sel = np.flatnonzero(kind == k.object)
        if len(sel):
            self.objects(node, pos[sel], h[sel], end[sel], row[sel], depth)
        sel = np.flatnonzero(kind == k.array)
        if len(sel):
            p, r = pos[sel], row[sel]
            count, osz, offs, data = col.array_heads(p, h[sel], end[sel])
            if node.element is None:
                node.element = self.new_node()
            total = int(count.sum())
            owner = np.repeat(np.arange(len(p), dtype=_I64), count)
            first_e = np.zeros(len(p), dtype=_I64)
            np.cumsum(count[:-1], out=first_e[1:])
            nth = np.arange(total, dtype=_I64) - first_e[owner]
            e_osz = osz[owner]
            epos = data[owner] + _read_uint(col.buf, col.views, offs[owner] + nth * e_osz, _uniform(e_osz))
            self.observe(node.element, epos, r[owner], depth + 1)

    def decimals(self, node: Any, p: np.ndarray, h: np.ndarray, end: np.ndarray, row: np.ndarray) -> None:
        col = self.col
        width = np.zeros(len(p), dtype=_I64)
        for header, w in _DECIMAL_WIDTH.items():
            width[h == header] = w
        _check(p + 2 + width <= end)
        scale = col.buf[p + 1].astype(_I64)
        digits = np.zeros(len(p), dtype=_I64)
        narrow = np.flatnonzero(width <= 8)
        if len(narrow):
            v = _read_signed(col.buf, col.views, p[narrow] + 1 + 1, width[narrow])
            _check(v != np.iinfo(_I64).min)
            digits[narrow] = np.searchsorted(_POW10, np.abs(v).astype(np.uint64), side="right")
        for i in np.flatnonzero(width > 8):  # decimal16: Python integers
            at = int(p[i]) + 2
            u = abs(int.from_bytes(col.buf[at : at + 16].tobytes(), "little", signed=True))
            digits[i] = len(str(u)) if u else 0
        node.dec_scale = max(node.dec_scale, int(scale.max()))
        node.dec_int_digits = max(node.dec_int_digits, int((digits - scale).max()))

    def objects(self, node: Any, p: np.ndarray, h: np.ndarray, end: np.ndarray, row: np.ndarray, depth: int) -> None:
        col = self.col
        count, isz, osz, ids, offs, data = col.object_heads(p, h, end)
        total = int(count.sum())
        owner = np.repeat(np.arange(len(p), dtype=_I64), count)
        first = np.zeros(len(p), dtype=_I64)
        np.cumsum(count[:-1], out=first[1:])
        nth = np.arange(total, dtype=_I64) - first[owner]
        e_isz, e_osz = isz[owner], osz[owner]
        fid = _read_uint(col.buf, col.views, ids[owner] + nth * e_isz, _uniform(e_isz) if total else 1)
        cpos = data[owner] + _read_uint(col.buf, col.views, offs[owner] + nth * e_osz, _uniform(e_osz) if total else 1)
        code = col.codes[row][owner]
        _check(fid < col.num_keys[code])
        uid = self.key_uid[col.key_base[code] + fid]
        erow = row[owner]
        if not total:
            return
        order = np.argsort(uid, kind="stable")
        suid = uid[order]
        starts = np.flatnonzero(np.concatenate([[True], suid[1:] != suid[:-1]]))
        bounds = np.append(starts, total)
        groups = sorted(range(len(starts)), key=lambda g: order[starts[g]])  # first appearance
        children = node.children
        for g in groups:
            sel = order[bounds[g] : bounds[g + 1]]
            name = self.key_names[int(suid[bounds[g]])]
            child = children.get(name)
            if child is None:
                child = children[name] = self.new_node()
            self.observe(child, cpos[sel], erow[sel], depth + 1)


def collect_columnar(variants: pa.StructArray, max_depth: int, kinds: Kinds, new_node: Any) -> tuple[Any, int]:
    """``infer.collect`` of an Arrow Variant column, a column at a time: the root statistics
    node (``new_node()``) and the number of rows observed. Raises ``Fallback`` for anything
    the row-by-row collector must see (it names the bad row)."""
    col, used = _variant_rows(variants)
    rows = np.flatnonzero(used)
    root = new_node()
    collector = _Collector(col, kinds, new_node, max_depth)
    collector.observe(root, col.start[rows], rows, 0)
    return root, len(rows)
