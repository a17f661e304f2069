"""Partially shredded objects merged a column at a time: residual fields + shredded fields.

A row whose object level has both ``typed_value`` and a residual ``value`` object reads
as one object holding the residual's fields and the shredded ones. ``merged_objects``
builds that for every row of a level at once: it parses the residual objects' headers
with numpy (counts, field ids, offsets, each field value's size), ranks every key
through its row's metadata dictionary, and writes new headers. Rows are grouped by
shape -- how many residual fields, and where each present shredded field falls among
them -- and each group's headers are written as one matrix (``shred.object_headers``);
with too many shapes, entries are sorted by (row, key rank) and scattered instead. The
new object's values are the residual's value bytes (copied as one block per row)
followed by the shredded fields' parts; a row with only ``value`` keeps its bytes as
stored. Anything unusual in a residual -- not an object, a header or value past its
end, trailing bytes, an id outside the dictionary, keys out of order or repeated, a key
that is also shredded, a primitive type this reader does not know -- makes it return
None, and the caller hands the level on (in the end to the reference path, which
raises the named error or handles the rare shape).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.errors import VariantError
from varlake.shred.byte_parts import Fixed, Var, binary_array, element_offsets
from varlake.shred.object_headers import at_rows, grouped_header, shape_groups
from varlake.shred.unshred_context import ReconstructContext
from varlake.shred.variant_arrays import uint_width
from varlake.variant.decoder import metadata_view

__all__ = ["FieldInfo", "merged_objects"]

# bytes of each primitive type id (header included); -1: length-prefixed (binary, string)
_PRIMITIVE_SIZE = np.array([1, 1, 1, 2, 3, 5, 9, 9, 6, 10, 18, 5, 9, 9, 5, -1, -1, 9, 9, 9, 17], dtype=np.int64)

FieldInfo = tuple[np.ndarray | int, np.ndarray | None, np.ndarray | int]
"""A shredded field of the level, in key order: (field id(s), present mask or None, size(s)),
its parts empty where it is absent."""


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
    vvalid: np.ndarray,
    tvalid: np.ndarray,
    keys: frozenset[str],
    fields: Sequence[FieldInfo],
) -> tuple[Var, Var, np.ndarray] | None:
    """Headers and residual value blocks of a level's objects, or None (use the reference).

    ``residual`` is the level's ``value`` (binary, valid where ``vvalid``) and ``tvalid``
    where its ``typed_value`` is valid; ``fields`` the shredded fields in key order (absent
    where ``tvalid`` is False). Returns the header part, the residual part and each
    slot's residual part size. Where both columns are valid the slot's object is the
    header, the residual object's value bytes, then the present shredded values in key
    order; where only ``typed_value`` is, the header then the shredded values; where only
    ``value`` is, the header is empty and the residual part is the whole stored value.
    """
    try:
        ranks = _Ranks(ctx, keys)
    except (VariantError, UnicodeDecodeError, IndexError):
        return None
    offs = element_offsets(residual)
    buf = residual.buffers()[2]
    data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
    slots = np.flatnonzero(vvalid & tvalid)
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
    if len(head) and (head == head[0]).all():  # one header layout: widths as numbers
        cb, isz, osz = int(cb[0]), int(isz[0]), int(osz[0])  # type: ignore[assignment]
    if (start + 1 + cb > end).any():
        return None
    rcount = _read_uint(data, start + 1, cb)
    rheader = 1 + cb + rcount * (isz + osz) + osz
    if (start + rheader > end).any():
        return None
    block = _read_uint(data, start + rheader - osz, osz)  # the residual's data size
    if (start + rheader + block != end).any():  # trailing bytes: the reference decides
        return None
    # one entry per residual field: its slot, id and offset within the block
    total = int(rcount.sum())
    entry_slot = np.repeat(np.arange(len(slots), dtype=np.int64), rcount)
    first = np.zeros(len(slots) + 1, dtype=np.int64)
    np.cumsum(rcount, out=first[1:])
    k = np.arange(total, dtype=np.int64) - first[:-1][entry_slot]
    e_isz, e_osz = _at(isz, entry_slot), _at(osz, entry_slot)
    ids_at = start[entry_slot] + 1 + _at(cb, entry_slot)
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
    # shredded values follow the residual block, in key order
    offsets: list[np.ndarray | int] = []
    at: np.ndarray | int = block_size
    count = np.zeros(n, dtype=np.int64)
    count[slots] = rcount
    max_id = int(r_id.max()) if total else 0
    for ids, present, size in fields:
        offsets.append(at)
        at = at + (size if present is None else np.where(present, size, 0))
        count += 1 if present is None else present
        if isinstance(ids, (int, np.integer)):
            if present is None or present.any():
                max_id = max(max_id, int(ids))
        elif present is None:
            max_id = max(max_id, int(ids.max()) if n else 0)
        elif present.any():
            max_id = max(max_id, int(ids[present].max()))
    data_size = np.broadcast_to(np.asarray(at, dtype=np.int64), (n,))
    # header widths shared by the batch (larger than needed is valid)
    large = bool(n and count.max() > 0xFF)
    widths = (4 if large else 1, _width(max_id), _width(int(data_size.max()) if n else 0))
    head_byte = 0x02 | ((widths[2] - 1) << 2) | ((widths[1] - 1) << 4) | (int(large) << 6)
    entries = _Entries(slots, entry_slot, first, r_id, r_off, r_rank)
    header = _grouped(n, rows, tvalid, ranks, entries, fields, offsets, data_size, head_byte, widths)
    if header is None:
        header = _entrywise(n, rows, tvalid, ranks, entries, fields, offsets, count, data_size, head_byte, widths)
        if header is None:
            return None
    # each row's residual part: the residual's value block, or the whole value where only it is
    only = np.flatnonzero(vvalid & ~tvalid)
    cut = np.repeat(offs[:-1], 2)
    cut[2 * slots] = data_start
    cut[2 * slots + 1] = data_start + block
    cut[2 * only + 1] = offs[1:][only]
    block_size[only] = offs[1:][only] - offs[:-1][only]
    cut = np.append(cut, offs[-1])
    pieces = pa.Array.from_buffers(pa.binary(), 2 * n, [None, pa.py_buffer(cut.astype(np.int32)), buf])
    blocks = pc.take(pieces, pa.array(np.arange(0, 2 * n, 2, dtype=np.int64)))
    return header, Var(blocks, block_size), block_size


def _at(value: np.ndarray | int, index: np.ndarray) -> np.ndarray | int:
    return value if isinstance(value, int) else value[index]


def _width(value: int) -> int:
    return int(uint_width(np.array([value], dtype=np.int64))[0])


class _Entries:
    """The residual fields of the merged slots: slot of each entry, each slot's first
    entry, and each entry's field id, offset in its block and key rank."""

    __slots__ = ("first", "r_id", "r_off", "r_rank", "slot", "slots")

    def __init__(self, slots: np.ndarray, slot: np.ndarray, first: np.ndarray, r_id: np.ndarray, r_off: np.ndarray, r_rank: np.ndarray) -> None:
        self.slots, self.slot, self.first = slots, slot, first
        self.r_id, self.r_off, self.r_rank = r_id, r_off, r_rank


