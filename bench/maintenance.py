"""Table maintenance, Python path: OPTIMIZE of a table fed as many small files, with and without
clustering by a Variant path.

An events table (``id bigint``, Variant ``v`` = ``{did, time_us, kind, commit: {collection,
operation, rkey}}``; ``--collections`` distinct collections, drawn uniformly, ``time_us``
rising with arrival) arrives as ``--files`` appends (small files, the shape of a day of ingest).
Three copies of it are measured:

- **before**: as it arrived;
- **bin-packed**: ``Table.optimize()`` (target ``--target-mb``, default the Python path's 32 MiB);
- **clustered**: ``Table.optimize(cluster_by=[<key>], target_file_size=data bytes / --clustered-files)``.

For each: the query ``v:commit.collection::string = '<one collection>'`` (selective: about
1/collections of the rows) -- wall seconds (median of ``--reps``), files read and the share of
files skipped by statistics -- and a full scan. For each OPTIMIZE: seconds and rows per second
(read, order, write through the one write path, read back and content-checked, commit).
Targets: clustered skips >= 90% of files for the selective predicate, bin-packed <= 10%.

    .venv/bin/python bench/maintenance.py                                  # 2M events, 500 files
    .venv/bin/python bench/maintenance.py --rows 20000 --files 20 --out /tmp/m.json

``--spark`` measures ``varlake.spark.optimize`` (local[2]) instead of ``Table.optimize``: the same
three copies, bin-packed (``--target-mb``, default Spark's 128 MiB) and clustered, with rows per
second and the seconds of the executors' content check (``spark.content_digest.check_rewrite``)
inside them; skipping is read from the same per-path statistics afterwards.

    .venv/bin/python bench/maintenance.py --spark --rows 500000 --files 100 --out bench/maintenance_spark.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from varlake import Table
from varlake.write.maintenance.optimize import plan_optimize
from varlake.variant import Variant

TARGETS = {"clustered_skip_share_min": 0.90, "unclustered_skip_share_max": 0.10}
KEY = "v:commit.collection::string"
_PROPS = {"delta.enableVariantShredding": "true"}
_OPERATIONS = ("create", "update", "delete")


def collection(k: int) -> str:
    return f"app.bsky.c{k:04d}.record"


def _events(start: int, n: int, collections: int, rng: np.random.Generator) -> pa.Table:
    """Rows ``start .. start+n-1`` with ``time_us`` rising and a random collection each."""
    ids = np.arange(start, start + n, dtype=np.int64)
    picks = rng.integers(0, collections, n)
    metas, values = [], []
    for i, c in zip(ids.tolist(), picks.tolist()):
        v = Variant.from_python(
            {
                "did": f"did:plc:{i % 50_000:08d}",
                "time_us": 1_700_000_000_000_000 + i * 1000,
                "kind": "commit",
                "commit": {"collection": collection(c), "operation": _OPERATIONS[i % 3], "rkey": f"r{i:x}"},
            }
        )
        metas.append(v.metadata)
        values.append(v.value)
    v = pa.StructArray.from_arrays([pa.array(metas, pa.binary()), pa.array(values, pa.binary())], names=["metadata", "value"])
    return pa.table({"id": pa.array(ids), "v": v})


def build(root: Path, rows: int, files: int, collections: int, seed: int = 7) -> Table:
    """The table as it arrives: ``files`` appends of ``rows / files`` events."""
    table = Table.create(root, "id bigint, v variant", properties=_PROPS)
    rng = np.random.default_rng(seed)
    per = rows // files
    for k in range(files):
        n = per if k < files - 1 else rows - per * (files - 1)
        table.append(_events(k * per, n, collections, rng))
    return table


def _copy(base: Path, target: Path) -> Table:
    shutil.copytree(base, target)
    return Table(target)


def _query(table: Table, predicate: str, reps: int) -> dict[str, Any]:
    plan = table.scan(predicate).plan()
    seconds, rows = [], 0
    for _ in range(reps):
        start = time.perf_counter()
        rows = table.scan(predicate).to_arrow().num_rows
        seconds.append(time.perf_counter() - start)
    total = plan.total_files
    return {
        "seconds": statistics.median(seconds),
        "rows": rows,
        "files": total,
        "files_read": len(plan.tasks),
        "skipped_share": (total - len(plan.tasks)) / total if total else 0.0,
    }


def _full_scan(table: Table, reps: int) -> dict[str, Any]:
    seconds = []
    rows = 0
    for _ in range(reps):
        start = time.perf_counter()
        rows = table.scan(columns=["id"]).to_arrow().num_rows
        seconds.append(time.perf_counter() - start)
    return {"seconds": statistics.median(seconds), "rows": rows}


def _figures(table: Table, predicate: str, reps: int) -> dict[str, Any]:
    files = table.files()
    return {
        "files": len(files),
        "bytes": sum(f.size for f in files),
        "selective_query": _query(table, predicate, reps),
        "full_scan": _full_scan(table, reps),
    }


def _optimized(result: Any) -> dict[str, Any]:
    return {
        "seconds": result.seconds,
        "rows": result.num_rows,
        "rows_per_second": result.rows_per_second,
        "files_removed": result.num_files_removed,
        "files_added": result.num_files_added,
        "bytes_removed": result.bytes_removed,
        "bytes_added": result.bytes_added,
    }


def _spark_engine(spark: Any) -> tuple[Any, dict[str, float]]:
    """``optimize(table, **kw)`` through ``varlake.spark.optimize``, timing its content check."""
    import importlib

    spark_optimize = importlib.import_module("varlake.spark.optimize")  # the package's ``optimize`` is the function

    timed = {"content_check_seconds": 0.0}
    check = spark_optimize.check_rewrite

    def timed_check(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return check(*args, **kwargs)
        finally:
            timed["content_check_seconds"] += time.perf_counter() - start

    spark_optimize.check_rewrite = timed_check

    def optimize(table: Table, **kwargs: Any) -> Any:
        timed["content_check_seconds"] = 0.0
        return spark_optimize.optimize(spark, table, **kwargs)

    return optimize, timed


def run(
    rows: int, files: int, collections: int, reps: int, target_mb: float | None, clustered_files: int, work: Path, spark: Any = None
) -> dict[str, Any]:
    started = time.perf_counter()
    base = build(work / "base", rows, files, collections)
    build_seconds = time.perf_counter() - started
    predicate = f"{KEY} = '{collection(collections // 2)}'"
    out: dict[str, Any] = {
        "rows": rows,
        "files_arriving": files,
        "collections": collections,
        "reps": reps,
        "predicate": predicate,
        "build_seconds": build_seconds,
        "load_average": os.getloadavg(),
        "engine": "spark" if spark is not None else "python",
    }
    if spark is not None:
        engine, timed = _spark_engine(spark)
    else:
        engine, timed = (lambda table, **kw: table.optimize(**kw)), {}
    out["before"] = _figures(base, predicate, reps)
    total = out["before"]["bytes"]

    packed = _copy(work / "base", work / "packed")
    target = int(target_mb * 1024 * 1024) if target_mb else None
    out["bin_packed_optimize"] = {**_optimized(engine(packed, target_file_size=target)), **timed}
    out["bin_packed"] = _figures(packed, predicate, reps)

    clustered = _copy(work / "base", work / "clustered")
    data_bytes = plan_optimize(clustered, target_file_size="1gb").estimated_output_bytes  # without footers
    cluster_target = max(data_bytes // clustered_files, 1024)
    result = engine(clustered, cluster_by=[KEY], target_file_size=cluster_target)
    out["clustered_optimize"] = {**_optimized(result), **timed, "target_file_size": cluster_target, "cluster_by": [KEY]}
    out["clustered"] = _figures(clustered, predicate, reps)

    again = engine(clustered)  # the keys are remembered; nothing left to do
    out["clustered_second_optimize_version"] = again.version
    out["targets"] = TARGETS
    out["clustered_skip_ok"] = out["clustered"]["selective_query"]["skipped_share"] >= TARGETS["clustered_skip_share_min"]
    out["unclustered_skip_ok"] = out["bin_packed"]["selective_query"]["skipped_share"] <= TARGETS["unclustered_skip_share_max"]
    return out


def _print(out: dict[str, Any]) -> None:
    print(f"engine {out['engine']}  rows {out['rows']:,}  arriving as {out['files_arriving']} files  collections {out['collections']}  "
          f"build {out['build_seconds']:.1f}s  load {out['load_average']}")
    print(f"predicate: {out['predicate']}")
    for name in ("before", "bin_packed", "clustered"):
        f = out[name]
        q = f["selective_query"]
        print(
            f"{name:>11}: {f['files']:4d} files {f['bytes'] / 1e6:8.1f} MB | selective query {q['seconds'] * 1000:8.1f} ms, "
            f"read {q['files_read']}/{q['files']} files (skipped {q['skipped_share']:.1%}), {q['rows']} rows | "
            f"full scan {f['full_scan']['seconds'] * 1000:8.1f} ms"
        )
    for name in ("bin_packed_optimize", "clustered_optimize"):
        o = out[name]
        check = f", content check {o['content_check_seconds']:.1f}s" if "content_check_seconds" in o else ""
        print(f"{name:>20}: {o['seconds']:.1f}s, {o['rows_per_second']:,.0f} rows/s, {o['files_removed']} -> {o['files_added']} files{check}")
    print(f"clustered skip >= 90%: {out['clustered_skip_ok']}   bin-packed skip <= 10%: {out['unclustered_skip_ok']}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--collections", type=int, default=500)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--target-mb", type=float, default=None, help="bin-packing target (default: the Python path's)")
    parser.add_argument("--clustered-files", type=int, default=64, help="clustered target size = data bytes / this")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--spark", action="store_true", help="OPTIMIZE through varlake.spark.optimize (local[2])")
    args = parser.parse_args(argv)
    spark = None
    if args.spark:
        import sys

        sys.path.insert(0, str(Path(__file__).parent))
        from common import bench_session

        spark = bench_session()
    work = args.work or Path(tempfile.mkdtemp(prefix="varlake-maintenance-"))
    try:
        out = run(args.rows, args.files, args.collections, args.reps, args.target_mb, args.clustered_files, work, spark)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    _print(out)
    if args.out:
        args.out.write_text(json.dumps(out, indent=2, default=str))
    return out


if __name__ == "__main__":
    main()
