"""Planning time on a local table of many files: varlake ``scan().where(...).plan()`` against
delta-rs ``file_uris(file_pruning_predicate=...)`` on the same log.

    .venv/bin/python bench/plan_many_files.py [--files 10000] [--runs 30] [--dir DIR]
        [--cold 9] [--checkpoint]

The table is a log alone (planning reads no data file): one commit of ``--files`` ``add``
actions in 10 partitions (``part`` = ``p0``..``p9``), 10 rows a file, ``id`` growing with the
file, as ``bench/objectstore.py``'s shared table has them. Reported: median plan time of each
library (warm: the table loaded once, the predicate's literals varied per run) and the ratio.

Cold (``--cold N`` runs of each, alternating): a fresh process opens the table and plans
one filter -- varlake ``Table(path).scan().where(p).plan()``, delta-rs ``DeltaTable(path)``
then ``file_uris(file_pruning_predicate=p)`` -- timed inside the process from the open to
the file list (imports not counted). ``--checkpoint``: the table also gets a checkpoint of
its one commit (written by varlake), so the load reads Parquet instead of JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from varlake.table import Table  # noqa: E402

PARTS = 10
ROWS = 10
SCHEMA = {"type": "struct", "fields": [
    {"name": n, "type": t, "nullable": True, "metadata": {}}
    for n, t in (("id", "long"), ("part", "string"), ("x", "long"), ("s", "string"))]}  # fmt: skip


def build(folder: Path, files: int) -> None:
    log = folder / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    lines = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "00000000-0000-0000-0000-000000000001", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(SCHEMA), "partitionColumns": ["part"], "configuration": {},
                      "createdTime": 0}},
    ]  # fmt: skip
    for i in range(files):
        lo = (i // PARTS) * PARTS * ROWS + (i % PARTS) * ROWS
        stats = {"numRecords": ROWS, "minValues": {"id": lo, "x": 0, "s": "s0"},
                 "maxValues": {"id": lo + ROWS - 1, "x": 99999, "s": "s9"}, "nullCount": {"id": 0, "x": 0, "s": 0}}
        lines.append({"add": {"path": f"part=p{i % PARTS}/f{i:06d}.parquet", "partitionValues": {"part": f"p{i % PARTS}"},
                              "size": 1000, "modificationTime": 0, "dataChange": True, "stats": json.dumps(stats)}})  # fmt: skip
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in lines) + "\n")


COLD = """
import sys, time
folder, pred, lib = sys.argv[1:4]
if lib == "varlake":
    from varlake.table import Table
    started, cpu = time.perf_counter(), time.process_time()
    n = len(Table(folder).scan().where(pred).plan().tasks)
else:
    from deltalake import DeltaTable
    started, cpu = time.perf_counter(), time.process_time()
    n = len(DeltaTable(folder).file_uris(file_pruning_predicate=pred))
print((time.perf_counter() - started) * 1e3, (time.process_time() - cpu) * 1e3, n)
"""


def cold(folder: Path, pred: str, runs: int, src: str | None = None) -> dict[str, dict[str, float]]:
    """A fresh process's open + first plan, per library (alternating runs): median and best
    wall-clock ms, median CPU ms (all threads); ``src``: the varlake sources to import
    (default: this checkout's)."""
    src = src or str(Path(__file__).resolve().parents[1] / "src")
    env = {**__import__("os").environ, "PYTHONPATH": src}
    times: dict[str, list[float]] = {"varlake": [], "delta-rs": []}
    cpu: dict[str, list[float]] = {name: [] for name in times}
    files: dict[str, set[str]] = {name: set() for name in times}
    for r in range(runs):
        for lib in ("varlake", "delta-rs") if r % 2 == 0 else ("delta-rs", "varlake"):
            out = subprocess.run([sys.executable, "-c", COLD, str(folder), pred, lib], capture_output=True, text=True,
                                 env=env, check=True).stdout.split()  # fmt: skip
            times[lib].append(float(out[0]))
            cpu[lib].append(float(out[1]))
            files[lib].add(out[2])
    if files["varlake"] != files["delta-rs"]:
        raise SystemExit(f"{pred}: files planned differ {files}")
    return {
        lib: {"median": statistics.median(ts), "best": min(ts), "cpu": statistics.median(cpu[lib])}
        for lib, ts in times.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--cold", type=int, default=0, help="cold runs of each library (fresh processes)")
    parser.add_argument("--checkpoint", action="store_true", help="give the table a checkpoint")
    parser.add_argument("--src", default=None, help="varlake sources the cold runs import (to compare commits)")
    args = parser.parse_args()
    name = f"t{args.files}" + ("-checkpoint" if args.checkpoint else "")
    folder = Path(args.dir or tempfile.mkdtemp(prefix="planbench-")) / name
    if not (folder / "_delta_log").exists():
        build(folder, args.files)
        if args.checkpoint:
            Table(str(folder)).log.checkpoint()
    if args.cold:
        pred = f"part = 'p3' AND id >= {args.files * ROWS // 2} AND id < {args.files * ROWS // 2 + 20 * PARTS * ROWS}"
        got = cold(folder, pred, args.cold, args.src)
        v, d = got["varlake"], got["delta-rs"]
        print(f"cold open + first plan, {args.files} files{' (checkpoint)' if args.checkpoint else ''}, {args.cold} runs "
              f"each: median varlake {v['median']:.1f} ms, delta-rs {d['median']:.1f} ms, ratio "
              f"{v['median'] / d['median']:.2f}; best {v['best']:.1f} / {d['best']:.1f} ms, ratio "
              f"{v['best'] / d['best']:.2f}; CPU {v['cpu']:.1f} / {d['cpu']:.1f} ms, ratio {v['cpu'] / d['cpu']:.2f}")  # fmt: skip
    rng = random.Random(7)
    max_id = args.files * ROWS
    span = 20 * PARTS * ROWS

    def predicate() -> str:
        lo = rng.randrange(0, max_id - span)
        return f"part = 'p{rng.randrange(PARTS)}' AND id >= {lo} AND id < {lo + span}"

    table = Table(str(folder))
    started = time.perf_counter()
    first = len(table.scan().where(predicate()).plan().tasks)
    print(f"first plan (decodes the snapshot's files): {(time.perf_counter() - started) * 1e3:.1f} ms, {first} files")
    peers = {"varlake": lambda p: len(table.scan().where(p).plan().tasks)}
    try:
        from deltalake import DeltaTable

        dt = DeltaTable(str(folder))
        peers["delta-rs"] = lambda p: len(dt.file_uris(file_pruning_predicate=p))
    except ImportError:
        pass
    times: dict[str, list[float]] = {name: [] for name in peers}
    for r in range(args.runs):
        pred = predicate()
        answers = {}
        for name, plan in peers.items() if r % 2 == 0 else reversed(list(peers.items())):
            started = time.perf_counter()
            answers[name] = plan(pred)
            times[name].append(time.perf_counter() - started)
        if len(set(answers.values())) != 1:
            raise SystemExit(f"{pred}: files planned differ {answers}")
    med = {name: statistics.median(ts) * 1e3 for name, ts in times.items()}
    print(f"{args.files} files, {args.runs} runs: " + ", ".join(f"{n} {m:.1f} ms" for n, m in med.items()))
    if "delta-rs" in med:
        print(f"ratio varlake / delta-rs: {med['varlake'] / med['delta-rs']:.2f}")


if __name__ == "__main__":
    main()
