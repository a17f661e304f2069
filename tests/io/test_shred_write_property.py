"""Property: any Variants shredded by any schema, written and read back, are unchanged."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from varlake.io.parquet_write import write_parquet
from varlake.io.parquet_read import read_parquet
from varlake.shred.unshred import unshred_variant
from varlake.shred.schema import ShreddingSchema
from varlake.shred.shred import shred, variant_array
from varlake.variant import TimestampNanos, Variant
from varlake.variant.temporal import Float32

KEYS = st.sampled_from(["a", "b", "c", "d", "long_key_name", "ü", "x y"])
UTC = dt.timezone.utc

LEAF_TYPES = [
    pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(),
    pa.decimal128(4, 2), pa.decimal128(12, 3), pa.decimal128(30, 5), pa.date32(), pa.time64("us"),
    pa.timestamp("us", "UTC"), pa.timestamp("us"), pa.timestamp("ns", "UTC"), pa.timestamp("ns"),
    pa.binary(), pa.string(), pa.uuid(),
]

ints = st.one_of(st.integers(-128, 127), st.integers(-(2**15), 2**15 - 1), st.integers(-(2**63), 2**63 - 1))
decimals = st.builds(
    lambda unscaled, scale: Decimal(unscaled).scaleb(-scale), st.integers(-(10**20), 10**20), st.integers(0, 8)
)
datetimes = st.datetimes(min_value=dt.datetime(1000, 1, 1), max_value=dt.datetime(9000, 1, 1))
primitives = st.one_of(
    st.none(), st.booleans(), ints, st.floats(allow_nan=True), st.builds(Float32, st.floats(width=32)),
    decimals, st.text(max_size=70), st.binary(max_size=20), st.dates(),
    datetimes, datetimes.map(lambda d: d.replace(tzinfo=UTC)), st.times(),
    st.uuids(), st.builds(TimestampNanos, st.integers(-(2**62), 2**62), st.booleans()),
)
any_values = st.recursive(
    primitives,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=12,
)


def schemas(depth: int = 3, in_list: bool = False) -> st.SearchStrategy[pa.DataType]:
    leaf = st.sampled_from(LEAF_TYPES)
    if depth == 0:
        return leaf
    return st.one_of(
        leaf,
        st.builds(pa.list_, schemas(depth - 1, True)),
        st.dictionaries(KEYS, schemas(depth - 1, in_list), min_size=1, max_size=4).map(lambda d: pa.struct(list(d.items()))),
    )


def leaf_value(t: pa.DataType) -> st.SearchStrategy[Any]:
    """Values that fit leaf type ``t`` (and a few that almost do)."""
    if pa.types.is_integer(t):
        bits = t.bit_width
        return st.integers(-(2 ** (bits - 1)) - 2, 2 ** (bits - 1) + 1)
    if pa.types.is_decimal(t):
        return st.builds(
            lambda u, s: Decimal(u).scaleb(-s), st.integers(-(10 ** t.precision), 10 ** t.precision), st.integers(0, t.scale + 1)
        )
    if t == pa.float32():
        return st.builds(Float32, st.floats(width=32))
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            return st.builds(TimestampNanos, st.integers(-(2**62), 2**62), st.just(t.tz is not None))
        return datetimes.map(lambda d: d.replace(tzinfo=UTC)) if t.tz else datetimes
    simple = {
        pa.bool_(): st.booleans(), pa.float64(): st.floats(), pa.date32(): st.dates(), pa.time64("us"): st.times(),
        pa.binary(): st.binary(max_size=10), pa.string(): st.text(max_size=70), pa.uuid(): st.uuids(),
    }
    return simple[t]


def value_for(t: pa.DataType, depth: int = 0) -> st.SearchStrategy[Any]:
    """Mostly values shaped like ``t``, sometimes anything at all."""
    if pa.types.is_struct(t):
        names = [t.field(i).name for i in range(t.num_fields)]
        shaped = st.fixed_dictionaries(
            {}, optional={n: value_for(t.field(n).type, depth + 1) for n in names} | {"extra": any_values}
        )
    elif pa.types.is_list(t):
        shaped = st.lists(value_for(t.value_type, depth + 1), max_size=4)
    else:
        shaped = leaf_value(t)
    if depth >= 4:
        return shaped
    # One value in eight is arbitrary: it must land in ``value`` unchanged.
    return st.integers(0, 7).flatmap(lambda k: any_values if k == 0 else shaped)


@st.composite
def cases(draw: st.DrawFn) -> tuple[pa.DataType, list[Variant | None]]:
    t = draw(schemas())
    rows = draw(st.lists(st.one_of(st.none().map(lambda _: "SQLNULL"), value_for(t)), min_size=1, max_size=12))
    return t, [None if r == "SQLNULL" else Variant.from_python(r) for r in rows]


def as_variants(column: pa.Array | pa.ChunkedArray) -> list[Variant | None]:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if isinstance(column, pa.ExtensionArray):  # read_parquet's arrow.parquet.variant
        column = column.storage
    valid = column.is_valid().to_pylist()
    return [
        Variant(m, v) if ok else None
        for ok, m, v in zip(valid, column.field("metadata").to_pylist(), column.field("value").to_pylist())
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_shred_then_unshred_is_identity(case: tuple[pa.DataType, list[Variant | None]]) -> None:
    t, variants = case
    shredded = shred(variant_array(variants), t)
    assert shredded.type == ShreddingSchema(t).variant_type
    assert as_variants(unshred_variant(shredded)) == variants


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases(), st.integers(1, 5))
def test_write_then_read_is_identity(tmp_path_factory: pytest.TempPathFactory, case: tuple[pa.DataType, list[Variant | None]], group_rows: int) -> None:
    t, variants = case
    path: Path = tmp_path_factory.mktemp("prop") / "f.parquet"
    ids = pa.array(range(len(variants)), pa.int64())
    write_parquet(pa.table({"id": ids, "v": variant_array(variants)}), path, shredding={"v": t}, row_group_size=group_rows)
    back = read_parquet(path)
    assert back.column("id").to_pylist() == list(range(len(variants)))
    assert as_variants(back.column("v")) == variants
