"""Skipping rules, one by one: each says when a file may be skipped and when it must not."""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import replace
from decimal import Decimal

import pytest

from varlake.errors import ExpressionError
from varlake.expr import (
    ROWS_CANNOT_MATCH,
    ROWS_MIGHT_MATCH,
    FileStats,
    SkippingEvaluator,
    TypeFamily,
    VariantBound,
    bind,
    parse_predicate,
)
from varlake.expr.raising import cast_proofs

F = TypeFamily
UTC = dt.timezone.utc
SCHEMA = {("i",): "long", ("s",): "string", ("f",): "double", ("ts",): "timestamp", ("d",): "date",
          ("v",): "variant", ("st",): "struct", ("st", "x"): "long", ("p",): "date", ("q",): "integer",
          ("pv",): "string"}
PARTS = {"p": "date", "q": "integer", "pv": "string"}


def might(text: str, stats: FileStats) -> bool:
    return SkippingEvaluator(bind(parse_predicate(text), SCHEMA), PARTS).might_match(stats)


def col_stats(lo=None, hi=None, nulls=None, n=10, key=("i",)) -> FileStats:
    return FileStats(
        num_records=n,
        min_values={key: lo} if lo is not None else {},
        max_values={key: hi} if hi is not None else {},
        null_count={key: nulls} if nulls is not None else {},
    )


def var_stats(path="$['a']", lo=None, hi=None, v_nulls=0, n=10) -> FileStats:
    key = (("v",), path)
    return FileStats(
        num_records=n,
        null_count={("v",): v_nulls},
        variant_min={key: lo} if lo is not None else {},
        variant_max={key: hi} if hi is not None else {},
    )


# --- plain columns ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("i > 20", ROWS_CANNOT_MATCH),
        ("i >= 20", ROWS_MIGHT_MATCH),
        ("i > 19", ROWS_MIGHT_MATCH),
        ("i < 10", ROWS_CANNOT_MATCH),
        ("i <= 10", ROWS_MIGHT_MATCH),
        ("i = 9", ROWS_CANNOT_MATCH),
        ("i = 15", ROWS_MIGHT_MATCH),
        ("i <> 15", ROWS_MIGHT_MATCH),
        ("i BETWEEN 21 AND 30", ROWS_CANNOT_MATCH),
        ("i BETWEEN 0 AND 10", ROWS_MIGHT_MATCH),
        ("i IN (1, 5, 25)", ROWS_CANNOT_MATCH),
        ("i IN (1, 12, 25)", ROWS_MIGHT_MATCH),
        ("i > 5 AND i < 3", ROWS_CANNOT_MATCH),
        ("i > 25 OR i < 5", ROWS_CANNOT_MATCH),
        ("i > 25 OR i < 11", ROWS_MIGHT_MATCH),
        ("NOT (i <= 20)", ROWS_CANNOT_MATCH),
        ("NOT (i BETWEEN 0 AND 30)", ROWS_CANNOT_MATCH),
        ("NOT (i BETWEEN 0 AND 15)", ROWS_MIGHT_MATCH),
        ("i = NULL", ROWS_CANNOT_MATCH),
        ("NOT (i = NULL)", ROWS_CANNOT_MATCH),
        ("i NOT IN (1, NULL)", ROWS_CANNOT_MATCH),
        ("i <=> 30", ROWS_CANNOT_MATCH),
        ("CAST(i AS double) > 20.5", ROWS_CANNOT_MATCH),
        ("CAST(i AS decimal(5,1)) < 9.5", ROWS_CANNOT_MATCH),
        ("CAST(i AS string) = '5'", ROWS_MIGHT_MATCH),  # not order-preserving
        ("TRY_CAST(i AS int) > 20", ROWS_CANNOT_MATCH),
        ("i > st.x", ROWS_MIGHT_MATCH),
        ("TRUE", ROWS_MIGHT_MATCH),
        ("FALSE", ROWS_CANNOT_MATCH),
    ],
)
def test_column_bounds(text, expected):
    assert might(text, col_stats(10, 20, nulls=2)) is expected


