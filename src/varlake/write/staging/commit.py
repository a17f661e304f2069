"""Commit a set of new data files as one table version -- the one commit path of every engine.

- **create if missing**: a write planned against no table creates it (version 0) first;
  if another writer created it meanwhile, the files join that table when its schema,
  partitioning and shredding fit them (``CommitConflictError`` otherwise);
- **modes**: ``append``, ``overwrite`` (removes every file of the snapshot the write
  read), ``error`` (the table must not exist);
- **idempotency**: ``app_id``/``app_version`` become a ``txn`` action; a version that
  is already committed makes the write a no-op (version None);
- **blind-append rebase** (``delta.transaction.commit_with_retries``): an append that lost a race (e.g. because it also changes the
  stored shredding schemas) is committed again on the winner's version as long as the
  table still stores the shredding schemas its files were written with; otherwise
  ``ShreddingConflictError``. Any other conflict is ``CommitConflictError``; in every
  case nothing of this write is committed and the table stays as the winner left it.
  On a column-mapped table the files fit only a table with the same physical names and
  ids (``column_mapping.mapping_signature``).
- **metadata domains**: ``PendingWrite.domains`` are committed in the same version (the
  protocol gains the ``domainMetadata`` writer feature first when it lacks it); a winner
  that changed one of them is a ``CommitConflictError``, never rebased over.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from varlake.delta import constants as C
from varlake.delta.actions import AddFile, DomainMetadata, Metadata
from varlake.delta.column_mapping import mapping_signature
from varlake.delta.config import is_true
from varlake.delta.protocol import with_writer_features
from varlake.delta.schema import StructType
from varlake.delta.snapshot import Snapshot
from varlake.delta.table_log import DeltaLog
from varlake.delta.transaction import CommitResult, Transaction, commit_with_retries
from varlake.errors import CommitConflictError, ShreddingConflictError, TableError, TableExistsError
from varlake.write.staging.conform import same_shape
from varlake.write.staging.shredding import ENABLE_SHREDDING, SHREDDING_PROPERTY, stored_schemas

__all__ = ["MAX_REBASES", "MODES", "Committed", "PendingWrite", "commit_actions", "commit_write"]

MODES = ("append", "overwrite", "error")
MAX_REBASES = 5


@dataclass(frozen=True)
class PendingWrite:
    """Data files written for one table version, not yet committed.

    ``snapshot`` is the version the write read (None: the table is created at commit, with
    ``create_properties``); ``metadata`` a metaData change to commit with the files;
    ``stored`` the shredding DDL per Variant column the files assume is stored;
    ``layout`` the DDL they were shredded with (None: unshredded); ``domains`` metadata
    domains committed with the files.
    """

    root: str
    mode: str
    schema: StructType
    partition_columns: tuple[str, ...]
    adds: tuple[AddFile, ...]
    snapshot: Snapshot | None = None
    create_properties: Mapping[str, str] = field(default_factory=dict)
    metadata: Metadata | None = None
    stored: Mapping[str, str] = field(default_factory=dict)
    layout: Mapping[str, str | None] = field(default_factory=dict)
    operation: str = "WRITE"
    domains: tuple[DomainMetadata, ...] = ()

    @property
    def num_rows(self) -> int:
        return sum(a.num_records or 0 for a in self.adds)


@dataclass(frozen=True)
class Committed:
    """The version a write committed (None: its ``app_version`` was already committed)."""

    version: int | None
    created: bool


def commit_actions(
    log: DeltaLog,
    actions: Sequence[Any],
    mode: str,
    snapshot: Snapshot,
    *,
    app_id: str | None = None,
    app_version: int | None = None,
    num_rows: int | None = None,
    operation: str = "WRITE",
) -> CommitResult:
    """Commit ``actions`` (``AddFile``s and maybe a ``Metadata``) on top of ``snapshot``.

    ``overwrite`` removes every file of ``snapshot``; a concurrent change to those files
    makes the commit fail with ``CommitConflictError`` and leaves the table as it was.
    """
    now = int(_dt.datetime.now(_dt.timezone.utc).timestamp() * 1000)
    if mode not in ("append", "overwrite"):
        raise TableError(f"{log.root}: write mode must be 'append' or 'overwrite', not {mode!r}")
    params = {"mode": "Overwrite" if mode == "overwrite" else "Append", "partitionBy": list(snapshot.partition_columns)}
    txn = Transaction(log, snapshot, operation, params, isolation="WriteSerializable").stage(actions)
    if mode == "overwrite":
        txn.remove_files(snapshot.files, timestamp=now)
    if app_id is not None:
        if app_version is None:
            raise TableError(f"{log.root}: app_id needs app_version")
        txn.set_txn(app_id, app_version, now)
    metrics = {"numFiles": str(sum(isinstance(a, AddFile) for a in txn.actions))}
    if num_rows is not None:
        metrics["numOutputRows"] = str(num_rows)
    return txn.commit_info(operationMetrics=metrics).commit()


def commit_write(
    log: DeltaLog, pending: PendingWrite, *, app_id: str | None = None, app_version: int | None = None
) -> Committed:
    """Commit ``pending`` as one version of the table at ``log`` (see the module doc)."""
    if pending.mode not in MODES:
        raise TableError(f"{pending.root}: write mode must be one of {MODES}, not {pending.mode!r}")
    created = False
    if pending.snapshot is None:
        try:
            log.create(pending.schema, pending.partition_columns, dict(pending.create_properties))
            created = True
        except TableExistsError:
            if pending.mode == "error":
                raise
        snapshot = log.snapshot()
        metadata = None if created else _adopt_concurrent_table(snapshot, pending)
    else:
        snapshot, metadata = pending.snapshot, pending.metadata
    mode = "append" if pending.mode == "error" else pending.mode

    def attempt(_n: int) -> Committed:
        actions: list[Any] = ([metadata] if metadata is not None else []) + list(pending.adds)
        if pending.domains:
            protocol = with_writer_features(snapshot.protocol, [C.DOMAIN_METADATA_FEATURE])
            actions = ([protocol] if protocol != snapshot.protocol else []) + actions + list(pending.domains)
        result = commit_actions(
            log, actions, mode, snapshot, app_id=app_id, app_version=app_version,
            num_rows=pending.num_rows, operation=pending.operation,
        )  # fmt: skip
        return Committed(result.version, created)

    def rebase(exc: CommitConflictError) -> Committed | None:
        """Append the same files on the winner's version, if they still fit it."""
        nonlocal snapshot, metadata
        if mode != "append":
            raise exc
        latest = log.snapshot()
        _check_rebase(latest, pending, exc)
        if any(latest.domains.get(d.domain) != snapshot.domains.get(d.domain) for d in pending.domains):
            if app_id is not None and (latest.app_version(app_id) or -1) >= (app_version or 0):
                return Committed(None, created)  # the winner committed this txn already
            raise CommitConflictError(f"{pending.root}: a concurrent commit changed a metadata domain this write sets ({exc})") from exc
        snapshot, metadata = latest, None
        return None

    def gave_up(exc: CommitConflictError) -> Committed:
        done = rebase(exc)
        if done is not None:
            return done
        raise CommitConflictError(f"{pending.root}: gave up after {MAX_REBASES} rebases on concurrent commits; nothing was committed")

    return commit_with_retries(attempt, retries=MAX_REBASES, rebase=rebase, gave_up=gave_up)


