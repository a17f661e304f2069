"""Checks on what a write declares, the same for every engine: partition columns, whether
two schemas have the same shape, and whether data fits a table's NOT NULLs."""

from __future__ import annotations

from collections.abc import Sequence

from varlake.delta.schema import (
    ArrayType,
    DataType,
    DeltaTypePartner,
    MapType,
    PrimitiveType,
    SchemaWithPartnerVisitor,
    StructField,
    StructType,
    VariantType,
    top_level_types,
    visit_with_partner,
)
from varlake.semantics import partition_values

__all__ = ["check_partition_columns", "fits_nullability", "partition_types", "same_shape"]


def partition_types(schema: StructType, columns: Sequence[str]) -> dict[str, str]:
    """Delta type name of each partition column (checked first: see ``check_partition_columns``)."""
    return {c: schema.field(c).type.name for c in columns}  # type: ignore[union-attr]


def check_partition_columns(schema: StructType, columns: Sequence[str], where: str) -> None:
    """``PartitionValueError`` unless ``columns`` are distinct top-level primitive columns of
    ``schema`` (binary included; Variant, struct, array, map and void are refused)."""
    partition_values.check_partition_columns(columns, top_level_types(schema), where)


class _SameShape(SchemaWithPartnerVisitor[DataType, bool]):
    def struct(self, struct: StructType, partner: DataType | None, field_results: list[bool]) -> bool:
        return isinstance(partner, StructType) and len(struct.fields) == len(partner.fields) and all(field_results)

    def field(self, field: StructField, partner: StructField | None, type_result: bool) -> bool:  # type: ignore[override]
        return partner is not None and field.name == partner.name and type_result

    def array(self, array: ArrayType, partner: DataType | None, element_result: bool) -> bool:
        return isinstance(partner, ArrayType) and element_result

    def map(self, map_type: MapType, partner: DataType | None, key_result: bool, value_result: bool) -> bool:
        return isinstance(partner, MapType) and key_result and value_result

    def primitive(self, primitive: PrimitiveType, partner: DataType | None) -> bool:
        return primitive == partner

    def variant(self, variant: VariantType, partner: DataType | None) -> bool:
        return variant == partner


def same_shape(a: DataType, b: DataType) -> bool:
    """Whether two types are equal up to nullability and field metadata."""
    return visit_with_partner(a, b, _SameShape(), DeltaTypePartner())


class _FitsNullability(SchemaWithPartnerVisitor[DataType, bool]):
    """Visits the data's type, the table's as partner; where the shapes part, anything fits."""

    def struct(self, struct: StructType, partner: DataType | None, field_results: list[bool]) -> bool:
        return not isinstance(partner, StructType) or all(field_results)

    def field(self, field: StructField, partner: StructField | None, type_result: bool) -> bool:  # type: ignore[override]
        return partner is None or (field.nullable <= partner.nullable and type_result)

    def array(self, array: ArrayType, partner: DataType | None, element_result: bool) -> bool:
        return not isinstance(partner, ArrayType) or (array.contains_null <= partner.contains_null and element_result)

    def map(self, map_type: MapType, partner: DataType | None, key_result: bool, value_result: bool) -> bool:
        if not isinstance(partner, MapType):
            return True
        return map_type.value_contains_null <= partner.value_contains_null and value_result

    def primitive(self, primitive: PrimitiveType, partner: DataType | None) -> bool:
        return True

    def variant(self, variant: VariantType, partner: DataType | None) -> bool:
        return True


def fits_nullability(data: DataType, table: DataType) -> bool:
    """Whether values of type ``data`` respect every NOT NULL of the (same-shaped) ``table`` type."""
    return visit_with_partner(data, table, _FitsNullability(), DeltaTypePartner())