def test_missing_stats_mean_might_match():
    for text in ["i > 100", "i = 1", "i IS NULL", "i IS NOT NULL", "i IN (1, 2)", "i NOT IN (1, 2)", "i <> 3"]:
        assert might(text, FileStats()) is ROWS_MIGHT_MATCH
        assert might(text, col_stats(nulls=None)) is ROWS_MIGHT_MATCH
    assert might("i > 100", col_stats(lo=10)) is ROWS_MIGHT_MATCH  # max unknown
    assert might("i < 5", col_stats(lo=10)) is ROWS_CANNOT_MATCH


def test_null_counts():
    assert might("i IS NULL", col_stats(10, 20, nulls=0)) is ROWS_CANNOT_MATCH
    assert might("i IS NULL", col_stats(10, 20, nulls=1)) is ROWS_MIGHT_MATCH
    all_null = col_stats(nulls=10, n=10)
    assert might("i IS NOT NULL", all_null) is ROWS_CANNOT_MATCH
    assert might("i IS NULL", all_null) is ROWS_MIGHT_MATCH
    for text in ["i > 1", "i <> 1", "i IN (1, 2)", "i NOT IN (1)", "NOT (i > 1)", "i > st.x"]:
        assert might(text, all_null) is ROWS_CANNOT_MATCH, text
    assert might("i <=> NULL", all_null) is ROWS_MIGHT_MATCH
    assert might("NOT (i <=> 1)", all_null) is ROWS_MIGHT_MATCH  # NULL is distinct from 1


def test_empty_file_never_matches():
    assert might("i IS NULL OR TRUE", FileStats(num_records=0)) is ROWS_CANNOT_MATCH


def test_not_equal_and_not_in_need_a_single_value_and_no_doubt():
    assert might("i <> 7", col_stats(7, 7, nulls=3)) is ROWS_CANNOT_MATCH  # NULL <> 7 is NULL
    assert might("i NOT IN (6, 7)", col_stats(7, 7, nulls=3)) is ROWS_CANNOT_MATCH
    assert might("i NOT IN (6, 8)", col_stats(7, 7)) is ROWS_MIGHT_MATCH
    # <=> is two-valued: NOT (i <=> 7) keeps NULL rows
    assert might("NOT (i <=> 7)", col_stats(7, 7, nulls=0)) is ROWS_CANNOT_MATCH
    assert might("NOT (i <=> 7)", col_stats(7, 7, nulls=3)) is ROWS_MIGHT_MATCH
    assert might("NOT (i <=> 7)", col_stats(7, 7)) is ROWS_MIGHT_MATCH


def test_nested_struct_stats():
    stats = col_stats(1, 5, nulls=0, key=("st", "x"))
    assert might("st.x > 5", stats) is ROWS_CANNOT_MATCH
    assert might("st.x IS NULL", stats) is ROWS_CANNOT_MATCH
    assert might("st.x = 3", stats) is ROWS_MIGHT_MATCH


# --- strings: 32-character prefixes -----------------------------------------------------


def test_short_string_max_is_exact():
    stats = col_stats("abc", "abd", key=("s",))
    assert might("s > 'abd'", stats) is ROWS_CANNOT_MATCH
    assert might("s = 'abdx'", stats) is ROWS_CANNOT_MATCH
    assert might("s <> 'abc'", col_stats("abc", "abc", key=("s",))) is ROWS_CANNOT_MATCH


