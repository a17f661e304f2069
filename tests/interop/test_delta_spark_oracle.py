"""The delta-spark oracle itself: it runs delta-spark 4.4 on Spark 4.2, and its answers compare
with varlake's values through ``plain``."""

from __future__ import annotations

import varlake
from oracles.delta_spark import OracleError, plain

import pytest


def test_oracle_is_delta_spark_4_4_on_spark_4_2(delta_spark):
    assert delta_spark.spark_version.startswith("4.2.")
    answer = delta_spark._request({"op": "ping"})
    assert answer["delta"].startswith("4.4"), answer


def test_oracle_reads_a_varlake_table(delta_spark, tmp_path):
    path = tmp_path / "t"
    table = varlake.Table.create(str(path), "id bigint, v variant")
    table.append([{"id": 1, "v": {"a": 1, "b": "x"}}, {"id": 2, "v": [1, 2.5, None]}])
    ours = [plain(r) for r in table.scan().to_arrow().sort_by("id").to_pylist()]
    theirs = delta_spark.rows(path, order_by="id")
    assert theirs == ours


def test_oracle_names_its_refusals(delta_spark, tmp_path):
    with pytest.raises(OracleError) as raised:
        delta_spark.sql(f"SELECT * FROM delta.`{tmp_path / 'absent'}`")
    assert "AnalysisException" in raised.value.error or "Delta" in raised.value.message
