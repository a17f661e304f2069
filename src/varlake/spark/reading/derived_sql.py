"""Spark SQL text for the columns of a table's view read from shredded files.

A shredded group is read as a plain struct (``ignoreVariantAnnotation``) of just the
``typed_value`` leaves a query needs (``_leaf_schema``); each path use becomes a derived
column computed from its leaf (``derived_column_sql``: the leaf cast as Spark casts its
Variant value, ``leaf_casts.cast_sql``), a struct or array target rebuilt from the
subtree's leaves with ``named_struct`` and ``transform`` (``_rebuild_sql``). Partition
values become typed literals (``partition_sql``), and structs holding used Variants are
read field by field (``shredded_field``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from varlake.delta.schema import ArrayType, DataType, MapType, PrimitiveType, SchemaVisitor, StructField, StructType, visit
from varlake.errors import TableError
from varlake.semantics.types import backquote
from varlake.spark.reading.leaf_casts import cast_sql, elements_sql, failure_sql
from varlake.spark.reading.planner import ISNULL, PathUse, TablePlan, is_nested, target_type
from varlake.spark.types import to_spark_type

__all__ = [
    "derived_column_sql",
    "node_sql",
    "partition_sql",
    "rebuilt",
    "shredded_field",
    "spark_type_sql",
    "target_sql",
]


def _string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _type_sql(name: str) -> str:
    """Spark SQL spelling of a canonical primitive type name (``long`` -> ``bigint``)."""
    return str(to_spark_type(PrimitiveType(name)).simpleString())


class _TypeSQL(SchemaVisitor[str]):
    """Spark SQL spelling of a table type, field names back-quoted."""

    def struct(self, struct: StructType, field_results: list[str]) -> str:
        return "STRUCT<" + ", ".join(field_results) + ">"

    def field(self, field: StructField, type_result: str) -> str:
        return f"{backquote(field.name)}: {type_result}"

    def array(self, array: ArrayType, element_result: str) -> str:
        return f"ARRAY<{element_result}>"

    def map(self, map_type: MapType, key_result: str, value_result: str) -> str:
        return f"MAP<{key_result}, {value_result}>"

    def primitive(self, primitive: PrimitiveType) -> str:
        return _type_sql(primitive.name)

    def variant(self, variant: Any) -> str:
        return "VARIANT"


def spark_type_sql(dtype: DataType) -> str:
    """Spark SQL spelling of any table type (field names back-quoted), e.g. for a CAST that
    renames struct fields by position."""
    return visit(dtype, _TypeSQL())


def node_sql(use: PathUse, column: tuple[str, ...] | None = None) -> str:
    """SQL for the shredded ``value``/``typed_value`` group at a use's path (struct read);
    ``column``: the names the read gives the Variant column (column mapping), if not its own."""
    expr = ".".join(backquote(name) for name in (column or use.column))
    for segment in use.segments:
        expr += ".typed_value"
        expr = f"get({expr}, {segment})" if isinstance(segment, int) else f"{expr}.{backquote(segment)}"
    return expr


def _leaf_sql(use: PathUse, column: tuple[str, ...] | None = None) -> str:
    """SQL for a use's typed leaf inside its struct-read Variant column."""
    return f"{node_sql(use, column)}.typed_value"


def rebuilt(use: PathUse) -> bool:
    """Whether a derived column is a struct or array rebuilt from leaves."""
    return is_nested(use.target) and not use.elements


def _rebuild_sql(node: str, target: DataType, shape: DataType, depth: int = 0, raising: bool = True) -> str:
    """SQL rebuilding Spark's Variant cast to ``target`` from a perfectly shredded group
    read as ``shape`` (``planner.serving``): NULL where the group is (the path
    is missing), struct fields that were not shredded NULL (missing in every object),
    arrays element by element (an array of primitives without a lambda:
    ``leaf_casts.elements_sql``), each leaf cast as Spark casts its Variant value
    (``leaf_casts.cast_sql``: NULL where that fails, or with ``raising`` Spark's error)."""
    typed = f"{node}.typed_value"
    if isinstance(target, StructType) and isinstance(shape, StructType):
        read = {f.name: f.type for f in shape.fields}
        parts = []
        for f in target.fields:
            if f.name in read:
                value = _rebuild_sql(f"{typed}.{backquote(f.name)}", f.type, read[f.name], depth, raising)
            else:
                value = f"CAST(NULL AS {spark_type_sql(f.type)})"
            parts.append(f"{_string(f.name)}, {value}")
        return f"CASE WHEN {typed} IS NULL THEN NULL ELSE named_struct({', '.join(parts)}) END"
    if isinstance(target, ArrayType) and isinstance(shape, ArrayType):
        elements = None if raising else elements_sql(node, target, shape)
        if elements is not None:  # an array of primitives: no lambda
            return elements
        var = f"__vl_e{depth}"
        return f"transform({typed}, {var} -> {_rebuild_sql(var, target.element_type, shape.element_type, depth + 1, raising)})"
    if isinstance(target, PrimitiveType) and isinstance(shape, PrimitiveType):
        return cast_sql(typed, shape.name, target.name, raising)
    raise TableError(f"cannot read {shape!r} as {target!r}: the planner chose a shape that does not fit")


