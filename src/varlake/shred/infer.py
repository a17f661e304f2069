"""Infer a shredding schema from a sample of Variant values, and evolve it across files.

One pass over the sample counts, for every path (object fields by name, array elements
as one path), how many rows hold it and which kinds of value it has, plus the integer
range and decimal digits. The schema is then read off those counts, so the result is
deterministic and independent of row order (fields come out sorted by name).

A path is shredded when it occurs in at least ``min_frequency`` of the (non-null) rows
and at least ``min_type_share`` of its non-null values share one type family (Variant
nulls are left out: they go to ``value`` as ``00`` whatever the type). The minority
stays in ``value``. Integers get the narrowest width that holds every observed integer;
decimals widen to hold every observed decimal's integer digits and scale; objects shred
their frequent fields; arrays shred their elements (objects inside included).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa

from varlake.errors import ShreddingError
from varlake.shred.columnar_read import Fallback
from varlake.shred.columnar_stats import Kinds, collect_columnar
from varlake.shred.schema import (
    MAX_DECIMAL_PRECISION,
    TIME_US,
    TIMESTAMP_NS_NTZ,
    TIMESTAMP_NS_UTC,
    TIMESTAMP_NTZ,
    TIMESTAMP_UTC,
    UUID_TYPE,
    ShreddingSchema,
)
from varlake.variant import Variant
from varlake.variant import decoder as dec

# Kinds of value (finer than the spec's families where the physical column differs).
NULL, BOOL, INT, DECIMAL, DOUBLE, FLOAT, STRING, BINARY, DATE, TIME = range(10)
TS_US, TS_NS, NTZ_US, NTZ_NS, UUID, OBJECT, ARRAY = range(10, 17)

_KIND_OF_PRIMITIVE = {
    0: NULL, 1: BOOL, 2: BOOL, 3: INT, 4: INT, 5: INT, 6: INT, 7: DOUBLE, 8: DECIMAL, 9: DECIMAL, 10: DECIMAL,
    11: DATE, 12: TS_US, 13: NTZ_US, 14: FLOAT, 15: BINARY, 16: STRING, 17: TIME, 18: TS_NS, 19: NTZ_NS, 20: UUID,
}
# Type families (VariantEncoding.md's equivalence classes), by kind.
_FAMILY = {INT: "exact", DECIMAL: "exact", TS_US: "timestamp", TS_NS: "timestamp", NTZ_US: "timestamp_ntz", NTZ_NS: "timestamp_ntz"}
_SIMPLE_LEAF = {
    BOOL: pa.bool_(), DOUBLE: pa.float64(), FLOAT: pa.float32(), STRING: pa.string(), BINARY: pa.binary(),
    DATE: pa.date32(), TIME: TIME_US, TS_US: TIMESTAMP_UTC, TS_NS: TIMESTAMP_NS_UTC, NTZ_US: TIMESTAMP_NTZ,
    NTZ_NS: TIMESTAMP_NS_NTZ, UUID: UUID_TYPE,
}
_INT_TYPES = [(8, pa.int8()), (16, pa.int16()), (32, pa.int32()), (64, pa.int64())]


def _family(kind: int) -> str:
    return _FAMILY.get(kind, str(kind))


@dataclass
class PathStats:
    """What the sample holds at one path."""

    rows: int = 0  # rows in which the path occurs (counted once per row)
    last_row: int = -1
    kinds: dict[int, int] = field(default_factory=dict)
    int_min: int = 0
    int_max: int = 0
    dec_int_digits: int = 0  # max digits left of the point among decimals
    dec_scale: int = 0  # max scale among decimals
    children: dict[str, "PathStats"] = field(default_factory=dict)
    element: "PathStats | None" = None

    @property
    def non_null(self) -> int:
        return sum(c for k, c in self.kinds.items() if k != NULL)


class _Collector:
    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.root = PathStats()
        self.rows = 0

    def add(self, metadata: bytes, value: bytes) -> None:
        keys = dec.metadata_view(metadata).keys()
        self._observe(self.root, keys, value, 0, self.rows, 0)
        self.rows += 1

    def _observe(self, node: PathStats, keys: list[str], b: bytes, p: int, row: int, depth: int) -> None:
        if node.last_row != row:
            node.last_row = row
            node.rows += 1
        h = b[p]
        basic = h & 0x03
        if basic == 2:
            kind = OBJECT
        elif basic == 3:
            kind = ARRAY
        elif basic == 1:
            kind = STRING
        else:
            kind = _KIND_OF_PRIMITIVE.get(h >> 2, -1)
            if kind < 0:
                raise ShreddingError(f"unknown Variant primitive type {h >> 2} in sample row {row}")
        node.kinds[kind] = node.kinds.get(kind, 0) + 1
        if kind == INT:
            v = dec.primitive_int(b, p)
            assert v is not None
            if node.kinds[INT] == 1:
                node.int_min = node.int_max = v
            elif v < node.int_min:
                node.int_min = v
            elif v > node.int_max:
                node.int_max = v
        elif kind == DECIMAL:
            width = {8: 4, 9: 8, 10: 16}[h >> 2]
            scale = b[p + 1]
            unscaled = abs(int.from_bytes(b[p + 2 : p + 2 + width], "little", signed=True))
            digits = len(str(unscaled)) if unscaled else 0
            node.dec_scale = max(node.dec_scale, scale)
            node.dec_int_digits = max(node.dec_int_digits, digits - scale)
        elif depth >= self.max_depth:
            return
        elif kind == OBJECT:
            children = node.children
            for key, cp in _entries(keys, b, p):
                child = children.get(key)
                if child is None:
                    child = children[key] = PathStats()
                self._observe(child, keys, b, cp, row, depth + 1)
        elif kind == ARRAY:
            if node.element is None:
                node.element = PathStats()
            for ep in dec.array_positions(b, p):
                self._observe(node.element, keys, b, ep, row, depth + 1)


_KINDS = Kinds(_KIND_OF_PRIMITIVE, OBJECT, ARRAY, STRING, INT, DECIMAL)


def _entries(keys: list[str], b: bytes, p: int) -> list[tuple[str, int]]:
    n, isz, osz, ids, offs, data = dec.object_layout(b, p)
    read = dec.read_uint
    return [(keys[read(b, ids + k * isz, isz)], data + read(b, offs + k * osz, osz)) for k in range(n)]


def collect(sample: Iterable[Variant | None] | pa.Array | pa.ChunkedArray, max_depth: int = 50) -> tuple[PathStats, int]:
    """Path statistics of a sample and the number of non-null rows in it."""
    col = _Collector(max_depth)
    if isinstance(sample, (pa.Array, pa.ChunkedArray)):
        arr = sample.combine_chunks() if isinstance(sample, pa.ChunkedArray) else sample
        if not pa.types.is_struct(arr.type) or arr.type.get_field_index("metadata") < 0 or arr.type.get_field_index("value") < 0:
            raise ShreddingError(f"inference needs a Variant column struct<metadata, value>, got {arr.type}")
        try:  # a column at a time; what that leaves alone goes row by row below
            return collect_columnar(arr, max_depth, _KINDS, PathStats)
        except Fallback:
            pass
        valid = arr.is_valid().to_pylist()
        metas = arr.field("metadata").to_pylist()
        values = arr.field("value").to_pylist()
        pairs: Iterable[tuple[bytes | None, bytes | None]] = (
            (m, v) if ok else (None, None) for ok, m, v in zip(valid, metas, values)
        )
    else:
        pairs = ((None, None) if v is None else (v.metadata, v.value) for v in sample)
    for m, v in pairs:
        if m is None or v is None:
            continue
        try:
            col.add(m, v)
        except (IndexError, KeyError, ValueError, struct.error) as exc:
            raise ShreddingError(f"malformed Variant in sample row {col.rows}: {exc}") from None
    return col.root, col.rows


# --- reading a schema off the statistics ---------------------------------------------------------------


# Leaf types Spark 4.3 cannot read from a shredded file (it fails on the whole file).
SPARK_UNREADABLE = frozenset({TIME, UUID, TS_NS, NTZ_NS})


@dataclass(frozen=True)
class _Limits:
    min_frequency: float
    min_type_share: float
    max_leaves: int
    max_depth: int
    exclude: frozenset[int]


class _Builder:
    def __init__(self, total_rows: int, limits: _Limits) -> None:
        self.total = total_rows
        self.lim = limits
        self.min_rows = max(1, _ceil(limits.min_frequency * total_rows))
        self.allowed: set[tuple[str | None, ...]] | None = None  # leaf paths kept under max_leaves
        self.leaves: list[tuple[int, tuple[str | None, ...]]] = []

    def frequent(self, node: PathStats | None) -> bool:
        return node is not None and node.rows >= self.min_rows

    def build(self, node: PathStats, path: tuple[str | None, ...]) -> pa.DataType | None:
        kind = dominant_kind(node, self.lim.min_type_share, self.lim.exclude)
        if kind is None or len(path) > self.lim.max_depth:
            return None
        if kind == OBJECT:
            fields = []
            for name in sorted(node.children, key=lambda k: k.encode("utf-8")):
                child = node.children[name]
                if not self.frequent(child):
                    continue
                t = self.build(child, path + (name,))
                if t is not None:
                    fields.append(pa.field(name, t))
            return pa.struct(fields) if fields else None
        if kind == ARRAY:
            if node.element is None:
                return None
            t = self.build(node.element, path + (None,))
            return pa.list_(t) if t is not None else None
        if self.allowed is not None and path not in self.allowed:
            return None
        self.leaves.append((node.rows, path))
        return leaf_type(node, kind)


def _ceil(x: float) -> int:
    i = int(x)
    return i if i == x else i + 1


def dominant_kind(node: PathStats, min_type_share: float, exclude: frozenset[int] = frozenset()) -> int | None:
    """The kind to shred at ``node``, if one family holds ``min_type_share`` of its values
    (kinds in ``exclude`` are never chosen)."""
    non_null = node.non_null
    if non_null == 0:
        return None
    families: dict[str, int] = {}
    for kind, count in node.kinds.items():
        if kind != NULL:
            families[_family(kind)] = families.get(_family(kind), 0) + count
    family, count = min(families.items(), key=lambda fc: (-fc[1], fc[0]))
    if count < min_type_share * non_null:
        return None
    if family == "exact":
        # A decimal column also holds the integers (rescaled); an integer column holds no decimals.
        return DECIMAL if node.kinds.get(DECIMAL) else INT
    members = [(node.kinds[k], -k, k) for k in node.kinds if k != NULL and _family(k) == family and k not in exclude]
    return max(members)[2] if members else None


def leaf_type(node: PathStats, kind: int) -> pa.DataType:
    """The Arrow type of a leaf of ``kind`` covering the observed values."""
    if kind == INT:
        for bits, t in _INT_TYPES:
            lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            if lo <= node.int_min and node.int_max <= hi:
                return t
        return pa.int64()
    if kind == DECIMAL:
        return _decimal_type(max(node.dec_int_digits, _int_digits(node)), node.dec_scale)
    return _SIMPLE_LEAF[kind]


def _int_digits(node: PathStats) -> int:
    """Digits of the widest integer seen (0 when there were none)."""
    if not node.kinds.get(INT):
        return 0
    return len(str(max(abs(node.int_min), abs(node.int_max))))


def _decimal_type(int_digits: int, scale: int) -> pa.DataType:
    int_digits = max(int_digits, 0)
    scale = min(scale, MAX_DECIMAL_PRECISION)
    if int_digits + scale > MAX_DECIMAL_PRECISION:
        scale = max(0, MAX_DECIMAL_PRECISION - int_digits)
    return pa.decimal128(max(1, min(MAX_DECIMAL_PRECISION, int_digits + scale)), scale)


def _leaf_count(t: pa.DataType | None) -> int:
    if t is None:
        return 0
    return len(ShreddingSchema(t).leaves())


def _build_limited(root: PathStats, total: int, lim: _Limits) -> pa.DataType | None:
    b = _Builder(total, lim)
    t = b.build(root, ())
    if t is None or len(b.leaves) <= lim.max_leaves:
        return t
    # Keep the most frequent leaves (ties by path text, so the choice is deterministic).
    ranked = sorted(b.leaves, key=lambda rp: (-rp[0], _path_key(rp[1])))
    b2 = _Builder(total, lim)
    b2.allowed = {p for _, p in ranked[: lim.max_leaves]}
    return b2.build(root, ())


def _path_key(path: tuple[str | None, ...]) -> tuple[tuple[int, bytes], ...]:
    return tuple((0, b"") if s is None else (1, s.encode("utf-8")) for s in path)


def _check(min_frequency: float, min_type_share: float, max_leaves: int, max_depth: int, spark_compatible: bool) -> _Limits:
    if not 0 < min_frequency <= 1 or not 0 < min_type_share <= 1:
        raise ShreddingError(f"min_frequency and min_type_share must be in (0, 1], got {min_frequency}, {min_type_share}")
    if max_leaves < 1 or max_depth < 0:
        raise ShreddingError(f"max_leaves must be >= 1 and max_depth >= 0, got {max_leaves}, {max_depth}")
    return _Limits(min_frequency, min_type_share, max_leaves, max_depth, SPARK_UNREADABLE if spark_compatible else frozenset())


def infer_shredding_schema(
    sample: Iterable[Variant | None] | pa.Array | pa.ChunkedArray,
    min_frequency: float = 0.10,
    min_type_share: float = 0.99,
    max_leaves: int = 300,
    max_depth: int = 50,
    *,
    spark_compatible: bool = True,
) -> ShreddingSchema | None:
    """The shredding schema the sample suggests, or None when nothing is worth shredding
    (empty or all-null sample, no uniform type at the top, an object with no frequent field).

    ``spark_compatible`` leaves time, UUID and nanosecond timestamps unshredded: Spark 4.3
    refuses to read files that shred them."""
    lim = _check(min_frequency, min_type_share, max_leaves, max_depth, spark_compatible)
    root, total = collect(sample, max_depth)
    if total == 0:
        return None
    t = _build_limited(root, total, lim)
    return ShreddingSchema(t) if t is not None else None


# --- evolution ---------------------------------------------------------------------------------------------


def _share(t: pa.DataType, node: PathStats) -> float:
    """Fraction of the node's non-null values that a column of type ``t`` can hold."""
    non_null = node.non_null
    if non_null == 0:
        return 1.0
    if pa.types.is_struct(t):
        held = node.kinds.get(OBJECT, 0)
    elif pa.types.is_list(t):
        held = node.kinds.get(ARRAY, 0)
    elif pa.types.is_integer(t):
        held = node.kinds.get(INT, 0)
    elif pa.types.is_decimal(t):
        held = node.kinds.get(DECIMAL, 0) + node.kinds.get(INT, 0)
    else:
        held = sum(node.kinds.get(k, 0) for k, lt in _SIMPLE_LEAF.items() if lt == t)
    return held / non_null


