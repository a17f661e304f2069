"""The content check of a rewrite: the multiset of logical rows written equals the multiset read.

Both sides are Arrow tables in the table's logical schema (Variants as
``struct<metadata, value>``, deleted rows already dropped). The check is order-independent
and runs in two steps:

1. **bytes**: every row gets a 128-bit hash of its values' bytes (vectorised,
   ``pandas.util.hash_array`` over each leaf column rendered as text or bytes); rows whose
   hash occurs as often on both sides match -- equal bytes are equal values;
2. **logic**: the rows left over on either side (e.g. a Variant reassembled from another
   shredding layout has other bytes for the same value) are hashed again with each Variant
   replaced by canonical bytes of its *logical* value (``_Canonical``: the equivalence of
   ``Variant.canonical`` -- int8 ``1`` equals decimal ``1.00``, short and long strings
   alike, dictionaries and field offsets do not matter), and these must match as multisets.

Any difference raises ``ContentCheckError`` naming how many rows differ and one example;
the caller has committed nothing. Hashes are deterministic across processes (no Python
``hash``), so executors and the driver agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from struct import error as struct_error
from struct import unpack_from as struct_unpack_from

import numpy as np
import pyarrow as pa

from varlake.errors import ContentCheckError, VarlakeError
from varlake.shred.schema import is_variant_struct
from varlake.variant import Variant
from varlake.variant import decoder as dec

__all__ = ["RowDigest", "check_same_rows", "logical_hashes", "row_hashes"]

_KEYS = ("varlake-content1", "varlake-content2")  # pandas hash keys: 16 bytes each
_MIX = np.uint64(0x100000001B3)


@dataclass(frozen=True)
class RowDigest:
    """What the check compares for one side: its row count and per-row byte hashes."""

    num_rows: int
    hashes: np.ndarray  # structured (h1, h2) uint64 pairs


def _leaves(array: pa.Array, valid: np.ndarray | None) -> list[tuple[pa.Array, np.ndarray | None]]:
    """Leaf arrays of ``array`` with the validity of their enclosing structs."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_struct(array.type):
        own = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        mask = own if valid is None else (valid & own)
        out = [(array.field(i), mask) for i in range(array.type.num_fields)]
        flat: list[tuple[pa.Array, np.ndarray | None]] = []
        for child, m in out:
            flat.extend(_leaves(child, m))
        flat.append((pa.array(own), None))  # the struct's own NULLs
        return flat
    return [(array, valid)]


def _leaf_values(array: pa.Array, valid: np.ndarray | None) -> np.ndarray:
    """A leaf array's values as an object array of text or bytes (None for NULL)."""
    t = array.type
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_string(t) or pa.types.is_large_string(t):
        values = array.to_numpy(zero_copy_only=False)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t) or pa.types.is_fixed_size_list(t):
        values = np.array([None if v is None else repr(_stable_python(v)) for v in array.to_pylist()], dtype=object)
    else:
        try:
            values = array.cast(pa.string()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            values = np.array([None if v is None else repr(v) for v in array.to_pylist()], dtype=object)
    values = np.asarray(values, dtype=object)
    if valid is not None:
        values = values.copy()
        values[~valid] = None
    return values


def _column_hash(array: pa.Array, valid: np.ndarray | None, key: str) -> np.ndarray:
    from pandas.util import hash_array

    return hash_array(_leaf_values(array, valid), hash_key=key, categorize=False)


def row_hashes(table: pa.Table) -> RowDigest:
    """Per-row 128-bit hashes of ``table``'s values' bytes (column order matters, row order not)."""
    n = table.num_rows
    h1 = np.zeros(n, dtype=np.uint64)
    h2 = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in table.columns:
            for leaf, valid in _leaves(column.combine_chunks() if column.num_chunks != 1 else column.chunk(0), None):
                h1 = (h1 * _MIX) ^ _column_hash(leaf, valid, _KEYS[0])
                h2 = (h2 * _MIX) ^ _column_hash(leaf, valid, _KEYS[1])
    pairs = np.empty(n, dtype=[("a", np.uint64), ("b", np.uint64)])
    pairs["a"], pairs["b"] = h1, h2
    return RowDigest(n, pairs)


def _stable_python(value: Any) -> Any:
    """A deterministic, order-normalised form of a Python value (maps sorted)."""
    if isinstance(value, dict):
        return tuple((k, _stable_python(v)) for k, v in value.items())
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):  # a map's (key, value) pairs
            return ("map", tuple(sorted(((repr(_stable_python(k)), repr(_stable_python(v))) for k, v in value))))
        return tuple(_stable_python(v) for v in value)
    return value


