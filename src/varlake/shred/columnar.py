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

The input column and its numpy readers are in ``columnar_read``; ``columnar_stats``
computes schema inference's path statistics (``infer.collect``) the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.shred.columnar_read import (
    FIXED,
    I64,
    INT_DTYPE,
    INT_WIDTH,
    DECIMAL_WIDTH,
    EncodedColumn,
    Fallback,
    check,
    int_size,
    not_mask,
    read_bytes,
    read_signed,
    read_uint,
    uniform,
    validity,
)
from varlake.shred.leaf_convert import NO, leaf_converter
from varlake.shred.schema import UUID_TYPE
from varlake.shred.variant_arrays import put_uint
from varlake.variant import decoder as dec
from varlake.variant.encoder import encode_object

__all__ = ["Fallback", "shred_columnar"]


@dataclass
class _Slots:
    """Sub-values of one schema level: absolute position (-1 = missing) and input row per slot."""

    pos: np.ndarray
    row: np.ndarray
    top: bool = False


def _spread(n: int, slots: np.ndarray, values: pa.Array) -> pa.Array:
    """A binary array of ``n`` slots: ``values`` at ``slots`` (ascending), null elsewhere."""
    if len(slots) == 0:
        return pa.nulls(n, pa.binary())
    offs = np.frombuffer(values.buffers()[1], dtype=np.int32, count=len(values) + 1 + values.offset)[values.offset :]
    lengths = np.zeros(n, dtype=I64)
    lengths[slots] = np.diff(offs.astype(I64))
    out = np.empty(n + 1, dtype=np.int32)
    out[0] = offs[0]
    np.cumsum(lengths, out=out[1:])
    out[1:] += offs[0]
    valid = np.zeros(n, dtype=bool)
    valid[slots] = True
    vbuf, nulls = validity(valid)
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


