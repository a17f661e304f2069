"""Delta's conflict rules for optimistic commits: what a commit may hold, what it must
agree with in the snapshot it read, and which concurrent winners it conflicts with.

- ``validate_shape``: each file added/removed once, at most one ``metaData``/``protocol``,
  one ``txn`` per appId, one action per domain; the commit's ``Intent``.
- ``validate_against``: the actions fit the read snapshot (protocol upgrades only,
  ``metaData.id`` fixed, schema changes allowed by type widening, partition values,
  ``appendOnly``, change data feed, deletion vectors, user metadata domains).
- ``check_winner``: a winning commit conflicts with this one (see ``transaction``'s module
  doc for the rules and the ``CommitConflictError`` subclasses raised).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Mapping, Sequence

from varlake.delta import config
from varlake.delta import constants as C
from varlake.delta.actions import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from varlake.delta.column_mapping import column_mapping, mapping_mode
from varlake.delta.file_table import encode_key
from varlake.delta.paths import relative_data_path
from varlake.delta.protocol import check_writable, legacy_writer_features, validate_metadata
from varlake.delta.schema import parse_schema
from varlake.delta.snapshot import Snapshot
from varlake.delta.type_widening import check_schema_change
from varlake.errors import (
    AppendOnlyTableError,
    CommitConflictError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    InvalidCommitError,
    InvalidTablePropertyError,
    MetadataChangedError,
    UnsupportedFeatureError,
)

__all__ = [
    "ISOLATION_PROPERTY",
    "Intent",
    "Isolation",
    "ReadSet",
    "already_done",
    "check_winner",
    "is_blind_append",
    "table_isolation",
    "validate_against",
    "validate_shape",
]

Isolation = Literal["WriteSerializable", "Serializable"]
ISOLATION_PROPERTY = "delta.isolationLevel"


def table_isolation(configuration: Mapping[str, str]) -> Isolation:
    """The table's isolation level (``delta.isolationLevel``, default ``WriteSerializable``)."""
    text = configuration.get(ISOLATION_PROPERTY)
    if text is None or text == "WriteSerializable":
        return "WriteSerializable"
    if text == "Serializable":
        return "Serializable"
    raise InvalidTablePropertyError(
        f"table property {ISOLATION_PROPERTY}={text!r} must be 'Serializable' or 'WriteSerializable'"
    )


@dataclass(frozen=True)
class ReadSet:
    """What a change read before committing: the data files (``add.path`` as logged) and
    whether a file added concurrently may hold rows its condition matches (``None``: every
    file may -- the change read the whole table)."""

    paths: frozenset[str]
    might_match: Callable[[AddFile], bool] | None = None



@dataclass(frozen=True)
class Intent:
    """What this commit touches, for conflict checks."""

    adds: frozenset[str]
    removes: frozenset[str]
    remove_paths: frozenset[str]
    txns: Mapping[str, int]
    domains: frozenset[str]
    changes_metadata: bool
    blind_append: bool


def validate_shape(actions: Sequence[Action]) -> Intent:
    adds: set[str] = set()
    removes: set[str] = set()
    txns: dict[str, int] = {}
    domains: set[str] = set()
    n_meta = n_proto = 0
    for a in actions:
        if isinstance(a, AddFile):
            key = encode_key(*a.key)
            if key in adds:
                raise InvalidCommitError(f"file {a.path!r} is added twice in one commit")
            adds.add(key)
        elif isinstance(a, RemoveFile):
            key = encode_key(*a.key)
            if key in removes:
                raise InvalidCommitError(f"file {a.path!r} is removed twice in one commit")
            removes.add(key)
        elif isinstance(a, Txn):
            if a.app_id in txns:
                raise InvalidCommitError(f"txn appId {a.app_id!r} appears twice in one commit")
            txns[a.app_id] = a.version
        elif isinstance(a, DomainMetadata):
            if a.domain in domains:
                raise InvalidCommitError(f"domain {a.domain!r} appears twice in one commit")
            domains.add(a.domain)
        elif isinstance(a, Metadata):
            n_meta += 1
        elif isinstance(a, Protocol):
            n_proto += 1
        elif isinstance(a, CommitInfo):
            raise InvalidCommitError("pass commitInfo fields via commit_info=..., not as an action")
        else:
            raise InvalidCommitError(f"not a Delta action: {a!r}")
    if n_meta > 1 or n_proto > 1:
        raise InvalidCommitError("a commit may hold at most one metaData and one protocol action")
    changes = bool(n_meta or n_proto)
    blind = not removes and not changes and all(a.data_change for a in actions if isinstance(a, AddFile))
    remove_paths = frozenset(a.path for a in actions if isinstance(a, RemoveFile))
    return Intent(frozenset(adds), frozenset(removes), remove_paths, txns, frozenset(domains), changes, blind)


