"""varlake.spark over tables with deletion vectors: deleted rows are filtered by their row
index (``_metadata.row_index``) while Spark's Parquet scan still prunes columns and row
groups, in plain and shredded reads alike, and at every version.

Oracles: Delta's tests for its golden table, and ``Table.scan`` (checked against
``pyroaring``-built DVs in tests/read/test_scan_deletion_vectors.py) for varlake's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dv_tables import delete_rows, dv_table

import varlake.spark as vs
from varlake.errors import CorruptDeletionVectorError
from varlake.spark.reading.prepare import prepare

pytestmark = pytest.mark.spark

GOLDEN = Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "delta" / "golden"


def test_basic_dv_no_checkpoint(spark) -> None:  # noqa: ANN001
    path = GOLDEN / "basic-dv-no-checkpoint"
    assert sorted(r.id for r in vs.read(spark, path).collect()) == list(range(2, 10))
    assert sorted(r.id for r in vs.read(spark, path, where="id % 2 = 0").collect()) == [2, 4, 6, 8]
    assert vs.sql(spark, "SELECT count(*) AS n, sum(id) AS s FROM {t}", t=path).collect()[0].asDict() == {"n": 8, "s": 44}
    assert sorted(r.id for r in vs.read(spark, path, version=0).collect()) == list(range(10))
    assert sorted(r.id for r in vs.read(spark, path, where="id < 3").collect()) == [2]


@pytest.fixture(scope="module")
def dv_tables_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # a root with characters Spark's file paths spell differently (space, %, +, non-ASCII)
    return tmp_path_factory.mktemp("dv") / "a dir%20+é"


@pytest.mark.parametrize("partitioned", [False, True])
def test_every_storage_type_across_row_groups(spark, dv_tables_root: Path, partitioned: bool) -> None:  # noqa: ANN001
    table = dv_table(dv_tables_root / f"plain-{partitioned}", [23, 9, 17, 5], row_group_size=4, partitioned=partitioned)
    rels = sorted((f.path for f in table.files()), key=lambda p: p.rsplit("-", 1)[1])  # by file number
    delete_rows(table, {rels[0]: ("u", [0, 3, 4, 5, 6, 22]), rels[1]: ("i", [8]), rels[2]: ("p", list(range(0, 17, 2)))}, "q9")
    for where in (None, "id >= 17", "id BETWEEN 5 AND 40", "id < 0"):
        expected = sorted(table.scan(where).to_arrow().column("id").to_pylist())
        got = sorted(r.id for r in vs.read(spark, table, where=where).collect())
        assert got == expected, where
    assert vs.sql(spark, "SELECT count(*) AS n FROM {t}", t=table).collect()[0].n == table.scan().to_arrow().num_rows
    # the same files at the version before the deletes: the shared read must not be reused
    assert vs.read(spark, table, version=1).count() == 54
    assert vs.read(spark, table).count() == 54 - 6 - 1 - 9


def test_shredded_reads_apply_deletion_vectors(spark, dv_tables_root: Path) -> None:  # noqa: ANN001
    table = dv_table(dv_tables_root / "shredded", [30, 12], row_group_size=8, variant=True)
    rels = sorted((f.path for f in table.files()), key=lambda p: p.rsplit("-", 1)[1])  # by file number
    delete_rows(table, {rels[0]: ("u", [1, 2, 17, 29]), rels[1]: ("i", [0, 11])})
    live = sorted(table.scan().to_arrow().column("id").to_pylist())
    assert len(live) == 36
    rows = vs.read(spark, table, columns=["id", "v:a::int AS a"], where="v:a::int >= 10").collect()
    assert sorted((r.id, r.a) for r in rows) == [(x, x) for x in live if x >= 10]
    prepared = prepare(spark, "SELECT v:a::int AS a FROM {t}", {"t": table})
    assert any(g.kind == "shredded" for g in prepared.plans["t"].groups)  # the struct-leaf read path was used


def test_a_corrupt_dv_fails_the_spark_read(spark, tmp_path: Path) -> None:  # noqa: ANN001
    table = dv_table(tmp_path / "t", [10], 4)
    delete_rows(table, {table.files()[0].path: ("u", [1])})
    (dv_file,) = (tmp_path / "t").glob("deletion_vector_*.bin")
    raw = bytearray(dv_file.read_bytes())
    raw[-1] ^= 1
    dv_file.write_bytes(bytes(raw))
    with pytest.raises(CorruptDeletionVectorError, match="CRC-32"):
        vs.read(spark, table).collect()


def test_a_file_spark_names_otherwise_fails_rather_than_returning_deleted_rows(spark, tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    import varlake.spark.reading.deleted_rows as deleted_rows

    table = dv_table(tmp_path / "t", [10], 4)
    delete_rows(table, {table.files()[0].path: ("i", [1])})
    monkeypatch.setattr(deleted_rows, "spark_file_name", lambda uri: uri + "-not-its-name")
    with pytest.raises(Exception, match="named otherwise than varlake expects"):
        vs.read(spark, table).collect()


def test_row_groups_are_still_skipped_and_row_indexes_stay_right(spark, tmp_path: Path) -> None:  # noqa: ANN001
    from varlake.spark.reading.explain import executed_scans

    table = dv_table(tmp_path / "t", [40], row_group_size=4)
    delete_rows(table, {table.files()[0].path: ("u", [1, 29, 33, 38, 39])})
    df = vs.read(spark, table, where="id >= 30")
    assert sorted(r.id for r in df.collect()) == [30, 31, 32, 34, 35, 36, 37]
    scanned = [n.metrics().apply("numOutputRows").value() for n in executed_scans(df)]
    assert sum(scanned) <= 12  # only the row groups of ids 28..39 were read


@pytest.mark.parametrize(("name", "rows"), [("table-with-dv-small", 8), ("dv-with-columnmapping", 35)])
def test_delta_dv_tables_count_their_live_rows(spark, name: str, rows: int) -> None:  # noqa: ANN001
    """DeletionVectorsSuite: table-with-dv-small keeps 1..8 of 0..9; GoldenTables.scala:
    dv-with-columnmapping keeps 35 of 50 rows (15 single-row DELETEs). (Their values need
    column mapping in the Spark reader: tests/read checks them through Table.scan.)"""
    assert vs.sql(spark, "SELECT count(*) AS n FROM {t}", t=GOLDEN / name).collect()[0].n == rows
    assert vs.read(spark, GOLDEN / name).count() == rows
