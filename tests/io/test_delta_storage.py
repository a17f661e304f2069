"""LocalStorage: put-if-absent is atomic across processes; listings never show temp files."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from varlake.errors import StorageFileNotFoundError
from varlake.io import LocalStorage


def _race(args: tuple[str, int]) -> bool:
    path, who = args
    payload = (f"writer {who}\n" * 20_000).encode()  # large enough to be written in several chunks
    return LocalStorage().write_if_absent(path, payload)


def test_write_if_absent_creates_once(tmp_path: Path) -> None:
    s = LocalStorage(tmp_path)
    assert s.write_if_absent("d/x.json", b"first")
    assert not s.write_if_absent("d/x.json", b"second")
    assert s.read("d/x.json") == b"first"
    assert [f.name for f in s.list("d")] == ["x.json"]


def test_write_if_absent_one_winner_across_processes(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    target = str(tmp_path / "race.json")
    with ctx.Pool(2) as pool:
        for round_ in range(5):
            path = f"{target}.{round_}"
            results = pool.map(_race, [(path, i) for i in range(8)])
            assert results.count(True) == 1
            winner = results.index(True)
            assert Path(path).read_bytes() == (f"writer {winner}\n" * 20_000).encode()
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".varlake-tmp-")]


def test_list_sorted_with_start_after_and_no_temp_files(tmp_path: Path) -> None:
    s = LocalStorage(tmp_path)
    for name in ["b", "a", "c"]:
        s.write(f"dir/{name}", name.encode())
    (tmp_path / "dir" / ".varlake-tmp-abc").write_bytes(b"half")
    (tmp_path / "dir" / "sub").mkdir()
    assert [f.name for f in s.list("dir")] == ["a", "b", "c"]
    assert [f.name for f in s.list("dir", start_after="a")] == ["b", "c"]
    assert s.list("missing") == []
    info = s.list("dir")[0]
    assert info.size == 1 and info.mtime_ms > 0 and info.path == "dir/a"


def test_overwrite_delete_rename_exists_info(tmp_path: Path) -> None:
    s = LocalStorage(tmp_path)
    s.write("f", b"one")
    s.write("f", b"two!")
    assert s.read("f") == b"two!" and s.info("f").size == 4
    s.rename("f", "g/h")
    assert not s.exists("f") and s.exists("g/h")
    assert s.delete("g/h") and not s.delete("g/h")
    with pytest.raises(StorageFileNotFoundError, match="no such file: g/h"):
        s.read("g/h")
    with pytest.raises(StorageFileNotFoundError):
        s.info("g/h")


def test_walk_is_recursive(tmp_path: Path) -> None:
    s = LocalStorage(tmp_path)
    s.write("t/a=1/x.parquet", b"x")
    s.write("t/y.parquet", b"y")
    assert [f.path for f in s.walk("t")] == ["t/a=1/x.parquet", "t/y.parquet"]
    assert s.location("t") == str(tmp_path / "t")
