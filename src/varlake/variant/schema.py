"""``schema_of_variant`` and ``schema_of_variant_agg``: Spark 4.3's inferred Variant schemas.

A value's schema is BIGINT for every integer width, DECIMAL(p,s) of the decimal with its
trailing zeros removed, OBJECT<...> with fields in key order, ARRAY<merged element types>,
VOID for null. Merging follows Spark's ``JsonInferSchema.compatibleType`` with VARIANT as the
fallback: first the "tightest common type" (equal types, VOID yields, BIGINT < FLOAT < DOUBLE,
a decimal wide enough for BIGINT absorbs it, DATE < TIMESTAMP_NTZ < TIMESTAMP, arrays
element-wise, objects with the same field names - compared case-insensitively, keeping the
first spelling - field-wise), then widening (decimals to fit both, over 38 digits DOUBLE;
FLOAT/DOUBLE with DECIMAL to DOUBLE; objects merged key by key), else VARIANT.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from varlake.errors import MalformedVariantError, VariantError
from varlake.variant import decoder as dec
from varlake.semantics.types import quote_identifier
from varlake.variant.cast import stripped_decimal
from varlake.variant.value import Variant

__all__ = [
    "ArraySchema",
    "DecimalSchema",
    "ObjectSchema",
    "merge_schemas",
    "render_schema",
    "schema_of",
    "schema_of_variant",
    "schema_of_variant_agg",
]


@dataclass(frozen=True, slots=True)
class DecimalSchema:
    precision: int
    scale: int


@dataclass(frozen=True, slots=True)
class ArraySchema:
    element: "Schema"


@dataclass(frozen=True, slots=True)
class ObjectSchema:
    """Fields in Spark's order (Java ``String.compareTo``: UTF-16 code units)."""

    fields: tuple[tuple[str, "Schema"], ...]


# Atomic types are their SQL names: VOID, BOOLEAN, BIGINT, FLOAT, DOUBLE, STRING, BINARY,
# DATE, TIMESTAMP, TIMESTAMP_NTZ, UUID, VARIANT.
Schema = str | DecimalSchema | ArraySchema | ObjectSchema

VOID = "VOID"
VARIANT = "VARIANT"
_NUMERIC_RANK = {"BIGINT": 0, "FLOAT": 1, "DOUBLE": 2}
_DATETIME_RANK = {"DATE": 0, "TIMESTAMP_NTZ": 1, "TIMESTAMP": 2}
_PRIMITIVE = {
    1: "BOOLEAN", 2: "BOOLEAN", 3: "BIGINT", 4: "BIGINT", 5: "BIGINT", 6: "BIGINT", 7: "DOUBLE",
    11: "DATE", 12: "TIMESTAMP", 13: "TIMESTAMP_NTZ", 14: "FLOAT", 15: "BINARY", 16: "STRING", 20: "UUID",
}
_LONG_DECIMAL = DecimalSchema(20, 0)


def _java_order(key: str) -> bytes:
    """Sort key equal to Java's ``String.compareTo`` (UTF-16 code units)."""
    return key.encode("utf-16-be", "surrogatepass")


# --- one value ------------------------------------------------------------------------------------


def schema_of(v: Variant) -> Schema:
    """The schema of one Variant as a structure (see ``render_schema`` for the text)."""
    try:
        return dec.with_deep_stack(_schema_at, dec.metadata_view(v.metadata), v.value, 0, dec.Budget(v.value))
    except (IndexError, struct.error) as exc:
        raise MalformedVariantError(f"truncated or inconsistent Variant ({exc})") from None
    except RecursionError:
        raise MalformedVariantError("Variant nested too deeply to infer its schema") from None


def _schema_at(meta: dec.MetadataView, value: bytes, pos: int, budget: dec.Budget) -> Schema:
    header = value[pos]
    basic = header & 0x03
    if basic == 2:
        entries = dec.object_entries(meta, value, pos)
        budget.spend(len(entries), pos)
        fields = [(k, _schema_at(meta, value, p, budget)) for k, p in entries]
        fields.sort(key=lambda f: _java_order(f[0]))
        return ObjectSchema(tuple(fields))
    if basic == 3:
        positions = dec.array_positions(value, pos)
        budget.spend(len(positions), pos)
        element: Schema = VOID
        for p in positions:
            element = merge_schemas(element, _schema_at(meta, value, p, budget))
        return ArraySchema(element)
    if basic == 1:
        return "STRING"
    t = header >> 2
    if t == 0:
        return VOID
    if 8 <= t <= 10:
        width = 4 << (t - 8) if t < 10 else 16
        scale = value[pos + 1]
        if scale > 38 or pos + 2 + width > len(value):
            raise MalformedVariantError(f"invalid decimal (scale {scale})", pos)
        unscaled, scale = stripped_decimal(int.from_bytes(value[pos + 2 : pos + 2 + width], "little", signed=True), scale)
        return DecimalSchema(max(len(str(abs(unscaled))), scale), scale)
    name = _PRIMITIVE.get(t)
    if name is None:
        if t in (17, 18, 19):
            raise VariantError(f"Variant primitive type {t} (TIME or nanosecond timestamp) has no Spark 4.3 SQL type")
        raise MalformedVariantError(f"unknown primitive type id {t}", pos)
    return name


# --- merging -------------------------------------------------------------------------------------------


