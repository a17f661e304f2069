"""Optimistic commits: write version N+1 if absent, else check the winners and retry.

1. Validate the caller's actions against the snapshot they were based on
   (``read_version``): shapes, paths, partition values, protocol/features,
   ``appendOnly``; a ``txn`` whose ``(appId, version)`` is already committed makes the
   whole write a no-op (idempotent retries).
2. Put ``_delta_log/<N+1>.json`` with put-if-absent. A writer that loses the race
   reads the commits that won and retries on top of them -- unless one of them
   conflicts, in which case ``CommitConflictError`` is raised and nothing is written:
   - a winner changed ``metaData`` or ``protocol``, or this commit does (a metadata or
     protocol change must be based on the latest version): ``MetadataChangedError``;
   - a winner removed a data file (any deletion vector) this commit removes:
     ``ConcurrentDeleteDeleteError``; one this commit's ``reads`` read:
     ``ConcurrentDeleteReadError``; a winner removed or re-added a logical file this commit
     adds: ``CommitConflictError``;
   - a winner added data this commit's ``reads`` may match (``ReadSet.might_match``):
     under ``WriteSerializable`` (the default) only from a winner that is not a blind
     append, under ``Serializable`` any: ``ConcurrentAppendError``. Without ``reads``, a
     commit that removes files conflicts with any added data under ``Serializable`` only;
   - a winner set the same ``txn`` appId (or the same metadata domain); a winner that
     already recorded this app version turns the retry into a no-op.
3. Every ``delta.checkpointInterval`` versions (default 10) a checkpoint is written.

An ``add`` may carry a deletion vector only in a table whose protocol declares
``deletionVectors``; a new one (not the DV of a live file) only with
``delta.enableDeletionVectors=true``. ``delta.isolationLevel`` names the table's level
(``table_isolation``).
"""

from __future__ import annotations

import json
import time
import uuid
import warnings
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

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
    action_to_json,
)
from varlake.delta.column_mapping import column_mapping, mapping_mode
from varlake.delta.file_table import encode_key
from varlake.delta.log_store import LogStore
from varlake.delta.paths import relative_data_path
from varlake.delta.protocol import check_writable, legacy_writer_features, validate_metadata
from varlake.delta.replay import replay
from varlake.delta.schema import parse_schema
from varlake.delta.snapshot import Snapshot
from varlake.delta.type_widening import check_schema_change
from varlake.errors import (
    AppendOnlyTableError,
    CommitConflictError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    CorruptLogError,
    InvalidCommitError,
    InvalidTablePropertyError,
    MetadataChangedError,
    UnsupportedFeatureError,
    VarlakeError,
)

__all__ = ["ISOLATION_PROPERTY", "CommitResult", "Isolation", "ReadSet", "commit", "serialize_commit", "table_isolation"]

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
class CommitResult:
    """Outcome of ``commit``: the new version (``None`` for a no-op) and the snapshot after it."""

    version: int | None
    snapshot: Snapshot
    attempts: int
    noop: bool = False


def serialize_commit(commit_info: Mapping[str, Any], actions: Iterable[Action]) -> bytes:
    """The bytes of a commit file: ``commitInfo`` first, then one action per line."""
    lines = [json.dumps({C.COMMIT_INFO: dict(commit_info)}, separators=(",", ":"), ensure_ascii=False)]
    lines += [action_to_json(a) for a in actions]
    return ("\n".join(lines) + "\n").encode("utf-8")


@dataclass(frozen=True)
class _Intent:
    """What this commit touches, for conflict checks."""

    adds: frozenset[str]
    removes: frozenset[str]
    remove_paths: frozenset[str]
    txns: Mapping[str, int]
    domains: frozenset[str]
    changes_metadata: bool
    blind_append: bool


def _validate_shape(actions: Sequence[Action]) -> _Intent:
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
    return _Intent(frozenset(adds), frozenset(removes), remove_paths, txns, frozenset(domains), changes, blind)


def _validate_against(snapshot: Snapshot, actions: Sequence[Action], root_location: str) -> tuple[Protocol, Metadata]:
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
        if isinstance(a, DomainMetadata) and a.domain.startswith("delta."):
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


def _already_done(app_versions: Mapping[str, int], txns: Mapping[str, int]) -> bool:
    return bool(txns) and all(app_versions.get(app, -1) >= v for app, v in txns.items())


def _is_blind_append(actions: Sequence[Action]) -> bool:
    """A winner that only added data files (no remove, no metadata/protocol change) and, when
    its ``commitInfo`` says so, without reading the table (``isBlindAppend``: an insert-only
    MERGE read it)."""
    if any(isinstance(a, (RemoveFile, Metadata, Protocol)) for a in actions):
        return False
    infos = [a.values.get("isBlindAppend") for a in actions if isinstance(a, CommitInfo)]
    return not any(flag is False for flag in infos)


