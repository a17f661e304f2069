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

``--events N`` runs the events workload instead (``bench/workloads/events.py``, N events,
a varlake table and relational Parquet under ``--dir``, reused when there): each of its
five queries through ``varlake.spark.sql``, through the plan shape it had before issue 16
(``varlake [flag form]``), and over the same shredded leaves read by hand with a struct
schema (``hand-nested``: SQL on the nested fields; ``hand-flat``: the leaves selected as
top-level columns before the view), each under the reader options of ``--options``
(``READ_OPTIONS``: the nested vectorized reader off, nested schema pruning off, a larger
batch); wall and executor CPU time with ratios to relational, from one interleaved run.
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
    parser.add_argument("--events", type=int, default=0, help="run the events workload at this many events instead (plan shape, read options)")
    parser.add_argument("--options", default="default,nested-vectorized-off", help=f"events: reader options to measure, of {sorted(READ_OPTIONS)}")
    args = parser.parse_args(argv)

    root = args.dir or Path(tempfile.mkdtemp(prefix="varlake-spark-paths-"))
    root.mkdir(parents=True, exist_ok=True)
    spark = bench_session()
    rng = random.Random(5)
    if args.events:
        try:
            table, relational_dir = events_tables(spark, root, args.events)
            failures = events_profile(spark, table, relational_dir, args.runs, args.options.split(","))
            print("\nall forms agree" if not failures else "\n" + "\n".join(failures))
            return 1 if failures else 0
        finally:
            spark.stop()
            if not args.keep and args.dir is None:
                shutil.rmtree(root, ignore_errors=True)
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


# --- the events workload: varlake's plan shape against relational and hand-written reads -------------------

EVENT_LEAVES = {"kind": "string", "did": "string", "time_us": "long", "commit.collection": "string", "commit.operation": "string"}
#: reader confs measured as options (each applied to the session the reads are built in)
READ_OPTIONS: dict[str, dict[str, str]] = {
    "default": {},
    "nested-vectorized-off": {"spark.sql.parquet.enableNestedColumnVectorizedReader": "false"},
    "nested-pruning-off": {"spark.sql.optimizer.nestedSchemaPruning.enabled": "false"},
    "batch-16k": {"spark.sql.parquet.columnarReaderBatchSize": "16384"},
}


def events_tables(spark: Any, root: Path, events: int) -> tuple[Table, str]:
    """The events workload (``bench/workloads/events.py``) as a varlake table (``vs.write``,
    shredding ``auto``) and as relational Parquet, one data file per generated part, under
    ``root`` (reused when there)."""
    from workloads.events import generate_events, relational

    if not (root / "varlake" / "_delta_log").is_dir() or not (root / "relational" / "_SUCCESS").is_file():
        source = generate_events(root / "json", events)
        paths = [str(p) for p in source.paths]
        split = str(max(p.stat().st_size for p in source.paths) + 1)
        spark.conf.set("spark.sql.files.maxPartitionBytes", split)
        spark.conf.set("spark.sql.files.openCostInBytes", split)
        relational(spark, paths).write.mode("overwrite").parquet(str(root / "relational"))
        lines = spark.read.text(paths).selectExpr("parse_json(value) AS v")
        vs.write(lines, str(root / "varlake"), mode="overwrite", shredding="auto")
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        spark.conf.unset("spark.sql.files.openCostInBytes")
    return Table(root / "varlake"), str(root / "relational")


def _leaf_ref(path: str) -> str:
    return "v" + "".join(f".typed_value.`{p}`" for p in path.split(".")) + ".typed_value"


def _hand_schema() -> Any:
    """The struct schema of just the five leaves the events queries read (by hand)."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    def leaf(t: Any) -> Any:
        return StructType([StructField("typed_value", t)])

    def level(fields: dict[str, Any]) -> Any:
        return StructType([StructField("typed_value", StructType([StructField(k, v) for k, v in fields.items()]))])

    commit = level({"collection": leaf(StringType()), "operation": leaf(StringType())})
    return StructType([StructField("v", level({"kind": leaf(StringType()), "did": leaf(StringType()), "time_us": leaf(LongType()), "commit": commit}))])


def _hand_sql(query: str, flat: bool) -> str:
    """The Variant-dialect query over the hand-written read: each ``v:p::t`` its leaf."""
    import re

    return re.sub(r"v:([\w.]+)::\w+", lambda m: f"`{m.group(1).replace('.', '_')}`" if flat else _leaf_ref(m.group(1)), query)


def _cpu_measure(spark: Any, run: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall seconds, executor CPU seconds (task metrics of the stages ``run`` started) and the result."""
    from common import _drain, _stages

    _drain(spark)
    before = max((s.stageId() for s in _stages(spark)), default=-1)
    started = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - started
    _drain(spark)
    cpu = sum(s.executorCpuTime() for s in _stages(spark) if s.stageId() > before) / 1e9
    return seconds, cpu, result


