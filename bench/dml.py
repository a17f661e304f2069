"""Row-level changes, Python path: DELETE with deletion vectors against copy-on-write, a MERGE
of upserts, and the cost of reading a table through its deletion vectors.

One events table (``id``, ``uid`` = id % 1000, a Variant ``v`` of ``{user: {id}, kind, n}``)
is written in ``--files`` appends twice: with ``delta.enableDeletionVectors=true`` ("dv") and
without ("cow"). Every measured change runs on a fresh copy of its base table (copying is
not timed), DV and CoW interleaved, ``--reps`` times; the figures are medians:

- **DELETE** ``uid = 7``: 0.1% of the rows, spread over every file (``Table.delete``):
  seconds and bytes written (new data files + deletion-vector files);
- **MERGE** of ``--merge-rows`` upserts (``Table.merge``, ``t.id = s.id``): half update
  existing ids spread over every file (``when_matched_update_all``), half insert new ids
  (``when_not_matched_insert_all``): seconds, files and bytes written;
- **scan**: the whole DV table after the DELETE against a table of the same rows in the same
  number of files without deletion vectors (``Table.scan().to_arrow()``, and with
  ``--spark`` also through Spark: ``SELECT count(*)`` by ``varlake.spark.sql`` (answered
  from the log), ``varlake.spark.read(...).count()`` (a DataFrame count: every row's
  deletion test runs), ``SELECT sum(id)``, ``sum(id)`` with a Variant path, and a full
  ``collect`` of ``id``).

Ratios are taken within the run; the scan target is checked on CPU seconds (wall seconds
are reported too). The machine's load average is recorded with the figures.

    .venv/bin/python bench/dml.py                       # 5M events, 50 files
    .venv/bin/python bench/dml.py --rows 1000000 --files 10 --reps 3 --out /tmp/dml.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake import Table
from varlake.variant import Variant

TARGETS = {"dv_bytes_over_cow": 0.01, "dv_seconds_over_cow": 0.25, "scan_with_dvs_over_without": 1.2}
_TEMPLATES = 1000


def _events(start: int, n: int) -> pa.Table:
    """Rows ``start .. start+n-1``: ``uid = id % 1000``, ``v`` one of 1000 Variant documents."""
    ids = np.arange(start, start + n, dtype=np.int64)
    uid = (ids % _TEMPLATES).astype(np.int32)
    templates = [
        Variant.from_python({"user": {"id": k}, "kind": "click" if k % 2 else "view", "n": k}) for k in range(_TEMPLATES)
    ]
    metas = pa.array([t.metadata for t in templates], pa.binary())
    values = pa.array([t.value for t in templates], pa.binary())
    idx = pa.array(uid)
    v = pa.StructArray.from_arrays([metas.take(idx), values.take(idx)], names=["metadata", "value"])
    return pa.table({"id": pa.array(ids), "uid": pa.array(uid), "v": v})


def _table(root: Path, dv: bool, rows: int, files: int, without_uid: int | None = None) -> Table:
    t = Table.create(root, "id bigint, uid int, v variant", properties={"delta.enableDeletionVectors": str(dv).lower()})
    per = rows // files
    for f in range(files):
        batch = _events(f * per, per)
        if without_uid is not None:
            batch = batch.filter(pc.not_equal(batch.column("uid"), without_uid))
        t.append(batch)
    return t


def _upserts(rows: int, n: int) -> pa.Table:
    """``n`` source rows: ``n // 2`` existing ids spread evenly over the table (new ``uid``
    and ``v``), the rest new ids after the last one."""
    half = n // 2
    old_ids = np.linspace(0, rows - 1, half, dtype=np.int64)
    old = _events(0, half)
    old = old.set_column(0, "id", pa.array(old_ids))
    old = old.set_column(1, "uid", pc.add(old.column("uid"), pa.scalar(1, pa.int32())))
    return pa.concat_tables([old, _events(rows, n - half)])


def _timed(run: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def _copy(base: Path, work: Path, name: str) -> Path:
    target = work / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(base, target)
    return target


def _change_figures(seconds: list[float], results: list[Any]) -> dict[str, Any]:
    r = results[-1]
    return {
        "seconds": round(statistics.median(seconds), 3),
        "seconds_all": [round(s, 3) for s in seconds],
        "bytes_written": r.bytes_added,
        "files_added": r.num_files_added,
        "files_removed": r.num_files_removed,
        "deletion_vectors": r.num_deletion_vectors_added,
        "rows_deleted": r.num_deleted_rows,
        "rows_updated": r.num_updated_rows,
        "rows_inserted": r.num_inserted_rows,
        "rows_copied": r.num_copied_rows,
    }


def _delete(bases: dict[str, Path], work: Path, reps: int) -> tuple[dict[str, Any], Path]:
    seconds: dict[str, list[float]] = {"dv": [], "cow": []}
    results: dict[str, list[Any]] = {"dv": [], "cow": []}
    kept = work / "dv-deleted"
    for _ in range(reps):
        for name in ("dv", "cow"):
            root = _copy(bases[name], work, f"{name}-delete")
            s, r = _timed(lambda: Table(root).delete("uid = 7"))
            seconds[name].append(s)
            results[name].append(r)
            if name == "dv":
                shutil.rmtree(kept, ignore_errors=True)
                root.rename(kept)
    return {name: _change_figures(seconds[name], results[name]) for name in seconds}, kept


def _merge(bases: dict[str, Path], work: Path, reps: int, source: pa.Table) -> dict[str, Any]:
    seconds: dict[str, list[float]] = {"dv": [], "cow": []}
    results: dict[str, list[Any]] = {"dv": [], "cow": []}
    for _ in range(reps):
        for name in ("dv", "cow"):
            root = _copy(bases[name], work, f"{name}-merge")
            s, r = _timed(
                lambda: Table(root).merge(source, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
            )
            seconds[name].append(s)
            results[name].append(r)
            shutil.rmtree(root, ignore_errors=True)
    return {name: _change_figures(seconds[name], results[name]) for name in seconds}


def _scans(tables: dict[str, Path], reps: int, spark: Any = None) -> dict[str, Any]:
    """Median wall and CPU seconds (this process's, every thread) of full scans of each
    table, interleaved; CPU time is the steadier figure on a shared machine (Spark's work
    runs in its JVM, so only wall time is given for it)."""
    runs: dict[str, Callable[[Path], Any]] = {"python_scan": lambda p: Table(p).scan().to_arrow()}
    if spark is not None:
        from varlake.spark import read
        from varlake.spark.reading import sql

        runs["spark_sql_count"] = lambda p: sql(spark, "SELECT count(*) FROM {t}", t=str(p)).collect()
        runs["spark_count"] = lambda p: read(spark, str(p)).count()
        runs["spark_sum_id"] = lambda p: sql(spark, "SELECT sum(id) FROM {t}", t=str(p)).collect()
        runs["spark_sum_id_v"] = lambda p: sql(spark, "SELECT sum(id), count(v:kind::string) FROM {t}", t=str(p)).collect()
        runs["spark_collect_id"] = lambda p: read(spark, str(p), columns=["id"]).collect()
    out: dict[str, Any] = {}
    for what, run in runs.items():
        for path in tables.values():
            run(path)  # warm: imports, JIT, page cache
        wall: dict[str, list[float]] = {name: [] for name in tables}
        cpu: dict[str, list[float]] = {name: [] for name in tables}
        for _ in range(reps):
            for name, path in tables.items():
                start_cpu = time.process_time()
                wall[name].append(_timed(lambda: run(path))[0])
                cpu[name].append(time.process_time() - start_cpu)
        figures: dict[str, Any] = {name: round(statistics.median(t), 4) for name, t in wall.items()}
        figures["ratio"] = round(figures["dv"] / figures["plain"], 3)
        if what == "python_scan":
            figures["cpu"] = {name: round(statistics.median(t), 4) for name, t in cpu.items()}
            figures["cpu_ratio"] = round(figures["cpu"]["dv"] / figures["cpu"]["plain"], 3)
        out[what] = figures
    return out


def _warm(work: Path) -> None:
    """One small DELETE and MERGE first, so one-off imports (the SQL parser's dialects) are
    charged to neither side."""
    t = _table(work / "warm", True, 2000, 2)
    t.delete("uid = 7")
    t.merge(_upserts(2000, 20), "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    shutil.rmtree(work / "warm", ignore_errors=True)


def _print(out: dict[str, Any]) -> None:
    d, m, s = out["delete"], out["merge"], out["scan"]
    print(f"rows {out['rows']:,}  files {out['files']}  reps {out['reps']}  load {out['load_average']}")
    print(f"{'':28}{'DV':>14}{'CoW':>14}{'DV/CoW':>10}")

    def row(label: str, dv: Any, cow: Any, ratio: Any = "") -> None:
        print(f"{label:28}{dv:>14}{cow:>14}{ratio:>10}")

    def files(side: dict[str, Any]) -> str:
        return f"{side['files_added']}/{side['files_removed']}, {side['deletion_vectors']}"

    row("DELETE 0.1% seconds", d["dv"]["seconds"], d["cow"]["seconds"], out["ratios"]["dv_seconds_over_cow"])
    row("DELETE bytes written", f"{d['dv']['bytes_written']:,}", f"{d['cow']['bytes_written']:,}", out["ratios"]["dv_bytes_over_cow"])
    row("MERGE seconds", m["dv"]["seconds"], m["cow"]["seconds"], round(m["dv"]["seconds"] / m["cow"]["seconds"], 3))
    row("MERGE bytes written", f"{m['dv']['bytes_written']:,}", f"{m['cow']['bytes_written']:,}")
    row("MERGE files +/-, DVs", files(m["dv"]), files(m["cow"]))
    print(f"{'scan seconds':28}{'with DVs':>14}{'without':>14}{'ratio':>10}")
    for what, figures in s.items():
        print(f"{what + ' (wall)':28}{figures['dv']:>14}{figures['plain']:>14}{figures['ratio']:>10}")
        if "cpu" in figures:
            cpu = figures["cpu"]
            print(f"{what + ' (CPU)':28}{cpu['dv']:>14}{cpu['plain']:>14}{figures['cpu_ratio']:>10}")
    print("targets", json.dumps(out["targets_met"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--reps", type=int, default=5, help="repetitions of each DELETE and scan (medians)")
    parser.add_argument("--merge-rows", type=int, default=100_000)
    parser.add_argument("--merge-reps", type=int, default=1)
    parser.add_argument("--scan-reps", type=int, default=None, help="repetitions of each scan (default: --reps)")
    parser.add_argument("--spark", action="store_true", help="also time scans through varlake.spark (read and sql)")
    parser.add_argument("--out", default="bench/dml_results.json", help="JSON file for the figures ('' for none)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="varlake-dml-"))
    try:
        _warm(work)
        bases = {
            name: Path(_table(work / f"{name}-base", dv, args.rows, args.files).path)
            for name, dv in (("dv", True), ("cow", False))
        }
        plain = Path(_table(work / "plain", False, args.rows, args.files, without_uid=7).path)
        delete, deleted = _delete(bases, work, args.reps)
        merge = _merge(bases, work, args.merge_reps, _upserts(args.rows, args.merge_rows))
        spark = None
        if args.spark:
            import sys

            sys.path.insert(0, str(Path(__file__).parent))
            from common import bench_session

            spark = bench_session()
        scan = _scans({"dv": deleted, "plain": plain}, args.scan_reps or args.reps, spark)
        ratios = {
            "dv_bytes_over_cow": round(delete["dv"]["bytes_written"] / max(delete["cow"]["bytes_written"], 1), 5),
            "dv_seconds_over_cow": round(delete["dv"]["seconds"] / delete["cow"]["seconds"], 3),
            "scan_with_dvs_over_without": scan["python_scan"]["cpu_ratio"],
            "scan_with_dvs_over_without_wall": scan["python_scan"]["ratio"],
        }
        out = {
            "rows": args.rows,
            "files": args.files,
            "reps": args.reps,
            "scan_reps": args.scan_reps or args.reps,
            "merge_rows": args.merge_rows,
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "cpus": os.cpu_count(),
            "delete": delete,
            "merge": merge,
            "scan": scan,
            "ratios": ratios,
            "targets": TARGETS,
            "targets_met": {k: ratios[k] <= TARGETS[k] for k in TARGETS},
        }
        _print(out)
        if args.out:
            Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
