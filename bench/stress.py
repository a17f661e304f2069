"""Reliability under attack and bad luck (issue 11): not a test, a report.

    .venv/bin/python bench/stress.py [--writers 8] [--appends 50] [--kills 100]
                                     [--variants 1000000] [--flips 1000] [--only PHASE ...]

Phases (each prints trials, named errors, raw exceptions, lost and duplicated rows, files
outside the table root and silently wrong reads):

- ``concurrent``: ``--writers`` processes x ``--appends`` blind appends to one table, then
  rounds of 4 writers overwriting from the same snapshot (exactly one may win a round; the
  others must get ``CommitConflictError``).
- ``kill``: ``--kills`` SIGKILLs at random moments of a child appending, overwriting,
  checkpointing or vacuuming. After each kill the table must open, hold only whole batches,
  every batch the child saw committed, nothing twice, and take one more append.
- ``variants``: ``--variants`` mutated Variant byte strings (bit flips, truncations, inserted
  and overwritten bytes in metadata or value) decoded and rendered as JSON: each must decode
  or raise a ``VarlakeError``; the slowest decode is reported (a hang shows there).
- ``flips``: ``--flips`` single-bit flips anywhere in a data file varlake wrote (zstd,
  shredded Variant column): each read must give the right rows or a named error; the target
  is fewer than 1% wrong reads.

Targets: 0 lost, 0 duplicated, 0 outside, 0 raw exceptions, < 1% of flips read wrongly.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BATCH = 20  # rows per append in the kill and concurrent phases
KINDS = ("append", "overwrite", "checkpoint", "vacuum")


@dataclass
class Tally:
    name: str
    trials: int = 0
    named: int = 0
    raw: int = 0
    lost: int = 0
    duplicated: int = 0
    outside: int = 0
    wrong: int = 0
    notes: list[str] = field(default_factory=list)
    raw_kinds: Counter = field(default_factory=Counter)

    def show(self) -> None:
        print(
            f"{self.name:<11} trials {self.trials:>9,}  named errors {self.named:>7,}  raw {self.raw:>3}  "
            f"lost {self.lost}  duplicated {self.duplicated}  outside {self.outside}  wrong {self.wrong}"
        )
        for kind, n in self.raw_kinds.most_common(5):
            print(f"{'':<11} raw {kind}: {n}")
        for note in self.notes:
            print(f"{'':<11} {note}")


def tree(directory: Path, skip: Path | None = None) -> set[str]:
    """Every path under ``directory`` except those inside ``skip`` (symlinks not followed)."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(directory):
        here = Path(dirpath)
        if skip is not None and (here == skip or skip in here.parents):
            continue
        out.update(str(here / n) for n in dirnames + filenames)
    return {p for p in out if skip is None or not (p == str(skip) or p.startswith(str(skip) + os.sep))}


def batch_rows(tag: int, k: int) -> list[dict[str, Any]]:
    base = (tag * 100_000 + k) * BATCH
    return [{"id": base + i, "w": tag, "k": k, "v": {"a": base + i, "s": f"w{tag}", "n": {"x": i}}} for i in range(BATCH)]


def rows_of(table: Any) -> list[tuple[int, int, int]]:
    got = table.scan().select("id", "w", "k").to_arrow()
    return list(zip(got.column("id").to_pylist(), got.column("w").to_pylist(), got.column("k").to_pylist()))


def create_table(root: Path) -> Any:
    from varlake import Table

    return Table.create(root, "id bigint, w bigint, k bigint, v variant", properties={"delta.checkpointInterval": "5"})


# --- concurrent writers --------------------------------------------------------------------------


def _append_worker(root: str, tag: int, appends: int, out: Any) -> None:
    from varlake import Table
    from varlake.errors import VarlakeError

    table, named, raw, done = Table(root), 0, [], []
    for k in range(appends):
        try:
            table.append(batch_rows(tag, k))
            done.append(k)
        except VarlakeError as exc:
            named += 1
            raw.append(f"named {type(exc).__name__}: {exc}"[:200])
        except Exception as exc:  # noqa: BLE001 - counted as a raw exception
            raw.append(f"raw {type(exc).__name__}: {exc}"[:200])
    out.put((tag, done, named, raw))


