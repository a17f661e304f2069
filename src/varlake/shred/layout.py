"""Recognising the physical layout of a (possibly shredded) Variant column in Arrow.

VariantShredding.md stores a Variant as a group with ``metadata`` and, at every
level, an optional ``value`` (Variant bytes) and an optional ``typed_value``
(a primitive column, a 3-level LIST of element groups, or a group of object
fields, each a required group of ``value``/``typed_value``). Children are found
by *name*, never by position, so either child order works; a missing ``value`` or
``typed_value`` means "always null". Fields whose name starts with ``_`` are
reserved for extensions and ignored; any other unknown name is rejected, because
silently ignoring it could drop data.

The result is a small immutable tree (``VariantLayout``) that the unshredding and
path-projection kernels walk; building it once per column keeps the per-batch
work free of schema inspection.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import pyarrow as pa

from varlake.errors import InvalidShreddedLayoutError

__all__ = [
    "ArrayLayout",
    "LeafKind",
    "ObjectLayout",
    "PrimitiveLayout",
    "ValueLayout",
    "VariantLayout",
    "is_binary_type",
    "recognise_layout",
]


class LeafKind(Enum):
    """Variant primitive a shredded ``typed_value`` column holds (spec's type table)."""

    BOOLEAN = "boolean"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT = "float"
    DOUBLE = "double"
    DECIMAL4 = "decimal4"
    DECIMAL8 = "decimal8"
    DECIMAL16 = "decimal16"
    DATE = "date"
    TIME = "time"
    TIMESTAMP = "timestamptz(6)"
    TIMESTAMP_NTZ = "timestampntz(6)"
    TIMESTAMP_NANOS = "timestamptz(9)"
    TIMESTAMP_NTZ_NANOS = "timestampntz(9)"
    STRING = "string"
    BINARY = "binary"
    UUID = "uuid"


@dataclass(frozen=True, slots=True)
class PrimitiveLayout:
    """A shredded primitive: its Variant kind, Arrow type and (decimals) scale."""

    kind: LeafKind
    arrow_type: pa.DataType
    scale: int = 0


@dataclass(frozen=True, slots=True)
class ArrayLayout:
    """A shredded array: every element is itself a ``value``/``typed_value`` pair."""

    element: "ValueLayout"


@dataclass(frozen=True, slots=True)
class ObjectLayout:
    """A shredded object: ``(key, layout)`` per shredded field, in Arrow child order."""

    fields: tuple[tuple[str, "ValueLayout"], ...]

    def field(self, key: str) -> "ValueLayout | None":
        for k, f in self.fields:
            if k == key:
                return f
        return None

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(k for k, _ in self.fields)


TypedLayout = PrimitiveLayout | ArrayLayout | ObjectLayout


@dataclass(frozen=True, slots=True)
class ValueLayout:
    """One ``value``/``typed_value`` level; ``path`` (``$.a[*].b``) locates it in messages."""

    path: str
    has_value: bool
    typed: TypedLayout | None

    @property
    def is_shredded(self) -> bool:
        return self.typed is not None


@dataclass(frozen=True, slots=True)
class VariantLayout:
    """A whole Variant group: ``metadata`` plus its top ``value``/``typed_value`` level."""

    root: ValueLayout

    @property
    def is_shredded(self) -> bool:
        return self.root.typed is not None


def is_binary_type(t: pa.DataType) -> bool:
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)