def test_truncated_unpadded_max_is_only_a_prefix_bound():
    prefix = "b" * 32
    stats = col_stats("a", prefix, key=("s",))  # real max may be "bbbb...bzzz"
    assert might(f"s = '{prefix}zzz'", stats) is ROWS_MIGHT_MATCH
    assert might(f"s > '{prefix}'", stats) is ROWS_MIGHT_MATCH
    assert might(f"s >= '{prefix}a'", stats) is ROWS_MIGHT_MATCH
    assert might(f"s IN ('0', '{prefix}q')", stats) is ROWS_MIGHT_MATCH
    assert might("s > 'bc'", stats) is ROWS_CANNOT_MATCH  # 'bc' > any 'bbbb...' string
    assert might("s IN ('0', 'c')", stats) is ROWS_CANNOT_MATCH
    assert might(f"s <> '{prefix}'", col_stats(prefix, prefix, key=("s",))) is ROWS_MIGHT_MATCH


def test_padded_max_bounds_and_utf16_truncation():
    padded = "b" * 32 + "\U0010ffff"
    assert might("s = 'c'", col_stats("a", padded, key=("s",))) is ROWS_CANNOT_MATCH
    assert might("s = 'bbb'", col_stats("a", padded, key=("s",))) is ROWS_MIGHT_MATCH
    # 16 astral characters are 32 UTF-16 units: a Java writer may have cut right there
    astral = "\U0001f600" * 16
    assert might(f"s = '{astral}x'", col_stats("a", astral, key=("s",))) is ROWS_MIGHT_MATCH
    # min is truncated down, which is still a lower bound
    assert might("s < 'b'", col_stats("b" * 32, "c", key=("s",))) is ROWS_CANNOT_MATCH


# --- timestamps: stats truncated to milliseconds ---------------------------------------


def test_timestamp_max_is_widened_by_a_millisecond():
    top = dt.datetime(2024, 1, 1, 10, 0, 0, 0, UTC)  # the real max may be 10:00:00.000999
    stats = col_stats(dt.datetime(2024, 1, 1, tzinfo=UTC), top, key=("ts",))
    assert might("ts > '2024-01-01 10:00:00.000500'", stats) is ROWS_MIGHT_MATCH
    assert might("ts >= '2024-01-01 10:00:00.000999'", stats) is ROWS_MIGHT_MATCH
    assert might("ts >= '2024-01-01 10:00:00.001'", stats) is ROWS_CANNOT_MATCH
    assert might("ts < '2024-01-01'", stats) is ROWS_CANNOT_MATCH
    assert might("ts = '2023-12-31 23:59:59.999999'", stats) is ROWS_CANNOT_MATCH


def test_dates():
    stats = col_stats(dt.date(2024, 1, 1), dt.date(2024, 1, 31), key=("d",))
    assert might("d > '2024-01-31'", stats) is ROWS_CANNOT_MATCH
    assert might("d = DATE '2024-01-15'", stats) is ROWS_MIGHT_MATCH


# --- doubles: NaN ------------------------------------------------------------------------


def test_nan_bounds_and_literals_never_prune():
    assert might("f > 100", col_stats(1.0, math.nan, key=("f",))) is ROWS_MIGHT_MATCH
    assert might("f < 0", col_stats(math.nan, math.nan, key=("f",))) is ROWS_MIGHT_MATCH
    assert might("f = CAST('NaN' AS double)", col_stats(1.0, 2.0, key=("f",))) is ROWS_MIGHT_MATCH
    # A finite max proves nothing about NaN (Parquet-derived stats leave NaN out), and a NaN
    # row makes f > 3 TRUE: only a file with one non-NULL value proves it holds no NaN.
    assert might("f > 3", col_stats(1.0, 2.0, key=("f",))) is ROWS_MIGHT_MATCH
    assert might("f > 3", col_stats(2.0, 2.0, nulls=9, key=("f",))) is ROWS_CANNOT_MATCH
    assert might("f < 1", col_stats(1.0, 2.0, key=("f",))) is ROWS_CANNOT_MATCH


# --- Variant paths ------------------------------------------------------------------------


def test_variant_path_without_stats_might_match():
    assert might("v:a::bigint > 5", var_stats()) is ROWS_MIGHT_MATCH
    other_path = var_stats(lo=VariantBound(1, F.EXACT_NUMERIC), hi=VariantBound(2, F.EXACT_NUMERIC))
    assert might("v:zz::bigint > 5", other_path) is ROWS_MIGHT_MATCH
    assert might("v:a.b::bigint > 5", other_path) is ROWS_MIGHT_MATCH


