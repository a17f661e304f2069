"""History and time travel by version and by timestamp (commit file mtimes)."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from varlake.delta import AddFile, DeltaLog, RemoveFile
from varlake.delta.schema import PrimitiveType, StructField, StructType
from varlake.errors import MissingCommitError, VersionNotFoundError
from varlake.io import LocalStorage

SCHEMA = StructType((StructField("id", PrimitiveType("long")),))
T0 = 1_700_000_000_000  # ms


def _set_mtime(root: Path, version: int, ms: int) -> None:
    os.utime(root / "_delta_log" / f"{version:020d}.json", ns=(ms * 1_000_000, ms * 1_000_000))


def _table(root: Path, checkpoint_interval: str = "1000") -> DeltaLog:
    log = DeltaLog(LocalStorage(), str(root))
    log.create(SCHEMA, properties={"delta.checkpointInterval": checkpoint_interval})
    log.commit([AddFile("a", 1)], "WRITE")
    log.commit([AddFile("b", 1)], "WRITE")
    log.commit([RemoveFile("a", 5)], "DELETE", operation_parameters={"predicate": "id = 1"})
    log.commit([AddFile("c", 1)], "WRITE")
    for v in range(5):
        _set_mtime(root, v, T0 + v * 60_000)  # one commit a minute
    return DeltaLog(LocalStorage(), str(root))


def test_history_lists_commit_info_newest_first(tmp_path: Path) -> None:
    log = _table(tmp_path / "t")
    history = log.history()
    assert [h.version for h in history] == [4, 3, 2, 1, 0]
    assert [h.operation for h in history] == ["WRITE", "DELETE", "WRITE", "WRITE", "CREATE TABLE"]
    assert history[1].operation_parameters == {"predicate": "id = 1"} and history[1].read_version == 2
    assert history[1].is_blind_append is False and history[0].is_blind_append is True
    assert [h.timestamp for h in history] == [T0 + v * 60_000 for v in (4, 3, 2, 1, 0)]
    assert history[0].commit_info["engineInfo"].startswith("varlake/")
    assert [h.version for h in log.history(limit=2)] == [4, 3]


def test_time_travel_by_version(tmp_path: Path) -> None:
    log = _table(tmp_path / "t")
    assert [sorted(f.path for f in log.snapshot(v).files) for v in range(5)] == [
        [],
        ["a"],
        ["a", "b"],
        ["b"],
        ["b", "c"],
    ]
    assert log.snapshot(2).timestamp == T0 + 120_000
    with pytest.raises(VersionNotFoundError, match="version 9 does not exist"):
        log.snapshot(9)
    with pytest.raises(VersionNotFoundError):
        log.snapshot(-1)


def test_time_travel_by_timestamp(tmp_path: Path) -> None:
    log = _table(tmp_path / "t")
    assert log.snapshot(timestamp=T0 + 120_000).version == 2  # exactly at a commit
    assert log.snapshot(timestamp=T0 + 150_000).version == 2  # between commits: the earlier one
    assert log.snapshot(timestamp=datetime.fromtimestamp((T0 + 185_000) / 1000, tz=timezone.utc)).version == 3
    assert log.snapshot(timestamp=T0 + 10**9).version == 4  # after the last commit: latest
    with pytest.raises(VersionNotFoundError, match="before the earliest available commit"):
        log.snapshot(timestamp=T0 - 1)
    with pytest.raises(ValueError):
        log.snapshot(version=1, timestamp=T0)


def test_out_of_order_mtimes_are_made_monotonic(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _table(root)
    _set_mtime(root, 3, T0)  # clock went backwards for version 3
    stamps = {h.version: h.timestamp for h in log.history()}
    assert stamps[3] == stamps[2] + 1 and stamps[4] == T0 + 240_000
    assert log.snapshot(timestamp=stamps[2]).version == 2


def test_time_travel_after_log_cleanup_needs_a_checkpoint(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _table(root)
    log.checkpoint(2)
    for v in (0, 1):
        (root / "_delta_log" / f"{v:020d}.json").unlink()
    fresh = DeltaLog(LocalStorage(), str(root))
    assert sorted(f.path for f in fresh.snapshot(2).files) == ["a", "b"]
    assert sorted(f.path for f in fresh.snapshot(4).files) == ["b", "c"]
    with pytest.raises(VersionNotFoundError, match="version 1 cannot be reconstructed"):
        fresh.snapshot(1)
    assert fresh.snapshot(timestamp=T0 + 120_000).version == 2
    with pytest.raises(VersionNotFoundError):
        fresh.snapshot(timestamp=T0 + 60_000)


def test_gap_in_commits_is_a_missing_commit(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root)
    (root / "_delta_log" / f"{2:020d}.json").unlink()
    with pytest.raises(MissingCommitError, match=r"00000000000000000002.json: commit for version 2 is missing"):
        DeltaLog(LocalStorage(), str(root)).snapshot()
    assert sorted(f.path for f in DeltaLog(LocalStorage(), str(root)).snapshot(1).files) == ["a"]


def test_operation_parameters_are_written_as_delta_spark_reads_them(tmp_path):
    """delta-spark reads ``operationParameters`` as a map of strings: a list or an object value
    is written as its JSON text (else its DESCRIBE HISTORY fails on the table), scalars stay."""
    import json

    from varlake import Table

    table = Table.create(str(tmp_path / "t"), "id bigint", properties={"delta.appendOnly": "false"})
    table.append([{"id": 1}])
    infos = [
        json.loads(line)["commitInfo"]
        for f in sorted((tmp_path / "t" / "_delta_log").glob("*.json"))
        for line in f.read_text().splitlines()
        if '"commitInfo"' in line
    ]
    assert infos[0]["operationParameters"]["partitionBy"] == "[]"
    assert json.loads(infos[0]["operationParameters"]["properties"])["delta.appendOnly"] == "false"
    assert infos[1]["operationParameters"] == {"mode": "Append", "partitionBy": "[]"}
    assert table.history()[0].operation_parameters["partitionBy"] == "[]"
