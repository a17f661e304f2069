"""varlake.semantics.partition_values: names, Delta text, Hive directories, Spark's directories."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from varlake.errors import PartitionValueError, UnsafePathError
from varlake.semantics import partition_values as pv

UTC = dt.timezone.utc


# --- Hive escaping -----------------------------------------------------------------------------------


@given(st.text())
def test_unescape_inverts_escape_for_any_text(text: str) -> None:
    escaped = pv.escape(text)
    assert pv.unescape(escaped) == text
    assert "/" not in escaped and "=" not in escaped and "\x00" not in escaped


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00")))
def test_a_directory_of_any_values_stays_one_level_per_column(text: str) -> None:
    folder = pv.directory(["a", "b/c"], [text, None])
    first, second = folder.split("/")
    assert first.startswith("a=") and second == "b%2Fc=__HIVE_DEFAULT_PARTITION__"
    stored = pv.values_from_directory(f"{folder}/f.parquet", ["a", "b/c"], {"a": "string", "b/c": "string"}, "UTC", "t")
    assert stored == {"a": text or None, "b/c": None}
    assert pv.inside_root("/root", f"{folder}/f.parquet", "t") == f"/root/{folder}/f.parquet"


def test_escape_is_sparks_escape_path_name() -> None:
    # ExternalCatalogUtils.escapePathName: these characters and ASCII controls, upper-case hex
    assert pv.escape("a/b=c%d:e") == "a%2Fb%3Dc%25d%3Ae"
    assert pv.escape('"#\'*?\\{[]^\x7f\x01\n') == "%22%23%27%2A%3F%5C%7B%5B%5D%5E%7F%01%0A"
    assert pv.escape("space ok, é ü 中 .. -_+!~()") == "space ok, é ü 中 .. -_+!~()"
    assert pv.unescape("%zz%4") == "%zz%4"  # not an escape: kept, as Spark does
    assert pv.unescape("%41%2f") == "A/"


def test_null_and_empty_values_are_the_hive_default_partition() -> None:
    assert pv.directory(["p"], [None]) == "p=__HIVE_DEFAULT_PARTITION__"
    assert pv.render("", "string") is None and pv.render(b"", "binary") is None
    assert pv.parse("", "integer") is None and pv.parse(None, "string") is None and pv.parse("", "string") is None


@pytest.mark.parametrize("bad", ["../x", "/etc/passwd", "a/../../b", "_delta_log/x.json", "", "a\\..\\b", "./a"])
def test_paths_that_would_leave_the_root_are_refused(bad: str) -> None:
    with pytest.raises(UnsafePathError):
        pv.inside_root("/root", bad, "t")


def test_values_that_look_like_paths_stay_inside() -> None:
    for value in ["..", "../..", "/", "a/../b", "_delta_log", "."]:
        folder = pv.directory(["p"], [value])
        assert pv.inside_root("/root", f"{folder}/f.parquet", "t").startswith("/root/p=")


# --- names ------------------------------------------------------------------------------------------


def test_partition_columns_are_checked() -> None:
    types = {"a": "string", "b": "binary", "s": None, "v": "variant", "n": "void"}
    pv.check_partition_columns(["a", "b"], types, "t")
    for cols, message in [(["a", "a"], "duplicate"), (["zz"], "not a top-level column"), (["s"], "non-primitive"), (["v"], "Variant column"),
                          (["n"], "void"), ([""], "invalid")]:
        with pytest.raises(PartitionValueError, match=message):
            pv.check_partition_columns(cols, {**types, "": "string"}, "t")


# --- typed value <-> text ---------------------------------------------------------------------------

ROUND_TRIPS = [
    ("string", "a b/=%", "a b/=%"),
    ("string", "é中\n", "é中\n"),
    ("byte", -128, "-128"),
    ("short", 32767, "32767"),
    ("integer", -2147483648, "-2147483648"),
    ("long", 9223372036854775807, "9223372036854775807"),
    ("boolean", True, "true"),
    ("boolean", False, "false"),
    ("decimal(5,2)", Decimal("-1.50"), "-1.50"),
    ("decimal(38,18)", Decimal("1E-18"), "0.000000000000000001"),
    ("decimal(38,0)", Decimal("9" * 38), "9" * 38),
    ("double", 1.5, "1.5"),
    ("double", 1e23, "9.999999999999999E22"),  # Java's Double.toString, as Spark writes it
    ("double", 1e7, "1.0E7"),
    ("double", -0.0, "-0.0"),
    ("double", math.inf, "Infinity"),
    ("double", -math.inf, "-Infinity"),
    ("float", 0.10000000149011612, "0.1"),
    ("float", 3.4028234663852886e38, "3.4028235E38"),
    ("date", dt.date(2024, 2, 29), "2024-02-29"),
    ("date", dt.date(1, 1, 1), "0001-01-01"),
    ("timestamp", dt.datetime(2024, 1, 1, 0, 0, 0, 250000, UTC), "2024-01-01T00:00:00.250000Z"),
    ("timestamp", dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC), "1969-12-31T23:59:59.000000Z"),
    ("timestamp", dt.datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00.000000Z"),
    ("timestamp_ntz", dt.datetime(2024, 1, 1, 12, 30, 0, 5), "2024-01-01 12:30:00.000005"),
    ("timestamp_ntz", dt.datetime(2024, 1, 1, 12, 30), "2024-01-01 12:30:00"),
    ("binary", b"\x01\x02abc", "\x01\x02abc"),
    ("binary", "é/=".encode(), "é/="),
]


@pytest.mark.parametrize(("type_name", "value", "text"), ROUND_TRIPS)
def test_render_and_parse_round_trip(type_name: str, value: object, text: str) -> None:
    assert pv.render(value, type_name) == text
    back = pv.parse(text, type_name)
    assert back == value and type(back) is type(value)
    assert pv.normalize(text, type_name) == text


def test_nan_round_trips() -> None:
    assert pv.render(math.nan, "double") == "NaN" and math.isnan(pv.parse("NaN", "double"))


@given(st.floats(allow_nan=False))
def test_doubles_round_trip(x: float) -> None:
    assert pv.parse(pv.render(x, "double"), "double") == x


@given(st.floats(allow_nan=False, width=32))
def test_floats_round_trip(x: float) -> None:
    assert pv.parse(pv.render(x, "float"), "float") == x


@given(st.datetimes(timezones=st.just(UTC)))
def test_timestamps_round_trip(x: dt.datetime) -> None:
    assert pv.parse(pv.render(x, "timestamp"), "timestamp") == x


def test_timestamps_in_other_spellings() -> None:
    want = dt.datetime(1970, 1, 1, 0, 0, 0, 123456, UTC)
    assert pv.parse("1970-01-01T00:00:00.123456Z", "timestamp") == want
    assert pv.parse("1970-01-01 08:00:00.123456+08:00", "timestamp") == want
    assert pv.parse("1970-01-01 01:00:00.123456", "timestamp", tz="Europe/Berlin") == want
    assert pv.parse("1970-01-01 00:00:00.123456", "timestamp") == want  # older varlake tables: UTC text
    assert pv.parse("1970-01-01 09:00:00.123456", "timestamp", tz="GMT+9") == want  # Spark's zone spellings
    assert pv.render(dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), "timestamp") == "1970-01-01T00:00:00.000000Z"


def test_spark_directories_give_utc_and_one_spelling() -> None:
    types = {"ts": "timestamp", "d": "double", "f": "float", "n": "timestamp_ntz", "b": "binary"}
    got = pv.values_from_directory(
        "ts=2024-01-01 01%3A30%3A00.25/d=1.0E23/f=0.1/n=2024-01-01 00%3A00%3A00.5/b=%01é/x.parquet",
        ["ts", "d", "f", "n", "b"], types, "Europe/Berlin", "t",
    )
    assert got == {"ts": "2024-01-01T00:30:00.250000Z", "d": "9.999999999999999E22", "f": "0.1", "n": "2024-01-01 00:00:00.5", "b": "\x01é"}
    assert pv.spark_local_timestamp_to_utc("2024-01-01 01:30:00", "Europe/Berlin", "x") == "2024-01-01T00:30:00.000000Z"
    with pytest.raises(PartitionValueError, match="ambiguous"):
        pv.spark_local_timestamp_to_utc("2024-10-27 02:30:00", "Europe/Berlin", "x")
    with pytest.raises(PartitionValueError, match="not the partition column"):
        pv.values_from_directory("q=1/x.parquet", ["p"], {"p": "integer"}, "UTC", "t")
    with pytest.raises(PartitionValueError, match="one directory per partition column"):
        pv.values_from_directory("x.parquet", ["p"], {"p": "integer"}, "UTC", "t")


@pytest.mark.parametrize(
    ("type_name", "value", "message"),
    [
        ("binary", b"\xff\xfe", "not UTF-8"),
        ("string", "\ud800", "surrogate"),
        ("byte", 128, "out of range"),
        ("integer", "1", "not an integer"),
        ("decimal(3,1)", Decimal("1.25"), "does not fit"),
        ("decimal(3,1)", Decimal("123.4"), "does not fit"),
        ("timestamp", dt.datetime(2024, 1, 1), "time zone"),
        ("boolean", 1, "not a boolean"),
        ("date", "2024-01-01", "not a date"),
    ],
)
def test_values_that_cannot_be_stored_are_named_errors(type_name: str, value: object, message: str) -> None:
    with pytest.raises(PartitionValueError, match=message):
        pv.render(value, type_name, "column 'p'")


@pytest.mark.parametrize(
    ("type_name", "text"),
    [("integer", "1.5"), ("integer", "3000000000"), ("boolean", "yes"), ("date", "2024-13-01"), ("double", "one"),
     ("timestamp", "yesterday"), ("decimal(5,2)", "abc"), ("timestamp", "2024-01-01 00:00:00 Mars/Base")],
)
def test_unreadable_stored_text_is_a_named_error(type_name: str, text: str) -> None:
    with pytest.raises(PartitionValueError, match="partition value"):
        pv.parse(text, type_name)


_TYPED = st.one_of(
    st.tuples(st.just("string"), st.text(alphabet=st.characters(codec="utf-8"), min_size=1)),
    st.tuples(st.just("binary"), st.text(alphabet=st.characters(codec="utf-8"), min_size=1).map(str.encode)),
    st.tuples(st.just("byte"), st.integers(-(2**7), 2**7 - 1)),
    st.tuples(st.just("short"), st.integers(-(2**15), 2**15 - 1)),
    st.tuples(st.just("integer"), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just("long"), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just("boolean"), st.booleans()),
    st.tuples(st.just("date"), st.dates()),
    st.tuples(st.just("timestamp_ntz"), st.datetimes()),
    st.tuples(st.just("decimal(38,6)"), st.decimals(allow_nan=False, allow_infinity=False, places=6,
                                                      min_value=Decimal("-1e31"), max_value=Decimal("1e31"))),
)


@given(_TYPED)
def test_every_type_round_trips_through_text_and_directories(typed: tuple[str, object]) -> None:
    type_name, value = typed
    text = pv.render(value, type_name)
    assert text is not None and pv.parse(text, type_name) == value
    # and through a directory name, as Spark would read it back
    folder = pv.directory(["p"], [text])
    assert pv.values_from_directory(f"{folder}/f.parquet", ["p"], {"p": type_name}, "UTC", "t") == {"p": text}
