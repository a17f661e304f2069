"""Unit and property tests of varlake's Spark Variant functions (no Spark needed).

Expected values were read off Spark 4.3 (``spark.sql.ansi.enabled=true``, session zone
UTC); ``test_spark_oracle_functions.py`` re-checks the same behaviour against a live Spark.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.errors import InvalidPathError, MalformedVariantError, UnsupportedValueError, VariantCastError, VariantError
from varlake.variant import Float32, TimestampNanos, Variant, VariantPath, parse_json
from varlake.semantics.datetime_text import format_timestamp, string_to_date, string_to_timestamp
from varlake.semantics.numbers import float32_of_fraction, to_float32
from varlake.semantics.types import SparkType
from varlake.semantics.zones import zone_of
from varlake.variant.cast import OutOfPythonRange, TypeParseError, parse_type
from varlake.variant.functions import (
    cast_to_variant,
    is_variant_null,
    parse_variant_path,
    to_variant_object,
    try_variant_get,
    variant_explode,
    variant_explode_outer,
    variant_get,
)
from varlake.variant.schema import (
    ArraySchema,
    DecimalSchema,
    ObjectSchema,
    merge_schemas,
    render_schema,
    schema_of,
    schema_of_variant,
    schema_of_variant_agg,
)

UTC = dt.timezone.utc
DOC = parse_json('{"a": 1, "b": "hello", "c": [1, 2, 3], "d": {"e": 1.5, "f": null}, "a b": {"c.d": [10, 20]}}')


# --- paths ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "segments"),
    [
        ("$", ()),
        ("$.a", ("a",)),
        ("$.a b", ("a b",)),
        ("$.a]", ("a]",)),
        ("$.'a'", ("'a'",)),
        ("$['a.b'][0]", ("a.b", 0)),
        ('$["x\'y"]', ("x'y",)),
        ("$['a\"b']", ('a"b',)),
        ("$[00][12]", (0, 12)),
        ("$.é.x", ("é", "x")),
    ],
)
def test_path_grammar_is_sparks(text: str, segments: tuple) -> None:
    assert parse_variant_path(text) == VariantPath(segments)


@pytest.mark.parametrize(
    "text", ["a", "", "$.", "$..a", "$[ 0 ]", "$[-1]", "$[99999999999]", "$['a", "$['a'b']", "$[a]", "$.a[", "$ .a", " $.a"]
)
def test_invalid_paths_raise(text: str) -> None:
    with pytest.raises(InvalidPathError):
        variant_get(DOC, text, "int")
    with pytest.raises(InvalidPathError):
        try_variant_get(DOC, text, "int")


def test_navigation() -> None:
    assert variant_get(DOC, "$.a", "int") == 1
    assert variant_get(DOC, "$.c[2]", "int") == 3
    assert variant_get(DOC, "$['a b']['c.d'][1]", "bigint") == 20
    assert variant_get(DOC, VariantPath(("a b", "c.d", 0)), "string") == "10"
    for missing in ("$.zzz", "$.c[3]", "$.a.b", "$[0]", "$.c.a", "$.d.f.g"):
        assert variant_get(DOC, missing, "int") is None
    assert variant_get(None, "$.a", "int") is None
    assert variant_get(DOC, None, "int") is None
    with pytest.raises(InvalidPathError):
        variant_get(DOC, 3, "int")  # type: ignore[arg-type]


def test_variant_target_returns_a_self_contained_sub_variant() -> None:
    sub = variant_get(parse_json('{"a": {"y": 1, "x": 2}, "z": 0}'), "$.a")
    assert sub == parse_json('{"x": 2, "y": 1}')
    # Spark's rebuilt value: only the keys it uses, in traversal order, fields in key order.
    assert (sub.metadata, sub.value) == (b"\x01\x02\x00\x01\x02xy", b"\x02\x02\x00\x01\x00\x02\x04\x0c\x02\x0c\x01")
    null = variant_get(DOC, "$.d.f", "variant")
    assert isinstance(null, Variant) and is_variant_null(null)
    assert variant_get(DOC, "$.d.f", "int") is None
    assert variant_get(DOC, "$.c[0]").metadata == b"\x01\x00\x00"


# --- types ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "sql"),
    [
        ("INTEGER", "INT"),
        ("byte", "TINYINT"),
        ("short", "SMALLINT"),
        ("long", "BIGINT"),
        ("real", "FLOAT"),
        ("dec(3)", "DECIMAL(3,0)"),
        ("decimal", "DECIMAL(10,0)"),
        ("numeric( 4 , 2 )", "DECIMAL(4,2)"),
        ("timestamp_ltz", "TIMESTAMP"),
        ("TIMESTAMP_NTZ", "TIMESTAMP_NTZ"),
        ("time", "TIME(6)"),
        ("array<struct<`a b`: int, c string NOT NULL, `x``y`: map<string, array<variant>>>>",
         "ARRAY<STRUCT<`a b`: INT, c: STRING, `x``y`: MAP<STRING, ARRAY<VARIANT>>>>"),
        ("struct<>", "STRUCT<>"),
    ],
)
def test_type_parsing(text: str, sql: str) -> None:
    assert parse_type(text).sql == sql


@pytest.mark.parametrize(
    "text", ["map<int,int>", "varchar(3)", "char(2)", "decimal(3,5)", "decimal(39,0)", "interval day", "array<int",
             "struct<a int", "int int", "void", "time(3)", ""]
)
def test_unsupported_types_raise(text: str) -> None:
    with pytest.raises(TypeParseError):
        variant_get(DOC, "$.a", text)


def test_spark_type_objects_are_accepted() -> None:
    assert variant_get(DOC, "$.c", SparkType("array", element=SparkType("string"))) == ["1", "2", "3"]


# --- the cast matrix -------------------------------------------------------------------------------------

INF = math.inf

CASTS = [
    ("1", "boolean", True), ("0", "boolean", False), ("1.5", "int", 1), ("-2.5", "tinyint", -2),
    ("300", "tinyint", None), ("-129", "smallint", -129), ("1.5", "decimal(38,0)", Decimal("2")),
    ("-2.5", "decimal(38,0)", Decimal("-3")), ("1", "decimal(38,38)", None), ("99.995", "decimal(4,2)", None),
    ("99.995", "decimal(5,2)", Decimal("100.00")), ("1e3", "string", "1000.0"), ("1e3", "tinyint", None),
    ("1.5e300", "float", INF), ("1.5e300", "bigint", None), ("1.5e300", "string", "1.5E300"),
    ("1", "timestamp", dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)),
    ("-129", "timestamp", dt.datetime(1969, 12, 31, 23, 57, 51, tzinfo=UTC)),
    ("-2.5", "timestamp", dt.datetime(1969, 12, 31, 23, 59, 57, 500000, tzinfo=UTC)),
    ("1", "date", None), ("1", "timestamp_ntz", None), ("1", "binary", None), ("true", "int", 1),
    ("true", "double", 1.0), ("true", "timestamp", None), ("true", "string", "true"), ("100.0", "string", "100"),
    ("0.0000001", "string", "0.0000001"), ("9.223372036854775807E18", "bigint", 2**63 - 1),
    ("-9.223372036854775808E18", "bigint", -(2**63)), ("2147483647.9", "int", 2147483647),
    ("-128.9", "tinyint", -128), ("-129.0e0", "tinyint", None), ("1.9999999999999999999", "bigint", 1),
    ("1.9999999999999999999", "smallint", 2), ("2147483647.99999999999", "int", None),
    ("9223372036854775807.5", "bigint", 2**63 - 1), ("16777217", "float", 16777216.0),
    ("9007199254740993", "double", 9007199254740992.0), ("0.3000000119", "float", 0.30000001192092896),
    ('"1"', "boolean", True), ('"2"', "boolean", None), ('" true "', "boolean", True), ('"Yes"', "boolean", True),
    ('"N"', "boolean", False), ('"1.5"', "int", None), ('" 12 "', "int", 12), ('"\\t12\\n"', "int", 12),
    ('"\\u007f1\\u007f"', "int", 1), ('"\\u007f1\\u007f"', "double", None), ('"\\u00a01"', "int", None),
    ('"1.5"', "decimal(38,0)", Decimal("2")), ('"1e2"', "decimal(5,2)", Decimal("100.00")),
    ('"1.0E-2"', "decimal(38,38)", Decimal("0.01")), ('"1.0E-2"', "float", 0.009999999776482582),
    ('"NaN"', "decimal(5,2)", None), ('"1d"', "double", 1.0), ('"0x10"', "double", None), ('"0x1p4"', "double", 16.0),
    ('"-inf"', "float", -INF), ('"Infinity"', "double", INF), ('"abc"', "int", None), ('""', "double", None),
    ('"2024"', "int", 2024), ('"2024"', "date", dt.date(2024, 1, 1)), ('"2024-03"', "date", dt.date(2024, 3, 1)),
    ('"  2024-1-2  "', "date", dt.date(2024, 1, 2)), ('"2024-02-30"', "date", None),
    ('"2024-02-29 12:34:56"', "date", dt.date(2024, 2, 29)),
    ('"2024-02-29 12:34:56+05:30"', "timestamp", dt.datetime(2024, 2, 29, 7, 4, 56, tzinfo=UTC)),
    ('"2024-02-29 12:34:56+05:30"', "timestamp_ntz", dt.datetime(2024, 2, 29, 12, 34, 56)),
    ('"2024-02-29T12:34:56.123456789Z"', "timestamp", dt.datetime(2024, 2, 29, 12, 34, 56, 123456, tzinfo=UTC)),
    ('"2020-06-01 10:00:00 PST"', "timestamp", dt.datetime(2020, 6, 1, 17, tzinfo=UTC)),
    ('"2020-06-01T10:00:00 UTC+3"', "timestamp", dt.datetime(2020, 6, 1, 7, tzinfo=UTC)),
    ('"2024-01-01 25:00:00"', "timestamp", None), ('"12:34:56"', "timestamp_ntz", None),
    ('"12:34:56"', "time", dt.time(12, 34, 56)), ('"2020-01-01 12:34:56"', "time", None),
    ('"abc"', "binary", b"abc"), ('"abc"', "string", "abc"), ("[1, 2]", "string", "[1,2]"),
    ('{"b": 1, "a": [true]}', "string", '{"a":[true],"b":1}'), ("[1, 2]", "int", None), ("{}", "map<string,int>", {}),
]


@pytest.mark.parametrize(("doc", "type_", "expected"), CASTS)
def test_cast_matrix(doc: str, type_: str, expected: object) -> None:
    v = parse_json(doc)
    got = try_variant_get(v, "$", type_)
    assert got == expected and type(got) is type(expected), (got, expected)
    if expected is None:
        with pytest.raises(VariantCastError, match="INVALID_VARIANT_CAST"):
            variant_get(v, "$", type_)
    else:
        assert variant_get(v, "$", type_) == expected


def test_today_is_used_for_a_time_without_date() -> None:
    got = variant_get(parse_json('"12:34:56"'), "$", "timestamp")
    now = dt.datetime.now(UTC)
    assert got.time() == dt.time(12, 34, 56) and abs((got.date() - now.date()).days) <= 1


def test_nan_casts() -> None:
    nan = cast_to_variant(math.nan, "double")
    assert math.isnan(variant_get(nan, "$", "float"))
    assert variant_get(nan, "$", "string") == "NaN"
    assert variant_get(nan, "$", "boolean") is True  # NaN != 0
    assert try_variant_get(nan, "$", "int") is None and try_variant_get(nan, "$", "decimal(5,1)") is None


def test_typed_sources() -> None:
    f = cast_to_variant(0.1, "float")
    assert variant_get(f, "$", "decimal(38,20)") == Decimal("0.10000000149011612000")
    assert variant_get(f, "$", "string") == "0.1"
    ts = cast_to_variant(dt.datetime(2020, 1, 1, 12, 34, 56, 123456, tzinfo=UTC), "timestamp")
    assert variant_get(ts, "$", "decimal(38,10)") == Decimal("1577882096.1234560000")
    assert variant_get(ts, "$", "float") == 1577882112.0
    assert variant_get(ts, "$", "string") == "2020-01-01 12:34:56.123456"
    assert variant_get(ts, "$", "date") == dt.date(2020, 1, 1)
    assert variant_get(ts, "$", "time") == dt.time(12, 34, 56, 123456)
    assert try_variant_get(ts, "$", "boolean") is None
    before = cast_to_variant(dt.datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC), "timestamp")
    assert variant_get(before, "$", "bigint") == -1
    d = cast_to_variant(dt.date(2020, 1, 1), "date")
    assert variant_get(d, "$", "timestamp") == dt.datetime(2020, 1, 1, tzinfo=UTC)
    assert variant_get(d, "$", "timestamp_ntz") == dt.datetime(2020, 1, 1)
    assert [try_variant_get(d, "$", t) for t in ("boolean", "bigint", "double", "time")] == [None] * 4
    b = cast_to_variant(b"A\xffB", "binary")
    assert variant_get(b, "$", "string") == "A\ufffdB" and variant_get(b, "$", "binary") == b"A\xffB"
    assert try_variant_get(b, "$", "int") is None
    u = Variant(b"\x01\x00\x00", b"\x50" + uuid.UUID(int=1).bytes)
    assert variant_get(u, "$", "string") == "00000000-0000-0000-0000-000000000001"
    assert try_variant_get(u, "$", "binary") is None
    big = parse_json("123456789012345678901234567890.12345678")
    assert variant_get(big, "$", "decimal(38,8)") == Decimal("123456789012345678901234567890.12345678")
    assert variant_get(big, "$", "string") == "123456789012345678901234567890.12345678"


def test_nested_casts_fail_per_element() -> None:
    v = parse_json('[1, "x", null]')
    assert try_variant_get(v, "$", "array<int>") == [1, None, None]
    with pytest.raises(VariantCastError) as info:
        variant_get(v, "$", "array<int>")
    assert str(info.value).startswith(
        '[INVALID_VARIANT_CAST] The variant value `"x"` cannot be cast into `"INT"`. Please use `try_variant_get`'
    )
    assert "$" in str(info.value)
    o = parse_json('{"a": 1, "b": "x"}')
    assert try_variant_get(o, "$", "struct<a:int,b:int,c:string>") == {"a": 1, "b": None, "c": None}
    assert try_variant_get(o, "$", "map<string,int>") == {"a": 1, "b": None}
    assert variant_get(o, "$", "struct<`a b`:decimal(3,1)>") == {"a b": None}
    with pytest.raises(VariantCastError, match='"DECIMAL\\(3,1\\)"'):
        variant_get(o, "$", "map<string,decimal(3,1)>")
    assert try_variant_get(o, "$", "array<int>") is None
    assert variant_get(parse_json("[[1], [2, 3]]"), "$", "array<array<bigint>>") == [[1], [2, 3]]
    assert variant_get(parse_json('[{"a": 1}, 2]'), "$", "array<variant>") == [parse_json('{"a":1}'), parse_json("2")]


def test_types_spark_cannot_read() -> None:
    time = Variant(b"\x01\x00\x00", b"\x44" + (3_600_000_000).to_bytes(8, "little"))
    nanos = Variant.from_python(TimestampNanos(5, True))
    for v in (time, nanos):
        with pytest.raises(VariantError) as info:
            try_variant_get(v, "$", "string")
        assert not isinstance(info.value, VariantCastError)
        assert variant_get(v, "$") == v
        with pytest.raises(VariantError) as info:
            schema_of_variant(v)
        assert not isinstance(info.value, MalformedVariantError)


def test_dates_outside_python() -> None:
    far = parse_json('"+10000-01-01"')
    assert variant_get(far, "$", "string") == "+10000-01-01"
    with pytest.raises(OutOfPythonRange):
        try_variant_get(far, "$", "date")
    ts = Variant(b"\x01\x00\x00", b"\x30" + (2**63 - 1).to_bytes(8, "little"))
    assert variant_get(ts, "$", "string") == "+294247-01-10 04:00:54.775807"
    assert variant_get(ts, "$", "bigint") == 9223372036854
    with pytest.raises(OutOfPythonRange):
        variant_get(ts, "$", "timestamp")


def test_malformed_variants_raise_malformed() -> None:
    bad = Variant(b"\x01\x00\x00", b"\x02\x05\x00")
    with pytest.raises(MalformedVariantError):
        variant_get(bad, "$.a", "int")
    with pytest.raises(MalformedVariantError):
        schema_of_variant(bad)


# --- time zones ---------------------------------------------------------------------------------------------


def test_session_zone() -> None:
    la = "America/Los_Angeles"
    assert variant_get(parse_json('"2024-03-10 02:30:00"'), "$", "timestamp", zone=la) == dt.datetime(
        2024, 3, 10, 10, 30, tzinfo=UTC
    )  # a gap: moved forward
    assert variant_get(parse_json('"2024-11-03 01:30:00"'), "$", "timestamp", zone=la) == dt.datetime(
        2024, 11, 3, 8, 30, tzinfo=UTC
    )  # an overlap: the earlier offset
    ts = cast_to_variant(dt.datetime(2024, 1, 1, tzinfo=UTC), "timestamp")
    assert variant_get(ts, "$", "string", zone=la) == "2023-12-31 16:00:00"
    assert variant_get(ts, "$", "date", zone=la) == dt.date(2023, 12, 31)
    assert variant_get(ts, "$", "timestamp_ntz", zone="+05:30") == dt.datetime(2024, 1, 1, 5, 30)
    assert variant_get(ts, "$", "string", zone="PST") == "2023-12-31 16:00:00"
    ntz = cast_to_variant(dt.datetime(2024, 1, 1), "timestamp_ntz")
    assert variant_get(ntz, "$", "timestamp", zone="UTC+3") == dt.datetime(2023, 12, 31, 21, tzinfo=UTC)
    with pytest.raises(VariantError):
        variant_get(ts, "$", "string", zone="Mars/Olympus")


@pytest.mark.parametrize(
    ("name", "offset"),
    [("Z", 0), ("UTC", 0), ("+5:30", 19800), ("-08:00", -28800), ("+0530", 19800), ("UTC+3", 10800),
     ("GMT-08:00", -28800), ("UT+01", 3600), ("EST", -18000), ("+05:3", 18180)],
)
def test_fixed_zone_ids(name: str, offset: int) -> None:
    zone = zone_of(name)
    assert zone is not None and zone.utcoffset(None) == dt.timedelta(seconds=offset)


@pytest.mark.parametrize("name", ["utc", "+19:00", "Nowhere/Land", "x", "+5:3:0", "UTC+25"])
def test_unknown_zone_ids(name: str) -> None:
    assert zone_of(name) is None


# --- is_variant_null, explode --------------------------------------------------------------------------------


def test_is_variant_null() -> None:
    assert is_variant_null(parse_json("null"))
    assert not is_variant_null(parse_json('"null"'))
    assert not is_variant_null(None)
    assert not is_variant_null(parse_json("13"))


def test_variant_explode() -> None:
    rows = variant_explode(parse_json('{"b": 1, "a": [2]}'))
    assert [(p, k, v.to_json()) for p, k, v in rows] == [(0, "a", "[2]"), (1, "b", "1")]
    rows = variant_explode(parse_json('["hello", null]'))
    assert [(p, k, v.to_json()) for p, k, v in rows] == [(0, None, '"hello"'), (1, None, "null")]
    for nothing in (parse_json("1"), parse_json("null"), parse_json("[]"), None):
        assert variant_explode(nothing) == []
        assert variant_explode_outer(nothing) == [(None, None, None)]
    # Exploded values keep the parent's dictionary, as Spark's do.
    assert rows[0][2].metadata == parse_json('["hello", null]').metadata


# --- building Variants ------------------------------------------------------------------------------------------


def test_to_variant_object_layout_matches_spark() -> None:
    v = to_variant_object({"b": 1, "a": 2})
    assert (v.metadata, v.value) == (b"\x01\x02\x00\x01\x02ba", b"\x02\x02\x01\x00\x02\x00\x04\x0c\x01\x0c\x02")
    v = to_variant_object([1, None, 3])
    assert (v.metadata, v.value) == (b"\x01\x00\x00", b"\x03\x03\x00\x02\x03\x05\x0c\x01\x00\x0c\x03")
    nested = to_variant_object({"b": 1, "a": parse_json('{"z": 1, "y": [true]}')})
    assert nested.metadata == b"\x01\x04\x00\x01\x02\x03\x04bayz"
    assert nested == parse_json('{"a": {"y": [true], "z": 1}, "b": 1}')


def test_to_variant_object_rejects_what_spark_rejects() -> None:
    assert to_variant_object(None) is None
    for root in (1, "x", parse_json("1")):
        with pytest.raises(UnsupportedValueError):
            to_variant_object(root)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedValueError):
        to_variant_object({1: 2})  # type: ignore[dict-item]


@pytest.mark.parametrize(
    ("value", "type_", "value_bytes"),
    [
        (1, "bigint", b"\x0c\x01"),
        (300, "int", b"\x10\x2c\x01"),
        (1.5, "float", b"\x38\x00\x00\xc0\x3f"),
        (1.5, "double", b"\x1c" + b"\x00" * 6 + b"\xf8\x3f"),
        (Decimal("1.5"), "decimal(38,2)", b"\x20\x02\x96\x00\x00\x00"),
        (123456, "decimal(38,0)", b"\x20\x00\x40\xe2\x01\x00"),
        (True, "boolean", b"\x04"),
        (dt.date(1970, 1, 2), "date", b"\x2c\x01\x00\x00\x00"),
    ],
)
def test_cast_to_variant_encodings(value: object, type_: str, value_bytes: bytes) -> None:
    v = cast_to_variant(value, type_)
    assert v.value == value_bytes and v.metadata == b"\x01\x00\x00"


def test_cast_to_variant_rejects_bad_values() -> None:
    assert cast_to_variant(None, "int") is None
    for value, type_ in [(300, "tinyint"), ("1", "int"), (True, "int"), (1.5, "bigint"), (Decimal("1000"), "decimal(3,0)"),
                         (dt.datetime(2020, 1, 1), "date"), (dt.datetime(2020, 1, 1, tzinfo=UTC), "timestamp_ntz"),
                         ({"a": 1}, "struct<b:int>"), (1, "array<int>"), ({1: 1}, "map<string,int>")]:
        with pytest.raises(VariantError):
            cast_to_variant(value, type_)
    naive = cast_to_variant(dt.datetime(2024, 1, 1), "timestamp", zone="America/Los_Angeles")
    assert variant_get(naive, "$", "timestamp") == dt.datetime(2024, 1, 1, 8, tzinfo=UTC)
    assert variant_get(cast_to_variant({"a": [1, None]}, "map<string,array<int>>"), "$.a[0]", "int") == 1
    assert cast_to_variant(parse_json('{"x": 1}'), "variant") == parse_json('{"x": 1}')


# --- schema_of_variant ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "schema"),
    [
        ("null", "VOID"), ("[]", "ARRAY<VOID>"), ("{}", "OBJECT<>"), ("[null]", "ARRAY<VOID>"), ("1", "BIGINT"),
        ("100.0", "DECIMAL(3,0)"), ("1.000", "DECIMAL(1,0)"), ("0.0000001", "DECIMAL(7,7)"), ("1e5", "DOUBLE"),
        ('[{"b":true,"a":0}]', "ARRAY<OBJECT<a: BIGINT, b: BOOLEAN>>"), ("[1, 1.5]", "ARRAY<DECIMAL(21,1)>"),
        ('[1, "a"]', "ARRAY<VARIANT>"), ('[1, null, 2]', "ARRAY<BIGINT>"),
        ('{"a b":1, "`x":2, "1":3, "_a1":4, "":5, "é":6, "a1":7, "1a":8, "A_":9}',
         "OBJECT<``: BIGINT, `1`: BIGINT, `1a`: BIGINT, A_: BIGINT, _a1: BIGINT, ```x`: BIGINT, `a b`: BIGINT, "
         "a1: BIGINT, `é`: BIGINT>"),
    ],
)
def test_schema_of_variant(doc: str, schema: str) -> None:
    assert schema_of_variant(parse_json(doc)) == schema


@pytest.mark.parametrize(
    ("docs", "schema"),
    [
        (['{"a":1}', '{"A":2}'], "OBJECT<a: BIGINT>"),
        (['{"A":1}', '{"a":2}'], "OBJECT<A: BIGINT>"),
        (['{"A":1}', '{"a":"x"}'], "OBJECT<A: BIGINT, a: STRING>"),
        (['{"b":1}', '{"A":1, "c":2}'], "OBJECT<A: BIGINT, b: BIGINT, c: BIGINT>"),
        (["1", "1.5"], "DECIMAL(21,1)"), (["1", "1e5"], "DOUBLE"), (["1.5", "1e5"], "DOUBLE"),
        (["12345678901234567890.5", "0.00000000000000000001"], "DOUBLE"), (["true", "1"], "VARIANT"),
        (['"x"', "null"], "STRING"), (["[]", "[1]"], "ARRAY<BIGINT>"), (["{}", '{"a":null}'], "OBJECT<a: VOID>"),
        ([], "VOID"),
    ],
)
def test_schema_of_variant_agg(docs: list[str], schema: str) -> None:
    assert schema_of_variant_agg([parse_json(d) for d in docs] + [None]) == schema


def test_schema_merging_of_typed_values() -> None:
    f = cast_to_variant(1.5, "float")
    assert schema_of_variant_agg([f, parse_json("2")]) == "FLOAT"
    assert schema_of_variant_agg([f, parse_json("2.5")]) == "DOUBLE"
    date = cast_to_variant(dt.date(2020, 1, 1), "date")
    ts = cast_to_variant(dt.datetime(2020, 1, 1, tzinfo=UTC), "timestamp")
    ntz = cast_to_variant(dt.datetime(2020, 1, 1), "timestamp_ntz")
    assert schema_of_variant_agg([date, ts]) == "TIMESTAMP"
    assert schema_of_variant_agg([date, ntz]) == "TIMESTAMP_NTZ"
    assert schema_of_variant_agg([ntz, ts]) == "TIMESTAMP"
    assert schema_of_variant_agg([cast_to_variant(b"", "binary"), parse_json('"a"')]) == "VARIANT"
    u = Variant(b"\x01\x00\x00", b"\x50" + bytes(16))
    assert schema_of_variant(u) == "UUID" and schema_of_variant_agg([u, u]) == "UUID"
    assert schema_of_variant(None) is None


def test_schema_structures() -> None:
    s = schema_of(parse_json('{"a": [1.50, 2]}'))
    assert s == ObjectSchema((("a", ArraySchema(DecimalSchema(21, 1))),))
    assert render_schema(s) == "OBJECT<a: ARRAY<DECIMAL(21,1)>>"
    assert merge_schemas(DecimalSchema(38, 0), DecimalSchema(38, 38)) == "DOUBLE"


# --- properties ------------------------------------------------------------------------------------------------------

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=True),
    st.text(max_size=20), st.sampled_from(["1", " 2 ", "1.5", "true", "2024-01-02", "2024-01-02 03:04:05", "1e400", "NaN"]),
    st.decimals(min_value=-(10**20), max_value=10**20, places=5, allow_nan=False),
    st.dates(), st.binary(max_size=8),
)
_JSONISH = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from("abcAB"), inner, max_size=4)),
    max_leaves=12,
)
_ALL_TYPES = [
    "boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "decimal(5,2)", "decimal(38,10)", "string",
    "binary", "date", "timestamp", "timestamp_ntz", "time", "variant", "array<string>", "map<string,double>",
    "struct<a:int,b:string>",
]


@settings(max_examples=150, deadline=None)
@given(_JSONISH, st.sampled_from(_ALL_TYPES), st.sampled_from(["$", "$.a", "$[0]", "$.b[1]", "$[0].A"]))
def test_try_variant_get_never_raises_and_variant_get_agrees(value: object, type_: str, path: str) -> None:
    v = Variant.from_python(value)
    try:
        lenient = try_variant_get(v, path, type_)
    except OutOfPythonRange:
        return
    try:
        strict = variant_get(v, path, type_)
    except VariantCastError:
        assert lenient is None or isinstance(lenient, (list, dict))
        return
    if isinstance(strict, float) and math.isnan(strict):
        assert math.isnan(lenient)  # type: ignore[arg-type]
    else:
        assert strict == lenient


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=5), _JSONISH, max_size=5))
def test_to_variant_object_fields_read_back(value: dict) -> None:
    v = to_variant_object(value)
    for key, item in value.items():
        if "'" in key:
            continue
        assert variant_get(v, f"$['{key}']") == Variant.from_python(item)
    assert [k for _, k, _ in variant_explode(v)] == sorted(value, key=lambda k: k.encode())


@settings(max_examples=100, deadline=None)
@given(st.lists(_JSONISH, max_size=5))
def test_schema_agg_is_a_fold_of_merges(values: list) -> None:
    vs = [Variant.from_python(x) for x in values]
    for v in vs:
        assert schema_of_variant_agg([v]) == schema_of_variant(v)
        assert merge_schemas("VOID", schema_of(v)) == schema_of(v)
    expected = "VOID"
    for v in vs:
        expected = merge_schemas(expected, schema_of(v))
    assert schema_of_variant_agg(vs) == render_schema(expected)


@given(st.integers(-(2**63), 2**63 - 1))
def test_integer_strings_round_trip(n: int) -> None:
    assert variant_get(Variant.from_python(f" {n}\t"), "$", "bigint") == n
    assert variant_get(cast_to_variant(n, "bigint"), "$", "string") == str(n)


@given(st.floats(allow_nan=False))
def test_double_strings_round_trip(x: float) -> None:
    assert variant_get(Variant.from_python(repr(x)), "$", "double") == x
    assert variant_get(variant_get(Variant.from_python(x), "$", "variant"), "$", "double") == x


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float32_rounding_is_exact(x: float) -> None:
    assert float32_of_fraction(Fraction(x)) == to_float32(x)
    assert variant_get(Variant.from_python(x), "$", "float") == to_float32(x)
    assert variant_get(Variant.from_python(Float32(to_float32(x))), "$", "double") == to_float32(x)


@given(st.dates())
def test_date_strings(d: dt.date) -> None:
    assert string_to_date(d.isoformat()) == d.toordinal() - dt.date(1970, 1, 1).toordinal()


@given(st.integers(-(2**62), 2**62))
def test_timestamp_text_round_trips(micros: int) -> None:
    assert string_to_timestamp(format_timestamp(micros), UTC) == micros


def test_deep_values() -> None:
    deep = parse_json("[" * 900 + "1" + "]" * 900)
    assert schema_of_variant(deep) == "ARRAY<" * 900 + "BIGINT" + ">" * 900
    assert variant_get(deep, "$" + "[0]" * 900, "int") == 1
    assert variant_get(deep, "$[0]") == parse_json("[" * 899 + "1" + "]" * 899)
    nested: object = 1
    for _ in range(3000):
        nested = [nested]
    assert variant_get(to_variant_object(nested), "$" + "[0]" * 3000, "string") == "1"