def _equals_ignore_case(a: str, b: str) -> bool:
    """Java's ``String.equalsIgnoreCase`` (Spark's default, case-insensitive resolver)."""
    if len(a) != len(b):
        return False
    return all(x == y or x.upper() == y.upper() or x.lower() == y.lower() for x, y in zip(a, b))


def _decimal_wider_than_long(d: DecimalSchema) -> bool:
    return d.precision - d.scale >= 20


def _tightest(a: Schema, b: Schema) -> Schema | None:
    """Spark's ``TypeCoercion.findTightestCommonType`` on the types a Variant can have."""
    if a == b:
        return a
    if a == VOID:
        return b
    if b == VOID:
        return a
    if a == "BIGINT" and isinstance(b, DecimalSchema) and _decimal_wider_than_long(b):
        return b
    if b == "BIGINT" and isinstance(a, DecimalSchema) and _decimal_wider_than_long(a):
        return a
    if a in _NUMERIC_RANK and b in _NUMERIC_RANK:
        return a if _NUMERIC_RANK[a] > _NUMERIC_RANK[b] else b  # type: ignore[index]
    if a in _DATETIME_RANK and b in _DATETIME_RANK:
        return a if _DATETIME_RANK[a] > _DATETIME_RANK[b] else b  # type: ignore[index]
    if isinstance(a, ArraySchema) and isinstance(b, ArraySchema):
        element = _tightest(a.element, b.element)
        return None if element is None else ArraySchema(element)
    if isinstance(a, ObjectSchema) and isinstance(b, ObjectSchema) and len(a.fields) == len(b.fields):
        fields = []
        for (n1, t1), (n2, t2) in zip(a.fields, b.fields):
            if not _equals_ignore_case(n1, n2):
                return None
            t = _tightest(t1, t2)
            if t is None:
                return None
            fields.append((n1, t))
        return ObjectSchema(tuple(fields))
    return None


def _merge_decimals(a: DecimalSchema, b: DecimalSchema) -> Schema:
    scale = max(a.scale, b.scale)
    whole = max(a.precision - a.scale, b.precision - b.scale)
    return "DOUBLE" if whole + scale > 38 else DecimalSchema(whole + scale, scale)


def merge_schemas(a: Schema, b: Schema) -> Schema:
    """The common schema of two schemas (Spark's ``compatibleType(a, b, VariantType)``)."""
    tight = _tightest(a, b)
    if tight is not None:
        return tight
    if isinstance(a, DecimalSchema) and b in ("DOUBLE", "FLOAT") or isinstance(b, DecimalSchema) and a in ("DOUBLE", "FLOAT"):
        return "DOUBLE"
    if isinstance(a, DecimalSchema) and isinstance(b, DecimalSchema):
        return _merge_decimals(a, b)
    if isinstance(a, ObjectSchema) and isinstance(b, ObjectSchema):
        return _merge_objects(a, b)
    if isinstance(a, ArraySchema) and isinstance(b, ArraySchema):
        return ArraySchema(merge_schemas(a.element, b.element))
    if a == "BIGINT" and isinstance(b, DecimalSchema):
        return merge_schemas(_LONG_DECIMAL, b)
    if b == "BIGINT" and isinstance(a, DecimalSchema):
        return merge_schemas(a, _LONG_DECIMAL)
    return VARIANT


def _merge_objects(a: ObjectSchema, b: ObjectSchema) -> ObjectSchema:
    """Merge two key-sorted field lists; fields present in both get the merged type."""
    out: list[tuple[str, Schema]] = []
    i = j = 0
    fa, fb = a.fields, b.fields
    while i < len(fa) and j < len(fb):
        ka, kb = _java_order(fa[i][0]), _java_order(fb[j][0])
        if ka == kb:
            out.append((fa[i][0], merge_schemas(fa[i][1], fb[j][1])))
            i += 1
            j += 1
        elif ka < kb:
            out.append(fa[i])
            i += 1
        else:
            out.append(fb[j])
            j += 1
    out.extend(fa[i:])
    out.extend(fb[j:])
    return ObjectSchema(tuple(out))


# --- text ------------------------------------------------------------------------------------------------


def render_schema(s: Schema) -> str:
    """Spark's text: ``OBJECT<a: BIGINT, `b c`: ARRAY<STRING>>``, ``DECIMAL(5,2)``, ``VOID``..."""
    if isinstance(s, str):
        return s
    if isinstance(s, DecimalSchema):
        return f"DECIMAL({s.precision},{s.scale})"
    if isinstance(s, ArraySchema):
        return f"ARRAY<{render_schema(s.element)}>"
    return "OBJECT<" + ", ".join(f"{quote_identifier(k)}: {render_schema(t)}" for k, t in s.fields) + ">"


def schema_of_variant(v: Variant | None) -> str | None:
    """Spark's ``schema_of_variant``; None (SQL NULL) gives None."""
    if v is None:
        return None
    return render_schema(schema_of(v))


def schema_of_variant_agg(values: Iterable[Variant | None]) -> str:
    """Spark's ``schema_of_variant_agg``: every value's schema merged in order (None skipped);
    no values gives ``VOID``."""
    merged: Schema = VOID
    for v in values:
        if v is not None:
            merged = merge_schemas(merged, schema_of(v))
    return render_schema(merged)