def _stable_canonical(c: Any) -> Any:
    """``Variant.canonical`` made deterministic: object members sorted by key, exact numbers
    as integers or normalised decimals (``1`` and ``1.00`` alike)."""
    if isinstance(c, tuple) and len(c) == 2 and c[0] == "o":
        return ("o", tuple(sorted(((k, _stable_canonical(v)) for k, v in c[1]), key=lambda kv: kv[0])))
    if isinstance(c, tuple) and len(c) == 2 and c[0] == "a":
        return ("a", tuple(_stable_canonical(v) for v in c[1]))
    if isinstance(c, tuple) and len(c) == 2:
        family, value = c
        if isinstance(value, Decimal):
            value = int(value) if value == value.to_integral_value() else str(value.normalize())
        elif isinstance(value, float):
            value = repr(value)
        return (str(family), value)
    return c


_INT_WIDTHS = {3: 1, 4: 2, 5: 4, 6: 8}


class _Canonical:
    """Canonical bytes of Variant values: equal exactly when the values are logically equal
    (the equivalence of ``Variant.canonical``), written in one pass over the bytes. Object
    fields are in key order by the spec, so no sorting is needed; exact numbers meet as
    integers or normalised decimals, short and long strings as strings; other primitives go
    through ``Variant.canonical``. Metadata dictionaries are decoded once each."""

    def __init__(self) -> None:
        self.keys: dict[bytes, tuple[Any, list[bytes]]] = {}

    def __call__(self, metadata: bytes, value: bytes) -> bytes:
        found = self.keys.get(metadata)
        if found is None:
            view = dec.metadata_view(metadata)
            found = (view, [b"%d:" % len(k) + k for k in (view.key_bytes(i) for i in range(view.size))])
            if len(self.keys) < 4096:
                self.keys[metadata] = found
        out: list[bytes] = []
        self._value(found[0], found[1], value, 0, out, metadata)
        return b"".join(out)

    def _value(self, meta: Any, keys: list[bytes], value: bytes, pos: int, out: list[bytes], metadata: bytes) -> None:
        header = value[pos]
        basic = header & 0x03
        if basic == 1:
            n = header >> 2
            out.append(b"S%d:" % n)
            out.append(value[pos + 1 : pos + 1 + n])
        elif basic == 2:
            vh = header >> 2
            osz, isz = (vh & 0x3) + 1, ((vh >> 2) & 0x3) + 1
            if (vh >> 4) & 1:
                n, at = int.from_bytes(value[pos + 1 : pos + 5], "little"), pos + 5
            else:
                n, at = value[pos + 1], pos + 2
            ids = _uints(value, at, n, isz)
            offs_at = at + n * isz
            offs = _uints(value, offs_at, n, osz)
            data = offs_at + (n + 1) * osz
            out.append(b"O%d{" % n)
            for i, o in zip(ids, offs):
                out.append(keys[i])
                self._value(meta, keys, value, data + o, out, metadata)
            out.append(b"}")
        elif basic == 3:
            vh = header >> 2
            osz = (vh & 0x3) + 1
            if (vh >> 2) & 1:
                n, at = int.from_bytes(value[pos + 1 : pos + 5], "little"), pos + 5
            else:
                n, at = value[pos + 1], pos + 2
            data = at + (n + 1) * osz
            out.append(b"A%d[" % n)
            for o in _uints(value, at, n, osz):
                self._value(meta, keys, value, data + o, out, metadata)
            out.append(b"]")
        else:
            t = header >> 2
            width = _INT_WIDTHS.get(t)
            if width is not None:
                out.append(b"I%d;" % int.from_bytes(value[pos + 1 : pos + 1 + width], "little", signed=True))
            elif t == 16:
                n = int.from_bytes(value[pos + 1 : pos + 5], "little")
                out.append(b"S%d:" % n)
                out.append(value[pos + 5 : pos + 5 + n])
            elif t in (0, 1, 2):
                out.append(b"NTF"[t : t + 1])
            elif t in (8, 9, 10):
                unscaled, scale = dec.read_decimal(value, pos)
                whole, rest = divmod(unscaled, 10**scale)
                if not rest:
                    out.append(b"I%d;" % whole)
                else:
                    out.append(b"E" + str(Decimal(unscaled).scaleb(-scale).normalize()).encode() + b";")
            else:
                end = pos + dec.value_size(value, pos)
                sub = Variant(metadata, value[pos:end])
                out.append(b"P" + repr(_stable_canonical(sub.canonical())).encode("utf-8", "surrogatepass") + b";")


