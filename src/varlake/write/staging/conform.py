"""Checks on what a write declares, the same for every engine: partition columns, whether
two schemas have the same shape, and whether data fits a table's NOT NULLs."""

from __future__ import annotations

from collections.abc import Sequence

from varlake.delta.schema import ArrayType, DataType, MapType, PrimitiveType, StructType, VariantType, top_level_types
from varlake.semantics import partition_values

__all__ = ["check_partition_columns", "fits_nullability", "partition_types", "same_shape"]


def partition_types(schema: StructType, columns: Sequence[str]) -> dict[str, str]:
    """Delta type name of each partition column (checked first: see ``check_partition_columns``)."""
    return {c: schema.field(c).type.name for c in columns}  # type: ignore[union-attr]


def check_partition_columns(schema: StructType, columns: Sequence[str], where: str) -> None:
    """``PartitionValueError`` unless ``columns`` are distinct top-level primitive columns of
    ``schema`` (binary included; Variant, struct, array, map and void are refused)."""
    partition_values.check_partition_columns(columns, top_level_types(schema), where)


def same_shape(a: DataType, b: DataType) -> bool:
    """Whether two types are equal up to nullability and field metadata."""
    if isinstance(a, StructType) and isinstance(b, StructType):
        return len(a.fields) == len(b.fields) and all(
            fa.name == fb.name and same_shape(fa.type, fb.type) for fa, fb in zip(a.fields, b.fields)
        )
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return same_shape(a.element_type, b.element_type)
    if isinstance(a, MapType) and isinstance(b, MapType):
        return same_shape(a.key_type, b.key_type) and same_shape(a.value_type, b.value_type)
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
