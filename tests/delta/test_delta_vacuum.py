"""Vacuum: retention rules, retained versions' files survive, hidden paths untouched, dry run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from varlake.delta import AddFile, DeltaLog, RemoveFile
from varlake.delta.log_store import LogStore
from varlake.delta.schema import PrimitiveType, StructField, StructType
from varlake.delta.vacuum import vacuum
from varlake.errors import UnsafeRetentionError
from varlake.io import LocalStorage

HOUR = 3_600_000
T0 = 1_700_000_000_000
NOW = T0 + 400 * HOUR


def _touch(path: Path, ms: int, data: bytes = b"x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_bytes(data)
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def _table(root: Path) -> DeltaLog:
    """v0 create @0h, v1 add a,b @1h, v2 remove a @2h, v3 add c @300h; strays around them."""
    log = DeltaLog(LocalStorage(), str(root))
    log.create(StructType((StructField("id", PrimitiveType("long")),)))
    log.commit([AddFile("a.parquet", 1), AddFile("b.parquet", 1)])
    log.commit([RemoveFile("a.parquet", T0 + 2 * HOUR)], "DELETE")
    log.commit([AddFile("c.parquet", 1)])
    for v, hours in enumerate([0, 1, 2, 300]):
        _touch(root / "_delta_log" / f"{v:020d}.json", T0 + hours * HOUR)
    for name, hours in [
        ("a.parquet", 1),
        ("b.parquet", 1),
        ("c.parquet", 300),
        ("junk.parquet", 0),
        ("fresh.parquet", 399),
    ]:
        _touch(root / name, T0 + hours * HOUR)
    _touch(root / "p=1" / "stray.parquet", T0)
    _touch(root / "_change_data" / "cdc.parquet", T0)
    _touch(root / ".hidden", T0)
    return DeltaLog(LocalStorage(), str(root))


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts}


def test_default_retention_deletes_only_unreferenced_old_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _table(root)
    before = _files(root)
    planned = log.vacuum(dry_run=True, now_ms=NOW)
    assert planned == ["a.parquet", "junk.parquet", "p=1/stray.parquet"]
    assert _files(root) == before  # dry run deletes nothing
    assert log.vacuum(now_ms=NOW) == planned
    assert _files(root) == before - set(planned)
    assert {"b.parquet", "c.parquet", "fresh.parquet", "_change_data/cdc.parquet", ".hidden"} <= _files(root)
    assert len(list((root / "_delta_log").glob("*.json"))) == 4


def test_files_of_versions_inside_retention_are_kept(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _table(root)
    # cutoff at 1h: version 1 (which still has a.parquet) is reachable by time travel
    deleted = log.vacuum(retention_hours=399, now_ms=NOW)
    assert "a.parquet" not in deleted and deleted == ["junk.parquet", "p=1/stray.parquet"]
    assert sorted(f.path for f in log.snapshot(timestamp=T0 + HOUR).files) == ["a.parquet", "b.parquet"]
    assert (root / "a.parquet").exists()


def test_short_retention_needs_explicit_flag(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _table(root)
    with pytest.raises(UnsafeRetentionError, match="below the safe minimum of 168"):
        log.vacuum(retention_hours=1, now_ms=NOW)
    with pytest.raises(UnsafeRetentionError):
        log.vacuum(retention_hours=-5, unsafe_retention=True, now_ms=NOW)
    assert log.vacuum(retention_hours=0, unsafe_retention=True, now_ms=NOW) == [
        "a.parquet",
        "fresh.parquet",
        "junk.parquet",
        "p=1/stray.parquet",
    ]
    assert {"b.parquet", "c.parquet"} <= _files(root)


def test_table_property_can_raise_the_safe_minimum(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog(LocalStorage(), str(root))
    log.create(
        StructType((StructField("id", PrimitiveType("long")),)),
        properties={"delta.deletedFileRetentionDuration": "interval 30 days"},
    )
    with pytest.raises(UnsafeRetentionError, match="720"):
        log.vacuum(retention_hours=200)
    assert log.vacuum(retention_hours=720) == []


def test_young_tombstones_protect_files(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _table(root)
    log.commit([AddFile("d.parquet", 1)])
    log.commit([RemoveFile("d.parquet", T0 + 600 * HOUR)], "DELETE")  # the remover's clock says 600h
    for v, hours in [(4, 301), (5, 302)]:
        _touch(root / "_delta_log" / f"{v:020d}.json", T0 + hours * HOUR)
    _touch(root / "d.parquet", T0)
    # at 700h the version rule alone would free d.parquet (v5, current at the cutoff, has no d),
    # but its tombstone is younger than the retention
    deleted = log.vacuum(now_ms=T0 + 700 * HOUR)
    assert "d.parquet" not in deleted and "a.parquet" in deleted
    assert "d.parquet" in log.vacuum(now_ms=T0 + 800 * HOUR, dry_run=True)


def test_vacuum_takes_a_bare_log_store(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _table(root)
    store = LogStore(LocalStorage(), str(root))
    assert vacuum(store, dry_run=True, now_ms=NOW) == ["a.parquet", "junk.parquet", "p=1/stray.parquet"]
    assert (root / "a.parquet").exists()
    assert vacuum(store, now_ms=NOW) == ["a.parquet", "junk.parquet", "p=1/stray.parquet"]
    assert not (root / "a.parquet").exists()