def _overwrite_worker(root: str, tag: int, version: int, barrier: Any, out: Any) -> None:
    from varlake import Table
    from varlake.errors import CommitConflictError, VarlakeError
    from varlake.write import commit_write

    table = Table(root)
    snapshot = table.snapshot(version)
    pending = table.stage(batch_rows(tag, version), "overwrite", snapshot)
    barrier.wait()
    try:
        commit_write(table.log, pending)
        out.put((tag, "won"))
    except CommitConflictError:
        out.put((tag, "conflict"))
    except VarlakeError as exc:
        out.put((tag, f"named {type(exc).__name__}: {exc}"[:200]))
    except Exception as exc:  # noqa: BLE001
        out.put((tag, f"raw {type(exc).__name__}: {exc}"[:200]))


def concurrent(work: Path, writers: int, appends: int, rounds: int) -> list[Tally]:
    from varlake import Table

    ctx = mp.get_context("spawn")
    cage = work / "concurrent"
    root = cage / "t"
    cage.mkdir()
    create_table(root)
    before = tree(cage, root)
    out = ctx.Queue()
    t0 = time.perf_counter()
    procs = [ctx.Process(target=_append_worker, args=(str(root), w, appends, out)) for w in range(writers)]
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    elapsed = time.perf_counter() - t0
    tally = Tally("appends", trials=writers * appends)
    confirmed = set()
    for tag, done, named, raw in results:
        tally.named += named
        for r in raw:
            if r.startswith("raw"):
                tally.raw += 1
                tally.raw_kinds[r.split(":")[0]] += 1
        confirmed.update((tag, k) for k in done)
    rows = rows_of(Table(root))
    seen = Counter(rows)
    tally.duplicated = sum(n - 1 for n in seen.values() if n > 1)
    present = {(w, k) for _, w, k in rows}
    tally.lost = sum(BATCH for b in confirmed if b not in present)
    tally.lost += sum(1 for (w, k), n in Counter((w, k) for _, w, k in seen).items() if n != BATCH)
    tally.outside = len(tree(cage, root) ^ before)
    tally.notes.append(
        f"{len(confirmed)} appends confirmed, {len(rows):,} rows read, table at v{Table(root).version}, {elapsed:.1f} s "
        f"({writers * appends / elapsed:.1f} commits/s)"
    )

    over = Tally("overwrites", trials=rounds * 4)
    winners_per_round = Counter()
    for r in range(rounds):
        version = Table(root).version
        barrier = ctx.Barrier(4)
        procs = [ctx.Process(target=_overwrite_worker, args=(str(root), 1000 + w, version, barrier, out)) for w in range(4)]
        for p in procs:
            p.start()
        verdicts = [out.get() for _ in procs]
        for p in procs:
            p.join()
        wins = [tag for tag, v in verdicts if v == "won"]
        winners_per_round[len(wins)] += 1
        for _, v in verdicts:
            if v.startswith("raw"):
                over.raw += 1
                over.raw_kinds[v.split(":")[0]] += 1
            elif v.startswith("named") or v == "conflict":
                over.named += 1
        rows = rows_of(Table(root))
        expected = {(row["id"], row["w"], row["k"]) for tag in wins for row in batch_rows(tag, version)}
        if len(wins) == 1 and Counter(rows) != Counter(expected):
            over.wrong += 1
            over.notes.append(f"round {r}: table does not hold exactly the winner's rows")
    over.outside = len(tree(cage, root) ^ before)
    over.notes.append(f"winners per round: {dict(winners_per_round)} (every round must have exactly 1)")
    if set(winners_per_round) != {1}:
        over.wrong += sum(n for w, n in winners_per_round.items() if w != 1)
    return [tally, over]


# --- SIGKILL trials ----------------------------------------------------------------------------------


