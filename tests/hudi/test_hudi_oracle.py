"""Every hudi-rs test table reads to hudi-rs's rows, or is refused by a named error."""

from __future__ import annotations

from pathlib import Path

import pytest
from hudi_tables import LANCE_TABLES, hudi_tables, oracle_incremental, oracle_read, rows  # noqa: F401

from varlake.errors import UnsupportedHudiFeatureError
from varlake.hudi import open_snapshot, read_incremental, read_snapshot
from varlake.io.storage import LocalStorage

#: merge-on-read tables whose latest slices have log files
MOR_WITH_LOGS = (
    "mor/avro/v6_trips_8i3d",
    "mor/avro/v9_timebasedkeygen_nonhivestyle",
    "mor/parquet/v6_complexkeygen_hivestyle",
    "mor/parquet/v6_nonpartitioned",
)


def _readable(tables: dict[str, Path]) -> list[str]:
    return sorted(n for n in tables if n not in LANCE_TABLES)


def test_every_table_is_known(hudi_tables: dict[str, Path]) -> None:
    assert set(LANCE_TABLES) <= set(hudi_tables)
    assert set(MOR_WITH_LOGS) <= set(hudi_tables)


def test_snapshot_reads_equal_hudi_rs(hudi_tables: dict[str, Path]) -> None:
    compared = 0
    for name in _readable(hudi_tables):
        root = hudi_tables[name]
        got = read_snapshot(LocalStorage(), str(root))
        expected = oracle_read(root)
        if expected.num_columns == 0:
            assert got.num_rows == 0, name
            continue
        assert rows(got) == rows(expected), name
        compared += 1
    assert compared >= 18


def test_merge_on_read_slices_with_logs_are_merged_or_refused(hudi_tables: dict[str, Path]) -> None:
    for name in MOR_WITH_LOGS:
        snap = open_snapshot(LocalStorage(), str(hudi_tables[name]))
        assert any(s.logs for s in snap.slices), name
        with pytest.raises(UnsupportedHudiFeatureError, match="merge-on-read log files"):
            read_snapshot(LocalStorage(), str(hudi_tables[name]), merge=None)


def test_merge_on_read_time_travel_equals_hudi_rs(hudi_tables: dict[str, Path]) -> None:
    """Snapshot reads (logs merged) as of every completed instant of the MOR tables."""
    checked = 0
    for name in _readable(hudi_tables):
        if not name.startswith("mor/"):
            continue
        root = hudi_tables[name]
        for inst in open_snapshot(LocalStorage(), str(root)).timeline.completed_writes:
            got = read_snapshot(LocalStorage(), str(root), inst.timestamp)
            expected = oracle_read(root, as_of=inst.timestamp)
            assert rows(got, text=True) == rows(expected, text=True), (name, inst.timestamp)
            checked += 1
    assert checked == 53


def test_read_optimized_reads_equal_hudi_rs(hudi_tables: dict[str, Path]) -> None:
    mor = 0
    for name in _readable(hudi_tables):
        root = hudi_tables[name]
        got = read_snapshot(LocalStorage(), str(root), read_optimized=True)
        expected = oracle_read(root, read_optimized=True)
        if expected.num_columns == 0:
            assert got.num_rows == 0, name
            continue
        assert rows(got) == rows(expected), name
        mor += name.startswith("mor/")
    assert mor == 9


def test_lance_tables_are_refused_by_name(hudi_tables: dict[str, Path]) -> None:
    for name in LANCE_TABLES:
        with pytest.raises(UnsupportedHudiFeatureError, match="LANCE base files"):
            read_snapshot(LocalStorage(), str(hudi_tables[name]))


def test_time_travel_to_every_commit_equals_hudi_rs(hudi_tables: dict[str, Path]) -> None:
    """As of each completed commit (request time), read-optimized. hudi-rs types a column
    whose type changed later (``ts_millis``: long, then string) as the latest schema does;
    varlake reads it as the files of that instant hold it, so values compare as text."""
    checked = 0
    for name in _readable(hudi_tables):
        root = hudi_tables[name]
        snap = open_snapshot(LocalStorage(), str(root))
        for inst in snap.timeline.completed_writes:
            got = read_snapshot(LocalStorage(), str(root), inst.timestamp, read_optimized=True)
            expected = oracle_read(root, read_optimized=True, as_of=inst.timestamp)
            assert rows(got, text=True)[1] == rows(expected, text=True)[1], (name, inst.timestamp)
            checked += 1
    assert checked > 100


