"""One error tree for varlake: every failure a user can see is a ``VarlakeError``.

Subclasses say *what* went wrong; their messages say *where* (file, column, row,
path, byte offset) so that bad input can be found and fixed.
"""

from __future__ import annotations


class VarlakeError(Exception):
    """Root of every error varlake raises on purpose."""


# --- Spark semantics (varlake.semantics) ------------------------------------------------


class InvalidTimeZoneError(VarlakeError, ValueError):
    """A time-zone id that Spark's ``DateTimeUtils.getZoneId`` (``java.time.ZoneId.of``) refuses."""


class InvalidTypeStringError(VarlakeError, ValueError):
    """A Spark type string (``decimal(10,2)``, ``array<struct<a: int>>``, DDL columns) does not parse."""


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


class VariantTimeZoneError(InvalidTimeZoneError, VariantError):
    """A Variant function was given a time zone Spark refuses."""


class JsonLimitError(JsonParseError):
    """JSON text breaks a limit Spark's ``parse_json`` inherits from Jackson: ``limit`` is
    ``"depth"``, ``"number"``, ``"string"`` or ``"key"``; ``early`` is True when the text was
    refused before all of it was read."""

    def __init__(self, message: str, position: int | None = None, *, limit: str, early: bool = False) -> None:
        super().__init__(message, position)
        self.limit = limit
        self.early = early


class JsonSizeLimitError(VariantSizeLimitError):
    """JSON text would parse to a Variant over Spark's 128 MiB limit; ``part`` is ``"value"`` or
    ``"metadata"``; ``early`` is True when refused before the whole document was encoded."""

    def __init__(self, message: str, *, part: str, early: bool = False) -> None:
        super().__init__(message)
        self.part = part
        self.early = early


class UnknownVariantTypeError(MalformedVariantError):
    """A Variant holds a primitive type id Spark 4.3 does not know (UNKNOWN_PRIMITIVE_TYPE_IN_VARIANT)."""


class InvalidPatchPathError(InvalidPathError):
    """A Variant patch function (``variant_set``, ``variant_delete``...) got a path that does not
    parse or that is the root ``$`` where a field or element is needed (INVALID_VARIANT_PATH)."""

    error_class = "INVALID_VARIANT_PATH"


class VariantPathTypeMismatchError(VariantError):
    """A patch path steps into a value of the wrong kind (a key into a non-object, an index
    into a non-array, an append onto a non-array): Spark's VARIANT_PATH_TYPE_MISMATCH.
    ``path`` is the path text, ``failed_at`` the prefix where it failed, ``function`` Spark's name."""

    error_class = "VARIANT_PATH_TYPE_MISMATCH"

    def __init__(self, path: str, failed_at: str, function: str) -> None:
        super().__init__(
            f"[VARIANT_PATH_TYPE_MISMATCH] The path '{path}' is incompatible with the variant value "
            f"at '{failed_at}' in `{function}`."
        )
        self.path = path
        self.failed_at = failed_at
        self.function = function


class VariantDuplicateKeyError(VariantError):
    """Building a Variant object would give it the same key twice (VARIANT_DUPLICATE_KEY), as
    ``variant_insert`` does for a key that already exists."""

    error_class = "VARIANT_DUPLICATE_KEY"

    def __init__(self, key: str) -> None:
        super().__init__(f"[VARIANT_DUPLICATE_KEY] Failed to build variant because of a duplicate object key `{key}`.")
        self.key = key


# --- Shredding and Parquet ---------------------------------------------------------


class ShreddingError(VarlakeError):
    """A shredding schema or a shredded layout is invalid."""


class InvalidShreddedLayoutError(ShreddingError):
    """A shredded Parquet file breaks the shredding spec (names file, column, row, path)."""


class ShreddingSchemaError(ShreddingError):
    """A shredding schema (Arrow type or Spark DDL text) is invalid or cannot be shredded."""


class ParquetFooterError(VarlakeError):
    """A Parquet footer (thrift ``FileMetaData``) is missing, truncated or cannot be rewritten."""


# --- Hudi merge-on-read log files (varlake.hudi.log_format, varlake.hudi.log_merge) ---------


class HudiLogError(VarlakeError, ValueError):
    """A Hudi log file (``.<fileId>_<instant>.log.<version>_<writeToken>``) cannot be read or merged."""


class HudiLogFormatError(HudiLogError):
    """Log file bytes break the Hudi log format (magic, lengths, header, block content); the
    message names the file and the byte offset."""


