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

from varlake.io.parquet_read import read_parquet

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """Heavier layers load on first use (``varlake.Table`` pulls in the table layer)."""
    if name in ("Table", "Scan"):
        from varlake import table

        return getattr(table, name)
    raise AttributeError(f"module 'varlake' has no attribute {name!r}")


__all__ = [
    "BasicType",
    "Scan",
    "Table",
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
    "read_parquet",
    "to_json",
    "try_parse_json",
]
