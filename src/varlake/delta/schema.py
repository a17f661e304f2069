"""Delta table schemas: ``schemaString`` JSON <-> a small type model <-> pyarrow.

The model mirrors PROTOCOL.md "Schema Serialization Format": primitive types,
``struct``, ``array``, ``map`` and ``variant`` -- the latter allowed anywhere a type
may appear. In Arrow (and Parquet) an unshredded Variant is the struct
``<metadata: binary not null, value: binary not null>``.

A schema nests at most ``MAX_NESTING_DEPTH`` Parquet levels; ``schemaString`` JSON nests at
most ``MAX_SCHEMA_JSON_DEPTH``. Both are checked before anything recursive runs (the JSON
by a linear scan, the type tree level by level as it is built), and no type deeper than
the limit can be constructed, so printing, converting or walking a schema never recurses
without bound.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Generic, Iterator, Mapping, TypeVar, Union

import pyarrow as pa

from varlake.delta.json_fields import brief as _brief
from varlake.delta.json_fields import load_json
from varlake.errors import SchemaParseError
from varlake.io.thrift_footer import MAX_SCHEMA_DEPTH

__all__ = [
    "MAX_NESTING_DEPTH",
    "MAX_SCHEMA_JSON_DEPTH",
    "ArrayType",
    "DataType",
    "MapType",
    "PrimitiveType",
    "StructField",
    "StructType",
    "VariantType",
    "ArrowTypePartner",
    "DeltaTypePartner",
    "PartnerAccessor",
    "PathVisitor",
    "SchemaRebuilder",
    "SchemaVisitor",
    "SchemaWithPartnerVisitor",
    "visit",
    "visit_with_partner",
    "contains_variant",
    "parse_schema",
    "to_arrow_schema",
    "to_arrow_type",
    "variant_arrow_type",
]

_PRIMITIVES = frozenset(
    {
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
        "void",
    }
)
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")

MAX_NESTING_DEPTH = MAX_SCHEMA_DEPTH
"""Deepest Parquet node a table schema may need: a top-level column is level 1, a struct's
fields one level below it, an array's element and a map's key/value two (the repeated group,
then the node), a Variant's ``metadata``/``value`` one. Arrow's Parquet reader and writer
refuse schema trees 100 levels deep ("schema depth limit"), so a deeper table could never hold
a readable data file: 98 nested structs or 49 nested arrays in one column is the most any
Parquet file varlake writes or reads can hold. (Spark has no lower limit of its own; Jackson's
JSON nesting limit lets Delta parse about 330 struct levels, none of which Arrow could store.)"""

MAX_SCHEMA_JSON_DEPTH = 3 * MAX_NESTING_DEPTH + 32
"""Deepest JSON nesting accepted in a ``schemaString``: a schema ``MAX_NESTING_DEPTH`` levels
deep needs three JSON levels per struct level (``fields`` list, field object, ``type`` object),
plus room for nested field metadata. Checked by a linear scan before the text is decoded."""


def _check_height(owner: Any, height: int) -> None:
    """Remember how many Parquet levels ``owner`` needs below its node; refuse over the limit."""
    if height > MAX_NESTING_DEPTH:
        raise SchemaParseError(
            f"a type nested {height} Parquet levels deep exceeds the limit of {MAX_NESTING_DEPTH} "
            "(Arrow's Parquet schema depth limit)"
        )
    object.__setattr__(owner, "_height", height)


def _height(dtype: Any) -> int:
    """Parquet levels below the node holding ``dtype`` (0 for a primitive)."""
    return getattr(dtype, "_height", 0)


@dataclass(frozen=True)
class PrimitiveType:
    """A primitive type by its Delta name (``long``, ``decimal(10,2)``, ...)."""

    name: str

    def to_json(self) -> Any:
        return self.name


@dataclass(frozen=True)
class VariantType:
    """The semi-structured ``variant`` type."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_height", 1)  # its metadata and value leaves

    def to_json(self) -> Any:
        return "variant"


@dataclass(frozen=True)
class ArrayType:
    element_type: DataType
    contains_null: bool = True

    def __post_init__(self) -> None:
        _check_height(self, 2 + _height(self.element_type))

    def to_json(self) -> Any:
        return {"type": "array", "elementType": self.element_type.to_json(), "containsNull": self.contains_null}