def _grouped(
    n: int,
    rows: np.ndarray,
    tvalid: np.ndarray,
    ranks: _Ranks,
    e: _Entries,
    fields: Sequence[FieldInfo],
    offsets: list[np.ndarray | int],
    data_size: np.ndarray,
    head_byte: int,
    widths: tuple[int, int, int],
) -> Var | None:
    """The merged headers, rows grouped by shape: how many residual fields and where each
    present shredded field falls among them (``object_headers``). None: too many shapes."""
    rcount = np.diff(e.first)
    if len(rcount) and rcount.max() > 0xFE:
        return None
    everywhere = bool(tvalid.all())
    hrows = np.arange(n, dtype=np.int64) if everywhere else np.flatnonzero(tvalid)

    def at_held(column: np.ndarray) -> np.ndarray:
        return column if everywhere else column[hrows]

    n_res = np.zeros(n, dtype=np.int64)
    n_res[e.slots] = rcount
    entry_rows = e.slots[e.slot]
    code = ranks.codes[rows[entry_rows]]
    first_entry = np.zeros(n, dtype=np.int64)
    first_entry[e.slots] = e.first[:-1]
    columns = [at_held(n_res)]
    position: list[np.ndarray] = []
    for ids, present, _ in fields:
        # the field goes after the residual fields whose keys sort before its key
        pos = np.zeros(n, dtype=np.int64)
        if len(entry_rows):
            rank = ranks.rank[np.minimum(ranks.base[code] + np.maximum(at_rows(ids, entry_rows), 0), len(ranks.rank) - 1)]
            pos[e.slots] = np.bincount(e.slot, weights=e.r_rank < rank, minlength=len(e.slots)).astype(np.int64)
        position.append(pos)
        columns.append(at_held(pos) if present is None else np.where(at_held(present), at_held(pos), 0xFF))
    groups = shape_groups(hrows, np.stack(columns, axis=1).astype(np.uint8))
    if groups is None:
        return None
    cbw, iszw, oszw = widths

    def build(g: np.ndarray) -> Fixed:
        r0 = int(g[0])
        res = int(n_res[r0])
        held = [j for j, (_, present, _) in enumerate(fields) if present is None or present[r0]]
        seq: list[tuple[bool, int]] = []  # (residual?, index) in key order
        for k in range(res + 1):
            seq.extend((False, j) for j in held if position[j][r0] == k)
            if k < res:
                seq.append((True, k))
        out = Fixed(len(g), [(head_byte, 1), (len(seq), cbw)])
        at = first_entry[g] if res else None
        for residual, j in seq:
            out.add(e.r_id[at + j] if residual else at_rows(fields[j][0], g), iszw)  # type: ignore[operator]
        for residual, j in seq:
            out.add(e.r_off[at + j] if residual else at_rows(offsets[j], g), oszw)  # type: ignore[operator]
        out.add(data_size[g], oszw)
        return out

    return grouped_header(n, groups, build)