def validate_against(snapshot: Snapshot, actions: Sequence[Action], root_location: str) -> tuple[Protocol, Metadata]:
    protocol = next((a for a in actions if isinstance(a, Protocol)), snapshot.protocol)
    metadata = next((a for a in actions if isinstance(a, Metadata)), snapshot.metadata)
    check_writable(snapshot.protocol, snapshot.metadata, snapshot.root)
    if protocol is not snapshot.protocol:
        old = snapshot.protocol
        old_writer = (
            old.writer_feature_set if old.min_writer_version >= 7 else legacy_writer_features(old.min_writer_version)
        )
        new_writer = (
            protocol.writer_feature_set
            if protocol.min_writer_version >= 7
            else legacy_writer_features(protocol.min_writer_version)
        )
        if (
            protocol.min_reader_version < old.min_reader_version
            or protocol.min_writer_version < old.min_writer_version
            or not old_writer <= new_writer
        ):
            raise InvalidCommitError(f"protocol downgrade from {old.to_dict()} to {protocol.to_dict()} is not allowed")
        check_writable(protocol, metadata, snapshot.root)
    if metadata is not snapshot.metadata or protocol is not snapshot.protocol:
        validate_metadata(metadata, protocol)
        check_writable(protocol, metadata, snapshot.root)
        if metadata.id != snapshot.metadata.id:
            raise InvalidCommitError(f"metaData.id may not change ({snapshot.metadata.id} -> {metadata.id})")
        if metadata.schema_string != snapshot.metadata.schema_string:
            removed = {a.key for a in actions if isinstance(a, RemoveFile)}
            if any(f.key not in removed for f in snapshot.files):  # files of the old schema stay
                widening = protocol.min_writer_version >= 7 and C.TYPE_WIDENING in protocol.writer_feature_set
                check_schema_change(
                    snapshot.schema, parse_schema(metadata.schema_string, "metaData.schemaString"),
                    widening, f"{snapshot.root}: metaData.schemaString",
                )
    partition_cols = _partition_keys(protocol, metadata)
    cfg = metadata.configuration
    for a in actions:
        if isinstance(a, (AddFile, RemoveFile)):
            relative_data_path(a.path, root_location, "commit")
        if isinstance(a, AddFile) and set(a.partition_values) != partition_cols:
            raise InvalidCommitError(
                f"add {a.path!r}: partition values {sorted(a.partition_values)} do not match partition columns {sorted(partition_cols)}"
            )
        if isinstance(a, RemoveFile) and a.data_change:
            if config.is_true(cfg, C.PROP_APPEND_ONLY):
                raise AppendOnlyTableError(f"table is append-only ({C.PROP_APPEND_ONLY}=true): cannot remove {a.path!r}")
            if config.is_true(cfg, C.PROP_ENABLE_CDF):
                raise UnsupportedFeatureError(
                    f"{snapshot.root}: removing data with change data feed enabled needs cdc files ({C.CHANGE_DATA_FEED})"
                )
        if isinstance(a, AddFile) and a.deletion_vector is not None:
            _check_dv_add(a, snapshot, protocol, cfg)
        if isinstance(a, DomainMetadata) and a.domain.startswith("delta.") and not _implemented_domain(a.domain, protocol):
            raise InvalidCommitError(f"domain {a.domain!r} is system-controlled and cannot be set by a commit")
        if isinstance(a, DomainMetadata) and C.DOMAIN_METADATA_FEATURE not in (
            protocol.writer_feature_set if protocol.min_writer_version >= 7 else legacy_writer_features(protocol.min_writer_version)
        ):
            raise InvalidCommitError(
                f"domain {a.domain!r}: writing a metadata domain needs the {C.DOMAIN_METADATA_FEATURE} writer feature "
                "(commit a protocol declaring it)"
            )
    return protocol, metadata


def _partition_keys(protocol: Protocol, metadata: Metadata) -> set[str]:
    """The keys an ``add``'s partition values must have: the partition columns, by their
    physical names when the table maps columns (PROTOCOL.md "Column Mapping")."""
    columns = list(metadata.partition_columns)
    if not columns or mapping_mode(protocol, metadata) == "none":
        return set(columns)
    mapping = column_mapping(protocol, metadata, parse_schema(metadata.schema_string, "metaData.schemaString"))
    return {mapping.physical_name(c) for c in columns} if mapping is not None else set(columns)


