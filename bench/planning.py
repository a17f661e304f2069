"""Planning time of ``varlake.spark``: ``explain`` on the events queries, warm and on a never-seen table.

    .venv/bin/python bench/planning.py [--events 200000] [--dir DIR] [--runs 15]

``explain`` runs everything ``varlake.spark.sql`` does before Spark executes (Spark's
parse of the text, sqlglot's analysis and Spark's verdict on it, the snapshot, file
skipping, footers, the rewrite) without building the reads. Reported per events query
(``bench/workloads/events.py``): the median warm time (same table, same query, after a
warm-up), and the first ``explain`` on a never-seen table (a fresh copy of the table's
directory: its log and footers never read in this process); then the whole query
(``vs.sql(...).collect()``) the first time on another never-seen copy and warm. Targets
of issue 16: warm ``explain`` <= 20 ms, the first query <= 2x a warm one.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import bench_session  # noqa: E402
from spark_paths import events_tables  # noqa: E402

import varlake.spark as vs  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--dir", type=Path, default=None, help="working directory, kept and reused (default: a temporary one)")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    from workloads.events import QUERIES
    from workloads.spec import Dialect

    root = args.dir or Path(tempfile.mkdtemp(prefix="varlake-planning-"))
    root.mkdir(parents=True, exist_ok=True)
    spark = bench_session()
    failures: list[str] = []
    try:
        table, _ = events_tables(spark, root, args.events)
        path = str(table.path)
        queries = [(q.name, q.render(Dialect.VARIANT, "{e}")) for q in QUERIES]
        print(f"explain on {sum(t.num_records or 0 for t in table.scan().plan().tasks):,} events, {len(table.scan().plan().tasks)} files")
        print(f"{'query':<6} {'warm':>9} {'first':>9} {'first/warm':>11}   whole query: {'warm':>8} {'first':>8} {'first/warm':>10}")
        for i, (name, text) in enumerate(queries):
            vs.explain(spark, text, e=path, show=False)
            warm = []
            for _ in range(args.runs):
                started = time.perf_counter()
                vs.explain(spark, text, e=path, show=False)
                warm.append(time.perf_counter() - started)
            fresh = root / f"never-seen-{i}"
            shutil.rmtree(fresh, ignore_errors=True)
            shutil.copytree(path, fresh)
            started = time.perf_counter()
            vs.explain(spark, text, e=str(fresh), show=False)
            first = time.perf_counter() - started
            shutil.rmtree(fresh, ignore_errors=True)
            w = statistics.median(warm)
            # the whole query (planning, reads, execution): first on another never-seen copy, then
            # warm (the JVM warmed up on the original table first: the table is new, not Spark)
            vs.sql(spark, text, e=path).collect()
            shutil.copytree(path, fresh)
            started = time.perf_counter()
            vs.sql(spark, text, e=str(fresh)).collect()
            query_first = time.perf_counter() - started
            query_warm = []
            for _ in range(3):
                started = time.perf_counter()
                vs.sql(spark, text, e=str(fresh)).collect()
                query_warm.append(time.perf_counter() - started)
            shutil.rmtree(fresh, ignore_errors=True)
            qw = statistics.median(query_warm)
            print(f"{name:<6} {w * 1000:>7.1f}ms {first * 1000:>7.1f}ms {first / w:>10.1f}x   "
                  f"{'':>13} {qw:>7.2f}s {query_first:>7.2f}s {query_first / qw:>9.2f}x")
            if query_first > 2 * qw:
                failures.append(f"{name}: first query {query_first / qw:.1f}x a warm one")
            if w > 0.020:
                failures.append(f"{name}: warm explain {w * 1000:.1f} ms > 20 ms")
            if first > 2 * w:
                failures.append(f"{name}: first explain {first / w:.1f}x a warm one")
        print("\nall targets met" if not failures else "\ntargets missed:\n  " + "\n  ".join(failures))
        return 0
    finally:
        spark.stop()
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
