"""Time against rows: the workload benchmark at several sizes, for every storage (`make bench-scaling`).

    .venv/bin/python bench/scaling.py [--sizes 0.25,0.5,1,2,5] [--workloads events[,tpch_nested]]
                                      [--runs 3] [--warm-up first|every] [--storages all]

A size is millions of events; TPC-H nested runs at the same benchmark scale (size ``s`` is
scale ``5 s``: ``150k s`` orders with about four line items each), so ``--sizes 1`` is what
``make bench`` runs. In one Spark session, for each workload and each size in increasing
order, it generates (or reuses from ``bench/.cache``) the JSON Lines, loads every storage
(``harness.py``: JSON strings, Spark Variant, Spark shredded, varlake, relational, DuckDB on
the files of varlake and of Spark's shredding), runs every query ``--runs`` timed times,
checks every answer against relational's, and records the medians and the read path
varlake's planner took for each query. The first size warms up (an untimed round, so
Spark's JIT compilation is out of the figures); the larger sizes, run in the same warmed-up
JVM, skip that round unless ``--warm-up every`` (DuckDB's bytes read are measured only in a
warm-up round, so they are missing for those sizes; times are not affected).

After every size it rewrites ``bench/SCALING.md`` (total and per-query times, ratios to
relational and to Spark's shredding per size, read paths, load times, the load average of
the machine during each size), ``bench/scaling.json`` (every run) and one chart per workload,
``bench/scaling_<workload>.png`` (log-log time against rows, a line per storage, a panel per
query, the total, and the total relative to relational), so a run stopped early still leaves
the sizes it finished. The exit status is 1 when any storage failed or answered differently.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "src"))
sys.path.insert(0, str(BENCH))

import harness  # noqa: E402
import run  # noqa: E402
from workloads import WORKLOADS  # noqa: E402
from workloads.events import EVENTS_AT_SCALE_1  # noqa: E402

DEFAULT_SIZES = "0.25,0.5,1,2,5"
ALL_STORAGES = (*harness.STORAGE_KEYS, "duckdb_spark_shredded")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help="millions of events, comma-separated (default %(default)s)")
    ap.add_argument("--workloads", default="events", help="events and/or tpch_nested, comma-separated")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per query and size (the figure is their median)")
    ap.add_argument("--warm-up", choices=("first", "every", "none"), default="first",
                    help="an untimed warm-up round at the first size only (default), at every size, or none (for a "
                         "run of large sizes only, where Spark's JIT warm-up is a small share of a run)")
    ap.add_argument("--storages", default="all", help="comma-separated storage keys (default: all)")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("VARLAKE_BENCH_SEED", "2026")))
    ap.add_argument("--master", default=os.environ.get("VARLAKE_BENCH_MASTER", "local[2]"))
    ap.add_argument("--workdir", default=os.environ.get("VARLAKE_BENCH_WORKDIR", ""))
    ap.add_argument("--out", default=str(BENCH), help="where SCALING.md, scaling.json and the charts go")
    ap.add_argument("--cache-dir", default=os.environ.get("VARLAKE_BENCH_CACHE", str(run.DEFAULT_CACHE)))
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--add-results", action="append", default=[], metavar="JSON",
                    help="also report the workloads of a bench/run.py results.json, or the sizes of another "
                         "scaling.json, as points (an added point replaces a size of the same rows; the tables say "
                         "where each point comes from); may be given more than once")
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: rewrite SCALING.md and the charts from --out's scaling.json (and --add-results)")
    args = ap.parse_args(argv)
    try:
        args.size_list = sorted({float(x) for x in args.sizes.split(",") if x.strip()})
    except ValueError:
        ap.error(f"--sizes must be numbers (millions of events), got {args.sizes!r}")
    if not args.size_list or min(args.size_list) <= 0:
        ap.error("--sizes needs at least one positive size")
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    args.storage_list = list(ALL_STORAGES) if args.storages == "all" else [s.strip() for s in args.storages.split(",")]
    unknown = set(args.storage_list) - set(ALL_STORAGES)
    if unknown:
        ap.error(f"unknown storages {sorted(unknown)}; known: {', '.join(ALL_STORAGES)}")
    if harness.REFERENCE not in args.storage_list:
        args.storage_list.append(harness.REFERENCE)  # every answer is checked against it
    args.workload_list = [w.strip() for w in args.workloads.split(",") if w.strip()]
    for w in args.workload_list:
        if w not in WORKLOADS:
            ap.error(f"unknown workload {w!r}; known: {', '.join(WORKLOADS)}")
    return args


def scale_of(size_millions: float) -> float:
    """The benchmark scale of a size in millions of events (scale 1 is 200k events, 30k orders)."""
    return round(size_millions * 1_000_000 / EVENTS_AT_SCALE_1, 6)


# --- one size -------------------------------------------------------------------------------------


def size_record(size: float, wl: harness.WorkloadResult, wall: float, load: tuple[list[float], list[float]],
                warmed: bool) -> dict[str, Any]:
    """What scaling.json keeps of one size: the harness's full result plus the context."""
    return {"size_millions": size, "scale": scale_of(size), "rows": wl.source.rows, "source_bytes": wl.source.bytes,
            "wall_seconds": round(wall, 1), "load_average_at_start": load[0], "load_average_at_end": load[1],
            "warm_up_round": warmed, "origin": "scaling run", "result": wl.to_json()}


