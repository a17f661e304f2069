"""Spark/Delta type names as the expression layer sees them, and their type families.

Types are plain canonical strings (Delta schema spelling: ``long``, ``integer``,
``decimal(10,2)``, ``timestamp_ntz`` ...) so that trees stay hashable and printable;
a *family* (``TypeFamily``, the Variant spec's equivalence classes, owned by the codec)
groups types whose values share one order (all exact numerics compare with each other),
which is what decides whether min/max statistics can prune a predicate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from varlake.errors import ExpressionTypeError, InvalidTypeStringError
from varlake.semantics.numbers import INTEGRAL_RANGES
from varlake.semantics.types import DELTA_NAMES, SparkType, parse_type
from varlake.variant.constants import TypeFamily

ColumnPath = tuple[str, ...]


# Delta's names of the integral types and their ranges.
INTEGRAL_TYPES: Mapping[str, tuple[int, int]] = {DELTA_NAMES[n]: r for n, r in INTEGRAL_RANGES.items()}

# Spellings sqlglot gives types that are not Spark's own (``TEXT``, ``TIMESTAMPNTZ``...).
_SQLGLOT_SPELLINGS: Mapping[str, str] = {
    "text": "string",
    "varchar": "string",
    "char": "string",
    "timestamptz": "timestamp",
    "timestampntz": "timestamp_ntz",
    "void": "void",
    "struct": "struct",  # Delta schema JSON names nested types by their kind
    "array": "array",
    "map": "map",
}


def delta_type_name(t: SparkType) -> str:
    """Delta's canonical spelling of a parsed Spark type (``bigint`` -> ``long``); nested
    types are named by their kind only (``struct``, ``array``, ``map``)."""
    if t.name == "decimal":
        return f"decimal({t.precision},{t.scale})"
    if t.name in ("struct", "array", "map", "variant", "time"):
        return t.name
    return DELTA_NAMES.get(t.name, t.name)


def normalize_type(name: str) -> str:
    """Canonical Delta spelling of a SQL/Delta type name (``BIGINT`` -> ``long``)."""
    text = name.strip()
    low = text.lower()
    if low in _SQLGLOT_SPELLINGS:
        return _SQLGLOT_SPELLINGS[low]
    try:
        return delta_type_name(parse_type(text))
    except InvalidTypeStringError as exc:
        for prefix in ("struct<", "array<", "map<"):
            if low.startswith(prefix):
                return prefix[:-1]
        raise ExpressionTypeError(f"unsupported type {name!r}: {exc}") from None


def decimal_params(type_name: str) -> tuple[int, int] | None:
    """``(precision, scale)`` of a canonical decimal type, else None."""
    if not type_name.startswith("decimal("):
        return None
    precision, scale = type_name[8:-1].split(",")
    return int(precision), int(scale)


def is_integral(type_name: str) -> bool:
    return type_name in INTEGRAL_TYPES


def is_numeric(type_name: str) -> bool:
    return type_name in INTEGRAL_TYPES or type_name in ("float", "double") or type_name.startswith("decimal(")


#: Canonical SQL type name -> its family, for the types statistics describe (exact numerics
#: by ``INTEGRAL_TYPES`` and ``decimal(``; UUID, Variant and nested types have none).
_FAMILY_OF_TYPE: Mapping[str, TypeFamily] = {
    "double": TypeFamily.DOUBLE,
    "float": TypeFamily.FLOAT,
    "string": TypeFamily.STRING,
    "boolean": TypeFamily.BOOLEAN,
    "date": TypeFamily.DATE,
    "timestamp": TypeFamily.TIMESTAMP,
    "timestamp_ntz": TypeFamily.TIMESTAMP_NTZ,
    "binary": TypeFamily.BINARY,
    "time": TypeFamily.TIME,
}


def family_of(type_name: str) -> TypeFamily | None:
    """Family of a canonical SQL type; None for types stats never describe (variant, struct ...)."""
    if type_name in INTEGRAL_TYPES or type_name.startswith("decimal("):
        return TypeFamily.EXACT_NUMERIC
    return _FAMILY_OF_TYPE.get(type_name)


def flatten_delta_schema(schema: Mapping[str, Any]) -> dict[ColumnPath, str]:
    """Map every field path of a Delta schema (parsed ``schemaString``) to its canonical type.

    Struct fields are descended into (the struct itself maps to ``struct``); arrays and
    maps are leaves, because Delta keeps no statistics inside them.
    """
    out: dict[ColumnPath, str] = {}

    def walk(fields: Any, prefix: ColumnPath) -> None:
        for field in fields:
            path = (*prefix, str(field["name"]))
            dtype = field["type"]
            if isinstance(dtype, Mapping):
                kind = str(dtype.get("type"))
                out[path] = normalize_type(kind)
                if kind == "struct":
                    walk(dtype.get("fields", ()), path)
            else:
                out[path] = normalize_type(str(dtype))

    walk(schema.get("fields", ()), ())
    return out
