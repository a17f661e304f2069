"""`make demo`: the main job end to end on local Spark, at a small scale.

1. Generate ~20k firehose-like JSON events as JSON Lines in four files (one gzip),
   with a few bad lines among them.
2. Check varlake's codec against Spark's ``parse_json`` on a sample (byte-identical).
3. Ingest everything into a shredded varlake table with the Spark pipeline; bad lines
   go to the quarantine table; ``read = written + quarantined``.
4. Query the table with ``varlake.spark.sql`` and check the answers against the
   generated events; ``explain`` a selective query (files skipped by statistics, read
   path per file group).
5. Describe the table and dry-run a vacuum.

Every check that fails makes the demo exit non-zero.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from varlake import Table, parse_json

N_EVENTS = 20_000
N_FILES = 4
BAD_LINES = [b"{truncated", b'{"did": "x", "did": "y"}', b'{"text": "\xff\xfe"}', b"[" * 1001 + b"]" * 1001, b""]
START_US = 1_700_000_000_000_000


def make_events(n: int, seed: int = 7) -> list[str]:
    """Firehose-like JSON events (a small stand-in for the benchmark generator)."""
    rng = random.Random(seed)
    kinds = ["commit", "identity", "account"]
    collections = ["app.bsky.feed.post", "app.bsky.feed.like", "app.bsky.graph.follow", "app.bsky.feed.repost"]
    out = []
    for i in range(n):
        doc: dict[str, object] = {
            "did": f"did:plc:{rng.randrange(10**6):06d}",
            "time_us": START_US + i * 1_000_003,
            "kind": rng.choices(kinds, [90, 5, 5])[0],
        }
        if doc["kind"] == "commit":
            doc["commit"] = {
                "collection": rng.choice(collections),
                "operation": rng.choice(["create", "delete"]),
                "record": {"text": "hello " * rng.randrange(5), "langs": ["en"], "score": rng.random()},
            }
        out.append(json.dumps(doc))
    return out


def write_inputs(directory: Path, events: list[str]) -> int:
    """The events in ``N_FILES`` time-ordered files (the last gzipped), bad lines mixed in."""
    per_file = -(-len(events) // N_FILES)
    bad = 0
    for k in range(N_FILES):
        lines = [e.encode() for e in events[k * per_file : (k + 1) * per_file]]
        for j, b in enumerate(BAD_LINES[k::N_FILES]):
            lines.insert(100 + 37 * j, b)
            bad += 1
        data = b"\n".join(lines) + b"\n"
        if k == N_FILES - 1:
            with gzip.open(directory / f"events-{k}.jsonl.gz", "wb") as f:
                f.write(data)
        else:
            (directory / f"events-{k}.jsonl").write_bytes(data)
    return bad


class Checks:
    """Collects failed checks; the demo exits 1 if there is any."""

    def __init__(self) -> None:
        self.failed: list[str] = []

    def __call__(self, ok: bool, what: str) -> None:
        print(f"  [{'ok' if ok else 'FAILED'}] {what}")
        if not ok:
            self.failed.append(what)


def check_codec(spark: Any, events: list[str], check: Checks) -> None:
    variants = [parse_json(e) for e in events]
    df = spark.createDataFrame(list(enumerate(events)), "id int, j string")
    rows = df.selectExpr("id", "parse_json(j) AS v").collect()
    same = sum(bytes(r.v.metadata) == variants[r.id].metadata and bytes(r.v.value) == variants[r.id].value for r in rows)
    check(same == len(events), f"varlake parse_json byte-identical to Spark's on {same}/{len(events)} events")


def timed(label: str, fn: Callable[[], Any]) -> Any:
    t0 = time.perf_counter()
    result = fn()
    print(f"  {label}: {time.perf_counter() - t0:.2f}s")
    return result


def main() -> None:
    from varlake.cli import describe_table, explain_query, output_for, run_query
    from varlake.spark import ingest_json, local_session

    check = Checks()
    started = time.perf_counter()
    events = make_events(N_EVENTS)
    docs = [json.loads(e) for e in events]
    with tempfile.TemporaryDirectory(prefix="varlake-demo-") as tmp:
        root = Path(tmp)
        (root / "in").mkdir()
        n_bad = write_inputs(root / "in", events)
        size = sum(p.stat().st_size for p in (root / "in").iterdir())
        print(f"1. generated {len(events):,} events + {n_bad} bad lines in {N_FILES} files ({size / 1e6:.1f} MB) under {root / 'in'}")

        spark = local_session(
            "local[*]",
            {"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "2g", "spark.sql.files.maxPartitionBytes": "1m"},
        )
        try:
            print("2. codec vs Spark")
            check_codec(spark, events[:2000], check)

            print("3. ingest (Spark) into a shredded table")
            table_path = root / "events"
            result = timed(
                "ingest",
                lambda: ingest_json(
                    spark, root / "in", table_path,
                    columns={"kind": "$.kind::string", "ts": "timestamp_micros(doc:time_us::bigint)"},
                    progress=lambda m: print(f"     {m}"),
                ),
            )
            print(f"  read {result.read:,} = written {result.written:,} + quarantined {result.quarantined:,}"
                  f"  ({result.read / result.seconds:,.0f} lines/s)")
            print(f"  quarantine by reason: {dict(result.reasons)}")
            print(f"  shredding schema: {result.layout.get('doc')}")
            check(result.consistent, "every line was written or quarantined")
            check(result.written == len(events) and result.quarantined == n_bad, f"{len(events)} written, {n_bad} quarantined")
            check(bool(result.layout.get("doc")), "the doc column is shredded")
            table = Table(table_path)

            print("4. queries")
            q1 = "SELECT doc:commit.collection::string AS collection, count(*) AS events FROM {t} GROUP BY 1 ORDER BY 1"
            rows = timed("events per collection", lambda: [r.asDict() for r in run_query(spark, str(table_path), q1).collect()])
            output_for("table").rows(rows, ["collection", "events"])
            want = Counter((d.get("commit") or {}).get("collection") for d in docs)
            check({r["collection"]: r["events"] for r in rows} == dict(want), "counts per collection match the generated events")

            q2 = "SELECT kind, count(*) AS n, min(ts) AS first, max(ts) AS last FROM {t} GROUP BY kind ORDER BY n DESC"
            rows = timed("events per kind", lambda: [r.asDict() for r in run_query(spark, str(table_path), q2).collect()])
            output_for("table").rows(rows, ["kind", "n", "first", "last"])
            check({r["kind"]: r["n"] for r in rows} == dict(Counter(d["kind"] for d in docs)), "counts per kind match")

            cutoff = START_US + int(N_EVENTS * 0.9) * 1_000_003
            predicate = f"doc:time_us::bigint >= {cutoff}"
            q3 = f"SELECT doc:commit.operation::string AS operation, count(*) AS n FROM {{t}} WHERE {predicate} GROUP BY 1 ORDER BY 1"
            print(explain_query(spark, str(table_path), q3))
            rows = timed("late events per operation", lambda: [r.asDict() for r in run_query(spark, str(table_path), q3).collect()])
            output_for("table").rows(rows, ["operation", "n"])
            late = [d for d in docs if d["time_us"] >= cutoff]
            want_ops = Counter((d.get("commit") or {}).get("operation") for d in late)
            check({r["operation"]: r["n"] for r in rows} == dict(want_ops), f"{len(late)} late events, per operation, match")
            plan = table.scan(predicate).plan()
            print(f"  table-layer planner for `{predicate}`: {len(plan.tasks)} of {plan.total_files} files read, "
                  f"{len(plan.skipped)} skipped by Variant path statistics")
            check(len(plan.skipped) > 0, "statistics on the shredded path skip files")
            check(table.scan(predicate, columns=["kind"]).to_arrow().num_rows == len(late), "the pyarrow reader agrees")

            print("5. describe and vacuum")
            info = describe_table(str(table_path))
            output_for("table").rows(
                [{"key": k, "value": info[k]} for k in ("version", "files", "rows", "size_bytes")]
                + [{"key": "shredding.doc", "value": info["shredding"].get("doc")}],
                ["key", "value"],
            )
            check(info["rows"] == len(events), "describe counts every row")
            doomed = table.vacuum(0, dry_run=True, unsafe_retention=True)
            print(f"  vacuum dry-run (retention 0h): {len(doomed)} file(s) would be deleted")
            check(doomed == [], "no unreferenced files after a clean ingest")
        finally:
            spark.stop()
    elapsed = time.perf_counter() - started
    print(f"demo finished in {elapsed:.1f}s")
    if check.failed:
        print(f"demo: {len(check.failed)} check(s) failed: {check.failed}", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    main()