def records_from_results(path: Path, workloads: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Workload -> size records from a ``bench/run.py`` results.json (same harness, same storages
    and checks; its own run, with the load average of that run) or another ``scaling.json``."""
    doc = json.loads(path.read_text())
    out: dict[str, list[dict[str, Any]]] = {}
    for name in workloads:
        wl = doc.get("workloads", {}).get(name)
        if not wl:
            continue
        if "sizes" in wl:  # another scaling run
            out[name] = [{**rec, "origin": f"scaling run of {doc.get('generated_at', '?')}, "
                                           f"{doc['config']['runs']} timed run(s)"} for rec in wl["sizes"]]
            continue
        scale = float(doc["config"]["scale"])
        out[name] = [{"size_millions": round(scale * EVENTS_AT_SCALE_1 / 1e6, 6), "scale": scale,
                     "rows": wl["source"]["rows"], "source_bytes": wl["source"]["bytes"],
                     "wall_seconds": doc.get("wall_seconds"),
                     "load_average_at_start": doc["machine"]["load_average_at_start"],
                     "load_average_at_end": doc["machine"].get("load_average_at_end") or doc["machine"]["load_average_at_start"],
                     "warm_up_round": True,
                     "origin": f"bench/run.py at scale {scale:g} ({doc.get('generated_at', '?')})",
                     "result": {k: v for k, v in wl.items() if k != "summary"}}]
    return out


def merge(doc: dict[str, Any], added: dict[str, list[dict[str, Any]]]) -> None:
    """Put the added records into ``doc`` (one replacing a size of the same rows moves that size
    to the workload's ``replaced`` list), sizes in order."""
    for name, recs in added.items():
        w = doc["workloads"].setdefault(name, {"sizes": []})
        for rec in recs:
            w.setdefault("replaced", []).extend(r for r in w["sizes"] if r["rows"] == rec["rows"] and r != rec)
            w["sizes"] = sorted([*(r for r in w["sizes"] if r["rows"] != rec["rows"]), rec], key=lambda r: r["rows"])


def median(rec: dict[str, Any], storage: str, query: str | None = None) -> float | None:
    st = rec["result"].get(storage)
    if not st or st.get("error"):
        return None
    if query is None:
        return st["total"]["median_seconds"]
    q = st["queries"].get(query)
    return q["median_seconds"] if q and not q.get("error") else None


def read_path(rec: dict[str, Any], query: str) -> str:
    st = rec["result"].get("varlake")
    return (st or {}).get("queries", {}).get(query, {}).get("note") or "–"


# --- output ---------------------------------------------------------------------------------------


def _rows(n: int) -> str:
    """250000 -> "250k", 2000000 -> "2M"."""
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k"


def storages_of(records: list[dict[str, Any]]) -> list[str]:
    present = {k for rec in records for k in rec["result"] if isinstance(rec["result"][k], dict) and "label" in rec["result"][k]}
    return [k for k in run.ORDER if k in present]


def label(records: list[dict[str, Any]], key: str) -> str:
    return next(rec["result"][key]["label"] for rec in records if key in rec["result"])


def workload_markdown(name: str, records: list[dict[str, Any]], chart: str) -> list[str]:
    keys = storages_of(records)
    labels = [label(records, k) for k in keys]
    first = records[0]["result"]
    queries = list(first["queries"])
    unit = "events" if name == "events" else "orders"
    sizes = ", ".join(f"{rec['rows']:,} {unit} ({rec['source_bytes'] / 1e6:,.0f} MB of JSON)" for rec in records)
    out = [f"## {first['title']}", "", f"Sizes: {sizes}.", "", f"![{name} time against rows]({chart})", ""]

    cores = os.cpu_count() or 1
    busy = [rec for rec in records if max(rec["load_average_at_start"][0], rec["load_average_at_end"][0]) > 1.5 * cores]
    if busy:
        out += [f"**Caution:** the machine ({cores} cores) was shared while {', '.join(_rows(r['rows']) for r in busy)} "
                f"ran (1-minute load average up to {max(max(r['load_average_at_start'][0], r['load_average_at_end'][0]) for r in busy):.0f}): "
                "those times are inflated by other work by an unknown and varying factor, so growth between sizes run "
                "under different load says little; ratios between storages within one size are less affected (each "
                "round runs every storage back to back) but still noisy.", ""]
    out += ["### Total of the queries (seconds, sum of per-query medians)", ""]
    rows = [[f"{_rows(rec['rows'])}"] + [run.seconds_text(median(rec, k)) for k in keys]
            + [f"{rec['load_average_at_start'][0]:.1f} / {rec['load_average_at_end'][0]:.1f}",
               rec.get("origin", "scaling run")] for rec in records]
    out += run.markdown_table([unit, *labels, "load avg (1 min) start / end", "measured by"], rows,
                              text_columns=(len(keys) + 2,))

    out += ["", "### Total time relative to (e) relational (lower is better)", ""]
    rows = [[_rows(rec["rows"])] + [run.ratio_text(run.ratio(median(rec, k), median(rec, harness.REFERENCE))) for k in keys]
            for rec in records]
    out += run.markdown_table([unit, *labels], rows)

    if len(records) > 1:
        lo, hi = records[0], records[-1]
        grow = hi["rows"] / lo["rows"]
        out += ["", f"### Growth from {_rows(lo['rows'])} to {_rows(hi['rows'])} {unit} ({grow:.1f}x the rows)", "",
                "Total time at the largest size over total time at the smallest (linear growth would be "
                f"{grow:.1f}x; less means a fixed per-query cost still weighs at the small size), and seconds per "
                "million rows at the largest size:", ""]
        rows = [[label(records, k), run.ratio_text(run.ratio(median(hi, k), median(lo, k))),
                 run.seconds_text(None if median(hi, k) is None else median(hi, k) / (hi["rows"] / 1e6))] for k in keys]
        out += run.markdown_table(["storage", "time growth", "seconds per million rows"], rows)

    out += ["", "### varlake per query: time against relational (e) and speed-up over Spark's shredding (c)", "",
            "Per size and query: varlake's median over relational's (target <= 1.2x), and Spark-shredded's median "
            "over varlake's (target >= 3x on events, > 1x on TPC-H nested).", ""]
    header = ["query", *(f"{_rows(rec['rows'])} vs (e)" for rec in records), *(f"{_rows(rec['rows'])} over (c)" for rec in records)]
    rows = [[q] + [run.ratio_text(run.ratio(median(rec, "varlake", q), median(rec, harness.REFERENCE, q))) for rec in records]
            + [run.ratio_text(run.ratio(median(rec, "spark_shredded", q), median(rec, "varlake", q))) for rec in records]
            for q in [*queries, None]]
    rows[-1][0] = "total"
    out += run.markdown_table(header, rows)

    out += ["", "### Per query (seconds, median of the timed runs) and varlake's read path", ""]
    rows = []
    for q in queries:
        for rec in records:
            rows.append([f"{q} {first['queries'][q]}" if rec is records[0] else q, _rows(rec["rows"])]
                        + [run.seconds_text(median(rec, k, q)) for k in keys] + [read_path(rec, q)])
    out += run.markdown_table(["query", unit, *labels, "(d) varlake read path"], rows, text_columns=(1, len(keys) + 2))

    out += ["", "### Loading (seconds)", ""]
    rows = [[_rows(rec["rows"])] + [run.seconds_text(rec["result"][k].get("load_seconds")) if k in rec["result"] else "–"
                                    for k in keys] for rec in records]
    out += run.markdown_table([unit, *labels], rows)

    bad = [m for rec in records for m in rec["result"]["mismatches"]]
    errors = [f"{_rows(rec['rows'])} {k}: {rec['result'][k]['error']}" for rec in records for k in keys
              if rec["result"].get(k, {}).get("error")]
    out += ["", "Answers: " + ("every run of every query on every storage returned relational's rows."
                               if not bad and not errors else "**some failed or differed:**")]
    out += [f"- {m}" for m in [*errors, *bad]]
    return out


_WARM_UP_TEXT = {"first": "the first size only", "every": "every size", "none": "no size (the first timed run includes "
                 "Spark's JIT warm-up)"}


def scaling_markdown(doc: dict[str, Any], charts: dict[str, str]) -> str:
    m, cfg = doc["machine"], doc["config"]
    done = {name: ", ".join(_rows(r["rows"]) for r in w["sizes"]) or "none" for name, w in doc["workloads"].items()}
    out = ["# varlake benchmark: time against rows", "",
           f"Generated by `make bench-scaling` (`bench/scaling.py`) on {doc['generated_at']}: sizes {cfg['sizes']} "
           f"(millions of events; TPC-H nested at the same benchmark scale), seed {cfg['seed']}, {cfg['runs']} timed "
           f"run(s) per query and size, warm-up round at {_WARM_UP_TEXT.get(cfg['warm_up'], '?')}, "
           f"Spark master `{cfg['master']}`, wall time {doc['wall_seconds'] / 60:.1f} min"
           + ("" if doc.get("finished") else " so far (the run was still going or was stopped; the sizes below are those "
              "it finished)") + ".", "",
           "Sizes in this report: " + "; ".join(f"{name} {n}" for name, n in done.items())
           + (" (a size measured by another run says so in its table)" if any(
               r.get("origin", "scaling run") != "scaling run" for w in doc["workloads"].values() for r in w["sizes"])
              else "") + ".", "",
           f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB RAM; the load average of each size is in its "
           "table (other work on the machine shows up there).", "",
           "Versions: " + ", ".join(f"{k} {v}" for k, v in doc["versions"].items()) + ".", "",
           "The storages, queries and answer checks are those of `bench/RESULTS.md` (`bench/run.py`), run at several "
           "sizes in one Spark session; each size's storages are loaded from the same JSON Lines and removed before "
           "the next size. A figure is the median of the timed runs; every run is in `scaling.json`.", ""]
    for name, w in doc["workloads"].items():
        if w["sizes"]:
            out += workload_markdown(name, w["sizes"], charts[name])
            out.append("")
    return "\n".join(out) + "\n"


def write_chart(name: str, records: list[dict[str, Any]], path: Path) -> None:
    """Log-log time against rows: a panel per query, the total, and the total relative to relational."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    keys = storages_of(records)
    queries = list(records[0]["result"]["queries"])
    panels = [*queries, "total", "relative"]
    cols = 4
    nrows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.6 * nrows), squeeze=False)
    xs = [rec["rows"] for rec in records]
    for ax, panel in zip(axes.flat, panels, strict=False):
        for k in keys:
            if panel == "relative":
                ys = [run.ratio(median(rec, k), median(rec, harness.REFERENCE)) for rec in records]
            else:
                ys = [median(rec, k, None if panel == "total" else panel) for rec in records]
            pts = [(x, y) for x, y in zip(xs, ys, strict=True) if y]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=label(records, k),
                        linewidth=2.2 if k == "varlake" else 1.2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(xs)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: _rows(int(x))))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda y, _: f"{y:g}" if f"{y:.1g}"[0] in "25" else ""))
        if panel == "relative":
            ax.set_title("total, relative to (e) relational", fontsize=10)
            ax.axhline(1.2, color="grey", linestyle=":", linewidth=1)
        else:
            title = "total of the queries" if panel == "total" else f"{panel} {records[0]['result']['queries'][panel]}"
            ax.set_title(title if len(title) < 48 else title[:45] + "...", fontsize=10)
            ax.set_ylabel("median seconds")
        ax.set_xlabel("rows (documents)")
        ax.grid(alpha=0.3, which="both")
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    handles, labels_ = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels_, loc="lower right", fontsize=9, ncol=1)
    fig.suptitle(f"{records[0]['result']['title']}: time against rows", fontsize=12)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_outputs(doc: dict[str, Any], out_dir: Path) -> None:
    charts = {}
    for name, w in doc["workloads"].items():
        charts[name] = f"scaling_{name}.png"
        if w["sizes"]:
            write_chart(name, w["sizes"], out_dir / charts[name])
    (out_dir / "scaling.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out_dir / "SCALING.md").write_text(scaling_markdown(doc, charts))


# --- main -----------------------------------------------------------------------------------------


def report_only(args: argparse.Namespace) -> int:
    """Rewrite the report from an earlier run's scaling.json, adding --add-results' points."""
    out_dir = Path(args.out)
    doc = json.loads((out_dir / "scaling.json").read_text())
    for extra in args.add_results:
        merge(doc, records_from_results(Path(extra), list(doc["workloads"])))
    write_outputs(doc, out_dir)
    print(f"rewrote {out_dir / 'SCALING.md'} and the charts from scaling.json"
          + "".join(f" and {extra}" for extra in args.add_results))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report_only:
        return report_only(args)
    # a stopped run (kill, timeout) still stops Spark and removes its scratch space; the sizes it
    # finished are already in SCALING.md
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.perf_counter()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    added: dict[str, list[dict[str, Any]]] = {}
    for extra in args.add_results:
        for name, recs in records_from_results(Path(extra), args.workload_list).items():
            added.setdefault(name, []).extend(recs)
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="varlake-scaling-"))
    cache = None if args.no_cache else Path(args.cache_dir)
    print(f"varlake scaling: sizes {args.size_list} M, workloads {args.workload_list}, {args.runs} runs, "
          f"scratch {workdir}", flush=True)
    spark = run.spark_session(args.master)
    doc: dict[str, Any] = {
        "generated_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": run.machine(),
        "versions": run.versions(spark),
        "config": {"sizes": args.size_list, "workloads": args.workload_list, "runs": args.runs, "warm_up": args.warm_up,
                   "storages": args.storage_list, "seed": args.seed, "master": args.master, "spark_conf": run.SPARK_CONF},
        "workloads": {name: {"sizes": []} for name in args.workload_list}, "wall_seconds": 0.0, "finished": False}
    failed: list[str] = []
    warmed = False
    try:
        for name in args.workload_list:
            workload = WORKLOADS[name](args.seed)
            for size in args.size_list:
                tag = f"[{name} {size:g}M]"
                t0 = time.perf_counter()
                load_start = [round(x, 2) for x in os.getloadavg()]
                source = harness.cached_source(workload, scale_of(size), args.seed, workdir / name / "source", cache,
                                               log=lambda line: print(line, flush=True))
                print(f"{tag} {source.rows:,} documents, {source.bytes / 1e6:,.0f} MB "
                      f"({'cached' if source.details.get('cache') == 'hit' else f'generated in {source.seconds:.0f} s'})",
                      flush=True)
                warm = args.warm_up == "every" or (args.warm_up == "first" and not warmed)
                wl = harness.run_workload(spark, workload, source, workdir / name / "storages", runs=args.runs,
                                          include=args.storage_list, warm_up=warm,
                                          log=lambda line, tag=tag: print(f"{tag} {line}", flush=True))
                warmed = True
                shutil.rmtree(workdir / name, ignore_errors=True)
                rec = size_record(size, wl, time.perf_counter() - t0, (load_start, [round(x, 2) for x in os.getloadavg()]),
                                  warm)
                doc["workloads"][name]["sizes"].append(rec)
                merge(doc, {k: v for k, v in added.items() if k == name})
                failed += [f"{name} {size:g}M: {m}" for m in wl.mismatches]
                failed += [f"{name} {size:g}M {k}: {st.error}" for k, st in wl.storages.items() if st.error]
                doc["wall_seconds"] = round(time.perf_counter() - started, 1)
                write_outputs(doc, out_dir)
                print(f"{tag} done in {rec['wall_seconds']:.0f} s: total "
                      + ", ".join(f"{k} {run.seconds_text(median(rec, k))}" for k in storages_of([rec])), flush=True)
    finally:
        spark.stop()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    doc["wall_seconds"] = round(time.perf_counter() - started, 1)
    doc["finished"] = True
    write_outputs(doc, out_dir)
    print(f"wrote {out_dir / 'SCALING.md'}, scaling.json and the charts in {doc['wall_seconds'] / 60:.1f} min")
    for line in failed:
        print(f"FAILED: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
