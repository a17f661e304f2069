"""Shredding: Variant values -> the physical ``{metadata, value, typed_value}`` layout.

``shred`` runs the numpy/Arrow kernels of ``columnar``. ``shred_rows`` is the reference
they must equal, and the path for input they leave alone: each level of the schema walks
all rows in Python once, handing its children the positions of their sub-values inside
the original row buffers, so no value is decoded twice.

Rules (VariantShredding.md):
* a leaf value goes to ``typed_value`` when it has the leaf's type; integers of a
  narrower width fit wider integer leaves, and integers and decimals of a smaller scale
  fit a decimal leaf when rescaling loses nothing (they read back logically equal, and
  Spark renders them the same); everything else stays in ``value``;
* an object fills ``typed_value`` with one ``{value, typed_value}`` group per schema
  field (both null = field missing) and keeps its other fields, if any, as a residual
  object in ``value`` that reuses the row's metadata;
* an array fills ``typed_value`` with one group per element (never missing: a null
  element is the Variant null ``00`` in ``value``);
* a SQL NULL Variant is a null struct; a Variant null is ``value = 00``.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from varlake.errors import MalformedVariantError, ShreddingError
from varlake.shred.columnar import Fallback, shred_columnar
from varlake.shred.leaf_convert import NO, leaf_converter
from varlake.shred.schema import UUID_TYPE, ShreddingSchema, variant_struct
from varlake.variant import Variant
from varlake.variant import decoder as dec
from varlake.variant.encoder import encode_object

_U32 = struct.Struct("<I")
_NO = NO
_KEY_CACHE_LIMIT = 4096
_LEVEL_IDS = itertools.count()  # a fresh key per object level for _Dict.maps


def _typed_leaf_array(t: pa.DataType, items: list[Any]) -> pa.Array:
    """Arrow array of converted leaf values (None = null)."""
    if pa.types.is_decimal(t):
        return _decimal_array(t, items)
    if t == UUID_TYPE:
        return pa.ExtensionArray.from_storage(UUID_TYPE, pa.array(items, pa.binary(16)))
    return pa.array(items, type=t)


def _decimal_array(t: pa.DataType, unscaled: list[int | None]) -> pa.Array:
    """decimal128 from unscaled integers, without going through ``Decimal`` objects."""
    n = len(unscaled)
    data = b"".join((0 if u is None else u).to_bytes(16, "little", signed=True) for u in unscaled)
    is_null = pa.array([u is None for u in unscaled], pa.bool_())
    nulls = n - sum(1 for u in unscaled if u is not None)
    validity = pc.invert(is_null).buffers()[1] if nulls else None
    return pa.Array.from_buffers(t, n, [validity, pa.py_buffer(data)], nulls)


# --- the recursive walk ------------------------------------------------------------------------------


class _Dict:
    """One distinct metadata dictionary: its keys, and per object level the map from
    field id to the level's field index (built once per dictionary and level)."""

    __slots__ = ("keys", "maps")

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys
        self.maps: dict[int, list[int | None]] = {}


class _Rows:
    """Sub-values of one schema level: row buffer, position in it, metadata dictionary.

    ``bufs[i] is None`` means the value is missing (an absent object field). Position
    0 always means "the whole buffer" (a top-level value).
    """

    __slots__ = ("bufs", "poss", "dicts")

    def __init__(self, bufs: list[bytes | None], poss: list[int], dicts: list[_Dict | None]) -> None:
        self.bufs = bufs
        self.poss = poss
        self.dicts = dicts


def _raw(b: bytes, p: int) -> bytes:
    return b if p == 0 else b[p : p + dec.value_size(b, p)]


def _shred_level(t: pa.DataType, rows: _Rows) -> tuple[pa.Array, pa.Array]:
    """``(value, typed_value)`` arrays for the values in ``rows`` under logical type ``t``."""
    if pa.types.is_struct(t):
        return _shred_object(t, rows)
    if pa.types.is_list(t):
        return _shred_array(t, rows)
    if t == pa.string():
        return _shred_strings(rows)
    return _shred_leaf(t, rows)


def _shred_leaf(t: pa.DataType, rows: _Rows) -> tuple[pa.Array, pa.Array]:
    conv = leaf_converter(t)
    n = len(rows.bufs)
    values: list[bytes | None] = [None] * n
    typed: list[Any] = [None] * n
    no = _NO
    poss = rows.poss
    for i, b in enumerate(rows.bufs):
        if b is None:
            continue
        p = poss[i]
        v = conv(b, p)
        if v is no:
            values[i] = _raw(b, p)
        else:
            typed[i] = v
    return pa.array(values, pa.binary()), _typed_leaf_array(t, typed)


def _shred_strings(rows: _Rows) -> tuple[pa.Array, pa.Array]:
    """The string leaf, inlined: UTF-8 is checked once by Arrow's cast, not per value."""
    n = len(rows.bufs)
    values: list[bytes | None] = [None] * n
    typed: list[bytes | None] = [None] * n
    poss = rows.poss
    unpack = _U32.unpack_from
    for i, b in enumerate(rows.bufs):
        if b is None:
            continue
        p = poss[i]
        h = b[p]
        if h & 0x03 == 1:
            typed[i] = b[p + 1 : p + 1 + (h >> 2)]
        elif h == 0x40:
            typed[i] = b[p + 5 : p + 5 + unpack(b, p + 1)[0]]
        else:
            values[i] = _raw(b, p)
    return pa.array(values, pa.binary()), pa.array(typed, pa.binary()).cast(pa.string())