def _check_winner(
    version: int, actions: Sequence[Action], ours: _Intent, isolation: Isolation, where: str, reads: ReadSet | None = None
) -> bool:
    """Raise a ``CommitConflictError`` if winner ``version`` conflicts; ``True`` if it already did our txn."""
    done = False
    winner_blind = _is_blind_append(actions)
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


def _in_commit_timestamp(store: LogStore, version: int, now_ms: int) -> int:
    """``max(now, previous inCommitTimestamp + 1)`` (PROTOCOL.md "In-Commit Timestamps")."""
    if version == 0:
        return now_ms
    prev = store.commit_info(version - 1) or {}
    prev_ts = prev.get("inCommitTimestamp")
    if not isinstance(prev_ts, int):
        prev_ts = store.commit_file_mtime(version - 1)
    return max(now_ms, prev_ts + 1)


def commit(
    store: LogStore,
    actions: Sequence[Action],
    operation: str,
    read_version: int | None = None,
    operation_parameters: Mapping[str, Any] | None = None,
    *,
    isolation: Isolation = "WriteSerializable",
    commit_info: Mapping[str, Any] | None = None,
    max_attempts: int = 10_000,
    reads: ReadSet | None = None,
) -> CommitResult:
    """Commit ``actions`` to the log ``store`` on top of ``read_version`` (latest if ``None``);
    ``reads`` is what the change read (for the conflict checks); see module doc."""
    actions = list(actions)
    ours = _validate_shape(actions)
    snapshot = store.snapshot(read_version)
    if _already_done(snapshot.app_versions, ours.txns):
        return CommitResult(None, store.snapshot(), 0, noop=True)
    protocol, metadata = _validate_against(snapshot, actions, store.root_location)
    ict = config.in_commit_timestamps_enabled(metadata.configuration)
    ict_was = config.in_commit_timestamps_enabled(snapshot.metadata.configuration)
    state = snapshot.state
    attempt = snapshot.version + 1
    for attempts in range(1, max_attempts + 1):
        now = int(time.time() * 1000)
        info: dict[str, Any] = {"timestamp": now}
        body_actions = actions
        if ict:
            info["inCommitTimestamp"] = _in_commit_timestamp(store, attempt, now)
            if not ict_was and attempt > 0:  # enabling ICT now: record where it starts
                cfg = dict(metadata.configuration)
                cfg[C.PROP_ICT_ENABLEMENT_VERSION] = str(attempt)
                cfg[C.PROP_ICT_ENABLEMENT_TIMESTAMP] = str(info["inCommitTimestamp"])
                body_actions = [replace(a, configuration=cfg) if isinstance(a, Metadata) else a for a in actions]
        info.update(
            operation=operation,
            operationParameters=dict(operation_parameters or {}),
            readVersion=snapshot.version,
            isolationLevel=isolation,
            isBlindAppend=ours.blind_append,
            engineInfo=C.ENGINE_INFO,
            txnId=str(uuid.uuid4()),
        )
        info.update(commit_info or {})
        if store.write_commit(attempt, serialize_commit(info, body_actions)):
            state = replay(state, [(attempt, [CommitInfo(info), *body_actions])], store.log_dir)
            new_snapshot = store.adopt_state(state)
            _maybe_checkpoint(store, new_snapshot)
            return CommitResult(attempt, new_snapshot, attempts)
        winners = store.read_commits_from(attempt)
        if not winners:  # the path is taken but holds no commit: retrying cannot help
            raise CorruptLogError(
                f"{store.root}: the commit file of version {attempt} exists but cannot be read as a commit; "
                "nothing was committed"
            )
        done = False
        for version, winner_actions in winners:
            done = _check_winner(version, winner_actions, ours, isolation, store.root, reads) or done
        state = replay(state, winners, store.log_dir)
        if done:
            return CommitResult(None, store.adopt_state(state), attempts, noop=True)
        attempt = state.version + 1
    raise CommitConflictError(f"{store.root}: gave up after {max_attempts} attempts to commit")


def _maybe_checkpoint(store: LogStore, snapshot: Snapshot) -> None:
    """After the commit point: a failure here (a checkpoint that cannot be written, a bad
    interval in a table someone else wrote) is reported as a warning, never raised."""
    try:
        interval = config.checkpoint_interval(snapshot.metadata.configuration)
        if snapshot.version > 0 and snapshot.version % interval == 0:
            store.write_checkpoint(snapshot)
    except (VarlakeError, OSError) as exc:  # the commit stands; a checkpoint is an optimisation
        warnings.warn(
            f"{store.root}: checkpoint at version {snapshot.version} failed: {exc}", RuntimeWarning, stacklevel=3
        )
