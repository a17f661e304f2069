"""Small helpers shared by Spark benchmarks: a session, bytes read, rows scanned, timing.

Bytes read are the ``inputBytes`` of every stage a query ran, from Spark's status store
(the executors' task input metrics). Hadoop's vectored reads bypass those counters, so
``bench_session`` switches them off (``parquet.hadoop.vectored.io.enabled=false``) for
every storage alike.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

BENCH_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.memory": "6g",
    "spark.hadoop.parquet.hadoop.vectored.io.enabled": "false",
}


def bench_session(master: str = "local[2]", conf: Mapping[str, str] | None = None) -> Any:
    """A local SparkSession for benchmarks (see the module doc for why vectored reads are off)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName("varlake-bench")
    for key, value in {**BENCH_CONF, **dict(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _stages(spark: Any) -> list[Any]:
    store = spark.sparkContext._jsc.sc().statusStore()
    seq = store.stageList(None, False, False, getattr(store, "stageList$default$4")(), None)
    return [seq.apply(i) for i in range(seq.size())]


def _drain(spark: Any) -> None:
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(60_000)


@dataclass(frozen=True)
class Measured:
    seconds: float
    input_bytes: int
    result: Any


def measure(spark: Any, run: Callable[[], Any]) -> Measured:
    """Run ``run()`` (which must execute its Spark jobs), timing it and summing the input bytes
    of the stages it started."""
    _drain(spark)
    before = max((s.stageId() for s in _stages(spark)), default=-1)
    started = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - started
    _drain(spark)
    read = sum(s.inputBytes() for s in _stages(spark) if s.stageId() > before)
    return Measured(seconds, read, result)


def scan_rows(df: Any) -> list[int]:
    """``numOutputRows`` of each file scan of an executed DataFrame (rows left after row-group skipping)."""
    from varlake.spark.reading.explain import executed_scans

    return [int(n.metrics().apply("numOutputRows").value()) for n in executed_scans(df)]


def median(values: list[float]) -> float:
    return statistics.median(values)


def mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


INT_FIELDS = [f"f{i}" for i in range(16)]


def event_columns() -> dict[str, str]:
    """Field name -> SQL over ``id``: 20 fields, ``a`` clustered (it is the id)."""
    fields = {
        "a": "id",
        "b": "concat('k', CAST(id % 50 AS STRING))",
        "c": "(id * 7) % 100000",
        "d": "concat('user-', CAST(id % 977 AS STRING))",
    }
    for i, name in enumerate(INT_FIELDS):
        fields[name] = f"(id * {i + 3}) % {1000 + i * 37}"
    return fields
