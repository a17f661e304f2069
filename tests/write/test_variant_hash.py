"""Logical hashes of Variant columns (``varlake.write.maintenance.variant_hash``): equal exactly when the
values are logically equal (``Variant.canonical``), whatever the batch, the layout the
column is shredded into, the field order, the dictionary or the encoding widths.

Oracles: ``Variant.canonical`` on random documents; the same rows hashed alone, reversed,
and after a shred/unshred round trip through another layout.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from varlake.errors import ContentCheckError
from varlake.shred.infer import infer_shredding_schema
from varlake.shred.shred import shred
from varlake.shred.unshred import unshred_variant
from varlake.variant import Variant, parse_json
from varlake.variant.temporal import Float32
from varlake.write.maintenance.variant_hash import variant_hashes
from variant_columns import VARIANT_STRUCT, variant_column

KEYS = ["a", "b", "c", "é", "z", "日本"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-5, 5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(width=32, allow_nan=False).map(Float32),
    st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=-100, max_value=100),
    st.decimals(allow_nan=False, allow_infinity=False, places=0, min_value=-(10**30), max_value=10**30),
    st.text(max_size=6),
    st.text(min_size=64, max_size=70),
    st.binary(max_size=6),
    st.dates(),
    st.datetimes(timezones=st.just(dt.timezone.utc)),
)
docs = st.recursive(
    scalars,
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(st.sampled_from(KEYS), kids, max_size=4)),
    max_leaves=10,
)
shaped = st.fixed_dictionaries(
    {"a": st.integers(-5, 5), "b": st.text(max_size=4), "c": st.lists(st.fixed_dictionaries({"z": st.integers(0, 3)}), max_size=2)},
    optional={"é": docs},
)


def _column(items: list[Any], shared: bool = False) -> pa.StructArray:
    return variant_column(items, shared, KEYS)


def _pairs(column: pa.Array) -> list[tuple[int, int]]:
    a, b = variant_hashes(column)
    return list(zip(a.tolist(), b.tolist()))


@settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(docs, shaped, shaped), min_size=1, max_size=25), st.booleans())
def test_hashes_are_logical_and_independent_of_the_batch(items: list[Any], shared: bool) -> None:
    column = _column(items, shared)
    hashes = _pairs(column)
    # the same row alone, in reverse order, and with another encoding of the dictionary
    assert [_pairs(column.slice(i, 1))[0] for i in range(len(items))] == hashes
    assert _pairs(column.take(pa.array(range(len(items) - 1, -1, -1)))) == hashes[::-1]
    assert _pairs(_column(items, not shared)) == hashes
    # equal exactly when Variant.canonical is
    canon = [None if d is None else Variant(column.field("metadata")[i].as_py(), column.field("value")[i].as_py()).canonical()
             for i, d in enumerate(items)]  # fmt: skip
    for i in range(len(items)):
        for j in range(len(items)):
            same_value = (canon[i] is None) == (canon[j] is None) and canon[i] == canon[j]
            assert (hashes[i] == hashes[j]) == same_value, (items[i], items[j])


@settings(max_examples=30, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(shaped, docs), min_size=2, max_size=25))
def test_a_shred_round_trip_through_another_layout_keeps_the_hashes(items: list[Any]) -> None:
    column = _column(items)
    schema = infer_shredding_schema(column.slice(0, max(1, len(items) // 2)))
    if schema is None:
        return
    back = unshred_variant(shred(column, schema))
    assert _pairs(back) == _pairs(column)


def test_exact_numbers_strings_and_field_order_meet() -> None:
    long_x = "x" * 70
    items = [
        {"n": 1, "s": long_x},  # int8, long string
        parse_json('{"s": "' + long_x + '", "n": 1.00}'),  # decimal 1.00, other field order
        {"n": Decimal("1.000"), "s": long_x},
        {"n": 1.0, "s": long_x},  # a double: another value
        {"n": 2, "s": long_x},
    ]
    h = _pairs(_column(items))
    assert h[0] == h[1] == h[2]
    assert len({h[0], h[3], h[4]}) == 3


def test_nulls_missing_fields_and_variant_nulls_differ() -> None:
    h = _pairs(_column([None, Variant.from_python(None), {"a": None}, {}, {"a": 1}, [None], []]))
    assert len(set(h)) == len(h)


def test_undecodable_bytes_are_named() -> None:
    bad = pa.StructArray.from_arrays([pa.array([b"\x01\x00\x00"], pa.binary()), pa.array([b"\x02\x05"], pa.binary())], fields=list(VARIANT_STRUCT))
    with pytest.raises(ContentCheckError, match="cannot be decoded"):
        variant_hashes(bad, "t.parquet")


def test_a_wide_column_hashes_without_the_python_walk() -> None:
    rows = [{"id": i, "s": f"s{i % 7}", "o": {"k": i % 3, "l": [i, i + 1]}} for i in range(3000)]
    a, b = variant_hashes(_column(rows))
    assert len(set(zip(a.tolist(), b.tolist()))) == 3000
    assert np.array_equal(variant_hashes(_column(rows[::-1]))[0], a[::-1])


def test_a_shredded_group_and_the_extension_type_hash_as_the_plain_column() -> None:
    from varlake.shred.variant_columns import with_variant_extension

    column = _column([{"a": i, "b": [i, "x"]} for i in range(50)] + [None, 7])
    plain = _pairs(column)
    assert _pairs(shred(column, "a bigint, b array<bigint>")) == plain  # partly typed, partly residual
    tagged = with_variant_extension(pa.table({"v": column}), {"v": [()]}).column("v").combine_chunks()
    assert isinstance(tagged.type, pa.BaseExtensionType) and _pairs(tagged) == plain
