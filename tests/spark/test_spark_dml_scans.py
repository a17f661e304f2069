"""Spark scans of tables with deletion vectors: the constant-size deletion test
(``deleted_rows._hashed_keep``, Spark's ``xxhash64`` reproduced in Python) agrees with the
binary-search one and with ``Table.scan``; ``SELECT count(*)`` through ``varlake.spark.sql``
is answered from the log (numRecords minus DV cardinalities) when nothing else decides it,
and counted by Spark otherwise."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dv_tables import delete_rows, dv_table

import varlake.spark as vs
from varlake import Table
from varlake.spark.reading.deleted_rows import DeletedRows, keep_sql, spark_xxhash64

pytestmark = pytest.mark.spark


def test_spark_xxhash64_is_sparks(spark: Any) -> None:
    rng = random.Random(7)
    alphabet = "abcxyz/._-:é€😀"
    texts = ["", "a", "file:/tmp/x/part-0001.parquet"] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 120))) for _ in range(300)
    ]
    got = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, t string").selectExpr("i", "xxhash64(t) AS h").collect()
    assert {r.i: r.h for r in got} == {i: spark_xxhash64(t) for i, t in enumerate(texts)}


def _deleted_table(root: Path) -> tuple[Table, dict[str, list[int]]]:
    """Eight files of one size (so the file size tells none apart) and one other, with
    deletion vectors of every shape: none, one row, a run, spread rows, sparse ends."""
    table = dv_table(root, [200] * 8 + [150], row_group_size=50, partitioned=True)
    rels = sorted(f.path for f in table.files())
    shapes = [[0], list(range(60, 140)), list(range(0, 200, 7)), [3, 199], [], list(range(200)), [5, 6, 7], [150], list(range(0, 150, 2))]
    deletions = {rel: ("iup"[k % 3], rows) for k, (rel, rows) in enumerate(zip(rels, shapes)) if rows}
    delete_rows(table, deletions)
    return table, {rel: rows for rel, (_, rows) in deletions.items()}


def test_both_deletion_tests_agree_with_the_table_scan(spark: Any, tmp_path: Path) -> None:
    from varlake.spark.reading.deleted_rows import deleted_rows_by_name

    table, _ = _deleted_table(tmp_path / "t")
    expected = sorted(table.scan().to_arrow().column("id").to_pylist())
    assert sorted(r.id for r in vs.read(spark, table, columns=["id"]).collect()) == expected
    assert sorted(r.id for r in vs.read(spark, table, columns=["id"], where="id % 5 = 1").collect()) == [i for i in expected if i % 5 == 1]
    from varlake.read import plan_scan

    tasks = list(plan_scan(table.snapshot(), table.log.root_location).tasks)
    relation = spark.read.parquet(*[table.open_file(t.relative_path) for t in tasks])
    found = [f for f, _ in deleted_rows_by_name(relation, table, tasks)]
    assert all(f.records is not None for f in found)
    frame = relation.selectExpr("id", "_metadata.file_path AS f", "_metadata.row_index AS r", "_metadata.file_size AS z")
    hashed = keep_sql(found, "r", "f", "z", "unknown file")
    searched = keep_sql([DeletedRows(f.name, f.size, f.rows) for f in found], "r", "f", "z", "unknown file")
    assert "xxhash64" in hashed and "xxhash64" not in searched
    for keep in (hashed, searched):
        assert sorted(r.id for r in frame.where(keep).collect()) == expected
    # a row of a file the test was not built for raises, never reads as kept
    for keep in (keep_sql(found[1:], "r", "f", "z", "unknown file"), keep_sql([DeletedRows(f.name, f.size, f.rows) for f in found[1:]], "r", "f", "z", "unknown file")):
        with pytest.raises(Exception, match="unknown file"):
            frame.where(keep).collect()


def _explained(df: Any, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    df.explain()
    return capsys.readouterr().out.lower()


def test_count_star_is_answered_from_the_log(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table, _ = _deleted_table(tmp_path / "t")
    rows = table.scan().to_arrow()
    total = rows.num_rows
    in_p1 = sum(1 for p in rows.column("p").to_pylist() if p == 1)
    cases = {
        "SELECT count(*) FROM {t}": [(total,)],
        "SELECT COUNT(1) AS n, count(*) FROM {t}": [(total, total)],
        "SELECT count(*) FROM {t} WHERE p = 1": [(in_p1,)],
        "SELECT count(*) FROM {t} x WHERE p IN (0, 1) AND NOT (p <> 1) OR p IS NULL": [(in_p1,)],
    }
    for query, answer in cases.items():
        df = vs.sql(spark, query, t=table)
        assert [tuple(r) for r in df.collect()] == answer, query
        assert "parquet" not in _explained(df, capsys), query
    assert vs.sql(spark, "SELECT count(*) FROM {t}", t=table).columns == spark.sql("SELECT count(*) FROM range(1)").columns == ["count(1)"]
    assert vs.sql(spark, "SELECT COUNT(1) AS n, count(*) FROM {t}", t=table).columns == ["n", "count(1)"]
    assert vs.sql(spark, "SELECT count(*) AS `a b` FROM {t}", t=table).columns == ["a b"]
    # an older version is counted as it was
    assert vs.sql(spark, "SELECT count(*) FROM {t}", t=table, versions={"t": 1}).collect()[0][0] == 200 * 8 + 150


def test_count_star_falls_back_to_spark(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from varlake.read import ScanTask

    table, _ = _deleted_table(tmp_path / "t")
    ids = table.scan().to_arrow().column("id").to_pylist()
    for query, answer in {
        "SELECT count(*) FROM {t} WHERE id > 100": sum(1 for i in ids if i > 100),  # a data column
        "SELECT count(*) FROM {t} WHERE p = 1 AND id > 100": sum(1 for i in ids if i > 100 and (i // 200 if i < 1600 else 8) % 2 == 1),
        "SELECT count(*) FROM {t} WHERE CAST(p AS STRING) = '1'": None,  # a cast: Spark decides
        "SELECT count(*) FROM {t} GROUP BY p": None,
    }.items():
        df = vs.sql(spark, query, t=table)
        assert "parquet" in _explained(df, capsys), query
        if answer is not None:
            got = df.collect()
            assert (got[0][0] if got else 0) == answer, query
    assert vs.sql(spark, "SELECT count(*) FROM {t} LIMIT 0", t=table).collect() == []
    monkeypatch.setattr(ScanTask, "num_records", property(lambda self: None))  # no numRecords: rows are counted
    df = vs.sql(spark, "SELECT count(*) FROM {t}", t=table)
    assert "parquet" in _explained(df, capsys)
    assert df.collect()[0][0] == len(ids)


def test_an_aliased_dml_condition_skips_by_its_unaliased_predicate() -> None:
    """``DELETE``/``UPDATE`` with a target alias: the condition's sqlglot tree, the alias
    dropped, becomes the skipping predicate directly (``expr.sql.predicate_of``)."""
    from varlake.expr import parse_predicate
    from varlake.spark.changes.dml import _unaliased

    got = _unaliased("d.id = 12 AND D.v:a::int > 1 AND (d.s IS NULL OR x IN (1, 2))", "d")
    assert got == parse_predicate("id = 12 AND v:a::int > 1 AND (s IS NULL OR x IN (1, 2))")
    assert _unaliased("round(d.id, 1) = 1", "d") is None  # nothing to skip by: every file is a candidate
    assert _unaliased("d.id = ", "d") is None
    assert _unaliased("id = 1", None) == "id = 1"  # no alias: the text as given