def test_variant_path_bounds():
    stats = var_stats(lo=VariantBound(1, F.EXACT_NUMERIC), hi=VariantBound(4, F.EXACT_NUMERIC))
    assert might("v:a::bigint > 5", stats) is ROWS_CANNOT_MATCH
    assert might("v:a::bigint BETWEEN 4 AND 9", stats) is ROWS_MIGHT_MATCH
    assert might("variant_get(v, '$.a', 'int') IN (0, 7)", stats) is ROWS_CANNOT_MATCH
    assert might("try_variant_get(v, '$.a', 'int') > 5", stats) is ROWS_CANNOT_MATCH
    assert might("v:['a']::double > 4.5", stats) is ROWS_CANNOT_MATCH  # int -> double keeps order
    assert might("v:a::decimal(5,2) >= 4.01", stats) is ROWS_CANNOT_MATCH
    assert might("NOT (v:a::bigint <= 5)", stats) is ROWS_CANNOT_MATCH


def test_variant_stats_of_another_family_do_not_prune():
    strings = var_stats(lo=VariantBound("10", F.STRING), hi=VariantBound("9", F.STRING))
    assert might("v:a::bigint = 5", strings) is ROWS_MIGHT_MATCH  # '5' casts to 5, but sorts after '10'
    assert might("v:a::bigint > 100", strings) is ROWS_MIGHT_MATCH
    numbers = var_stats(lo=VariantBound(1, F.EXACT_NUMERIC), hi=VariantBound(4, F.EXACT_NUMERIC))
    assert might("v:a::string = '9'", numbers) is ROWS_MIGHT_MATCH
    assert might("v:a::boolean = true", numbers) is ROWS_MIGHT_MATCH
    booleans = var_stats(lo=VariantBound(False, F.BOOLEAN), hi=VariantBound(False, F.BOOLEAN))
    assert might("v:a::bigint = 1", booleans) is ROWS_MIGHT_MATCH
    assert might("v:a::boolean = true", booleans) is ROWS_CANNOT_MATCH
    ntz = var_stats(lo=VariantBound(dt.datetime(2024, 1, 1), F.TIMESTAMP_NTZ),
                    hi=VariantBound(dt.datetime(2024, 1, 2), F.TIMESTAMP_NTZ))
    assert might("v:a::timestamp > '2030-01-01'", ntz) is ROWS_MIGHT_MATCH
    assert might("v:a::timestamp_ntz > '2030-01-01'", ntz) is ROWS_CANNOT_MATCH


def test_numeric_cross_family_bounds_are_widened_soundly():
    decimals = var_stats(lo=VariantBound(Decimal("2.5"), F.EXACT_NUMERIC), hi=VariantBound(Decimal("3.5"), F.EXACT_NUMERIC))
    assert might("v:a::int = 4", decimals) is ROWS_MIGHT_MATCH  # ceil(3.5): 3.5 may round or fail
    assert might("v:a::int > 4", decimals) is ROWS_CANNOT_MATCH
    assert might("v:a::int < 2", decimals) is ROWS_CANNOT_MATCH
    doubles = var_stats(lo=VariantBound(-0.5, F.DOUBLE), hi=VariantBound(math.inf, F.DOUBLE))
    assert might("v:a::bigint < -1", doubles) is ROWS_CANNOT_MATCH
    assert might("v:a::bigint > 10", doubles) is ROWS_MIGHT_MATCH  # infinite max gives no bound
    nan = var_stats(lo=VariantBound(1.0, F.DOUBLE), hi=VariantBound(math.nan, F.DOUBLE))
    assert might("v:a::bigint > 10", nan) is ROWS_MIGHT_MATCH