def test_time_travel_sees_the_overwritten_rows(hudi_tables: dict[str, Path]) -> None:
    root = str(hudi_tables["cow/v6_simplekeygen_nonhivestyle_overwritetable"])
    snap = open_snapshot(LocalStorage(), root)
    first, second, replace = snap.timeline.completed_writes
    assert replace.action == "replacecommit"
    assert read_snapshot(LocalStorage(), root, second.timestamp).num_rows == 4
    assert read_snapshot(LocalStorage(), root).num_rows == 1
    assert read_snapshot(LocalStorage(), root, first.timestamp).num_rows == 3


def test_incremental_reads_of_layout_1_tables_equal_hudi_rs(hudi_tables: dict[str, Path]) -> None:
    """Between consecutive commits of the layout-1 tables, logs merged on merge-on-read ones. (hudi-rs 0.5's
    incremental reads of layout-2 tables are off by one commit, so those are checked
    against the rows' own commit times below.)"""
    checked = 0
    for name in (
        "cow/v6_simplekeygen_nonhivestyle_overwritetable",
        "mor/avro/v6_trips_8i3d",
        "mor/parquet/v6_complexkeygen_hivestyle",
        "mor/parquet/v6_nonpartitioned",
        "mor/parquet/v6_simplekeygen_nonhivestyle_overwritetable",
    ):
        root = hudi_tables[name]
        snap = open_snapshot(LocalStorage(), str(root))
        times = ["19700101000000000"] + [i.timestamp for i in snap.timeline.completed_writes]
        for start, end in [*zip(times, times[1:]), (times[0], times[-1])]:
            got = read_incremental(LocalStorage(), str(root), start, end)
            expected = oracle_incremental(root, start, end)
            if expected.num_columns == 0:
                assert got.num_rows == 0, (name, start, end)
            else:
                assert rows(got) == rows(expected), (name, start, end)
            checked += 1
    assert checked == 17


def test_incremental_reads_are_the_rows_committed_in_range(hudi_tables: dict[str, Path]) -> None:
    """Each commit's incremental read is the rows of the snapshot at it stamped with its
    commit time, and the reads of consecutive ranges add up to the whole range's."""
    for name in ("cow/v9_txns_simple_nometa", "cow/v8_complexkeygen_hivestyle", "cow/v9_timebasedkeygen_epochmillis"):
        root = str(hudi_tables[name])
        snap = open_snapshot(LocalStorage(), root)
        times = ["19700101000000000"] + [i.timestamp for i in snap.timeline.completed_writes]
        pieces = 0
        for start, end in zip(times, times[1:]):
            got = read_incremental(LocalStorage(), root, start, end)
            at_end = read_snapshot(LocalStorage(), root, end)
            assert set(got.column("_hoodie_commit_time").to_pylist()) <= {end}, (name, end)
            stamped = [r for r in at_end.to_pylist() if r["_hoodie_commit_time"] == end]
            assert sorted(map(repr, got.to_pylist())) == sorted(map(repr, stamped)), (name, end)
            pieces += got.num_rows
        whole = read_incremental(LocalStorage(), root, times[0], times[-1])
        assert whole.num_rows == read_snapshot(LocalStorage(), root).num_rows
        assert pieces >= whole.num_rows > 0


def test_incremental_read_without_meta_fields_is_refused(hudi_tables: dict[str, Path]) -> None:
    with pytest.raises(UnsupportedHudiFeatureError, match="without meta fields"):
        read_incremental(LocalStorage(), str(hudi_tables["cow/v6_simplekeygen_hivestyle_no_metafields"]), "19700101000000000")


def test_pending_compaction_and_clustering_equal_hudi_rs(hudi_tables: dict[str, Path], tmp_path: Path) -> None:
    """The completed files of a compaction and of a clustering removed: both are pending
    (requested and inflight only), their base files do not count, and the slices before
    them (logs merged) are read, at every instant, as hudi-rs reads them."""
    import shutil

    for completed in ("20260307135839895_20260307135840408.commit", "20260307135840454_20260307135840902.replacecommit"):
        root = tmp_path / completed
        shutil.copytree(hudi_tables["mor/avro/v9_txns_simple_nometa"], root)
        (root / ".hoodie" / "timeline" / completed).unlink()
        snap = open_snapshot(LocalStorage(), str(root))
        assert completed.split("_")[0] in {i.timestamp for i in snap.timeline.pending}
        for inst in snap.timeline.completed_writes:
            got = read_snapshot(LocalStorage(), str(root), inst.timestamp)
            assert rows(got) == rows(oracle_read(root, as_of=inst.timestamp)), (completed, inst.timestamp)
        assert rows(read_snapshot(LocalStorage(), str(root))) == rows(oracle_read(root))