def _implemented_domain(domain: str, protocol: Protocol) -> bool:
    """A ``delta.*`` domain of a feature varlake implements, on a table that supports it: only
    ``delta.clustering`` (OPTIMIZE's keys, ``write.maintenance.clustering``)."""
    return domain == C.CLUSTERING_DOMAIN and protocol.min_writer_version >= 7 and C.CLUSTERING in protocol.writer_feature_set


def _check_dv_add(add: AddFile, snapshot: Snapshot, protocol: Protocol, cfg: Mapping[str, str]) -> None:
    """An ``add`` with a deletion vector needs the ``deletionVectors`` feature; a new DV
    (not the one a live file already has) also ``delta.enableDeletionVectors=true``."""
    declared = (
        protocol.min_reader_version >= 3
        and C.DELETION_VECTORS in protocol.reader_feature_set
        and C.DELETION_VECTORS in protocol.writer_feature_set
    )
    if not declared:
        raise UnsupportedFeatureError(
            f"add {add.path!r} carries a deletion vector, but the table's protocol does not declare {C.DELETION_VECTORS}"
        )
    if not config.is_true(cfg, C.PROP_ENABLE_DELETION_VECTORS) and add.key not in {f.key for f in snapshot.files}:
        raise InvalidCommitError(
            f"add {add.path!r}: a new deletion vector needs {C.PROP_ENABLE_DELETION_VECTORS}=true on the table"
        )


def already_done(app_versions: Mapping[str, int], txns: Mapping[str, int]) -> bool:
    return bool(txns) and all(app_versions.get(app, -1) >= v for app, v in txns.items())


def is_blind_append(actions: Sequence[Action]) -> bool:
    """A winner that only added data files (no remove, no metadata/protocol change) and, when
    its ``commitInfo`` says so, without reading the table (``isBlindAppend``: an insert-only
    MERGE read it)."""
    if any(isinstance(a, (RemoveFile, Metadata, Protocol)) for a in actions):
        return False
    infos = [a.values.get("isBlindAppend") for a in actions if isinstance(a, CommitInfo)]
    return not any(flag is False for flag in infos)


def check_winner(
    version: int, actions: Sequence[Action], ours: Intent, isolation: Isolation, where: str, reads: ReadSet | None = None
) -> bool:
    """Raise a ``CommitConflictError`` if winner ``version`` conflicts; ``True`` if it already did our txn."""
    done = False
    winner_blind = is_blind_append(actions)
    for a in actions:
        if isinstance(a, (Metadata, Protocol)):
            raise MetadataChangedError(
                f"{where}: version {version} changed the table {'metadata' if isinstance(a, Metadata) else 'protocol'} concurrently"
            )
        if isinstance(a, RemoveFile):
            if a.path in ours.remove_paths:
                raise ConcurrentDeleteDeleteError(
                    f"{where}: version {version} concurrently removed {a.path!r}, a data file this commit also "
                    "removes or rewrites (concurrent delete-delete)"
                )
            if reads is not None and a.path in reads.paths:
                raise ConcurrentDeleteReadError(
                    f"{where}: version {version} concurrently removed {a.path!r}, a data file this change read "
                    "(concurrent delete-read)"
                )
            if encode_key(*a.key) in ours.adds:
                raise CommitConflictError(
                    f"{where}: version {version} concurrently removed {a.path!r}, which this commit also changes"
                )
        if isinstance(a, AddFile):
            key = encode_key(*a.key)
            if key in ours.removes or key in ours.adds:
                raise CommitConflictError(
                    f"{where}: version {version} concurrently added {a.path!r}, which this commit also changes"
                )
            if a.data_change and reads is not None and (isolation == "Serializable" or not winner_blind):
                if reads.might_match is None or reads.might_match(a):
                    raise ConcurrentAppendError(
                        f"{where}: version {version} concurrently added data file {a.path!r}, which may hold rows "
                        f"this change's condition matches and it did not read ({isolation}, concurrent append)"
                    )
            elif reads is None and isolation == "Serializable" and ours.removes and a.data_change:
                raise ConcurrentAppendError(
                    f"{where}: version {version} concurrently added data this commit did not read (Serializable)"
                )
        if isinstance(a, Txn) and a.app_id in ours.txns:
            if a.version >= ours.txns[a.app_id]:
                done = True
            else:
                raise CommitConflictError(f"{where}: version {version} concurrently committed txn {a.app_id!r}")
        if isinstance(a, DomainMetadata) and a.domain in ours.domains:
            raise CommitConflictError(f"{where}: version {version} concurrently changed domain {a.domain!r}")
    if ours.changes_metadata and actions:
        raise MetadataChangedError(
            f"{where}: version {version} was committed while this commit changes metadata/protocol"
        )
    return done