def _check_rebase(latest: Snapshot, pending: PendingWrite, exc: CommitConflictError) -> None:
    """Raise unless the files of ``pending`` can be appended to ``latest`` as they are."""
    if (
        not same_shape(latest.schema, pending.schema)
        or tuple(latest.partition_columns) != pending.partition_columns
        or mapping_signature(latest.schema) != mapping_signature(pending.schema)
    ):
        raise CommitConflictError(
            f"{pending.root}: a concurrent commit changed the schema or partitioning; nothing was committed ({exc})"
        ) from exc
    if stored_schemas(latest.properties, list(pending.stored)) != dict(pending.stored):
        raise ShreddingConflictError(
            f"{pending.root}: a concurrent commit changed the table's shredding schemas while this write "
            f"used {dict(pending.stored)}; nothing was committed, write again ({exc})"
        ) from exc
    if any(pending.layout.values()) and not is_true(latest.properties, ENABLE_SHREDDING):
        raise ShreddingConflictError(f"{pending.root}: a concurrent commit turned shredding off; nothing was committed") from exc


def _adopt_concurrent_table(snapshot: Snapshot, pending: PendingWrite) -> Metadata | None:
    """The table this write meant to create was created concurrently: check the files fit
    it; the metadata change they need, if any."""
    where = f"{pending.root}: the table was created concurrently"
    if not same_shape(snapshot.schema, pending.schema) or tuple(snapshot.partition_columns) != pending.partition_columns:
        raise CommitConflictError(f"{where} with another schema or partitioning; nothing was committed")
    if mapping_signature(snapshot.schema) != mapping_signature(pending.schema):
        raise CommitConflictError(f"{where} with other column-mapping physical names or ids; nothing was committed")
    if any(pending.layout.values()) and not is_true(snapshot.properties, ENABLE_SHREDDING):
        raise ShreddingConflictError(f"{where} without {ENABLE_SHREDDING}; these shredded files cannot join it")
    if stored_schemas(snapshot.properties, list(pending.stored)) == dict(pending.stored):
        return None
    if snapshot.num_files:
        raise ShreddingConflictError(f"{where} with files of another shredding schema; nothing was committed")
    cfg = dict(snapshot.metadata.configuration)
    cfg.update({SHREDDING_PROPERTY + n: d for n, d in pending.stored.items()})
    return replace(snapshot.metadata, configuration=cfg)
