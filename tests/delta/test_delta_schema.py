"""Delta schema strings: parsing, serialising, Variant anywhere, Arrow conversion, bad input."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from varlake.delta.schema import (
    ArrayType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    VariantType,
    contains_variant,
    from_arrow_schema,
    parse_schema,
    to_arrow_schema,
    to_arrow_type,
)
from varlake.errors import SchemaParseError

VARIANT_ARROW = pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)])

primitive = st.sampled_from(
    [
        "string",
        "long",
        "integer",
        "short",
        "byte",
        "float",
        "double",
        "boolean",
        "binary",
        "date",
        "timestamp",
        "timestamp_ntz",
        "decimal(10,2)",
    ]
).map(PrimitiveType)
names = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=6)


def _struct(children: st.SearchStrategy) -> st.SearchStrategy:
    fields = st.lists(
        st.builds(StructField, name=names, type=children, nullable=st.booleans(), metadata=st.just({})),
        max_size=4,
        unique_by=lambda f: f.name,
    )
    return fields.map(lambda fs: StructType(tuple(fs)))


types = st.recursive(
    st.one_of(primitive, st.just(VariantType())),
    lambda inner: st.one_of(
        _struct(inner),
        st.builds(ArrayType, inner, st.booleans()),
        st.builds(MapType, primitive, inner, st.booleans()),
    ),
    max_leaves=12,
)


@given(_struct(types))
def test_schema_string_round_trip(schema: StructType) -> None:
    assert parse_schema(schema.to_schema_string()) == schema
    to_arrow_schema(schema)  # every parsed type has an Arrow type


def test_variant_anywhere_and_arrow_physical_type() -> None:
    text = json.dumps(
        {
            "type": "struct",
            "fields": [
                {"name": "i", "type": "integer", "nullable": True, "metadata": {}},
                {"name": "v", "type": "variant", "nullable": True, "metadata": {}},
                {
                    "name": "nv",
                    "type": {
                        "type": "struct",
                        "fields": [{"name": "v", "type": "variant", "nullable": True, "metadata": {}}],
                    },
                    "nullable": True,
                    "metadata": {},
                },
                {
                    "name": "av",
                    "type": {"type": "array", "elementType": {"type": "variant"}, "containsNull": False},
                    "nullable": False,
                    "metadata": {},
                },
                {
                    "name": "mv",
                    "type": {"type": "map", "keyType": "string", "valueType": "variant", "valueContainsNull": True},
                    "nullable": True,
                    "metadata": {},
                },
            ],
        }
    )
    schema = parse_schema(text)
    assert schema.field("v").type == VariantType()
    assert schema.field("av").type == ArrayType(VariantType(), False)
    assert all(contains_variant(f.type) for f in schema.fields[1:]) and not contains_variant(schema.field("i").type)
    arrow = to_arrow_schema(schema)
    assert arrow.field("i").type == pa.int32()
    assert arrow.field("v").type == VARIANT_ARROW
    assert arrow.field("nv").type == pa.struct([pa.field("v", VARIANT_ARROW)])
    assert arrow.field("av").type.value_type == VARIANT_ARROW and not arrow.field("av").nullable
    assert arrow.field("mv").type.item_type == VARIANT_ARROW
    assert parse_schema(schema.to_schema_string()) == schema


def test_primitive_arrow_types() -> None:
    assert to_arrow_type(PrimitiveType("timestamp")) == pa.timestamp("us", tz="UTC")
    assert to_arrow_type(PrimitiveType("timestamp_ntz")) == pa.timestamp("us")
    assert parse_schema(
        '{"type":"struct","fields":[{"name":"d","type":"decimal(10, 4)","nullable":true,"metadata":{}}]}'
    ).field("d").type == PrimitiveType("decimal(10,4)")
    arrow = pa.schema([("a", pa.int64()), ("b", pa.list_(pa.string())), ("c", pa.map_(pa.string(), pa.float64()))])
    back = to_arrow_schema(from_arrow_schema(arrow))
    assert back.names == ["a", "b", "c"]
    assert back.field("b").type.value_type == pa.string() and back.field("c").type.item_type == pa.float64()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ('"integer"', "must be a struct"),
        ('{"type":"struct"}', "needs a 'fields' list"),
        (
            '{"type":"struct","fields":[{"type":"integer"}]}',
            r"fields\[0\]: a struct field needs a non-empty string 'name'",
        ),
        ('{"type":"struct","fields":[{"name":"a"}]}', r"fields\[0\] \('a'\): a struct field needs a 'type'"),
        ('{"type":"struct","fields":[{"name":"a","type":"int128"}]}', r"fields\[0\].type: unknown type 'int128'"),
        ('{"type":"struct","fields":[{"name":"a","type":{"type":"array"}}]}', "array needs 'elementType'"),
        (
            '{"type":"struct","fields":[{"name":"a","type":{"type":"map","keyType":"string"}}]}',
            "map needs 'keyType' and 'valueType'",
        ),
        ('{"type":"struct","fields":[{"name":"a","type":"decimal(50,2)"}]}', "invalid decimal"),
        (
            '{"type":"struct","fields":[{"name":"a","type":"long"},{"name":"A","type":"long"}]}',
            "duplicate column name 'A'",
        ),
        ('{"type":"struct","fields":[{"name":"a","type":"long","nullable":"yes"}]}', "must be true or false"),
        ('{"type":"struct","fields":[{"name":"a","type":{"type":"hyperloglog"}}]}', "unknown type 'hyperloglog'"),
    ],
)
def test_bad_schema_string_raises_schema_parse_error(text: str, message: str) -> None:
    with pytest.raises(SchemaParseError, match=message):
        parse_schema(text, "v.json metaData.schemaString")
