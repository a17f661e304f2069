"""`make demo`: the main job end to end on local Spark, at a small scale.

Today it shows the codec against Spark: it generates events, parses them with
varlake and with Spark's ``parse_json``, checks the bytes agree, and queries paths
both ways. As the table and pipeline layers land, the demo grows into
ingest -> table -> query.
"""

from __future__ import annotations

import json
import random
import time

from varlake import parse_json


def make_events(n: int, seed: int = 7) -> list[str]:
    """Firehose-like JSON events (a small stand-in for the benchmark generator)."""
    rng = random.Random(seed)
    kinds = ["commit", "identity", "account"]
    collections = ["app.bsky.feed.post", "app.bsky.feed.like", "app.bsky.graph.follow", "app.bsky.feed.repost"]
    out = []
    for i in range(n):
        doc: dict[str, object] = {
            "did": f"did:plc:{rng.randrange(10**6):06d}",
            "time_us": 1_700_000_000_000_000 + i * 1_000_003,
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


def main() -> None:
    from pyspark.sql import SparkSession

    events = make_events(2000)
    t0 = time.perf_counter()
    variants = [parse_json(e) for e in events]
    t1 = time.perf_counter()
    print(f"varlake parsed {len(events)} events in {t1 - t0:.3f}s")

    spark = (
        SparkSession.builder.master("local[*]").appName("varlake-demo")
        .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC").getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        df = spark.createDataFrame([(i, e) for i, e in enumerate(events)], "id int, j string")
        rows = df.selectExpr("id", "parse_json(j) AS v").orderBy("id").collect()
        same = sum(
            bytes(r.v.metadata) == variants[r.id].metadata and bytes(r.v.value) == variants[r.id].value for r in rows
        )
        print(f"byte-identical to Spark parse_json: {same}/{len(rows)}")
        counts = (
            df.selectExpr("parse_json(j):commit.collection::string AS c").groupBy("c").count().orderBy("c").collect()
        )
        mine: dict[str | None, int] = {}
        for v in variants:
            c = v.get("$.commit.collection")
            key = None if c is None else c.to_python()
            mine[key] = mine.get(key, 0) + 1
        print("events per collection (Spark | varlake):")
        for r in counts:
            print(f"  {r.c!s:28} {r['count']:6} | {mine.get(r.c, 0)}")
        if same != len(rows) or any(mine.get(r.c, 0) != r["count"] for r in counts):
            raise SystemExit("demo: varlake and Spark disagree")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