def test_variant_string_stats_are_prefix_bounds_too():
    stats = var_stats(lo=VariantBound("a", F.STRING), hi=VariantBound("m" * 32, F.STRING))
    assert might(f"v:a::string = '{'m' * 40}'", stats) is ROWS_MIGHT_MATCH
    assert might("v:a::string = 'n'", stats) is ROWS_CANNOT_MATCH


def test_variant_timestamp_stats_are_widened():
    top = dt.datetime(2024, 1, 1, 10, tzinfo=UTC)
    stats = var_stats(lo=VariantBound(top, F.TIMESTAMP), hi=VariantBound(top, F.TIMESTAMP))
    assert might("v:a::timestamp > '2024-01-01 10:00:00.0005'", stats) is ROWS_MIGHT_MATCH
    assert might("v:a::timestamp > '2024-01-01 10:00:01'", stats) is ROWS_CANNOT_MATCH


def test_variant_null_handling():
    stats = var_stats(lo=VariantBound(1, F.EXACT_NUMERIC), hi=VariantBound(4, F.EXACT_NUMERIC))
    assert might("v:a::bigint IS NULL", stats) is ROWS_MIGHT_MATCH  # a path may be missing in any row
    assert might("v:a IS NOT NULL", stats) is ROWS_MIGHT_MATCH
    all_null = var_stats(v_nulls=10, n=10)
    assert might("v:a::bigint > 1", all_null) is ROWS_CANNOT_MATCH
    assert might("v:a::bigint IS NOT NULL", all_null) is ROWS_CANNOT_MATCH
    assert might("v:a::bigint IS NULL", all_null) is ROWS_MIGHT_MATCH
    assert might("v IS NULL", var_stats(v_nulls=0)) is ROWS_CANNOT_MATCH


def test_only_one_bound_present():
    assert might("v:a::bigint > 5", var_stats(hi=VariantBound(4, F.EXACT_NUMERIC))) is ROWS_CANNOT_MATCH
    assert might("v:a::bigint < 5", var_stats(hi=VariantBound(4, F.EXACT_NUMERIC))) is ROWS_MIGHT_MATCH


# --- partition values --------------------------------------------------------------------


def part(**values) -> FileStats:
    return FileStats(num_records=5, partition_values=values)


def test_partition_values_are_exact():
    assert might("p = '2024-01-01'", part(p="2024-01-01", q="1", pv="x")) is ROWS_MIGHT_MATCH
    assert might("p = '2024-01-02'", part(p="2024-01-01", q="1", pv="x")) is ROWS_CANNOT_MATCH
    assert might("q IN (2, 3)", part(p="2024-01-01", q="10", pv="x")) is ROWS_CANNOT_MATCH
    assert might("q > 9", part(q="10")) is ROWS_MIGHT_MATCH  # numeric, not string, order
    assert might("p IS NULL", part(p="")) is ROWS_MIGHT_MATCH
    assert might("p IS NULL", part(p=None)) is ROWS_MIGHT_MATCH
    assert might("p IS NOT NULL", part(p="")) is ROWS_CANNOT_MATCH
    assert might("p = '2024-01-01'", part(p="")) is ROWS_CANNOT_MATCH
    assert might("NOT (p = '2024-01-01')", part(p="")) is ROWS_CANNOT_MATCH  # NULL stays NULL
    assert might("NOT (p <=> DATE '2024-01-01')", part(p="")) is ROWS_MIGHT_MATCH
    assert might("pv <> 'x'", part(pv="x")) is ROWS_CANNOT_MATCH
    assert might("pv > 'x' OR i > 3", FileStats(num_records=5, partition_values={"pv": "a"}, min_values={("i",): 0},
                                                   max_values={("i",): 2})) is ROWS_CANNOT_MATCH


def test_partition_values_unknown_or_unparsable_might_match():
    assert might("q = 1", part()) is ROWS_MIGHT_MATCH  # not given: unknown, not NULL
    assert might("q = 1", part(q="not a number")) is ROWS_MIGHT_MATCH
    assert might("q = 1", part(q=1)) is ROWS_MIGHT_MATCH  # already typed values are accepted
    assert might("q = 2", part(q=1)) is ROWS_CANNOT_MATCH


