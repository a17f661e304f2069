"""Log replay, checkpoints (single- and multi-part) and ``_last_checkpoint``."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.delta import AddFile, DeltaLog, RemoveFile, Txn
from varlake.delta.checkpoint import checkpoint_table
from varlake.delta.last_checkpoint import json_checksum, read_last_checkpoint, write_last_checkpoint
from varlake.delta.log import multipart_checkpoint_name
from varlake.delta.schema import PrimitiveType, StructField, StructType, VariantType
from varlake.io import LocalStorage

SCHEMA = StructType((StructField("id", PrimitiveType("long")), StructField("v", VariantType())))


def _stats(n: int) -> str:
    return json.dumps(
        {
            "numRecords": n,
            "minValues": {"id": n, "v": "0rJlc5f$EczEEx"},
            "maxValues": {"id": n * 2},
            "nullCount": {"id": 0, "v": 1},
        }
    )


def _add(path: str, n: int = 1) -> AddFile:
    return AddFile(path, 100 + n, {}, 1_700_000_000_000, True, _stats(n))


def _log(root: Path, **props: str) -> DeltaLog:
    log = DeltaLog(LocalStorage(), str(root))
    log.create(SCHEMA, properties=props)
    return log


def test_add_remove_reconciliation(tmp_path: Path) -> None:
    log = _log(tmp_path / "t")
    log.commit([_add("a"), _add("b")])
    log.commit([_add("a", 7)])  # re-add: newest stats win
    log.commit([RemoveFile("b", 5)])
    log.commit([_add("b", 3), RemoveFile("a", 6)])  # re-add of a removed path, remove of a live one
    snap = DeltaLog(LocalStorage(), str(tmp_path / "t")).snapshot()
    assert snap.version == 4
    assert {f.path: f.parsed_stats["numRecords"] for f in snap.files} == {"b": 3}
    assert [t.path for t in snap.tombstones] == ["a"]
    assert snap.files_table.column("path").to_pylist() == ["b"]


def test_txn_versions_latest_wins(tmp_path: Path) -> None:
    log = _log(tmp_path / "t")
    log.commit([_add("a"), Txn("app", 3)])
    log.commit([_add("b"), Txn("app", 4), Txn("other", 1)])
    snap = DeltaLog(LocalStorage(), str(tmp_path / "t")).snapshot()
    assert dict(snap.app_versions) == {"app": 4, "other": 1}
    assert snap.app_version("nobody") is None


@settings(max_examples=25, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.lists(st.integers(0, 11), max_size=3, unique=True),  # paths to add (re-add allowed)
            st.lists(st.integers(0, 11), max_size=2, unique=True),  # paths to remove if live
            st.booleans(),  # checkpoint after this commit
        ),
        min_size=1,
        max_size=12,
    ),
    interval=st.sampled_from(["2", "5", "1000"]),
)
def test_replay_matches_model(ops: list, interval: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = _log(Path(tmp) / "t", **{"delta.checkpointInterval": interval})
        live: dict[str, int] = {}
        history = {0: {}}
        for step, (to_add, to_remove, checkpoint) in enumerate(ops, start=1):
            removed = [f"f{i}" for i in to_remove if f"f{i}" in live and i not in to_add]
            actions = [_add(f"f{i}", step) for i in to_add] + [RemoveFile(p, step) for p in removed]
            if not actions:
                actions = [_add(f"g{step}", step)]
            for a in actions:
                if isinstance(a, AddFile):
                    live[a.path] = step
                else:
                    live.pop(a.path)
            result = log.commit(actions)
            history[result.version] = dict(live)
            if checkpoint:
                log.checkpoint()
        fresh = DeltaLog(LocalStorage(), str(Path(tmp) / "t"))
        for version, expected in history.items():
            snap = fresh.snapshot(version)
            assert {f.path: f.parsed_stats["numRecords"] for f in snap.files} == expected
        assert {f.path: f.num_records for f in fresh.snapshot().files} == live


def test_checkpoint_round_trip_keeps_stats(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _log(root, **{"delta.checkpointInterval": "1000"})
    for i in range(5):
        log.commit([_add(f"p{i}", i), Txn("app", i)])
    log.commit([RemoveFile("p0", 2_000_000_000_000)])
    before = log.snapshot()
    path = log.checkpoint()
    assert path.endswith("00000000000000000006.checkpoint.parquet")
    for v in range(7):  # the checkpoint alone must now carry the whole state
        (root / "_delta_log" / f"{v:020d}.json").unlink()
    after = DeltaLog(LocalStorage(), str(root)).snapshot()
    assert after.version == 6
    assert [(f.path, f.stats, f.size) for f in after.files] == [(f.path, f.stats, f.size) for f in before.files]
    assert after.files[0].parsed_stats["nullCount"] == {"id": 0, "v": 1}
    assert [t.path for t in after.tombstones] == ["p0"]
    assert dict(after.app_versions) == {"app": 4}
    assert after.protocol == before.protocol and after.metadata == before.metadata
    columns = pq.read_schema(path).names
    assert set(columns) == {"protocol", "metaData", "txn", "add", "remove", "domainMetadata"}


def test_expired_tombstones_leave_the_checkpoint(tmp_path: Path) -> None:
    log = _log(tmp_path / "t")
    log.commit([_add("old"), _add("new")])
    log.commit([RemoveFile("old", 1_000), RemoveFile("new", 10**13)])
    table = checkpoint_table(log.snapshot().state, now_ms=10**13)
    removes = [r["path"] for r in table.column("remove").to_pylist() if r is not None]
    assert removes == ["new"]


def test_auto_checkpoint_every_interval(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _log(root, **{"delta.checkpointInterval": "3"})
    for i in range(7):
        log.commit([_add(f"f{i}")])
    names = sorted(p.name for p in (root / "_delta_log").glob("*.checkpoint.parquet"))
    assert names == ["00000000000000000003.checkpoint.parquet", "00000000000000000006.checkpoint.parquet"]
    hint = read_last_checkpoint(LocalStorage(), str(root / "_delta_log"))
    assert hint is not None and hint["version"] == 6 and hint["numOfAddFiles"] == 6 and hint["size"] == 8
    assert hint["checksum"] == json_checksum(hint)


def test_default_checkpoint_interval_is_ten(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _log(root)
    for i in range(10):
        log.commit([_add(f"f{i}")])
    assert [p.name for p in (root / "_delta_log").glob("*.checkpoint.parquet")] == [
        "00000000000000000010.checkpoint.parquet"
    ]


def test_multi_part_checkpoint_is_read(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _log(root, **{"delta.checkpointInterval": "1000"})
    for i in range(7):
        log.commit([_add(f"f{i}", i), Txn("app", i)])
    log.commit([RemoveFile("f1", 2_000_000_000_000)])
    expected = log.snapshot()
    table = checkpoint_table(expected.state)
    bounds = [0, 4, 9, table.num_rows]
    for part in range(3):
        name = multipart_checkpoint_name(8, part + 1, 3)
        pq.write_table(table.slice(bounds[part], bounds[part + 1] - bounds[part]), root / "_delta_log" / name)
    for v in range(9):
        (root / "_delta_log" / f"{v:020d}.json").unlink()
    # with commits 0..8 gone, the next snapshot can only come from the three parts
    snap = DeltaLog(LocalStorage(), str(root)).snapshot()
    assert snap.version == 8
    assert sorted(f.path for f in snap.files) == sorted(f.path for f in expected.files)
    assert {f.path: f.stats for f in snap.files} == {f.path: f.stats for f in expected.files}
    assert [t.path for t in snap.tombstones] == ["f1"] and dict(snap.app_versions) == {"app": 6}


def test_multi_part_checkpoint_with_missing_part_is_ignored(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _log(root, **{"delta.checkpointInterval": "1000"})
    for i in range(4):
        log.commit([_add(f"f{i}")])
    table = checkpoint_table(log.snapshot().state)
    # parts 1 and 3 of 3 only, and part 1 alone is a wrong (partial) state
    pq.write_table(table.slice(0, 3), root / "_delta_log" / multipart_checkpoint_name(4, 1, 3))
    pq.write_table(table.slice(5), root / "_delta_log" / multipart_checkpoint_name(4, 3, 3))
    snap = DeltaLog(LocalStorage(), str(root)).snapshot()
    assert sorted(f.path for f in snap.files) == ["f0", "f1", "f2", "f3"]


def test_last_checkpoint_hint_is_only_a_hint(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _log(root, **{"delta.checkpointInterval": "1000"})
    for i in range(3):
        log.commit([_add(f"f{i}")])
    log.checkpoint()  # version 3
    log.commit([_add("f3")])
    log.checkpoint()  # version 4
    log.commit([_add("f4")])
    storage, log_dir = LocalStorage(), str(root / "_delta_log")
    hint_path = root / "_delta_log" / "_last_checkpoint"
    assert json.loads(hint_path.read_text())["version"] == 4
    write_last_checkpoint(storage, log_dir, {"version": 3, "size": 1})  # never moves backwards
    assert json.loads(hint_path.read_text())["version"] == 4

    stale = {"version": 3, "size": 5}
    hint_path.write_text(json.dumps({**stale, "checksum": json_checksum(stale)}))
    for v in range(5):  # only checkpoint 4 + commit 5 remain usable
        (root / "_delta_log" / f"{v:020d}.json").unlink()
    assert sorted(f.path for f in DeltaLog(storage, str(root)).snapshot().files) == [f"f{i}" for i in range(5)]

    for bad in [
        "{not json",
        '{"version": "x"}',
        json.dumps({"version": 4, "size": 1, "checksum": "0" * 32}),
        json.dumps({"version": 99, "size": 1}),
    ]:
        hint_path.write_text(bad)
        snap = DeltaLog(storage, str(root)).snapshot()
        assert snap.version == 5 and snap.num_files == 5
    assert read_last_checkpoint(storage, log_dir) is not None  # {"version": 99} parses but points nowhere


def test_snapshot_is_immutable_and_cached_latest_updates(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _log(root)
    log.commit([_add("a")])
    first = log.snapshot()
    other = DeltaLog(LocalStorage(), str(root))
    other.commit([_add("b")])
    assert first.num_files == 1 and [f.path for f in first.files] == ["a"]
    second = log.snapshot()  # incremental: the commit by ``other`` is replayed on top of ``first``
    assert second.version == 2 and sorted(f.path for f in second.files) == ["a", "b"]
    assert log.snapshot() is second