class _Shredder:
    def __init__(self, col: EncodedColumn) -> None:
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
        check(p + size <= end)
        return col.gather(p, size)

    def present(self, s: _Slots) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Slots holding a value, their positions, row ends and header bytes."""
        idx = np.flatnonzero(s.pos >= 0)
        p = s.pos[idx]
        end = self.col.end[s.row[idx]]
        check(p < end)
        return idx, p, end, self.col.buf[p].astype(I64)

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
            width = INT_WIDTH[h]
            isint = width > 0
            check(~isint | (p + 1 + width <= end))
            v = read_signed(buf, self.col.views, p + 1, width)
            lo, hi = -(1 << (t.bit_width - 1)), (1 << (t.bit_width - 1)) - 1
            fit = isint & (v >= lo) & (v <= hi)
            return fit, _numeric(t, n, idx[fit], v[fit].astype(INT_DTYPE[t.bit_width]))
        if t == pa.bool_():
            fit = (h == 0x04) | (h == 0x08)
            full = np.zeros(n, dtype=bool)
            full[idx[fit]] = h[fit] == 0x04
            valid = np.zeros(n, dtype=bool)
            valid[idx[fit]] = True
            vbuf, nulls = validity(valid)
            return fit, pa.Array.from_buffers(pa.bool_(), n, [vbuf, pa.py_buffer(np.packbits(full, bitorder="little"))], nulls)
        if t in FIXED:
            header, width, dtype = FIXED[t]
            fit = h == header
            check(p[fit] + 1 + width <= end[fit])
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
            check(p[long] + 5 <= end[long])
            length = np.where(short, h >> 2, 0)
            length[long] = read_uint(buf, self.col.views, p[long] + 1, 4)
            start = p + np.where(short, 1, 5)
            check(start[fit] + length[fit] <= end[fit])
            typed = _spread(n, idx[fit], self.col.gather(start[fit], length[fit]))
            if t == pa.string():
                try:
                    typed = typed.cast(pa.string())
                except (pa.ArrowInvalid, pa.ArrowException):
                    raise Fallback from None
            return fit, typed
        if t == UUID_TYPE:
            fit = h == 0x50
            check(p[fit] + 17 <= end[fit])
            full = np.zeros((n, 16), dtype=np.uint8)
            full[idx[fit]] = read_bytes(buf, p[fit] + 1, 16)
            valid = np.zeros(n, dtype=bool)
            valid[idx[fit]] = True
            vbuf, nulls = validity(valid)
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
        int_width = INT_WIDTH[h]
        isint = int_width > 0
        dec_width = np.zeros(len(h), dtype=I64)
        for header, w in DECIMAL_WIDTH.items():
            dec_width[h == header] = w
        isdec = dec_width > 0
        check(~isint | (p + 1 + int_width <= end))
        check(~isdec | (p + 2 <= end))
        src_scale = np.zeros(len(h), dtype=I64)
        src_scale[isdec] = buf[p[isdec] + 1]
        isdec &= src_scale <= scale
        check(~isdec | (p + 2 + dec_width <= end))
        unscaled = np.zeros(len(h), dtype=I64)
        unscaled[isint] = read_signed(buf, self.col.views, p[isint] + 1, int_width[isint])
        narrow = isdec & (dec_width <= 8)
        unscaled[narrow] = read_signed(buf, self.col.views, p[narrow] + 2, dec_width[narrow])
        shift = np.where(isdec, scale - src_scale, scale)
        # int64 arithmetic is exact where |unscaled| * 10**shift stays below 2**63
        room = np.array([(2**63 - 1) // 10**k if k <= 18 else 0 for k in range(39)], dtype=I64)
        exact = (isint | narrow) & (np.abs(unscaled) <= room[shift]) & (unscaled != np.iinfo(I64).min)
        exact |= (isint | narrow) & (unscaled == 0)
        pow10 = np.array([10**k if k <= 18 else 0 for k in range(39)], dtype=I64)
        value = np.where(exact, unscaled * np.where(exact, pow10[np.minimum(shift, 18)], 0), 0)
        if precision <= 18:
            fit = exact & (np.abs(value) < 10**precision)
        else:
            fit = exact.copy()
        lo = value
        hi = np.where(value < 0, -1, 0).astype(I64)
        python = np.flatnonzero((isint | isdec) & ~exact)
        full = np.zeros((n, 2), dtype=I64)
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
                full[idx[k]] = np.frombuffer(u.to_bytes(16, "little", signed=True), dtype=I64)
        direct = fit.copy()
        direct[python] = False
        full[idx[direct], 0] = lo[direct]
        full[idx[direct], 1] = hi[direct]
        valid = np.zeros(n, dtype=bool)
        valid[idx[fit]] = True
        vbuf, nulls = validity(valid)
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
        entry_obj = np.repeat(np.arange(len(oi), dtype=I64), count)
        first = np.zeros(len(oi), dtype=I64)
        if len(oi):
            np.cumsum(count[:-1], out=first[1:])
        along = np.arange(total, dtype=I64)
        e_isz, e_osz = uniform(isz), uniform(osz)
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
        fid = read_uint(col.buf, col.views, id_at, e_isz)
        child_pos = np.repeat(data, count) + read_uint(col.buf, col.views, off_at, e_osz)
        rows = s.row[oi]
        if len(col.keys) == 1:
            check(fid < col.num_keys[0])
            key_at = fid
        else:
            code = np.repeat(col.codes[rows], count)
            check(fid < col.num_keys[code])
            key_at = col.key_base[code] + fid
        j = col.field_index(names)[key_at]
        shredded = j >= 0
        child = np.full(k * n, -1, dtype=I64)
        written = np.repeat(oi, count)[shredded] + j[shredded] * n
        child[written] = child_pos[shredded]
        check(np.count_nonzero(child >= 0) == len(written))  # no field twice in one object
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
            mask=not_mask(isobj_full),
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
        check(at + size <= end)
        values = col.gather(at, size)
        ids = fid[entries]
        csum = np.zeros(len(entries) + 1, dtype=I64)
        np.cumsum(size, out=csum[1:])
        data_size = csum[starts + cnt] - csum[starts]
        osz = int_size(data_size)
        isz = int_size(np.maximum.reduceat(ids, starts))
        large = cnt > 0xFF
        cb = np.where(large, 4, 1)
        hlen = 1 + cb + cnt * isz + (cnt + 1) * osz
        hoff = np.zeros(len(objs) + 1, dtype=I64)
        np.cumsum(hlen, out=hoff[1:])
        head = np.zeros(int(hoff[-1]), dtype=np.uint8)
        h0 = hoff[:-1]
        head[h0] = 0x02 | ((osz - 1) << 2) | ((isz - 1) << 4) | (large.astype(I64) << 6)
        put_uint(head, h0 + 1, cnt, cb)
        e_obj = np.repeat(np.arange(len(objs), dtype=I64), cnt)
        nth = np.arange(len(entries), dtype=I64) - starts[e_obj]
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
        check(total < 2**31)
        entry_arr = np.repeat(np.arange(len(ai), dtype=I64), count)
        first = np.zeros(len(ai), dtype=I64)
        if len(ai):
            np.cumsum(count[:-1], out=first[1:])
        nth = np.arange(total, dtype=I64) - first[entry_arr]
        e_osz = uniform(osz)
        e_osz = e_osz if isinstance(e_osz, int) else e_osz[entry_arr]
        epos = data[entry_arr] + read_uint(col.buf, col.views, offs[entry_arr] + nth * e_osz, e_osz)
        ev, etv = self.level(t.value_type, _Slots(epos, s.row[ai][entry_arr]))
        element = _group(ev, etv)
        counts = np.zeros(n, dtype=I64)
        counts[ai] = count
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(counts, out=offsets[1:])
        isarr_full = np.zeros(n, dtype=bool)
        isarr_full[ai] = True
        list_type = pa.list_(pa.field("element", element.type, nullable=False))
        typed = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), element, type=list_type, mask=not_mask(isarr_full))
        rest = idx[~isarr]
        value = _spread(n, rest, self.raw(s, rest)) if len(rest) else pa.nulls(n, pa.binary())
        return value, typed


def _numeric(t: pa.DataType, n: int, slots: np.ndarray, values: np.ndarray) -> pa.Array:
    full = np.zeros(n, dtype=values.dtype)
    full[slots] = values
    valid = np.zeros(n, dtype=bool)
    valid[slots] = True
    vbuf, nulls = validity(valid)
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
    check(~broken)
    vlen = pc.binary_length(values).fill_null(0).to_numpy(zero_copy_only=False)
    mlen = pc.binary_length(meta).fill_null(0).to_numpy(zero_copy_only=False)
    check(~valid | ((vlen > 0) & (mlen > 0)))
    meta_out = pc.if_else(valid_arr, meta, pa.scalar(b"", pa.binary())) if not valid.all() else meta
    if meta_out.null_count:
        meta_out = meta_out.fill_null(b"")
    encoded = pc.dictionary_encode(meta_out)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(I64)
    keys: list[list[str]] = []
    for i, m in enumerate(encoded.dictionary.to_pylist()):
        if not m:
            keys.append([])  # the null rows' placeholder
            continue
        try:
            keys.append(dec.MetadataView(m).keys())
        except Exception:  # noqa: BLE001 - malformed metadata: the row path reports it
            raise Fallback from None
    col = EncodedColumn(values, valid, codes, keys)
    pos = np.where(valid, col.start, -1)
    value, typed = _Shredder(col).level(t, _Slots(pos, np.arange(n, dtype=I64), top=True))
    return meta_out, value, typed, not_mask(valid)
