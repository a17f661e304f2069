"""Spark ``StructType`` <-> varlake's Delta ``StructType`` (Variant included).

Spark's schema JSON and Delta's ``schemaString`` are the same format (PROTOCOL.md
"Schema Serialization Format"; Spark 4 writes ``"variant"`` for VariantType), so the
conversion goes through JSON and the Delta parser validates it: a Spark type Delta
cannot hold (intervals, collated strings, TIME) fails with ``SchemaParseError``
naming the column.
"""

from __future__ import annotations

import json
from typing import Any

from varlake.delta.schema import (
    ArrayType,
    DataType,
    MapType,
    StructField,
    StructType,
    parse_schema,
)
from varlake.errors import SchemaParseError
from varlake.write.conform import fits_nullability, same_shape as same_type  # the rules live in varlake.write


def to_delta_schema(spark_schema: Any) -> StructType:
    """The Delta schema of a Spark ``StructType``."""
    try:
        return parse_schema(json.dumps(spark_schema.jsonValue()), "Spark schema")
    except SchemaParseError as exc:
        raise SchemaParseError(f"the DataFrame schema {spark_schema.simpleString()} cannot be a Delta table schema: {exc}") from None


def to_spark_schema(schema: StructType) -> Any:
    """The Spark ``StructType`` of a Delta schema."""
    from pyspark.sql.types import StructType as SparkStruct

    return SparkStruct.fromJson(schema.to_json())


def to_spark_type(dtype: DataType) -> Any:
    """The Spark ``DataType`` of one Delta type."""
    from pyspark.sql.types import StructType as SparkStruct

    wrapped = {"type": "struct", "fields": [{"name": "x", "type": dtype.to_json(), "nullable": True, "metadata": {}}]}
    return SparkStruct.fromJson(wrapped).fields[0].dataType


def as_nullable(dtype: DataType) -> DataType:
    """``dtype`` with every field, element and map value nullable (as Delta creates tables
    from a DataFrame: a later batch may hold NULLs where the first did not)."""
    if isinstance(dtype, StructType):
        return StructType(tuple(StructField(f.name, as_nullable(f.type), True, f.metadata) for f in dtype.fields))
    if isinstance(dtype, ArrayType):
        return ArrayType(as_nullable(dtype.element_type), True)
    if isinstance(dtype, MapType):
        return MapType(as_nullable(dtype.key_type), as_nullable(dtype.value_type), True)
    return dtype


def nullable_schema(schema: StructType) -> StructType:
    """``as_nullable`` for a whole table schema."""
    return StructType(tuple(StructField(f.name, as_nullable(f.type), True, f.metadata) for f in schema.fields))


__all__ = [
    "holds_variant",
    "as_nullable",
    "fits_nullability",
    "nullable_schema",
    "same_type",
    "to_delta_schema",
    "to_spark_schema",
    "to_spark_type",
]


def holds_variant(dtype: Any) -> bool:
    """Whether a Spark type is or holds a Variant."""
    from pyspark.sql.types import ArrayType, MapType, StructType, VariantType

    if isinstance(dtype, VariantType):
        return True
    if isinstance(dtype, StructType):
        return any(holds_variant(f.dataType) for f in dtype.fields)
    if isinstance(dtype, ArrayType):
        return holds_variant(dtype.elementType)
    if isinstance(dtype, MapType):
        return holds_variant(dtype.keyType) or holds_variant(dtype.valueType)
    return False

