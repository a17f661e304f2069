"""The content check of a rewrite: the multiset of logical rows written equals the multiset read.

Both sides are Arrow tables in the table's logical schema (Variants as
``struct<metadata, value>``, deleted rows already dropped). The check is order-independent
and runs in two steps:

1. **bytes**: every row gets a 128-bit hash of its values' bytes, a column at a time
   (``_leaf_lanes``: integer-like leaves by a bijective mix of their values, binaries and
   strings by SipHash -- ``pandas.util.hash_array`` -- of their distinct values, other
   leaves by their text); rows whose hash occurs as often on both sides match -- equal
   bytes are equal values. The multisets are compared by two radix sorts of the hash lanes
   (``_differences``);
2. **logic**: the rows left over on either side (e.g. a Variant reassembled from another
   shredding layout, or in another batch, has other bytes for the same value) are hashed
   again with each Variant hashed by its *logical* value (``logical_hashes``, through
   ``write.variant_hash``: the equivalence of ``Variant.canonical`` -- int8 ``1`` equals
   decimal ``1.00``, short and long strings alike, dictionaries, field order and offsets do
   not matter -- computed a column at a time through the shredded form), and these must
   match as multisets.

Any difference raises ``ContentCheckError`` naming how many rows differ and one example;
the caller has committed nothing. Hashes are deterministic across processes (no Python
``hash``), so executors and the driver agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.errors import ContentCheckError, VarlakeError
from varlake.shred.schema import is_variant_struct
from varlake.write.maintenance.variant_hash import variant_hashes
from varlake.variant import Variant

__all__ = ["MultisetDigest", "RowDigest", "check_same_rows", "logical_hashes", "multiset_digest", "row_hashes", "row_text"]

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
    if isinstance(array.type, pa.BaseExtensionType):
        array = array.storage
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


_NULL_LEAF = (np.uint64(0x3C6EF372FE94F82B), np.uint64(0xA54FF53A5F1D36F1))
_NUMBER_SALT = (np.uint64(0x510E527FADE682D1), np.uint64(0x9B05688C2B3E6C1F))


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (wrapping ``uint64`` arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _integer_view(array: pa.Array) -> np.ndarray | None:
    """The values of an integer-like leaf (integers, booleans, dates, times, timestamps,
    durations) as ``uint64`` (NULL slots arbitrary), or None for other types."""
    t = array.type
    if pa.types.is_boolean(t):
        return np.asarray(array.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint64)
    if not (pa.types.is_integer(t) or pa.types.is_temporal(t)) or pa.types.is_interval(t):
        return None
    width = t.bit_width
    plain = {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}.get(width)
    if plain is None:
        return None
    if not pa.types.is_integer(t):
        array = array.view(plain)
    values = array.fill_null(0).to_numpy(zero_copy_only=False)
    return values.astype(np.int64, copy=False).view(np.uint64) if values.dtype != np.uint64 else values


def _repetitive(array: pa.Array) -> bool:
    """A binary or string leaf whose first rows repeat values (hashing distinct values pays)."""
    t = array.type
    if not (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_string(t) or pa.types.is_large_string(t)):
        return False
    head = array.slice(0, 2048)
    return len(head) > 0 and len(pc.dictionary_encode(head).dictionary) * 4 <= len(head)


def _leaf_lanes(array: pa.Array, valid: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Two ``uint64`` lanes hashing each value of a leaf by its bytes (NULL, or NULL enclosing
    struct, a constant): integer-like leaves numerically, binaries and strings by SipHash of
    their distinct values when they repeat (``dictionary_encode``: Variant metadata is
    hashed once per dictionary), anything else by its text or bytes (``_leaf_values``)."""
    from pandas.util import hash_array

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    t = array.type
    own = None if array.null_count == 0 else np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    numbers = _integer_view(array)
    if numbers is not None:
        lanes = (_mix64(numbers ^ _NUMBER_SALT[0]), _mix64(numbers ^ _NUMBER_SALT[1]))
    elif _repetitive(array):
        encoded = pc.dictionary_encode(array)
        distinct = np.asarray(encoded.dictionary.to_numpy(zero_copy_only=False), dtype=object)
        index = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False)
        if not len(distinct):
            distinct, index = np.array([b""], dtype=object), np.zeros(len(array), dtype=np.int64)
        lanes = tuple(hash_array(distinct, hash_key=k, categorize=False)[index] for k in _KEYS)  # type: ignore[assignment]
    else:
        values = _leaf_values(array, None)
        lanes = tuple(hash_array(values, hash_key=k, categorize=False) for k in _KEYS)  # type: ignore[assignment]
    keep = own if valid is None else (valid if own is None else valid & own)
    if keep is not None and not keep.all():
        lanes = (np.where(keep, lanes[0], _NULL_LEAF[0]), np.where(keep, lanes[1], _NULL_LEAF[1]))
    return lanes


