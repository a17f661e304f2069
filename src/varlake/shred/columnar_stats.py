"""Schema inference's path statistics (``infer.collect``) computed a column at a time
(``collect_columnar``), equal to the row-by-row collector's; ``Fallback`` for anything
the row path must see."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.shred.columnar_read import (
    DECIMAL_WIDTH,
    I64,
    INT_WIDTH,
    EncodedColumn,
    Fallback,
    check,
    read_signed,
    read_uint,
    uniform,
)
from varlake.variant import decoder as dec

__all__ = ["Kinds", "collect_columnar"]


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


def _variant_rows(variants: pa.StructArray) -> tuple[EncodedColumn, np.ndarray]:
    """The input as a ``EncodedColumn`` and which rows hold a Variant (non-null, with metadata and value)."""
    valid = variants.is_valid().to_numpy(zero_copy_only=False)
    try:
        meta = variants.field("metadata").cast(pa.binary())
        values = variants.field("value").cast(pa.binary())
    except (pa.ArrowException, KeyError):
        raise Fallback from None
    used = valid & meta.is_valid().to_numpy(zero_copy_only=False) & values.is_valid().to_numpy(zero_copy_only=False)
    vlen = pc.binary_length(values).fill_null(0).to_numpy(zero_copy_only=False)
    check(~used | (vlen > 0))
    meta_used = pc.if_else(pa.array(used), meta, pa.scalar(b"", pa.binary())).fill_null(b"")
    encoded = pc.dictionary_encode(meta_used)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(I64)
    keys: list[list[str]] = []
    for m in encoded.dictionary.to_pylist():
        if not m:
            keys.append([])
            continue
        try:
            keys.append(dec.metadata_view(m).keys())
        except Exception:  # noqa: BLE001 - malformed metadata: the row path reports it
            raise Fallback from None
    check(~used | (pc.binary_length(meta_used).to_numpy(zero_copy_only=False) > 0))
    return EncodedColumn(values, used, codes, keys), used


class _Collector:
    def __init__(self, col: EncodedColumn, kinds: Kinds, new_node: Any, max_depth: int) -> None:
        self.col = col
        self.k = kinds
        self.new_node = new_node
        self.max_depth = max_depth
        table = np.full(256, -1, dtype=I64)
        for h in range(256):
            basic = h & 3
            table[h] = (
                kinds.object if basic == 2 else kinds.array if basic == 3 else kinds.string if basic == 1
                else kinds.primitive.get(h >> 2, -1)
            )
        self.kind_of = table
        self.rank = np.cumsum(col.valid) - 1
        unique = pc.dictionary_encode(col.key_array)
        self.key_uid = unique.indices.to_numpy(zero_copy_only=False).astype(I64)
        self.key_names = unique.dictionary.to_pylist()

    def observe(self, node: Any, pos: np.ndarray, row: np.ndarray, depth: int) -> None:
        if not len(pos):
            return
        col, k = self.col, self.k
        end = col.end[row]
        check(pos < end)
        node.rows += int(np.count_nonzero(row[1:] != row[:-1])) + (0 if node.last_row == self.rank[row[0]] else 1)
        node.last_row = int(self.rank[row[-1]])  # rows count among the observed ones, as the row path does
        h = col.buf[pos].astype(I64)
        kind = self.kind_of[h]
        check(kind >= 0)
        found, first, counts = np.unique(kind, return_index=True, return_counts=True)
        for j in np.argsort(first, kind="stable"):
            kk = int(found[j])
            node.kinds[kk] = node.kinds.get(kk, 0) + int(counts[j])
        sel = np.flatnonzero(kind == k.integer)
        if len(sel):
            p = pos[sel]
            width = INT_WIDTH[h[sel]]
            check(p + 1 + width <= end[sel])
            v = read_signed(col.buf, col.views, p + 1, width)
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
            owner = np.repeat(np.arange(len(p), dtype=I64), count)
            first_e = np.zeros(len(p), dtype=I64)
            np.cumsum(count[:-1], out=first_e[1:])
            nth = np.arange(total, dtype=I64) - first_e[owner]
            e_osz = osz[owner]
            epos = data[owner] + read_uint(col.buf, col.views, offs[owner] + nth * e_osz, uniform(e_osz))
            self.observe(node.element, epos, r[owner], depth + 1)

    def decimals(self, node: Any, p: np.ndarray, h: np.ndarray, end: np.ndarray, row: np.ndarray) -> None:
        col = self.col
        width = np.zeros(len(p), dtype=I64)
        for header, w in DECIMAL_WIDTH.items():
            width[h == header] = w
        check(p + 2 + width <= end)
        scale = col.buf[p + 1].astype(I64)
        digits = np.zeros(len(p), dtype=I64)
        narrow = np.flatnonzero(width <= 8)
        if len(narrow):
            v = read_signed(col.buf, col.views, p[narrow] + 1 + 1, width[narrow])
            check(v != np.iinfo(I64).min)
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
        owner = np.repeat(np.arange(len(p), dtype=I64), count)
        first = np.zeros(len(p), dtype=I64)
        np.cumsum(count[:-1], out=first[1:])
        nth = np.arange(total, dtype=I64) - first[owner]
        e_isz, e_osz = isz[owner], osz[owner]
        fid = read_uint(col.buf, col.views, ids[owner] + nth * e_isz, uniform(e_isz) if total else 1)
        cpos = data[owner] + read_uint(col.buf, col.views, offs[owner] + nth * e_osz, uniform(e_osz) if total else 1)
        code = col.codes[row][owner]
        check(fid < col.num_keys[code])
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
