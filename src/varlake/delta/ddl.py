"""Table schemas from Spark DDL text or Arrow schemas.

``"id bigint, v variant, s struct<a: int>"`` becomes a Delta ``StructType``; the text is
parsed by ``varlake.semantics.types`` (Spark's type grammar, shared with the shredding DDL
and ``variant_get``). Arrow has no Variant type, so in an Arrow schema a struct of exactly
``metadata`` and ``value`` binaries is taken as a Variant column (the unshredded Arrow
form varlake reads and writes).
"""

from __future__ import annotations

import pyarrow as pa

from varlake.delta.schema import (
    ArrayType,
    DataType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    VariantType,
    from_arrow_type,
)
from varlake.errors import InvalidTypeStringError, SchemaParseError
from varlake.shred.arrow_extension import is_variant_extension
from varlake.semantics.types import DELTA_NAMES, Field, SparkType, parse_columns


def _convert(t: SparkType, where: str) -> DataType:
    if t.name == "variant":
        return VariantType()
    if t.name == "decimal":
        return PrimitiveType(f"decimal({t.precision},{t.scale})")
    if t.name == "array":
        return ArrayType(_convert(t.element, where))  # type: ignore[arg-type]
    if t.name == "map":
        return MapType(_convert(t.key, where), _convert(t.element, where))  # type: ignore[arg-type]
    if t.name == "struct":
        return StructType(tuple(_field(f, where) for f in t.fields))
    name = DELTA_NAMES.get(t.name)
    if name is None:
        raise SchemaParseError(f"type {t.simple} cannot be a Delta column type in schema {where!r}")
    return PrimitiveType(name)


def _field(f: Field, where: str) -> StructField:
    return StructField(f.name, _convert(f.type, where), nullable=f.nullable)


def parse_ddl(text: str) -> StructType:
    """A table schema from Spark DDL column definitions (``"id bigint, v variant"``)."""
    try:
        columns = parse_columns(text)
    except InvalidTypeStringError as exc:
        raise SchemaParseError(f"cannot parse schema {text!r}: {exc}") from None
    return StructType(tuple(_field(c, text) for c in columns))


def is_variant_arrow_type(t: pa.DataType) -> bool:
    """A struct of exactly ``metadata`` and ``value`` binaries, or the ``arrow.parquet.variant``
    extension type: the Arrow forms of a Variant."""
    if is_variant_extension(t):
        return True
    return (
        pa.types.is_struct(t)
        and t.num_fields == 2
        and {t.field(i).name for i in range(2)} == {"metadata", "value"}
        and all(pa.types.is_binary(t.field(i).type) or pa.types.is_large_binary(t.field(i).type) for i in range(2))
    )


def _from_arrow(t: pa.DataType) -> DataType:
    if is_variant_arrow_type(t):
        return VariantType()
    if pa.types.is_struct(t):
        return StructType(tuple(StructField(f.name, _from_arrow(f.type), f.nullable) for f in t))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return ArrayType(_from_arrow(t.value_type), t.value_field.nullable)
    if pa.types.is_map(t):
        return MapType(_from_arrow(t.key_type), _from_arrow(t.item_type), t.item_field.nullable)
    return from_arrow_type(t)


def schema_from_arrow(schema: pa.Schema) -> StructType:
    """A Delta schema for an Arrow schema, Variant structs recognised."""
    return StructType(tuple(StructField(f.name, _from_arrow(f.type), f.nullable) for f in schema))


def as_struct_type(schema: "StructType | pa.Schema | str") -> StructType:
    """Accept a StructType, an Arrow schema or DDL text."""
    if isinstance(schema, StructType):
        return schema
    if isinstance(schema, pa.Schema):
        return schema_from_arrow(schema)
    if isinstance(schema, str):
        return parse_ddl(schema)
    raise SchemaParseError(f"a schema must be DDL text, an Arrow schema or a StructType, not {type(schema).__name__}")
