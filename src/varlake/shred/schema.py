"""Shredding schemas: which parts of a Variant get their own typed Parquet columns.

A schema is the Arrow type of the *logical* typed value, e.g.
``struct<a: int64, b: struct<c: string>, tags: list<string>>``: a struct shreds an
object's fields, a list shreds an array's elements, anything else is a typed leaf.
From it follow the Spark DDL text (``a bigint, b struct<c: string>, tags
array<string>``, parsed by ``varlake.semantics.types``) and the *physical* Arrow type that is written to Parquet, with a
``{value, typed_value}`` pair at every level as VariantShredding.md prescribes.

Leaf types are exactly the spec's shredded value types. Three have no Spark SQL
type and use varlake names in DDL: ``uuid`` (FIXED_LEN_BYTE_ARRAY(16) UUID),
``timestamp_ns`` and ``timestamp_ntz_ns`` (TIMESTAMP(NANOS)).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from varlake.errors import InvalidTypeStringError, ShreddingSchemaError
from varlake.semantics.types import SparkType, parse_ddl, quote_identifier

UUID_TYPE = pa.uuid()
TIMESTAMP_UTC = pa.timestamp("us", tz="UTC")
TIMESTAMP_NTZ = pa.timestamp("us")
TIMESTAMP_NS_UTC = pa.timestamp("ns", tz="UTC")
TIMESTAMP_NS_NTZ = pa.timestamp("ns")
TIME_US = pa.time64("us")
MAX_DECIMAL_PRECISION = 38

# Leaf types in their normalized form, with their DDL name.
_LEAF_DDL: dict[pa.DataType, str] = {
    pa.bool_(): "boolean",
    pa.int8(): "tinyint",
    pa.int16(): "smallint",
    pa.int32(): "int",
    pa.int64(): "bigint",
    pa.float32(): "float",
    pa.float64(): "double",
    pa.date32(): "date",
    TIME_US: "time(6)",
    TIMESTAMP_UTC: "timestamp",
    TIMESTAMP_NTZ: "timestamp_ntz",
    TIMESTAMP_NS_UTC: "timestamp_ns",
    TIMESTAMP_NS_NTZ: "timestamp_ntz_ns",
    pa.binary(): "binary",
    pa.string(): "string",
    UUID_TYPE: "uuid",
}

# Arrow types of the canonical Spark type names (``varlake.semantics.types``), plus the
# three leaf names only shredding DDL knows.
_EXTRA_NAMES = ("uuid", "timestamp_ns", "timestamp_ntz_ns")
_ARROW_OF: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "date": pa.date32(),
    "timestamp": TIMESTAMP_UTC,
    "timestamp_ntz": TIMESTAMP_NTZ,
    "timestamp_ns": TIMESTAMP_NS_UTC,
    "timestamp_ntz_ns": TIMESTAMP_NS_NTZ,
    "binary": pa.binary(),
    "string": pa.string(),
    "char": pa.string(),
    "varchar": pa.string(),
    "uuid": UUID_TYPE,
}


# --- normalization -------------------------------------------------------------------------


def normalize(t: pa.DataType, where: str = "$") -> pa.DataType:
    """The canonical logical type: fields nullable, large/view types narrowed, timestamps
    zoned ``UTC`` or naive. Raises ``ShreddingSchemaError`` for types the spec cannot shred."""
    if pa.types.is_struct(t):
        if t.num_fields == 0:
            raise ShreddingSchemaError(f"object at {where} shreds no fields (a struct needs at least one)")
        names = [t.field(i).name for i in range(t.num_fields)]
        seen: set[str] = set()
        for n in names:
            if not n:
                raise ShreddingSchemaError(f"empty field name in the object at {where}")
            if n in seen:
                raise ShreddingSchemaError(f"field {n!r} appears twice in the object at {where}")
            seen.add(n)
        return pa.struct([pa.field(n, normalize(t.field(i).type, f"{where}.{n}")) for i, n in enumerate(names)])
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        return pa.list_(normalize(t.value_type, f"{where}[*]"))
    if isinstance(t, pa.ExtensionType):
        if t == UUID_TYPE:
            return UUID_TYPE
        raise ShreddingSchemaError(f"extension type {t} at {where} cannot be shredded")
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_decimal(t):
        if not 1 <= t.precision <= MAX_DECIMAL_PRECISION or not 0 <= t.scale <= t.precision:
            raise ShreddingSchemaError(f"decimal({t.precision}, {t.scale}) at {where} is outside decimal(38, 0..38)")
        return pa.decimal128(t.precision, t.scale)
    if pa.types.is_timestamp(t):
        if t.unit not in ("us", "ns"):
            raise ShreddingSchemaError(f"timestamp unit {t.unit!r} at {where}: Variant timestamps are 'us' or 'ns'")
        return pa.timestamp(t.unit, tz="UTC" if t.tz else None)
    if pa.types.is_time(t):
        if t != TIME_US:
            raise ShreddingSchemaError(f"time type {t} at {where}: Variant time is time64('us')")
        return TIME_US
    if t in _LEAF_DDL:
        return t
    raise ShreddingSchemaError(f"type {t} at {where} is not a shreddable Variant type")


def is_leaf(t: pa.DataType) -> bool:
    return not (pa.types.is_struct(t) or pa.types.is_list(t))


# --- physical layout --------------------------------------------------------------------------


def physical_typed_value(t: pa.DataType) -> pa.DataType:
    """The Parquet-ready ``typed_value`` type of a normalized logical type."""
    if pa.types.is_struct(t):
        return pa.struct(
            [pa.field(t.field(i).name, shredded_group(t.field(i).type), nullable=False) for i in range(t.num_fields)]
        )
    if pa.types.is_list(t):
        return pa.list_(pa.field("element", shredded_group(t.value_type), nullable=False))
    return t


def shredded_group(t: pa.DataType) -> pa.StructType:
    """``struct<value: binary, typed_value: ...>``: an object field or array element."""
    return pa.struct([pa.field("value", pa.binary()), pa.field("typed_value", physical_typed_value(t))])


def variant_struct(schema: "ShreddingSchema | None") -> pa.StructType:
    """The Arrow type of a whole Variant column: unshredded (``value`` required) or shredded."""
    metadata = pa.field("metadata", pa.binary(), nullable=False)
    if schema is None:
        return pa.struct([metadata, pa.field("value", pa.binary(), nullable=False)])
    return pa.struct([metadata, pa.field("value", pa.binary()), pa.field("typed_value", schema.physical_type)])


def is_variant_struct(t: pa.DataType) -> bool:
    """A Variant column's Arrow type: ``struct<metadata, value>`` of binaries, optionally
    with ``typed_value`` (shredded)."""
    if not pa.types.is_struct(t):
        return False
    names = {t.field(i).name for i in range(t.num_fields)}
    if names not in ({"metadata", "value"}, {"metadata", "value", "typed_value"}):
        return False
    return all(_is_binary(t.field(n).type) for n in ("metadata", "value"))


def find_variant_columns(schema: pa.Schema) -> list[tuple[str, ...]]:
    """Paths of the Variant columns of ``schema``: top-level or nested in structs."""
    found: list[tuple[str, ...]] = []

    def walk(t: pa.DataType, path: tuple[str, ...]) -> None:
        if is_variant_struct(t):
            found.append(path)
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i).type, path + (t.field(i).name,))

    for f in schema:
        walk(f.type, (f.name,))
    return found


def _is_binary(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)


def logical_from_physical(t: pa.DataType, where: str = "typed_value") -> pa.DataType:
    """Invert ``physical_typed_value``: the logical type of a file's ``typed_value``."""
    if pa.types.is_struct(t):
        fields = []
        for i in range(t.num_fields):
            f = t.field(i)
            fields.append(pa.field(f.name, _group_typed(f.type, f"{where}.{f.name}")))
        return normalize(pa.struct(fields), where)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_group_typed(t.value_type, f"{where}.element"))
    return normalize(t, where)


