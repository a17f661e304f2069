"""Ingest of JSON Lines into a shredded varlake table vs Spark writing the lines as strings.

    .venv/bin/python bench/spark_ingest.py [--rows 5000000] [--runs 3] [--dir DIR]

(``bench/spark_paths.py`` runs it too, on the same events.) The input is the 20-field
events of ``spark_paths`` as JSON Lines, written by Spark in 8 files, once clean and once
with one bad line in 2,000 (invalid JSON). Each run, in turn (so load from elsewhere hits
all alike; one warm-up round first; median of ``--runs``):

* ``strings``   -- the baseline of the target: ``spark.read.text(...)`` written as a plain
  string column (zstd Parquet);
* ``varlake``   -- ``varlake.spark.ingest_json`` into a new shredded table (sample, parse,
  shred with the stable schema, stats, commit); on the dirty input also the quarantine;
* ``variant``   -- Spark parsing the lines and writing one unshredded Variant column;
* ``spark-shredded`` -- the same with Spark's own per-file shredding;
* ``relational`` -- Spark's JSON reader with the 20 fields' schema, written as typed columns.

The last three are not targets: they show where the time goes (parsing; shredding and
writing ~40 more columns). Target: ``varlake`` at >= 0.5x the throughput of ``strings``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import bench_session, event_columns, median  # noqa: E402

import varlake.spark as vs  # noqa: E402

BAD_EVERY = 2000


def event_fields() -> dict[str, str]:
    return event_columns()


def generate(spark: Any, root: Path, rows: int) -> dict[str, Path]:
    """``clean`` and ``dirty`` JSON Lines inputs under ``root`` (kept if already there)."""
    fields = event_fields()
    struct = ", ".join(f"'{k}', {v}" for k, v in fields.items())
    out = {}
    for name, bad in (("clean", False), ("dirty", True)):
        target = root / f"jsonl-{name}"
        if not (target / "_SUCCESS").is_file():
            line = f"to_json(named_struct({struct}))"
            if bad:
                line = f"CASE WHEN id % {BAD_EVERY} = 7 THEN concat('{{\"a\": ', id, ', broken') ELSE {line} END"
            spark.range(0, rows, 1, 8).selectExpr(f"{line} AS value").write.mode("overwrite").text(str(target))
        out[name] = target
    return out


def _typed_schema() -> str:
    types = {"b": "string", "d": "string"}
    return ", ".join(f"{k} {types.get(k, 'bigint')}" for k in event_fields())


def runners(spark: Any, source: Path, scratch: Path) -> dict[str, Callable[[], Any]]:
    from pyspark.sql import functions as F

    def fresh(name: str) -> str:
        target = scratch / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.rmtree(str(target) + "_quarantine", ignore_errors=True)
        return str(target)

    def strings() -> Any:
        spark.read.text(str(source)).write.option("compression", "zstd").parquet(fresh("strings"))

    def varlake() -> Any:
        return vs.ingest_json(spark, str(source), fresh("varlake"))

    def variant(shred: bool) -> Callable[[], Any]:
        def go() -> Any:
            confs = {"spark.sql.variant.writeShredding.enabled": str(shred).lower(), "spark.sql.variant.inferShreddingSchema": "true"}
            with vs.spark_conf(spark, confs):
                parsed = spark.read.text(str(source)).select(F.try_parse_json("value").alias("doc"))
                parsed.write.option("compression", "zstd").parquet(fresh("variant"))

        return go

    def relational() -> Any:
        spark.read.schema(_typed_schema()).json(str(source)).write.option("compression", "zstd").parquet(fresh("relational"))

    return {"strings": strings, "varlake": varlake, "variant": variant(False), "spark-shredded": variant(True), "relational": relational}


def bench_ingest(spark: Any, root: Path, rows: int, runs: int) -> list[str]:
    """Run the ingest comparison; the targets missed (empty if met)."""
    inputs = generate(spark, root, rows)
    scratch = root / "ingest-out"
    failures: list[str] = []
    for name, source in inputs.items():
        run = runners(spark, source, scratch)
        seconds: dict[str, list[float]] = {k: [] for k in run}
        result = None
        for round_ in range(runs + 1):  # round 0 warms up
            for storage, go in run.items():
                started = time.perf_counter()
                out = go()
                if round_:
                    seconds[storage].append(time.perf_counter() - started)
                if storage == "varlake":
                    result = out
        assert result is not None and result.consistent
        base = median(seconds["strings"])
        print(f"\ningest of {result.read:,} JSON lines ({name}: {result.quarantined:,} bad), median of {runs} runs")
        for storage, values in seconds.items():
            t = median(values)
            print(f"  {storage:<15} {t:>7.2f}s  {result.read / t:>10,.0f} lines/s  {base / t:>5.2f}x strings' throughput")
        ratio = base / median(seconds["varlake"])
        vs_relational = median(seconds["relational"]) / median(seconds["varlake"])
        print(f"  varlake: {ratio:.2f}x the throughput of writing the lines as strings (target >= 0.5), "
              f"{vs_relational:.2f}x that of Spark's relational JSON ingest; written {result.written:,}, "
              f"quarantined {result.quarantined:,} {dict(result.reasons)}")
        if name == "clean" and ratio < 0.5:
            failures.append(f"ingest: {ratio:.2f}x the string write's throughput (target 0.5x)")
    shutil.rmtree(scratch, ignore_errors=True)
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="working directory, kept and reused (default: a temporary one)")
    args = parser.parse_args(argv)
    root = args.dir or Path(tempfile.mkdtemp(prefix="varlake-ingest-"))
    root.mkdir(parents=True, exist_ok=True)
    spark = bench_session()
    try:
        failures = bench_ingest(spark, root, args.rows, args.runs)
        print("\nall targets met" if not failures else "\ntargets missed:\n  " + "\n  ".join(failures))
        return 0
    finally:
        spark.stop()
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