class HudiLogUnsupportedError(HudiLogError):
    """A log file uses a Hudi feature varlake does not read (HFile or CDC blocks, Kryo delete
    blocks, log format version 0, partial updates, custom merge modes); names the feature."""


class HudiLogMergeError(HudiLogError):
    """A file slice cannot be merged as asked (a key or ordering column that is missing, log
    records whose columns do not fit the output schema)."""


# --- Tables ------------------------------------------------------------------------


class TableError(VarlakeError):
    """A table, its log or one of its files is invalid or cannot be used."""


class UnsupportedFeatureError(TableError):
    """The table needs a protocol feature varlake does not implement."""


class CommitConflictError(TableError):
    """A concurrent commit conflicts with this one; nothing was written."""


class TableNotFoundError(TableError):
    """No Delta table (no ``_delta_log`` commit) exists at the given location."""


class TableExistsError(TableError):
    """A table was to be created where one already exists."""


class VersionNotFoundError(TableError):
    """A requested table version or timestamp is outside the reconstructable history."""


class CorruptLogError(TableError):
    """A ``_delta_log`` file is missing, unreadable or breaks the Delta protocol.

    ``path`` names the log file (or the missing one) the message is about.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.reason = message


class MissingCommitError(CorruptLogError):
    """A commit JSON needed to reconstruct a version is absent (a gap in the log)."""


class CorruptCommitError(CorruptLogError):
    """A commit JSON is truncated, is not newline-delimited JSON, or holds a malformed action."""


class UnknownActionError(CorruptCommitError):
    """A commit holds an action varlake does not know and cannot safely ignore."""


class CorruptCheckpointError(CorruptLogError):
    """A checkpoint Parquet file cannot be read or does not hold a valid table state."""


class SchemaParseError(TableError):
    """A Delta ``schemaString`` is not valid JSON or not a valid Delta schema."""


class UnsafePathError(TableError):
    """A file path in the log escapes the table root (``..``, foreign absolute path or URI)."""


class InvalidCommitError(TableError):
    """The actions handed to a commit are not a valid Delta commit; nothing was written."""


class PartitionValueError(TableError):
    """A partition column or value cannot be written or read (names column, value and why)."""


class ShreddingConflictError(CommitConflictError):
    """A concurrent commit changed the shredding schemas the files of this write assume."""


class InvalidTablePropertyError(TableError):
    """A ``delta.*`` table property has a value varlake cannot interpret (names key and value)."""


class UnsafeRetentionError(TableError):
    """A vacuum retention shorter than the safe minimum was asked for without ``unsafe_retention=True``."""


class ConstraintViolationError(TableError):
    """A written row breaks a CHECK constraint, a column invariant or a NOT NULL column;
    names the constraint, its expression and the row's values. Nothing was committed."""


class StorageError(VarlakeError):
    """A storage operation failed (names the path)."""


class StorageFileNotFoundError(StorageError, FileNotFoundError):
    """A path read from storage does not exist."""


class UnsupportedStorageError(StorageError, ValueError):
    """A table URI whose scheme varlake has no storage for (names the URI); never taken for a local path."""


class StorageAccessError(StorageError, PermissionError):
    """The store refused the credentials or the permission for an operation (names the URI, never the secret)."""


class StorageBucketNotFoundError(StorageError):
    """The bucket or container of a URI does not exist (names the URI)."""


class StorageUnreachableError(StorageError, ConnectionError):
    """The store's endpoint could not be reached within the retry budget (names the URI and endpoint)."""


class UnsafeStorageError(StorageError):
    """The store does not honour put-if-absent (two creates of one key both succeeded), so concurrent
    commits could overwrite each other; refused unless single-writer mode is chosen explicitly."""


class ExpressionError(VarlakeError):
    """A predicate or expression is invalid."""


class ExpressionParseError(ExpressionError):
    """SQL predicate text does not parse (the message quotes the text and the parser's reason)."""


class UnsupportedExpressionError(ExpressionError):
    """A predicate parses but uses a construct varlake cannot evaluate (names the fragment)."""

    def __init__(self, message: str, fragment: str | None = None) -> None:
        super().__init__(message + (f": {fragment}" if fragment is not None else ""))
        self.fragment = fragment


class UnknownColumnError(ExpressionError):
    """A predicate names a column the table schema does not have (or names it ambiguously)."""


