"""Variant vs JSON strings vs shredding vs relational, side by side: the entry point of `make bench`.

    .venv/bin/python bench/run.py [--scale 1.0] [--seed 2026] [--runs 3] [--workloads tpch_nested,events]

``make bench`` runs scale 5 (1M events; 150k orders with ~600k line items), where Spark's
fixed per-query costs no longer dominate; ``make bench-quick`` runs scale 1 into
``bench/out/quick/``. Environment overrides: ``VARLAKE_BENCH_SCALE``, ``VARLAKE_BENCH_SEED``,
``VARLAKE_BENCH_RUNS``, ``VARLAKE_BENCH_MASTER`` (default ``local[2]``),
``VARLAKE_BENCH_WORKDIR`` (scratch space for the storages; a temporary directory by default,
removed at the end), ``VARLAKE_BENCH_CACHE`` (where generated JSON Lines are kept between
runs, by workload, scale, seed and generator code; ``bench/.cache`` by default, ``--no-cache``
to generate into the scratch space instead).

In one Spark session it generates (or reuses) both workloads' JSON Lines (``workloads/``),
loads every storage from them (``harness.py``), runs every query once to warm up and then
``--runs`` timed rounds, checks that all storages return the same rows, and writes
``bench/RESULTS.md``, ``bench/results.json`` and one bar chart per workload
(``bench/<workload>.png``). Ratios are against JSON strings (a) and relational Parquet (e)
measured in the same run; every varlake query says which read path its planner took.
(g) delta-spark 4.4 on Spark 4.2 (issue 31) runs beside them in one process of its own for the
whole run (``delta_peer.py``; ``--no-delta-spark`` leaves it out).
Targets: issue 16 (varlake within 1.2x of relational on every events query and >= 3x faster
than Spark's own shredding; on TPC-H nested no whole-Variant read, within 1.2x of
relational time and 1.1x of its bytes in total, faster than Spark's shredding on every
query; planning <= 20 ms) and issue 6 (>= 8x / 20x faster than JSON strings in total).
The exit status is 1 when any storage failed or answered differently.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(BENCH))

import delta_peer  # noqa: E402
import harness  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

TARGET_SPEEDUP = {"events": 8.0, "tpch_nested": 20.0}
TARGET_RELATIONAL = 1.3
#: issue 16: per-query time against relational, per-query speed-up over Spark's own shredding
#: (events; TPC-H asks only "faster"), total bytes against relational (TPC-H), planning seconds
TARGET_RELATIONAL_PER_QUERY = 1.2
TARGET_OVER_SPARK_SHREDDED = {"events": 3.0, "tpch_nested": 1.0}
TARGET_RELATIONAL_BYTES = {"tpch_nested": 1.1}
TARGET_PLANNING_SECONDS = 0.020
DEFAULT_CACHE = BENCH / ".cache"
ORDER = ("json_strings", "spark_variant", "spark_shredded", "varlake", "relational", "duckdb", "duckdb_spark_shredded",
         "delta_spark")
SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "4g",
    "spark.sql.shuffle.partitions": "4",
    "spark.hadoop.parquet.hadoop.vectored.io.enabled": "false",
    # seven storages' queries share one session: with Spark's default of 100 compiled classes
    # they evict each other's generated code between a storage's runs (measured: varlake's
    # literal-independent rebuild stages and Spark shredded's Q1 were compiled again every
    # round), a cost a session running its own queries does not pay; bench/ANALYSIS.md
    "spark.sql.codegen.cache.maxEntries": "1000",
}


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=float(_env("VARLAKE_BENCH_SCALE", "1.0")),
                    help="1.0 = TPC-H SF 0.02 (30k orders, 120k line items) and 200k events")
    ap.add_argument("--seed", type=int, default=int(_env("VARLAKE_BENCH_SEED", "2026")))
    ap.add_argument("--runs", type=int, default=int(_env("VARLAKE_BENCH_RUNS", "3")))
    ap.add_argument("--workloads", default="tpch_nested,events")
    ap.add_argument("--master", default=_env("VARLAKE_BENCH_MASTER", "local[2]"))
    ap.add_argument("--workdir", default=_env("VARLAKE_BENCH_WORKDIR", ""))
    ap.add_argument("--out", default=str(BENCH), help="where RESULTS.md, results.json and the charts go")
    ap.add_argument("--cache-dir", default=_env("VARLAKE_BENCH_CACHE", str(DEFAULT_CACHE)),
                    help="keep generated JSON Lines here between runs (by workload, scale, seed, generator code)")
    ap.add_argument("--no-cache", action="store_true", help="generate the JSON Lines afresh into the scratch space")
    ap.add_argument("--no-delta-spark", action="store_true",
                    help="leave out (g) delta-spark (its side virtualenv is built by tools/delta_oracle.sh)")
    args = ap.parse_args(argv)
    if args.runs < 3:
        ap.error("--runs must be >= 3 (the figure is a median of warm runs)")
    return args


def spark_session(master: str) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName("varlake-bench")
    for key, value in SPARK_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# --- machine and versions ------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _command(*cmd: str) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, cwd=ROOT)
        return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr).strip() else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def machine() -> dict[str, Any]:
    return {"cpu": _cpu_model(), "cores": os.cpu_count(), "memory_gb": _memory_gb(),
            "os": platform.platform(), "load_average_at_start": [round(x, 2) for x in os.getloadavg()]}


def versions(spark: Any) -> dict[str, str]:
    import duckdb
    import pyarrow
    import pyspark

    import varlake

    commit = _command("git", "rev-parse", "--short", "HEAD")
    dirty = " (+ uncommitted changes)" if _command("git", "status", "--porcelain") else ""
    tpchgen = Path(sys.executable).with_name("tpchgen-cli")
    return {
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "spark": spark.version,
        "java": spark.sparkContext._jvm.System.getProperty("java.version"),
        "duckdb": duckdb.__version__,
        "pyarrow": pyarrow.__version__,
        "tpchgen-cli": _command(str(tpchgen) if tpchgen.exists() else "tpchgen-cli", "--version").split(" ")[-1],
        "varlake": f"{varlake.__version__} @ {commit or 'unknown'}{dirty}",
    }


# --- ratios and targets --------------------------------------------------------------------------


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or math.isnan(a) or math.isnan(b) or b == 0:
        return None
    return a / b


def summary(wl: harness.WorkloadResult) -> dict[str, Any]:
    """Speed-ups against JSON strings, ratios against relational, and the issue's targets."""
    s = wl.storages
    names = [q.name for q in wl.queries]

    def med(key: str, q: str) -> float | None:
        st = s.get(key)
        return st.queries[q].median_seconds if st and q in st.queries and st.queries[q].seconds else None

    def tot(key: str) -> float | None:
        st = s.get(key)
        return st.total_seconds if st and not st.error else None

    out: dict[str, Any] = {"speedup_vs_json_strings": {}, "ratio_vs_relational": {}}
    for key in s:
        out["speedup_vs_json_strings"][key] = {q: _r(ratio(med(harness.BASELINE, q), med(key, q))) for q in names} | {
            "total": _r(ratio(tot(harness.BASELINE), tot(key)))}
        out["ratio_vs_relational"][key] = {q: _r(ratio(med(key, q), med(harness.REFERENCE, q))) for q in names} | {
            "total": _r(ratio(tot(key), tot(harness.REFERENCE)))}
    speedup = ratio(tot(harness.BASELINE), tot("varlake"))
    vs_rel = ratio(tot("varlake"), tot(harness.REFERENCE))
    slower = {q: _r(ratio(med("varlake", q), med("spark_shredded", q))) for q in names}
    need = TARGET_SPEEDUP.get(wl.name, 8.0)
    floor = min((v for q in names if (v := med(harness.REFERENCE, q)) is not None), default=None)
    out["targets"] = {
        "varlake_speedup_vs_json_strings": {"target": need, "measured": _r(speedup),
                                            "met": speedup is not None and speedup >= need},
        "varlake_vs_relational": {"target": TARGET_RELATIONAL, "measured": _r(vs_rel),
                                  "met": vs_rel is not None and vs_rel <= TARGET_RELATIONAL},
        "varlake_vs_spark_shredded_per_query": {"target": "< 1.0 on every query", "measured": slower,
                                                "met": all(v is not None and v < 1.0 for v in slower.values())},
        "relational_speedup_vs_json_strings": _r(ratio(tot(harness.BASELINE), tot(harness.REFERENCE))),
        "fastest_relational_query_seconds": _r(floor),
    }
    out["targets_issue16"] = issue16_targets(wl)
    if delta_peer.KEY in s:
        out["delta_spark"] = {other: {q: _r(ratio(med(delta_peer.KEY, q), med(other, q))) for q in names}
                              | {"total": _r(ratio(tot(delta_peer.KEY), tot(other)))}
                              for other in ("varlake", "spark_shredded", harness.REFERENCE)}
    return out


