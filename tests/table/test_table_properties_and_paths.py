"""Table properties are validated when they are set, nothing after a commit point raises,
and partition columns whose names look like paths never write outside the table root."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

import varlake
from varlake.errors import InvalidTablePropertyError


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("delta.checkpointInterval", "0"),
        ("delta.checkpointInterval", "-1"),
        ("delta.checkpointInterval", "abc"),
        ("delta.checkpointInterval", "1.5"),
        ("delta.dataSkippingNumIndexedCols", "x"),
        ("delta.dataSkippingNumIndexedCols", "-2"),
        ("delta.deletedFileRetentionDuration", "a week"),
        ("delta.logRetentionDuration", "forever"),
        ("delta.enableVariantShredding", "yes"),
        ("delta.appendOnly", "1"),
    ],
)
def test_bad_properties_are_refused_when_set_and_nothing_is_created(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(InvalidTablePropertyError, match=key.replace(".", r"\.")):
        varlake.Table.create(tmp_path / "t", "id bigint", properties={key: value})
    assert not (tmp_path / "t" / "_delta_log").exists() or not any((tmp_path / "t" / "_delta_log").iterdir())


def test_good_properties_are_accepted(tmp_path: Path) -> None:
    t = varlake.Table.create(
        tmp_path / "t",
        "id bigint",
        properties={
            "delta.checkpointInterval": "3",
            "delta.dataSkippingNumIndexedCols": "-1",
            "delta.enableVariantShredding": "TRUE",
            "delta.deletedFileRetentionDuration": "interval 2 days",
        },
    )
    for i in range(4):
        assert t.append([{"id": i}]) == i + 1
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [0, 1, 2, 3]


def test_a_commit_that_lands_is_returned_even_when_the_checkpoint_cannot_be_planned(tmp_path: Path) -> None:
    """A table written by someone else carries a checkpoint interval varlake cannot use:
    the append commits, returns its version and warns; it never raises after the commit."""
    t = varlake.Table.create(tmp_path / "t", "id bigint")
    meta = t.snapshot().metadata
    bad = {
        "metaData": {
            "id": meta.id,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": meta.schema_string,
            "partitionColumns": [],
            "configuration": {"delta.checkpointInterval": "0"},
            "createdTime": meta.created_time,
        }
    }
    info = {"commitInfo": {"timestamp": 1, "operation": "SET TBLPROPERTIES"}}
    (tmp_path / "t" / "_delta_log" / "00000000000000000001.json").write_text(json.dumps(info) + "\n" + json.dumps(bad) + "\n")
    t = varlake.Table(tmp_path / "t")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert t.append([{"id": 7}]) == 2
    assert any("checkpoint" in str(w.message) for w in caught)
    assert [r["id"] for r in t.scan().to_arrow().to_pylist()] == [7]


def test_partition_columns_named_like_paths_stay_inside_the_root(tmp_path: Path) -> None:
    outer = tmp_path / "a" / "b"
    outer.mkdir(parents=True)
    before = _tree(tmp_path)
    name = "x/../../../evil"
    schema = pa.schema([("id", pa.int64()), (name, pa.string()), ("..", pa.string())])
    t = varlake.Table.create(outer / "t", schema, partition_by=[name, ".."])
    t.append([{"id": 1, name: "../../pv", "..": ".."}, {"id": 2, name: "/etc", "..": None}])
    added = _tree(tmp_path) - before
    assert added and all(p.startswith(str(Path("a") / "b" / "t")) for p in added), sorted(added)
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, name: "../../pv", "..": ".."}, {"id": 2, name: "/etc", "..": None}]


def test_an_add_with_a_deletion_vector_in_a_table_without_the_feature_is_refused(tmp_path: Path) -> None:
    t = varlake.Table.create(tmp_path / "t", "id bigint", properties={"delta.enableDeletionVectors": "false"})
    t.append([{"id": 1}, {"id": 2}])
    log = tmp_path / "t" / "_delta_log"
    lines = [json.loads(line) for line in (log / "00000000000000000001.json").read_text().splitlines()]
    add = next(a["add"] for a in lines if "add" in a)
    dv = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", "sizeInBytes": 40, "cardinality": 1}
    info = {"commitInfo": {"timestamp": 2, "operation": "DELETE"}}
    remove = {"remove": {"path": add["path"], "deletionTimestamp": 2, "dataChange": True}}
    (log / "00000000000000000002.json").write_text(
        "\n".join(json.dumps(x) for x in (info, remove, {"add": {**add, "deletionVector": dv}})) + "\n"
    )
    t = varlake.Table(tmp_path / "t")
    from varlake.errors import CorruptLogError

    with pytest.raises(CorruptLogError, match="deletionVector"):
        t.scan().to_arrow()
    with pytest.raises(CorruptLogError, match="deletionVector"):
        t.files()


def test_a_directory_at_the_next_commit_path_fails_at_once_and_commits_nothing(tmp_path: Path) -> None:
    import time

    from varlake.errors import VarlakeError

    t = varlake.Table.create(tmp_path / "t", "id bigint")
    (tmp_path / "t" / "_delta_log" / "00000000000000000001.json").mkdir()
    started = time.perf_counter()
    with pytest.raises(VarlakeError, match="00000000000000000001.json"):
        t.append([{"id": 1}])
    assert time.perf_counter() - started < 5
    assert t.version == 0 and t.scan().to_arrow().num_rows == 0
    assert not list((tmp_path / "t" / "_delta_log").glob(".*tmp*"))


def test_vacuum_removes_stale_temporary_files_and_never_a_live_file(tmp_path: Path) -> None:
    import os
    import time

    root = tmp_path / "t"
    t = varlake.Table.create(root, "id bigint, p string", partition_by=["p"])
    t.append([{"id": 1, "p": "a"}, {"id": 2, "p": "b"}])
    week_ago = time.time() - 8 * 24 * 3600
    stale = [
        root / "_delta_log" / ".varlake-tmp-0123456789abcdef",
        root / f".part-00000-x.c000.zstd.parquet.{'ab' * 16}.tmp",  # an earlier release's Parquet temp name
        root / "p=a" / ".varlake-tmp-feedface-part-1.parquet",
    ]
    fresh = root / "p=b" / ".varlake-tmp-cafe-part-2.parquet"
    for path in [*stale, fresh]:
        path.write_bytes(b"half a file")
    for path in [*stale, *(p for p in root.rglob("*.parquet") if p != fresh), *(root / "_delta_log").glob("*.json")]:
        os.utime(path, (week_ago, week_ago))
    removed = t.vacuum(retention_hours=1, unsafe_retention=True)
    assert sorted(removed) == sorted(str(p.relative_to(root)) for p in stale)
    assert not any(p.exists() for p in stale) and fresh.exists()
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [1, 2]
    assert t.vacuum(retention_hours=1, unsafe_retention=True) == []


def test_links_out_of_the_table_are_never_followed(tmp_path: Path) -> None:
    """Policy: a table's files are read and written only inside its root; vacuum deletes a
    stale link itself, never what it points to."""
    import os
    import time

    from varlake.errors import UnsafePathError

    a = varlake.Table.create(tmp_path / "a", "id bigint, p string", partition_by=["p"])
    b = varlake.Table.create(tmp_path / "b", "id bigint, p string", partition_by=["p"])
    a.append([{"id": 1, "p": "x"}])
    b.append([{"id": 666, "p": "x"}])
    (a_file,) = [a.data_file(f) for f in a.files()]
    (b_file,) = [b.data_file(f) for f in b.files()]
    os.remove(a_file)
    os.symlink(b_file, a_file)  # a's data file now points at b's
    with pytest.raises(UnsafePathError, match="outside the table root"):
        a.scan().to_arrow()

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, tmp_path / "a" / "p=y")  # a partition directory that leads out
    with pytest.raises(UnsafePathError):
        a.append([{"id": 2, "p": "y"}])
    assert not any(elsewhere.iterdir()) and a.version == 1

    target = tmp_path / "precious.bin"
    target.write_bytes(b"keep me")
    link = tmp_path / "a" / "stale-link.parquet"
    os.symlink(target, link)
    old = time.time() - 8 * 24 * 3600
    os.utime(link, (old, old), follow_symlinks=False)
    os.remove(tmp_path / "a" / "p=y")
    removed = a.vacuum(retention_hours=1, unsafe_retention=True, dry_run=True)
    assert "stale-link.parquet" in removed
    a.vacuum(retention_hours=1, unsafe_retention=True)
    assert not link.is_symlink() and target.read_bytes() == b"keep me"
