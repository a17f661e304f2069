"""Vacuum on tables with deletion vectors: referenced DV files stay, unreferenced old ones go.

The log is written by hand, as Delta's DELETE leaves it (remove the logical file, add it
again with a DV): vacuum only reads descriptors, so data and DV files are placeholders.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from dv_tables import uuid_dv_path

from varlake.delta import DeltaLog
from varlake.errors import CorruptDeletionVectorError, UnsupportedFeatureError
from varlake.io import LocalStorage

HOUR = 3_600_000
T0 = 1_700_000_000_000
NOW = T0 + 400 * HOUR
SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})


def _touch(path: Path, ms: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_bytes(b"x")
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def _add(path: str, dv: dict | None = None) -> dict:
    body = {"path": path, "partitionValues": {}, "size": 1, "modificationTime": T0, "dataChange": True}
    return {"add": body | ({"deletionVector": dv} if dv else {})}


def _remove(path: str, hours: int, dv: dict | None = None) -> dict:
    body = {"path": path, "deletionTimestamp": T0 + hours * HOUR, "dataChange": True}
    return {"remove": body | ({"deletionVector": dv} if dv else {})}


def _dv(kind: str, text: str) -> dict:
    return {"storageType": kind, "pathOrInlineDv": text, "offset": 1, "sizeInBytes": 20, "cardinality": 1}


def _commit(
    root: Path, version: int, hours: int, actions: list[dict],
    features: tuple[str, ...] = ("deletionVectors",), schema: str = SCHEMA, configuration: dict | None = None,
) -> None:  # fmt: skip
    lines = [{"commitInfo": {"timestamp": T0 + hours * HOUR, "operation": "WRITE"}}]
    if version == 0:
        lines += [
            {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                          "readerFeatures": list(features), "writerFeatures": list(features)}},
            {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": schema,
                          "partitionColumns": [], "configuration": configuration or {}, "createdTime": T0}},
        ]  # fmt: skip
    path = root / "_delta_log" / f"{version:020d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(a) for a in lines + actions) + "\n")
    _touch(path, T0 + hours * HOUR)


def _dv_file(root: Path, hours: int, prefix: str = "") -> tuple[str, str]:
    """A placeholder DV file: its root-relative path and its ``u`` text."""
    location, text = uuid_dv_path(root, prefix)
    _touch(location, T0 + hours * HOUR)
    return str(location.relative_to(root)), text


def _table(tmp_path: Path) -> tuple[DeltaLog, dict[str, str]]:
    """v0 @0h adds a, b; v1 @1h gives a DV1 (``u``, prefix) and b DV2 (``p``); v2 @2h
    replaces a's DV1 by DV3; v3 @300h removes b (with DV2) and adds c and d, d's DV
    an absolute path outside the root. DV4 is an old stray, DV5 a fresh one."""
    root = tmp_path / "t"
    dv1, t1 = _dv_file(root, 1, "ab")
    dv2, _ = _dv_file(root, 1)
    dv3, t3 = _dv_file(root, 2)
    dv4, _ = _dv_file(root, 0, "cd")
    dv5, _ = _dv_file(root, 399)
    outside = tmp_path / "outside.bin"
    _touch(outside, T0)
    d1, d2, d3 = _dv("u", t1), _dv("p", (root / dv2).as_uri()), _dv("u", t3)
    d_out = _dv("p", outside.as_uri())
    _commit(root, 0, 0, [_add("a.parquet"), _add("b.parquet")])
    _commit(root, 1, 1, [_remove("a.parquet", 1), _add("a.parquet", d1), _remove("b.parquet", 1), _add("b.parquet", d2)])
    _commit(root, 2, 2, [_remove("a.parquet", 2, d1), _add("a.parquet", d3)])
    _commit(root, 3, 300, [_remove("b.parquet", 300, d2), _add("c.parquet"), _add("d.parquet", d_out)])
    for name, hours in [("a.parquet", 0), ("b.parquet", 0), ("c.parquet", 300), ("d.parquet", 300)]:
        _touch(root / name, T0 + hours * HOUR)
    return DeltaLog(LocalStorage(), str(root)), {"dv1": dv1, "dv2": dv2, "dv3": dv3, "dv4": dv4, "dv5": dv5}


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts}


def test_default_retention_keeps_referenced_dv_files(tmp_path: Path) -> None:
    log, dv = _table(tmp_path)
    root = tmp_path / "t"
    before = _files(root)
    planned = log.vacuum(dry_run=True, now_ms=NOW)
    # cutoff 232h: v2 is retained (a with DV3, b with DV2); b's tombstone (300h, DV2) is young;
    # DV1 is referenced only by a tombstone from 2h, DV4 by nothing
    assert planned == sorted([dv["dv1"], dv["dv4"]])
    assert _files(root) == before  # the dry run lists, deletes nothing
    assert log.vacuum(now_ms=NOW) == planned
    assert _files(root) == before - set(planned)
    assert (tmp_path / "outside.bin").exists()


def test_zero_retention_deletes_dvs_of_removed_files_only(tmp_path: Path) -> None:
    log, dv = _table(tmp_path)
    root = tmp_path / "t"
    deleted = log.vacuum(0, unsafe_retention=True, now_ms=NOW)
    # only v3 is retained: a (DV3), c, d (DV outside the root) are live
    assert deleted == sorted(["b.parquet", dv["dv1"], dv["dv2"], dv["dv4"], dv["dv5"]])
    assert _files(root) == {"a.parquet", "c.parquet", "d.parquet", dv["dv3"]}
    assert (tmp_path / "outside.bin").exists()


def test_a_dv_of_a_later_commit_is_kept(tmp_path: Path) -> None:
    """A DV added after the oldest retained version (time travel reaches it) is kept."""
    log, dv = _table(tmp_path)
    root = tmp_path / "t"
    # cutoff at 1h: v1 is the oldest retained version, v2's DV3 came later, v1's DV1 and DV2 are live
    deleted = log.vacuum(399, now_ms=NOW)
    assert deleted == [dv["dv4"]]
    assert {dv["dv1"], dv["dv2"], dv["dv3"], dv["dv5"]} <= _files(root)


def test_inline_dvs_need_no_file(tmp_path: Path) -> None:
    root = tmp_path / "t"
    inline = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
              "sizeInBytes": 40, "cardinality": 6}  # fmt: skip
    _commit(root, 0, 0, [_add("a.parquet", inline)])
    _touch(root / "a.parquet", T0)
    _touch(root / "stray.bin", T0)
    assert DeltaLog(LocalStorage(), str(root)).vacuum(0, unsafe_retention=True, now_ms=NOW) == ["stray.bin"]
    assert _files(root) == {"a.parquet"}


def test_an_unreadable_dv_descriptor_stops_vacuum_before_deleting(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _commit(root, 0, 0, [_add("a.parquet", _dv("u", "ab" + "\x7f" * 20))])
    _touch(root / "a.parquet", T0)
    _touch(root / "stray.parquet", T0)
    with pytest.raises(CorruptDeletionVectorError, match="not valid Z85"):
        DeltaLog(LocalStorage(), str(root)).vacuum(0, unsafe_retention=True, now_ms=NOW)
    assert _files(root) == {"a.parquet", "stray.parquet"}


def test_column_mapped_dv_tables_are_vacuumed(tmp_path: Path) -> None:
    """Column-mapped tables are written (and so vacuumed) now: only the stray file goes."""
    root = tmp_path / "t"
    field = {"name": "id", "type": "long", "nullable": True,
             "metadata": {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-1"}}  # fmt: skip
    schema = json.dumps({"type": "struct", "fields": [field]})
    features = ("deletionVectors", "columnMapping")
    _commit(root, 0, 0, [_add("a.parquet")], features, schema, {"delta.columnMapping.mode": "name"})
    _touch(root / "stray.parquet", T0)
    gone = DeltaLog(LocalStorage(), str(root)).vacuum(0, unsafe_retention=True, now_ms=NOW)
    assert [os.path.basename(p) for p in gone] == ["stray.parquet"]
    assert not (root / "stray.parquet").exists()
