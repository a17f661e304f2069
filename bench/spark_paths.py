"""Spark reads of shredded Variant paths: varlake's planner vs plain columns vs Spark-native Variant.

    .venv/bin/python bench/spark_paths.py [--rows 5000000] [--files 20] [--runs 5] [--dir DIR]

Generates N events of 20 fields with Spark itself (``spark.range`` -> JSON ->
``parse_json``), clustered by ``a`` (each file holds one range of ids), and writes them

* through ``varlake.spark.write`` into a varlake table, shredded (every field perfectly
  shredded); and
* as plain Parquet columns ``a, b, c, ...`` (the relational baseline).

Then, for each query, every storage gets two warm-up runs (JIT) and ``--runs`` timed
runs, each with a different literal (so nothing can be served from a cache), the
storages taking turns run by run in a rotating order (so that load from elsewhere hits
all alike, and no storage always runs right after the garbage of a multi-second Variant
scan); the median
is reported, with the bytes the executors read (task input metrics) and, for varlake, the
part of its time spent before Spark executes (analysis, planning, views):

* Q1 ``SELECT sum(v:a::bigint + k)``
* Q2 ``SELECT concat(v:b::string, k), count(*) ... GROUP BY 1``
* Q3 ``SELECT count(*), sum(v:c::bigint) ... WHERE v:a::bigint BETWEEN x AND x + N/1000``:
  files skipped by statistics, and rows actually scanned in the remaining file(s), i.e.
  row groups skipped inside them by the pushed-down filter;
* ingest of the same events as JSON Lines (``bench/spark_ingest.py``): throughput against
  Spark writing the lines as a plain string column.

Storages: ``varlake`` (``varlake.spark.sql`` on the table), ``plain`` (the columns),
``native`` (Spark 4.3 reading the same files as VARIANT with ``variant_get``, default
confs, i.e. ``spark.sql.variant.pushVariantIntoScan=true``) and ``native-nopush`` (the
same with that conf off). Targets: varlake time <= 1.3x and bytes <= 1.5x plain, and
>= 3x faster than native; Q3 skips >= 90% of files and skips row groups in the rest.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Measured, bench_session, event_columns, mb, measure, median, scan_rows  # noqa: E402
from spark_ingest import bench_ingest  # noqa: E402

import varlake.spark as vs  # noqa: E402
from varlake.table import Table  # noqa: E402

def generate(spark: Any, root: Path, rows: int, files: int, row_group_bytes: int) -> tuple[Table, str]:
    """Both tables under ``root`` (each one only if it is not there yet, so ``--dir`` reuses them)."""
    fields = event_columns()
    spark.sparkContext._jsc.hadoopConfiguration().setInt("parquet.block.size", row_group_bytes)
    base = spark.range(0, rows, 1, files)
    if not (root / "events" / "_delta_log").is_dir():
        struct = ", ".join(f"'{k}', {v}" for k, v in fields.items())
        events = base.selectExpr("id", f"parse_json(to_json(named_struct({struct}))) AS v")
        started = time.perf_counter()
        result = vs.write(events, str(root / "events"), properties={"delta.enableVariantShredding": "true"})
        print(f"wrote {rows:,} events in {time.perf_counter() - started:.1f}s: version {result.version}, layout {result.layout}")
    if not (root / "plain" / "_SUCCESS").is_file():
        plain = base.selectExpr("id", *[f"{v} AS {k}" for k, v in fields.items()])
        plain.write.mode("overwrite").option("compression", "zstd").parquet(str(root / "plain"))  # as varlake's writer
    return Table(root / "events"), str(root / "plain")


PLANNING: list[float] = []  # varlake's own time (analysis, planning, views) per run, before Spark executes


def run_query(storage: str, spark: Any, table: Table, sql: dict[str, str], literal: int) -> Callable[[], Any]:
    text = sql["variant" if storage != "plain" else "plain"].format(k=literal, x=literal)
    if storage == "varlake":
        def go() -> Any:
            started = time.perf_counter()
            df = vs.sql(spark, text.replace("native_events", "{e}"), e=table)
            PLANNING.append(time.perf_counter() - started)
            return df.collect()

        return go
    return lambda: spark.sql(text).collect()


QUERIES = {
    "Q1 sum(v:a)": {
        "plain": "SELECT sum(a + {k}) FROM plain_events",
        "variant": "SELECT sum(v:a::bigint + {k}) FROM native_events",
    },
    "Q2 group by v:b": {
        "plain": "SELECT concat(b, '{k}'), count(*) FROM plain_events GROUP BY 1",
        "variant": "SELECT concat(v:b::string, '{k}'), count(*) FROM native_events GROUP BY 1",
    },
}


def _with_push(spark: Any, storage: str, run: Callable[[], Any]) -> Callable[[], Any]:
    """``native-nopush`` runs with ``spark.sql.variant.pushVariantIntoScan=false``."""
    def go() -> Any:
        spark.conf.set("spark.sql.variant.pushVariantIntoScan", "false" if storage == "native-nopush" else "true")
        try:
            return run()
        finally:
            spark.conf.set("spark.sql.variant.pushVariantIntoScan", "true")

    return go


def timed_all(
    spark: Any, storages: list[str], make: Callable[[str, int], Callable[[], Any]], literals: list[int], warmups: int = 2
) -> dict[str, tuple[Measured, list[Any]]]:
    """Warm every storage up, then run the storages in turn once per literal (so that load from
    elsewhere on the machine hits all of them alike), rotating their order each round so
    that no storage always runs right after the same one (a multi-second Variant scan
    leaves the JVM busy with its garbage); median time and bytes per storage."""
    for storage in storages:
        for i in range(warmups):
            _with_push(spark, storage, make(storage, literals[0] + 1000 + i))()
    runs: dict[str, list[Measured]] = {s: [] for s in storages}
    for round_, k in enumerate(literals):
        order = storages[round_ % len(storages):] + storages[: round_ % len(storages)]  # no storage always follows the same one
        for storage in order:
            runs[storage].append(measure(spark, _with_push(spark, storage, make(storage, k))))
    return {
        s: (Measured(median([r.seconds for r in rs]), int(median([r.input_bytes for r in rs])), None), [r.result for r in rs])
        for s, rs in runs.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--row-group-mb", type=int, default=4, help="Parquet row-group size for both tables")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--dir", type=Path, default=None, help="working directory, kept and reused by later runs (default: a fresh temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the generated tables")
    parser.add_argument("--no-ingest", action="store_true", help="skip the ingest comparison (bench/spark_ingest.py)")
    parser.add_argument("--ingest-runs", type=int, default=3)
    args = parser.parse_args(argv)

    root = args.dir or Path(tempfile.mkdtemp(prefix="varlake-spark-paths-"))
    root.mkdir(parents=True, exist_ok=True)
    spark = bench_session()
    rng = random.Random(5)
    try:
        table, plain_dir = generate(spark, root, args.rows, args.files, args.row_group_mb << 20)
        args.rows = sum(t.num_records or 0 for t in table.scan().plan().tasks)
        files = [table.open_file(t.relative_path) for t in table.scan().plan().tasks]
        spark.read.parquet(*files).createOrReplaceTempView("native_events")
        spark.read.parquet(plain_dir).createOrReplaceTempView("plain_events")
        storages = ["varlake", "plain", "native", "native-nopush"]
        failures: list[str] = []
        print(f"\n{args.rows:,} events, {len(files)} files; median of {args.runs} runs after 2 warm-ups, literals varied per run, storages interleaved")
        print(f"{'query':<18} {'storage':<14} {'time':>8} {'read':>10}")
        for name, sql in QUERIES.items():
            literals = [rng.randrange(1, 10_000) for _ in range(args.runs)]
            PLANNING.clear()
            results = timed_all(spark, storages, lambda s, k, q=sql: run_query(s, spark, table, q, k), literals)
            for storage in storages:
                m = results[storage][0]
                extra = f"  (varlake planning {median(PLANNING[-args.runs:]):.3f}s of it)" if storage == "varlake" else ""
                print(f"{name:<18} {storage:<14} {m.seconds:>7.3f}s {mb(m.input_bytes):>10}{extra}")
            answers = {s: [sorted(map(tuple, r)) for r in res] for s, (_, res) in results.items()}
            if len({repr(a) for a in answers.values()}) != 1:
                failures.append(f"{name}: storages disagree")
            v, p, n = results["varlake"][0], results["plain"][0], results["native"][0]
            time_ratio, bytes_ratio, speedup = v.seconds / p.seconds, v.input_bytes / max(p.input_bytes, 1), n.seconds / v.seconds
            nopush = results["native-nopush"][0].seconds / v.seconds
            print(f"  varlake/plain time {time_ratio:.2f}x (target <= 1.3), bytes {bytes_ratio:.2f}x (target <= 1.5); "
                  f"native/varlake time {speedup:.1f}x (target >= 3), native-nopush/varlake {nopush:.1f}x, "
                  f"native bytes {n.input_bytes / max(v.input_bytes, 1):.0f}x varlake's")
            if time_ratio > 1.3:
                failures.append(f"{name}: varlake {time_ratio:.2f}x plain time")
            if bytes_ratio > 1.5:
                failures.append(f"{name}: varlake {bytes_ratio:.2f}x plain bytes")
            if speedup < 3:
                failures.append(f"{name}: only {speedup:.1f}x faster than native")
        failures += skipping(spark, table, args.rows, args.runs, rng)
        if not args.no_ingest:
            failures += bench_ingest(spark, root, args.rows, args.ingest_runs)
        print("\nall targets met" if not failures else "\ntargets missed:\n  " + "\n  ".join(failures))
        return 0
    finally:
        spark.stop()
        if not args.keep and args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


def skipping(spark: Any, table: Table, rows: int, runs: int, rng: random.Random) -> list[str]:
    """Q3: a narrow range on the clustered path; files skipped, then row groups skipped."""
    span = max(rows // 1000, 1)
    query = "SELECT count(*), sum(v:c::bigint) FROM {e} WHERE v:a::bigint BETWEEN %d AND %d"
    failures: list[str] = []
    print(f"\nQ3 v:a BETWEEN x AND x+{span:,} on data clustered by a")
    literals = [rng.randrange(0, rows - span) for _ in range(runs)]

    def make(storage: str, x: int) -> Callable[[], Any]:
        if storage == "varlake":
            return lambda: vs.sql(spark, query % (x, x + span), e=table).collect()
        if storage == "native":
            return lambda: spark.sql((query % (x, x + span)).replace("{e}", "native_events")).collect()
        return lambda: spark.sql(f"SELECT count(*), sum(c) FROM plain_events WHERE a BETWEEN {x} AND {x + span}").collect()

    results = timed_all(spark, ["varlake", "native", "plain"], make, literals)
    for storage, (m, answers) in results.items():
        print(f"  {storage:<8} {m.seconds:>7.3f}s {mb(m.input_bytes):>10}  answers {[tuple(a[0]) for a in answers]}")
    if len({repr([tuple(a[0]) for a in answers]) for _, answers in results.values()}) != 1:
        failures.append("Q3: storages disagree")
    x = literals[0]
    explanation = vs.explain(spark, query % (x, x + span), e=table, show=False)
    plan = explanation.plans["e"]
    total, skipped = plan.scan.total_files, len(plan.skipped_by_stats) + len(plan.skipped_by_partition)
    kept_rows = sum(t.num_records or 0 for t in plan.read_tasks)
    df = vs.sql(spark, query % (x, x + span), e=table)
    df.collect()
    scanned = sum(scan_rows(df))
    print(f"  files skipped by statistics: {skipped}/{total} ({100 * skipped / total:.0f}%, target >= 90%)")
    print(f"  rows in the remaining {len(plan.read_tasks)} file(s): {kept_rows:,}; rows scanned after row-group "
          f"skipping: {scanned:,} ({100 * (1 - scanned / max(kept_rows, 1)):.0f}% of their rows skipped)")
    if skipped < 0.9 * total:
        failures.append(f"Q3: only {skipped}/{total} files skipped")
    if scanned >= kept_rows:
        failures.append("Q3: no row group skipped inside the remaining files")
    return failures


if __name__ == "__main__":
    raise SystemExit(main())