def read_paths(wl: harness.WorkloadResult) -> dict[str, str]:
    """Query -> the read path varlake's planner took (empty when varlake did not run)."""
    v = wl.storages.get("varlake")
    return {q.name: (v.queries[q.name].note if v and q.name in v.queries else "") for q in wl.queries}


def reads_whole_variant(note: str) -> bool:
    """Whether a varlake read path reads any file's Variant whole (or could not be told)."""
    text = note.lower()
    return not text or "variant read" in text or "unknown" in text


def issue16_targets(wl: harness.WorkloadResult) -> dict[str, Any]:
    """Issue 16's targets, measured: per-query time against relational and Spark's shredding,
    total bytes against relational, no whole-Variant read, planning time."""
    s = wl.storages
    names = [q.name for q in wl.queries]

    def q(key: str, name: str) -> harness.QueryResult | None:
        st = s.get(key)
        qr = st.queries.get(name) if st and not st.error else None
        return qr if qr is not None and qr.seconds and not qr.error else None

    def per_query(key: str) -> dict[str, float | None]:
        return {n: _r(ratio(getattr(q("varlake", n), "median_seconds", None), getattr(q(key, n), "median_seconds", None)))
                for n in names}

    vs_rel, vs_sh = per_query(harness.REFERENCE), per_query("spark_shredded")
    over = TARGET_OVER_SPARK_SHREDDED.get(wl.name, 1.0)
    speedup_sh = {n: _r(1 / v) if v else None for n, v in vs_sh.items()}
    out: dict[str, Any] = {
        "varlake_vs_relational_per_query": {
            "target": TARGET_RELATIONAL_PER_QUERY, "measured": vs_rel,
            "met": all(v is not None and v <= TARGET_RELATIONAL_PER_QUERY for v in vs_rel.values())},
        "varlake_speedup_over_spark_shredded_per_query": {
            "target": over, "measured": speedup_sh,
            "met": all(v is not None and (v >= over if over > 1.0 else v > 1.0) for v in speedup_sh.values())},
    }
    paths = read_paths(wl)
    whole = [n for n, note in paths.items() if reads_whole_variant(note)]
    out["no_whole_variant_read"] = {"target": "no query reads the Variant whole", "measured": paths, "met": not whole}
    v, rel = s.get("varlake"), s.get(harness.REFERENCE)
    if wl.name in TARGET_RELATIONAL_BYTES and v and rel:
        out["varlake_vs_relational_total"] = {
            "target": TARGET_RELATIONAL_PER_QUERY, "measured": _r(ratio(v.total_seconds, rel.total_seconds))}
        out["varlake_vs_relational_total"]["met"] = (out["varlake_vs_relational_total"]["measured"] or math.inf) \
            <= TARGET_RELATIONAL_PER_QUERY
        b = _r(ratio(v.total_bytes, rel.total_bytes))
        out["varlake_bytes_vs_relational_total"] = {"target": TARGET_RELATIONAL_BYTES[wl.name], "measured": b,
                                                    "met": b is not None and b <= TARGET_RELATIONAL_BYTES[wl.name]}
    plans = {n: _r(getattr(q("varlake", n), "plan_seconds", None), 4) for n in names}
    out["planning_seconds_per_query"] = {"target": TARGET_PLANNING_SECONDS, "measured": plans,
                                         "met": all(p is not None and p <= TARGET_PLANNING_SECONDS for p in plans.values())}
    return out


