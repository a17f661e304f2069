"""Protocol and table-feature checks: what varlake may read, write and must declare.

Reading needs every *reader* feature implemented; writing needs every *writer*
feature implemented too (PROTOCOL.md "Table Features"). Some writer features are
harmless until *active* (e.g. ``generatedColumns`` with no column carrying a
generation expression): varlake allows writes to such tables and refuses them once
the feature is active, naming it. CHECK constraints and invariants are honoured:
writers check every row (``varlake.write.staging.constraints``). Column-mapped tables are
written (``delta.column_mapping``).

``required_protocol`` is the one place a new (or changed) table's protocol is decided:
every property- or column-driven feature (``_needed_features``: column mapping, deletion
vectors, type widening, CHECK constraints, invariants, change data feed, row tracking,
append-only, Variant, timestamp_ntz, in-commit timestamps), the smallest legacy version
when one suffices (as Delta picks), table features otherwise.

It also owns ``varlake.compatibility`` (``compatibility``): a table created with
``varlake.compatibility=deltalake`` starts with the properties other readers need
(``compatibility_properties``: no deletion vectors, so DELETE/UPDATE/MERGE rewrite files;
no Variant shredding) and ``validate_metadata`` refuses every later protocol or
property change that would give it a reader feature outside
``COMPATIBILITY_READER_FEATURES`` -- whichever writer (Python, Spark, DML, OPTIMIZE)
commits it. The Parquet side (Variant groups written without the ``VARIANT`` annotation,
which Polars cannot parse) is ``annotates_variant``.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from varlake.delta import config
from varlake.delta import constants as C
from varlake.delta.actions import Metadata, Protocol
from varlake.delta.schema import (
    top_level_types,
    ArrayType,
    MapType,
    StructType,
    VariantType,
    contains_primitive,
    contains_variant,
    iter_fields,
    parse_schema,
)
from varlake.delta.column_mapping import check_assigned, mapping_mode, requested_mode
from varlake.delta.type_widening import TYPE_CHANGES_KEY, validate_type_changes
from varlake.errors import (
    ColumnMappingError,
    InvalidCommitError,
    InvalidTablePropertyError,
    PartitionValueError,
    UnsupportedFeatureError,
)
from varlake.semantics import partition_values

__all__ = [
    "COMPATIBILITY_READER_FEATURES",
    "annotates_variant",
    "check_readable",
    "compatibility",
    "compatibility_properties",
    "check_writable",
    "legacy_writer_features",
    "required_protocol",
    "validate_metadata",
    "with_writer_features",
]

MAX_READER_VERSION = 3
PROP_ENABLE_TYPE_WIDENING = "delta.enableTypeWidening"
MAX_WRITER_VERSION = 7

#: Reader features whose read-side requirements varlake meets.
READER_SUPPORTED = frozenset(
    {
        C.VARIANT_TYPE, C.VARIANT_SHREDDING, C.TIMESTAMP_NTZ, C.VACUUM_PROTOCOL_CHECK, C.V2_CHECKPOINT,
        C.DELETION_VECTORS, C.COLUMN_MAPPING, C.TYPE_WIDENING,
    }
)  # fmt: skip

#: Writer-only features: nothing for a reader to do, so they never block reading.
WRITER_ONLY = frozenset(
    {
        C.APPEND_ONLY,
        C.INVARIANTS,
        C.CHECK_CONSTRAINTS,
        C.GENERATED_COLUMNS,
        C.ALLOW_COLUMN_DEFAULTS,
        C.CHANGE_DATA_FEED,
        C.IDENTITY_COLUMNS,
        C.ROW_TRACKING,
        C.DOMAIN_METADATA_FEATURE,
        C.ICEBERG_COMPAT_V1,
        C.ICEBERG_COMPAT_V2,
        C.CLUSTERING,
        C.IN_COMMIT_TIMESTAMP,
        C.COLLATIONS,
    }
)

#: Writer features varlake implements outright (appendOnly and changeDataFeed are
#: enforced per commit by the transaction; domains are preserved in checkpoints).
#: deletionVectors: DELETE/UPDATE/MERGE write DVs (write.row_changes); overwrites remove logical files with their DV,
#: checkpoints keep descriptors and vacuum keeps referenced DV files; typeWidening: writes use
#: the current (wide) types and never change one, delta.typeChanges is kept as it is;
#: columnMapping: files under physical names with field ids, partition values and stats
#: keyed by physical names (``delta.column_mapping``).
#: clustering: appended files need no clustering (Delta's own appends are not clustered either)
#: and carry statistics for the first ``delta.dataSkippingNumIndexedCols`` leaves, where Delta
#: requires clustering columns to be; domains are kept, and OPTIMIZE with keys writes
#: ``delta.clustering`` (``write.maintenance.clustering``).
WRITER_SUPPORTED = READER_SUPPORTED | frozenset(
    {C.APPEND_ONLY, C.CHANGE_DATA_FEED, C.DOMAIN_METADATA_FEATURE, C.IN_COMMIT_TIMESTAMP, C.CLUSTERING}
) | {C.INVARIANTS, C.CHECK_CONSTRAINTS}  # every written row is checked (varlake.write.staging.constraints)


#: ``varlake.compatibility`` values -> the reader table features those readers read, as
#: probed (tests/table/test_reader_compatibility.py): ``deltalake`` 1.6's
#: ``DeltaTable.to_pyarrow_table`` reads reader version 3 only with ``timestampNtz`` and
#: ``variantType``; it refuses ``deletionVectors`` (Polars 1.44 reads them), both refuse
#: ``variantShredding`` and ``typeWidening``, and both read a column-mapped table (name or
#: id mode, reader version 2) as all nulls -- a wrong answer, so it is refused too.
COMPATIBILITY_READER_FEATURES: dict[str, frozenset[str]] = {
    "deltalake": frozenset({C.TIMESTAMP_NTZ, C.VARIANT_TYPE}),
}

#: What a new table of each compatibility starts with (a property the caller sets wins,
#: and is then checked like any other).
_COMPATIBILITY_DEFAULTS: dict[str, dict[str, str]] = {
    "deltalake": {C.PROP_ENABLE_DELETION_VECTORS: "false", C.PROP_ENABLE_VARIANT_SHREDDING: "false"},
}

#: The property that brings in each reader feature (for the refusal's message).
_FEATURE_PROPERTY = {  # (columnMapping: delta.columnMapping.mode, named in its own message)
    C.DELETION_VECTORS: C.PROP_ENABLE_DELETION_VECTORS,
    C.VARIANT_SHREDDING: C.PROP_ENABLE_VARIANT_SHREDDING,
    C.TYPE_WIDENING: PROP_ENABLE_TYPE_WIDENING,
}


def compatibility(cfg: Mapping[str, str]) -> str | None:
    """The table's ``varlake.compatibility`` (``None``: none); an unknown value raises
    ``InvalidTablePropertyError``."""
    value = cfg.get(C.PROP_COMPATIBILITY)
    if value is None or value.strip() == "":
        return None
    name = value.strip().lower()
    if name not in COMPATIBILITY_READER_FEATURES:
        known = ", ".join(sorted(COMPATIBILITY_READER_FEATURES))
        raise InvalidTablePropertyError(f"table property {C.PROP_COMPATIBILITY}={value!r} must be one of: {known}")
    return name


def compatibility_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """``properties`` of a new table with its compatibility's defaults filled in (the same
    properties when it has none)."""
    out = dict(properties)
    name = compatibility(out)
    for key, value in _COMPATIBILITY_DEFAULTS.get(name or "", {}).items():
        out.setdefault(key, value)
    return out


def annotates_variant(cfg: Mapping[str, str]) -> bool:
    """Whether new data files mark Variant groups with Parquet's ``VARIANT`` logical type:
    not on a compatibility table (Polars 1.44 fails on the annotation: "LogicalType union
    has no variant set"; unannotated, it and deltalake read a Variant as
    ``struct<metadata: binary, value: binary>``, and varlake still reads it as a Variant)."""
    return compatibility(cfg) is None


def _check_compatibility(reader: set[str], protocol: Protocol, cfg: dict[str, str], where: str) -> None:
    name = compatibility(cfg)
    if name is None:
        return
    declared = {C.canonical_feature(f) for f in _reader_features(protocol)}
    for feature in sorted((reader | declared) - COMPATIBILITY_READER_FEATURES[name]):
        prop = _FEATURE_PROPERTY.get(feature)
        cause = f" (set by {prop}=true)" if prop and config.is_true(cfg, prop) else ""
        if feature == C.COLUMN_MAPPING:
            cause = " (they read a column-mapped table's columns as nulls)"
        raise InvalidTablePropertyError(
            f"{where}: the table has {C.PROP_COMPATIBILITY}={name}, whose readers cannot read "
            f"reader table feature {feature}{cause}"
        )


def legacy_writer_features(writer_version: int) -> frozenset[str]:
    """Features implied by a pre-table-features writer version (PROTOCOL.md table)."""
    implied: list[str] = []
    if writer_version >= 2:
        implied += [C.APPEND_ONLY, C.INVARIANTS]
    if writer_version >= 3:
        implied += [C.CHECK_CONSTRAINTS]
    if writer_version >= 4:
        implied += [C.CHANGE_DATA_FEED, C.GENERATED_COLUMNS]
    if writer_version >= 5:
        implied += [C.COLUMN_MAPPING]
    if writer_version >= 6:
        implied += [C.IDENTITY_COLUMNS]
    return frozenset(implied)


def _writer_features(protocol: Protocol) -> frozenset[str]:
    if protocol.min_writer_version >= 7:
        return protocol.writer_feature_set
    return legacy_writer_features(protocol.min_writer_version)


def _unknown(names: Iterable[str]) -> list[str]:
    return sorted(n for n in names if C.canonical_feature(n) not in C.KNOWN_FEATURES)


def check_readable(protocol: Protocol, metadata: Metadata, where: str = "table") -> None:
    """Raise ``UnsupportedFeatureError`` unless varlake can read this table correctly."""
    if protocol.min_reader_version > MAX_READER_VERSION:
        raise UnsupportedFeatureError(
            f"{where}: reader version {protocol.min_reader_version} is newer than varlake supports ({MAX_READER_VERSION})"
        )
    if protocol.min_reader_version == 3:
        unknown = _unknown(protocol.reader_features or ())
        if unknown:
            raise UnsupportedFeatureError(f"{where}: unknown reader table feature(s) {', '.join(unknown)}")
        missing = sorted(protocol.reader_feature_set - READER_SUPPORTED - WRITER_ONLY)
        if missing:
            raise UnsupportedFeatureError(
                f"{where}: reader table feature(s) not supported by varlake: {', '.join(missing)}"
            )
    try:
        mapping_mode(protocol, metadata)  # name and id modes are read (delta.column_mapping)
    except ColumnMappingError as exc:
        raise UnsupportedFeatureError(f"{where}: {exc}") from None
    if TYPE_CHANGES_KEY in metadata.schema_string:  # validated only where recorded (parsing costs)
        validate_type_changes(parse_schema(metadata.schema_string, f"{where} metaData.schemaString"), where)


def check_writable(protocol: Protocol, metadata: Metadata, where: str = "table") -> None:
    """Raise ``UnsupportedFeatureError`` unless varlake can write this table correctly."""
    check_readable(protocol, metadata, where)
    if protocol.min_writer_version > MAX_WRITER_VERSION:
        raise UnsupportedFeatureError(
            f"{where}: writer version {protocol.min_writer_version} is newer than varlake supports ({MAX_WRITER_VERSION})"
        )
    unknown = _unknown(protocol.writer_features or ())
    if unknown:
        raise UnsupportedFeatureError(f"{where}: unknown writer table feature(s) {', '.join(unknown)}")
    features = _writer_features(protocol)
    for feature in sorted(features - WRITER_SUPPORTED):
        reason = _active_reason(feature, metadata)
        if reason is not None:
            raise UnsupportedFeatureError(f"{where}: writer table feature {feature} is not supported ({reason})")


def _active_reason(feature: str, metadata: Metadata) -> str | None:
    """Why a writer feature varlake does not implement is active here (``None``: inactive)."""
    cfg = metadata.configuration
    if feature in (C.GENERATED_COLUMNS, C.ALLOW_COLUMN_DEFAULTS, C.IDENTITY_COLUMNS, C.COLLATIONS):
        keys = {
            C.GENERATED_COLUMNS: (C.COL_GENERATION_EXPRESSION,),
            C.ALLOW_COLUMN_DEFAULTS: (C.COL_CURRENT_DEFAULT,),
            C.IDENTITY_COLUMNS: (C.COL_IDENTITY_PREFIX,),
            C.COLLATIONS: (C.COL_COLLATIONS,),
        }[feature]
        for f in iter_fields(parse_schema(metadata.schema_string)):
            if any(k.startswith(key) for k in f.metadata for key in keys):
                return f"column {f.name!r} uses it"
        return None
    if feature == C.ROW_TRACKING:
        return None if config.is_true(cfg, "delta.rowTrackingSuspended") else "row IDs would have to be assigned"
    if feature == C.ICEBERG_COMPAT_V1:
        return "enabled" if config.is_true(cfg, C.PROP_ENABLE_ICEBERG_V1) else None
    if feature == C.ICEBERG_COMPAT_V2:
        return "enabled" if config.is_true(cfg, C.PROP_ENABLE_ICEBERG_V2) else None
    return "varlake does not implement it"


def _reader_features(protocol: Protocol) -> frozenset[str]:
    if protocol.min_reader_version >= 3:
        return protocol.reader_feature_set
    return frozenset({C.COLUMN_MAPPING}) if protocol.min_reader_version == 2 else frozenset()


def _needed_features(schema: StructType, cfg: dict[str, str]) -> tuple[set[str], set[str]]:
    """(reader-and-writer, writer) features the schema and properties need: one place for
    every property- or column-driven feature, as Delta enables them."""
    reader: set[str] = set()
    writer: set[str] = set()
    try:
        mapped = requested_mode(cfg) != "none"
    except ColumnMappingError as exc:
        raise InvalidCommitError(str(exc)) from None
    if mapped:
        reader.add(C.COLUMN_MAPPING)
    if config.is_true(cfg, PROP_ENABLE_TYPE_WIDENING):
        reader.add(C.TYPE_WIDENING)
    if any(key.startswith(C.PROP_CONSTRAINT_PREFIX) for key in cfg):
        writer.add(C.CHECK_CONSTRAINTS)
    if any(C.COL_INVARIANTS in f.metadata for f in iter_fields(schema)):
        writer.add(C.INVARIANTS)
    if config.is_true(cfg, C.PROP_ENABLE_CDF):
        writer.add(C.CHANGE_DATA_FEED)
    if config.is_true(cfg, C.PROP_ENABLE_ROW_TRACKING):
        writer |= {C.ROW_TRACKING, C.DOMAIN_METADATA_FEATURE}
    shredding = config.is_true(cfg, C.PROP_ENABLE_VARIANT_SHREDDING)
    if contains_variant(schema) or shredding:
        reader.add(C.VARIANT_TYPE)
    if shredding:
        reader.add(C.VARIANT_SHREDDING)
    if contains_primitive(schema, "timestamp_ntz"):
        reader.add(C.TIMESTAMP_NTZ)
    if config.in_commit_timestamps_enabled(cfg):
        writer.add(C.IN_COMMIT_TIMESTAMP)
    if config.is_true(cfg, C.PROP_APPEND_ONLY):
        writer.add(C.APPEND_ONLY)
    if config.is_true(cfg, C.PROP_ENABLE_DELETION_VECTORS):  # PROTOCOL.md "Deletion Vectors"
        reader.add(C.DELETION_VECTORS)
    return reader, writer | reader


def required_protocol(
    schema: StructType, configuration: dict[str, str] | None = None, current: Protocol | None = None
) -> Protocol:
    """The smallest protocol that supports ``schema`` + ``configuration``, never below ``current``.

    A Variant column anywhere needs reader 3 / writer 7 with ``variantType``;
    ``delta.enableVariantShredding=true`` adds ``variantShredding``. Upgrading keeps
    every feature the old protocol had (PROTOCOL.md: assume they were all used).
    """
    reader, writer = _needed_features(schema, configuration or {})
    if current is not None:
        if reader <= _reader_features(current) and writer <= _writer_features(current):
            return current
        if current.min_reader_version < 3 and current.min_writer_version < 7:
            legacy = _legacy_protocol(reader | _reader_features(current), writer | _writer_features(current), current)
            if legacy is not None:
                return legacy
        reader |= _reader_features(current)
        writer |= _writer_features(current) | reader
    elif (legacy := _legacy_protocol(reader, writer, None)) is not None:
        return legacy
    if reader:
        return Protocol(3, 7, tuple(sorted(reader)), tuple(sorted(writer)))
    if writer - legacy_writer_features(2) or (current is not None and current.min_writer_version >= 7):
        return Protocol(current.min_reader_version if current else 1, 7, None, tuple(sorted(writer)))
    return Protocol(1, 2)


def _legacy_protocol(reader: set[str], writer: set[str], current: Protocol | None) -> Protocol | None:
    """The smallest pre-table-features protocol (reader 1 or 2, writer 2..6) giving these
    features, as Delta picks for a new table (``checkConstraints`` alone: writer 3;
    ``columnMapping``: reader 2 / writer 5); None when table features are needed."""
    if not reader <= {C.COLUMN_MAPPING}:
        return None
    low_reader = max(2 if reader else 1, current.min_reader_version if current else 1)
    low_writer = current.min_writer_version if current else 2
    for version in range(max(2, low_writer), 7):
        if writer - {C.COLUMN_MAPPING} <= legacy_writer_features(version) and (not reader or version >= 5):
            return Protocol(low_reader, version)
    return None


def validate_metadata(metadata: Metadata, protocol: Protocol, where: str = "metaData") -> StructType:
    """Check ``metadata`` is consistent and ``protocol`` declares what it needs; return its schema."""
    schema = parse_schema(metadata.schema_string, f"{where}.schemaString")
    config.validate(dict(metadata.configuration))
    names = {f.name: f for f in schema.fields}
    try:
        partition_values.check_partition_columns(metadata.partition_columns, top_level_types(schema), where)
    except PartitionValueError as exc:
        raise InvalidCommitError(str(exc)) from None
    reader, writer = _needed_features(schema, dict(metadata.configuration))
    _check_compatibility(reader, protocol, dict(metadata.configuration), where)
    have_reader, have_writer = _reader_features(protocol), _writer_features(protocol)
    for feature in sorted(reader):
        if feature not in have_reader or feature not in have_writer:
            raise InvalidCommitError(
                f"{where}: the schema/properties need table feature {feature} in readerFeatures and "
                f"writerFeatures (reader 3 / writer 7, or a legacy version implying it); protocol is {protocol.to_dict()}"
            )
    for feature in sorted(writer - reader):
        if feature not in _writer_features(protocol):
            raise InvalidCommitError(
                f"{where}: the properties need writer table feature {feature}; protocol is {protocol.to_dict()}"
            )
    if mapping_mode(protocol, metadata) != "none":
        try:
            check_assigned(schema, metadata.configuration, f"{where}.schemaString")
        except ColumnMappingError as exc:
            raise InvalidCommitError(str(exc)) from None
    return schema


def with_writer_features(protocol: Protocol, features: Iterable[str]) -> Protocol:
    """``protocol`` also declaring writer-only ``features`` (e.g. ``domainMetadata`` before a
    commit writes a domain): the same object when it already does, else a table-features
    protocol (writer 7) keeping every feature the old one had."""
    wanted = set(features)
    have = _writer_features(protocol)
    if wanted <= have:
        return protocol
    writer = sorted(have | wanted | _reader_features(protocol))
    reader = protocol.reader_features if protocol.min_reader_version >= 3 else None
    return Protocol(protocol.min_reader_version, 7, reader, tuple(writer))