def _widen(current: pa.DataType, node: PathStats) -> pa.DataType:
    """``current`` widened to also hold the sample's integers or decimals."""
    if pa.types.is_integer(current) and node.kinds.get(INT):
        new = leaf_type(node, INT)
        return new if new.bit_width > current.bit_width else current
    if pa.types.is_decimal(current) and (node.kinds.get(DECIMAL) or node.kinds.get(INT)):
        digits = max(current.precision - current.scale, node.dec_int_digits, _int_digits(node))
        return _decimal_type(digits, max(current.scale, node.dec_scale))
    return current


class _Evolver:
    def __init__(self, builder: _Builder) -> None:
        self.b = builder

    def merge(self, current: pa.DataType, node: PathStats | None, path: tuple[str | None, ...], check_frequency: bool) -> pa.DataType | None:
        if node is None or (check_frequency and not self.b.frequent(node)):
            return None
        lim = self.b.lim
        if _share(current, node) < lim.min_type_share:
            inferred = self.b.build(node, path)
            if inferred is not None:
                return inferred
        if pa.types.is_struct(current):
            fields = []
            names = set()
            for i in range(current.num_fields):
                f = current.field(i)
                names.add(f.name)
                t = self.merge(f.type, node.children.get(f.name), path + (f.name,), True)
                if t is not None:
                    fields.append(pa.field(f.name, t))
            for name in sorted((n for n in node.children if n not in names), key=lambda k: k.encode("utf-8")):
                child = node.children[name]
                if self.b.frequent(child) and (t := self.b.build(child, path + (name,))) is not None:
                    fields.append(pa.field(name, t))
            return pa.struct(fields) if fields else None
        if pa.types.is_list(current):
            t = self.merge(current.value_type, node.element, path + (None,), False)
            return pa.list_(t) if t is not None else None
        return _widen(current, node)