def _r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


# --- output --------------------------------------------------------------------------------------


def mb_text(n: int | None) -> str:
    return "–" if n is None else f"{n / 1e6:,.1f}"


def seconds_text(x: float | None) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:.3f}"


def ratio_text(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}x"


def _keys(wl: harness.WorkloadResult) -> list[str]:
    return [k for k in ORDER if k in wl.storages]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], text_columns: Sequence[int] = ()) -> list[str]:
    """A Markdown table; numbers right-aligned, the first column and ``text_columns`` left-aligned."""
    align = ["---" if i == 0 or i in text_columns else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def workload_markdown(wl: harness.WorkloadResult, summ: dict[str, Any], runs: int, chart: str) -> list[str]:
    keys = _keys(wl)
    labels = [wl.storages[k].label for k in keys]
    src = wl.source
    reused = " (reused from `bench/.cache`)" if src.details.get("cache") == "hit" else ""
    details = ", ".join(f"{k} {v}" for k, v in src.details.items() if k != "cache")
    out = [f"## {wl.title}", "",
           f"Source: {src.rows:,} JSON documents, {src.bytes / 1e6:,.1f} MB of JSON Lines in {len(src.paths)} files "
           f"({details}), generated in {src.seconds:.1f} s{reused}.", ""]
    loads = sum(v for k, v in wl.phases.items() if k.startswith("load "))
    rounds = [(k, v) for k, v in wl.phases.items() if k.startswith("round ")]
    if wl.phases:
        out += [f"Wall time of this workload: loading every storage {loads:.0f} s, "
                + ", ".join(f"{k} {'(warm-up) ' if k == 'round 0' else ''}{v:.0f} s" for k, v in rounds) + ".", ""]
    out += ["### Loading", ""]
    out += markdown_table(["storage", "load (s)", "on disk (MB)", "files", "codec", "note"], [
        [wl.storages[k].label, seconds_text(wl.storages[k].load_seconds), mb_text(wl.storages[k].bytes_on_disk),
         str(wl.storages[k].files or "–"), wl.storages[k].compression or "–", wl.storages[k].error or wl.storages[k].note]
        for k in keys], text_columns=(4, 5))
    names = [q.name for q in wl.queries]

    def cell(k: str, q: str, what: str) -> str:
        qr = wl.storages[k].queries.get(q)
        if qr is None or qr.error:
            return "error" if qr is not None else "–"
        return seconds_text(qr.median_seconds) if what == "s" else mb_text(qr.median_bytes)

    out += ["", f"### Query time (seconds, median of {runs} warm runs)", "",
            "The last column is the read path varlake's planner took for the query (`varlake.spark.reading.explain`): "
            "*shredded read* serves the query's paths from typed leaves, *variant read* reads the Variant column whole.",
            ""]
    paths = read_paths(wl)
    rows = [[f"{q} {next(x.title for x in wl.queries if x.name == q)}"] + [cell(k, q, "s") for k in keys]
            + [paths.get(q) or "–"] for q in names]
    rows.append(["**total**"] + [f"**{seconds_text(wl.storages[k].total_seconds)}**" for k in keys] + [""])
    out += markdown_table(["query", *labels, "(d) varlake read path"], rows, text_columns=(len(keys) + 1,))
    spreads = sorted((max(qr.seconds) - min(qr.seconds)) / qr.median_seconds
                     for k in keys for qr in wl.storages[k].queries.values() if len(qr.seconds) > 1 and qr.median_seconds > 0)
    if spreads:
        out += ["", f"Run-to-run spread (max - min of a query's timed runs, over their median): median "
                f"{100 * spreads[len(spreads) // 2]:.0f}%, worst {100 * spreads[-1]:.0f}% across storages and queries; "
                "every run is in `results.json`."]
    out += ["", f"![{wl.name}]({chart})", ""]
    out += ["### Bytes read (MB)", ""]
    rows = [[q] + [cell(k, q, "b") for k in keys] for q in names]
    rows.append(["**total**"] + [f"**{mb_text(wl.storages[k].total_bytes)}**" for k in keys])
    out += markdown_table(["query", *labels], rows)
    out += ["", "### Speed-up against (a) JSON strings (higher is better)", ""]
    sp = summ["speedup_vs_json_strings"]
    out += markdown_table(["query", *labels], [[q] + [ratio_text(sp[k][q]) for k in keys] for q in [*names, "total"]])
    out += ["", "### Time relative to (e) relational (lower is better)", ""]
    rr = summ["ratio_vs_relational"]
    out += markdown_table(["query", *labels], [[q] + [ratio_text(rr[k][q]) for k in keys] for q in [*names, "total"]])
    out += ["", "### First run (includes Spark's JIT warm-up; not part of the medians), seconds", ""]
    out += markdown_table(["query", *labels], [[q] + [seconds_text(wl.storages[k].queries[q].first_run_seconds)
                                             if q in wl.storages[k].queries else "–" for k in keys] for q in names])
    out += ["", "### Targets", ""]
    out += issue16_markdown(wl.name, summ["targets_issue16"])
    t = summ["targets"]
    a, b, c = t["varlake_speedup_vs_json_strings"], t["varlake_vs_relational"], t["varlake_vs_spark_shredded_per_query"]
    out.append(f"- (issue 6) varlake >= {a['target']:g}x faster than JSON strings (total): **{ratio_text(a['measured'])}** — "
               + ("met." if a["met"] else f"missed{_by(a['measured'], a['target'], higher=True)}."))
    out.append(f"- (issue 6) varlake within {b['target']}x of relational (total): **{ratio_text(b['measured'])}** — "
               + ("met." if b["met"] else f"missed{_by(b['measured'], b['target'], higher=False)}."))
    slow = {q: v for q, v in c["measured"].items() if v is None or v >= 1.0}
    out.append("- (issue 6) varlake faster than Spark's own shredding on every query: "
               + ("met (" + ", ".join(f"{q} {ratio_text(v)}" for q, v in c["measured"].items()) + " of its time)." if c["met"]
                  else "missed on " + ", ".join(f"{q} ({ratio_text(v)} of its time)" for q, v in slow.items()) + "."))
    rel_speedup = t["relational_speedup_vs_json_strings"]
    implied = f" (so the speed-up target asks varlake to be {a['target'] / rel_speedup:.2f}x faster than relational)" \
        if rel_speedup and a["target"] > rel_speedup else ""
    out.append(f"- For scale: relational itself is {ratio_text(rel_speedup)} faster than JSON strings here{implied}, and the "
               f"fastest relational query takes {seconds_text(t['fastest_relational_query_seconds'])} s (Spark's per-query floor "
               "on this machine).")
    out += diagnostics(wl)
    out += delta_markdown(wl, summ)
    return out


def delta_markdown(wl: harness.WorkloadResult, summ: dict[str, Any]) -> list[str]:
    """(g) delta-spark's time against varlake, Spark's own shredding and relational, per query."""
    d = summ.get("delta_spark")
    g = wl.storages.get(delta_peer.KEY)
    if not d or not g:
        return []
    if g.error:
        return ["", f"(g) delta-spark did not run: {g.error}."]
    others = [k for k in d if k in wl.storages]
    rows = [[q, seconds_text(g.queries[q].median_seconds if q in g.queries else None)]
            + [ratio_text(d[k][q]) for k in others]
            + [ratio_text(ratio(g.queries[q].median_bytes, wl.storages["varlake"].queries[q].median_bytes))
               if "varlake" in wl.storages and q in wl.storages["varlake"].queries and q in g.queries else "–"]
            for q in [x.name for x in wl.queries]]
    rows.append(["total", seconds_text(g.total_seconds)] + [ratio_text(d[k]["total"]) for k in others]
                + [ratio_text(ratio(g.total_bytes, wl.storages["varlake"].total_bytes)) if "varlake" in wl.storages else "–"])
    return ["", "(g) delta-spark, the system a user would pick instead (its own shredding and Variant statistics, in "
            "its own Spark 4.2 process): its time against the others (above 1.00x: delta-spark is slower), and its "
            "bytes read against varlake's:", "",
            *markdown_table(["query", "delta-spark (s)", *(f"time vs {wl.storages[k].label}" for k in others),
                             "bytes vs (d) varlake"], rows)]


def _met(flag: bool) -> str:
    return "met" if flag else "**missed**"


def issue16_markdown(name: str, t: dict[str, Any]) -> list[str]:
    """The issue-16 target lines of one workload."""
    rel, sh = t["varlake_vs_relational_per_query"], t["varlake_speedup_over_spark_shredded_per_query"]
    out = [f"- (issue 16) varlake within {rel['target']}x of relational on every query: {_met(rel['met'])} ("
           + ", ".join(f"{q} {ratio_text(v)}" for q, v in rel["measured"].items()) + " of its time).",
           (f"- (issue 16) varlake >= {sh['target']:g}x faster than Spark's own shredding on every query: "
            if sh["target"] > 1.0 else "- (issue 16) varlake faster than Spark's own shredding on every query: ")
           + f"{_met(sh['met'])} (speed-up: " + ", ".join(f"{q} {ratio_text(v)}" for q, v in sh["measured"].items()) + ")."]
    whole = t["no_whole_variant_read"]
    reading = [q for q, note in whole["measured"].items() if reads_whole_variant(note)]
    out.append("- (issue 16) no query reads the Variant whole: " + _met(whole["met"])
               + ("" if whole["met"] else " (" + ", ".join(f"{q}: {whole['measured'][q] or 'no plan'}" for q in reading) + ")")
               + ".")
    if "varlake_vs_relational_total" in t:
        a, b = t["varlake_vs_relational_total"], t["varlake_bytes_vs_relational_total"]
        out.append(f"- (issue 16) varlake within {a['target']}x of relational time in total: **{ratio_text(a['measured'])}** — "
                   f"{_met(a['met'])}; within {b['target']}x of its bytes in total: **{ratio_text(b['measured'])}** — {_met(b['met'])}.")
    p = t["planning_seconds_per_query"]
    out.append(f"- (issue 16) planning (`explain`, warm) <= {1000 * p['target']:.0f} ms per query: {_met(p['met'])} ("
               + ", ".join(f"{q} {'–' if v is None else f'{1000 * v:.0f} ms'}" for q, v in p["measured"].items()) + ").")
    return out


def _by(measured: float | None, target: float, higher: bool) -> str:
    if measured is None:
        return " (no figure: varlake did not run)"
    return f" by {target / measured:.2f}x" if higher else f" by {measured / target:.2f}x"


def diagnostics(wl: harness.WorkloadResult) -> list[str]:
    """Facts behind the figures: where varlake's time and bytes go relative to its peers."""
    s = wl.storages
    v, rel, sh = s.get("varlake"), s.get("relational"), s.get("spark_shredded")
    if not v or v.error or not rel:
        return ["", f"varlake did not run: {v.error if v else 'not available in this tree'}."]
    lines = ["", "Where varlake's time goes, per query: its time and bytes against relational (e) and Spark's "
             "shredding (c), the time its planner alone takes (`varlake.spark.reading.explain`, warm), and the read path "
             "the planner chose:", ""]
    rows = []
    for q in wl.queries:
        vq, rq = v.queries.get(q.name), rel.queries.get(q.name)
        sq = sh.queries.get(q.name) if sh else None
        if not vq or not rq or vq.error:
            continue
        rows.append([q.name, seconds_text(vq.median_seconds), ratio_text(ratio(vq.median_seconds, rq.median_seconds)),
                     ratio_text(ratio(vq.median_bytes, rq.median_bytes)),
                     ratio_text(ratio(vq.median_seconds, sq.median_seconds)) if sq else "–",
                     ratio_text(ratio(vq.median_bytes, sq.median_bytes)) if sq else "–",
                     seconds_text(vq.plan_seconds), vq.note or "–"])
    lines += markdown_table(["query", "varlake (s)", "time vs (e)", "bytes vs (e)", "time vs (c)", "bytes vs (c)",
                     "planning (s)", "read path"], rows, text_columns=(7,))
    return lines


def write_chart(wl: harness.WorkloadResult, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = _keys(wl)
    names = [q.name for q in wl.queries]
    groups = [*names, "total"]
    width = 0.8 / max(1, len(keys))
    fig, ax = plt.subplots(figsize=(11, 5))
    for i, k in enumerate(keys):
        st = wl.storages[k]
        vals = [st.queries[q].median_seconds if q in st.queries and st.queries[q].seconds else 0.0 for q in names]
        vals.append(st.total_seconds if not math.isnan(st.total_seconds) else 0.0)
        ax.bar([g + i * width - 0.4 + width / 2 for g in range(len(groups))], vals, width, label=st.label)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_yscale("log")
    ax.set_ylabel("median seconds (log scale)")
    ax.set_title(f"{wl.title}\n{wl.source.rows:,} documents, {wl.source.bytes / 1e6:,.0f} MB of JSON")
    ax.legend(fontsize=8, ncol=2)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def results_markdown(meta: dict[str, Any], results: list[harness.WorkloadResult], summaries: dict[str, Any],
                     charts: dict[str, str]) -> str:
    m, v, cfg = meta["machine"], meta["versions"], meta["config"]
    out = ["# varlake benchmark: Variant, shredding and relational, side by side", "",
           f"Generated by `bench/run.py` (`make bench`: scale 5; `make bench-quick`: scale 1) on {meta['generated_at']}: "
           f"scale {cfg['scale']}, seed "
           f"{cfg['seed']}, {cfg['runs']} timed runs per query after one warm-up run, Spark master `{cfg['master']}`, "
           f"wall time {meta['wall_seconds'] / 60:.1f} min.", "",
           f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB RAM, {m['os']}; load average "
           f"{m['load_average_at_start']} at the start and {m.get('load_average_at_end')} at the end (other work on "
           "the machine shows up here and in the spread of the runs).", "",
           "Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".", "",
           "How the times grow with the rows, 0.25M to 5M events: `bench/SCALING.md` (`make bench-scaling`).", "",
           "## How to read this", "",
           "Storages, all loaded from the same JSON Lines and queried in one Spark session ((g) in its own):", "",
           "- **(a) JSON strings**: Parquet with the raw JSON text; queries use `get_json_object` (scalar paths) or "
           "`from_json` with a schema pruned to the fields read (arrays).",
           "- **(b) Spark Variant**: `parse_json` into Parquet Variant, unshredded (`writeShredding.enabled=false`).",
           "- **(c) Spark shredded**: the same, shredded by Spark 4.3's own per-file schema inference (its default).",
           "- **(d) varlake**: `varlake.spark.write(..., shredding=\"auto\")` (one stable shredding schema for the table) "
           "and `varlake.spark.sql` (the planner reads perfectly shredded paths as plain struct leaves).",
           "- **(e) relational**: the same documents as typed, flattened columns and arrays of structs (the reference).",
           "- **(f) DuckDB** 2.0 (2 threads) over the files of (d) and over the files of (c), through its VARIANT type.",
           f"- **(g) delta-spark** {v.get('delta-spark', '4.4')} (issue 31): a Delta table written and read by "
           "delta-spark in its own Spark 4.2 process (the side virtualenv of `tools/delta_oracle.sh`, one process for the "
           "whole run, same master and confs), with its own Variant shredding (`delta.enableVariantShredding=true`: "
           "Spark's per-file inference) and Variant statistics (`spark.databricks.delta.variantShredding."
           f"parseFooterForStats=true`, `spark.databricks.delta.stats.limitPerVariant={delta_peer.STATS_PER_VARIANT}`); "
           "its loads and runs are timed inside that process, as Spark's are in this one.",
           "",
           "(b), (c), (d) and (g) run the *same* Variant SQL text (`v:path::type`, `variant_get(v, '$.lineitems', "
           "'array<struct<...>>')`). Time is the median of the timed runs; each run uses another set of the query's "
           "literals (TPC-H substitution parameters; the JSONBench queries have none), no engine caches results, nothing "
           "is cached in memory by the benchmark, and every storage's files are warm in the OS page cache because each "
           "was just written. Round 0 (untimed) warms up every storage and query, so Spark's JIT compilation is out of "
           "the medians (its first-run times are listed separately). Spark's cache of generated code holds 1000 classes "
           "(its default, 100, is too few for seven storages' queries in one session: they evict each other's compiled "
           "stages between runs). Bytes read: Spark's task input metrics (all stages "
           "of the query's jobs; Hadoop's vectored Parquet reads are switched off because they bypass these counters), "
           "and DuckDB's profiler (`total_bytes_read`). Every run of every query is checked against relational's rows "
           f"for the same literals (floats to a relative {harness.REL_TOL:g}); "
           + ("**all storages returned the same answers.**" if all(not r.mismatches for r in results)
              else "**some answers differed — see the end of this file.**"), ""]
    for wl in results:
        out += workload_markdown(wl, summaries[wl.name], cfg["runs"], charts[wl.name])
        out.append("")
    problems = [m for wl in results for m in wl.mismatches]
    if problems:
        out += ["## Failures and differing answers", "", *(f"- {p}" for p in problems), ""]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="varlake-bench-"))
    print(f"varlake bench: scale {args.scale}, seed {args.seed}, {args.runs} runs, scratch {workdir}", flush=True)
    meta: dict[str, Any] = {"generated_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                            "machine": machine(),
                            "config": {"scale": args.scale, "seed": args.seed, "runs": args.runs, "master": args.master,
                                       "spark_conf": SPARK_CONF,
                                       "cache_dir": None if args.no_cache else str(args.cache_dir)}}
    spark = spark_session(args.master)
    meta["versions"] = versions(spark)
    peer, extra = start_delta_spark(args, meta)
    results: list[harness.WorkloadResult] = []
    summaries: dict[str, Any] = {}
    charts: dict[str, str] = {}
    try:
        for name in [w.strip() for w in args.workloads.split(",") if w.strip()]:
            workload = WORKLOADS[name](args.seed)
            print(f"[{name}] generating ...", flush=True)
            cache = None if args.no_cache else Path(args.cache_dir)
            source = harness.cached_source(workload, args.scale, args.seed, workdir / name / "source", cache,
                                           log=lambda line: print(line, flush=True))
            print(f"[{name}] {source.rows:,} documents, {source.bytes / 1e6:,.1f} MB "
                  + ("reused from the cache" if source.details.get("cache") == "hit"
                     else f"generated in {source.seconds:.1f} s"), flush=True)
            wl = harness.run_workload(spark, workload, source, workdir / name / "storages", runs=args.runs,
                                      log=lambda line: print(line, flush=True), extra=extra)
            results.append(wl)
            summaries[name] = summary(wl)
            charts[name] = f"{name}.png"
            write_chart(wl, out_dir / charts[name])
            print_ratios(wl, summaries[name])
            shutil.rmtree(workdir / name, ignore_errors=True)
    finally:
        spark.stop()
        if peer is not None:
            peer.stop()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    meta["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    meta["wall_seconds"] = round(time.perf_counter() - started, 1)
    doc = {**meta, "workloads": {wl.name: {**wl.to_json(), "summary": summaries[wl.name]} for wl in results}}
    (out_dir / "results.json").write_text(json.dumps(doc, indent=2) + "\n")
    analysis = BENCH / "ANALYSIS.md"  # hand-written reading of the numbers, kept across runs
    notes = "\n\n" + analysis.read_text() if analysis.is_file() else ""
    (out_dir / "RESULTS.md").write_text(results_markdown(meta, results, summaries, charts) + notes)
    failed = [m for wl in results for m in wl.mismatches] + [
        f"{wl.name} {k}: {st.error}" for wl in results for k, st in wl.storages.items() if st.error]
    print(f"wrote {out_dir / 'RESULTS.md'} and {out_dir / 'results.json'} in {meta['wall_seconds'] / 60:.1f} min")
    for line in failed:
        print(f"FAILED: {line}", file=sys.stderr)
    return 1 if failed else 0


def start_delta_spark(args: argparse.Namespace, meta: dict[str, Any]) -> tuple[Any, list[Any]]:
    """The one delta-spark process of the run, and the storage factory each workload gets from it
    (a storage that fails with the reason when delta-spark cannot start; none with --no-delta-spark)."""
    if args.no_delta_spark:
        return None, []
    print("starting delta-spark (its own Spark 4.2 process) ...", flush=True)
    try:
        peer = delta_peer.start(args.master, SPARK_CONF)
    except harness.BenchmarkError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else "delta-spark did not start"
        print(f"delta-spark is left out: {reason}", flush=True)
        return None, [lambda root: harness.Unavailable(root, delta_peer.KEY, delta_peer.LABEL, reason)]
    meta["versions"]["delta-spark"] = f"{peer.delta_version} on spark {peer.spark_version}"
    return peer, [peer.storage]


def print_ratios(wl: harness.WorkloadResult, summ: dict[str, Any]) -> None:
    print(f"\n== {wl.name}: total median seconds, speed-up vs (a) JSON strings, ratio vs (e) relational ==")
    for k in _keys(wl):
        st = wl.storages[k]
        print(f"{st.label:28s} {seconds_text(st.total_seconds):>9s} s   {ratio_text(summ['speedup_vs_json_strings'][k]['total']):>8s} "
              f"vs JSON   {ratio_text(summ['ratio_vs_relational'][k]['total']):>8s} of relational   read {mb_text(st.total_bytes)} MB")
    print()


if __name__ == "__main__":
    sys.exit(main())