def _is_string_type(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_list_type(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)


class _Recogniser:
    __slots__ = ("where",)

    def __init__(self, where: str) -> None:
        self.where = where

    def error(self, path: str, message: str) -> InvalidShreddedLayoutError:
        return InvalidShreddedLayoutError(f"{self.where}, path {path}: {message}")

    def children(self, t: pa.StructType, path: str, allowed: tuple[str, ...]) -> dict[str, pa.Field]:
        found: dict[str, pa.Field] = {}
        for i in range(t.num_fields):
            f = t.field(i)
            if f.name.startswith("_"):
                continue  # reserved for backward-compatible extensions
            if f.name not in allowed:
                raise self.error(path, f"unexpected field {f.name!r} in a shredded Variant group (expected {', '.join(allowed)})")
            if f.name in found:
                raise self.error(path, f"field {f.name!r} appears twice")
            found[f.name] = f
        return found

    def level(self, t: pa.DataType, path: str, top: bool) -> tuple[ValueLayout, bool]:
        if not pa.types.is_struct(t):
            raise self.error(path, f"expected a group of value/typed_value, found {t}")
        allowed = ("metadata", "value", "typed_value") if top else ("value", "typed_value")
        kids = self.children(t, path, allowed)
        value = kids.get("value")
        if value is not None and not is_binary_type(value.type):
            raise self.error(path, f"'value' must be binary, found {value.type}")
        typed_field = kids.get("typed_value")
        typed = self.typed(typed_field.type, path) if typed_field is not None else None
        has_meta = "metadata" in kids
        if has_meta and not is_binary_type(kids["metadata"].type):
            raise self.error(path, f"'metadata' must be binary, found {kids['metadata'].type}")
        return ValueLayout(path, value is not None, typed), has_meta

    def typed(self, t: pa.DataType, path: str) -> TypedLayout:
        if pa.types.is_dictionary(t):
            t = t.value_type
        if pa.types.is_struct(t):
            fields = []
            for i in range(t.num_fields):
                f = t.field(i)
                child_path = f"{path}.{f.name}" if _plain_key(f.name) else f"{path}[{f.name!r}]"
                layout, _ = self.level(f.type, child_path, top=False)
                fields.append((f.name, layout))
            return ObjectLayout(tuple(fields))
        if _is_list_type(t):
            element, _ = self.level(t.value_type, f"{path}[*]", top=False)
            if not element.has_value and element.typed is None:
                raise self.error(f"{path}[*]", "array element group has neither value nor typed_value")
            return ArrayLayout(element)
        return self.primitive(t, path)

    def primitive(self, t: pa.DataType, path: str) -> PrimitiveLayout:
        kind: LeafKind | None = None
        scale = 0
        if pa.types.is_boolean(t):
            kind = LeafKind.BOOLEAN
        elif pa.types.is_int8(t):
            kind = LeafKind.INT8
        elif pa.types.is_int16(t):
            kind = LeafKind.INT16
        elif pa.types.is_int32(t):
            kind = LeafKind.INT32
        elif pa.types.is_int64(t):
            kind = LeafKind.INT64
        elif pa.types.is_float32(t):
            kind = LeafKind.FLOAT
        elif pa.types.is_float64(t):
            kind = LeafKind.DOUBLE
        elif pa.types.is_decimal(t):
            if t.precision > 38 or not 0 <= t.scale <= 38 or t.scale > t.precision:
                raise self.error(path, f"unsupported shredded value type: {t} (Variant decimals need 0 <= scale <= precision <= 38)")
            scale = t.scale
            kind = LeafKind.DECIMAL4 if t.precision <= 9 else LeafKind.DECIMAL8 if t.precision <= 18 else LeafKind.DECIMAL16
        elif pa.types.is_date32(t):
            kind = LeafKind.DATE
        elif pa.types.is_time64(t) and t.unit == "us":
            kind = LeafKind.TIME
        elif pa.types.is_timestamp(t) and t.unit in ("us", "ns"):
            utc = t.tz is not None
            if t.unit == "us":
                kind = LeafKind.TIMESTAMP if utc else LeafKind.TIMESTAMP_NTZ
            else:
                kind = LeafKind.TIMESTAMP_NANOS if utc else LeafKind.TIMESTAMP_NTZ_NANOS
        elif _is_string_type(t):
            kind = LeafKind.STRING
        elif is_binary_type(t):
            kind = LeafKind.BINARY
        elif isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.uuid":
            kind = LeafKind.UUID
        if kind is None:
            raise self.error(path, f"unsupported shredded value type: {t}")
        return PrimitiveLayout(kind, t, scale)


def _plain_key(name: str) -> bool:
    return bool(name) and all(ch.isalnum() or ch == "_" for ch in name)


def recognise_layout(arrow_type: pa.DataType, where: str = "Variant column") -> VariantLayout:
    """The layout of a Variant group given its Arrow struct type.

    ``where`` (e.g. ``"f.parquet: column 'v'"``) prefixes every error message.
    Raises ``InvalidShreddedLayoutError`` for anything the spec does not allow.
    """
    rec = _Recogniser(where)
    root, has_meta = rec.level(arrow_type, "$", top=True)
    if not has_meta:
        raise rec.error("$", "Variant group has no 'metadata' field")
    return VariantLayout(root)
