"""Binding: column resolution, Spark literal coercion, and the NOT-free normal form."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from varlake.errors import ExpressionError, ExpressionTypeError, UnknownColumnError
from varlake.expr import (
    AlwaysFalse,
    AlwaysTrue,
    Cast,
    Column,
    Comparison,
    IsNotNull,
    IsNull,
    Literal,
    NotIn,
    Or,
    bind,
    col,
    flatten_delta_schema,
    normalize,
    parse_predicate,
    referenced_columns,
    rewrite_not,
    vget,
)

UTC = dt.timezone.utc
SCHEMA_JSON = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "Name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "ntz", "type": "timestamp_ntz", "nullable": True, "metadata": {}},
        {"name": "d", "type": "date", "nullable": True, "metadata": {}},
        {"name": "amount", "type": "decimal(10,2)", "nullable": True, "metadata": {}},
        {"name": "ok", "type": "boolean", "nullable": True, "metadata": {}},
        {"name": "v", "type": "variant", "nullable": True, "metadata": {}},
        {"name": "tags", "type": {"type": "array", "elementType": "string", "containsNull": True}, "nullable": True,
         "metadata": {}},
        {"name": "s", "type": {"type": "struct", "fields": [
            {"name": "x", "type": "integer", "nullable": True, "metadata": {}},
            {"name": "inner", "type": {"type": "struct", "fields": [
                {"name": "y", "type": "double", "nullable": True, "metadata": {}}]}, "nullable": True, "metadata": {}},
        ]}, "nullable": True, "metadata": {}},
    ],
}
SCHEMA = flatten_delta_schema(SCHEMA_JSON)


def b(text: str, **kwargs):
    return bind(parse_predicate(text), SCHEMA, **kwargs)


def test_flatten_delta_schema():
    assert SCHEMA[("s", "inner", "y")] == "double"
    assert SCHEMA[("s",)] == "struct"
    assert SCHEMA[("tags",)] == "array"
    assert SCHEMA[("amount",)] == "decimal(10,2)"


def test_columns_resolve_case_insensitively_to_schema_names():
    pred = b("NAME = 'x' AND S.X > 1 AND s.Inner.Y < 2")
    names = {c.path: c.dtype for c in referenced_columns(pred)}
    assert names == {("Name",): "string", ("s", "x"): "integer", ("s", "inner", "y"): "double"}


def test_case_sensitive_binding_and_unknown_columns():
    with pytest.raises(UnknownColumnError, match="name"):
        b("name = 'x'", case_sensitive=True)
    with pytest.raises(UnknownColumnError, match="nope"):
        b("nope = 1")
    with pytest.raises(UnknownColumnError, match="ambiguous"):
        bind(parse_predicate("a = 1"), {("a",): "long", ("A",): "long"})


def test_string_literal_coerced_to_timestamp_date_and_numbers():
    assert b("ts >= '2024-01-01'").right == Literal(dt.datetime(2024, 1, 1, tzinfo=UTC), "timestamp")
    assert b("ts >= '2024-01-01 10:30:00.123456'").right.value == dt.datetime(2024, 1, 1, 10, 30, 0, 123456, UTC)
    assert b("ts >= '2024-01-01T10:00:00Z'").right.value == dt.datetime(2024, 1, 1, 10, tzinfo=UTC)
    assert b("d = '2024-02-03'").right == Literal(dt.date(2024, 2, 3), "date")
    assert b("ntz < '2024-01-01 05:00'").right == Literal(dt.datetime(2024, 1, 1, 5), "timestamp_ntz")
    assert b("id = '42'").right == Literal(42, "long")
    assert b("amount > '1.005'").right == Literal(Decimal("1.01"), "decimal(10,2)")
    assert b("ok = 'true'").right == Literal(True, "boolean")
    assert b("v:a::date = '2024-01-01'").right == Literal(dt.date(2024, 1, 1), "date")


def test_session_time_zone_applies_to_zone_less_timestamps():
    pred = b("ts >= '2024-01-01 00:00:00'", session_tz="America/New_York")
    assert pred.right.value == dt.datetime(2024, 1, 1, 5, tzinfo=UTC)
    pred = b("ts >= TIMESTAMP '2024-01-01 00:00:00'", session_tz="+02:00")
    assert pred.right.value == dt.datetime(2023, 12, 31, 22, tzinfo=UTC)


def test_literal_on_the_left_is_flipped():
    assert b("5 < id") == Comparison(">", Column(("id",), "long"), Literal(5, "integer"))


def test_numeric_literals_keep_their_exact_value():
    assert b("id > 1.5").right == Literal(Decimal("1.5"), "decimal(2,1)")
    assert b("v:a::bigint > 2.5e0").right == Literal(2.5, "double")


def test_implicit_casts_spark_would_insert():
    pred = b("Name = 5")
    assert pred.left == Cast(Column(("Name",), "string"), "long")
    pred = b("d < TIMESTAMP '2024-01-01 00:00:00Z'")
    assert pred.left == Cast(Column(("d",), "date"), "timestamp")
    pred = b("ts > d")
    assert pred.right == Cast(Column(("d",), "date"), "timestamp")


def test_variant_needs_a_cast_before_comparing():
    with pytest.raises(ExpressionTypeError, match="cast it"):
        b("v:a = 5")
    with pytest.raises(ExpressionTypeError, match="variant"):
        b("v > 1")
    assert b("v:a IS NULL") == IsNull(vget(Column(("v",), "variant"), "$.a"))


def test_bad_literals_and_type_mismatches_raise():
    with pytest.raises(ExpressionTypeError, match="'abc'"):
        b("id = 'abc'")
    with pytest.raises(ExpressionTypeError):
        b("ts = 5")
    with pytest.raises(ExpressionTypeError):
        b("ok = 1")
    with pytest.raises(ExpressionTypeError):
        b("tags = 1")
    with pytest.raises(ExpressionTypeError, match="not variant"):
        b("id:a::int = 1")
    with pytest.raises(ExpressionTypeError):
        b("ts > '2024-13-45'")
    with pytest.raises(ExpressionTypeError):
        bind(parse_predicate("id = 1"), SCHEMA, session_tz="Not/AZone")


def test_evaluators_refuse_unbound_trees():
    from varlake.expr import RowEvaluator, SkippingEvaluator

    with pytest.raises(ExpressionError, match="bind"):
        SkippingEvaluator(col("id") > 1)
    with pytest.raises(ExpressionError, match="bind"):
        RowEvaluator(col("id") > 1)


def test_rewrite_not_uses_exact_three_valued_negation():
    assert rewrite_not(b("NOT (id > 5)")) == b("id <= 5")
    assert rewrite_not(b("NOT (id > 5 AND Name = 'x')")) == b("id <= 5 OR Name <> 'x'")
    assert rewrite_not(b("NOT NOT (id IS NULL)")) == b("id IS NULL")
    assert rewrite_not(b("NOT (id IN (1, 2))")) == NotIn(Column(("id",), "long"), (Literal(1, "integer"), Literal(2, "integer")))
    # NOT (a <=> 1) is TRUE for NULL a, which "a <> 1" alone is not
    assert rewrite_not(b("NOT (id <=> 1)")) == Or(IsNull(Column(("id",), "long")), b("id <> 1"))
    assert rewrite_not(b("id IS DISTINCT FROM NULL")) == IsNotNull(Column(("id",), "long"))


def test_normalize_folds_null_comparisons_only_after_not_is_gone():
    # id = NULL is NULL, and so is NOT (id = NULL): neither keeps a row
    assert normalize(b("id = NULL")) == AlwaysFalse()
    assert normalize(b("NOT (id = NULL)")) == AlwaysFalse()
    assert normalize(b("id NOT IN (1, NULL)")) == AlwaysFalse()
    assert normalize(b("NOT (id NOT IN (1, NULL))")) == normalize(b("id IN (1)"))
    assert normalize(b("id <=> NULL")) == IsNull(Column(("id",), "long"))
    assert normalize(b("1 = 1 OR id > 3")) == AlwaysTrue()
    assert normalize(b("NOT (1 = 1) AND id > 3")) == AlwaysFalse()
    assert normalize(b("NULL")) == AlwaysFalse()
    assert normalize(b("NOT NULL")) == AlwaysFalse()
    assert normalize(b("id IN (NULL, 3)")) == normalize(b("id IN (3)"))
