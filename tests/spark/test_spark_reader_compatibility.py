"""Spark's writes keep a ``varlake.compatibility=deltalake`` table readable by deltalake and
Polars (``delta.protocol``): a table created by ``varlake.spark.write`` with the property
has no deletion vectors and no shredding (even with ``shredding="auto"``), Spark writes
its Variant groups without the ``VARIANT`` annotation, and Spark's DELETE, UPDATE, MERGE
and OPTIMIZE rewrite files. Oracles: ``deltalake`` 1.6 and Polars read the rows
``Table.scan`` reads after each step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import varlake.spark as vs
from varlake import Table
from varlake.delta import constants as C
from varlake.errors import TableError
from varlake.variant import Variant

deltalake = pytest.importorskip("deltalake")
pl = pytest.importorskip("polars")

pytestmark = pytest.mark.spark

COMPAT = {C.PROP_COMPATIBILITY: "deltalake"}


def _frame(spark: Any, ids: range, tag: str) -> Any:
    plain = [(i, "xy"[i % 2], json.dumps({"id": i, "tag": tag})) for i in ids]
    return spark.createDataFrame(plain, "id bigint, p string, j string").selectExpr("id", "p", "parse_json(j) AS v")


def _rows(table: Any) -> list[tuple]:
    if not isinstance(table, pa.Table):
        table = table.to_arrow()
    out = []
    for r in table.to_pylist():
        v = r["v"]
        out.append((r["id"], r["p"], json.dumps(Variant(v["metadata"], v["value"]).to_python(), sort_keys=True)))
    return sorted(out)


def _check(root: Path) -> list[tuple]:
    mine = _rows(Table(root).scan().to_arrow())
    assert _rows(deltalake.DeltaTable(str(root)).to_pyarrow_table()) == mine
    assert _rows(pl.read_delta(str(root))) == mine
    snapshot = Table(root).snapshot()
    assert snapshot.protocol.reader_feature_set == {C.VARIANT_TYPE}
    assert all(f.deletion_vector is None for f in snapshot.files)
    return mine


def test_spark_writes_dml_and_optimize_keep_the_table_readable(spark, tmp_path: Path) -> None:  # noqa: ANN001
    root = tmp_path / "t"
    vs.write(_frame(spark, range(0, 20), "a"), str(root), partition_by=["p"], properties=COMPAT)
    props = Table(root).properties
    assert props[C.PROP_ENABLE_DELETION_VECTORS] == "false" and props[C.PROP_ENABLE_VARIANT_SHREDDING] == "false"
    assert not any(k.startswith("varlake.shredding.") for k in props)
    vs.write(_frame(spark, range(20, 30), "b"), str(root))
    assert len(_check(root)) == 30

    vs.delete(spark, root, "id < 5 OR v:id::int = 17")
    assert len(_check(root)) == 24
    vs.update(spark, root, {"v": "variant_set(v, '$.tag', 'upd')"}, "id % 4 = 0")
    rows = _check(root)
    assert sum(1 for r in rows if '"upd"' in r[2]) == 6  # 8, 12, 16, 20, 24, 28
    vs.merge(spark, root, _frame(spark, range(25, 35), "m"), "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    rows = _check(root)
    assert len(rows) == 29 and sum(1 for r in rows if '"m"' in r[2]) == 10
    vs.optimize(spark, root)
    assert _check(root) == rows
    Table(root).checkpoint()
    assert _check(root) == rows
    with pytest.raises(TableError, match="does not set delta.enableVariantShredding=true"):
        vs.write(_frame(spark, range(50, 51), "c"), str(root), shredding="id bigint")
    # without the property Spark annotates its Variant groups, which Polars cannot parse
    plain = tmp_path / "plain"
    vs.write(_frame(spark, range(3), "a"), str(plain), shredding="off", properties={C.PROP_ENABLE_DELETION_VECTORS: "false"})
    assert _rows(deltalake.DeltaTable(str(plain)).to_pyarrow_table()) == _rows(Table(plain).scan().to_arrow())
    with pytest.raises(pl.exceptions.ComputeError, match="LogicalType union has no variant set"):
        pl.read_delta(str(plain))


def test_cli_ingest_creates_a_compatibility_table(spark, tmp_path: Path) -> None:  # noqa: ANN001
    from typer.testing import CliRunner

    from varlake.cli import app

    src = tmp_path / "events.jsonl"
    src.write_text("\n".join([json.dumps({"kind": "ab"[i % 2], "n": i}) for i in range(20)] + ["{not json"]) + "\n")
    table = tmp_path / "t"
    args = ["ingest", str(src), str(table), "-c", "kind=$.kind::string", "--partition-by", "kind", "--compatibility", "deltalake",
            "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2", "-f", "json"]  # fmt: skip
    r = CliRunner().invoke(app, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    for root, n in ((table, 20), (tmp_path / "t_quarantine", 1)):
        assert Table(root).properties[C.PROP_COMPATIBILITY] == "deltalake"
        assert deltalake.DeltaTable(str(root)).to_pyarrow_table().num_rows == n == pl.read_delta(str(root)).height
    docs = pl.read_delta(str(table))["doc"].to_list()
    assert sorted(Variant(d["metadata"], d["value"]).to_python()["n"] for d in docs) == list(range(20))
    bad = CliRunner().invoke(app, ["ingest", str(src), str(tmp_path / "u"), "--compatibility", "nope", "--master", "local[2]"])
    assert bad.exit_code == 1 and "must be one of: deltalake" in bad.output