def row_hashes(table: pa.Table) -> RowDigest:
    """Per-row 128-bit hashes of ``table``'s values' bytes (column order matters, row order not)."""
    n = table.num_rows
    h1 = np.zeros(n, dtype=np.uint64)
    h2 = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in table.columns:
            for leaf, valid in _leaves(column.combine_chunks() if column.num_chunks != 1 else column.chunk(0), None):
                a, b = _leaf_lanes(leaf, valid)
                h1 = (h1 * _MIX) ^ a
                h2 = (h2 * _MIX) ^ b
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


def _logical_leaves(array: pa.Array, valid: np.ndarray | None, where: str) -> list[Any]:
    """Per-row hashable values of each leaf of ``array``: Variants (at any struct depth) as
    their two lanes of logical hashes (``variant_hash``), other leaves by their bytes (``_leaf_lanes``);
    NULL where an enclosing struct is."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if isinstance(array.type, pa.BaseExtensionType):  # arrow.parquet.variant: its struct storage
        array = array.storage
    if is_variant_struct(array.type):
        a, b = variant_hashes(array, where)
        if valid is not None and not valid.all():
            a, b = np.where(valid, a, _NULL_LANES[0]), np.where(valid, b, _NULL_LANES[1])
        return [(a, b)]
    if pa.types.is_struct(array.type):
        own = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        mask = own if valid is None else (valid & own)
        out: list[Any] = []
        for i in range(array.type.num_fields):
            out.extend(_logical_leaves(array.field(i), mask, where))
        out.append(_leaf_lanes(pa.array(own), None))
        return out
    return [_leaf_lanes(array, valid)]


_NULL_LANES = (np.uint64(0x6A09E667F3BCC908), np.uint64(0xBB67AE8584CAA73B))


def logical_hashes(table: pa.Table, where: str = "rows") -> np.ndarray:
    """Per-row 128-bit hashes of the rows' logical values: plain columns by their bytes,
    Variant columns (``struct<metadata, value>``, at any struct depth) by their logical value
    (``write.variant_hash``: int8 ``1`` equals decimal ``1.00``; field order, dictionaries and
    shredding layouts do not matter). Deterministic: the same in every process and batch."""
    n = table.num_rows
    h1 = np.zeros(n, dtype=np.uint64)
    h2 = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in table.columns:
            array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
            for a, b in _logical_leaves(array, None, where):
                h1 = (h1 * _MIX) ^ a
                h2 = (h2 * _MIX) ^ b
    pairs = np.empty(n, dtype=[("a", np.uint64), ("b", np.uint64)])
    pairs["a"], pairs["b"] = h1, h2
    return _as_void(pairs)


def _as_void(pairs: np.ndarray) -> np.ndarray:
    """Hash pairs as 16-byte opaque values (sorted and compared by their bytes, fast)."""
    return np.ascontiguousarray(pairs).view(np.dtype("V16"))


def _lanes(hashes: np.ndarray) -> np.ndarray:
    """Hashes (16-byte values or (a, b) records) as an ``(n, 2)`` ``uint64`` matrix."""
    return np.ascontiguousarray(hashes).view(np.uint64).reshape(-1, 2)


def _differences(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the rows of ``left`` whose 128-bit hash occurs more often in ``left`` than
    in ``right``, and the same for ``right``: the multiset difference both ways, vectorised
    (the pairs are sorted with two stable radix sorts of ``uint64``, then counted per run
    of equal pairs)."""
    lhs, rhs = _lanes(left), _lanes(right)
    nl = len(lhs)
    a = np.concatenate([lhs[:, 0], rhs[:, 0]])
    b = np.concatenate([lhs[:, 1], rhs[:, 1]])
    if not len(a):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(b, kind="stable")
    order = order[np.argsort(a[order], kind="stable")]
    a, b = a[order], b[order]
    is_left = order < nl
    starts = np.ones(len(a), dtype=bool)
    starts[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    out = []
    for mine, counts_other in ((is_left, ~is_left), (~is_left, is_left)):
        other = np.add.reduceat(counts_other.astype(np.int64), first)
        seen = np.cumsum(mine) - 1  # rows of this side before, overall
        before = seen[first] - mine[first] + 1  # ... before the run starts
        rank = seen - before[group]  # rank of this side's row within its run
        excess = mine & (rank >= other[group])
        picked = order[excess]
        out.append(np.sort(picked if mine is is_left else picked - nl).astype(np.int64))
    return out[0], out[1]


def _same_pairs(left: np.ndarray, right: np.ndarray) -> bool:
    """Whether two arrays of (a, b) hash pairs are equal as multisets: both sorted by ``a``
    (a fast ``uint64`` sort), then compared whole; equal ``a`` values in another order
    (duplicate rows) fall back to the full multiset difference."""
    ol, orr = np.argsort(left["a"], kind="stable"), np.argsort(right["a"], kind="stable")
    if not np.array_equal(left["a"][ol], right["a"][orr]):
        return False
    if np.array_equal(left["b"][ol], right["b"][orr]):
        return True
    only_left, only_right = _differences(left, right)
    return not len(only_left) and not len(only_right)


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
    pa_, pb_ = row_hashes(read).hashes, row_hashes(written).hashes
    if _same_pairs(pa_, pb_):
        return read.num_rows
    only_read, only_written = _differences(pa_, pb_)
    if not len(only_read) and not len(only_written):
        return read.num_rows
    left = logical_hashes(read.take(pa.array(only_read)), where)
    right = logical_hashes(written.take(pa.array(only_written)), where)
    missing, lost = _differences(left, right)
    if len(missing):
        example = read.take(pa.array([only_read[missing[0]]])).to_pylist()[0]
        raise ContentCheckError(
            f"{where}: {len(missing)} of {read.num_rows} rows read were not written as they were "
            f"({len(lost)} rows written differ), e.g. {row_text(example)}; nothing was committed"
        )
    return read.num_rows


def row_text(row: Any) -> str:
    """A row as short text for an error message, Variants as JSON."""

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


# --- an aggregable digest of a multiset of logical rows (the check on Spark's executors) ----------

_U64 = (1 << 64) - 1
_FMIX = (np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))
_SALTS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD6E8FEB86659FD93))