def child(kind: str, root: str, progress: str) -> None:
    """Runs until killed: writes batch numbers to ``progress`` after each commit returns."""
    from varlake import Table

    table = Table(root)
    tag = TAGS[kind]
    with open(progress, "a") as log:
        for k in range(1, 10_000):
            if _is_overwrite(kind, k):
                table.overwrite(batch_rows(tag, k))
                op = "overwrite"
            else:
                table.append(batch_rows(tag, k))
                op = "append"
            log.write(f"{op} {k}\n")
            log.flush()
            os.fsync(log.fileno())
            if kind == "checkpoint":
                table.checkpoint()
            elif kind == "vacuum":
                table.vacuum(0, unsafe_retention=True)


def _confirmed(progress: Path) -> list[tuple[str, int]]:
    out = []
    for line in progress.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out.append((parts[0], int(parts[1])))
    return out


TAGS = {"append": 1, "overwrite": 2, "checkpoint": 3, "vacuum": 4}


def _is_overwrite(kind: str, k: int) -> bool:
    return kind == "overwrite" and k % 2 == 0 or kind == "vacuum" and k % 3 == 0


def _kill_losses(kind: str, confirmed: list[tuple[str, int]], present: set[tuple[int, int]]) -> tuple[int, str]:
    """Batches lost by a killed child: the table must hold the newest committed overwrite (or
    the initial batch) and every append after it, a run that reaches the last confirmed op.

    A commit the child made but did not get to confirm may be there or not; a confirmed one
    must be, unless a later (perhaps unconfirmed) overwrite replaced it.
    """
    tag = TAGS[kind]
    ks = sorted(k for w, k in present if w == tag)
    overwrites = [k for k in ks if _is_overwrite(kind, k)]
    if len(overwrites) > 1:
        return len(overwrites) - 1, f"{len(overwrites)} overwrites visible at once: {overwrites}"
    base = overwrites[0] if overwrites else 0
    if (not overwrites) != ((0, 0) in present):
        return 1, "the initial batch is there together with an overwrite, or missing without one"
    expected_run = [k for k in range(base + 1 if overwrites else 1, (ks[-1] if ks else 0) + 1)]
    missing = [k for k in expected_run if k not in ks]
    confirmed_after = [k for _, k in confirmed if k >= base and (tag, k) not in present and k != 0]
    last = max((k for _, k in confirmed), default=0)
    lost = len(missing) + len(confirmed_after) + (1 if last > (ks[-1] if ks else 0) else 0)
    return lost, (f"missing {missing}, confirmed but absent {confirmed_after}, last confirmed {last}, present {ks}" if lost else "")


def kill_trials(work: Path, trials: int, seed: int) -> Tally:
    from varlake import Table
    from varlake.errors import VarlakeError

    rng = random.Random(seed)
    tally = Tally("kill", trials=trials)
    per_kind = Counter()
    for trial in range(trials):
        kind = KINDS[trial % len(KINDS)]
        per_kind[kind] += 1
        cage = work / f"kill{trial}"
        root = cage / "t"
        cage.mkdir()
        table = create_table(root)
        table.append(batch_rows(0, 0))
        progress = cage / "progress"
        progress.touch()
        before = tree(cage, root) | {str(progress)}
        proc = subprocess.Popen([sys.executable, __file__, "--child", kind, str(root), str(progress)])
        # Let the child get going (imports take ~0.5 s), then kill it at a random moment.
        time.sleep(0.6 + rng.random() * 2.0)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        tally.outside += len((tree(cage, root) | {str(progress)}) ^ before)
        try:
            table = Table(root)
            rows = rows_of(table)
        except VarlakeError as exc:
            tally.named += 1
            tally.lost += 1
            tally.notes.append(f"trial {trial} ({kind}): table unreadable after kill: {exc}"[:300])
            continue
        except Exception as exc:  # noqa: BLE001
            tally.raw += 1
            tally.raw_kinds[type(exc).__name__] += 1
            continue
        confirmed = _confirmed(progress)
        seen = Counter(rows)
        tally.duplicated += sum(n - 1 for n in seen.values() if n > 1)
        batches = Counter((w, k) for _, w, k in seen)
        tally.lost += sum(1 for n in batches.values() if n != BATCH)  # torn batches
        lost, why = _kill_losses(kind, confirmed, set(batches))
        tally.lost += lost
        if why and len(tally.notes) < 8:
            tally.notes.append(f"trial {trial} ({kind}): {why}")
        # Still a table: one more append lands and reads back; vacuum keeps every live file.
        try:
            table.append(batch_rows(9, trial))
            table.vacuum(0, unsafe_retention=True)
            after = Counter(rows_of(Table(root)))
            if sum(after.values()) != sum(seen.values()) + BATCH:
                tally.wrong += 1
                tally.notes.append(f"trial {trial} ({kind}): append after the kill did not read back")
        except VarlakeError as exc:
            tally.named += 1
            tally.notes.append(f"trial {trial} ({kind}): append/vacuum after kill failed: {exc}"[:300])
        except Exception as exc:  # noqa: BLE001
            tally.raw += 1
            tally.raw_kinds[type(exc).__name__] += 1
        shutil.rmtree(cage)
    tally.notes.append(f"trials per kind: {dict(per_kind)}")
    return tally