class AmbiguousColumnError(ExpressionError):
    """A bare column name in a MERGE condition or assignment is on both sides (target and
    source); qualify it with the alias."""


class ExpressionTypeError(ExpressionError, TypeError):
    """Types in a predicate do not fit: a literal cannot be coerced, a Variant is compared uncast."""


class ExpressionTimeZoneError(InvalidTimeZoneError, ExpressionTypeError):
    """A predicate was bound or evaluated with a session time zone Spark refuses."""


class ExpressionEvaluationError(ExpressionError):
    """Evaluating a predicate on a row failed, e.g. an ANSI cast of a value that does not convert."""


class DataFileMissingError(TableError):
    """A data file the table's log lists is not in storage."""


class IngestError(VarlakeError):
    """An ingest could not run or its counts do not add up; nothing was committed."""


class ExportError(VarlakeError):
    """A query result cannot be written to the requested output file (format, path)."""


class CorruptDeletionVectorError(TableError):
    """A deletion vector is malformed, missing, fails its size, magic or CRC-32 check, or
    does not match its descriptor's ``cardinality``; names the table, data file and DV."""


class HudiError(TableError):
    """A Hudi table (``.hoodie/``) cannot be read as asked; names the table and what."""


class UnsupportedHudiFeatureError(HudiError, UnsupportedFeatureError):
    """A Hudi table uses a feature varlake does not read (Lance, ORC or HFile base files,
    bootstrap, a table version outside 6..9); names the table and the feature."""


class CorruptHudiTimelineError(HudiError):
    """A Hudi timeline instant or ``hoodie.properties`` cannot be parsed (bad name, bad JSON
    or Avro commit metadata); names the file."""


class HudiInstantNotFoundError(HudiError):
    """A time-travel or incremental read names an instant the timeline cannot serve (before
    the table's first commit, or not a timestamp); names the table and the instant."""


class ColumnMappingError(TableError):
    """A column-mapped table (``delta.columnMapping.mode`` ``name``/``id``) cannot be resolved:
    a field lacks its physical name or id, or an ``id``-mode data file has no field ids."""


class UnsupportedTypeChangeError(UnsupportedFeatureError):
    """A ``delta.typeChanges`` entry (or a data file's column type) is not a type widening
    Delta allows (PROTOCOL.md "Type Widening"); names the field and both types."""


class AppendOnlyTableError(InvalidCommitError):
    """A change would remove rows from a table with ``delta.appendOnly=true`` (a DELETE, an
    UPDATE, a file removed by a commit); nothing was written or committed."""


class ConcurrentDeleteDeleteError(CommitConflictError):
    """A concurrent commit removed or rewrote a data file (any deletion vector) this change
    also removes or rewrites (Delta's ConcurrentDeleteDeleteException); nothing was committed."""


class ConcurrentDeleteReadError(CommitConflictError):
    """A concurrent commit removed or rewrote a data file this change read (Delta's
    ConcurrentDeleteReadException); nothing was committed."""


class ConcurrentAppendError(CommitConflictError):
    """A concurrent commit added data this change's condition may match and did not read
    (Delta's ConcurrentAppendException): any added data under ``Serializable``, data from a
    commit that is not a blind append under ``WriteSerializable``; nothing was committed."""


class MetadataChangedError(CommitConflictError):
    """A concurrent commit changed the table's metadata or protocol (Delta's
    MetadataChangedException / ProtocolChangedException); nothing was committed."""


class MergeCardinalityError(TableError):
    """A MERGE matched one target row with several source rows where a matched clause would
    update or delete it (Delta's DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE)."""



class OptimizeError(TableError):
    """OPTIMIZE cannot run as asked (a ``where`` that is not a partition predicate, a bad
    target file size, a clustering key that cannot be ordered); nothing was written."""


class ClusteringKeyError(OptimizeError):
    """A clustering key (``cluster_by``) is not a column or Variant path with an orderable type."""


class ContentCheckError(OptimizeError):
    """A rewrite's rows differ from the rows it read (an order-independent hash of the logical
    rows, Variants compared by value); nothing was committed."""


class SparkUnavailableError(VarlakeError):
    """The Spark master (``spark://``) or Spark Connect server (``sc://``) a command names
    cannot be reached, or gives the application no executor, within a bounded wait; names the URL."""


class StreamError(VarlakeError):
    """A streaming write cannot start as asked (a DataFrame that is not streaming, an unknown
    trigger, a checkpoint location that is not a local directory); names what and where."""
