"""Table schemas from Spark DDL text (parsed with sqlglot) or Arrow schemas.

``"id bigint, v variant, s struct<a: int>"`` becomes a Delta ``StructType``. Arrow
has no Variant type, so in an Arrow schema a struct of exactly ``metadata`` and
``value`` binaries is taken as a Variant column (the unshredded Arrow form varlake
reads and writes).
"""

from __future__ import annotations

import pyarrow as pa
import sqlglot
from sqlglot import exp

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
from varlake.errors import SchemaParseError

_SIMPLE = {
    "BIGINT": "long", "INT": "integer", "SMALLINT": "short", "TINYINT": "byte", "FLOAT": "float",
    "DOUBLE": "double", "BOOLEAN": "boolean", "BINARY": "binary", "VARBINARY": "binary", "DATE": "date",
    "TEXT": "string", "VARCHAR": "string", "CHAR": "string", "NCHAR": "string", "NVARCHAR": "string",
    "TIMESTAMP": "timestamp", "TIMESTAMPLTZ": "timestamp", "TIMESTAMPTZ": "timestamp",
    "TIMESTAMPNTZ": "timestamp_ntz", "DATETIME": "timestamp_ntz",
}


def _convert(dt: exp.DataType, where: str) -> DataType:
    name = dt.this.name if hasattr(dt.this, "name") else str(dt.this)
    if name == "VARIANT":
        return VariantType()
    if name in _SIMPLE:
        return PrimitiveType(_SIMPLE[name])
    if name == "DECIMAL":
        params = [int(p.this.this) if isinstance(p.this, exp.Literal) else int(p.name) for p in dt.expressions]
        precision, scale = (params + [10, 0])[:2] if params else (10, 0)
        if len(params) == 1:
            scale = 0
        return PrimitiveType(f"decimal({precision},{scale})")
    if name == "ARRAY":
        return ArrayType(_convert(dt.expressions[0], where))
    if name == "MAP":
        return MapType(_convert(dt.expressions[0], where), _convert(dt.expressions[1], where))
    if name == "STRUCT":
        fields = []
        for col in dt.expressions:
            kind = col.args.get("kind")
            if kind is None:
                raise SchemaParseError(f"struct field {col.sql()!r} has no type in {where!r}")
            fields.append(StructField(col.name, _convert(kind, where)))
        return StructType(tuple(fields))
    raise SchemaParseError(f"unsupported type {dt.sql('spark')!r} in schema {where!r}")


def parse_ddl(text: str) -> StructType:
    """A table schema from Spark DDL column definitions (``"id bigint, v variant"``)."""
    try:
        tree = sqlglot.parse_one(f"CREATE TABLE t ({text})", read="spark")
    except sqlglot.errors.ParseError as exc:
        raise SchemaParseError(f"cannot parse schema {text!r}: {exc}") from None
    columns = list(tree.find_all(exp.ColumnDef))
    top = [c for c in columns if isinstance(c.parent, exp.Schema)]
    if not top:
        raise SchemaParseError(f"schema {text!r} defines no columns")
    fields = []
    for col in top:
        kind = col.args.get("kind")
        if kind is None:
            raise SchemaParseError(f"column {col.name!r} has no type in {text!r}")
        not_null = any(isinstance(c.kind, exp.NotNullColumnConstraint) for c in col.constraints)
        fields.append(StructField(col.name, _convert(kind, text), nullable=not not_null))
    return StructType(tuple(fields))


def is_variant_arrow_type(t: pa.DataType) -> bool:
    """A struct of exactly ``metadata`` and ``value`` binaries: the Arrow form of a Variant."""
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
