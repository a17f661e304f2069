"""A view that keeps its rebuilt line items apart compiles the rebuild in a code-generation
stage of its own (``frames._keep_apart``): the rebuild's generated code is the same for
every literal of the query, only the query's stage changes, and no partition is merged.
Its failure test reads the rebuilt array instead of casting the leaves again
(``frames._over_rebuilt``); the answers against Spark's are checked in ``test_leaf_casts``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import varlake.spark as vs
from test_leaf_casts import ITEMS, ORDER_LAYOUT, _order
from varlake.delta.actions import AddFile
from varlake.delta.schema import StructType
from varlake.io.parquet_write import write_parquet
from varlake.table import Table, to_arrow_table
from varlake.variant import Variant

pytestmark = pytest.mark.spark

QUERY = f"""SELECT l.l_flag, sum(l.l_quantity) AS q, count(*) AS n
FROM (SELECT variant_get(v, '$.lineitems', '{ITEMS}') AS lis FROM {{t}}) LATERAL VIEW explode(lis) x AS l
WHERE l.l_shipdate <= DATE'{{day}}' GROUP BY l.l_flag"""

EXPLODED = f"SELECT l.l_n FROM (SELECT variant_get(v, '$.lineitems', '{ITEMS}') AS lis FROM {{t}}) LATERAL VIEW explode(lis) x AS l"


def _table(root: Path, files: int) -> Table:
    """``files`` files of orders, each shredded with the line items as element leaves."""
    table = Table.create(root, "id bigint, v variant")
    schema = StructType(tuple(table.schema.field(name) for name in ("id", "v")))
    adds = []
    for k in range(files):
        ids = range(10 * k, 10 * k + 10)
        data = to_arrow_table({"id": list(ids), "v": [Variant.from_python(_order(i)) for i in ids]}, schema)
        name = f"part-{k}.parquet"
        write_parquet(data, root / name, shredding={"v": ORDER_LAYOUT}, variant_columns=["v"])
        adds.append(AddFile(name, (root / name).stat().st_size, {}, 0, True, table.file_stats_json(name)))
    table.commit_files(adds, "append")
    return table


def _stages(df: Any) -> list[tuple[str, str]]:
    """(operators, generated Java source) of each whole-stage code-generation stage; the
    operators are the stage's own lines of its tree (``*(id)``), not its inputs'."""
    stages = df._jdf.queryExecution().debug().codegenToSeq()
    out = []
    for i in range(stages.size()):
        tree, code = stages.apply(i)._1(), stages.apply(i)._2()
        mark = tree.lstrip()[: tree.lstrip().index(")") + 1]  # "*(3)"
        out.append(("\n".join(line for line in tree.splitlines() if mark in line), code))
    return out


def test_the_rebuild_compiles_apart_from_the_query_and_the_same_for_every_literal(spark: Any, tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 2)
    sources = []
    for day in ("1995-06-30", "1996-02-29"):
        df = vs.sql(spark, QUERY.replace("{day}", day), t=table)
        rows = df.collect()
        stages = _stages(df)  # of the final adaptive plan
        rebuilt = [(tree, code) for tree, code in stages if "transform(" in tree]
        assert len(rebuilt) == 1, stages  # one stage rebuilds the line items ...
        tree, code = rebuilt[0]
        assert "Filter" not in tree and "Generate" not in tree and "HashAggregate" not in tree, tree  # ... and only that
        # the failure test reads the rebuilt array's fields: each leaf is cast once, in the rebuild
        projects = [line for line in tree.splitlines() if "Project [" in line]
        assert len(projects) == 2 and "transform(" in projects[1], tree
        test = projects[0][: projects[0].index("to_variant_object")]
        assert "array_contains(__vl_" in test and "try_cast(" not in test and "transform(" not in test, test
        sources.append(code)
        items = [li for i in range(20) for li in _order(i)["lineitems"] if li["l_shipdate"] <= day]
        expected = {f: (sum(li["l_quantity"] for li in items if li["l_flag"] == f), sum(li["l_flag"] == f for li in items))
                    for f in {li["l_flag"] for li in items}}
        assert {r.l_flag: (r.q, r.n) for r in rows} == expected
    assert sources[0] == sources[1]  # compiled once, whatever the query's literals


def test_the_stage_boundary_merges_no_partitions(spark: Any, tmp_path: Path) -> None:
    table = _table(tmp_path / "t", 3)
    one_file = str(max(f.stat().st_size for f in (tmp_path / "t").glob("*.parquet")) + 1)
    # one file per partition: no file is split, and a second file does not fit
    confs = {"spark.sql.files.maxPartitionBytes": one_file, "spark.sql.files.openCostInBytes": one_file}
    before = {k: spark.conf.get(k) for k in confs}
    try:
        for k, v in confs.items():
            spark.conf.set(k, v)
        df = vs.sql(spark, EXPLODED, t=table)
        assert "Coalesce" in df._jdf.queryExecution().executedPlan().toString()
        assert df.rdd.getNumPartitions() == 3  # one per file, as the scan reads them
        assert sorted(r[0] for r in df.collect()) == sorted(
            j for i in range(30) for j in range(i % 4)
        )
    finally:
        for k, v in before.items():
            spark.conf.set(k, v)


def test_a_join_above_the_boundary_shuffles_into_the_sessions_partitions(spark: Any, tmp_path: Path) -> None:
    """The coalesce's partition count (``NO_MERGE_PARTITIONS``) never reaches a shuffle: a
    sort-merge join over the view repartitions by ``spark.sql.shuffle.partitions``."""
    import re

    table = _table(tmp_path / "t", 2)
    spark.range(0, 20).selectExpr("id AS k", "id * 10 AS w").createOrReplaceTempView("__keep_apart_other")
    query = f"""SELECT a.k, count(*) AS n, sum(b.w) AS w
    FROM (SELECT v:o_key::bigint AS k, variant_get(v, '$.lineitems', '{ITEMS}') AS lis FROM {{t}}) a
    JOIN __keep_apart_other b ON a.k = b.k LATERAL VIEW explode(a.lis) x AS l GROUP BY a.k"""
    confs = {"spark.sql.shuffle.partitions": "3", "spark.sql.autoBroadcastJoinThreshold": "-1"}
    before = {k: spark.conf.get(k) for k in confs}
    try:
        for k, v in confs.items():
            spark.conf.set(k, v)
        df = vs.sql(spark, query, t=table)
        rows = df.collect()
        plan = df._jdf.queryExecution().executedPlan().toString()
    finally:
        for k, v in before.items():
            spark.conf.set(k, v)
        spark.catalog.dropTempView("__keep_apart_other")
    assert "Coalesce" in plan and "SortMergeJoin" in plan, plan
    assert set(re.findall(r"hashpartitioning\([^)]*, (\d+)\)", plan)) == {"3"}, plan
    orders = {i: _order(i) for i in range(20)}
    assert {(r.k, r.n, r.w) for r in rows} == {
        (i, len(o["lineitems"]), 10 * i * len(o["lineitems"])) for i, o in orders.items() if o["lineitems"]
    }
