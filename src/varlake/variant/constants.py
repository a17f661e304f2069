"""Constants of the Parquet Variant binary encoding (VariantEncoding.md)."""

from __future__ import annotations

from enum import IntEnum


class BasicType(IntEnum):
    """The two low bits of every value header byte."""

    PRIMITIVE = 0
    SHORT_STRING = 1
    OBJECT = 2
    ARRAY = 3


class PrimitiveType(IntEnum):
    """Primitive type ids (the six high bits of a primitive's header byte)."""

    NULL = 0
    TRUE = 1
    FALSE = 2
    INT8 = 3
    INT16 = 4
    INT32 = 5
    INT64 = 6
    DOUBLE = 7
    DECIMAL4 = 8
    DECIMAL8 = 9
    DECIMAL16 = 10
    DATE = 11
    TIMESTAMP = 12
    TIMESTAMP_NTZ = 13
    FLOAT = 14
    BINARY = 15
    STRING = 16
    TIME = 17
    TIMESTAMP_NANOS = 18
    TIMESTAMP_NTZ_NANOS = 19
    UUID = 20


class TypeFamily(IntEnum):
    """The spec's equivalence classes: values of one family compare logically.

    The one type-family vocabulary: the codec's (``Variant.type_family``) and the
    expression layer's (``varlake.expr.family_of``, statistics bounds) -- SQL types map
    onto the same classes, NULL, OBJECT and ARRAY aside."""

    NULL = 0
    BOOLEAN = 1
    EXACT_NUMERIC = 2
    DOUBLE = 3
    FLOAT = 4
    DATE = 5
    TIMESTAMP = 6
    TIMESTAMP_NTZ = 7
    BINARY = 8
    STRING = 9
    TIME = 10
    UUID = 11
    OBJECT = 12
    ARRAY = 13


FAMILY_OF_PRIMITIVE: dict[int, TypeFamily] = {
    PrimitiveType.NULL: TypeFamily.NULL,
    PrimitiveType.TRUE: TypeFamily.BOOLEAN,
    PrimitiveType.FALSE: TypeFamily.BOOLEAN,
    PrimitiveType.INT8: TypeFamily.EXACT_NUMERIC,
    PrimitiveType.INT16: TypeFamily.EXACT_NUMERIC,
    PrimitiveType.INT32: TypeFamily.EXACT_NUMERIC,
    PrimitiveType.INT64: TypeFamily.EXACT_NUMERIC,
    PrimitiveType.DOUBLE: TypeFamily.DOUBLE,
    PrimitiveType.DECIMAL4: TypeFamily.EXACT_NUMERIC,
    PrimitiveType.DECIMAL8: TypeFamily.EXACT_NUMERIC,
    PrimitiveType.DECIMAL16: TypeFamily.EXACT_NUMERIC,
    PrimitiveType.DATE: TypeFamily.DATE,
    PrimitiveType.TIMESTAMP: TypeFamily.TIMESTAMP,
    PrimitiveType.TIMESTAMP_NTZ: TypeFamily.TIMESTAMP_NTZ,
    PrimitiveType.FLOAT: TypeFamily.FLOAT,
    PrimitiveType.BINARY: TypeFamily.BINARY,
    PrimitiveType.STRING: TypeFamily.STRING,
    PrimitiveType.TIME: TypeFamily.TIME,
    PrimitiveType.TIMESTAMP_NANOS: TypeFamily.TIMESTAMP,
    PrimitiveType.TIMESTAMP_NTZ_NANOS: TypeFamily.TIMESTAMP_NTZ,
    PrimitiveType.UUID: TypeFamily.UUID,
}

METADATA_VERSION = 1
MAX_SHORT_STRING = 63
MAX_DECIMAL4_PRECISION = 9
MAX_DECIMAL8_PRECISION = 18
MAX_DECIMAL16_PRECISION = 38
SIZE_LIMIT = 128 * 1024 * 1024
"""Spark's limit for either half of a Variant, in bytes (``VariantUtil.SIZE_LIMIT``, 128 MiB):
``VariantBuilder`` refuses a value whose buffer would grow past it and metadata larger than it."""

# Jackson's ``StreamReadConstraints`` defaults (Jackson 2.21, Spark 4.3 creates its JsonFactory
# with them): the limits Spark's ``parse_json`` enforces on JSON text, each checked against
# Spark 4.3 by tests/variant/test_json_limits.py.
MAX_JSON_DEPTH = 1000
"""Deepest nesting of arrays and objects (``DEFAULT_MAX_DEPTH``); 1001 levels are an error."""
MAX_JSON_NUMBER_DIGITS = 1000
"""Longest number, in characters (``DEFAULT_MAX_NUM_LEN``; see json_parse for how the digits count)."""
MAX_JSON_STRING_LENGTH = 20_000_000
"""Longest string value, in UTF-16 code units (``DEFAULT_MAX_STRING_LEN``)."""
MAX_JSON_KEY_LENGTH = 50_000
"""Longest object key, in UTF-16 code units (``DEFAULT_MAX_NAME_LEN``)."""


def primitive_header(type_id: int) -> int:
    """Header byte of a primitive value."""
    return type_id << 2


def int_size(value: int) -> int:
    """Bytes needed for an unsigned offset/id (1-4), as Spark chooses them."""
    if value <= 0xFF:
        return 1
    if value <= 0xFFFF:
        return 2
    if value <= 0xFFFFFF:
        return 3
    return 4