_UINT_FORMATS = {2: "H", 4: "I"}


def _uints(value: bytes, at: int, n: int, size: int) -> Sequence[int]:
    """``n`` little-endian unsigned integers of ``size`` bytes from ``at`` (bounds checked)."""
    end = at + n * size
    if end > len(value):
        raise IndexError(f"{n} integers of {size} bytes at {at} run past the end of the value")
    if size == 1:
        return value[at:end]
    fmt = _UINT_FORMATS.get(size)
    if fmt is not None:
        return struct_unpack_from(f"<{n}{fmt}", value, at)
    return [int.from_bytes(value[at + k * size : at + (k + 1) * size], "little") for k in range(n)]


def _canonical_column(array: pa.Array, where: str) -> np.ndarray:
    """Canonical bytes of every Variant of a ``struct<metadata, value>`` array (None for NULL)."""
    canon = _Canonical()
    metas = array.field("metadata").to_pylist()
    values = array.field("value").to_pylist()
    valid = array.is_valid().to_pylist()
    out = np.empty(len(values), dtype=object)
    for i, (m, v, ok) in enumerate(zip(metas, values, valid)):
        if not ok or v is None:
            out[i] = None
            continue
        try:
            out[i] = canon(m, v)
        except (VarlakeError, IndexError, ValueError, struct_error) as exc:
            raise ContentCheckError(f"{where}: a Variant value cannot be decoded: {exc}") from None
    return out


def _logical_leaves(array: pa.Array, valid: np.ndarray | None, where: str) -> list[np.ndarray]:
    """Per-row hashable values of each leaf of ``array``: Variants (at any struct depth) as
    canonical bytes, other leaves as their text or bytes; NULL where an enclosing struct is."""
    if is_variant_struct(array.type):
        values = _canonical_column(array, where)
        if valid is not None:
            values[~valid] = None
        return [values]
    if pa.types.is_struct(array.type):
        own = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        mask = own if valid is None else (valid & own)
        out: list[np.ndarray] = []
        for i in range(array.type.num_fields):
            out.extend(_logical_leaves(array.field(i), mask, where))
        out.append(own.astype(object))
        return out
    return [_leaf_values(array, valid)]


def logical_hashes(table: pa.Table, where: str = "rows") -> np.ndarray:
    """Per-row 128-bit hashes of the rows' logical values: plain columns by their bytes,
    Variant columns (``struct<metadata, value>``, at the top level) by canonical bytes."""
    from pandas.util import hash_array

    n = table.num_rows
    h1 = np.zeros(n, dtype=np.uint64)
    h2 = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in table.columns:
            array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
            for values in _logical_leaves(array, None, where):
                h1 = (h1 * _MIX) ^ hash_array(values, hash_key=_KEYS[0], categorize=False)
                h2 = (h2 * _MIX) ^ hash_array(values, hash_key=_KEYS[1], categorize=False)
    pairs = np.empty(n, dtype=[("a", np.uint64), ("b", np.uint64)])
    pairs["a"], pairs["b"] = h1, h2
    return _as_void(pairs)


