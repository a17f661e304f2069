"""Benchmark: the table layer's two hot paths, in one run.

1. Snapshot load: a table with 10,000 commits and 100,000 files (checkpoints every 10
   commits, as ``delta.checkpointInterval`` leaves them) against a table with 10 commits.
2. Skipping for a Variant path predicate: (a) evaluation alone over decoded ``FileStats``
   (bench/skipping.py's synthetic files), (b) end to end as ``plan_scan`` runs it on the
   large table: decode each ``add``'s stats JSON (Z85 Variant bounds included) and evaluate.

    .venv/bin/python bench/table.py [--commits 10000] [--files-per-commit 10]

Targets: large snapshot < 3 s; skipping >= 200,000 files/s.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import skipping as skip_bench  # noqa: E402

from varlake.delta import AddFile, DeltaLog  # noqa: E402
from varlake.delta.ddl import parse_ddl  # noqa: E402
from varlake.delta.transaction import serialize_commit  # noqa: E402
from varlake.io import LocalStorage  # noqa: E402
from varlake.read import plan_scan  # noqa: E402
from varlake.variant import Variant, encode_variant_stat  # noqa: E402

SCHEMA = parse_ddl("id bigint, v variant")
PREDICATE = "v:a::bigint BETWEEN 10 AND 20 AND v:b::string = 'x'"


def _add(version: int, i: int, rng: random.Random) -> AddFile:
    lo = rng.randrange(0, 1000)
    first = rng.choice("abcdefghijklmnopqrstuvwxyz")
    vmin = Variant.from_python({"$['a']": lo, "$['b']": first})
    vmax = Variant.from_python({"$['a']": lo + rng.randrange(0, 50), "$['b']": chr(ord(first) + rng.randrange(0, 3))})
    stats = {
        "numRecords": 1000,
        "minValues": {"id": version * 10_000 + i, "v": encode_variant_stat(vmin)},
        "maxValues": {"id": version * 10_000 + i + 999, "v": encode_variant_stat(vmax)},
        "nullCount": {"id": 0, "v": 0},
    }
    return AddFile(path=f"part-{version:06d}-{i:03d}.parquet", size=1_048_576, modification_time=1_700_000_000_000 + version,
                   stats=json.dumps(stats, separators=(",", ":")))


def build(root: Path, commits: int, files_per_commit: int) -> DeltaLog:
    log = DeltaLog(LocalStorage(), str(root))
    log.create(SCHEMA, (), {"delta.checkpointInterval": "10"})
    rng = random.Random(7)
    for v in range(1, commits + 1):
        info = {"timestamp": 1_700_000_000_000 + v, "operation": "WRITE", "operationParameters": {"mode": "Append"}}
        log.write_commit(v, serialize_commit(info, [_add(v, i, rng) for i in range(files_per_commit)]))
        if v % 1000 == 0 or v == commits - commits % 10:
            if v % 10 == 0:
                log.checkpoint(v)
    return log


def median_time(fn, repeats: int) -> tuple[float, object]:  # noqa: ANN001
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--files-per-commit", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        build(Path(tmp) / "big", args.commits, args.files_per_commit)
        build(Path(tmp) / "small", 10, args.files_per_commit)
        print(f"built tables in {time.perf_counter() - t0:.1f} s")
        big_s, big = median_time(lambda: DeltaLog(LocalStorage(), f"{tmp}/big").snapshot(), args.repeats)
        small_s, small = median_time(lambda: DeltaLog(LocalStorage(), f"{tmp}/small").snapshot(), args.repeats)
        print(f"snapshot load: {big.num_files:,} files / version {big.version}: {big_s:.3f} s; "  # type: ignore[attr-defined]
              f"{small.num_files} files / version {small.version}: {small_s * 1000:.1f} ms; ratio {big_s / small_s:.0f}x; "  # type: ignore[attr-defined]
              f"target < 3 s: {'met' if big_s < 3 else 'MISSED'}")
        root = str(Path(f"{tmp}/big").resolve())
        plan_s, plan = median_time(lambda: plan_scan(big, root, PREDICATE), args.repeats)  # type: ignore[arg-type]
        n = plan.total_files  # type: ignore[attr-defined]
        print(f"plan_scan end to end (decode stats + evaluate): {n / plan_s:,.0f} files/s "
              f"({len(plan.skipped):,} of {n:,} skipped, {plan_s:.2f} s)")  # type: ignore[attr-defined]
    files = skip_bench.synthetic_files(100_000)
    from varlake.expr import SkippingEvaluator, bind, parse_predicate

    evaluator = SkippingEvaluator(bind(parse_predicate(PREDICATE), skip_bench.SCHEMA))
    eval_s, kept = median_time(lambda: sum(1 for f in files if evaluator.might_match(f)), args.repeats)
    base_s, _ = median_time(lambda: skip_bench.baseline(files), args.repeats)
    rate = len(files) / eval_s
    print(f"skipping evaluation: {rate:,.0f} files/s (kept {kept:,} of {len(files):,}); hand-written baseline "
          f"{len(files) / base_s:,.0f} files/s; ratio {base_s / eval_s:.2f}; target >= 200,000 files/s: "
          f"{'met' if rate >= 200_000 else 'MISSED'}")


if __name__ == "__main__":
    main()
