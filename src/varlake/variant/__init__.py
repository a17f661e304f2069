"""The Variant codec: binary encoding, JSON in and out, paths and Spark's functions.

Layers kept apart (as arrow-rs ``parquet-variant`` does): ``decoder``/``encoder``
work on raw bytes, ``value`` wraps them in the immutable ``Variant``,
``json_parse``/``json_render`` adapt JSON, ``path`` parses paths, ``functions``
and ``schema`` implement Spark's SQL functions.
"""

from __future__ import annotations

from varlake.errors import VariantError
from varlake.variant.constants import BasicType, PrimitiveType, TypeFamily
from varlake.variant.json_parse import parse_json_parts
from varlake.variant.path import VariantPath, parse_shorthand
from varlake.variant.temporal import Float32, TimestampNanos
from varlake.variant.value import Variant
from varlake.variant.z85 import decode_variant_stat, encode_variant_stat, z85_decode, z85_encode


def parse_json(text: str | bytes, *, allow_duplicate_keys: bool = False) -> Variant:
    """Parse JSON text into a Variant, byte-identical to Spark 4.3's ``parse_json``."""
    metadata, value = parse_json_parts(text, allow_duplicate_keys)
    return Variant.trusted(metadata, value)


def try_parse_json(text: str | bytes | None, *, allow_duplicate_keys: bool = False) -> Variant | None:
    """``parse_json`` that returns None for invalid JSON (Spark's ``try_parse_json``)."""
    if text is None:
        return None
    try:
        return parse_json(text, allow_duplicate_keys=allow_duplicate_keys)
    except VariantError:
        return None


def to_json(variant: Variant | None, zone: str = "UTC") -> str | None:
    """Spark's ``to_json`` of a Variant (None stays None)."""
    return None if variant is None else variant.to_json(zone)


__all__ = [
    "BasicType",
    "Float32",
    "PrimitiveType",
    "TimestampNanos",
    "TypeFamily",
    "Variant",
    "VariantPath",
    "decode_variant_stat",
    "encode_variant_stat",
    "parse_json",
    "parse_shorthand",
    "to_json",
    "try_parse_json",
    "z85_decode",
    "z85_encode",
]
