"""A sqlglot tree -> predicate tree directly (``predicate_of``): the same predicate as the
text route (``parse_predicate``), and as rendering the tree and parsing it again (what the
Spark reader and DML did before), for trees parsed alone or taken out of a query."""

from __future__ import annotations

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from varlake.errors import ExpressionError
from varlake.expr import Column, Comparison, Literal, parse_predicate
from varlake.expr.dialect import DIALECT, SparkSQL
from varlake.expr.sql import predicate_of

PREDICATES = [
    "a = 1",
    "a <> 1 AND b >= 2.5",
    "a < -3 OR NOT b <=> NULL",
    "a != 1",
    "s.x.y > 0",
    "`odd name` = 'x'",
    "v:a.b::bigint > 5 AND ts >= '2024-01-01'",
    "v:a['x y'][0]::string = 'q'",
    "variant_get(v, '$.a', 'int') = 3",
    "try_variant_get(v, '$.a[1]', 'double') < 1e3",
    "CAST(v:a AS DECIMAL(10, 2)) = 1.25",
    "TRY_CAST(s AS INT) IS NULL",
    "d = DATE '2024-01-02'",
    "t < TIMESTAMP '2024-01-02 03:04:05'",
    "t < TIMESTAMP '2024-01-02 03:04:05+00:00'",
    "x IN (1, 2, 3)",
    "x NOT IN ('a', 'b')",
    "x IN (y, 2)",
    "x BETWEEN 1 AND 10",
    "x NOT BETWEEN 1 AND 10",
    "name LIKE 'ab%'",
    "name NOT LIKE 'a\\\\_%' ESCAPE '\\\\'",
    "name ILIKE 'AB%'",
    "s IS NOT NULL AND v:a IS NULL",
    "flag",
    "flag IS TRUE",
    "NOT (a = 1 OR b = 2)",
    "TRUE",
    "NULL",
    "isnull(a) OR isnotnull(b)",
    "a + 1 > b * 2",
    "a % 3 = 1",
    "-a < 0",
    "length(s) = 3 AND lower(s) = 'abc'",
    "startswith(s, 'a')",
    "year(d) = 2024",
    "X'0aff' = bin",
    "s = 'it''s'",
    "s = 'a' 'b'",
    "CASE WHEN a = 1 THEN TRUE ELSE FALSE END",
    "a = 1 AND (b = 2 AND (c = 3 AND d = 4))",
    " OR ".join(f"c{i} = {i}" for i in range(40)),
    "x IN (SELECT 1)",
    "x IS 3",
    "x IN ()",
]


def _outcome(make):  # noqa: ANN001, ANN202
    """The predicate, or the type of the error it raises."""
    try:
        return make()
    except (ExpressionError, ValueError) as exc:
        return type(exc)


def _parse(text: str) -> exp.Expression | None:
    try:
        return sqlglot.parse_one(text, dialect=DIALECT)
    except sqlglot.errors.SqlglotError:
        return None


@pytest.mark.parametrize("text", PREDICATES)
def test_the_node_gives_what_its_text_gives(text: str) -> None:
    node = _parse(text)
    assert node is not None
    shown = node.sql(dialect=DIALECT)
    direct = _outcome(lambda: predicate_of(node))
    assert direct == _outcome(lambda: parse_predicate(text))
    assert direct == _outcome(lambda: parse_predicate(node.sql(dialect=DIALECT)))  # the old render + re-parse
    assert node.sql(dialect=DIALECT) == shown  # the tree is left as it was


@pytest.mark.parametrize("text", PREDICATES)
def test_a_where_taken_out_of_a_query_reads_as_its_text(text: str) -> None:
    if "SELECT" in text:
        return
    query = _parse(f"SELECT * FROM t WHERE {text}")
    assert query is not None
    assert _outcome(lambda: predicate_of(query.args["where"].this)) == _outcome(lambda: parse_predicate(text))