def derived_column_sql(use: PathUse, leaf: str, column: tuple[str, ...] | None = None) -> str:
    """A shredded group's value of a use: its leaf (or rebuilt subtree) as the target type.
    A value is NULL where a string leaf's cast fails (a rebuilt struct or array at that
    leaf), and the use's failure column (``planner.failure_of``) holds the Variant that
    makes the query's site fail there (``leaf_casts``)."""
    if use.target == ISNULL:
        return f"({_leaf_sql(use, column)} IS NULL)"
    if use.elements:  # the array of shredded elements as read (``rewrite.rewritten_tree`` casts their fields)
        return f"{node_sql(use, column)}.typed_value"
    if use.text:  # the string leaf of ISO dates as read (``rewrite.rewritten_tree`` compares it)
        return _leaf_sql(use, column)
    if use.failure:
        return failure_sql(node_sql(use, column), target_type(use.target), target_type(leaf))
    if not is_nested(use.target):
        return cast_sql(_leaf_sql(use, column), leaf, use.target)
    # the outer CAST only fixes nullability flags, so the type is exactly variant_get's
    # never raising: a use that can fail reads its failure column at the site (``leaf_casts``)
    rebuilt = _rebuild_sql(node_sql(use, column), target_type(use.target), target_type(leaf), raising=False)
    return f"CAST({rebuilt} AS {target_sql(use)})"


def _insert_shape(level: dict[str, Any], dtype: DataType) -> None:
    if isinstance(dtype, ArrayType):
        _insert_shape(level.setdefault("element", {}), dtype.element_type)
    elif isinstance(dtype, StructType):
        for f in dtype.fields:
            _insert_shape(level.setdefault("fields", {}).setdefault(f.name, {}), f.type)
    elif isinstance(dtype, PrimitiveType):
        level["leaf"] = dtype.name
    else:
        raise TableError(f"cannot read {dtype!r} as a shredded leaf")


def _leaf_schema(leaves: Mapping[PathUse, str], column: tuple[str, ...]) -> Any:
    """``struct<typed_value: ...>`` holding just the leaves the uses of ``column`` need
    (a struct/array use's whole shape; uses sharing a path share its columns)."""
    from pyspark.sql.types import ArrayType as SparkArray
    from pyspark.sql.types import StructField
    from pyspark.sql.types import StructType as SparkStruct

    tree: dict[str, Any] = {}
    for use, leaf in leaves.items():
        if use.column != column:
            continue
        level = tree
        for segment in use.segments:
            if isinstance(segment, int):
                level = level.setdefault("element", {})
            else:
                level = level.setdefault("fields", {}).setdefault(segment, {})
        _insert_shape(level, target_type(leaf) if is_nested(leaf) else PrimitiveType(leaf))

    def build(level: dict[str, Any]) -> Any:
        if "leaf" in level:
            typed = to_spark_type(PrimitiveType(level["leaf"]))
        elif "element" in level:
            typed = SparkArray(build(level["element"]), True)
        else:
            typed = SparkStruct([StructField(k, build(v), False) for k, v in level["fields"].items()])
        return SparkStruct([StructField("typed_value", typed, True)])

    return build(tree)


def partition_sql(plan: TablePlan, name: str, raw: str | None) -> str:
    """A partition value as a typed literal (``varlake.semantics.partition_values`` reads the
    stored text; Spark casts varlake's own spelling of it, timestamps in UTC with ``Z``)."""
    from varlake.semantics import partition_values

    delta_type = plan.schema.field(name).type
    type_sql = to_spark_type(delta_type).simpleString()
    type_name = delta_type.name if isinstance(delta_type, PrimitiveType) else "string"
    value = partition_values.parse(raw, type_name, "UTC", f"partition column {name!r}")
    if value is None:
        return f"CAST(NULL AS {type_sql})"
    if type_name == "binary":
        return f"X'{value.hex()}'"
    text = partition_values.render(value, type_name, f"partition column {name!r}")
    return f"CAST({_string(text)} AS {type_sql})"


def target_sql(use: PathUse) -> str:
    """Spark SQL spelling of a use's result type."""
    if use.target == ISNULL:
        return "boolean"
    if use.failure:
        return "VARIANT"
    return spark_type_sql(target_type(use.target)) if is_nested(use.target) else _type_sql(use.target)


def shredded_field(
    field: Any, path: tuple[str, ...], leaves: Mapping[PathUse, str], read_path: tuple[str, ...] | None = None, logical: Any = None
) -> tuple[Any | None, str]:
    """For a shredded group: how to read a column (None: not at all) and the SQL giving its value.

    Used Variants become their leaf structs (and NULL in the view); structs holding them are
    rebuilt field by field (NULL where the struct is NULL); anything else is read as declared.
    ``field`` is the field as read, ``path`` its path in the table (what uses name);
    with column mapping ``read_path`` is the path of read names and ``logical`` the
    table's own field (whose struct fields pair with ``field``'s in order).
    """
    from pyspark.sql.types import StructField
    from pyspark.sql.types import StructType as SparkStruct
    from pyspark.sql.types import VariantType as SparkVariant

    read_path = read_path if read_path is not None else path
    logical = logical if logical is not None else field
    ref = ".".join(backquote(p) for p in read_path)
    used = {use.column for use in leaves}
    if path in used:
        return StructField(field.name, _leaf_schema(leaves, path), True, field.metadata), "CAST(NULL AS VARIANT)"
    if isinstance(field.dataType, SparkVariant) and len(path) == 1:
        return None, "CAST(NULL AS VARIANT)"  # not used by the query: not read
    if isinstance(field.dataType, SparkStruct) and any(c[: len(path)] == path for c in used):
        read, parts = [], []
        for sub, sub_logical in zip(field.dataType.fields, logical.dataType.fields):
            sub_read, sub_sql = shredded_field(sub, (*path, sub_logical.name), leaves, (*read_path, sub.name), sub_logical)
            if sub_read is not None:
                read.append(sub_read)
            parts.append(f"{_string(sub.name)}, {sub_sql}")
        value = f"CASE WHEN {ref} IS NULL THEN NULL ELSE named_struct({', '.join(parts)}) END"
        return StructField(field.name, SparkStruct(read), field.nullable, field.metadata), value
    return field, ref
