"""SQL text -> predicate tree (sqlglot, Databricks dialect for the Variant shorthand)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from varlake.errors import ExpressionError, ExpressionParseError, InvalidPathError, UnsupportedExpressionError
from varlake.expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Cast,
    Column,
    Comparison,
    In,
    IsNull,
    Literal,
    Not,
    Or,
    VariantGet,
    col,
    lit,
    parse_predicate,
    parse_term,
    try_vget,
    vget,
)


def test_variant_shorthand_and_timestamp_string():
    pred = parse_predicate("v:a::bigint > 5 AND ts >= '2024-01-01'")
    assert pred == And(
        Comparison(">", vget("v", "$.a", "bigint"), Literal(5, "integer")),
        Comparison(">=", Column(("ts",)), Literal("2024-01-01", "string")),
    )


def test_variant_get_function_equals_shorthand():
    assert parse_predicate("variant_get(v, '$.a', 'bigint') = 3") == parse_predicate("v:a::bigint = 3")
    assert parse_predicate("variant_get(v, '$.a', 'bigint') = 3") == vget("v", "$.a", "bigint").eq(3)


def test_try_variant_get_and_try_cast_are_try():
    assert parse_predicate("try_variant_get(v, '$.a.b', 'int') = 1").left == try_vget("v", "$['a']['b']", "int")
    assert parse_term("try_cast(v:a.b AS int)") == try_vget("v", "$.a.b", "int")
    assert parse_term("cast(v:a.b AS int)") == vget("v", "$.a.b", "int")


def test_bracketed_and_indexed_paths_normalize():
    term = parse_term("v:a['x y'][0]::string")
    assert term == VariantGet(Column(("v",)), "$['a']['x y'][0]", "string", False)
    assert parse_term("""v:["it's"]::int""").path == "$['it\\'s']"
    assert parse_term("v:a.b[0].c::double").path == "$['a']['b'][0]['c']"


def test_variant_path_keys_keep_case_and_uncast_path_is_variant():
    term = parse_term("v:Abc")
    assert term == VariantGet(Column(("v",)), "$['Abc']", "variant", False)


def test_variant_in_nested_struct_column():
    assert parse_term("s.v:a::int") == VariantGet(Column(("s", "v")), "$['a']", "integer", False)


def test_nested_struct_columns():
    assert parse_predicate("s.x = 1") == col("s.x").eq(1)
    assert parse_term("a.b.c.d.e.f") == Column(("a", "b", "c", "d", "e", "f"))
    assert parse_term("`x y`.z") == Column(("x y", "z"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = 1", Comparison("=", col("a"), lit(1))),
        ("a <> 1", Comparison("<>", col("a"), lit(1))),
        ("a != 1", Comparison("<>", col("a"), lit(1))),
        ("a < 1", col("a") < 1),
        ("a <= 1", col("a") <= 1),
        ("a > 1", col("a") > 1),
        ("a >= 1", col("a") >= 1),
        ("a <=> 1", col("a").eq_null_safe(1)),
        ("a IS NOT DISTINCT FROM 1", col("a").eq_null_safe(1)),
        ("a IS DISTINCT FROM 1", Not(col("a").eq_null_safe(1))),
        ("a IS NULL", IsNull(col("a"))),
        ("a IS NOT NULL", Not(IsNull(col("a")))),
        ("a IN (1, 2)", In(col("a"), (lit(1), lit(2)))),
        ("a NOT IN (1, NULL)", Not(In(col("a"), (lit(1), Literal(None, "void"))))),
        ("a BETWEEN 1 AND 5", And(col("a") >= 1, col("a") <= 5)),
        ("a NOT BETWEEN 1 AND 5", Not(And(col("a") >= 1, col("a") <= 5))),
        ("NOT (a = 1 OR b = 2)", Not(Or(col("a").eq(1), col("b").eq(2)))),
        ("TRUE", AlwaysTrue()),
        ("FALSE", AlwaysFalse()),
        ("flag", col("flag").eq(True)),
        ("flag IS TRUE", col("flag").eq_null_safe(True)),
        ("CAST(a AS double) > 1.5", Comparison(">", Cast(col("a"), "double"), Literal(Decimal("1.5"), "decimal(2,1)"))),
        ("1 < a", Comparison("<", lit(1), col("a"))),
        ("TRY_CAST(a AS int) = 1", Comparison("=", Cast(col("a"), "integer", True), lit(1))),
        ("a IN (b, 2)", Or(col("a").eq(col("b")), col("a").eq(2))),
    ],
)
def test_sql_shapes(text, expected):
    assert parse_predicate(text) == expected


@pytest.mark.parametrize(
    ("text", "value", "dtype"),
    [
        ("5", 5, "integer"),
        ("5000000000", 5000000000, "long"),
        ("-7", -7, "integer"),
        ("1.50", Decimal("1.50"), "decimal(3,2)"),
        ("1.5e3", 1500.0, "double"),
        ("'x'", "x", "string"),
        ("'it' 's'", "its", "string"),
        ("X'0A0b'", b"\n\x0b", "binary"),
        ("NULL", None, "void"),
        ("TRUE", True, "boolean"),
    ],
)
def test_literal_typing(text, value, dtype):
    assert parse_term(text) == Literal(value, dtype)


def test_typed_literals_fold_unless_they_depend_on_the_session_zone():
    assert parse_term("DATE '2024-01-01'") == Literal(dt.date(2024, 1, 1), "date")
    assert parse_term("5L") == Literal(5, "long")
    assert parse_term("1.5D") == Literal(1.5, "double")
    assert parse_term("TIMESTAMP_NTZ '2024-01-01 10:00'") == Literal(dt.datetime(2024, 1, 1, 10), "timestamp_ntz")
    utc = dt.timezone.utc
    # (Spark 4.3 refuses '2024-01-01 10:00+02:00': a zone needs the seconds before it)
    assert parse_term("TIMESTAMP '2024-01-01 10:00:00+02:00'") == Literal(dt.datetime(2024, 1, 1, 8, tzinfo=utc), "timestamp")
    # without a zone the instant depends on the session time zone: binding folds it
    assert parse_term("TIMESTAMP '2024-01-01 10:00'") == Cast(Literal("2024-01-01 10:00", "string"), "timestamp")
    assert parse_term("TRY_CAST('x' AS int)") == Literal(None, "integer")
    with pytest.raises(ExpressionError):
        parse_term("CAST('x' AS int)")


def test_long_or_chain_is_balanced():
    text = " OR ".join(f"a = {i}" for i in range(2000))
    pred = parse_predicate(text)

    def depth(node):
        if isinstance(node, (And, Or)):
            return 1 + max(depth(node.left), depth(node.right))
        return 1

    assert depth(pred) <= 13


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("round(a, 2) = 1", "ROUND(a, 2)"),
        ("greatest(a, 1) > 2", "GREATEST"),
        ("a RLIKE 'x%'", "REGEXP_LIKE"),
        ("a IN (SELECT b FROM t)", "SELECT"),
        ("v:a[*]::int = 1", "v:a"),
        ("variant_get(v, p, 'int') = 1", "variant_get"),
    ],
)
def test_unsupported_constructs_name_the_fragment(text, fragment):
    with pytest.raises(UnsupportedExpressionError) as info:
        parse_predicate(text)
    assert fragment.lower() in str(info.value).lower()
    assert info.value.fragment is not None


@pytest.mark.parametrize("text", ["a = ", "", "a = 'unterminated", "((a = 1)"])
def test_unparsable_text_raises_parse_error(text):
    with pytest.raises(ExpressionParseError) as info:
        parse_predicate(text)
    assert repr(text) in str(info.value)


def test_bad_variant_path_in_variant_get():
    with pytest.raises(InvalidPathError):
        parse_predicate("variant_get(v, 'a.b', 'int') = 1")
    with pytest.raises(ExpressionError):
        parse_predicate("variant_get(v, '$.a', 'not_a_type') = 1")


def test_str_of_tree_parses_back_to_the_same_tree():
    for text in [
        "v:a['x y'][0]::string = 'q' AND NOT (s.x IN (1, 2) OR y IS NULL)",
        "try_variant_get(v, '$.a', 'double') <=> 1.5 OR a <> 3",
        "CAST(a AS date) >= DATE '2024-01-01'",
        "`select`.`x y` = 1 AND `a``b` IS NULL",
        "f IN (CAST('NaN' AS double), 1.5e0, -2) AND b = X'0aff' AND t = TIMESTAMP '2024-01-01 00:00:00Z'",
    ]:
        pred = parse_predicate(text)
        assert parse_predicate(str(pred)) == pred


def test_builder_api():
    ts = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    pred = (col("ts") >= lit(ts)) & ~(vget("v", "$.a", "bigint") > 5) | col("s.x").isin(1, 2)
    assert pred == Or(
        And(Comparison(">=", col("ts"), Literal(ts, "timestamp")), Not(Comparison(">", vget("v", "$['a']", "long"), lit(5)))),
        In(Column(("s", "x")), (lit(1), lit(2))),
    )
    assert col("a").between(1, 2) == parse_predicate("a BETWEEN 1 AND 2")
    assert vget("v", "$.a").cast("bigint") == vget("v", "$.a", "bigint")
    assert hash(pred) == hash(parse_predicate(str(pred)))
