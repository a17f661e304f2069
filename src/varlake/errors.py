"""One error tree for varlake: every failure a user can see is a ``VarlakeError``.

Subclasses say *what* went wrong; their messages say *where* (file, column, row,
path, byte offset) so that bad input can be found and fixed.
"""

from __future__ import annotations


class VarlakeError(Exception):
    """Root of every error varlake raises on purpose."""


# --- Variant codec -----------------------------------------------------------------


class VariantError(VarlakeError, ValueError):
    """A Variant value, its JSON text or an operation on it is invalid."""


class MalformedVariantError(VariantError):
    """Variant bytes do not follow the Parquet Variant encoding."""

    def __init__(self, message: str, offset: int | None = None, part: str = "value") -> None:
        where = f" ({part} byte {offset})" if offset is not None else f" ({part})"
        super().__init__(message + where)
        self.offset = offset
        self.part = part


class VariantSizeLimitError(VariantError):
    """A Variant would exceed Spark's size limit (128 MiB for value or metadata)."""


class JsonParseError(VariantError):
    """JSON text could not be turned into a Variant."""

    def __init__(self, message: str, position: int | None = None) -> None:
        where = f" at character {position}" if position is not None else ""
        super().__init__(message + where)
        self.position = position


class DuplicateKeyError(JsonParseError):
    """A JSON object has the same key twice and duplicates are not allowed."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate object key {key!r}")
        self.key = key


class UnsupportedValueError(VariantError, TypeError):
    """A Python value has no Variant representation."""


class InvalidPathError(VariantError):
    """A Variant path expression does not parse."""


class VariantCastError(VariantError):
    """A Variant value cannot be cast to the requested type (``variant_get``)."""


# --- Shredding and Parquet ---------------------------------------------------------


class ShreddingError(VarlakeError):
    """A shredding schema or a shredded layout is invalid."""


class InvalidShreddedLayoutError(ShreddingError):
    """A shredded Parquet file breaks the shredding spec (names file, column, row, path)."""


# --- Tables ------------------------------------------------------------------------


class TableError(VarlakeError):
    """A table, its log or one of its files is invalid or cannot be used."""


class UnsupportedFeatureError(TableError):
    """The table needs a protocol feature varlake does not implement."""


class CommitConflictError(TableError):
    """A concurrent commit conflicts with this one; nothing was written."""


class ExpressionError(VarlakeError):
    """A predicate or expression is invalid."""
