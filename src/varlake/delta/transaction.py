"""Optimistic commits through one ``Transaction``: write version N+1 if absent, else check
the winners and retry.

A ``Transaction`` is built from the snapshot a change read (``Transaction(log, snapshot,
operation, parameters)``; ``snapshot=None`` creates the table, version 0), collects
actions with ``add_files`` / ``remove_files`` / ``update_deletion_vectors`` /
``set_metadata`` / ``set_protocol`` / ``set_domain_metadata`` / ``set_txn``, what the change
read (``read_set``) and ``commitInfo`` extras, and ``commit()`` writes them as one version:

1. Validate the caller's actions against the snapshot they were based on
   (``read_version``): shapes, paths, partition values, protocol/features,
   ``appendOnly``; a ``txn`` whose ``(appId, version)`` is already committed makes the
   whole write a no-op (idempotent retries). (The rules live in ``conflicts``.)
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

``commit_with_retries`` is the one retry loop of every caller: it re-runs an attempt
(re-stage on the latest snapshot, or rebase what was staged) after a named conflict, a
bounded number of times.

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
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

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
from varlake.delta.conflicts import (
    ISOLATION_PROPERTY,
    Isolation,
    ReadSet,
    already_done,
    check_winner,
    table_isolation,
    validate_against,
    validate_shape,
)
from varlake.delta.log_store import LogStore
from varlake.delta.protocol import check_writable, validate_metadata
from varlake.delta.replay import replay
from varlake.delta.snapshot import Snapshot
from varlake.errors import CommitConflictError, CorruptLogError, InvalidCommitError, TableExistsError, VarlakeError

__all__ = [
    "ISOLATION_PROPERTY",
    "CommitResult",
    "Isolation",
    "ReadSet",
    "Transaction",
    "commit",
    "commit_with_retries",
    "serialize_commit",
    "table_isolation",
]

T = TypeVar("T")


@dataclass(frozen=True)
class CommitResult:
    """Outcome of a commit: the new version (``None`` for a no-op) and the snapshot after it."""

    version: int | None
    snapshot: Snapshot
    attempts: int
    noop: bool = False


def delta_parameters(parameters: Mapping[str, Any] | None) -> dict[str, str]:
    """``operationParameters`` as Delta writes them: a map of strings, every value that is
    not a string as its JSON text (``partitionBy: "[]"``). delta-spark reads the map as
    ``Map[String, String]``: a list or an object there breaks its DESCRIBE HISTORY."""
    return {
        str(k): v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), ensure_ascii=False)
        for k, v in (parameters or {}).items()
    }


def serialize_commit(commit_info: Mapping[str, Any], actions: Iterable[Action]) -> bytes:
    """The bytes of a commit file: ``commitInfo`` first, then one action per line."""
    lines = [json.dumps({C.COMMIT_INFO: dict(commit_info)}, separators=(",", ":"), ensure_ascii=False)]
    lines += [action_to_json(a) for a in actions]
    return ("\n".join(lines) + "\n").encode("utf-8")


class Transaction:
    """One commit being built on the snapshot a change read (``None``: create the table).

    ``log`` is a ``LogStore`` or anything holding one as ``.store`` (a ``DeltaLog``);
    ``isolation`` defaults to the table's ``delta.isolationLevel``. The ``add_*``/``set_*``
    methods return the transaction; actions are written in the order they were given.
    """

    def __init__(
        self,
        log: Any,
        snapshot: Snapshot | None,
        operation: str = "WRITE",
        parameters: Mapping[str, Any] | None = None,
        *,
        isolation: Isolation | None = None,
    ) -> None:
        self.store: LogStore = log if isinstance(log, LogStore) else log.store
        self.snapshot = snapshot
        self.operation = operation
        self.parameters: dict[str, Any] = dict(parameters or {})
        if isolation is None:
            isolation = table_isolation(snapshot.metadata.configuration) if snapshot is not None else "WriteSerializable"
        self.isolation: Isolation = isolation
        self.reads: ReadSet | None = None
        self.info: dict[str, Any] = {}
        self._actions: list[Action] = []
        self._spent = False

    def __repr__(self) -> str:
        version = None if self.snapshot is None else self.snapshot.version
        return f"Transaction({self.store.root!r}, read_version={version}, {self.operation!r}, {len(self._actions)} actions)"

    @property
    def actions(self) -> tuple[Action, ...]:
        return tuple(self._actions)

    # --- data files -------------------------------------------------------------------

    def add_files(self, adds: Iterable[AddFile]) -> "Transaction":
        for a in adds:
            if not isinstance(a, AddFile):
                raise InvalidCommitError(f"add_files takes AddFile actions, not {a!r}")
            self._actions.append(a)
        return self

    def remove_files(
        self, files: Iterable[AddFile | RemoveFile], *, data_change: bool = True, timestamp: int | None = None
    ) -> "Transaction":
        """Retire ``files``: an ``AddFile`` of the snapshot becomes its ``remove`` (at
        ``timestamp``, now by default); a ``RemoveFile`` is taken as it is."""
        now = int(time.time() * 1000) if timestamp is None else timestamp
        for f in files:
            if isinstance(f, AddFile):
                self._actions.append(f.remove(now, data_change=data_change))
            elif isinstance(f, RemoveFile):
                self._actions.append(f)
            else:
                raise InvalidCommitError(f"remove_files takes AddFile or RemoveFile actions, not {f!r}")
        return self

    def update_deletion_vectors(
        self, updates: Iterable[tuple[AddFile, AddFile]], *, timestamp: int | None = None
    ) -> "Transaction":
        """Give live files new deletion vectors: per ``(old, new)`` pair (same path, ``new``
        with its DV), the ``remove`` of ``old`` and the ``add`` of ``new``."""
        now = int(time.time() * 1000) if timestamp is None else timestamp
        for old, new in updates:
            if new.path != old.path or new.deletion_vector is None:
                raise InvalidCommitError(
                    f"update_deletion_vectors: {new.path!r} must be {old.path!r} with a deletion vector"
                )
            self._actions.append(old.remove(now))
            self._actions.append(new)
        return self

    # --- table state ------------------------------------------------------------------

    def _set(self, action: Action, same: Callable[[Action], bool]) -> "Transaction":
        """Add ``action`` in place of the one ``same`` finds (if any), else at the end."""
        at = next((i for i, a in enumerate(self._actions) if same(a)), None)
        if at is None:
            self._actions.append(action)
        else:
            self._actions[at] = action
            self._actions[at + 1 :] = [a for a in self._actions[at + 1 :] if not same(a)]
        return self

    def set_metadata(self, metadata: Metadata) -> "Transaction":
        """Commit a new ``metaData`` (replaces one set before)."""
        return self._set(metadata, lambda a: isinstance(a, Metadata))

    def set_protocol(self, protocol: Protocol) -> "Transaction":
        """Commit a new ``protocol`` (replaces one set before)."""
        return self._set(protocol, lambda a: isinstance(a, Protocol))

    def set_domain_metadata(self, domain: str | DomainMetadata, configuration: str = "", removed: bool = False) -> "Transaction":
        """Set (or with ``removed=True`` remove) a metadata domain's configuration."""
        d = domain if isinstance(domain, DomainMetadata) else DomainMetadata(domain, configuration, removed)
        return self._set(d, lambda a: isinstance(a, DomainMetadata) and a.domain == d.domain)

    def set_txn(self, app_id: str, version: int, last_updated: int | None = None) -> "Transaction":
        """Record ``(app_id, version)``: if the table already has it, the commit is a no-op."""
        return self._set(Txn(app_id, version, last_updated), lambda a: isinstance(a, Txn) and a.app_id == app_id)

    def stage(self, actions: Iterable[Action]) -> "Transaction":
        """Take actions built elsewhere, as they are and in their order (checked at commit)."""
        for a in actions:
            if isinstance(a, CommitInfo):
                raise InvalidCommitError("pass commitInfo fields via commit_info=..., not as an action")
            self._actions.append(a)
        return self

    # --- conflicts and commitInfo -----------------------------------------------------

    def read_set(self, reads: ReadSet | None) -> "Transaction":
        """What the change read: the files and the rows of concurrently added files it may
        match (see ``ReadSet``); ``None`` for a blind write."""
        self.reads = reads
        return self

    def with_isolation(self, isolation: Isolation) -> "Transaction":
        self.isolation = isolation
        return self

    def commit_info(self, extras: Mapping[str, Any] | None = None, **more: Any) -> "Transaction":
        """Extra ``commitInfo`` fields (they override the computed ones)."""
        self.info.update(extras or {})
        self.info.update(more)
        return self

    # --- committing -------------------------------------------------------------------

    def commit(self, *, max_attempts: int = 10_000) -> CommitResult:
        """Write the actions as the next version (see the module doc); once only: after a
        conflict, build a new transaction on the newer snapshot (``commit_with_retries``)."""
        if self._spent:
            raise InvalidCommitError(f"{self.store.root}: this transaction was committed already")
        self._spent = True
        if self.snapshot is None:
            return _create(self.store, self._actions, self.operation, self.parameters, self.info)
        return _commit(
            self.store, self.snapshot, self._actions, self.operation, self.parameters,
            self.isolation, self.info, max_attempts, self.reads,
        )  # fmt: skip


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
    """Commit ``actions`` to the log ``store`` on top of ``read_version`` (latest if ``None``)
    as one ``Transaction``; ``reads`` is what the change read (for the conflict checks)."""
    txn = Transaction(store, store.snapshot(read_version), operation, operation_parameters, isolation=isolation)
    return txn.stage(actions).read_set(reads).commit_info(commit_info).commit(max_attempts=max_attempts)


