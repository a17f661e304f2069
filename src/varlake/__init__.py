"""varlake: lakehouse tables for semi-structured data, with Variant as a first-class type.

The top level is the user's surface, one name per concept:

- the codec: ``Variant``, ``parse_json``, ``try_parse_json``, ``to_json``, paths, and the
  Variant type-id enums (``BasicType``, ``PrimitiveType``, ``TypeFamily``; Delta's schema
  types stay in ``varlake.delta.schema``);
- Spark's Variant function set on Python values: ``variant_get``, ``try_variant_get``,
  ``is_variant_null``, ``schema_of_variant``, ``schema_of_variant_agg``,
  ``variant_explode``, ``variant_explode_outer``, ``cast_to_variant`` and the patch
  functions (``variant_set``, ``variant_insert``, ``variant_delete``, ...);
- files and tables: ``read_parquet``, ``write_parquet``, ``infer_shredding_schema``,
  ``Table`` and ``Scan`` (the table layer loads on first use);
- Arrow and pandas: ``VariantExtensionType`` (Arrow's canonical ``arrow.parquet.variant``,
  which varlake's Arrow output carries), ``with_variant_extension`` /
  ``without_variant_extension`` (tag or untag Variant columns), ``register_variant_extension``
  and the pandas dtype ``VariantDtype`` (loads pandas on first use).
"""

from __future__ import annotations

from importlib import import_module

from varlake.errors import VarlakeError
from varlake.io.parquet_read import read_parquet
from varlake.shred.arrow_extension import VariantExtensionType, register_variant_extension
from varlake.shred.variant_columns import with_variant_extension, without_variant_extension
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
from varlake.variant.functions import (
    cast_to_variant,
    is_variant_null,
    try_variant_get,
    variant_explode,
    variant_explode_outer,
    variant_get,
)
from varlake.variant.functions import (
    is_valid_variant,
    try_variant_array_append,
    try_variant_insert,
    try_variant_set,
    variant_array_append,
    variant_delete,
    variant_insert,
    variant_set,
    variant_strip_nulls,
)
from varlake.variant.schema import schema_of_variant, schema_of_variant_agg

__version__ = "0.1.0"

#: names loaded on first use: (module, attribute)
_LAZY = {
    "Table": ("varlake.table", "Table"),
    "Scan": ("varlake.table", "Scan"),
    "write_parquet": ("varlake.io.parquet_write", "write_parquet"),
    "infer_shredding_schema": ("varlake.shred.infer", "infer_shredding_schema"),
    "VariantDtype": ("varlake.shred.arrow_extension", "VariantDtype"),
}

def __getattr__(name: str) -> object:
    """Heavier layers load on first use (``varlake.Table`` pulls in the table layer)."""
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(import_module(module), attr)
    raise AttributeError(f"module 'varlake' has no attribute {name!r}")


__all__ = [
    "BasicType",
    "PrimitiveType",
    "Scan",
    "Table",
    "TimestampNanos",
    "TypeFamily",
    "Variant",
    "VariantDtype",
    "VariantExtensionType",
    "VariantPath",
    "VarlakeError",
    "cast_to_variant",
    "decode_variant_stat",
    "encode_variant_stat",
    "infer_shredding_schema",
    "is_valid_variant",
    "is_variant_null",
    "parse_json",
    "parse_shorthand",
    "read_parquet",
    "register_variant_extension",
    "schema_of_variant",
    "schema_of_variant_agg",
    "to_json",
    "try_parse_json",
    "try_variant_array_append",
    "try_variant_get",
    "try_variant_insert",
    "try_variant_set",
    "variant_array_append",
    "variant_delete",
    "variant_explode",
    "variant_explode_outer",
    "variant_get",
    "variant_insert",
    "variant_set",
    "variant_strip_nulls",
    "with_variant_extension",
    "without_variant_extension",
    "write_parquet",
]