def _shred_object(t: pa.StructType, rows: _Rows) -> tuple[pa.Array, pa.Array]:
    names = [t.field(j).name for j in range(t.num_fields)]
    index = {name: j for j, name in enumerate(names)}
    level = next(_LEVEL_IDS)
    n = len(rows.bufs)
    child_bufs: list[list[bytes | None]] = [[None] * n for _ in names]
    child_poss: list[list[int]] = [[0] * n for _ in names]
    values: list[bytes | None] = [None] * n
    is_object = [False] * n
    poss = rows.poss
    dicts = rows.dicts
    for i, b in enumerate(rows.bufs):
        if b is None:
            continue
        p = poss[i]
        h = b[p]
        if h & 0x03 != 2:
            values[i] = _raw(b, p)
            continue
        is_object[i] = True
        d = dicts[i]
        assert d is not None
        fmap = d.maps.get(level)
        if fmap is None:
            fmap = d.maps[level] = [index.get(k) for k in d.keys]
        count, isz, osz, ids, offs, data = dec.object_layout(b, p)
        residual: list[tuple[str, int, bytes]] | None = None
        for fid, off in zip(dec.read_uints(b, ids, count, isz), dec.read_uints(b, offs, count, osz)):
            j = fmap[fid]
            cp = data + off
            if j is None:
                if residual is None:
                    residual = []
                residual.append((d.keys[fid], fid, b[cp : cp + dec.value_size(b, cp)]))
            else:
                child_bufs[j][i] = b
                child_poss[j][i] = cp
        if residual:
            values[i] = encode_object(residual)
    groups = []
    for j, name in enumerate(names):
        v, tv = _shred_level(t.field(j).type, _Rows(child_bufs[j], child_poss[j], dicts))
        groups.append(_group(v, tv))
    typed = pa.StructArray.from_arrays(
        groups,
        fields=[pa.field(name, g.type, nullable=False) for name, g in zip(names, groups)],
        mask=pa.array([not o for o in is_object], pa.bool_()),
    )
    return pa.array(values, pa.binary()), typed


def _shred_array(t: pa.ListType, rows: _Rows) -> tuple[pa.Array, pa.Array]:
    n = len(rows.bufs)
    values: list[bytes | None] = [None] * n
    offsets = [0] * (n + 1)
    is_array = [False] * n
    ebufs: list[bytes | None] = []
    eposs: list[int] = []
    edicts: list[_Dict | None] = []
    total = 0
    poss = rows.poss
    for i, b in enumerate(rows.bufs):
        if b is not None:
            p = poss[i]
            h = b[p]
            if h & 0x03 == 3:
                is_array[i] = True
                count, osz, offs, data = dec.array_layout(b, p)
                ebufs.extend([b] * count)
                eposs.extend([data + off for off in dec.read_uints(b, offs, count, osz)])
                edicts.extend([rows.dicts[i]] * count)
                total += count
            else:
                values[i] = _raw(b, p)
        offsets[i + 1] = total
    ev, etv = _shred_level(t.value_type, _Rows(ebufs, eposs, edicts))
    element = _group(ev, etv)
    list_type = pa.list_(pa.field("element", element.type, nullable=False))
    typed = pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), element, type=list_type, mask=pa.array([not a for a in is_array], pa.bool_())
    )
    return pa.array(values, pa.binary()), typed


def _group(value: pa.Array, typed_value: pa.Array) -> pa.StructArray:
    return pa.StructArray.from_arrays([value, typed_value], fields=[pa.field("value", pa.binary()), pa.field("typed_value", typed_value.type)])


# --- public entry points ------------------------------------------------------------------------------


def _check_variant_type(t: pa.DataType, where: str) -> None:
    if not pa.types.is_struct(t) or t.get_field_index("metadata") < 0 or t.get_field_index("value") < 0:
        raise ShreddingError(f"{where}: expected struct<metadata: binary, value: binary>, got {t}")
    if t.get_field_index("typed_value") >= 0:
        raise ShreddingError(f"{where}: the Variant column is already shredded")
    for name in ("metadata", "value"):
        ft = t.field(name).type
        if not (pa.types.is_binary(ft) or pa.types.is_large_binary(ft) or pa.types.is_binary_view(ft)):
            raise ShreddingError(f"{where}: Variant field {name!r} must be binary, got {ft}")


def _variant_parts(variants: pa.Array | pa.ChunkedArray, where: str) -> tuple[list[bytes | None], list[bytes | None]]:
    if isinstance(variants, pa.ChunkedArray):
        variants = variants.combine_chunks()
    _check_variant_type(variants.type, where)
    valid = variants.is_valid().to_pylist()
    metas = variants.field("metadata").to_pylist()
    values = variants.field("value").to_pylist()
    for i, ok in enumerate(valid):
        if not ok:
            metas[i] = values[i] = None
        elif metas[i] is None or values[i] is None or not values[i]:
            raise ShreddingError(f"{where}: row {i} has a null or empty metadata/value inside a non-null Variant")
    return metas, values