@dataclass(frozen=True)
class MapType:
    key_type: DataType
    value_type: DataType
    value_contains_null: bool = True

    def __post_init__(self) -> None:
        _check_height(self, 2 + max(_height(self.key_type), _height(self.value_type)))

    def to_json(self) -> Any:
        return {
            "type": "map",
            "keyType": self.key_type.to_json(),
            "valueType": self.value_type.to_json(),
            "valueContainsNull": self.value_contains_null,
        }


@dataclass(frozen=True)
class StructField:
    name: str
    type: DataType
    nullable: bool = True
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> Any:
        return {
            "name": self.name,
            "type": self.type.to_json(),
            "nullable": self.nullable,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True)
class StructType:
    fields: tuple[StructField, ...] = ()

    def __post_init__(self) -> None:
        _check_height(self, 1 + max((_height(f.type) for f in self.fields), default=-1))

    def to_json(self) -> Any:
        return {"type": "struct", "fields": [f.to_json() for f in self.fields]}

    def to_schema_string(self) -> str:
        """The compact JSON stored in ``metaData.schemaString``."""
        return json.dumps(self.to_json(), separators=(",", ":"))

    def field(self, name: str) -> StructField:
        """The field called ``name`` (exact match); ``KeyError`` if absent."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)


DataType = Union[PrimitiveType, VariantType, ArrayType, MapType, StructType]
T = TypeVar("T")
P = TypeVar("P")


def parse_schema(schema_string: str, where: str = "schemaString") -> StructType:
    """Parse a Delta ``schemaString``; ``SchemaParseError`` names the bad element.

    Nesting is bounded (``MAX_SCHEMA_JSON_DEPTH``, ``MAX_NESTING_DEPTH``) before recursion.
    """
    if not isinstance(schema_string, str):
        raise SchemaParseError(f"{where}: not valid JSON: a schema string must be text, got {type(schema_string).__name__}")
    obj = load_json(schema_string, where, "schemaString", SchemaParseError, MAX_SCHEMA_JSON_DEPTH)
    result = _parse_type(obj, where, 0)
    if not isinstance(result, StructType):
        raise SchemaParseError(f"{where}: a table schema must be a struct, got {_brief(obj)}")
    return result


def _parse_type(obj: Any, at: str, level: int) -> DataType:
    """The type of JSON ``obj`` held by a Parquet node at depth ``level`` (the table: 0)."""
    is_variant = obj == "variant" or isinstance(obj, dict) and obj.get("type") == "variant"
    if level + is_variant > MAX_NESTING_DEPTH:
        short = at if len(at) <= 400 else f"{at[:300]} ... {at[-80:]}"
        raise SchemaParseError(
            f"{short}: the schema nests deeper than {MAX_NESTING_DEPTH} Parquet levels (Arrow's Parquet schema depth limit)"
        )
    if isinstance(obj, str):
        if obj == "variant":
            return VariantType()
        if obj in _PRIMITIVES:
            return PrimitiveType(obj)
        m = _DECIMAL.match(obj)
        if m:
            precision, scale = int(m.group(1)), int(m.group(2))
            if not 1 <= precision <= 38 or scale > precision:
                raise SchemaParseError(f"{at}: invalid decimal precision/scale in {obj!r}")
            return PrimitiveType(f"decimal({precision},{scale})")
        raise SchemaParseError(f"{at}: unknown type {_brief(obj)}")
    if not isinstance(obj, dict):
        raise SchemaParseError(f"{at}: a type must be a string or an object, got {type(obj).__name__}")
    kind = obj.get("type")
    if kind == "variant":
        return VariantType()
    if kind == "struct":
        raw_fields = obj.get("fields")
        if not isinstance(raw_fields, list):
            raise SchemaParseError(f"{at}: struct needs a 'fields' list")
        fields = tuple(_parse_field(f, f"{at}.fields[{i}]", level + 1) for i, f in enumerate(raw_fields))
        seen: dict[str, str] = {}
        for f in fields:
            low = f.name.lower()
            if low in seen:
                raise SchemaParseError(f"{at}: duplicate column name {f.name!r} (names are case-insensitive)")
            seen[low] = f.name
        return StructType(fields)
    if kind == "array":
        if "elementType" not in obj:
            raise SchemaParseError(f"{at}: array needs 'elementType'")
        return ArrayType(_parse_type(obj["elementType"], f"{at}.elementType", level + 2), _bool(obj, "containsNull", at))
    if kind == "map":
        if "keyType" not in obj or "valueType" not in obj:
            raise SchemaParseError(f"{at}: map needs 'keyType' and 'valueType'")
        return MapType(
            _parse_type(obj["keyType"], f"{at}.keyType", level + 2),
            _parse_type(obj["valueType"], f"{at}.valueType", level + 2),
            _bool(obj, "valueContainsNull", at),
        )
    raise SchemaParseError(f"{at}: unknown type {_brief(kind)}")


def _bool(obj: Mapping[str, Any], key: str, at: str) -> bool:
    value = obj.get(key, True)
    if not isinstance(value, bool):
        raise SchemaParseError(f"{at}.{key}: must be true or false, got {_brief(value)}")
    return value


def _parse_field(obj: Any, at: str, level: int) -> StructField:
    if not isinstance(obj, dict):
        raise SchemaParseError(f"{at}: a struct field must be an object")
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        raise SchemaParseError(f"{at}: a struct field needs a non-empty string 'name'")
    if "type" not in obj:
        raise SchemaParseError(f"{at} ({name!r}): a struct field needs a 'type'")
    metadata = obj.get("metadata", {})
    if not isinstance(metadata, dict):
        raise SchemaParseError(f"{at} ({name!r}): 'metadata' must be an object")
    return StructField(name, _parse_type(obj["type"], f"{at}.type", level), _bool(obj, "nullable", at), metadata)


# --- visiting a type tree ---------------------------------------------------------------------


class SchemaVisitor(Generic[T]):
    """A fold over a Delta type tree, children first: ``visit`` calls ``primitive`` or
    ``variant`` on a leaf, ``field`` with the result of the field's type, ``struct`` with
    its fields' results, ``array`` and ``map`` with their children's results. The
    ``before_*``/``after_*`` hooks run around each child (a field, an array's element, a
    map's key and value): pre-order work such as tracking the path goes there. A
    Variant is a leaf (its shredded group is not part of the schema). Every method
    returns None unless overridden (a visitor working through its hooks alone)."""

    def before_field(self, field: StructField) -> None:
        pass

    def after_field(self, field: StructField) -> None:
        pass

    def before_element(self, array: ArrayType) -> None:
        pass

    def after_element(self, array: ArrayType) -> None:
        pass

    def before_key(self, map_type: MapType) -> None:
        pass

    def after_key(self, map_type: MapType) -> None:
        pass

    def before_value(self, map_type: MapType) -> None:
        pass

    def after_value(self, map_type: MapType) -> None:
        pass

    def struct(self, struct: StructType, field_results: list[T]) -> T:
        return None  # type: ignore[return-value]

    def field(self, field: StructField, type_result: T) -> T:
        return None  # type: ignore[return-value]

    def array(self, array: ArrayType, element_result: T) -> T:
        return None  # type: ignore[return-value]

    def map(self, map_type: MapType, key_result: T, value_result: T) -> T:
        return None  # type: ignore[return-value]

    def primitive(self, primitive: PrimitiveType) -> T:
        return None  # type: ignore[return-value]

    def variant(self, variant: VariantType) -> T:
        return None  # type: ignore[return-value]


def visit(dtype: DataType, visitor: SchemaVisitor[T]) -> T:
    """Fold ``dtype`` with ``visitor`` (see ``SchemaVisitor``); depth is bounded by
    ``MAX_NESTING_DEPTH``, so the recursion is too."""
    if isinstance(dtype, StructType):
        results = []
        for f in dtype.fields:
            visitor.before_field(f)
            results.append(visitor.field(f, visit(f.type, visitor)))
            visitor.after_field(f)
        return visitor.struct(dtype, results)
    if isinstance(dtype, ArrayType):
        visitor.before_element(dtype)
        element = visit(dtype.element_type, visitor)
        visitor.after_element(dtype)
        return visitor.array(dtype, element)
    if isinstance(dtype, MapType):
        visitor.before_key(dtype)
        key = visit(dtype.key_type, visitor)
        visitor.after_key(dtype)
        visitor.before_value(dtype)
        value = visit(dtype.value_type, visitor)
        visitor.after_value(dtype)
        return visitor.map(dtype, key, value)
    if isinstance(dtype, VariantType):
        return visitor.variant(dtype)
    if isinstance(dtype, PrimitiveType):
        return visitor.primitive(dtype)
    raise TypeError(f"not a Delta type: {dtype!r}")


class SchemaRebuilder(SchemaVisitor[Any]):
    """A visitor that rebuilds the type it visits, unchanged: override a method to change
    those nodes (``field`` returns a ``StructField``, every other method a type)."""

    def struct(self, struct: StructType, field_results: list[Any]) -> Any:
        return StructType(tuple(field_results))

    def field(self, field: StructField, type_result: Any) -> Any:
        return StructField(field.name, type_result, field.nullable, field.metadata)

    def array(self, array: ArrayType, element_result: Any) -> Any:
        return ArrayType(element_result, array.contains_null)

    def map(self, map_type: MapType, key_result: Any, value_result: Any) -> Any:
        return MapType(key_result, value_result, map_type.value_contains_null)

    def primitive(self, primitive: PrimitiveType) -> Any:
        return primitive

    def variant(self, variant: VariantType) -> Any:
        return variant


class PathVisitor(SchemaVisitor[T]):
    """A ``SchemaVisitor`` that knows where it is: ``path`` holds the names of the steps
    from the visited type to the current node -- field names, ``element``, ``key``,
    ``value`` -- as ``type_widening``'s ``fieldPath`` spells them."""

    def __init__(self) -> None:
        self.path: list[str] = []

    def before_field(self, field: StructField) -> None:
        self.path.append(field.name)

    def after_field(self, field: StructField) -> None:
        self.path.pop()

    def before_element(self, array: ArrayType) -> None:
        self.path.append("element")

    def after_element(self, array: ArrayType) -> None:
        self.path.pop()

    def before_key(self, map_type: MapType) -> None:
        self.path.append("key")

    def after_key(self, map_type: MapType) -> None:
        self.path.pop()

    def before_value(self, map_type: MapType) -> None:
        self.path.append("value")

    def after_value(self, map_type: MapType) -> None:
        self.path.pop()


class PartnerAccessor(Generic[P]):
    """How ``visit_with_partner`` walks a partner structure (an Arrow type, an array,
    another Delta type) beside a Delta type. Each method gets the partner of the parent
    node (None when there is none) and returns the child's partner, or None when the
    partner has no such child (or is not of the parent's kind)."""

    def field_partner(self, struct_partner: P | None, index: int, field: StructField) -> P | None:
        raise NotImplementedError

    def field_type_partner(self, field_partner: P | None) -> P | None:
        """The partner of a field's type, given the field's partner (the same by default)."""
        return field_partner

    def element_partner(self, array_partner: P | None) -> P | None:
        raise NotImplementedError

    def key_partner(self, map_partner: P | None) -> P | None:
        raise NotImplementedError

    def value_partner(self, map_partner: P | None) -> P | None:
        raise NotImplementedError


class SchemaWithPartnerVisitor(Generic[P, T]):
    """A fold over a Delta type and a partner structure walked beside it (``visit_with_partner``):
    every method gets the node's partner too (None where the partner has none); every method
    returns None unless overridden."""

    def struct(self, struct: StructType, partner: P | None, field_results: list[T]) -> T:
        return None  # type: ignore[return-value]

    def field(self, field: StructField, partner: P | None, type_result: T) -> T:
        return None  # type: ignore[return-value]

    def array(self, array: ArrayType, partner: P | None, element_result: T) -> T:
        return None  # type: ignore[return-value]

    def map(self, map_type: MapType, partner: P | None, key_result: T, value_result: T) -> T:
        return None  # type: ignore[return-value]

    def primitive(self, primitive: PrimitiveType, partner: P | None) -> T:
        return None  # type: ignore[return-value]

    def variant(self, variant: VariantType, partner: P | None) -> T:
        return None  # type: ignore[return-value]


def visit_with_partner(
    dtype: DataType, partner: P | None, visitor: SchemaWithPartnerVisitor[P, T], accessor: PartnerAccessor[P]
) -> T:
    """Fold ``dtype`` with ``visitor``, children first, the ``accessor`` finding each
    child's partner in ``partner`` just before the child is visited."""
    if isinstance(dtype, StructType):
        results = []
        for i, f in enumerate(dtype.fields):
            fp = accessor.field_partner(partner, i, f)
            results.append(visitor.field(f, fp, visit_with_partner(f.type, accessor.field_type_partner(fp), visitor, accessor)))
        return visitor.struct(dtype, partner, results)
    if isinstance(dtype, ArrayType):
        element = visit_with_partner(dtype.element_type, accessor.element_partner(partner), visitor, accessor)
        return visitor.array(dtype, partner, element)
    if isinstance(dtype, MapType):
        key = visit_with_partner(dtype.key_type, accessor.key_partner(partner), visitor, accessor)
        value = visit_with_partner(dtype.value_type, accessor.value_partner(partner), visitor, accessor)
        return visitor.map(dtype, partner, key, value)
    if isinstance(dtype, VariantType):
        return visitor.variant(dtype, partner)
    if isinstance(dtype, PrimitiveType):
        return visitor.primitive(dtype, partner)
    raise TypeError(f"not a Delta type: {dtype!r}")


class DeltaTypePartner(PartnerAccessor[Any]):
    """Partners from another Delta type: a struct's fields by position (its ``StructField``,
    whose type partners the field's type), an array's element, a map's key and value;
    None where the shapes part."""

    def field_partner(self, struct_partner: Any, index: int, field: StructField) -> Any:
        if isinstance(struct_partner, StructType) and index < len(struct_partner.fields):
            return struct_partner.fields[index]
        return None

    def field_type_partner(self, field_partner: Any) -> Any:
        return field_partner.type if field_partner is not None else None

    def element_partner(self, array_partner: Any) -> Any:
        return array_partner.element_type if isinstance(array_partner, ArrayType) else None

    def key_partner(self, map_partner: Any) -> Any:
        return map_partner.key_type if isinstance(map_partner, MapType) else None

    def value_partner(self, map_partner: Any) -> Any:
        return map_partner.value_type if isinstance(map_partner, MapType) else None


class ArrowTypePartner(PartnerAccessor[Any]):
    """Partners from an Arrow type: a struct's child field by name (its ``pa.Field``, whose
    type partners the field's type; override ``field_partner`` to match otherwise), a
    list's value type, a map's key and item types; None where the shapes part."""

    def field_partner(self, struct_partner: Any, index: int, field: StructField) -> Any:
        if struct_partner is None or not pa.types.is_struct(struct_partner):
            return None
        i = struct_partner.get_field_index(field.name)
        return struct_partner.field(i) if i >= 0 else None

    def field_type_partner(self, field_partner: Any) -> Any:
        return field_partner.type if field_partner is not None else None

    def element_partner(self, array_partner: Any) -> Any:
        if array_partner is not None and (pa.types.is_list(array_partner) or pa.types.is_large_list(array_partner)):
            return array_partner.value_type
        return None

    def key_partner(self, map_partner: Any) -> Any:
        return map_partner.key_type if map_partner is not None and pa.types.is_map(map_partner) else None

    def value_partner(self, map_partner: Any) -> Any:
        return map_partner.item_type if map_partner is not None and pa.types.is_map(map_partner) else None


class _TypesOf(SchemaVisitor[list[DataType]]):
    """Every type of a tree, depth first (a node before its children)."""

    def struct(self, struct: StructType, field_results: list[list[DataType]]) -> list[DataType]:
        return [struct, *(t for r in field_results for t in r)]

    def field(self, field: StructField, type_result: list[DataType]) -> list[DataType]:
        return type_result

    def array(self, array: ArrayType, element_result: list[DataType]) -> list[DataType]:
        return [array, *element_result]

    def map(self, map_type: MapType, key_result: list[DataType], value_result: list[DataType]) -> list[DataType]:
        return [map_type, *key_result, *value_result]

    def primitive(self, primitive: PrimitiveType) -> list[DataType]:
        return [primitive]

    def variant(self, variant: VariantType) -> list[DataType]:
        return [variant]


def iter_types(dtype: DataType) -> Iterator[DataType]:
    """``dtype`` and every type nested in it, depth first."""
    return iter(visit(dtype, _TypesOf()))


def iter_fields(struct: StructType) -> Iterator[StructField]:
    """Every struct field at any depth (through arrays and maps too)."""
    for dtype in iter_types(struct):
        if isinstance(dtype, StructType):
            yield from dtype.fields


def top_level_types(struct: StructType) -> dict[str, str | None]:
    """Each top-level column's type as partition checks take it: the primitive type name,
    ``"variant"``, or None for a struct, array or map."""
    return {
        f.name: f.type.name if isinstance(f.type, PrimitiveType) else "variant" if isinstance(f.type, VariantType) else None
        for f in struct.fields
    }


def contains_variant(dtype: DataType) -> bool:
    """Whether a ``variant`` appears anywhere in ``dtype``."""
    return any(isinstance(t, VariantType) for t in iter_types(dtype))


def contains_primitive(dtype: DataType, name: str) -> bool:
    """Whether primitive type ``name`` appears anywhere in ``dtype``."""
    return any(isinstance(t, PrimitiveType) and t.name == name for t in iter_types(dtype))


def variant_arrow_type() -> pa.StructType:
    """The physical (unshredded) Arrow type of a Variant value."""
    return pa.struct(
        [pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary(), nullable=False)]
    )


