"""Benchmark: snapshot load time of a big Delta log vs a small one.

Builds, in a temporary directory, a table with 10,000 data commits of 10 files each
(100,000 live files, checkpoint at version 9,990 as ``delta.checkpointInterval=10``
would leave it) and a table with 10 commits, then times ``DeltaLog(...).snapshot()``
on a fresh log object (no cache) for each. Commits are written in bulk through
``DeltaLog.write_commit`` + ``serialize_commit`` -- the same bytes a normal commit
writes, without the per-commit conflict machinery.

    .venv/bin/python bench/table_log.py [--commits 10000] [--files-per-commit 10]

Target: the large snapshot loads in < 3 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from varlake.delta import AddFile, DeltaLog
from varlake.delta.transaction import serialize_commit
from varlake.io import LocalStorage

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])


def _add(version: int, i: int) -> AddFile:
    n = version * 1000 + i
    stats = {
        "numRecords": 1000,
        "minValues": {"id": n * 1000, "name": f"name-{n:08d}-a", "ts": "2024-01-01T00:00:00.000Z"},
        "maxValues": {"id": n * 1000 + 999, "name": f"name-{n:08d}-z", "ts": "2024-01-02T00:00:00.000Z"},
        "nullCount": {"id": 0, "name": 3, "ts": 0},
    }
    return AddFile(
        path=f"part-{version:06d}-{i:03d}-c000.snappy.parquet",
        size=1_048_576 + n,
        partition_values={},
        modification_time=1_700_000_000_000 + version,
        data_change=True,
        stats=json.dumps(stats, separators=(",", ":")),
    )


def _write_commits(log: DeltaLog, versions: range, files_per_commit: int) -> None:
    for v in versions:
        info = {"timestamp": 1_700_000_000_000 + v, "operation": "WRITE", "operationParameters": {"mode": "Append"}}
        if not log.write_commit(v, serialize_commit(info, [_add(v, i) for i in range(files_per_commit)])):
            raise RuntimeError(f"commit {v} already exists")


def build(root: Path, commits: int, files_per_commit: int, checkpoint_every: int = 10) -> float:
    """Create the table; return the time of a full JSON replay (before the checkpoint exists)."""
    storage = LocalStorage()
    log = DeltaLog(storage, str(root))
    log.create(SCHEMA, properties={"delta.checkpointInterval": str(checkpoint_every)})
    last_checkpoint = (commits // checkpoint_every) * checkpoint_every
    _write_commits(log, range(1, last_checkpoint + 1), files_per_commit)
    replay_seconds = 0.0
    if last_checkpoint > 0:
        start = time.perf_counter()
        snap = DeltaLog(storage, str(root)).snapshot(last_checkpoint)
        replay_seconds = time.perf_counter() - start
        log.write_checkpoint(snap)
    _write_commits(log, range(last_checkpoint + 1, commits + 1), files_per_commit)
    return replay_seconds


def time_load(root: Path, repeats: int) -> tuple[float, int, int, float]:
    """Median snapshot load time, version, file count, and the time to build ``files``."""
    times = []
    for _ in range(repeats):
        log = DeltaLog(LocalStorage(), str(root))
        start = time.perf_counter()
        snap = log.snapshot()
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    files = snap.files
    objects = time.perf_counter() - start
    assert len(files) == snap.num_files
    return statistics.median(times), snap.version, snap.num_files, objects


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--files-per-commit", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="varlake-bench-") as tmp:
        big, small = Path(tmp) / "big", Path(tmp) / "small"
        t0 = time.perf_counter()
        replay_s = build(big, args.commits, args.files_per_commit)
        build(small, 10, args.files_per_commit)
        print(f"built tables in {time.perf_counter() - t0:.1f} s")
        big_s, big_v, big_n, big_obj = time_load(big, args.repeats)
        small_s, small_v, small_n, _ = time_load(small, args.repeats)
    print(f"large table: version {big_v}, {big_n:,} files: snapshot load {big_s:.3f} s (median of {args.repeats})")
    print(f"             + AddFile objects for all files: {big_obj:.3f} s")
    print(f"             full JSON replay without checkpoint ({(args.commits // 10) * 10:,} commits): {replay_s:.3f} s")
    print(f"small table: version {small_v}, {small_n:,} files: snapshot load {small_s * 1000:.1f} ms")
    print(f"ratio large/small: {big_s / small_s:.1f}x   target large < 3 s: {'met' if big_s < 3 else 'MISSED'}")


if __name__ == "__main__":
    main()
