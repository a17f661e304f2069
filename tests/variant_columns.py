"""Test helpers shared by the shredding and hashing tests: Variant columns built from
Python documents and read back, shredding leaves too narrow for the values they get, and
the check that the fast unshred path equals the reference path and the original values."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pyarrow as pa

from varlake.shred.unshred import unshred_variant
from varlake.variant import Variant
from varlake.variant.encoder import MetadataBuilder, encode_python

VARIANT_STRUCT = pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)])


def variant_column(items: Sequence[Any], shared: bool, keys: Iterable[str]) -> pa.StructArray:
    """A Variant column of ``items`` (None: SQL NULL; a ``Variant`` as it is; anything else
    encoded), each with its own dictionary, or all with one shared dictionary of ``keys``
    in reverse order (unsorted) when ``shared``."""
    builder = MetadataBuilder(reversed(list(keys)))
    metas: list[bytes] = []
    values: list[bytes] = []
    for d in items:
        if d is None:
            metas.append(b"\x01\x00\x00")
            values.append(b"\x00")
        elif isinstance(d, Variant):
            metas.append(d.metadata)
            values.append(d.value)
        elif shared:
            values.append(encode_python(d, builder))
            metas.append(b"")
        else:
            v = Variant.from_python(d)
            metas.append(v.metadata)
            values.append(v.value)
    if shared:
        meta = builder.build()
        metas = [meta if m == b"" else m for m in metas]
    return pa.StructArray.from_arrays(
        [pa.array(metas, pa.binary()), pa.array(values, pa.binary())],
        fields=list(VARIANT_STRUCT),
        mask=pa.array([d is None for d in items]),
    )


def narrow_type(t: pa.DataType) -> pa.DataType:
    """Leaves too narrow for many values (so they stay in ``value``)."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, narrow_type(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(narrow_type(t.value_type))
    if pa.types.is_integer(t):
        return pa.int8()
    if pa.types.is_decimal(t):
        return pa.decimal128(4, 1)
    if pa.types.is_string(t):
        return pa.binary()
    if pa.types.is_floating(t):
        return pa.float32()
    return t


def variants_of(col: pa.Array | pa.ChunkedArray) -> list[Variant | None]:
    """The Variants of a ``metadata``/``value`` column (None where the row is NULL)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    metas, values, valid = col.field("metadata").to_pylist(), col.field("value").to_pylist(), col.is_valid().to_pylist()
    return [Variant(m, v) if ok else None for m, v, ok in zip(metas, values, valid)]


def check_unshred(shredded: pa.Array, original: Sequence[Variant | None], extra: Callable[[Variant], None] | None = None) -> None:
    """Unshredding ``shredded`` by the fast path gives valid Variants equal to the reference
    path's and to ``original``, row by row (``extra``: a further check of each value)."""
    fast = variants_of(unshred_variant(shredded))
    ref = variants_of(unshred_variant(shredded, reference=True))
    assert len(fast) == len(ref) == len(original)
    for i, (f, r, o) in enumerate(zip(fast, ref, original)):
        assert (f is None) == (r is None) == (o is None), i
        if f is not None:
            f.validate()
            if extra is not None:
                extra(f)
            assert f == r, (i, f.to_python(), r.to_python())
            assert f == o, i