def test_partition_columns_by_name_need_a_schema():
    pred = bind(parse_predicate("q = 1"), SCHEMA)
    assert SkippingEvaluator(pred, ["q"], schema=SCHEMA).might_match(part(q="2")) is ROWS_CANNOT_MATCH
    with pytest.raises(ExpressionError, match="'q'"):
        SkippingEvaluator(pred, ["q"])


# --- robustness ------------------------------------------------------------------------------


def test_garbage_stats_never_crash_and_never_skip():
    odd = FileStats(
        num_records=10,
        min_values={("i",): "not a number", ("ts",): dt.datetime(2024, 1, 1)},  # naive where aware expected
        max_values={("i",): object(), ("ts",): 5},
        null_count={("i",): "x"},
        variant_min={(("v",), "$['a']"): VariantBound(b"\x00", F.EXACT_NUMERIC)},
        variant_max={(("v",), "$['a']"): VariantBound("z", "no such family")},  # type: ignore[arg-type]
    )
    for text in ["i > 5", "i IN (1, 2)", "i <> 3", "ts > '2024-01-01'", "v:a::bigint = 1", "i NOT IN (1)"]:
        assert might(text, odd) is ROWS_MIGHT_MATCH, text


def test_filter_and_reuse_hold_no_state():
    evaluator = SkippingEvaluator(bind(parse_predicate("i > 15"), SCHEMA))
    files = {"a": col_stats(0, 10), "b": col_stats(10, 20), "c": FileStats()}
    assert evaluator.filter(files, files.__getitem__) == ["b", "c"]
    assert evaluator.filter(files, files.__getitem__) == ["b", "c"]


def test_stats_from_shared_testdata(testdata):
    log = testdata / "delta/variant-stats-no-checkpoint/_delta_log/00000000000000000001.json"
    add = next(json.loads(line)["add"] for line in log.read_text().splitlines() if '"add"' in line)
    raw = json.loads(add["stats"])
    stats = FileStats(
        num_records=raw["numRecords"],
        min_values={("i",): raw["minValues"]["i"]},
        max_values={("i",): raw["maxValues"]["i"]},
        null_count={("i",): raw["nullCount"]["i"], ("v",): raw["nullCount"]["v"]},
    )
    schema = {("i",): "integer", ("v",): "variant"}

    def check(text):
        return SkippingEvaluator(bind(parse_predicate(text), schema)).might_match(stats)

    assert check("i > 109") is ROWS_CANNOT_MATCH
    assert check("i BETWEEN 105 AND 200") is ROWS_MIGHT_MATCH
    assert check("i IS NULL") is ROWS_CANNOT_MATCH
    assert check("v IS NULL") is ROWS_CANNOT_MATCH
    assert check("v:a::int = 1") is ROWS_MIGHT_MATCH  # Variant bounds not decoded here: unknown


# --- paths of ISO dates --------------------------------------------------------------------------


