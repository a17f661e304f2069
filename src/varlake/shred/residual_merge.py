"""Partially shredded objects merged a column at a time: residual fields + shredded fields.

A row whose object level has both ``typed_value`` and a residual ``value`` object reads
as one object holding the residual's fields and the shredded ones. ``merged_objects``
builds that for every row of a level at once: it parses the residual objects' headers
with numpy (counts, field ids, offsets, each field value's size), sorts each row's
fields, residual and shredded, by key (through each metadata dictionary's key ranks),
and writes new headers. The new object's values are the residual's value bytes (copied
as one block per row) followed by the shredded fields' parts. Anything unusual in a
residual -- not an object, a header or value past its end, trailing bytes, an id outside
the dictionary, keys out of order or repeated, a key that is also shredded, a primitive
type this reader does not know -- makes it return None, and the caller hands the level
to the reference path, which raises the named error or handles the rare shape.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.errors import VariantError
from varlake.shred.byte_parts import Var, binary_array, element_offsets
from varlake.shred.unshred_context import ReconstructContext
from varlake.shred.variant_arrays import uint_width
from varlake.variant.decoder import metadata_view

__all__ = ["FieldInfo", "merged_objects"]

# bytes of each primitive type id (header included); -1: length-prefixed (binary, string)
_PRIMITIVE_SIZE = np.array([1, 1, 1, 2, 3, 5, 9, 9, 6, 10, 18, 5, 9, 9, 5, -1, -1, 9, 9, 9, 17], dtype=np.int64)

FieldInfo = tuple[np.ndarray | int, np.ndarray | None, np.ndarray | int]
"""A shredded field of the level, in key order: (field id(s), present mask or None, size(s))."""


def _read_uint(data: np.ndarray, pos: np.ndarray, width: np.ndarray | int) -> np.ndarray:
    """Little-endian unsigned ints of ``width`` (1-4) bytes at ``pos`` (all in bounds)."""
    out = data[pos].astype(np.int64)
    for b in range(1, 4):
        if isinstance(width, int):
            if b >= width:
                break
            out |= data[pos + b].astype(np.int64) << (8 * b)
        else:
            m = width > b
            if m.any():
                out[m] |= data[pos[m] + b].astype(np.int64) << (8 * b)
    return out


def _size_by_header() -> np.ndarray:
    """A value's size from its first byte: > 0 fixed, -2 length-prefixed (binary, string),
    -3 a container (read its header), 0 an unknown primitive type."""
    table = np.zeros(256, dtype=np.int64)
    for head in range(256):
        basic, hi = head & 0x03, head >> 2
        if basic == 0:
            table[head] = (-2 if _PRIMITIVE_SIZE[hi] < 0 else _PRIMITIVE_SIZE[hi]) if hi < len(_PRIMITIVE_SIZE) else 0
        elif basic == 1:
            table[head] = 1 + hi
        else:
            table[head] = -3
    return table


_SIZE_BY_HEADER = _size_by_header()


def _value_sizes(data: np.ndarray, pos: np.ndarray, limit: np.ndarray) -> np.ndarray | None:
    """Byte size of the Variant value at each ``pos`` (each must end by ``limit``); None if
    any is malformed or of a type this reader does not size."""
    if not len(pos):
        return np.zeros(0, dtype=np.int64)
    if (pos >= limit).any():
        return None
    head = data[pos]
    size = _SIZE_BY_HEADER[head]
    special = np.flatnonzero(size <= 0)
    if len(special):
        kind = size[special]
        if (kind == 0).any():
            return None
        long = special[kind == -2]
        if len(long):
            if (pos[long] + 5 > limit[long]).any():
                return None
            size[long] = 5 + _read_uint(data, pos[long] + 1, 4)
        for basic in (2, 3):
            rows = special[(kind == -3) & ((head[special] & 0x03) == basic)]
            if not len(rows):
                continue
            h = head[rows].astype(np.int64) >> 2
            p = pos[rows]
            lim = limit[rows]
            osz = (h & 0x03) + 1
            if basic == 2:
                isz = ((h >> 2) & 0x03) + 1
                cb = np.where((h >> 4) & 0x01, 4, 1)
            else:
                isz = np.zeros(len(rows), dtype=np.int64)
                cb = np.where((h >> 2) & 0x01, 4, 1)
            if (p + 1 + cb > lim).any():
                return None
            count = _read_uint(data, p + 1, cb)
            header = 1 + cb + count * isz + (count + 1) * osz
            if (p + header > lim).any():
                return None
            size[rows] = header + _read_uint(data, p + header - osz, osz)
    if (pos + size > limit).any():
        return None
    return size


@functools.lru_cache(maxsize=8192)
def _key_ranks(metadata: bytes) -> tuple[np.ndarray, tuple[str, ...]]:
    """Each field id's rank in UTF-8 key order, and the keys, of one metadata dictionary."""
    keys = tuple(metadata_view(metadata).keys())
    rank = np.empty(len(keys), dtype=np.int64)
    if metadata[0] & 0x10:  # sorted_strings: ids already follow key order
        rank[:] = np.arange(len(keys), dtype=np.int64)
    else:
        order = sorted(range(len(keys)), key=lambda i: keys[i].encode("utf-8"))
        rank[order] = np.arange(len(keys), dtype=np.int64)
    return rank, keys