def commit_with_retries(
    attempt: Callable[[int], T],
    *,
    retries: int,
    retry_on: type[CommitConflictError] | tuple[type[CommitConflictError], ...] = CommitConflictError,
    rebase: Callable[[CommitConflictError], T | None] | None = None,
    gave_up: Callable[[CommitConflictError], T] | None = None,
) -> T:
    """Run ``attempt(n)`` for n = 1, 2, ... (stage the change -- on the latest snapshot, or
    as ``rebase`` left it -- and commit it) until it returns, at most ``retries + 1`` times.

    A conflict not in ``retry_on`` is raised at once. After a ``retry_on`` conflict with
    attempts left, ``rebase(exc)`` runs: it may raise (the conflict stands), return
    ``None`` (retry) or a result (returned: e.g. a winner already did this write). When
    the last attempt conflicts, ``gave_up(exc)`` returns a result or raises; by default
    the conflict itself is raised.
    """
    attempts = max(retries, 0) + 1
    for n in range(1, attempts + 1):
        try:
            return attempt(n)
        except retry_on as exc:
            if n == attempts:
                if gave_up is None:
                    raise
                return gave_up(exc)
            if rebase is not None:
                done = rebase(exc)
                if done is not None:
                    return done
    raise AssertionError("unreachable")  # pragma: no cover


