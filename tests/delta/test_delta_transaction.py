"""Optimistic commits: concurrent processes, conflicts, idempotent txn, commit validation."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from varlake.delta import AddFile, DeltaLog, Metadata, Protocol, RemoveFile, Txn
from varlake.delta.log_store import LogStore
from varlake.delta.schema import PrimitiveType, StructField, StructType, VariantType
from varlake.delta.transaction import commit
from varlake.errors import (
    CommitConflictError,
    InvalidCommitError,
    TableExistsError,
    UnsafePathError,
    UnsupportedFeatureError,
)
from varlake.io import LocalStorage

SCHEMA = StructType((StructField("id", PrimitiveType("long")), StructField("p", PrimitiveType("string"))))


def _add(path: str, **pv: str) -> AddFile:
    return AddFile(path, 10, pv, 1, True, '{"numRecords":1}')


def _log(root: Path, partition_by: tuple[str, ...] = (), **props: str) -> DeltaLog:
    log = DeltaLog(LocalStorage(), str(root))
    log.create(SCHEMA, partition_by, props)
    return log


def _log_files(root: Path) -> list[str]:
    return sorted(os.listdir(root / "_delta_log"))


def _appender(args: tuple[str, str, int]) -> list[int]:
    root, who, n = args
    log = DeltaLog(LocalStorage(), root)
    return [log.commit([_add(f"{who}-{i}.parquet")], "WRITE").version for i in range(n)]


def test_concurrent_appends_from_two_processes_all_land(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _log(root, **{"delta.checkpointInterval": "7"})
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        versions = pool.map(_appender, [(str(root), "a", 25), (str(root), "b", 25)])
    all_versions = sorted(versions[0] + versions[1])
    assert all_versions == list(range(1, 51))  # every commit got its own version, none lost
    snap = DeltaLog(LocalStorage(), str(root)).snapshot()
    assert snap.version == 50
    assert sorted(f.path for f in snap.files) == sorted(
        [f"a-{i}.parquet" for i in range(25)] + [f"b-{i}.parquet" for i in range(25)]
    )
    assert not [n for n in _log_files(root) if n.startswith(".varlake-tmp")]


def test_blind_append_retries_on_top_of_winner(tmp_path: Path) -> None:
    root = tmp_path / "t"
    mine, theirs = _log(root), DeltaLog(LocalStorage(), str(root))
    base = mine.snapshot().version
    theirs.commit([_add("theirs")])
    result = mine.commit([_add("mine")], read_version=base)
    assert result.version == 2 and result.attempts == 2
    assert sorted(f.path for f in result.snapshot.files) == ["mine", "theirs"]
    info = mine.commit_info(2)
    assert info["readVersion"] == 0 and info["isBlindAppend"] is True and info["operation"] == "WRITE"


def test_conflicting_overwrite_raises_and_leaves_table_unchanged(tmp_path: Path) -> None:
    root = tmp_path / "t"
    a = _log(root)
    a.commit([_add("f1"), _add("f2")])
    b = DeltaLog(LocalStorage(), str(root))
    read = b.snapshot()
    # a deletes f1 first; b's overwrite (remove everything it saw + add new) must fail
    a.commit([RemoveFile("f1", 5)], "DELETE")
    files_before = _log_files(root)
    overwrite = [f.remove(6) for f in read.files] + [_add("new")]
    with pytest.raises(CommitConflictError, match="version 2 concurrently removed 'f1'"):
        b.commit(overwrite, "WRITE", read_version=read.version, operation_parameters={"mode": "Overwrite"})
    assert _log_files(root) == files_before
    assert sorted(f.path for f in DeltaLog(LocalStorage(), str(root)).snapshot().files) == ["f2"]


def test_metadata_race_conflicts(tmp_path: Path) -> None:
    root = tmp_path / "t"
    a = _log(root)
    read = a.snapshot()
    new_meta = Metadata(read.metadata.id, read.metadata.schema_string, (), {"delta.appendOnly": "false"})
    DeltaLog(LocalStorage(), str(root)).commit([_add("x")])
    with pytest.raises(CommitConflictError, match="while this commit changes metadata"):
        a.commit([new_meta], "SET TBLPROPERTIES", read_version=read.version)
    winner = DeltaLog(LocalStorage(), str(root))
    read = winner.snapshot()
    winner.commit([Metadata(read.metadata.id, read.metadata.schema_string, (), {"k": "v"})], "SET TBLPROPERTIES")
    with pytest.raises(CommitConflictError, match="changed the table metadata concurrently"):
        a.commit([_add("y")], read_version=read.version)


def test_serializable_isolation_conflicts_with_concurrent_append(tmp_path: Path) -> None:
    root = tmp_path / "t"
    a = _log(root)
    a.commit([_add("f1")])
    read = a.snapshot()
    DeltaLog(LocalStorage(), str(root)).commit([_add("f2")])
    delete = [RemoveFile("f1", 1)]
    with pytest.raises(CommitConflictError, match="Serializable"):
        a.commit(delete, "DELETE", read_version=read.version, isolation="Serializable")
    assert a.commit(delete, "DELETE", read_version=read.version).version == 3  # WriteSerializable lets it pass


def test_txn_makes_retried_writes_idempotent(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _log(root)
    first = log.commit([_add("batch-7"), Txn("stream-1", 7)])
    again = log.commit([_add("batch-7-retry"), Txn("stream-1", 7)])
    assert first.version == 1 and again.noop and again.version is None
    older = DeltaLog(LocalStorage(), str(root)).commit([_add("batch-6"), Txn("stream-1", 6)])
    assert older.noop
    assert [f.path for f in log.snapshot().files] == ["batch-7"]
    assert log.commit([_add("batch-8"), Txn("stream-1", 8)]).version == 2
    assert log.snapshot().app_version("stream-1") == 8


def test_txn_already_done_by_concurrent_winner_is_noop(tmp_path: Path) -> None:
    root = tmp_path / "t"
    a = _log(root)
    read = a.snapshot()
    DeltaLog(LocalStorage(), str(root)).commit([_add("by-winner"), Txn("job", 1)])
    result = a.commit([_add("by-loser"), Txn("job", 1)], read_version=read.version)
    assert result.noop and [f.path for f in a.snapshot().files] == ["by-winner"]


def test_create_twice_raises(tmp_path: Path) -> None:
    _log(tmp_path / "t")
    with pytest.raises(TableExistsError):
        _log(tmp_path / "t")


def test_create_with_variant_declares_features(tmp_path: Path) -> None:
    schema = StructType((StructField("i", PrimitiveType("integer")), StructField("v", VariantType())))
    log = DeltaLog(LocalStorage(), str(tmp_path / "t"))
    snap = log.create(schema, properties={"delta.enableVariantShredding": "true"})
    assert snap.protocol == Protocol(3, 7, ("variantShredding", "variantType"), ("variantShredding", "variantType"))
    with pytest.raises(InvalidCommitError, match="Variant column 'v' cannot be a partition column"):
        DeltaLog(LocalStorage(), str(tmp_path / "u")).create(schema, ["v"])
    assert not (tmp_path / "u" / "_delta_log").exists()


@pytest.mark.parametrize(
    ("actions", "error", "message"),
    [
        ([_add("../escape.parquet")], UnsafePathError, "escapes the table root"),
        ([_add("/etc/passwd")], UnsafePathError, "outside the table root"),
        ([_add("s3://other-bucket/x.parquet")], UnsafePathError, "outside the table root"),
        ([_add("a/%2E%2E/%2E%2E/x.parquet")], UnsafePathError, "escapes the table root"),
        ([_add("_delta_log/00000000000000000009.json")], UnsafePathError, "points into _delta_log"),
        ([_add("f"), _add("f")], InvalidCommitError, "added twice"),
        ([Txn("a", 1), Txn("a", 2)], InvalidCommitError, "appears twice"),
        ([_add("f", p="x")], InvalidCommitError, "do not match partition columns"),
        (
            [
                AddFile(
                    "f",
                    1,
                    deletion_vector={"storageType": "i", "pathOrInlineDv": "x", "sizeInBytes": 1, "cardinality": 1},
                )
            ],
            UnsupportedFeatureError,
            "deletionVectors",
        ),
        ([Protocol(1, 1)], InvalidCommitError, "protocol downgrade"),
    ],
)
def test_invalid_commits_write_nothing(tmp_path: Path, actions: list, error: type, message: str) -> None:
    root = tmp_path / "t"
    log = _log(root)
    before = _log_files(root)
    with pytest.raises(error, match=message):
        log.commit(actions)
    assert _log_files(root) == before


def test_absolute_path_inside_root_is_accepted(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _log(root)
    assert log.commit([_add(f"file://{root}/abs.parquet"), _add(f"{root}/abs2.parquet")]).version == 1


def test_append_only_table_refuses_removes(tmp_path: Path) -> None:
    log = _log(tmp_path / "t", **{"delta.appendOnly": "true"})
    assert log.snapshot().protocol == Protocol(1, 2)
    log.commit([_add("f")])
    with pytest.raises(InvalidCommitError, match="append-only"):
        log.commit([RemoveFile("f", 1)])
    log.commit([RemoveFile("f", 1, data_change=False), AddFile("g", 10, {}, 1, False)], "OPTIMIZE")


def test_metadata_change_with_variant_needs_protocol_upgrade(tmp_path: Path) -> None:
    log = _log(tmp_path / "t")
    snap = log.snapshot()
    schema = StructType(SCHEMA.fields + (StructField("v", VariantType()),))
    meta = Metadata(snap.metadata.id, schema.to_schema_string(), (), {})
    with pytest.raises(InvalidCommitError, match="need table feature variantType"):
        log.commit([meta], "ADD COLUMNS")
    upgraded = Protocol(3, 7, ("variantType",), ("appendOnly", "invariants", "variantType"))
    result = log.commit([meta, upgraded], "ADD COLUMNS")
    assert result.snapshot.protocol == upgraded and result.snapshot.schema == schema


def test_partitioned_commit_and_commit_file_shape(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _log(root, ("p",))
    log.commit(
        [_add("p=x/f.parquet", p="x"), _add("p=__null/g.parquet", p=None)], operation_parameters={"mode": "Append"}
    )
    lines = (root / "_delta_log" / "00000000000000000001.json").read_text().splitlines()
    assert list(json.loads(lines[0])) == ["commitInfo"]
    assert [list(json.loads(line))[0] for line in lines[1:]] == ["add", "add"]
    assert {f.path: dict(f.partition_values) for f in log.snapshot().files} == {
        "p=x/f.parquet": {"p": "x"},
        "p=__null/g.parquet": {"p": None},
    }


def test_in_commit_timestamps_are_monotonic(tmp_path: Path) -> None:
    log = _log(tmp_path / "t", **{"delta.enableInCommitTimestamps": "true"})
    assert "inCommitTimestamp" in log.snapshot().protocol.writer_feature_set
    for i in range(3):
        log.commit([_add(f"f{i}")])
    stamps = [log.commit_info(v)["inCommitTimestamp"] for v in range(4)]
    assert stamps == sorted(stamps) and len(set(stamps)) == 4
    assert [h.timestamp for h in reversed(log.history())] == stamps
    assert log.snapshot().timestamp == stamps[-1]


def test_commit_takes_a_bare_log_store(tmp_path: Path) -> None:
    """``transaction.commit`` needs only the log store; a ``DeltaLog`` on the same root sees the commit."""
    root = tmp_path / "t"
    log = _log(root)
    store = LogStore(LocalStorage(), str(root))
    result = commit(store, [_add("via-store"), Txn("app", 1)], "WRITE")
    assert result.version == 1 and store.latest_version() == 1
    assert store.snapshot() is result.snapshot  # the store caches the state it just committed
    assert [f.path for f in log.snapshot().files] == ["via-store"]
    assert log.commit([_add("again"), Txn("app", 1)]).noop  # the txn it recorded is honoured
    assert commit(store, [_add("x")], "WRITE", read_version=0).version == 2
    assert LogStore(LocalStorage(), str(tmp_path / "none")).latest_version() is None
