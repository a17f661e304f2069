"""Throughput of the Variant codec against PySpark's pure-Python codec and the json module.

Run ``python bench/codec.py``. Both workloads are generated from a fixed seed: ~200-byte
events and ~10 KB documents. Every operation is timed in the same run for varlake,
``pyspark.sql.variant_utils.VariantUtils`` (parse_json / to_json / to_python) and
``json.loads`` / ``json.dumps``; the printed ratios are varlake's speed-up. Targets:
>= 2x PySpark's codec on every operation it has, and reading one field of a ~10 KB
document >= 5x faster than ``json.loads`` plus a lookup of the same text.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from pyspark.sql.variant_utils import VariantUtils  # noqa: E402

import varlake  # noqa: E402
from varlake import Variant, VariantPath  # noqa: E402

try:  # variant_get is written by another module owner; bench it when it is there
    from varlake.variant.functions import variant_get as _variant_get  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - depends on the tree's state
    _variant_get = None

WORDS = ("alpha", "beta", "gamma", "delta", "click", "view", "purchase", "error", "mobile", "web", "eu-west", "us-east")


def event(r: random.Random, i: int) -> dict[str, Any]:
    """A ~200-byte click-stream event."""
    return {
        "event_id": f"{r.getrandbits(64):016x}",
        "ts": 1_700_000_000_000 + i * 137,
        "type": r.choice(WORDS[4:8]),
        "user": {"id": r.randrange(10**6), "country": r.choice(["DE", "FR", "US", "JP"]), "premium": r.random() < 0.2},
        "device": r.choice(WORDS[8:10]),
        "amount": round(r.uniform(0, 500), 2),
        "tags": r.sample(WORDS[:4], r.randint(0, 3)),
    }


def document(r: random.Random, i: int) -> dict[str, Any]:
    """A ~10 KB document: nested records, arrays of objects, strings and numbers."""
    items = [
        {
            "sku": f"SKU-{r.randrange(10**6):06d}",
            "name": " ".join(r.choice(WORDS) for _ in range(r.randint(2, 6))),
            "price": round(r.uniform(1, 1000), 2),
            "qty": r.randint(1, 9),
            "attrs": {w: r.randint(0, 100) for w in r.sample(WORDS, 4)},
            "ratio": r.random(),
        }
        for _ in range(52)
    ]
    return {
        "order_id": i,
        "customer": {"id": r.randrange(10**7), "name": "Customer " + str(i), "email": f"c{i}@example.com",
                     "address": {"city": r.choice(["Berlin", "Paris", "Tokyo"]), "zip": f"{r.randrange(10**5):05d}"}},
        "items": items,
        "status": r.choice(["new", "paid", "shipped"]),
        "notes": " ".join(r.choice(WORDS) for _ in range(40)),
        "total": round(sum(it["price"] * it["qty"] for it in items), 2),
    }


def best_rate(fn: Callable[[Any], object], inputs: Sequence[Any], seconds: float) -> float:
    """Operations per second of ``fn`` over ``inputs``: one timed pass of at least ``seconds``."""
    done = 0
    start = time.perf_counter()
    while True:
        for x in inputs:
            fn(x)
        done += len(inputs)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def compare(mine: Callable[[Any], object], mine_in: Sequence[Any], base: Callable[[Any], object],
            base_in: Sequence[Any], seconds: float, rounds: int) -> tuple[float, float]:
    """Best ops/s of each side over ``rounds`` alternating passes (robust to a busy machine)."""
    a = b = 0.0
    for _ in range(rounds):
        a = max(a, best_rate(mine, mine_in, seconds))
        b = max(b, best_rate(base, base_in, seconds))
    return a, b


def run(name: str, texts: list[str], field: str, seconds: float, rounds: int) -> list[tuple[str, str, float, float, str]]:
    """Rows ``(workload, op, varlake ops/s, baseline ops/s, baseline name)``."""
    ours = [varlake.parse_json(t) for t in texts]
    theirs = [VariantUtils.parse_json(t) for t in texts]  # (value, metadata)
    for v, (value, metadata) in zip(ours, theirs):
        assert v.value == value and v.metadata == metadata, "PySpark and varlake disagree on the encoding"
    path = VariantPath.parse(f"$.{field}")
    for v, t in zip(ours, texts):
        assert v.get(path).to_python() == json.loads(t)[field]
    objs = [json.loads(t) for t in texts]
    rows = []

    def row(op: str, mine: Callable[[Any], object], mine_in: Sequence[Any], base: Callable[[Any], object],
            base_in: Sequence[Any], base_name: str) -> None:
        a, b = compare(mine, mine_in, base, base_in, seconds, rounds)
        rows.append((name, op, a, b, base_name))

    row("parse_json", varlake.parse_json, texts, VariantUtils.parse_json, texts, "pyspark")
    row("to_json", Variant.to_json, ours, lambda vm: VariantUtils.to_json(vm[0], vm[1]), theirs, "pyspark")
    row("to_python", Variant.to_python, ours, lambda vm: VariantUtils.to_python(vm[0], vm[1]), theirs, "pyspark")
    row("parse_json", varlake.parse_json, texts, json.loads, texts, "json.loads")
    row("to_json", Variant.to_json, ours, json.dumps, objs, "json.dumps")
    row("get 1 field", lambda v: v.get(path), ours, lambda t: json.loads(t)[field], texts, "json.loads+[]")
    if _variant_get is not None:
        row("variant_get", lambda v: _variant_get(v, f"$.{field}"), ours, lambda t: json.loads(t)[field], texts,
            "json.loads+[]")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.3, help="length of one timed pass")
    parser.add_argument("--rounds", type=int, default=3, help="alternating passes per side (best is kept)")
    args = parser.parse_args()
    r = random.Random(42)
    events = [json.dumps(event(r, i)) for i in range(2000)]
    docs = [json.dumps(document(r, i)) for i in range(100)]
    print(f"events: {len(events)} x ~{sum(map(len, events)) // len(events)} B; "
          f"documents: {len(docs)} x ~{sum(map(len, docs)) // len(docs)} B")
    rows = run("~200 B events", events, "user", args.seconds, args.rounds)
    rows += run("~10 KB docs", docs, "status", args.seconds, args.rounds)
    print(f"{'workload':<15} {'operation':<12} {'varlake ops/s':>14} {'baseline ops/s':>15}  {'baseline':<14} {'ratio':>6}")
    for workload, op, mine, base, base_name in rows:
        print(f"{workload:<15} {op:<12} {mine:>14,.0f} {base:>15,.0f}  {base_name:<14} {mine / base:>5.1f}x")
    failed = [f"{w} {op} vs {b}: {m / x:.1f}x" for w, op, m, x, b in rows
              if (b == "pyspark" and m < 2 * x) or (w.startswith("~10 KB") and op == "get 1 field" and m < 5 * x)]
    print("targets (>= 2x PySpark's codec, get >= 5x json.loads+[] on ~10 KB):", "met" if not failed else "MISSED " + "; ".join(failed))


if __name__ == "__main__":
    main()