def iso_stats(lo: str | None, hi: str | None, iso: bool = True) -> FileStats:
    """A path whose values are strings, the writer having proven (``iso``) that every one is
    an ISO date (``FileStats.variant_iso_dates``)."""
    stats = var_stats(lo=VariantBound(lo, F.STRING) if lo is not None else None,
                      hi=VariantBound(hi, F.STRING) if hi is not None else None)
    return replace(stats, variant_iso_dates=frozenset({(("v",), "$['a']")}) if iso else frozenset())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v:a::date < DATE'2024-03-01'", ROWS_CANNOT_MATCH),
        ("v:a::date <= DATE'2024-03-01'", ROWS_MIGHT_MATCH),
        ("v:a::date > DATE'2024-03-31'", ROWS_CANNOT_MATCH),
        ("v:a::date >= DATE'2024-03-31'", ROWS_MIGHT_MATCH),
        ("v:a::date = DATE'2024-02-29'", ROWS_CANNOT_MATCH),
        ("v:a::date BETWEEN DATE'2024-03-10' AND DATE'2024-03-12'", ROWS_MIGHT_MATCH),
        ("v:a::date IN (DATE'2023-03-15', DATE'2025-03-15')", ROWS_CANNOT_MATCH),
        ("try_variant_get(v, '$.a', 'date') > DATE'2024-04-01'", ROWS_CANNOT_MATCH),
        ("NOT (v:a::date >= DATE'2024-01-01')", ROWS_CANNOT_MATCH),
        ("CAST(v:a AS date) < DATE'2024-03-01'", ROWS_CANNOT_MATCH),
        # read as text they are strings, whose order is not that of the dates in general
        ("v:a::string < '2024-03-01'", ROWS_CANNOT_MATCH),
        # a timestamp cast reads midnight in the session's zone: no bounds are derived
        ("v:a::timestamp < TIMESTAMP'2020-01-01 00:00:00'", ROWS_MIGHT_MATCH),
    ],
)
def test_string_bounds_of_iso_dates_bound_the_path_read_as_a_date(text, expected):
    assert might(text, iso_stats("2024-03-01", "2024-03-31")) is expected


def test_string_bounds_are_no_date_bounds_without_the_proof():
    unproven = iso_stats("2024-03-01", "2024-03-31", iso=False)
    assert might("v:a::date < DATE'2024-03-01'", unproven) is ROWS_MIGHT_MATCH
    assert might("try_variant_get(v, '$.a', 'date') > DATE'2025-01-01'", unproven) is ROWS_MIGHT_MATCH
    # '2024-3-5' casts to 2024-03-05 but sorts after '2024-03-31': only ISO text orders as dates
    assert might("v:a::date = DATE'2024-03-05'", iso_stats("2024-03-01", "2024-3-5", iso=False)) is ROWS_MIGHT_MATCH


def test_a_bound_that_is_no_iso_date_leaves_its_side_unknown():
    # a bound of another family, a bound cut to a prefix, year 0 (no Python date): unknown
    numbers = replace(var_stats(lo=VariantBound(1, F.EXACT_NUMERIC), hi=VariantBound(9, F.EXACT_NUMERIC)),
                      variant_iso_dates=frozenset({(("v",), "$['a']")}))
    assert might("v:a::date < DATE'1970-01-01'", numbers) is ROWS_MIGHT_MATCH
    assert might("v:a::date < DATE'2024-01-01'", iso_stats("2024-", "2024-12-31")) is ROWS_MIGHT_MATCH
    assert might("v:a::date > DATE'2025-01-01'", iso_stats("2024-", "2024-12-31")) is ROWS_CANNOT_MATCH
    assert might("v:a::date < DATE'0001-01-01'", iso_stats("0000-06-01", "0000-07-01")) is ROWS_MIGHT_MATCH
    assert might("v:a::date > DATE'0001-01-01'", iso_stats("0000-06-01", "0000-07-01")) is ROWS_MIGHT_MATCH
    assert might("v:a::date > DATE'0001-01-01'", iso_stats(None, "0001-01-01")) is ROWS_CANNOT_MATCH


def test_casts_of_iso_dates_to_dates_and_timestamps_are_proven_not_to_raise():
    def unproven(text: str, stats: FileStats) -> list[str]:
        return [str(t) for t, proof in cast_proofs(bind(parse_predicate(text), SCHEMA)) if not proof(stats)]

    proven, unknown = iso_stats("2024-03-01", "2024-03-31"), iso_stats("2024-03-01", "2024-03-31", iso=False)
    for target in ("date", "timestamp", "timestamp_ntz"):
        text = f"v:a::{target} IS NULL"
        assert unproven(text, proven) == []
        assert len(unproven(text, unknown)) == 1  # strings in general may not be dates
    assert len(unproven("v:a::int > 1", proven)) == 1  # ISO dates are no numbers
    assert len(unproven("v:b::date > DATE'2024-01-01'", proven)) == 1  # another path