def _fmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser: a non-linear bijection of ``uint64`` (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _FMIX[0]
    x = x ^ (x >> np.uint64(27))
    x = x * _FMIX[1]
    return x ^ (x >> np.uint64(31))


@dataclass(frozen=True)
class MultisetDigest:
    """An order-independent digest of a multiset of logical rows that parts combine into
    (``a.combine(b)`` or ``a + b``: the digest of both parts' rows together), so executors
    digest their share and the driver adds a few numbers.

    ``rows`` counts them; ``sum1``/``sum2`` are the sums modulo 2**64 of the two 64-bit
    lanes of each row's ``logical_hashes`` value (an additive multiset hash); ``mix1``/``mix2``
    are sums of a non-linear mix of both lanes, a second independent aggregate, so that rows
    whose lane sums cancel by construction still change the digest."""

    rows: int = 0
    sum1: int = 0
    sum2: int = 0
    mix1: int = 0
    mix2: int = 0

    def combine(self, other: "MultisetDigest") -> "MultisetDigest":
        return MultisetDigest(
            self.rows + other.rows,
            (self.sum1 + other.sum1) & _U64,
            (self.sum2 + other.sum2) & _U64,
            (self.mix1 + other.mix1) & _U64,
            (self.mix2 + other.mix2) & _U64,
        )

    __add__ = combine

    def as_tuple(self) -> tuple[int, int, int, int, int]:
        return (self.rows, self.sum1, self.sum2, self.mix1, self.mix2)

    @classmethod
    def from_signed(cls, values: Sequence[int]) -> "MultisetDigest":
        """From ``as_tuple`` values carried as signed 64-bit integers (Spark's ``bigint``)."""
        rows, *rest = (int(v) for v in values)
        return cls(rows, *(v & _U64 for v in rest))


def multiset_digest(table: pa.Table, where: str = "rows") -> MultisetDigest:
    """The ``MultisetDigest`` of ``table``'s rows by their logical values (``logical_hashes``:
    Variants canonical); equal multisets of rows give equal digests whatever the order or
    the split into parts, and the hashes are the same in every process."""
    if not table.num_rows:
        return MultisetDigest()
    lanes = logical_hashes(table, where).view(np.uint64).reshape(-1, 2)
    a, b = lanes[:, 0], lanes[:, 1]
    with np.errstate(over="ignore"):
        m1 = _fmix64(a ^ _fmix64(b ^ _SALTS[0]))
        m2 = _fmix64(b ^ _fmix64(a ^ _SALTS[1]))
        sums = [int(np.sum(x, dtype=np.uint64)) for x in (a, b, m1, m2)]
    return MultisetDigest(table.num_rows, *sums)