class _Ranks:
    """Per distinct metadata dictionary of the batch: each field id's rank in key order and
    whether its key is one of the level's shredded keys, as flat tables."""

    def __init__(self, ctx: ReconstructContext, shredded: frozenset[str]) -> None:
        ranks: list[np.ndarray] = []
        flags: list[np.ndarray] = []
        sizes = []
        codes = ctx.codes()
        for meta in ctx.distinct():
            rank, keys = _key_ranks(meta)
            ranks.append(rank)
            flags.append(np.array([k in shredded for k in keys], dtype=bool))
            sizes.append(len(keys))
        self.size = np.array(sizes, dtype=np.int64)
        self.base = np.concatenate([[0], np.cumsum(self.size)[:-1]]).astype(np.int64) if sizes else np.zeros(0, np.int64)
        self.rank = np.concatenate(ranks) if ranks else np.zeros(0, np.int64)
        self.shredded = np.concatenate(flags) if flags else np.zeros(0, bool)
        self.codes = codes

    def index(self, rows: np.ndarray, ids: np.ndarray) -> np.ndarray | None:
        """Flat table index of each (row, id); None if an id is outside its dictionary."""
        code = self.codes[rows]
        if ((ids < 0) | (ids >= self.size[code])).any():
            return None
        return self.base[code] + ids