def evolve(
    current: ShreddingSchema | pa.DataType | str | None,
    sample: Iterable[Variant | None] | pa.Array | pa.ChunkedArray,
    min_frequency: float = 0.10,
    min_type_share: float = 0.99,
    max_leaves: int = 300,
    max_depth: int = 50,
    *,
    spark_compatible: bool = True,
) -> ShreddingSchema | None:
    """``current`` updated with ``sample``: paths that stay frequent keep their place and
    type (integers and decimals widen when the sample needs it; a path whose values moved
    to another type family is re-inferred), new frequent paths are appended (sorted),
    paths no longer frequent are dropped. Successive files thus share one layout."""
    lim = _check(min_frequency, min_type_share, max_leaves, max_depth, spark_compatible)
    root, total = collect(sample, max_depth)
    if current is None:
        if total == 0:
            return None
        t = _build_limited(root, total, lim)
        return ShreddingSchema(t) if t is not None else None
    cur = ShreddingSchema.parse(current).arrow_type
    if total == 0:
        return ShreddingSchema(cur)
    builder = _Builder(total, lim)
    merged = _Evolver(builder).merge(cur, root, (), False)
    if merged is None:
        return None
    if _leaf_count(merged) > max_leaves:
        merged = _trim_new_leaves(merged, cur, max_leaves)
    return ShreddingSchema(merged)


def _trim_new_leaves(merged: pa.DataType, current: pa.DataType, max_leaves: int) -> pa.DataType:
    """Drop appended fields (last first) until at most ``max_leaves`` leaves remain."""
    while _leaf_count(merged) > max_leaves and pa.types.is_struct(merged):
        cur_names = {current.field(i).name for i in range(current.num_fields)} if pa.types.is_struct(current) else set()
        new = [i for i in range(merged.num_fields) if merged.field(i).name not in cur_names]
        if not new:
            break
        merged = pa.struct([merged.field(i) for i in range(merged.num_fields) if i != new[-1]])
    return merged
