"""The archived timeline of layout 1 (``.hoodie/archived``, Hudi log files of
``HoodieArchivedMetaEntry`` records): time travel and incremental reads that start before the
active timeline read it, and give the rows they give on the table before archival."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hudi_log_writer import avro_block
from hudi_tables import hudi_tables, rows  # noqa: F401

from varlake.errors import HudiInstantNotFoundError
from varlake.hudi import open_snapshot, read_incremental, read_snapshot
from varlake.io.storage import LocalStorage

NAME = "cow/v6_simplekeygen_nonhivestyle_overwritetable"

_STAT = {
    "type": "record",
    "name": "HoodieWriteStat",
    "fields": [
        {"name": n, "type": ["null", t], "default": None}
        for n, t in (("fileId", "string"), ("path", "string"), ("partitionPath", "string"), ("numWrites", "long"), ("prevCommit", "string"))
    ],
}
_COMMIT = {
    "type": "record",
    "name": "HoodieCommitMetadata",
    "fields": [
        {"name": "partitionToWriteStats", "type": ["null", {"type": "map", "values": {"type": "array", "items": _STAT}}], "default": None},
        {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}], "default": None},
        {"name": "operationType", "type": ["null", "string"], "default": None},
    ],
}
ENTRY = {
    "type": "record",
    "name": "HoodieArchivedMetaEntry",
    "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": "hoodieCommitMetadata", "type": ["null", _COMMIT], "default": None},
        {"name": "commitTime", "type": ["null", "string"], "default": None},
        {"name": "actionType", "type": ["null", "string"], "default": None},
        {"name": "actionState", "type": ["null", "string"], "default": None},
    ],
}


def _archive(src: Path, dest: Path, count: int) -> list[str]:
    """A copy of ``src`` whose first ``count`` commits moved to the archived timeline."""
    shutil.copytree(src, dest)
    hoodie = dest / ".hoodie"
    commits = sorted(p for p in hoodie.glob("*.commit"))[:count]
    records = []
    for path in commits:
        ts = path.name.split(".")[0]
        md = json.loads(path.read_text())
        stats = {
            p: [{k: (str(s[k]) if k == "prevCommit" and s.get(k) is not None else s.get(k)) for k in ("fileId", "path", "partitionPath", "numWrites", "prevCommit")} for s in v]
            for p, v in md["partitionToWriteStats"].items()
        }
        records.append({
            "hoodieCommitMetadata": {"partitionToWriteStats": stats, "extraMetadata": md.get("extraMetadata") or {}, "operationType": md.get("operationType")},
            "commitTime": ts,
            "actionType": "commit",
            "actionState": "COMPLETED",
        })
        for leftover in hoodie.glob(f"{ts}.*"):
            leftover.unlink()
    archived = hoodie / "archived"
    archived.mkdir(exist_ok=True)
    (archived / ".commits_.archive.1_1-0-1").write_bytes(avro_block(records[-1]["commitTime"], ENTRY, records))
    return [r["commitTime"] for r in records]


def test_time_travel_and_incremental_reads_reach_the_archived_timeline(hudi_tables: dict[str, Path], tmp_path: Path) -> None:
    src = hudi_tables[NAME]
    root = tmp_path / "t"
    archived = _archive(src, root, 2)
    active = open_snapshot(LocalStorage(), str(root)).timeline
    assert [i.timestamp for i in active.completed_writes] not in ([], archived)
    assert rows(read_snapshot(LocalStorage(), str(root))) == rows(read_snapshot(LocalStorage(), str(src)))
    for ts in archived:
        assert rows(read_snapshot(LocalStorage(), str(root), ts)) == rows(read_snapshot(LocalStorage(), str(src), ts)), ts
    first = archived[0]
    assert rows(read_incremental(LocalStorage(), str(root), first)) == rows(read_incremental(LocalStorage(), str(src), first))
    assert rows(read_incremental(LocalStorage(), str(root), "19700101000000000", archived[1])) == rows(
        read_incremental(LocalStorage(), str(src), "19700101000000000", archived[1])
    )
    with pytest.raises(HudiInstantNotFoundError):
        read_snapshot(LocalStorage(), str(root), "20000101000000000")


def test_layout_2_history_is_refused_by_name(hudi_tables: dict[str, Path], tmp_path: Path) -> None:
    from varlake.errors import UnsupportedHudiFeatureError

    root = tmp_path / "t"
    shutil.copytree(hudi_tables["cow/v8_nonpartitioned"], root)
    with pytest.raises(HudiInstantNotFoundError):
        read_snapshot(LocalStorage(), str(root), "20000101000000000")
    history = root / ".hoodie" / "timeline" / "history"
    history.mkdir(exist_ok=True)
    (history / "_version_").write_text("1")
    with pytest.raises(UnsupportedHudiFeatureError, match="LSM timeline history"):
        read_snapshot(LocalStorage(), str(root), "20000101000000000")
    with pytest.raises(UnsupportedHudiFeatureError, match="LSM timeline history"):
        read_incremental(LocalStorage(), str(root), "19700101000000000")
    assert read_snapshot(LocalStorage(), str(root)).num_rows == 4
