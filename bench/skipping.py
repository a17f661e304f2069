"""Data-skipping throughput: files/second for a Variant-path predicate over synthetic stats.

    .venv/bin/python bench/skipping.py [--files 100000] [--repeat 5]

Builds ``FileStats`` for N files (per-path Variant bounds for ``$.a`` (int) and ``$.b``
(string), some files without stats, some with mixed-type paths), binds
``v:a::bigint BETWEEN 10 AND 20 AND v:b::string = 'x'`` once, and times
``SkippingEvaluator.might_match`` over all files.  The baseline measured in the same run
is a bare loop doing the same dictionary look-ups by hand with no predicate logic, so
the ratio shows what the evaluator's generality costs.  Target: >= 200,000 files/s.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

from varlake.expr import FileStats, SkippingEvaluator, TypeFamily, VariantBound, bind, parse_predicate

PREDICATE = "v:a::bigint BETWEEN 10 AND 20 AND v:b::string = 'x'"
#: nearly every file passes both leaves: the per-file cost when nothing is skipped early
WORST_CASE = "v:a::bigint >= 0 AND v:b::string >= 'a'"
SCHEMA = {("v",): "variant", ("id",): "long"}
KEY_A = (("v",), "$['a']")
KEY_B = (("v",), "$['b']")


def synthetic_files(count: int, seed: int = 7) -> list[FileStats]:
    rng = random.Random(seed)
    files = []
    for _ in range(count):
        lo = rng.randrange(0, 1000)
        vmin: dict[tuple[tuple[str, ...], str], VariantBound] = {}
        vmax: dict[tuple[tuple[str, ...], str], VariantBound] = {}
        if rng.random() < 0.95:  # 5% of files have no stats for $.a
            vmin[KEY_A] = VariantBound(lo, TypeFamily.EXACT_NUMERIC)
            vmax[KEY_A] = VariantBound(lo + rng.randrange(0, 50), TypeFamily.EXACT_NUMERIC)
        if rng.random() < 0.9:
            first = rng.choice("abcdefghijklmnopqrstuvwxyz")
            vmin[KEY_B] = VariantBound(first, TypeFamily.STRING)
            vmax[KEY_B] = VariantBound(chr(ord(first) + rng.randrange(0, 3)), TypeFamily.STRING)
        files.append(FileStats(num_records=1000, null_count={("v",): 0}, variant_min=vmin, variant_max=vmax))
    return files


def baseline(files: Sequence[FileStats]) -> int:
    """Hand-written look-ups only: the floor any evaluator over these objects pays."""
    kept = 0
    for stats in files:
        a_min, a_max = stats.variant_min.get(KEY_A), stats.variant_max.get(KEY_A)
        b_min, b_max = stats.variant_min.get(KEY_B), stats.variant_max.get(KEY_B)
        if a_min is not None and a_max is not None and (a_max[0] < 10 or a_min[0] > 20):
            continue
        if b_min is not None and b_max is not None and (b_max[0] < "x" or b_min[0] > "x"):
            continue
        kept += 1
    return kept


def best_of(repeat: int, fn: Callable[[], int]) -> tuple[float, int]:
    best, result = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    files = synthetic_files(args.files)
    start = time.perf_counter()
    evaluator = SkippingEvaluator(bind(parse_predicate(PREDICATE), SCHEMA))
    bind_seconds = time.perf_counter() - start
    might = evaluator.might_match
    worst = SkippingEvaluator(bind(parse_predicate(WORST_CASE), SCHEMA)).might_match

    seconds, kept = best_of(args.repeat, lambda: sum(1 for f in files if might(f)))
    worst_seconds, worst_kept = best_of(args.repeat, lambda: sum(1 for f in files if worst(f)))
    base_seconds, base_kept = best_of(args.repeat, lambda: baseline(files))
    rate, worst_rate, base_rate = args.files / seconds, args.files / worst_seconds, args.files / base_seconds
    print(f"predicate: {PREDICATE}")
    print(f"files: {args.files}, kept by evaluator: {kept}, kept by baseline: {base_kept}")
    print(f"parse+bind+compile: {bind_seconds * 1e3:.2f} ms")
    print(f"evaluator: {rate:,.0f} files/s ({seconds * 1e3:.1f} ms)")
    print(f"baseline (hand-written look-ups): {base_rate:,.0f} files/s ({base_seconds * 1e3:.1f} ms)")
    print(f"ratio evaluator/baseline: {rate / base_rate:.2f}")
    print(f"worst case ({WORST_CASE}, kept {worst_kept}): {worst_rate:,.0f} files/s")
    print(f"target 200,000 files/s: {'met' if min(rate, worst_rate) >= 200_000 else 'NOT met'}")


if __name__ == "__main__":
    main()
