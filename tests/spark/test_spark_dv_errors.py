"""A row a deletion vector deletes never makes a Spark query fail.

The deleted rows of these tables hold values on which the queries' casts raise under ANSI
(``'x0'`` for ``CAST(s AS INT)``, a string at ``$.a`` for ``v:a::int`` and
``variant_get(v, '$.a', 'int')``); the live rows hold values that cast. Read through
``varlake.spark.read`` and ``varlake.spark.sql`` -- filters, projections, aggregates, a
join -- every query returns exactly what ``Table.scan`` keeps, never an error, on the
variant read path and the shredded one, and Spark still skips row groups by the query's
comparisons. The deletion test itself (``varlake.spark.reading.deleted_rows``: ``IN`` lists, bitsets
across 64-row words, several files told apart by size and name) is checked against
``pyroaring``-built deletion vectors.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from dv_tables import delete_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import varlake.spark as vs
from varlake import Table
from varlake.delta.actions import AddFile
from varlake.io.parquet_write import write_parquet
from varlake.spark.reading.prepare import prepare
from varlake.table import to_arrow_table

pytestmark = pytest.mark.spark

SCHEMA = "id bigint, s string, v variant"


def _bad(i: int) -> bool:
    return i % 5 == 0


def _row(i: int, bad_variant: bool) -> dict[str, Any]:
    """Row ``i``: bad rows hold ``s`` that no INT cast takes and (``bad_variant``) a string at ``$.a``."""
    bad = _bad(i)
    return {
        "id": i,
        "s": f"x{i}" if bad else str(i),
        "v": {"a": f"bad{i}" if bad and bad_variant else i, "b": i % 3},
    }


def _table(root: Path, sizes: list[int], bad_variant: bool, row_group_size: int = 6) -> Table:
    """A shredding-enabled table of ``len(sizes)`` files; ``bad_variant`` puts strings at
    ``$.a`` of the bad rows (those files read as Variant), else ``$.a`` is a perfectly
    shredded int (shredded read path) and only ``s`` is bad."""
    table = Table.create(root, SCHEMA, properties={"delta.enableVariantShredding": "true"})
    snapshot = table.snapshot()
    adds, start = [], 0
    for n, size in enumerate(sizes):
        rel = f"data-{n:03d}.parquet"
        data = to_arrow_table([_row(i, bad_variant) for i in range(start, start + size)], snapshot.schema)
        start += size
        write_parquet(data, f"{root}/{rel}", row_group_size=row_group_size, shredding="auto", variant_columns=["v"])
        adds.append(AddFile(rel, os.path.getsize(f"{root}/{rel}"), {}, 1_700_000_000_000, True, table.file_stats_json(rel)))
    table.commit_files(adds, "append")
    return table


def _delete_bad(table: Table, storages: str = "uip") -> None:
    """Delete every bad row (and every id % 7 == 3) of every file but the last, cycling storage types."""
    files = sorted(table.files(), key=lambda a: a.path)
    deletions, start = {}, 0
    for k, add in enumerate(files):
        n = _file_rows(table, add.path)
        if k < len(files) - 1:
            rows = [r for r in range(n) if _bad(start + r) or (start + r) % 7 == 3]
            deletions[add.path] = (storages[k % len(storages)], rows)
        start += n
    delete_rows(table, deletions, "ab")


def _file_rows(table: Table, rel: str) -> int:
    import pyarrow.parquet as pq

    return pq.read_metadata(table.open_file(rel)).num_rows


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Table]:
    root = tmp_path_factory.mktemp("dv-errors")
    out = {}
    for name, bad_variant in (("variant", True), ("shredded", False)):
        table = _table(root / name, [23, 17, 12], bad_variant)
        _delete_bad(table)
        out[name] = table
    return out


def _good_live(table: Table) -> list[int]:
    """``Table.scan``'s live ids outside the last file (the only file whose bad rows are live)."""
    ids = sorted(table.scan().to_arrow().column("id").to_pylist())
    assert [i for i in ids if i >= 40] == list(range(40, 52))  # the last file: no DV
    return [i for i in ids if i < 40]


@pytest.mark.parametrize("name", ["variant", "shredded"])
def test_filters_that_would_raise_on_deleted_rows(spark: Any, tables: dict[str, Table], name: str) -> None:
    table = tables[name]
    good = _good_live(table)
    assert good and not any(_bad(i) for i in good)
    cases = {
        "id < 40 AND v:a::int >= 0": good,
        "id < 40 AND CAST(s AS INT) % 2 = 1": [i for i in good if i % 2 == 1],
        "id < 40 AND variant_get(v, '$.a', 'int') = 7": [i for i in good if i == 7],
        "id < 40 AND CAST(s AS INT) = id AND v:b::int = 1": [i for i in good if i % 3 == 1],
    }
    for where, expected in cases.items():
        got = sorted(r.id for r in vs.read(spark, table, columns=["id"], where=where).collect())
        assert got == expected, (name, where)


