"""varlake: lakehouse tables for semi-structured data, with Variant as a first-class type."""

from __future__ import annotations

from varlake.errors import VarlakeError
from varlake.variant import (
    BasicType,
    PrimitiveType,
    TimestampNanos,
    TypeFamily,
    Variant,
    VariantPath,
    decode_variant_stat,
    encode_variant_stat,
    parse_json,
    parse_shorthand,
    to_json,
    try_parse_json,
)

__version__ = "0.1.0"

__all__ = [
    "BasicType",
    "PrimitiveType",
    "TimestampNanos",
    "TypeFamily",
    "Variant",
    "VariantPath",
    "VarlakeError",
    "decode_variant_stat",
    "encode_variant_stat",
    "parse_json",
    "parse_shorthand",
    "to_json",
    "try_parse_json",
]
