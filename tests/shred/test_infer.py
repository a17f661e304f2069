"""Shredding-schema inference and evolution."""

from __future__ import annotations

import datetime as dt
import json
import random
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.errors import ShreddingError
from varlake.shred.infer import evolve, infer_shredding_schema
from varlake.shred.schema import ShreddingSchema
from varlake.shred.shred import variant_array
from varlake.variant import TimestampNanos, Variant, parse_json


def docs(objs: list[object]) -> list[Variant]:
    return [parse_json(json.dumps(o)) for o in objs]


def ddl(sample: object, **kw: object) -> str | None:
    s = infer_shredding_schema(sample, **kw)  # type: ignore[arg-type]
    return None if s is None else s.ddl


def test_basic_object_schema() -> None:
    sample = docs([{"id": i, "name": f"u{i}", "ok": i % 2 == 0, "geo": {"lat": 1.5, "lon": -2.25}} for i in range(100)])
    assert ddl(sample) == "geo struct<lat: decimal(2,1), lon: decimal(3,2)>, id tinyint, name string, ok boolean"


def test_frequency_threshold_is_ten_percent_of_rows() -> None:
    rows = [{"a": 1} for _ in range(100)]
    for i in range(10):
        rows[i]["rare"] = "x"
    assert ddl(docs(rows)) == "a tinyint, rare string"
    rows[9].pop("rare")
    assert ddl(docs(rows)) == "a tinyint"
    assert ddl(docs(rows), min_frequency=0.09) == "a tinyint, rare string"


def test_type_share_threshold_is_ninety_nine_percent() -> None:
    rows = [{"a": i} for i in range(200)]
    rows[0]["a"] = "text"
    rows[1]["a"] = "text"
    assert ddl(docs(rows)) == "a smallint"  # 198/200 = 99%
    rows[2]["a"] = "text"
    assert ddl(docs(rows)) is None  # 197/200 < 99%: nothing left to shred
    assert ddl(docs(rows), min_type_share=0.98) == "a smallint"


def test_variant_nulls_do_not_count_against_the_type() -> None:
    rows = [{"a": None} if i % 2 else {"a": "s"} for i in range(100)]
    assert ddl(docs(rows)) == "a string"
    assert ddl(docs([{"a": None}] * 10 + [{"b": 1}] * 10)) == "b tinyint"


@pytest.mark.parametrize(
    "values, expected",
    [
        ([1, -128, 127], "tinyint"), ([1, 128], "smallint"), ([-32769], "int"), ([2**31], "bigint"), ([-(2**63)], "bigint"),
    ],
)
def test_integers_take_the_narrowest_width(values: list[int], expected: str) -> None:
    assert ddl(docs([{"n": v} for v in values])) == f"n {expected}"


def test_decimals_widen_to_cover_precision_and_scale() -> None:
    sample = [Variant.from_python({"p": Decimal(d)}) for d in ("1.5", "123.25", "-0.125")]
    assert ddl(sample) == "p decimal(6,3)"
    mixed = sample + [Variant.from_python({"p": 12345})]
    assert ddl(mixed) == "p decimal(8,3)"  # integers join the decimal column
    huge = [Variant.from_python({"p": Decimal("1" * 30)}), Variant.from_python({"p": Decimal("0." + "1" * 20)})]
    assert ddl(huge) == "p decimal(38,8)"  # capped at 38 digits, integer digits kept


def test_arrays_of_objects_shred_their_elements() -> None:
    rows = [{"items": [{"sku": f"s{i}", "qty": i}, {"sku": "x"}]} for i in range(50)]
    assert ddl(docs(rows)) == "items array<struct<qty: tinyint, sku: string>>"
    assert ddl(docs([[1, 2], [3], []])) == "array<tinyint>"
    assert ddl(docs([[1, "a"]] * 5)) is None  # elements without a common type


def test_non_object_top_levels() -> None:
    assert ddl(docs(["a", "b", None])) == "string"
    assert ddl(docs([1, 2, 3])) == "tinyint"
    assert ddl([None, None]) is None and ddl([]) is None
    assert ddl(docs([1, "a"] * 10)) is None


def test_typed_leaves_map_to_their_shredded_types() -> None:
    ts = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    rows = [
        Variant.from_python({"d": dt.date(2024, 1, 1), "t": ts, "n": ts.replace(tzinfo=None), "b": b"\x00", "f": 1.5, "e": 1e300})
        for _ in range(5)
    ]
    assert ddl(rows) == "b binary, d date, e double, f double, n timestamp_ntz, t timestamp"


def test_spark_unreadable_types_are_left_in_value_unless_asked() -> None:
    rows = [Variant.from_python({"u": uuid.UUID(int=i), "t": dt.time(1, 2), "ns": TimestampNanos(i, True), "k": 1}) for i in range(5)]
    assert ddl(rows) == "k tinyint"
    assert ddl(rows, spark_compatible=False) == "k tinyint, ns timestamp_ns, t time(6), u uuid"


def test_max_leaves_keeps_the_most_frequent_paths() -> None:
    rows = []
    for i in range(100):
        row = {f"f{k:02d}": 1 for k in range(10) if i % (k + 1) == 0 or k < 3}
        rows.append(row)
    full = infer_shredding_schema(docs(rows))
    assert full is not None and len(full.leaves()) == 10
    top = infer_shredding_schema(docs(rows), max_leaves=4)
    assert top is not None and [p for p, _ in top.leaves()] == [("f00",), ("f01",), ("f02",), ("f03",)]


