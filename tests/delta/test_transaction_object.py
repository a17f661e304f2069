"""``delta.transaction.Transaction``: each kind of action, read-set conflicts, txn
idempotence, blind appends, metadata changes, table creation; ``commit_with_retries``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from varlake.delta import AddFile, DeltaLog, DomainMetadata, Metadata, Protocol, RemoveFile
from varlake.delta.schema import PrimitiveType, StructField, StructType
from varlake.delta.transaction import ReadSet, Transaction, commit_with_retries
from varlake.errors import (
    CommitConflictError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    InvalidCommitError,
    MetadataChangedError,
    TableExistsError,
)
from varlake.io import LocalStorage

SCHEMA = StructType((StructField("id", PrimitiveType("long")), StructField("p", PrimitiveType("string"))))
DV = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", "sizeInBytes": 40, "cardinality": 6}


def _add(path: str, p: str = "a", data_change: bool = True) -> AddFile:
    return AddFile(path, 10, {"p": p}, 1, data_change, '{"numRecords":1}')


def _log(root: Path, **props: str) -> DeltaLog:
    log = DeltaLog(LocalStorage(), str(root))
    log.create(SCHEMA, ("p",), props)
    return log


def _other(log: DeltaLog) -> DeltaLog:
    return DeltaLog(LocalStorage(), log.root)


def _lines(log: DeltaLog, version: int) -> list[dict]:
    with open(os.path.join(log.root, "_delta_log", f"{version:020d}.json")) as f:
        return [json.loads(line) for line in f]


def test_add_files_commits_a_blind_append_with_commit_info_extras(tmp_path: Path) -> None:
    log = _log(tmp_path / "t")
    txn = log.transaction(log.snapshot(), "WRITE", {"mode": "Append"}).add_files([_add("f1"), _add("f2", "b")])
    result = txn.commit_info({"operationMetrics": {"numFiles": "2"}}, userMetadata="hello").commit()
    assert result.version == 1 and result.attempts == 1 and not result.noop
    assert sorted(f.path for f in result.snapshot.files) == ["f1", "f2"]
    info = log.commit_info(1)
    assert info["operation"] == "WRITE" and info["operationParameters"] == {"mode": "Append"}
    assert info["readVersion"] == 0 and info["isBlindAppend"] is True and info["isolationLevel"] == "WriteSerializable"
    assert info["operationMetrics"] == {"numFiles": "2"} and info["userMetadata"] == "hello"
    assert [next(iter(line)) for line in _lines(log, 1)] == ["commitInfo", "add", "add"]
    with pytest.raises(InvalidCommitError, match="committed already"):
        txn.commit()
    assert log.latest_version() == 1


def test_remove_files_from_snapshot_files_and_rewrite_without_data_change(tmp_path: Path) -> None:
    log = _log(tmp_path / "t")
    log.transaction(log.snapshot()).add_files([_add("f1"), _add("f2")]).commit()
    snap = log.snapshot()
    result = (
        log.transaction(snap, "OPTIMIZE")
        .remove_files(snap.files, data_change=False, timestamp=123)
        .add_files([_add("packed", data_change=False)])
        .commit()
    )
    assert [f.path for f in result.snapshot.files] == ["packed"]
    removes = [line["remove"] for line in _lines(log, 2) if "remove" in line]
    assert sorted(r["path"] for r in removes) == ["f1", "f2"]
    assert all(r["dataChange"] is False and r["deletionTimestamp"] == 123 for r in removes)
    assert log.commit_info(2)["isBlindAppend"] is False
    # a RemoveFile is taken as it is; anything else is refused
    done = log.transaction(log.snapshot(), "DELETE").remove_files([RemoveFile("packed", 5)]).commit()
    assert done.snapshot.num_files == 0
    with pytest.raises(InvalidCommitError, match="remove_files takes"):
        log.transaction(log.snapshot()).remove_files(["f1"])  # type: ignore[list-item]
    with pytest.raises(InvalidCommitError, match="add_files takes"):
        log.transaction(log.snapshot()).add_files([RemoveFile("x", 1)])  # type: ignore[list-item]


def test_update_deletion_vectors_is_a_remove_add_pair(tmp_path: Path) -> None:
    log = _log(tmp_path / "t", **{"delta.enableDeletionVectors": "true"})
    log.transaction(log.snapshot()).add_files([_add("f1")]).commit()
    snap = log.snapshot()
    old = snap.files[0]
    new = AddFile(old.path, old.size, old.partition_values, old.modification_time, True, old.stats, deletion_vector=DV)
    result = log.transaction(snap, "DELETE").update_deletion_vectors([(old, new)], timestamp=7).commit()
    (live,) = result.snapshot.files
    assert live.path == "f1" and live.deletion_vector == DV
    kinds = [next(iter(line)) for line in _lines(log, 2)]
    assert kinds == ["commitInfo", "remove", "add"]
    with pytest.raises(InvalidCommitError, match="with a deletion vector"):
        log.transaction(log.snapshot()).update_deletion_vectors([(old, _add("other"))])
    with pytest.raises(InvalidCommitError, match="with a deletion vector"):
        log.transaction(log.snapshot()).update_deletion_vectors([(old, old)])


def test_set_metadata_and_a_concurrent_commit_conflict_both_ways(tmp_path: Path) -> None:
    log = _log(tmp_path / "t")
    read = log.snapshot()
    changed = Metadata(read.metadata.id, read.metadata.schema_string, ("p",), {"k": "v"})
    _other(log).transaction(_other(log).snapshot()).add_files([_add("x")]).commit()
    with pytest.raises(MetadataChangedError, match="while this commit changes metadata"):
        log.transaction(read, "SET TBLPROPERTIES").set_metadata(changed).commit()
    latest = log.snapshot()
    assert log.transaction(latest, "SET TBLPROPERTIES").set_metadata(changed).commit().snapshot.properties == {"k": "v"}
    with pytest.raises(MetadataChangedError, match="changed the table metadata concurrently"):
        log.transaction(latest).add_files([_add("y")]).commit()
    # set_metadata twice keeps the last one only
    txn = log.transaction(log.snapshot()).set_metadata(changed).set_metadata(replace_cfg(changed, {"k": "w"}))
    assert [a for a in txn.actions if isinstance(a, Metadata)] == [replace_cfg(changed, {"k": "w"})]


def replace_cfg(metadata: Metadata, cfg: dict[str, str]) -> Metadata:
    return Metadata(metadata.id, metadata.schema_string, metadata.partition_columns, cfg)


def test_set_protocol_and_domain_metadata(tmp_path: Path) -> None:
    log = _log(tmp_path / "t")
    snap = log.snapshot()
    with pytest.raises(InvalidCommitError, match="domainMetadata writer feature"):
        log.transaction(snap).set_domain_metadata("app.layout", '{"a":1}').commit()
    upgraded = Protocol(1, 7, None, ("appendOnly", "domainMetadata", "invariants"))
    result = log.transaction(snap, "SET DOMAIN").set_protocol(upgraded).set_domain_metadata("app.layout", '{"a":1}').commit()
    assert result.snapshot.protocol == upgraded
    assert result.snapshot.domains["app.layout"] == DomainMetadata("app.layout", '{"a":1}')
    with pytest.raises(InvalidCommitError, match="protocol downgrade"):
        log.transaction(log.snapshot()).set_protocol(Protocol(1, 2)).commit()
    with pytest.raises(InvalidCommitError, match="system-controlled"):
        log.transaction(log.snapshot()).set_domain_metadata("delta.x", "{}").commit()
    # a concurrent change to the same domain conflicts
    read = log.snapshot()
    _other(log).transaction(_other(log).snapshot()).set_domain_metadata("app.layout", '{"a":2}').commit()
    with pytest.raises(CommitConflictError, match="concurrently changed domain 'app.layout'"):
        log.transaction(read).set_domain_metadata("app.layout", '{"a":3}').commit()


def test_set_txn_is_idempotent_also_against_a_concurrent_winner(tmp_path: Path) -> None:
    log = _log(tmp_path / "t")
    read = log.snapshot()
    first = log.transaction(read).add_files([_add("b7")]).set_txn("stream", 7, 1).commit()
    assert first.version == 1 and first.snapshot.app_version("stream") == 7
    again = log.transaction(log.snapshot()).add_files([_add("b7-again")]).set_txn("stream", 7).commit()
    assert again.noop and again.version is None
    stale = log.transaction(read).add_files([_add("b7-stale")]).set_txn("stream", 7).commit()
    assert stale.noop  # the winner (version 1) recorded this app version
    older = log.transaction(read).add_files([_add("b6")]).set_txn("stream", 6).commit()
    assert older.noop
    assert [f.path for f in log.snapshot().files] == ["b7"]
    read = log.snapshot()
    _other(log).transaction(_other(log).snapshot()).set_txn("stream", 9).commit()
    with pytest.raises(CommitConflictError, match="concurrently committed txn 'stream'"):
        log.transaction(read).add_files([_add("b8")]).set_txn("stream", 10).commit()
    txn = log.transaction(read).set_txn("s", 1).set_txn("s", 2)
    assert len(txn.actions) == 1 and txn.actions[0].version == 2


def test_blind_append_rebases_over_a_concurrent_append(tmp_path: Path) -> None:
    log = _log(tmp_path / "t")
    read = log.snapshot()
    _other(log).transaction(read).add_files([_add("theirs")]).commit()
    result = log.transaction(read).add_files([_add("mine")]).commit()
    assert result.version == 2 and result.attempts == 2
    assert sorted(f.path for f in result.snapshot.files) == ["mine", "theirs"]
    assert log.commit_info(2)["readVersion"] == 0


def _with_files(root: Path, **props: str) -> DeltaLog:
    log = _log(root, **props)
    log.transaction(log.snapshot()).add_files([_add("a1"), _add("a2"), _add("b1", "b")]).commit()
    return log


def _delete_a(log: DeltaLog, read, isolation=None) -> Transaction:  # type: ignore[no-untyped-def]
    files = [f for f in read.files if f.partition_values["p"] == "a"]
    reads = ReadSet(frozenset(f.path for f in files), lambda add: add.partition_values.get("p") == "a")
    txn = log.transaction(read, "DELETE", isolation=isolation).remove_files(files).read_set(reads)
    return txn.commit_info(isBlindAppend=False)


def test_read_set_conflicts_name_the_conflict(tmp_path: Path) -> None:
    log = _with_files(tmp_path / "t")
    read = log.snapshot()
    _other(log).transaction(log.snapshot(), "DELETE").remove_files([read.files[0]]).commit()
    with pytest.raises(ConcurrentDeleteDeleteError, match="concurrent delete-delete"):
        _delete_a(log, read).commit()

    log = _with_files(tmp_path / "u")
    read = log.snapshot()
    reader = log.transaction(read, "DELETE").remove_files([f for f in read.files if f.path == "a1"])
    reader.read_set(ReadSet(frozenset({"a1", "a2"})))
    _other(log).transaction(log.snapshot(), "DELETE").remove_files([f for f in read.files if f.path == "a2"]).commit()
    with pytest.raises(ConcurrentDeleteReadError, match="concurrent delete-read"):
        reader.commit()


def test_concurrent_append_conflicts_by_isolation_and_might_match(tmp_path: Path) -> None:
    # WriteSerializable: a blind append passes, a non-blind add the condition may match does not
    log = _with_files(tmp_path / "ws")
    read = log.snapshot()
    _other(log).transaction(log.snapshot()).add_files([_add("a3")]).commit()
    assert _delete_a(log, read).commit().version == 3
    read = log.snapshot()
    _other(log).transaction(log.snapshot(), "UPDATE").commit_info(isBlindAppend=False).add_files([_add("a4")]).commit()
    with pytest.raises(ConcurrentAppendError, match="concurrent append"):
        _delete_a(log, read).commit()
    # ... unless it cannot match (another partition)
    read = log.snapshot()
    _other(log).transaction(log.snapshot(), "UPDATE").commit_info(isBlindAppend=False).add_files([_add("b9", "b")]).commit()
    assert _delete_a(log, read).commit().version is not None
    # Serializable (table property): any concurrent append the condition may match conflicts
    log = _with_files(tmp_path / "ser", **{"delta.isolationLevel": "Serializable"})
    read = log.snapshot()
    assert log.transaction(read).isolation == "Serializable"
    _other(log).transaction(log.snapshot()).add_files([_add("a3")]).commit()
    with pytest.raises(ConcurrentAppendError, match="Serializable"):
        _delete_a(log, read).commit()
    assert _delete_a(log, read, "WriteSerializable").commit().version == 3


def test_create_through_a_transaction_and_its_rules(tmp_path: Path) -> None:
    log = _log(tmp_path / "t")
    assert log.commit_info(0)["operation"] == "CREATE TABLE"
    snap = log.snapshot()
    with pytest.raises(TableExistsError, match="already exists"):
        log.transaction(None, "CREATE TABLE").set_protocol(snap.protocol).set_metadata(snap.metadata).commit()
    fresh = DeltaLog(LocalStorage(), str(tmp_path / "u"))
    with pytest.raises(InvalidCommitError, match="exactly one protocol and one metaData"):
        fresh.transaction(None).set_protocol(snap.protocol).set_metadata(snap.metadata).add_files([_add("x")]).commit()
    made = fresh.transaction(None, "CREATE TABLE").set_protocol(snap.protocol).set_metadata(snap.metadata).commit()
    assert made.version == 0 and made.snapshot.version == 0 and fresh.commit_info(0)["isBlindAppend"] is True


def test_stage_refuses_commit_info_and_validation_runs_at_commit(tmp_path: Path) -> None:
    from varlake.delta.actions import CommitInfo

    log = _log(tmp_path / "t")
    with pytest.raises(InvalidCommitError, match="commitInfo"):
        log.transaction(log.snapshot()).stage([CommitInfo({})])
    with pytest.raises(InvalidCommitError, match="added twice"):
        log.transaction(log.snapshot()).add_files([_add("f"), _add("f")]).commit()
    with pytest.raises(InvalidCommitError, match="partition values"):
        log.transaction(log.snapshot()).add_files([AddFile("f", 1, {}, 1, True)]).commit()
    assert log.latest_version() == 0


def test_commit_with_retries_bounds_attempts_and_keeps_errors() -> None:
    calls: list[int] = []

    def failing(n: int) -> int:
        calls.append(n)
        raise ConcurrentAppendError(f"attempt {n}")

    with pytest.raises(ConcurrentAppendError, match="attempt 3"):
        commit_with_retries(failing, retries=2, retry_on=ConcurrentAppendError)
    assert calls == [1, 2, 3]
    calls.clear()
    with pytest.raises(ConcurrentAppendError, match="attempt 1"):  # not retried: another subclass
        commit_with_retries(failing, retries=5, retry_on=MetadataChangedError)
    assert calls == [1]
    calls.clear()
    with pytest.raises(ConcurrentAppendError, match="attempt 1"):  # negative retries: one attempt
        commit_with_retries(failing, retries=-1)
    rebased: list[str] = []
    assert commit_with_retries(lambda n: n if n == 3 else failing(n), retries=4, rebase=lambda e: rebased.append(str(e))) == 3
    assert rebased == ["attempt 1", "attempt 2"]
    assert commit_with_retries(failing, retries=4, rebase=lambda e: 42) == 42  # rebase ended it (a winner did it)
    assert commit_with_retries(failing, retries=1, gave_up=lambda e: -1) == -1

    def stands(exc: CommitConflictError) -> None:
        raise exc

    calls.clear()
    with pytest.raises(ConcurrentAppendError, match="attempt 1"):
        commit_with_retries(failing, retries=3, rebase=stands)
    assert calls == [1]