_ARROW_PRIMITIVES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
}


class _ToArrow(SchemaVisitor[Any]):
    def struct(self, struct: StructType, field_results: list[Any]) -> Any:
        return pa.struct(field_results)

    def field(self, field: StructField, type_result: Any) -> Any:
        return pa.field(field.name, type_result, nullable=field.nullable)

    def array(self, array: ArrayType, element_result: Any) -> Any:
        return pa.list_(pa.field("element", element_result, nullable=array.contains_null))

    def map(self, map_type: MapType, key_result: Any, value_result: Any) -> Any:
        return pa.map_(
            pa.field("key", key_result, nullable=False),
            pa.field("value", value_result, nullable=map_type.value_contains_null),
        )

    def primitive(self, primitive: PrimitiveType) -> Any:
        if primitive.name in _ARROW_PRIMITIVES:
            return _ARROW_PRIMITIVES[primitive.name]
        m = _DECIMAL.match(primitive.name)
        if m:
            return pa.decimal128(int(m.group(1)), int(m.group(2)))
        raise SchemaParseError(f"no Arrow type for Delta type {primitive.name!r}")

    def variant(self, variant: VariantType) -> Any:
        return variant_arrow_type()


def to_arrow_type(dtype: DataType) -> pa.DataType:
    """The Arrow type of a Delta type (variant -> struct<metadata, value>)."""
    return visit(dtype, _ToArrow())


