"""varlake -> delta-spark (issue 31, item 2): tables clustered by ``varlake optimize --cluster-by``.

Column keys become Delta's clustered-table domain, so delta-spark's DESCRIBE DETAIL names them
and its OPTIMIZE goes on clustering by them; Variant-path keys stay varlake's own (delta-spark
sees an unclustered table). Either way delta-spark reads the same rows, skips files soundly by
the clustered files' statistics, and writes on, after which varlake reads what it reads.
"""

from __future__ import annotations

import pytest

from typer.testing import CliRunner

import varlake
from delta_spark_checks import detail, history, peer_writes, same_filtered, same_rows
from varlake.cli import app


def _rows(start: int, n: int) -> list[dict]:
    return [
        {"id": i, "s": {"k": f"k{(i * 7) % 10}"}, "v": {"name": f"n{(i * 13) % 40:02d}", "x": i % 9}} for i in range(start, start + n)
    ]


def _cluster(table: varlake.Table, *keys: str) -> None:
    args = ["optimize", str(table.path), "--target-size", "2kb"]
    for key in keys:
        args += ["--cluster-by", key]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output


@pytest.mark.slow_oracle
def test_clustered_by_columns_and_by_variant_paths(delta_spark, tmp_path):
    by_columns = varlake.Table.create(
        tmp_path / "columns", "id bigint, s struct<k: string>, v variant", properties={"delta.columnMapping.mode": "name"}
    )
    by_paths = varlake.Table.create(
        tmp_path / "paths", "id bigint, s struct<k: string>, v variant", properties={"delta.enableVariantShredding": "true"}
    )
    for t in (by_columns, by_paths):
        for start in range(0, 200, 50):
            t.append(_rows(start, 50))
    _cluster(by_columns, "s.k", "id")
    _cluster(by_paths, "v:name::string")

    predicates = [
        "s.k = 'k3'",
        "s.k > 'k8'",
        "id = 150",
        "id < 10 AND s.k = 'k0'",
        "variant_get(v, '$.name', 'string') = 'n07'",
        "variant_get(v, '$.name', 'string') >= 'n39'",
        "variant_get(v, '$.x', 'int') = 8",
    ]
    for t, clustering in ((by_columns, ["s.k", "id"]), (by_paths, [])):
        t = varlake.Table(t.path)
        assert len(t.files()) > 1
        same_rows(delta_spark, t)
        same_filtered(delta_spark, t, predicates)
        row = detail(delta_spark, t)
        assert row["clusteringColumns"] == clustering
        assert ("clustering" in row["tableFeatures"]) == bool(clustering)
        assert history(delta_spark, t)[0]["operation"] == "OPTIMIZE"

    # delta-spark writes on; its OPTIMIZE of the clustered table clusters by the same keys
    for t in (by_columns, by_paths):
        peer_writes(
            delta_spark,
            t,
            insert="SELECT 1000 + id, named_struct('k', 'k5'), parse_json('{\"name\":\"n99\"}') FROM range(5)",
            merge_source=f"SELECT id, named_struct('k', 'merged') s, v FROM delta.`{t.path}` WHERE id % 25 = 0",
        )
    row = detail(delta_spark, by_columns)
    assert row["clusteringColumns"] == ["s.k", "id"]
    # varlake clusters again after delta-spark's clustering, delta-spark still reads the same
    for t in (by_columns, by_paths):
        t = varlake.Table(t.path)
        t.append(_rows(500, 20))
        _cluster(t)  # the remembered keys
        same_rows(delta_spark, t)
        same_filtered(delta_spark, t, predicates[:3] + ["s.k = 'merged'"])
