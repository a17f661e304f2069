"""(g) delta-spark 4.4 on Spark 4.2: the system a user would pick instead of varlake (issue 31, item 6).

delta-spark runs in its own process for the whole benchmark: the delta-spark oracle of the tests
(``tests/oracles/delta_spark.py`` starts ``delta_spark_server.py`` in the side virtualenv that
``tools/delta_oracle.sh`` builds: PySpark 4.2.0, delta-spark 4.4.0, its JARs from Maven Central)
and talks to it in JSON lines. The benchmark starts it once (``start``), each workload makes its
storage from it (``DeltaPeer.storage``), and it is stopped at the end (``DeltaPeer.stop``). The
tests set the oracle process they share up the same way (``attach``, then ``DeltaPeer.detach``).

Its table holds the same documents as the other storages, ``parse_json`` of the same JSON Lines
into one Variant column ``v``, one data file per source part, with Delta's own Variant shredding
(``delta.enableVariantShredding=true``: each file shredded by Spark's schema inference) and its
Variant statistics (per-path min/max read back from each written file's footer:
``spark.databricks.delta.variantShredding.parseFooterForStats``, up to
``spark.databricks.delta.stats.limitPerVariant`` paths per Variant, 0 by default, so off). It is
queried by the same Variant SQL as (b), (c) and (d), naming the table ``delta.`<path>```.

Loading and every run are timed *inside* that process with the harness's own code
(``harness.SparkIO``: the wall time of ``collect()`` and the input bytes of the run's Spark
jobs; ``harness.canonical_rows`` for the answer), so the figures are taken as the Spark
storages' are, without the request's round trip; round 0 warms its JVM up as it does the others'.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import harness
from workloads.spec import Dialect, Source, Workload

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "tests"))

from oracles import delta_spark as oracle  # noqa: E402

KEY = "delta_spark"
LABEL = "(g) delta-spark"
#: the table's properties: Delta's own Variant shredding
TABLE_PROPERTIES = {"delta.enableVariantShredding": "true"}
#: Variant paths delta-spark keeps min/max statistics for, per Variant value (its default, 0, keeps none)
STATS_PER_VARIANT = 1000
#: session confs of the delta-spark process beyond the benchmark's own (set at run time, unset by
#: ``DeltaPeer.detach``): shredded writes, and Variant statistics from each written file's footer
SESSION_CONF = {
    "spark.sql.variant.writeShredding.enabled": "true",
    "spark.databricks.delta.variantShredding.parseFooterForStats": "true",
    "spark.databricks.delta.variantShredding.collectVariantDataSkippingStats": "true",
    "spark.databricks.delta.stats.limitPerVariant": str(STATS_PER_VARIANT),
}

#: defined once in the server's scope: loading and timed runs, measured there by the harness's code
_SETUP = """
import sys
sys.path.insert(0, {bench!r})
import harness
_bench_io = harness.SparkIO(spark)
for _k, _v in {{**harness.RUN_CONF, **{session_conf!r}}}.items():
    spark.conf.set(_k, _v)