def _group_typed(group: pa.DataType, where: str) -> pa.DataType:
    if not pa.types.is_struct(group) or group.get_field_index("typed_value") < 0:
        raise ShreddingSchemaError(f"{where} is not a shredded group with a typed_value")
    return logical_from_physical(group.field("typed_value").type, f"{where}.typed_value")


# --- the schema object -----------------------------------------------------------------------


@dataclass(frozen=True)
class ShreddingSchema:
    """A normalized logical shredding type, with its DDL and physical forms."""

    arrow_type: pa.DataType

    def __post_init__(self) -> None:
        object.__setattr__(self, "arrow_type", normalize(self.arrow_type))

    @classmethod
    def parse(cls, spec: "ShreddingSchema | pa.DataType | str") -> "ShreddingSchema":
        """From a schema, an Arrow type or Spark DDL text."""
        if isinstance(spec, ShreddingSchema):
            return spec
        if isinstance(spec, pa.DataType):
            return cls(spec)
        if isinstance(spec, str):
            return cls(from_ddl(spec))
        raise ShreddingSchemaError(f"a shredding schema must be an Arrow type or DDL text, got {type(spec).__name__}")

    @classmethod
    def from_physical(cls, variant_type: pa.DataType) -> "ShreddingSchema | None":
        """The schema of a Variant column's Arrow type; None if it is not shredded."""
        if not pa.types.is_struct(variant_type) or variant_type.get_field_index("typed_value") < 0:
            return None
        return cls(logical_from_physical(variant_type.field("typed_value").type))

    @property
    def ddl(self) -> str:
        return to_ddl(self.arrow_type)

    @property
    def physical_type(self) -> pa.DataType:
        return physical_typed_value(self.arrow_type)

    @property
    def variant_type(self) -> pa.StructType:
        return variant_struct(self)

    def leaves(self) -> list[tuple[tuple[str | None, ...], pa.DataType]]:
        """``(path, type)`` of every typed leaf; ``None`` in a path stands for "any element"."""
        return list(_leaves(self.arrow_type, ()))

    def __str__(self) -> str:
        return self.ddl