def _create(
    store: LogStore, actions: Sequence[Action], operation: str, parameters: Mapping[str, Any], extras: Mapping[str, Any]
) -> CommitResult:
    """Version 0: exactly a ``protocol`` and a ``metaData``; ``TableExistsError`` if a log exists."""
    protocol = next((a for a in actions if isinstance(a, Protocol)), None)
    metadata = next((a for a in actions if isinstance(a, Metadata)), None)
    if protocol is None or metadata is None or len(actions) != 2:
        raise InvalidCommitError(f"{store.root}: creating a table commits exactly one protocol and one metaData")
    validate_metadata(metadata, protocol)
    check_writable(protocol, metadata, store.root)
    if store.listing().latest_version is not None:
        raise TableExistsError(f"a Delta table already exists at {store.root!r}")
    now = int(time.time() * 1000)
    info: dict[str, Any] = {
        "timestamp": now,
        "operation": operation,
        "operationParameters": delta_parameters(parameters),
        "isBlindAppend": True,
        "engineInfo": C.ENGINE_INFO,
        "txnId": str(uuid.uuid4()),
    }
    info.update(extras)
    if C.IN_COMMIT_TIMESTAMP in protocol.writer_feature_set:
        info["inCommitTimestamp"] = info["timestamp"]
    if not store.write_commit(0, serialize_commit(info, [protocol, metadata])):
        raise TableExistsError(f"a Delta table was created concurrently at {store.root!r}")
    return CommitResult(0, store.snapshot(), 1)


def _in_commit_timestamp(store: LogStore, version: int, now_ms: int) -> int:
    """``max(now, previous inCommitTimestamp + 1)`` (PROTOCOL.md "In-Commit Timestamps")."""
    if version == 0:
        return now_ms
    prev = store.commit_info(version - 1) or {}
    prev_ts = prev.get("inCommitTimestamp")
    if not isinstance(prev_ts, int):
        prev_ts = store.commit_file_mtime(version - 1)
    return max(now_ms, prev_ts + 1)


def _commit(
    store: LogStore,
    snapshot: Snapshot,
    actions: Sequence[Action],
    operation: str,
    operation_parameters: Mapping[str, Any] | None,
    isolation: Isolation,
    commit_info: Mapping[str, Any] | None,
    max_attempts: int,
    reads: ReadSet | None,
) -> CommitResult:
    """The optimistic commit loop of ``Transaction.commit`` (see the module doc)."""
    actions = list(actions)
    ours = validate_shape(actions)
    if already_done(snapshot.app_versions, ours.txns):
        return CommitResult(None, store.snapshot(), 0, noop=True)
    protocol, metadata = validate_against(snapshot, actions, store.root_location)
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
            operationParameters=delta_parameters(operation_parameters),
            readVersion=snapshot.version,
            isolationLevel=isolation,
            isBlindAppend=ours.blind_append,
            engineInfo=C.ENGINE_INFO,
            txnId=str(uuid.uuid4()),
        )
        info.update(commit_info or {})
        body = serialize_commit(info, body_actions)
        if store.write_commit(attempt, body):
            state = replay(state, [(attempt, [CommitInfo(info), *body_actions])], store.log_dir)
            new_snapshot = store.adopt_state(state, commit_size=len(body))
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
            done = check_winner(version, winner_actions, ours, isolation, store.root, reads) or done
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