def test_built_field_accesses_read_as_column_paths() -> None:
    """The Spark reader unqualifies columns by replacing them with built ``Dot`` chains."""
    node = _parse("t.s.x > 1")
    assert node is not None
    built = exp.Dot(this=exp.column("s", quoted=True), expression=exp.to_identifier("x", quoted=True))
    node.this.replace(built)
    assert predicate_of(node) == Comparison(">", Column(("s", "x")), Literal(1, "integer"))
    assert predicate_of(node) == parse_predicate(node.sql(dialect=DIALECT))


def test_the_dialect_is_spark_sql() -> None:
    assert DIALECT is SparkSQL
    # Spark reads '' inside a string literal as a quote
    assert parse_predicate("s = 'it''s'") == Comparison("=", Column(("s",)), Literal("it's", "string"))


def test_a_deep_tree_fails_as_a_parse_error() -> None:
    node: exp.Expression = exp.column("a").eq(1)
    for _ in range(5000):
        node = exp.Not(this=exp.Paren(this=node))
    with pytest.raises(ExpressionError, match="nested too deeply"):
        predicate_of(node)


_columns = st.sampled_from(["a", "b", "s.x", "`c d`", "v:k::int", "v:k.m::string", "variant_get(v, '$.n[0]', 'bigint')"])
_literals = st.one_of(
    st.integers(-(2**40), 2**40).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(lambda f: repr(float(f))),
    st.text(st.characters(codec="ascii", exclude_characters="\\\x00"), max_size=6).map(lambda s: "'" + s.replace("'", "''") + "'"),
    st.sampled_from(["NULL", "TRUE", "FALSE", "DATE '2024-02-29'", "CAST('7' AS INT)"]),
)
_values = st.one_of(_columns, _literals)


def _leaf() -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda a, op, b: f"{a} {op} {b}", _values, st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "<=>", "!="]), _values),
        st.builds(lambda a, xs, neg: f"{a} {'NOT ' if neg else ''}IN ({', '.join(xs)})", _columns, st.lists(_values, min_size=1, max_size=4), st.booleans()),
        st.builds(lambda a, lo, hi: f"{a} BETWEEN {lo} AND {hi}", _columns, _literals, _literals),
        st.builds(lambda a, neg: f"{a} IS {'NOT ' if neg else ''}NULL", _values, st.booleans()),
        st.builds(lambda a, p: f"{a} LIKE '{p}'", _columns, st.sampled_from(["a%", "_b", "%", "x"])),
    )


_predicates = st.recursive(
    _leaf(),
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner),
        st.builds(lambda a, b: f"{a} OR {b}", inner, inner),
        st.builds(lambda a: f"NOT ({a})", inner),
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(_predicates)
def test_random_predicates_read_the_same_by_node_and_by_text(text: str) -> None:
    node = _parse(text)
    if node is None:
        return
    direct = _outcome(lambda: predicate_of(node))
    assert direct == _outcome(lambda: parse_predicate(text))
    assert direct == _outcome(lambda: parse_predicate(node.sql(dialect=DIALECT)))
    query = _parse(f"SELECT a FROM t WHERE {text}")
    assert query is not None
    assert _outcome(lambda: predicate_of(query.args["where"].this)) == direct


TERMS = [
    "a",
    "s.x.y",
    "v:a.b::bigint",
    "variant_get(v, '$.a[1]', 'double')",
    "CAST(v:a AS DECIMAL(10, 2))",
    "a + b * 2",
    "upper(name)",
    "DATE '2024-01-02'",
    "-x",
]


@pytest.mark.parametrize("text", TERMS)
def test_a_term_node_gives_what_its_text_gives(text: str) -> None:
    """``term_of`` (used by MERGE/UPDATE SET expressions) equals ``parse_term`` of the text,
    for the term alone and for the same term taken out of a SELECT."""
    from varlake.expr import parse_term, term_of

    node = sqlglot.parse_one(text, read=DIALECT)
    assert term_of(node) == parse_term(text)
    selected = sqlglot.parse_one(f"SELECT {text} FROM t", read=DIALECT).expressions[0]
    assert term_of(selected) == parse_term(text)