def bench_load(paths, path, split, properties):
    saved = {{k: spark.conf.get(k, None) for k in ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")}}
    for k in saved:
        spark.conf.set(k, split)  # one input file per task: one data file per source part
    props = ", ".join(f"'{{k}}' = '{{v}}'" for k, v in properties.items())

    def write():
        spark.sql(f"CREATE TABLE delta.`{{path}}` (v VARIANT) USING delta TBLPROPERTIES ({{props}})")
        frame = spark.read.text(paths).selectExpr("parse_json(value) AS v")
        frame.write.format("delta").mode("append").save(path)

    try:
        _, seconds, _ = _bench_io.run(write, "load delta_spark")
    finally:
        for k, v in saved.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{{path}}`").collect()[0]
    return {{"seconds": seconds, "files": detail.numFiles, "features": sorted(detail.tableFeatures or []),
            "properties": dict(detail.properties or {{}}),
            "push_variant_into_scan": spark.conf.get("spark.sql.variant.pushVariantIntoScan")}}


def bench_query(sql, label):
    rows, seconds, nbytes = _bench_io.run(lambda: spark.sql(sql).collect(), label)
    return [harness.canonical_rows(rows, "spark"), seconds, nbytes]
"""


class DeltaPeer:
    """A delta-spark process set up for the benchmark (``attach``): the benchmark's own (``start``)
    or the tests' oracle."""

    def __init__(self, server: Any, delta_version: str) -> None:
        self.server = server
        self.spark_version = server.spark_version
        self.delta_version = delta_version

    def storage(self, root: Path) -> harness.Storage:
        return DeltaSparkStorage(root, self)

    def detach(self) -> None:
        """Unset the benchmark's session confs (the process serves others after)."""
        self.server.run(f"for _k in {sorted(SESSION_CONF)!r}:\n    spark.conf.unset(_k)")

    def stop(self) -> None:
        oracle.stop(self.server)


def attach(server: Any) -> DeltaPeer:
    """Set a running delta-spark process (``oracles.delta_spark.start``) up for the benchmark."""
    server.run(_SETUP.format(bench=str(BENCH), session_conf=SESSION_CONF))
    return DeltaPeer(server, str(server.run("from importlib.metadata import version\nresult = version('delta-spark')")))


def start(master: str, spark_conf: Mapping[str, str]) -> DeltaPeer:
    """Start delta-spark with the benchmark's Spark confs (its master, memory, code cache) and its own.

    Raises ``harness.BenchmarkError`` with the reason when the oracle is not built or fails."""
    python = oracle.oracle_python()
    if python is None:
        raise harness.BenchmarkError(f"the delta-spark oracle is not built (no {oracle.ORACLE}): "
                                     "run `bash tools/delta_oracle.sh` (`make bench` does)")
    conf = {k: v for k, v in spark_conf.items() if k != "spark.driver.memory"}
    settings = {"DELTA_ORACLE_MASTER": master, "DELTA_ORACLE_MEMORY": spark_conf.get("spark.driver.memory", "4g"),
                "DELTA_ORACLE_CONF": "\n".join(f"{k}={v}" for k, v in conf.items())}
    try:
        server = oracle.start(python, settings)
    except RuntimeError as exc:
        raise harness.BenchmarkError(str(exc)) from exc
    try:
        return attach(server)
    except Exception as exc:  # noqa: BLE001 - the peer is left out with the reason, the run goes on
        oracle.stop(server)
        raise harness.BenchmarkError(f"delta-spark did not set up: {type(exc).__name__}: {exc}") from exc


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


class DeltaSparkStorage(harness.Storage):
    """A delta-spark table with its own Variant shredding and statistics, in the peer's process."""

    key = KEY
    label = LABEL
    dialect = Dialect.VARIANT
    engine = "delta-spark"

    def __init__(self, root: Path, peer: DeltaPeer) -> None:
        super().__init__(root)
        self.peer = peer

    def load(self, source: Source, workload: Workload) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        split = str(max(p.stat().st_size for p in source.paths) + 1)
        info = self.peer.server.run(
            f"result = bench_load({[str(p) for p in source.paths]!r}, {str(self.path)!r}, {split!r}, "
            f"{TABLE_PROPERTIES!r})")
        self.result.load_seconds = info["seconds"]
        self.result.bytes_on_disk, self.result.files = harness.dir_size(self.path)
        self.result.compression = harness.compression(next(iter(sorted(self.path.rglob("*.parquet"))), None))
        shredding = [f for f in info["features"] if f.startswith("variantShredding")]
        if not shredding or info["properties"].get("delta.enableVariantShredding") != "true":
            raise harness.BenchmarkError(f"delta-spark did not turn its shredding on: features {info['features']}, "
                                         f"properties {info['properties']}")
        self.result.note = (f"{', '.join(shredding)}; {variant_stats_note(self.path)}; "
                            f"spark.sql.variant.pushVariantIntoScan={info['push_variant_into_scan']}")

    def table_ref(self) -> str:
        return f"delta.`{self.path}`"

    def execute(self, sql: str, label: str, warm_up: bool = False) -> tuple[list[tuple[Any, ...]], float, int | None]:
        rows, seconds, nbytes = self.peer.server.run(f"result = bench_query({sql!r}, {label!r})")
        return [_tuples(r) for r in rows], seconds, nbytes


def variant_stats_note(path: Path) -> str:
    """How many Variant paths the statistics of the table's files hold (min/max), from its log."""
    counts = []
    for commit in sorted((path / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            add = json.loads(line).get("add") if line.strip() else None
            if not add or not add.get("stats"):
                continue
            stats = json.loads(add["stats"])
            lo = (stats.get("minValues") or {}).get("v")
            counts.append(_paths(lo))
    if not counts:
        return "no statistics in the log"
    if not any(counts):
        return f"no Variant min/max statistics in {len(counts)} files"
    return f"Variant min/max statistics on {min(counts)}-{max(counts)} paths per file ({len(counts)} files)"


def _paths(value: Any) -> int:
    """Paths of a Variant statistic as the log holds it: a Z85-encoded Variant object keyed by path."""
    if not isinstance(value, str):
        return 0
    from varlake.variant import decode_variant_stat

    bounds = json.loads(decode_variant_stat(value).to_json())
    return len(bounds) if isinstance(bounds, dict) else 0