def shred(
    variants: pa.Array | pa.ChunkedArray,
    schema: ShreddingSchema | pa.DataType | str,
    *,
    validate: bool = False,
    column: str = "variant",
) -> pa.StructArray:
    """Shred a Variant column (``struct<metadata, value>``) into ``schema``'s physical layout.

    ``validate`` checks every input Variant fully first (slower). Malformed bytes raise
    ``MalformedVariantError`` naming the column and row either way. The work is done a
    column at a time (``columnar``); a column those kernels leave alone goes row by row
    (``shred_rows``), with the same result.
    """
    sch = ShreddingSchema.parse(schema)
    if isinstance(variants, pa.ChunkedArray):
        variants = variants.combine_chunks()
    _check_variant_type(variants.type, column)
    if not validate:
        try:
            meta, value, typed, mask = shred_columnar(variants, sch.arrow_type)
        except Fallback:
            pass
        else:
            return pa.StructArray.from_arrays([meta, value, typed], fields=list(variant_struct(sch)), mask=mask)
    return shred_rows(variants, sch, validate=validate, column=column)


def shred_rows(
    variants: pa.Array | pa.ChunkedArray,
    schema: ShreddingSchema | pa.DataType | str,
    *,
    validate: bool = False,
    column: str = "variant",
) -> pa.StructArray:
    """``shred`` one value at a time in Python: the reference ``columnar`` must equal."""
    sch = ShreddingSchema.parse(schema)
    metas, values = _variant_parts(variants, column)
    if validate:
        _find_malformed(metas, values, column, None)
    cache: dict[bytes, _Dict] = {}
    dicts: list[_Dict | None] = []
    try:
        for m in metas:
            if m is None:
                dicts.append(None)
                continue
            d = cache.get(m)
            if d is None:
                if len(cache) >= _KEY_CACHE_LIMIT:
                    cache.clear()
                d = cache[m] = _Dict(dec.MetadataView(m).keys())
            dicts.append(d)
        value_arr, typed_arr = _shred_level(sch.arrow_type, _Rows(values, [0] * len(values), dicts))
    except (IndexError, struct.error, UnicodeDecodeError, MalformedVariantError, OverflowError, ValueError) as exc:
        _find_malformed(metas, values, column, exc)
        raise ShreddingError(f"{column}: shredding failed ({exc})") from exc
    target = variant_struct(sch)
    meta_arr = pa.array([b"" if m is None else m for m in metas], pa.binary())
    mask = pa.array([m is None for m in metas], pa.bool_())
    return pa.StructArray.from_arrays([meta_arr, value_arr, typed_arr], fields=list(target), mask=mask)


def _find_malformed(metas: Sequence[bytes | None], values: Sequence[bytes | None], column: str, cause: Exception | None) -> None:
    """Raise ``MalformedVariantError`` for the first row whose Variant is invalid."""
    for i, (m, v) in enumerate(zip(metas, values)):
        if m is None or v is None:
            continue
        try:
            Variant(m, v).validate()
        except MalformedVariantError as exc:
            raise MalformedVariantError(f"{column}: row {i}: {exc}") from cause


def unshredded(variants: pa.Array | pa.ChunkedArray, column: str = "variant") -> pa.StructArray:
    """A Variant column in the unshredded layout (``value`` required), nulls kept.

    Pure Arrow (no per-row Python): the bytes are only checked to be present."""
    if isinstance(variants, pa.ChunkedArray):
        variants = variants.combine_chunks()
    t = variants.type
    if not pa.types.is_struct(t) or t.get_field_index("typed_value") >= 0:
        _variant_parts(variants, column)  # raises the precise error
    meta = variants.field("metadata").cast(pa.binary())
    value = variants.field("value").cast(pa.binary())
    valid = variants.is_valid()
    empty = pc.fill_null(pc.equal(pc.binary_length(value), 0), False)
    broken = pc.and_(valid, pc.or_(pc.or_(meta.is_null(), value.is_null()), empty))
    if pc.any(broken).as_py():
        row = pc.index(broken, True).as_py()
        raise ShreddingError(f"{column}: row {row} has a null or empty metadata/value inside a non-null Variant")
    return pa.StructArray.from_arrays(
        [pc.fill_null(meta, b""), pc.fill_null(value, b"\x00")],
        fields=list(variant_struct(None)),
        mask=pc.invert(valid),
    )


def variant_array(items: Sequence[Variant | None]) -> pa.StructArray:
    """Unshredded Arrow column of Variants (None = SQL NULL)."""
    target = variant_struct(None)
    return pa.StructArray.from_arrays(
        [
            pa.array([b"" if v is None else v.metadata for v in items], pa.binary()),
            pa.array([b"\x00" if v is None else v.value for v in items], pa.binary()),
        ],
        fields=list(target),
        mask=pa.array([v is None for v in items], pa.bool_()),
    )