def merged_objects(
    n: int,
    rows: np.ndarray,
    ctx: ReconstructContext,
    residual: pa.Array,
    both: np.ndarray,
    keys: frozenset[str],
    fields: Sequence[FieldInfo],
) -> tuple[Var, Var, np.ndarray] | None:
    """Headers and residual value blocks of a level's objects, or None (use the reference).

    ``residual`` is the level's ``value`` (binary), a residual object in the ``both``
    slots; ``fields`` the shredded fields in key order. Returns the header part, the
    residual values part (empty in the other slots) and each slot's residual block size:
    a slot's object is the header, that block, then the present shredded values in key
    order.
    """
    try:
        ranks = _Ranks(ctx, keys)
    except (VariantError, UnicodeDecodeError, IndexError):
        return None
    offs = element_offsets(residual)
    buf = residual.buffers()[2]
    data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
    slots = np.flatnonzero(both)
    start = offs[:-1][slots]
    end = offs[1:][slots]
    if (end <= start).any():
        return None
    head = data[start].astype(np.int64)
    if ((head & 0x03) != 2).any():
        return None
    cb = np.where((head >> 6) & 0x01, 4, 1)
    isz = ((head >> 4) & 0x03) + 1
    osz = ((head >> 2) & 0x03) + 1
    if (start + 1 + cb > end).any():
        return None
    rcount = _read_uint(data, start + 1, cb)
    rheader = 1 + cb + rcount * (isz + osz) + osz
    if (start + rheader > end).any():
        return None
    block = _read_uint(data, start + rheader - osz, osz)  # the residual's data size
    if (start + rheader + block != end).any():  # trailing bytes: the reference decides
        return None
    # one entry per residual field: its row, id and offset within the block
    total = int(rcount.sum())
    entry_slot = np.repeat(np.arange(len(slots), dtype=np.int64), rcount)
    first = np.zeros(len(slots) + 1, dtype=np.int64)
    np.cumsum(rcount, out=first[1:])
    k = np.arange(total, dtype=np.int64) - first[:-1][entry_slot]
    e_isz, e_osz = isz[entry_slot], osz[entry_slot]
    ids_at = start[entry_slot] + 1 + cb[entry_slot]
    r_id = _read_uint(data, ids_at + k * e_isz, e_isz)
    r_off = _read_uint(data, ids_at + rcount[entry_slot] * e_isz + k * e_osz, e_osz)
    data_start = start + rheader
    sizes = _value_sizes(data, data_start[entry_slot] + r_off, end[entry_slot])
    if sizes is None:
        return None
    r_rows = slots[entry_slot]
    flat = ranks.index(rows[r_rows], r_id)
    if flat is None or ranks.shredded[flat].any():
        return None
    r_rank = ranks.rank[flat]
    if total > 1:  # keys must ascend within each residual (sorted and distinct)
        same_row = entry_slot[1:] == entry_slot[:-1]
        if (same_row & (r_rank[1:] <= r_rank[:-1])).any():
            return None
    block_size = np.zeros(n, dtype=np.int64)
    block_size[slots] = block
    # shredded entries: (row, field) matrices read row by row (fields are in key order)
    k_fields = len(fields)
    ids2 = np.empty((n, k_fields), dtype=np.int64)
    offs2 = np.empty((n, k_fields), dtype=np.int64)
    keep2 = np.ones((n, k_fields), dtype=bool)
    at: np.ndarray | int = block_size
    for j, (ids, present, size) in enumerate(fields):
        ids2[:, j] = ids
        offs2[:, j] = at
        if present is not None:
            keep2[:, j] = present
        at = at + (size if present is None else np.where(present, size, 0))
    data_size = np.broadcast_to(np.asarray(at, dtype=np.int64), (n,))
    sh_rows = np.broadcast_to(np.arange(n, dtype=np.int64)[:, None], (n, k_fields))[keep2]
    sh_ids, sh_offs = ids2[keep2], offs2[keep2]
    flat_sh = ranks.index(rows[sh_rows], sh_ids)
    if flat_sh is None:
        return None
    sh_rank = ranks.rank[flat_sh]
    all_rows = np.concatenate([r_rows, sh_rows])
    all_rank = np.concatenate([r_rank, sh_rank])
    all_ids = np.concatenate([r_id, sh_ids])
    all_offs = np.concatenate([r_off, sh_offs])
    width = int(ranks.size.max()) + 1 if len(ranks.size) else 1
    order = np.argsort(all_rows * width + all_rank, kind="stable")
    e_rows = all_rows[order]
    packed = ((all_ids << 32) | all_offs)[order]  # one gather for both (ids and offsets < 2**32)
    e_ids, e_offs = packed >> 32, packed & 0xFFFFFFFF
    count = np.bincount(e_rows, minlength=n).astype(np.int64)
    # header widths shared by the batch (larger than needed is valid)
    large = bool(len(count) and count.max() > 0xFF)
    cbw = 4 if large else 1
    iszw = int(uint_width(np.array([int(e_ids.max()) if len(e_ids) else 0]))[0])
    oszw = int(uint_width(np.array([int(data_size.max()) if n else 0]))[0])
    hlen = 1 + cbw + count * iszw + (count + 1) * oszw
    hoff = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(hlen, out=hoff[1:])
    out = np.zeros(int(hoff[-1]), dtype=np.uint8)
    hstart = hoff[:-1]
    out[hstart] = 0x02 | ((oszw - 1) << 2) | ((iszw - 1) << 4) | (int(large) << 6)
    _put(out, hstart + 1, count, cbw)
    row_first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(count, out=row_first[1:])
    idx = np.arange(len(e_rows), dtype=np.int64) - row_first[:-1][e_rows]
    ids_start = hstart + 1 + cbw
    _put(out, ids_start[e_rows] + idx * iszw, e_ids, iszw)
    offs_start = ids_start + count * iszw
    _put(out, offs_start[e_rows] + idx * oszw, e_offs, oszw)
    _put(out, offs_start + count * oszw, data_size, oszw)
    header = Var(binary_array(hoff, out), hlen)
    # each row's residual value block: every other slice of [block starts and ends]
    cut = np.repeat(offs[:-1], 2)
    cut[2 * slots] = data_start
    cut[2 * slots + 1] = data_start + block
    cut = np.append(cut, offs[-1])
    pieces = pa.Array.from_buffers(pa.binary(), 2 * n, [None, pa.py_buffer(cut.astype(np.int32)), buf])
    blocks = pc.take(pieces, pa.array(np.arange(0, 2 * n, 2, dtype=np.int64)))
    return header, Var(blocks, block_size), block_size


def _put(out: np.ndarray, pos: np.ndarray, values: np.ndarray, width: int) -> None:
    values = np.asarray(values, dtype=np.int64)
    for b in range(width):
        out[pos + b] = ((values >> (8 * b)) & 0xFF).astype(np.uint8)