def events_forms(spark: Any, table: Table, relational_dir: str, options: list[str]) -> dict[str, Callable[[Any], Any]]:
    """Each way of answering an events query (``query -> DataFrame``): ``relational``;
    ``varlake`` (``vs.sql``) under each reader option; the same leaves read by hand with a
    struct schema (``hand-nested``: SQL over the nested fields, as varlake's view does;
    ``hand-flat``: the leaves selected as top-level columns in the read DataFrame before
    the view)."""
    from varlake.spark.reading.shared_views import clone_session

    spark.read.parquet(relational_dir).createOrReplaceTempView("events_relational")
    files = [table.open_file(t.relative_path) for t in table.scan().plan().tasks]
    forms: dict[str, Callable[[Any], Any]] = {"relational": lambda q: spark.sql(q.render_relational("events_relational"))}
    for option in options:
        confs = READ_OPTIONS[option]
        session = clone_session(spark)
        for k, v in confs.items():
            session.conf.set(k, v)
        hand = session.read.schema(_hand_schema()).parquet(*files)
        hand.createOrReplaceGlobalTempView(f"hand_nested_{option.replace('-', '_')}")
        hand.selectExpr(*[f"{_leaf_ref(p)} AS `{p.replace('.', '_')}`" for p in EVENT_LEAVES]).createOrReplaceGlobalTempView(
            f"hand_flat_{option.replace('-', '_')}"
        )

        def varlake(q: Any, confs: dict[str, str] = confs) -> Any:
            for k, v in confs.items():
                spark.conf.set(k, v)
            try:
                return vs.sql(spark, q.variant, e=table)
            finally:
                for k in confs:
                    spark.conf.unset(k)

        suffix = "" if option == "default" else f" [{option}]"
        forms[f"varlake{suffix}"] = varlake
        if option == "default":
            forms["varlake [flag form]"] = lambda q, run=varlake: _flag_form(lambda: run(q))
        forms[f"hand-nested{suffix}"] = lambda q, o=option: session_sql(spark, _hand_sql(q.variant, False).replace("{e}", f"global_temp.hand_nested_{o.replace('-', '_')}"))
        forms[f"hand-flat{suffix}"] = lambda q, o=option: session_sql(spark, _hand_sql(q.variant, True).replace("{e}", f"global_temp.hand_flat_{o.replace('-', '_')}"))
    return forms


def _flag_form(make: Callable[[], Any]) -> Any:
    """``make()`` with the plan shape before issue 16: every use through ``IF(__vl_shredded,
    leaf, <Variant expression>)`` and a flag column, even when only shredded groups read."""
    from varlake.spark.reading import frames, prepare, shared_views

    modules = (frames, prepare, shared_views)  # each reads all_shredded under its own name
    real = frames.all_shredded
    for module in modules:
        module.all_shredded = lambda plan: False  # type: ignore[attr-defined]
    try:
        return make()
    finally:
        for module in modules:
            module.all_shredded = real  # type: ignore[attr-defined]


def session_sql(spark: Any, text: str) -> Any:
    return spark.sql(text)


class _EventsQuery:
    def __init__(self, query: Any) -> None:
        from workloads.spec import Dialect

        self.name = query.name
        self.variant = query.render(Dialect.VARIANT, "{e}")
        self._relational = query
        self._dialect = Dialect.RELATIONAL

    def render_relational(self, table: str) -> str:
        return self._relational.render(self._dialect, table)


def events_profile(spark: Any, table: Table, relational_dir: str, runs: int, options: list[str]) -> list[str]:
    """Every events query in every form (``events_forms``): two warm-ups each, then
    ``runs`` rounds with the forms in a rotating order; median wall and executor CPU
    time, and their ratios to relational's (the events queries have no literals to vary:
    Spark keeps no result cache, so a repeated query is read again)."""
    from workloads.events import QUERIES

    forms = events_forms(spark, table, relational_dir, options)
    failures: list[str] = []
    rows = sum(t.num_records or 0 for t in table.scan().plan().tasks)
    print(f"\nevents: {rows:,} events; median of {runs} rounds after 2 warm-ups, forms interleaved; wall (CPU) and ratio to relational")
    totals: dict[str, list[float]] = {name: [0.0, 0.0] for name in forms}
    for query in map(_EventsQuery, QUERIES):
        for name, form in forms.items():
            for _ in range(2):
                form(query).collect()
        timed: dict[str, list[tuple[float, float, Any]]] = {name: [] for name in forms}
        names = list(forms)
        for round_ in range(runs):
            for name in names[round_ % len(names):] + names[: round_ % len(names)]:
                timed[name].append(_cpu_measure(spark, lambda: forms[name](query).collect()))
            print(f"  round {round_ + 1} done", flush=True)
        answers = {name: sorted(map(tuple, runs_[-1][2]), key=repr) for name, runs_ in timed.items()}
        same = len({repr(a) for a in answers.values()}) == 1
        if not same:
            failures.append(f"events {query.name}: forms disagree")
        wall = {n: median([r[0] for r in rs]) for n, rs in timed.items()}
        cpu = {n: median([r[1] for r in rs]) for n, rs in timed.items()}
        print(f"{query.name}" + ("" if same else "  ANSWERS DIFFER"))
        for name in forms:
            totals[name][0] += wall[name]
            totals[name][1] += cpu[name]
            print(f"  {name:<38} {wall[name]:>7.3f}s ({cpu[name]:>6.2f}s CPU)  {wall[name] / wall['relational']:>5.2f}x ({cpu[name] / cpu['relational']:.2f}x CPU)")
    print("total")
    for name, (w, c) in totals.items():
        print(f"  {name:<38} {w:>7.3f}s ({c:>6.2f}s CPU)  {w / totals['relational'][0]:>5.2f}x ({c / totals['relational'][1]:.2f}x CPU)")
    return failures


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
