"""Spark type strings: one parser for variant_get targets, shredding DDL, table DDL and the planner."""

from __future__ import annotations

import pytest

from varlake.delta.ddl import parse_ddl as table_ddl
from varlake.errors import InvalidTypeStringError, SchemaParseError, ShreddingSchemaError
from varlake.semantics.types import Field, SparkType, parse_columns, parse_ddl, parse_type, quote_identifier
from varlake.shred.schema import from_ddl
from varlake.variant.cast import TypeParseError
from varlake.variant.cast import parse_type as variant_target


@pytest.mark.parametrize(
    ("text", "simple", "sql"),
    [
        ("bigint", "bigint", "BIGINT"), ("LONG", "bigint", "BIGINT"), ("integer", "int", "INT"), ("Byte", "tinyint", "TINYINT"),
        ("short", "smallint", "SMALLINT"), ("real", "float", "FLOAT"), ("bool", "boolean", "BOOLEAN"),
        ("timestamp_ltz", "timestamp", "TIMESTAMP"), ("TIMESTAMP_NTZ", "timestamp_ntz", "TIMESTAMP_NTZ"),
        ("decimal", "decimal(10,0)", "DECIMAL(10,0)"), ("dec(5)", "decimal(5,0)", "DECIMAL(5,0)"),
        ("NUMERIC( 38 , 38 )", "decimal(38,38)", "DECIMAL(38,38)"), ("varchar(10)", "varchar(10)", "VARCHAR(10)"),
        ("time", "time(6)", "TIME(6)"), ("variant", "variant", "VARIANT"),
        ("array<struct<a:int>>", "array<struct<a:int>>", "ARRAY<STRUCT<a: INT>>"),
        ("map<string, array<double>>", "map<string,array<double>>", "MAP<STRING, ARRAY<DOUBLE>>"),
        ("STRUCT<`a b`: INT NOT NULL COMMENT 'x', c ARRAY<BIGINT>>", "struct<`a b`:int,c:array<bigint>>",
         "STRUCT<`a b`: INT, c: ARRAY<BIGINT>>"),
        ("struct<`we``ird`:string>", "struct<`we``ird`:string>", "STRUCT<`we``ird`: STRING>"),
        ("struct<>", "struct<>", "STRUCT<>"),
    ],
)
def test_parse_and_render(text: str, simple: str, sql: str) -> None:
    t = parse_type(text)
    assert (t.simple, t.sql) == (simple, sql)
    assert parse_type(t.simple).simple == t.simple  # canonical text parses back (NOT NULL and COMMENT dropped)


@pytest.mark.parametrize(
    "text",
    ["", "int,", "decimal(39)", "decimal(5,6)", "char", "array<int", "map<int>", "struct<a int", "foo", "int int",
     "time(7)", "array<>", "struct<a: int,>", "`int`"],
)
def test_bad_type_strings(text: str) -> None:
    with pytest.raises(InvalidTypeStringError) as info:
        parse_type(text)
    assert repr(text) in str(info.value)


def test_columns_keep_nullability_and_comments() -> None:
    cols = parse_columns("id BIGINT NOT NULL COMMENT 'the key', `v a` variant, s struct<x: int NOT NULL>")
    assert cols[0] == Field("id", SparkType("bigint"), False, "the key")
    assert cols[1].name == "v a" and cols[2].type.fields[0].nullable is False
    assert parse_ddl("a int, b string").fields == parse_columns("a int, b string")
    assert parse_ddl("uuid", extra=["uuid"]) == SparkType("uuid")
    with pytest.raises(InvalidTypeStringError):
        parse_ddl("uuid")


def test_quoting() -> None:
    assert quote_identifier("a_1") == "a_1" and quote_identifier("1a") == "`1a`"
    assert quote_identifier("a b") == "`a b`" and quote_identifier("x`y") == "`x``y`" and quote_identifier("") == "``"


def test_every_consumer_uses_the_same_grammar() -> None:
    text = "a INTEGER NOT NULL, b DEC(5,2), c ARRAY<STRING>, d STRUCT<e: TIMESTAMP_LTZ>"
    table = table_ddl(text)
    assert [f.type.to_json() if hasattr(f.type, "to_json") else None for f in table.fields][:2] == ["integer", "decimal(5,2)"]
    assert table.fields[0].nullable is False
    shredded = from_ddl(text)
    assert [shredded.field(i).name for i in range(4)] == ["a", "b", "c", "d"]
    assert variant_target("struct<a: INTEGER, b: DEC(5,2)>").sql == "STRUCT<a: INT, b: DECIMAL(5,2)>"
    # each consumer refuses what it cannot hold, with its own named error
    with pytest.raises(TypeParseError):
        variant_target("map<int, string>")
    with pytest.raises(ShreddingSchemaError):
        from_ddl("m map<string, int>")
    with pytest.raises(SchemaParseError):
        table_ddl("t time")
    for bad in ("a decimal(40,1)", "a int,"):
        with pytest.raises(TypeParseError):
            variant_target(bad)
        with pytest.raises(ShreddingSchemaError):
            from_ddl(bad)
        with pytest.raises(SchemaParseError):
            table_ddl(bad)


def test_type_text_nesting_is_bounded_before_recursion() -> None:
    """A hostile type string is refused with a named error, never RecursionError."""
    from varlake.semantics.types import MAX_TYPE_DEPTH

    ok = "array<" * MAX_TYPE_DEPTH + "int" + ">" * MAX_TYPE_DEPTH
    assert parse_type(ok).name == "array"
    for opener in ("array<", "struct<a: ", "map<int, "):
        deep = opener * 5000 + "int" + ">" * 5000
        with pytest.raises(InvalidTypeStringError, match="deeper than"):
            parse_type(deep)