def _arrow_field(f: StructField) -> pa.Field:
    return pa.field(f.name, to_arrow_type(f.type), nullable=f.nullable)


def to_arrow_schema(struct: StructType) -> pa.Schema:
    """The Arrow schema of a table schema."""
    return pa.schema([_arrow_field(f) for f in struct.fields])


_FROM_ARROW: list[tuple[Any, str]] = [
    (pa.types.is_string, "string"),
    (pa.types.is_large_string, "string"),
    (pa.types.is_int64, "long"),
    (pa.types.is_int32, "integer"),
    (pa.types.is_int16, "short"),
    (pa.types.is_int8, "byte"),
    (pa.types.is_float32, "float"),
    (pa.types.is_float64, "double"),
    (pa.types.is_boolean, "boolean"),
    (pa.types.is_binary, "binary"),
    (pa.types.is_large_binary, "binary"),
    (pa.types.is_date32, "date"),
]


def from_arrow_type(t: pa.DataType, level: int = 1) -> DataType:
    """The Delta type of an Arrow type (no Variant: Arrow has no tag for it) held at Parquet
    depth ``level``; nesting beyond ``MAX_NESTING_DEPTH`` is refused before recursing."""
    if level > MAX_NESTING_DEPTH:
        raise SchemaParseError(f"Arrow type nests deeper than {MAX_NESTING_DEPTH} Parquet levels (Arrow's Parquet schema depth limit)")
    for test, name in _FROM_ARROW:
        if test(t):
            return PrimitiveType(name)
    if pa.types.is_timestamp(t):
        return PrimitiveType("timestamp" if t.tz is not None else "timestamp_ntz")
    if pa.types.is_decimal(t):
        return PrimitiveType(f"decimal({t.precision},{t.scale})")
    if pa.types.is_struct(t):
        return StructType(tuple(StructField(f.name, from_arrow_type(f.type, level + 1), f.nullable) for f in t))
    if pa.types.is_map(t):
        return MapType(
            from_arrow_type(t.key_type, level + 2), from_arrow_type(t.item_type, level + 2), t.item_field.nullable
        )
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return ArrayType(from_arrow_type(t.value_type, level + 2), t.value_field.nullable)
    raise SchemaParseError(f"Arrow type {t} has no Delta equivalent")


def from_arrow_schema(schema: pa.Schema) -> StructType:
    """A Delta schema for an Arrow schema."""
    return StructType(tuple(StructField(f.name, from_arrow_type(f.type), f.nullable) for f in schema))