def _leaves(t: pa.DataType, prefix: tuple[str | None, ...]) -> Iterator[tuple[tuple[str | None, ...], pa.DataType]]:
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from _leaves(t.field(i).type, prefix + (t.field(i).name,))
    elif pa.types.is_list(t):
        yield from _leaves(t.value_type, prefix + (None,))
    else:
        yield prefix, t


# --- Spark DDL out ------------------------------------------------------------------------------

def type_ddl(t: pa.DataType) -> str:
    """Spark DDL of one (normalized) type, e.g. ``struct<a: bigint>``."""
    if pa.types.is_struct(t):
        return "struct<" + ", ".join(f"{quote_identifier(t.field(i).name)}: {type_ddl(t.field(i).type)}" for i in range(t.num_fields)) + ">"
    if pa.types.is_list(t):
        return f"array<{type_ddl(t.value_type)}>"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    name = _LEAF_DDL.get(t)
    if name is None:
        raise ShreddingSchemaError(f"type {t} has no DDL form")
    return name


def to_ddl(t: pa.DataType) -> str:
    """Column-list DDL for an object schema (``a bigint, b string``), else the type's DDL."""
    t = normalize(t)
    if pa.types.is_struct(t):
        return ", ".join(f"{quote_identifier(t.field(i).name)} {type_ddl(t.field(i).type)}" for i in range(t.num_fields))
    return type_ddl(t)


# --- Spark DDL in --------------------------------------------------------------------------------

def _arrow_type(t: SparkType, text: str) -> pa.DataType:
    """The Arrow type of a parsed shredding type; what cannot be shredded is refused."""
    if t.name == "struct":
        if not t.fields:
            raise ShreddingSchemaError(f"a struct needs at least one field in DDL {text!r}")
        return pa.struct([pa.field(f.name, _arrow_type(f.type, text)) for f in t.fields])
    if t.name == "array":
        return pa.list_(_arrow_type(t.element, text))  # type: ignore[arg-type]
    if t.name == "map":
        raise ShreddingSchemaError(f"maps cannot be shredded (Variant objects shred as struct) in DDL {text!r}")
    if t.name == "decimal":
        return pa.decimal128(t.precision, t.scale)
    if t.name == "time":
        if t.precision != 6:
            raise ShreddingSchemaError(f"Variant time has microsecond precision: use time or time(6), not {t.simple}, in DDL {text!r}")
        return TIME_US
    found = _ARROW_OF.get(t.name)
    if found is None:
        raise ShreddingSchemaError(f"type {t.simple} cannot be shredded in DDL {text!r}")
    return found


def from_ddl(text: str) -> pa.DataType:
    """The normalized Arrow type of Spark DDL: ``a bigint, b struct<c: string>``, a
    ``struct<...>`` or a single type such as ``array<string>``."""
    try:
        parsed = parse_ddl(text, _EXTRA_NAMES)
    except InvalidTypeStringError as exc:
        raise ShreddingSchemaError(f"shredding DDL: {exc}") from None
    return normalize(_arrow_type(parsed, text))