def _entrywise(
    n: int,
    rows: np.ndarray,
    tvalid: np.ndarray,
    ranks: _Ranks,
    e: _Entries,
    fields: Sequence[FieldInfo],
    offsets: list[np.ndarray | int],
    count: np.ndarray,
    data_size: np.ndarray,
    head_byte: int,
    widths: tuple[int, int, int],
) -> Var | None:
    """The merged headers entry by entry (any number of shapes): every entry, residual and
    shredded, sorted by (row, key rank) and scattered into place."""
    k_fields = len(fields)
    ids2 = np.empty((n, k_fields), dtype=np.int64)
    offs2 = np.empty((n, k_fields), dtype=np.int64)
    keep2 = np.ones((n, k_fields), dtype=bool)
    for j, (ids, present, _) in enumerate(fields):
        ids2[:, j] = ids
        offs2[:, j] = offsets[j]
        if present is not None:
            keep2[:, j] = present
    sh_rows = np.broadcast_to(np.arange(n, dtype=np.int64)[:, None], (n, k_fields))[keep2]
    sh_ids, sh_offs = ids2[keep2], offs2[keep2]
    flat_sh = ranks.index(rows[sh_rows], sh_ids)
    if flat_sh is None:
        return None
    sh_rank = ranks.rank[flat_sh]
    all_rows = np.concatenate([e.slots[e.slot], sh_rows])
    all_rank = np.concatenate([e.r_rank, sh_rank])
    all_ids = np.concatenate([e.r_id, sh_ids])
    all_offs = np.concatenate([e.r_off, sh_offs])
    width = int(ranks.size.max()) + 1 if len(ranks.size) else 1
    order = np.argsort(all_rows * width + all_rank, kind="stable")
    e_rows = all_rows[order]
    packed = ((all_ids << 32) | all_offs)[order]  # one gather for both (ids and offsets < 2**32)
    e_ids, e_offs = packed >> 32, packed & 0xFFFFFFFF
    cbw, iszw, oszw = widths
    hlen = np.where(tvalid, 1 + cbw + count * iszw + (count + 1) * oszw, 0)
    hoff = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(hlen, out=hoff[1:])
    out = np.zeros(int(hoff[-1]), dtype=np.uint8)
    hstart = hoff[:-1]
    held = np.flatnonzero(tvalid)
    out[hstart[held]] = head_byte
    _put(out, hstart[held] + 1, count[held], cbw)
    row_first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(count, out=row_first[1:])
    idx = np.arange(len(e_rows), dtype=np.int64) - row_first[:-1][e_rows]
    ids_start = hstart + 1 + cbw
    _put(out, ids_start[e_rows] + idx * iszw, e_ids, iszw)
    offs_start = ids_start + count * iszw
    _put(out, offs_start[e_rows] + idx * oszw, e_offs, oszw)
    _put(out, (offs_start + count * oszw)[held], data_size[held], oszw)
    return Var(binary_array(hoff, out), hlen)


def _put(out: np.ndarray, pos: np.ndarray, values: np.ndarray, width: int) -> None:
    values = np.asarray(values, dtype=np.int64)
    for b in range(width):
        out[pos + b] = ((values >> (8 * b)) & 0xFF).astype(np.uint8)