def test_max_depth_stops_descent() -> None:
    rows = docs([{"a": {"b": {"c": {"d": 1}}, "x": 1}}] * 3)
    assert ddl(rows) == "a struct<b: struct<c: struct<d: tinyint>>, x: tinyint>"
    assert ddl(rows, max_depth=2) == "a struct<x: tinyint>"


def test_field_order_is_sorted_by_utf8_bytes() -> None:
    assert ddl(docs([{"é": 1, "z": 1, "A": 1, "a": 1}])) == "A tinyint, a tinyint, z tinyint, `é` tinyint"


def test_arrow_columns_and_bad_arguments() -> None:
    col = variant_array(docs([{"a": 1}, {"a": 2}]) + [None])
    assert ddl(col) == "a tinyint"
    assert ddl(pa.chunked_array([col])) == "a tinyint"
    with pytest.raises(ShreddingError):
        infer_shredding_schema(pa.array([1, 2]))
    with pytest.raises(ShreddingError):
        infer_shredding_schema(col, min_frequency=0)
    with pytest.raises(ShreddingError):
        infer_shredding_schema(col, max_leaves=0)


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.text(max_size=5),
              st.decimals(places=3, min_value=-1000, max_value=1000, allow_nan=False, allow_infinity=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abcde"), inner, max_size=4)),
    max_leaves=10,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(json_values, min_size=1, max_size=30), st.randoms(use_true_random=False))
def test_inference_ignores_row_order(rows: list[object], rnd: random.Random) -> None:
    sample = [Variant.from_python(r) for r in rows]
    shuffled = list(sample)
    rnd.shuffle(shuffled)
    assert infer_shredding_schema(sample) == infer_shredding_schema(shuffled)
    assert infer_shredding_schema(sample, min_frequency=0.5) == infer_shredding_schema(shuffled, min_frequency=0.5)


# --- evolution ----------------------------------------------------------------------------------------------


def test_evolve_keeps_the_layout_across_successive_samples() -> None:
    rng = random.Random(7)

    def batch() -> list[Variant]:
        return docs([{"id": rng.randint(0, 100), "kind": rng.choice("abc"), "v": {"x": rng.randint(0, 9)}} for _ in range(200)])

    first = infer_shredding_schema(batch())
    assert first is not None
    current = first
    for _ in range(5):
        current = evolve(current, batch())  # type: ignore[assignment]
        assert current == first


def test_evolve_appends_new_frequent_paths_after_the_existing_ones() -> None:
    current = ShreddingSchema.parse("z string, a bigint")
    new = evolve(current, docs([{"z": "x", "a": 1, "m": True, "b": 2.5}] * 10))
    assert new is not None and new.ddl == "z string, a bigint, b decimal(2,1), m boolean"


def test_evolve_drops_paths_that_are_no_longer_frequent() -> None:
    current = ShreddingSchema.parse("a bigint, gone string")
    new = evolve(current, docs([{"a": 1}] * 95 + [{"gone": "x"}] * 5))
    assert new is not None and new.ddl == "a bigint"
    assert evolve(current, docs([{"other": 1}] * 10)) == ShreddingSchema.parse("other tinyint")


def test_evolve_widens_numbers_and_follows_type_changes() -> None:
    assert evolve("n tinyint", docs([{"n": 1000}])) == ShreddingSchema.parse("n smallint")
    assert evolve("n bigint", docs([{"n": 1}])) == ShreddingSchema.parse("n bigint")  # never narrows
    assert evolve("p decimal(4,2)", [Variant.from_python({"p": Decimal("123.456")})]) == ShreddingSchema.parse("p decimal(6,3)")
    assert evolve("n tinyint", docs([{"n": "text"}] * 5)) == ShreddingSchema.parse("n string")
    assert evolve("n tinyint, s struct<q: int>", docs([{"n": 1, "s": {"q": 2, "r": "x"}}])) == ShreddingSchema.parse(
        "n tinyint, s struct<q: int, r: string>"
    )


def test_evolve_from_nothing_and_with_an_empty_sample() -> None:
    assert evolve(None, docs([{"a": 1}])) == ShreddingSchema.parse("a tinyint")
    assert evolve(None, []) is None
    assert evolve("a bigint", []) == ShreddingSchema.parse("a bigint")


def test_evolve_respects_max_leaves_for_new_paths() -> None:
    new = evolve("a bigint", docs([{"a": 1, "b": 1, "c": 1, "d": 1}] * 3), max_leaves=2)
    assert new is not None and [p for p, _ in new.leaves()] == [("a",), ("b",)]


@pytest.mark.parametrize("value", [b"\x02\x05\x00", b"\x18\x01", b"\x03\x02\x00\x01", b"\x02\x01\x09\x00\x01\x0c"])
def test_malformed_samples_raise_a_named_error(value: bytes) -> None:
    col = pa.StructArray.from_arrays([pa.array([b"\x01\x01\x00\x01a"]), pa.array([value])], names=["metadata", "value"])
    with pytest.raises(ShreddingError, match="sample row 0"):
        infer_shredding_schema(col)