# --- mutated Variants ------------------------------------------------------------------------------


def _variant_seeds() -> list[tuple[bytes, bytes]]:
    from varlake.variant import parse_json

    texts = [
        '{"a": 1, "b": [1, 2.5, "x", null, true], "c": {"d": "2024-01-01", "e": -1.5e300}}',
        '[{"k": 1}, {"k": "s"}, [], {}, [[[]]], 123456789012345678901234567890]',
        '{"id": 18446744073709551615, "s": "' + "é" * 40 + '", "n": -0.0, "t": 1e-320}',
        '"a string long enough to need the long-string form of the encoding ... ' + "x" * 80 + '"',
        '{"z": {"y": {"x": {"w": {"v": [1, {"u": 2}]}}}}, "aa": 3.14159265358979, "ab": 12.340}',
        "42",
        "null",
        '[' + ", ".join(str(i) for i in range(300)) + ']',
    ]
    seeds = []
    for text in texts:
        v = parse_json(text)
        seeds.append((v.metadata, v.value))
    return seeds


def _mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    op = rng.randrange(5)
    if op == 0 and b:  # flip a bit
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif op == 1 and b:  # truncate
        del b[rng.randrange(len(b)):]
    elif op == 2:  # insert bytes
        at = rng.randrange(len(b) + 1)
        b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 5)))
    elif op == 3 and b:  # overwrite a byte with an extreme
        b[rng.randrange(len(b))] = rng.choice((0x00, 0xFF, 0x7F, 0x80, 0x01))
    elif b:  # several flips
        for _ in range(rng.randrange(2, 6)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    return bytes(b)


def _decode_time(metadata: bytes, value: bytes) -> float:
    """Seconds to decode and render one input, best of three (machine noise removed)."""
    from varlake.errors import VarlakeError
    from varlake.variant import Variant

    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        try:
            v = Variant(metadata, value)
            v.to_json()
            v.to_python()
        except VarlakeError:
            pass
        best = min(best, time.perf_counter() - t0)
    return best


def _variant_chunk(args: tuple[int, int]) -> tuple[int, int, int, Counter, tuple[float, bytes, bytes], int]:
    from varlake.errors import VarlakeError
    from varlake.variant import Variant

    seed, n = args
    rng = random.Random(seed)
    seeds = _variant_seeds()
    named = raw = ok = 0
    kinds: Counter = Counter()
    slowest = (0.0, b"", b"")
    changed = 0
    for _ in range(n):
        metadata, value = rng.choice(seeds)
        if rng.random() < 0.3:
            metadata = _mutate(rng, metadata)
        if rng.random() < 0.85:
            value = _mutate(rng, value)
        t0 = time.perf_counter()
        try:
            v = Variant(metadata, value)
            v.to_json()
            v.to_python()
            ok += 1
        except VarlakeError:
            named += 1
        except Exception as exc:  # noqa: BLE001
            raw += 1
            kinds[type(exc).__name__] += 1
        slowest = max(slowest, (time.perf_counter() - t0, metadata, value))
        changed += 1
    return ok, named, raw, kinds, slowest, changed


def variants(n: int, seed: int) -> Tally:
    chunk = 20_000
    jobs = [(seed * 1_000_003 + i, min(chunk, n - i * chunk)) for i in range((n + chunk - 1) // chunk)]
    tally = Tally("variants", trials=n)
    ok = 0
    slowest = (0.0, b"", b"")
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(2) as pool:
        for c_ok, c_named, c_raw, kinds, c_slowest, _ in pool.imap_unordered(_variant_chunk, jobs):
            ok += c_ok
            tally.named += c_named
            tally.raw += c_raw
            tally.raw_kinds.update(kinds)
            slowest = max(slowest, c_slowest)
    tally.notes.append(
        f"{ok:,} decoded to a value, {time.perf_counter() - t0:.0f} s in all; slowest decode {slowest[0] * 1000:.1f} ms, "
        f"re-timed alone {_decode_time(slowest[1], slowest[2]) * 1000:.2f} ms ({len(slowest[2])} value bytes)"
    )
    return tally


# --- byte flips in data files ------------------------------------------------------------------------


def _row_keys(table: Any) -> Counter:
    """Every row, its Variant as canonical JSON text."""
    from varlake.variant import Variant

    return Counter(
        (r["id"], r["w"], r["k"], json.dumps(Variant(r["v"]["metadata"], r["v"]["value"]).to_python(), sort_keys=True, default=str))
        for r in table.scan().to_arrow().to_pylist()
    )


def flips(work: Path, n: int, seed: int) -> Tally:
    from varlake import Table
    from varlake.errors import VarlakeError

    rng = random.Random(seed)
    cage = work / "flips"
    root = cage / "t"
    cage.mkdir()
    table = create_table(root)
    table.append([row for k in range(100) for row in batch_rows(5, k)])
    (add,) = table.files()
    data_file = root / add.path
    clean = data_file.read_bytes()
    expected = _row_keys(table)
    before = tree(cage, root)
    tally = Tally("flips", trials=n)
    for trial in range(n):
        broken = bytearray(clean)
        at = rng.randrange(len(broken))
        broken[at] ^= 1 << rng.randrange(8)
        data_file.write_bytes(bytes(broken))
        try:
            if _row_keys(Table(root)) != expected:
                tally.wrong += 1
                if len(tally.notes) < 5:
                    tally.notes.append(f"flip at byte {at} of {len(clean)} read as other values")
        except VarlakeError:
            tally.named += 1
        except Exception as exc:  # noqa: BLE001
            tally.raw += 1
            tally.raw_kinds[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
    data_file.write_bytes(clean)
    tally.outside = len(tree(cage, root) ^ before)
    tally.notes.append(f"wrong reads: {100 * tally.wrong / max(n, 1):.2f}% of flips (target < 1%)")
    return tally


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--appends", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=10, help="overwrite rounds of 4 writers")
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--variants", type=int, default=1_000_000)
    parser.add_argument("--flips", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", nargs="*", choices=("concurrent", "kill", "variants", "flips"))
    args = parser.parse_args()
    phases = set(args.only or ("concurrent", "kill", "variants", "flips"))
    tallies: list[Tally] = []
    with tempfile.TemporaryDirectory(prefix="varlake-stress-") as tmp:
        work = Path(tmp)
        if "concurrent" in phases:
            tallies += concurrent(work, args.writers, args.appends, args.rounds)
        if "kill" in phases:
            tallies.append(kill_trials(work, args.kills, args.seed))
        if "variants" in phases:
            tallies.append(variants(args.variants, args.seed))
        if "flips" in phases:
            tallies.append(flips(work, args.flips, args.seed))
    print()
    for t in tallies:
        t.show()
    failed = [t.name for t in tallies if t.lost or t.duplicated or t.outside or t.raw]
    flip = next((t for t in tallies if t.name == "flips"), None)
    if flip is not None and flip.wrong >= 0.01 * max(flip.trials, 1):
        failed.append("flips")
    print("targets met" if not failed else f"targets missed in: {', '.join(failed)}")


if __name__ == "__main__":
    main()