def _as_void(pairs: np.ndarray) -> np.ndarray:
    """Hash pairs as 16-byte opaque values (sorted and compared by their bytes, fast)."""
    return np.ascontiguousarray(pairs).view(np.dtype("V16"))


def _excess(mine: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """Indices of ``mine``'s rows whose hash occurs more often in ``mine`` than in ``theirs``."""
    if not len(mine):
        return np.zeros(0, dtype=np.int64)
    uniq, inverse, counts = np.unique(mine, return_inverse=True, return_counts=True)
    other_u, other_c = np.unique(theirs, return_counts=True) if len(theirs) else (theirs[:0], np.zeros(0, np.int64))
    pos = np.searchsorted(other_u, uniq) if len(other_u) else np.zeros(len(uniq), dtype=np.int64)
    found = np.zeros(len(uniq), dtype=bool)
    if len(other_u):
        inside = pos < len(other_u)
        found[inside] = other_u[pos[inside]] == uniq[inside]
    theirs_count = np.zeros(len(uniq), dtype=np.int64)
    theirs_count[found] = other_c[pos[found]]
    keep = counts - theirs_count  # rows of each hash to take from mine
    order = np.argsort(inverse, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    picked = [order[starts[i] : starts[i] + keep[i]] for i in np.flatnonzero(keep > 0)]
    return np.concatenate(picked).astype(np.int64) if picked else np.zeros(0, dtype=np.int64)


def check_same_rows(read: pa.Table | Sequence[pa.Table], written: pa.Table | Sequence[pa.Table], where: str) -> int:
    """Raise ``ContentCheckError`` unless ``written`` holds the same multiset of logical rows
    as ``read``; the number of rows compared."""
    read = read if isinstance(read, pa.Table) else _concat(read)
    written = written if isinstance(written, pa.Table) else _concat(written, read.schema)
    if read.schema.names != written.schema.names:
        written = written.select([n for n in read.schema.names if n in written.schema.names])
    if read.num_rows != written.num_rows:
        raise ContentCheckError(
            f"{where}: the rewrite read {read.num_rows} rows and wrote {written.num_rows}; nothing was committed"
        )
    a, b = _as_void(row_hashes(read).hashes), _as_void(row_hashes(written).hashes)
    if np.array_equal(np.sort(a), np.sort(b)):
        return read.num_rows
    only_read, only_written = _excess(a, b), _excess(b, a)
    if not len(only_read) and not len(only_written):
        return read.num_rows
    left = logical_hashes(read.take(pa.array(only_read)), where)
    right = logical_hashes(written.take(pa.array(only_written)), where)
    missing = _excess(left, right)
    if len(missing):
        lost = _excess(right, left)
        example = read.take(pa.array([only_read[missing[0]]])).to_pylist()[0]
        raise ContentCheckError(
            f"{where}: {len(missing)} of {read.num_rows} rows read were not written as they were "
            f"({len(lost)} rows written differ), e.g. {_short(example)}; nothing was committed"
        )
    return read.num_rows


def _short(row: Any) -> str:
    def show(v: Any) -> Any:
        if isinstance(v, dict) and set(v) == {"metadata", "value"} and v["value"] is not None:
            try:
                return Variant(v["metadata"], v["value"]).to_json()
            except VarlakeError:
                return "<undecodable Variant>"
        return v

    text = repr({k: show(v) for k, v in row.items()} if isinstance(row, dict) else row)
    return text if len(text) <= 300 else text[:297] + "..."


def _concat(parts: Sequence[pa.Table], schema: pa.Schema | None = None) -> pa.Table:
    parts = [p for p in parts if p is not None]
    if not parts:
        return (schema or pa.schema([])).empty_table()
    return pa.concat_tables(parts, promote_options="default") if len(parts) > 1 else parts[0]
