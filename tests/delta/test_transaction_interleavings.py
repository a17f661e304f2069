"""Property test: writers that read a snapshot and commit later, interleaved in any order.

Each writer runs a list of operations -- a blind append, a DELETE of every other file of
one partition (read set: all its files, and any file added to the partition), an OPTIMIZE-like
rewrite of one partition's files into one (``dataChange=false``, read set: exactly the
files it removes) -- each in two steps (read a snapshot; stage and commit through a
``Transaction`` with ``commit_with_retries``, re-staging on the latest snapshot after a
conflict). Whatever the interleaving: appends always land, every row is live at most once
and exactly the rows appended and not deleted are live, a failed operation raised one of
the named ``CommitConflictError`` subclasses, and the log versions are contiguous.
"""

from __future__ import annotations

import collections
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from varlake.delta import AddFile, DeltaLog
from varlake.delta.schema import PrimitiveType, StructField, StructType
from varlake.delta.snapshot import Snapshot
from varlake.delta.transaction import ReadSet, Transaction, commit_with_retries
from varlake.errors import (
    CommitConflictError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    MetadataChangedError,
)
from varlake.io import LocalStorage

SCHEMA = StructType((StructField("id", PrimitiveType("long")), StructField("p", PrimitiveType("string"))))
NAMED = (ConcurrentDeleteDeleteError, ConcurrentDeleteReadError, ConcurrentAppendError, MetadataChangedError)

operation = st.tuples(st.sampled_from(["append", "delete", "optimize"]), st.sampled_from("aab"), st.sampled_from([0, 0, 0, 1, 2]), st.sampled_from([0, 1]))
writers_strategy = st.lists(st.lists(operation, min_size=1, max_size=4), min_size=2, max_size=4)


@dataclass
class World:
    """What the test knows: the rows of every file it staged, and what committed."""

    rows: dict[str, frozenset[str]] = field(default_factory=dict)
    appended: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    versions: list[int] = field(default_factory=list)
    failures: list[tuple[str, CommitConflictError]] = field(default_factory=list)


def _stage(log: DeltaLog, snap: Snapshot, world: World, name: str, op: tuple[str, str, int, int], n: int) -> Transaction | None:
    """The transaction of one operation on ``snap`` (None: nothing to do on it)."""
    kind, part, _retries, offset = op
    in_part = [f for f in snap.files if f.partition_values["p"] == part]
    if kind == "append":
        path = f"{name}.parquet"
        world.rows[path] = frozenset({f"{name}-r0", f"{name}-r1"})
        return log.transaction(snap, "WRITE").add_files([AddFile(path, 10, {"p": part}, 1, True, '{"numRecords":2}')])
    if kind == "delete":
        if not in_part:
            return None
        # the predicate matches the rows of every other file of the partition (it read them all)
        matched = sorted(in_part, key=lambda f: f.path)[offset::2]
        if not matched:
            return None
        reads = ReadSet(frozenset(f.path for f in in_part), lambda add: add.partition_values.get("p") == part)
        return log.transaction(snap, "DELETE").remove_files(matched).read_set(reads).commit_info(isBlindAppend=False)
    if len(in_part) < 2:
        return None
    path = f"{name}-opt{n}.parquet"  # a retry writes a new file
    world.rows[path] = frozenset().union(*(world.rows[f.path] for f in in_part))
    packed = AddFile(path, 10, {"p": part}, 1, False, '{"numRecords":1}')
    txn = log.transaction(snap, "OPTIMIZE").remove_files(in_part, data_change=False).add_files([packed])
    return txn.read_set(ReadSet(frozenset(f.path for f in in_part), lambda _add: False))


def _run(log: DeltaLog, read: Snapshot, world: World, name: str, op: tuple[str, str, int, int]) -> None:
    kind, _part, retries, _offset = op

    def attempt(n: int) -> Any:
        snap = read if n == 1 else log.snapshot()
        txn = _stage(log, snap, world, name, op, n)
        if txn is None:
            return None
        result = txn.commit()
        assert result.version is not None and not result.noop
        world.versions.append(result.version)
        if kind == "append":
            world.appended |= world.rows[f"{name}.parquet"]
        elif kind == "delete":
            world.deleted.update(r for a in txn.actions if not isinstance(a, AddFile) for r in world.rows[a.path])
        return result

    try:
        commit_with_retries(attempt, retries=retries, retry_on=NAMED)
    except CommitConflictError as exc:
        world.failures.append((kind, exc))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(writers=writers_strategy, serializable=st.booleans(), data=st.data())
def test_interleaved_writers_keep_every_append_once(
    writers: list[list[tuple[str, str, int, int]]], serializable: bool, data: Any
) -> None:
    steps = [w for w, ops in enumerate(writers) for _ in range(2 * len(ops))]
    order = data.draw(st.permutations(steps), label="order")
    with tempfile.TemporaryDirectory() as root:
        props = {"delta.checkpointInterval": "3"}
        if serializable:
            props["delta.isolationLevel"] = "Serializable"
        seed = DeltaLog(LocalStorage(), root)
        seed.create(SCHEMA, ("p",), props)
        world = World()
        for name, part in (("s0", "a"), ("s1", "a"), ("s2", "b"), ("s3", "b")):
            _run(seed, seed.snapshot(), world, name, ("append", part, 0, 0))
        logs = [DeltaLog(LocalStorage(), root) for _ in writers]
        position = [0] * len(writers)  # step index per writer: even = read, odd = commit
        reads: list[Snapshot | None] = [None] * len(writers)
        for w in order:
            op_index, committing = divmod(position[w], 2)
            position[w] += 1
            if not committing:
                reads[w] = logs[w].snapshot()
            else:
                _run(logs[w], reads[w], world, f"w{w}-op{op_index}", writers[w][op_index])  # type: ignore[arg-type]

        for kind, exc in world.failures:
            assert kind != "append", f"a blind append failed: {exc!r}"
            assert type(exc) in NAMED[:3], f"{kind} failed with an unnamed conflict: {exc!r}"
            if isinstance(exc, ConcurrentAppendError):
                assert serializable and kind == "delete"  # WriteSerializable lets blind appends pass

        final = DeltaLog(LocalStorage(), root).snapshot()
        live = collections.Counter(r for f in final.files for r in world.rows[f.path])
        assert all(count == 1 for count in live.values()), f"rows live more than once: {live}"
        assert set(live) == world.appended - world.deleted

        names = sorted(n for n in os.listdir(os.path.join(root, "_delta_log")) if n.endswith(".json") and n[:20].isdigit())
        versions = [int(n[:20]) for n in names]
        assert versions == list(range(len(versions))) and final.version == versions[-1]
        assert sorted(world.versions) == versions[1:]  # each commit its own version, none lost
        for v in versions[1:]:
            with open(os.path.join(root, "_delta_log", f"{v:020d}.json")) as f:
                info = json.loads(f.readline())["commitInfo"]
            assert info["readVersion"] < v
