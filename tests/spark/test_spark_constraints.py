"""varlake.spark.write honours CHECK constraints and invariants: Spark checks every row while it
writes; a violation raises ConstraintViolationError (Delta's message, the row's values), commits
nothing and leaves no file. Spark's and varlake's evaluation of the constraints agree."""

from __future__ import annotations

import pyarrow as pa
import pytest

from varlake import Table
from varlake.errors import ConstraintViolationError, UnsupportedFeatureError
from varlake.spark import write
from varlake.write.staging.constraints import check_arrow, table_constraints

from constraint_tables import add_constraints, files_under

pytestmark = pytest.mark.spark


@pytest.fixture
def checked(tmp_path):
    root = str(tmp_path / "t")
    t = Table.create(root, "x bigint, s string, n struct<a: int>")
    t.append([{"x": 1, "s": "a", "n": {"a": 1}}])
    add_constraints(root, constraints={"pos": "x > 0", "early": "s < 'l' OR s IS NULL"}, invariants={"n": "n.a < 10"})
    return root


def _df(spark, sql: str):
    return spark.sql(sql)


def _fails(root: str, call, match: str) -> str:
    before, version = files_under(root), Table(root).snapshot().version
    with pytest.raises(ConstraintViolationError, match=match) as info:
        call()
    assert files_under(root) == before
    assert Table(root).snapshot().version == version
    return str(info.value)


def test_satisfying_rows_land(spark, checked):
    df = _df(spark, "SELECT id + 1 AS x, 'k' AS s, named_struct('a', CAST(id AS INT)) AS n FROM range(5)")
    write(df, checked, mode="append")
    assert Table(checked).scan().to_arrow().num_rows == 6


def test_check_violation(spark, checked):
    df = _df(spark, "SELECT id - 2 AS x, 'a' AS s, named_struct('a', 1) AS n FROM range(1, 4) ORDER BY id DESC")
    msg = _fails(checked, lambda: write(df, checked, mode="append"), "pos")
    assert "CHECK constraint pos x > 0 violated by row with values:\n - x : " in msg
    assert " - x : -1" in msg or " - x : 0" in msg


def test_null_result_and_invariant(spark, checked):
    df = _df(spark, "SELECT CAST(NULL AS BIGINT) AS x, 'a' AS s, named_struct('a', 1) AS n")
    assert " - x : null" in _fails(checked, lambda: write(df, checked, mode="append"), "pos")
    df = _df(spark, "SELECT 3L AS x, 'a' AS s, named_struct('a', 12) AS n")
    msg = _fails(checked, lambda: write(df, checked, mode="overwrite"), "EXPRESSION")
    assert "CHECK constraint EXPRESSION(n.a < 10) n.a < 10 violated by row with values:\n - n.a : 12" in msg
    assert Table(checked).scan().to_arrow().column("x").to_pylist() == [1]


EXPRESSIONS = [
    "x > 0",
    "x BETWEEN -3 AND 3",
    "x IN (1, 2, 3) OR x IS NULL",
    "NOT (x = 2) AND s <> 'b'",
    "s >= 'b' OR x < 0",
    "x IS NOT NULL AND s IS NULL",
    "CAST(x AS STRING) < '2'",
    "x <=> 2 OR s IN ('a', NULL)",
    "d > 1.5 OR d IS NULL",
    "d = x OR d < -1",
    "d IN (0.0, 2.0) AND x >= 0",
]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_spark_and_varlake_agree(spark, tmp_path, expr):
    """Each row alone is written by both engines: accepted or refused alike."""
    nan = float("nan")
    rows = [(x, s, d) for x in (None, -4, 0, 2) for s in (None, "a", "b") for d in (None, nan, -2.5, 0.0, 2.0)]
    root = str(tmp_path / "a")
    Table.create(root, "x bigint, s string, d double")
    add_constraints(root, constraints={"c": expr})
    snap = Table(root).snapshot()
    data = pa.table(
        {
            "x": pa.array([r[0] for r in rows], pa.int64()),
            "s": pa.array([r[1] for r in rows], pa.string()),
            "d": pa.array([r[2] for r in rows], pa.float64()),
        }
    )
    ours = []
    for i in range(len(rows)):
        try:
            check_arrow(data.slice(i, 1), snap.schema, snap.properties)
            ours.append(True)
        except ConstraintViolationError:
            ours.append(False)
    sdf = spark.createDataFrame(rows, "x bigint, s string, d double")
    theirs = [r[0] for r in sdf.selectExpr(f"coalesce({expr}, false) AS ok").collect()]
    assert ours == theirs
    if not all(theirs):  # and the writer refuses the whole batch
        with pytest.raises(ConstraintViolationError):
            write(sdf, root, mode="append")


def test_spark_evaluates_what_varlake_cannot(spark, tmp_path):
    """Spark evaluates any SQL (Delta's semantics); the pyarrow writer refuses what it cannot."""
    root = str(tmp_path / "u")
    Table.create(root, "x bigint")
    add_constraints(root, constraints={"inc": "round(x + 1, 0) > 1"})
    write(spark.sql("SELECT 1L AS x"), root, mode="append")
    _fails(root, lambda: write(spark.sql("SELECT 0L AS x"), root, mode="append"),
           r"inc round\(x \+ 1, 0\) > 1 violated.*\n - x : 0")
    with pytest.raises(UnsupportedFeatureError, match="cannot be evaluated by varlake"):
        Table(root).append([{"x": 5}])
    assert Table(root).scan().to_arrow().column("x").to_pylist() == [1]


def test_not_null_checked_per_row(spark, tmp_path):
    """As Delta: a nullable DataFrame column may fill a NOT NULL column while it holds no NULL."""
    root = str(tmp_path / "nn")
    Table.create(root, pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())]))
    df = spark.sql("SELECT CASE WHEN id >= 0 THEN id END AS id, 'a' AS v FROM range(3)")
    assert df.schema["id"].nullable
    write(df, root, mode="append")
    nulls = spark.sql("SELECT CASE WHEN id > 0 THEN id END AS id, 'a' AS v FROM range(3)")
    _fails(root, lambda: write(nulls, root, mode="append"), r"NOT NULL constraint violated for column: id\.")
    assert sorted(Table(root).scan().to_arrow().column("id").to_pylist()) == [0, 1, 2]
