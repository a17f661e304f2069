"""Spark/Delta type names as the expression layer sees them, and their type families.

Types are plain canonical strings (Delta schema spelling: ``long``, ``integer``,
``decimal(10,2)``, ``timestamp_ntz`` ...) so that trees stay hashable and printable;
a *family* groups types whose values share one order (all exact numerics compare with
each other), which is what decides whether min/max statistics can prune a predicate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from varlake.errors import ExpressionTypeError

ColumnPath = tuple[str, ...]


class TypeFamily(StrEnum):
    """Groups of Variant primitive (and SQL) types whose values are mutually ordered."""

    EXACT_NUMERIC = "exact_numeric"  # int8..int64, decimal4/8/16
    DOUBLE = "double"
    FLOAT = "float"
    STRING = "string"
    BOOLEAN = "boolean"
    DATE = "date"
    TIMESTAMP = "timestamp"
    TIMESTAMP_NTZ = "timestamp_ntz"
    BINARY = "binary"
    TIME = "time"
    UUID = "uuid"


INTEGRAL_TYPES: Mapping[str, tuple[int, int]] = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}

_ALIASES: Mapping[str, str] = {
    "tinyint": "byte",
    "byte": "byte",
    "smallint": "short",
    "short": "short",
    "int": "integer",
    "integer": "integer",
    "bigint": "long",
    "long": "long",
    "float": "float",
    "real": "float",
    "double": "double",
    "string": "string",
    "text": "string",
    "varchar": "string",
    "char": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ltz": "timestamp",
    "timestamptz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "timestampntz": "timestamp_ntz",
    "binary": "binary",
    "variant": "variant",
    "time": "time",
    "struct": "struct",
    "array": "array",
    "map": "map",
    "void": "void",
}

_DECIMAL = re.compile(r"^(?:decimal|dec|numeric)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?$")
_SIZED_STRING = re.compile(r"^(?:varchar|char)\s*\(\s*\d+\s*\)$")


def normalize_type(name: str) -> str:
    """Canonical Delta spelling of a SQL/Delta type name (``BIGINT`` -> ``long``)."""
    text = name.strip().lower()
    if text in _ALIASES:
        return _ALIASES[text]
    match = _DECIMAL.match(text)
    if match:
        precision = int(match.group(1) or 10)
        scale = int(match.group(2) or 0)
        if not 1 <= precision <= 38 or scale > precision:
            raise ExpressionTypeError(f"invalid decimal type {name!r}: precision 1..38, scale <= precision")
        return f"decimal({precision},{scale})"
    if _SIZED_STRING.match(text):
        return "string"
    for prefix in ("struct<", "array<", "map<"):
        if text.startswith(prefix):
            return prefix[:-1]
    raise ExpressionTypeError(f"unsupported type {name!r}")


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


def family_of(type_name: str) -> TypeFamily | None:
    """Family of a canonical SQL type; None for types stats never describe (variant, struct ...)."""
    if type_name in INTEGRAL_TYPES or type_name.startswith("decimal("):
        return TypeFamily.EXACT_NUMERIC
    try:
        family = TypeFamily(type_name)
    except ValueError:
        return None
    return None if family is TypeFamily.UUID else family


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