@pytest.mark.parametrize("name", ["variant", "shredded"])
def test_queries_that_would_raise_on_deleted_rows(spark: Any, tables: dict[str, Table], name: str) -> None:
    table = tables[name]
    good = _good_live(table)
    q = "SELECT id, CAST(s AS INT) AS n, variant_get(v, '$.a', 'int') AS a FROM {t} WHERE id < 40"
    rows = sorted(tuple(r) for r in vs.sql(spark, q, t=table).collect())
    assert rows == [(i, i, i) for i in good]
    agg = vs.sql(spark, "SELECT count(*) AS n, sum(v:a::int) AS a, max(CAST(s AS INT)) AS m FROM {t} WHERE id < 40", t=table)
    assert tuple(agg.collect()[0]) == (len(good), sum(good), max(good))
    joined = vs.sql(
        spark,
        "SELECT l.id FROM {t} l JOIN {u} r ON CAST(l.s AS INT) = r.v:a::int WHERE l.id < 40 AND r.id < 40",
        t=table, u=table,
    )  # fmt: skip
    assert sorted(r.id for r in joined.collect()) == good


def test_live_bad_rows_still_raise(spark: Any, tables: dict[str, Table]) -> None:
    """The last file has no DV: its bad rows are live, so Spark's error stands (the guard
    hides deleted rows, not live ones)."""
    with pytest.raises(Exception, match="CAST_INVALID_INPUT"):
        vs.read(spark, tables["shredded"], columns=["id"], where="CAST(s AS INT) > 0").collect()


def test_the_shredded_table_takes_the_shredded_path(spark: Any, tables: dict[str, Table]) -> None:
    explanation = vs.explain(spark, "SELECT id FROM {t} WHERE v:a::int >= 0", t=tables["shredded"], show=False)
    assert [g.kind for g in explanation.plans["t"].groups] == ["shredded"]
    assert "deletion vectors: 2 file(s)" in str(explanation)
    prepared = prepare(spark, "SELECT id FROM {t} WHERE v:a::int >= 0", {"t": tables["variant"]})
    assert {g.kind for g in prepared.plans["t"].groups} == {"variant"}


def test_row_groups_are_skipped_with_the_guard(spark: Any, tmp_path: Path) -> None:
    """The deletion test sits in the scan's Filter, the query's comparison still reaches the
    Parquet scan: only the row groups that can hold ``id >= 30`` are read."""
    from varlake.spark.reading.explain import executed_scans

    table = _table(tmp_path / "t", [48], bad_variant=True, row_group_size=6)
    delete_rows(table, {table.files()[0].path: ("u", [r for r in range(48) if _bad(r)])})
    df = vs.read(spark, table, columns=["id"], where="id >= 30 AND v:a::int >= 0")
    assert sorted(r.id for r in df.collect()) == [i for i in range(30, 48) if not _bad(i)]
    scans = executed_scans(df)
    assert any("id" in str(s.toString()) and "GreaterThanOrEqual" in str(s.toString()) for s in scans)
    assert sum(n.metrics().apply("numOutputRows").value() for n in scans) <= 18


# --- the deletion test against pyroaring-built deletion vectors -----------------------------------------------


ROWS = 300


@settings(max_examples=6, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.sets(st.integers(0, ROWS - 1), max_size=8),  # an IN list
            st.sets(st.integers(0, ROWS - 1), min_size=65, max_size=250),  # a bitset
            st.builds(lambda a, n: set(range(a, min(ROWS, a + n))), st.integers(0, ROWS - 1), st.integers(60, 200)),  # runs over words
        ),
        min_size=3,
        max_size=3,
    )
)
def test_deletion_tests_match_table_scan(spark: Any, tmp_path_factory: pytest.TempPathFactory, deleted: list[set[int]]) -> None:
    from dv_tables import dv_table

    root = tmp_path_factory.mktemp("dvprop") / "t"
    table = dv_table(root, [ROWS, ROWS, ROWS + 1], row_group_size=64)  # two files of one size: told apart by name
    rels = sorted((f.path for f in table.files()), key=lambda p: p.rsplit("-", 1)[1])
    delete_rows(table, {rel: ("iup"[k], rows) for k, (rel, rows) in enumerate(zip(rels, deleted))})
    expected = sorted(table.scan().to_arrow().column("id").to_pylist())
    assert len(expected) == 3 * ROWS + 1 - sum(len(d) for d in deleted)
    assert sorted(r.id for r in vs.read(spark, table, columns=["id"]).collect()) == expected
    assert sorted(r.id for r in vs.read(spark, table, columns=["id"], where="id % 3 = 1").collect()) == [i for i in expected if i % 3 == 1]


def test_keep_sql_shapes() -> None:
    import numpy as np

    from varlake.spark.reading.deleted_rows import DeletedRows, keep_sql, word_index_sql

    words: list = []
    assert word_index_sql(np.array([], np.uint64), "r", words, 2) == "0"
    assert word_index_sql(np.array([3, 10**6], np.uint64), "r", words, 2) == "IF(r IN (3, 1000000), 1, 0)"
    bits = word_index_sql(np.arange(100, 200, dtype=np.uint64), "r", words, 2)
    assert bits == "IF(r < 64 OR r > 199, 0, 1 + shiftright(r, 6))" and len(words) == 1
    files = [DeletedRows(f"f{i}", 10 + i // 2, np.array([i], np.uint64)) for i in range(6)]
    sql = keep_sql(files, "r", "f", "z", "it's gone")
    assert sql.count("IF(z < ") == 2 and sql.count("raise_error('it\\'s gone')") == 3
    assert keep_sql([], "r", "f", "z", "x") == "raise_error('x')"
