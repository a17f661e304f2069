"""Benchmark: the table layer's two hot paths, in one run.

1. Snapshot load: a table with 10,000 commits and 100,000 files (checkpoints every 10
   commits, as ``delta.checkpointInterval`` leaves them) against a table with 10 commits.
2. Skipping for a Variant path predicate: (a) evaluation alone over decoded ``FileStats``
   (bench/skipping.py's synthetic files), (b) end to end as ``plan_scan`` runs it on the
   large table: decode each ``add``'s stats JSON (Z85 Variant bounds included) and evaluate.
3. Deletion vectors: snapshot load and scan planning of a table of 10,000 files of which
   20% carry a deletion vector (``u`` DVs, 100 per DV file), against the same table
   without them (same commits, files and checkpoints), and loading every DV of a scan.

    .venv/bin/python bench/table.py [--commits 10000] [--files-per-commit 10] [--dv-only]

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
from varlake.delta.actions import Protocol, action_to_json  # noqa: E402
from varlake.delta.checkpoint import write_checkpoint  # noqa: E402
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


def build_dv_pair(tmp: Path, files: int, share: float, commits: int = 100) -> tuple[str, str]:
    """Two tables of ``files`` files over ``commits`` commits (checkpoint every 10): in the
    first, ``share`` of the adds carry a ``u`` deletion vector (100 DVs per DV file, 2% of
    the file's 1000 rows each); the second is the same without them."""
    import struct
    import uuid as uuid_mod
    import zlib

    from pyroaring import BitMap64

    from varlake.variant import z85_encode

    roots = []
    for with_dv in (True, False):
        root = tmp / ("dv" if with_dv else "no-dv")
        log = DeltaLog(LocalStorage(), str(root))
        log.create(SCHEMA, (), {"delta.checkpointInterval": "10"})
        rng, dv_rng = random.Random(11), random.Random(12)  # the same files in both tables
        features = ("deletionVectors", "variantType") if with_dv else ("variantType",)
        per_commit = files // commits
        dv_every = round(1 / share)
        pending: list[bytes] = []
        dv_name = ""
        for v in range(1, commits + 1):
            info = {"timestamp": 1_700_000_000_000 + v, "operation": "WRITE", "operationParameters": {"mode": "Append"}}
            adds = [_add(v, i, rng) for i in range(per_commit)]
            if with_dv:
                for i in range(0, per_commit, dv_every):
                    if len(pending) % 100 == 0:
                        ident = uuid_mod.uuid4()
                        dv_name = z85_encode(ident.bytes)
                        pending = []
                        offset = 1
                    rows = BitMap64(dv_rng.sample(range(1000), 20))
                    data = struct.pack("<I", 1681511377) + rows.serialize()
                    pending.append(data)
                    frame = struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))
                    dv_file = root / f"deletion_vector_{ident}.bin"
                    with open(dv_file, "ab") as out:
                        if offset == 1:
                            out.write(b"\x01")
                        out.write(frame)
                    descriptor = {"storageType": "u", "pathOrInlineDv": dv_name, "offset": offset,
                                  "sizeInBytes": len(data), "cardinality": 20}
                    offset += len(frame)
                    adds[i] = AddFile(adds[i].path, adds[i].size, {}, adds[i].modification_time, True, adds[i].stats,
                                      deletion_vector=descriptor)
            actions = [Protocol(3, 7, features, features)] if v == 1 else []
            body = serialize_commit(info, actions + adds) if actions else serialize_commit(info, adds)
            log.write_commit(v, body)
            if v % 10 == 0:  # as delta.checkpointInterval leaves it (written directly: a DV table is not writable)
                write_checkpoint(log.storage, f"{root}/_delta_log", DeltaLog(LocalStorage(), str(root)).snapshot(v).state)
        roots.append(str(root.resolve()))
    return roots[0], roots[1]


def dv_benchmark(tmp: Path, files: int, share: float, repeats: int) -> None:
    from varlake import Table

    t0 = time.perf_counter()
    with_dv, without = build_dv_pair(tmp, files, share)
    print(f"built the deletion-vector tables in {time.perf_counter() - t0:.1f} s")
    (load_dv, snap_dv), (load_plain, snap_plain) = paired_times(
        lambda: DeltaLog(LocalStorage(), with_dv).snapshot(), lambda: DeltaLog(LocalStorage(), without).snapshot(), repeats
    )
    n_dv = sum(1 for a in snap_dv.files if a.deletion_vector is not None)  # type: ignore[attr-defined]
    print(f"snapshot load, {snap_dv.num_files:,} files ({n_dv:,} with a DV): {load_dv * 1000:.0f} ms; "  # type: ignore[attr-defined]
          f"without DVs: {load_plain * 1000:.0f} ms; ratio {load_dv / load_plain:.2f}")
    for label, predicate in (("no filter", None), ("Variant path filter", PREDICATE)):
        (plan_dv_s, plan_dv), (plan_plain_s, plan_plain) = paired_times(
            lambda: plan_scan(snap_dv, with_dv, predicate), lambda: plan_scan(snap_plain, without, predicate), repeats  # type: ignore[arg-type]
        )
        print(f"plan_scan ({label}): with DVs {plan_dv_s * 1000:.0f} ms ({len(plan_dv.tasks):,} tasks, "  # type: ignore[attr-defined]
              f"{sum(t.num_records for t in plan_dv.tasks):,} live rows); without {plan_plain_s * 1000:.0f} ms "  # type: ignore[attr-defined]
              f"({len(plan_plain.tasks):,} tasks); ratio {plan_dv_s / plan_plain_s:.2f}")  # type: ignore[attr-defined]
    table = Table(with_dv)
    tasks = [t for t in plan_scan(snap_dv, with_dv).tasks if t.deletion_vector is not None]  # type: ignore[arg-type]
    load_s, _ = median_time(lambda: [table.deleted_rows(t) for t in tasks], repeats)
    print(f"loading the {len(tasks):,} deletion vectors of a full scan: {load_s * 1000:.0f} ms "
          f"({len(tasks) / load_s:,.0f} DVs/s)")


def paired_times(fa, fb, repeats: int) -> tuple[tuple[float, object], tuple[float, object]]:  # noqa: ANN001
    """Median times of ``fa`` and ``fb`` measured alternately (after one warm-up call each),
    so a busy machine slows both alike."""
    fa(), fb()
    ta, tb, ra, rb = [], [], None, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        ra = fa()
        ta.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        rb = fb()
        tb.append(time.perf_counter() - t0)
    return (statistics.median(ta), ra), (statistics.median(tb), rb)


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
    parser.add_argument("--dv-files", type=int, default=10_000)
    parser.add_argument("--dv-share", type=float, default=0.2)
    parser.add_argument("--dv-only", action="store_true", help="run only the deletion-vector comparison")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dv_benchmark(Path(tmp), args.dv_files, args.dv_share, args.repeats)
    if args.dv_only:
        return
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
