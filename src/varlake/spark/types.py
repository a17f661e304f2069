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
    PrimitiveType,
    StructField,
    StructType,
    VariantType,
    parse_schema,
)
from varlake.errors import SchemaParseError


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


def same_type(a: DataType, b: DataType) -> bool:
    """Whether two types are equal up to nullability and field metadata."""
    if isinstance(a, StructType) and isinstance(b, StructType):
        return len(a.fields) == len(b.fields) and all(
            fa.name == fb.name and same_type(fa.type, fb.type) for fa, fb in zip(a.fields, b.fields)
        )
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return same_type(a.element_type, b.element_type)
    if isinstance(a, MapType) and isinstance(b, MapType):
        return same_type(a.key_type, b.key_type) and same_type(a.value_type, b.value_type)
    if isinstance(a, (PrimitiveType, VariantType)):
        return a == b
    return False


def fits_nullability(data: DataType, table: DataType) -> bool:
    """Whether values of type ``data`` respect every NOT NULL of the (same-shaped) ``table`` type."""
    if isinstance(data, StructType) and isinstance(table, StructType):
        return all(
            (fd.nullable <= ft.nullable) and fits_nullability(fd.type, ft.type) for fd, ft in zip(data.fields, table.fields)
        )
    if isinstance(data, ArrayType) and isinstance(table, ArrayType):
        return data.contains_null <= table.contains_null and fits_nullability(data.element_type, table.element_type)
    if isinstance(data, MapType) and isinstance(table, MapType):
        return data.value_contains_null <= table.value_contains_null and fits_nullability(data.value_type, table.value_type)
    return True


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


def variant_leaves(schema: StructType, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Paths of the Variant columns reachable through structs only (the ones with a
    stored shredding schema)."""
    out: list[tuple[str, ...]] = []
    for f in schema.fields:
        path = (*prefix, f.name)
        if isinstance(f.type, VariantType):
            out.append(path)
        elif isinstance(f.type, StructType):
            out.extend(variant_leaves(f.type, path))
    return out


__all__ = [
    "as_nullable",
    "fits_nullability",
    "nullable_schema",
    "same_type",
    "to_delta_schema",
    "to_spark_schema",
    "to_spark_type",
    "variant_leaves",
]
