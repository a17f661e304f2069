"""Spark ``StructType`` <-> varlake's Delta ``StructType`` (Variant included).

Spark's schema JSON and Delta's ``schemaString`` are the same format (PROTOCOL.md
"Schema Serialization Format"; Spark 4 writes ``"variant"`` for VariantType), so the
conversion goes through JSON and the Delta parser validates it: a Spark type Delta
cannot hold (intervals, collated strings, TIME) fails with ``SchemaParseError``
naming the column.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from varlake.delta.schema import (
    ArrayType,
    DataType,
    MapType,
    SchemaRebuilder,
    StructField,
    StructType,
    parse_schema,
    visit,
)
from varlake.errors import SchemaParseError, ShreddingSchemaError
from varlake.semantics.types import DELTA_NAMES, SparkType, parse_ddl
from varlake.write.staging.conform import fits_nullability, same_shape as same_type  # the rules live in varlake.write


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


class _Nullable(SchemaRebuilder):
    def field(self, field: StructField, type_result: Any) -> Any:
        return StructField(field.name, type_result, True, field.metadata)

    def array(self, array: ArrayType, element_result: Any) -> Any:
        return ArrayType(element_result, True)

    def map(self, map_type: MapType, key_result: Any, value_result: Any) -> Any:
        return MapType(key_result, value_result, True)


def as_nullable(dtype: DataType) -> DataType:
    """``dtype`` with every field, element and map value nullable (as Delta creates tables
    from a DataFrame: a later batch may hold NULLs where the first did not)."""
    return visit(dtype, _Nullable())


def nullable_schema(schema: StructType) -> StructType:
    """``as_nullable`` for a whole table schema."""
    return StructType(tuple(StructField(f.name, as_nullable(f.type), True, f.metadata) for f in schema.fields))


__all__ = [
    "WRITE_SHREDDING_KEY",
    "holds_variant",
    "shredded_struct_json",
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



# --- Spark's shredded struct for a shredding DDL ----------------------------------------------------------

#: Field metadata key with which Spark's Parquet writer recognises a Variant's shredded struct
#: (``SparkShreddingUtils.addWriteShreddingMetadata``), on the top-level group's fields.
WRITE_SHREDDING_KEY = "__VARIANT_WRITE_SHREDDING_KEY"
_SHREDDABLE = frozenset(DELTA_NAMES) - {"char", "varchar"} | {"decimal"}


def _field(name: str, dtype: Any, nullable: bool, metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "type": dtype, "nullable": nullable, "metadata": dict(metadata or {})}


def _group(t: SparkType, ddl: str, top: bool, object_field: bool = False) -> dict[str, Any]:
    """A shredded group (VariantShredding.md): ``value`` and, unless the type is Variant,
    ``typed_value`` -- objects as a struct of non-null field groups, arrays of non-null
    element groups, leaves as the Spark type; the top level adds ``metadata`` first. A
    Variant-typed group's ``value`` may be null only in an object field (the field missing)."""
    if t.name == "struct":
        typed: Any = {"type": "struct", "fields": [_field(f.name, _group(f.type, ddl, False, True), False) for f in t.fields]}
    elif t.name == "array":
        assert t.element is not None
        typed = {"type": "array", "elementType": _group(t.element, ddl, False), "containsNull": False}
    elif t.name == "decimal":
        typed = f"decimal({t.precision},{t.scale})"
    elif t.name in _SHREDDABLE and t.name != "variant":
        typed = DELTA_NAMES[t.name]
    elif t.name != "variant":
        raise ShreddingSchemaError(f"type {t.simple} cannot be shredded by Spark, in DDL {ddl!r}")
    mark = {WRITE_SHREDDING_KEY: None} if top else None
    fields = [_field("value", "binary", t.name != "variant" or object_field, mark)]
    if t.name != "variant":
        fields.append(_field("typed_value", typed, True, mark))
    if top:
        fields.insert(0, _field("metadata", "binary", False, mark))
    return {"type": "struct", "fields": fields}


def shredded_struct_json(ddl: str) -> dict[str, Any]:
    """The Spark type (as schema JSON) Spark 4.3's Parquet writer shreds a Variant column into
    for a shredding DDL (``a bigint, b struct<c: string>``, ``array<int>``, ``bigint``):
    what ``SparkShreddingUtils.variantShreddingSchema`` with ``addWriteShreddingMetadata``
    builds, here from the shredding spec without a JVM (so on Spark Connect too)."""
    try:
        parsed = parse_ddl(ddl)
    except Exception as exc:  # InvalidTypeStringError: name the DDL
        raise ShreddingSchemaError(f"shredding DDL {ddl!r}: {exc}") from None
    return _group(parsed, ddl, True)
