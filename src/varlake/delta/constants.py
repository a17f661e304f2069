"""Protocol strings of the Delta transaction log (PROTOCOL.md), named once."""

from __future__ import annotations

from typing import Final

# --- log layout ----------------------------------------------------------------------

LOG_DIR: Final = "_delta_log"
LAST_CHECKPOINT: Final = "_last_checkpoint"
VERSION_DIGITS: Final = 20
PART_DIGITS: Final = 10

# --- action names (the single key of each JSON line / checkpoint column) ----------------

ADD: Final = "add"
REMOVE: Final = "remove"
METADATA: Final = "metaData"
PROTOCOL: Final = "protocol"
TXN: Final = "txn"
COMMIT_INFO: Final = "commitInfo"
CDC: Final = "cdc"
DOMAIN_METADATA: Final = "domainMetadata"
CHECKPOINT_METADATA: Final = "checkpointMetadata"
SIDECAR: Final = "sidecar"

#: Spec'd actions that replay ignores on purpose:
#: - ``cdc``: change-data files matter only to change-data-feed readers (varlake has
#:   none); PROTOCOL.md keeps them out of snapshots and checkpoints.
#: - ``checkpointMetadata`` / ``sidecar``: V2-checkpoint-only actions; PROTOCOL.md says
#:   they "do not participate in log replay" when met in a commit.
#: ``domainMetadata`` is *not* in this set: it is reconciled and kept, because writers
#: must preserve every domain in the checkpoints they write.
IGNORED_ACTIONS: Final = frozenset({CDC, CHECKPOINT_METADATA, SIDECAR})

# --- table features (Appendix "Valid Feature Names") ------------------------------------

APPEND_ONLY: Final = "appendOnly"
INVARIANTS: Final = "invariants"
CHECK_CONSTRAINTS: Final = "checkConstraints"
GENERATED_COLUMNS: Final = "generatedColumns"
ALLOW_COLUMN_DEFAULTS: Final = "allowColumnDefaults"
CHANGE_DATA_FEED: Final = "changeDataFeed"
COLUMN_MAPPING: Final = "columnMapping"
IDENTITY_COLUMNS: Final = "identityColumns"
DELETION_VECTORS: Final = "deletionVectors"
ROW_TRACKING: Final = "rowTracking"
TIMESTAMP_NTZ: Final = "timestampNtz"
DOMAIN_METADATA_FEATURE: Final = "domainMetadata"
V2_CHECKPOINT: Final = "v2Checkpoint"
CATALOG_MANAGED: Final = "catalogManaged"
ICEBERG_COMPAT_V1: Final = "icebergCompatV1"
ICEBERG_COMPAT_V2: Final = "icebergCompatV2"
CLUSTERING: Final = "clustering"
#: The clustered-table feature's domain (PROTOCOL.md "Clustered Table")
CLUSTERING_DOMAIN: Final = "delta.clustering"
VACUUM_PROTOCOL_CHECK: Final = "vacuumProtocolCheck"
IN_COMMIT_TIMESTAMP: Final = "inCommitTimestamp"
TYPE_WIDENING: Final = "typeWidening"
VARIANT_TYPE: Final = "variantType"
VARIANT_SHREDDING: Final = "variantShredding"
#: String collations (Delta's collations RFC; not in PROTOCOL.md yet): a writer feature --
#: the data files are plain strings, only comparisons and statistics follow the collation.
COLLATIONS: Final = "collations"

#: Spellings written by engines while a feature was in preview; read as the feature.
FEATURE_ALIASES: Final = {
    "variantType-preview": VARIANT_TYPE,
    "variantShredding-preview": VARIANT_SHREDDING,
    "typeWidening-preview": TYPE_WIDENING,
    "catalogOwned-preview": CATALOG_MANAGED,
    "collations-preview": COLLATIONS,
}

KNOWN_FEATURES: Final = frozenset(
    {
        APPEND_ONLY,
        INVARIANTS,
        CHECK_CONSTRAINTS,
        GENERATED_COLUMNS,
        ALLOW_COLUMN_DEFAULTS,
        CHANGE_DATA_FEED,
        COLUMN_MAPPING,
        IDENTITY_COLUMNS,
        DELETION_VECTORS,
        ROW_TRACKING,
        TIMESTAMP_NTZ,
        DOMAIN_METADATA_FEATURE,
        V2_CHECKPOINT,
        CATALOG_MANAGED,
        ICEBERG_COMPAT_V1,
        ICEBERG_COMPAT_V2,
        CLUSTERING,
        VACUUM_PROTOCOL_CHECK,
        IN_COMMIT_TIMESTAMP,
        TYPE_WIDENING,
        VARIANT_TYPE,
        VARIANT_SHREDDING,
        COLLATIONS,
    }
)


def canonical_feature(name: str) -> str:
    """The feature a (possibly ``-preview``) name stands for."""
    return FEATURE_ALIASES.get(name, name)


# --- table properties (metaData.configuration keys) -------------------------------------

PROP_CHECKPOINT_INTERVAL: Final = "delta.checkpointInterval"
PROP_WRITE_STATS_AS_JSON: Final = "delta.checkpoint.writeStatsAsJson"
PROP_WRITE_STATS_AS_STRUCT: Final = "delta.checkpoint.writeStatsAsStruct"
PROP_DELETED_FILE_RETENTION: Final = "delta.deletedFileRetentionDuration"
PROP_LOG_RETENTION: Final = "delta.logRetentionDuration"
PROP_APPEND_ONLY: Final = "delta.appendOnly"
PROP_ENABLE_VARIANT_SHREDDING: Final = "delta.enableVariantShredding"
PROP_ENABLE_CDF: Final = "delta.enableChangeDataFeed"
PROP_ENABLE_DELETION_VECTORS: Final = "delta.enableDeletionVectors"
PROP_ENABLE_ROW_TRACKING: Final = "delta.enableRowTracking"
PROP_COLUMN_MAPPING_MODE: Final = "delta.columnMapping.mode"
PROP_ENABLE_ICT: Final = "delta.enableInCommitTimestamps"
PROP_ICT_ENABLEMENT_VERSION: Final = "delta.inCommitTimestampEnablementVersion"
PROP_ICT_ENABLEMENT_TIMESTAMP: Final = "delta.inCommitTimestampEnablementTimestamp"
PROP_ENABLE_ICEBERG_V1: Final = "delta.enableIcebergCompatV1"
PROP_ENABLE_ICEBERG_V2: Final = "delta.enableIcebergCompatV2"
PROP_CONSTRAINT_PREFIX: Final = "delta.constraints."
#: varlake's own: which other readers the table stays readable by (``delta.protocol.compatibility``).
PROP_COMPATIBILITY: Final = "varlake.compatibility"

DEFAULT_CHECKPOINT_INTERVAL: Final = 10
DEFAULT_DELETED_FILE_RETENTION_HOURS: Final = 168.0
DEFAULT_LOG_RETENTION_HOURS: Final = 30 * 24.0
MIN_SAFE_VACUUM_RETENTION_HOURS: Final = 168.0

# --- column metadata keys that make writer features *active* ------------------------

COL_INVARIANTS: Final = "delta.invariants"
COL_GENERATION_EXPRESSION: Final = "delta.generationExpression"
COL_IDENTITY_PREFIX: Final = "delta.identity."
COL_CURRENT_DEFAULT: Final = "CURRENT_DEFAULT"
COL_COLLATIONS: Final = "__COLLATIONS"

ENGINE_INFO: Final = "varlake/0.1.0"
