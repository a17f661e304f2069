"""``element_fields``: which exploded arrays of structs a query reads only field by field (sqlglot, no Spark)."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from varlake.delta.schema import ArrayType, PrimitiveType, StructField, StructType
from varlake.spark.reading.element_fields import element_fields, primitive_struct
from varlake.spark.reading.planner import target_type
from varlake.expr.dialect import SparkSQL

ITEMS = "array<struct<a:bigint,d:date,s:string>>"
GET = f"variant_get(v, '$.items', '{ITEMS}')"


def _fields(query: str, target: str = ITEMS) -> tuple[str, list[tuple[str, bool]]] | None:
    """(element name, [(field, projected)]) for the one ``variant_get`` of ``query``."""
    tree = sqlglot.parse_one(query, dialect=SparkSQL)
    (site,) = [n for n in tree.find_all(exp.Anonymous) if str(n.this).lower() == "variant_get"]
    found = element_fields(site, target_type(target))
    if found is None:
        return None
    return found.element, sorted((a.field, a.projected) for a in found.accesses)


def test_an_array_exploded_in_a_lateral_view_and_read_by_field() -> None:
    query = f"SELECT id, l.a, sum(l.d) AS n FROM t LATERAL VIEW explode({GET}) x AS l WHERE l.s = 'x' GROUP BY id, l.a"
    assert _fields(query) == ("l", [("a", False), ("a", True), ("d", False), ("s", False)])
    outer = f"SELECT l.a FROM t LATERAL VIEW OUTER explode_outer({GET}) x AS l"
    assert _fields(outer) == ("l", [("a", True)])
    assert _fields(f"SELECT count(*) FROM t LATERAL VIEW explode({GET}) x AS l") == ("l", [])


def test_an_array_exploded_through_a_subquery_column() -> None:
    query = f"""SELECT l.s, sum(l.a) FROM (SELECT id, {GET} AS lis FROM t WHERE id > 0) s
                LATERAL VIEW explode(lis) x AS l WHERE l.d > DATE'2020-01-01' GROUP BY l.s ORDER BY l.s"""
    assert _fields(query) == ("l", [("a", False), ("d", False), ("s", False), ("s", False), ("s", True)])
    qualified = f"SELECT l.a AS a FROM (SELECT {GET} AS lis FROM t) s LATERAL VIEW explode(s.lis) x AS l"
    assert _fields(qualified) == ("l", [("a", False)])
    nested = f"SELECT sum(r) FROM (SELECT l.a * 2 AS r FROM (SELECT {GET} AS lis FROM t) LATERAL VIEW explode(lis) x AS l)"
    assert _fields(nested) == ("l", [("a", False)])


@pytest.mark.parametrize("query", [
    f"SELECT l FROM t LATERAL VIEW explode({GET}) x AS l",  # the element whole
    f"SELECT to_json(l) FROM t LATERAL VIEW explode({GET}) x AS l",
    f"SELECT l.a, l IS NULL FROM t LATERAL VIEW explode({GET}) x AS l",
    f"SELECT l.A FROM t LATERAL VIEW explode({GET}) x AS l",  # cased otherwise than the type
    f"SELECT l.zz FROM t LATERAL VIEW explode({GET}) x AS l",  # no such field: Spark's error stays
    f"SELECT x.l.a FROM t LATERAL VIEW explode({GET}) x AS l",
    f"SELECT l.a.b FROM t LATERAL VIEW explode({GET}) x AS l",
    f"SELECT * FROM t LATERAL VIEW explode({GET}) x AS l",
    f"SELECT x.* FROM t LATERAL VIEW explode({GET}) x AS l",
    f"SELECT to_json(struct(*)) FROM t LATERAL VIEW explode({GET}) x AS l",
    f"SELECT l.a FROM t l LATERAL VIEW explode({GET}) x AS l",  # a source of the same name
    f"SELECT p, l.a FROM t LATERAL VIEW posexplode({GET}) x AS p, l",
    f"SELECT a FROM t LATERAL VIEW inline({GET}) x AS a, d, s",
    f"SELECT l.a FROM t LATERAL VIEW explode({GET}) x",  # no column alias
    f"SELECT l.a, (SELECT max(l.a) FROM u) FROM t LATERAL VIEW explode({GET}) x AS l",  # a nested query reads l
    f"SELECT size({GET}) FROM t",  # not exploded
    f"SELECT explode({GET}) FROM t",  # a generator in the SELECT list
    # the subquery column read elsewhere, or by a subquery that groups
    f"SELECT l.a, size(lis) FROM (SELECT {GET} AS lis FROM t) LATERAL VIEW explode(lis) x AS l",
    f"SELECT l.a FROM (SELECT {GET} AS lis, size(lis) AS n FROM t) LATERAL VIEW explode(lis) x AS l",
    f"SELECT l.a FROM (SELECT {GET} AS lis, 1 AS lis FROM t) LATERAL VIEW explode(lis) x AS l",
    f"SELECT l.a FROM (SELECT DISTINCT {GET} AS lis FROM t) LATERAL VIEW explode(lis) x AS l",
    f"SELECT l.a FROM (SELECT {GET} AS lis FROM t) JOIN u LATERAL VIEW explode(lis) x AS l",
    f"SELECT l.a FROM (SELECT {GET} AS lis FROM t) LATERAL VIEW explode(array(1)) y AS m LATERAL VIEW explode(m) x AS l",
])
def test_anything_else_that_sees_the_element_or_the_array_keeps_the_rebuilt_array(query: str) -> None:
    assert _fields(query) is None


def test_only_arrays_of_structs_of_primitives_with_distinct_names() -> None:
    query = f"SELECT l.a FROM t LATERAL VIEW explode({GET}) x AS l"
    assert _fields(query, "array<struct<a:bigint,b:array<int>>>") is None
    assert _fields(query, "array<bigint>") is None
    assert _fields(query, "struct<a:bigint>") is None
    a, upper_a = StructField("a", PrimitiveType("long")), StructField("A", PrimitiveType("integer"))
    assert primitive_struct(ArrayType(StructType((a,)))) == StructType((a,))
    assert primitive_struct(ArrayType(StructType((a, upper_a)))) is None  # ``l.a`` would be ambiguous


@pytest.mark.parametrize(("text", "constant"), [
    ("DATE'1995-01-02'", True), ("DATE '1995-1-2'", True), ("(DATE'1995-01-02')", True), ("current_date()", True),
    ("date_sub(DATE'1998-12-01', 90)", True), ("date_add(DATE'1998-12-01', -3)", True), ("add_months(DATE'1995-01-31', 1)", True),
    ("add_months(date_sub(DATE'1995-01-31', 1), 12)", True),
    ("CAST('garbage' AS DATE)", False),  # a cast that can fail
    ("TRY_CAST('1995-01-02' AS DATE)", False), ("CAST(x AS DATE)", False), ("TIMESTAMP'1995-01-02 10:00:00'", False),
    ("'1995-01-02'", False), ("date_sub(DATE'1998-12-01', n)", False), ("date_add(DATE'1998-12-01', 1.5)", False),
    ("add_months(x, 1)", False), ("make_date(1995, 1, 2)", False),
])
def test_constant_dates(text: str, constant: bool) -> None:
    from varlake.spark.reading.date_texts import _constant_date

    assert _constant_date(sqlglot.parse_one(text, dialect=SparkSQL)) is constant
