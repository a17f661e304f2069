"""(g) delta-spark in the benchmark (issue 31, item 6), on the tests' oracle process at a tiny scale:
its table has Delta's own shredding and Variant statistics, and it answers every TPC-H query as
relational does, with its time and bytes measured in its own process."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import delta_peer  # noqa: E402
import harness  # noqa: E402
from workloads import tpch_nested  # noqa: E402


@pytest.mark.spark
def test_delta_spark_answers_every_tpch_query_as_relational(spark: Any, delta_spark: Any, tmp_path: Path) -> None:
    wl = tpch_nested.workload(7)
    src = tpch_nested.generate_tpch(tmp_path / "src", 0.002, parts=2)
    peer = delta_peer.attach(delta_spark)
    try:
        result = harness.run_workload(spark, wl, src, tmp_path / "st", runs=1, include=["relational"],
                                      log=lambda _: None, extra=[peer.storage])
    finally:
        peer.detach()
    assert not result.mismatches, result.mismatches
    g = result.storages[delta_peer.KEY]
    assert g.error is None and g.files == 2  # one data file per source part, as every storage
    assert g.note.startswith("variantShredding") and "pushVariantIntoScan=" in g.note, g.note
    assert "Variant min/max statistics on" in g.note, g.note  # its own Variant statistics are on
    for q in wl.queries:
        qr = g.queries[q.name]
        assert qr.rows == result.storages["relational"].queries[q.name].rows > 0, q.name
        assert len(qr.seconds) == 1 and qr.seconds[0] > 0 and qr.median_bytes, q.name
    # the confs are the oracle's own again: another test's tables get no Variant statistics from here
    assert delta_spark.run("result = spark.conf.get('spark.databricks.delta.stats.limitPerVariant')") == "0"
