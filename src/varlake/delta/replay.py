"""Log replay (PROTOCOL.md "Action Reconciliation").

State = latest ``protocol`` + latest ``metaData`` + newest ``txn`` per app + live
domains + the newest reference to each logical file, keyed by
``(path, deletionVector.uniqueId)``: an ``add`` makes it live, a ``remove`` makes it
a tombstone. The base state (from a checkpoint or an earlier snapshot) stays
columnar; commits after it are reconciled in Python (they are few) and the base
rows they touch are dropped with one vectorised ``is_in`` filter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa

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
from varlake.delta.file_table import (
    ADD_SCHEMA,
    REMOVE_SCHEMA,
    adds_to_table,
    drop_keys,
    encode_key,
    removes_to_table,
)
from varlake.delta.commit_columns import ColumnarCommit
from varlake.delta.log import CheckpointState
from varlake.errors import CorruptLogError

__all__ = ["TableState", "replay", "state_from_checkpoint"]


@dataclass(frozen=True)
class TableState:
    """The reconciled state of a table at ``version``."""

    version: int
    protocol: Protocol
    metadata: Metadata
    adds: pa.Table
    removes: pa.Table
    txns: Mapping[str, Txn] = field(default_factory=dict)
    domains: Mapping[str, DomainMetadata] = field(default_factory=dict)
    commit_info: CommitInfo | None = None  # of the commit at ``version``, if it was read


def state_from_checkpoint(ckpt: CheckpointState) -> TableState:
    return TableState(
        version=ckpt.version,
        protocol=ckpt.protocol,
        metadata=ckpt.metadata,
        adds=ckpt.adds,
        removes=ckpt.removes,
        txns=dict(ckpt.txns),
        domains=dict(ckpt.domains),
    )


def replay(
    base: TableState | None,
    commits: Sequence[tuple[int, Sequence[Action] | ColumnarCommit]],
    where: str = "_delta_log",
) -> TableState:
    """Apply ``commits`` (ascending, contiguous after ``base``) on top of ``base``.

    A commit may come as a ``commit_columns.ColumnarCommit``: its Arrow-decoded adds are
    reconciled by key like the others (a marker ``commit << _ROW | row`` in place of the ``AddFile``),
    and taken into the result as Arrow rows, in the order the ``AddFile``s would have had."""
    if not commits:
        if base is None:
            raise CorruptLogError("no checkpoint and no commits to replay", where)
        return base
    expected = base.version + 1 if base is not None else 0
    protocol = base.protocol if base else None
    metadata = base.metadata if base else None
    txns = dict(base.txns) if base else {}
    domains = dict(base.domains) if base else {}
    live: dict[str, AddFile | int] = {}
    columnar: list[pa.Table] = []
    dead: dict[str, RemoveFile] = {}
    commit_info: CommitInfo | None = None
    last_version = commits[-1][0]
    for version, actions in commits:
        if version != expected:
            raise CorruptLogError(f"replay expected version {expected} but got {version}", where)
        expected += 1
        if isinstance(actions, ColumnarCommit):
            columnar.append(actions.adds)
            table_no, paths = len(columnar) - 1, actions.paths
            items: Sequence[Action | range] = actions.items
        else:
            items = actions
        for action in items:
            kind = type(action)
            if kind is range:  # Arrow-decoded adds (no deletion vector: a key is a path)
                keys = paths[action.start : action.stop]  # type: ignore[union-attr]
                # markers are ints (``_ROW``), not tuples: 10,000s of new tuples would wake the
                # garbage collector's full sweeps
                start = (table_no << _ROW) + action.start  # type: ignore[union-attr]
                live.update(zip(keys, range(start, start + len(keys))))  # type: ignore[arg-type]
                if dead:
                    for key in keys:
                        dead.pop(key, None)
            elif kind is AddFile:
                key = encode_key(*action.key)
                live[key] = action
                dead.pop(key, None)
            elif kind is RemoveFile:
                key = encode_key(*action.key)
                dead[key] = action
                live.pop(key, None)
            elif kind is Metadata:
                metadata = action
            elif kind is Protocol:
                protocol = action
            elif kind is Txn:
                txns[action.app_id] = action
            elif kind is DomainMetadata:
                if action.removed:
                    domains.pop(action.domain, None)
                else:
                    domains[action.domain] = action
            elif kind is CommitInfo and version == last_version:
                commit_info = action
    if protocol is None:
        raise CorruptLogError("no protocol action found in the log", where)
    if metadata is None:
        raise CorruptLogError("no metaData action found in the log", where)
    touched = set(live) | set(dead)
    base_adds = drop_keys(base.adds, touched) if base else ADD_SCHEMA.empty_table()
    base_removes = drop_keys(base.removes, touched) if base else REMOVE_SCHEMA.empty_table()
    adds = pa.concat_tables([base_adds, *_live_tables(list(live.values()), columnar)]) if live else base_adds
    removes = pa.concat_tables([base_removes, removes_to_table(list(dead.values()))]) if dead else base_removes
    return TableState(
        version=last_version,
        protocol=protocol,
        metadata=metadata,
        adds=adds,
        removes=removes,
        txns=txns,
        domains=domains,
        commit_info=commit_info,
    )


def _live_tables(live: list[AddFile | int], columnar: list[pa.Table]) -> list[pa.Table]:
    """The live adds as ``ADD_SCHEMA`` tables, in order: runs of ``AddFile``s converted, runs
    of Arrow rows (markers ``commit << _ROW | row``) taken from their commit's table."""
    if not columnar:
        return [adds_to_table(live)]  # type: ignore[arg-type]
    out: list[pa.Table] = []
    i, n = 0, len(live)
    mask = (1 << _ROW) - 1
    while i < n:
        first = live[i]
        j = i + 1
        if type(first) is int:
            table_no = first >> _ROW
            while j < n and type(live[j]) is int and live[j] >> _ROW == table_no:  # type: ignore[operator]
                j += 1
            rows = np.asarray(live[i:j], dtype=np.int64) & mask
            table = columnar[table_no]
            same = len(rows) == table.num_rows and bool((rows == np.arange(len(rows))).all())
            out.append(table if same else table.take(pa.array(rows)))
        else:
            while j < n and type(live[j]) is not int:
                j += 1
            out.append(adds_to_table(live[i:j]))  # type: ignore[arg-type]
        i = j
    return out


#: bits of a live-add marker that number the row (the rest number the commit)
_ROW = 40
