"""The Delta transaction log: actions, schema, log segments, replay, snapshots,
checkpoints, optimistic commits, history/time travel and vacuum.

Entry point: ``DeltaLog(storage, root)``.
"""

from varlake.delta.actions import (
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from varlake.delta.history import CommitEntry
from varlake.delta.schema import (
    ArrayType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    VariantType,
    parse_schema,
)
from varlake.delta.snapshot import Snapshot
from varlake.delta.table_log import DeltaLog
from varlake.delta.transaction import CommitResult, Transaction

__all__ = [
    "AddFile",
    "ArrayType",
    "CommitEntry",
    "CommitInfo",
    "CommitResult",
    "DeltaLog",
    "DomainMetadata",
    "MapType",
    "Metadata",
    "PrimitiveType",
    "Protocol",
    "RemoveFile",
    "Snapshot",
    "StructField",
    "StructType",
    "Transaction",
    "Txn",
    "VariantType",
    "parse_schema",
]
