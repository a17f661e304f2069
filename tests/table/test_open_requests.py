"""What opening a table and scanning it asks of its storage: ``_last_checkpoint`` is read
once and the log listed once for the load (the scan's listing only looks for commits made
since, from the version the open found), and a commit made between the open and the scan
is seen by the scan."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa

from varlake import Table
from varlake.delta import constants as C
from varlake.io.storage import FileInfo, LocalStorage


class CountingStorage(LocalStorage):
    """A ``LocalStorage`` that counts its listings (with where they start) and its reads."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.listings: list[str | None] = []

    def list(self, prefix: str, start_after: str | None = None) -> list[FileInfo]:
        self.calls["list"] += 1
        self.listings.append(start_after)
        return super().list(prefix, start_after)

    def read(self, path: str) -> bytes:
        name = path.rsplit("/", 1)[-1]
        kind = "last_checkpoint" if name == C.LAST_CHECKPOINT else name.split(".", 1)[-1]
        self.calls[f"read {kind}"] += 1
        return super().read(path)


def _table(root: Path, commits: int, checkpoint_at: int | None) -> None:
    table = Table.create(str(root), "id bigint")
    for i in range(commits):
        table.append(pa.table({"id": pa.array([i], pa.int64())}))
        if table.version == checkpoint_at:
            table.log.checkpoint()


def test_open_and_scan_read_last_checkpoint_once_and_list_once_for_the_load(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root, 6, checkpoint_at=3)
    storage = CountingStorage()
    table = Table(str(root), storage=storage)
    rows = table.scan().to_arrow().num_rows
    assert rows == 6
    assert storage.calls["read last_checkpoint"] == 1
    # the open lists from the hinted checkpoint (3); the load lists from the version found (6) on
    assert storage.listings == [f"{3:020d}", f"{6:020d}"]
    assert storage.calls["read checkpoint.parquet"] == 1
    assert storage.calls["read json"] == 3  # commits 4, 5 and 6, each once


def test_open_then_a_commit_then_scan_sees_the_commit(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root, 2, checkpoint_at=None)
    storage = CountingStorage()
    table = Table(str(root), storage=storage)
    Table(str(root)).append(pa.table({"id": pa.array([99], pa.int64())}))
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [0, 1, 99]
    assert storage.calls["read last_checkpoint"] == 1
    assert storage.listings == [None, f"{2:020d}"]


def test_a_log_rewritten_between_open_and_load_is_listed_afresh(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "t"
    _table(root, 2, checkpoint_at=None)
    storage = CountingStorage()
    table = Table(str(root), storage=storage)
    shutil.rmtree(root)
    again = Table.create(str(root), "id bigint")
    for n in (1, 20, 300):  # commit 2 differs in size from the one the open listed
        again.append(pa.table({"id": pa.array(range(n), pa.int64())}))
    assert table.scan().to_arrow().num_rows == 321
    assert storage.listings == [None, f"{2:020d}", None]
