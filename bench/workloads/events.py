"""Bluesky-Jetstream-shaped firehose events and the five JSONBench queries.

The generator mimics the public Jetstream feed (``did``, ``time_us``, ``kind`` and a
``commit`` with ``rev``, ``operation``, ``collection``, ``rkey``, ``record``, ``cid``;
a few ``identity`` and ``account`` events) with the skews that matter for a columnar
reader: a handful of collections carry most events (likes, follows, posts, reposts),
user activity is Zipf-like, traffic follows a day/night cycle over two days, and record
content varies by collection (posts with replies, embeds, facets; follows whose
``subject`` is a DID string where likes have an object). About 5% of records carry rare
fields or a field with a different type than usual (``createdAt`` as a number, ``langs``
as a string, extra ``labels``/``tags``/``via``), as real firehose data does.

Everything is derived from ``seed``: the user table from ``seed`` alone, part ``k`` from
``(seed, k)``, so parts can be generated in parallel and the bytes never change.

The queries are JSONBench's Bluesky queries (counts by collection; distinct users per
collection for creates; hourly activity; first posters; longest activity spans) in
Spark SQL, with total orders (ties broken by user) so results compare exactly.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workloads.spec import Dialect, Query, Source, Workload

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: events at scale 1.0 (the default `make bench` size)
EVENTS_AT_SCALE_1 = 200_000
START_US = 1_732_147_200_000_000  # 2024-11-21T00:00:00Z
SPAN_US = 2 * 86_400 * 1_000_000  # two days: every hour of the day appears twice

COLLECTIONS: tuple[tuple[str, float], ...] = (
    ("app.bsky.feed.like", 0.50),
    ("app.bsky.graph.follow", 0.17),
    ("app.bsky.feed.post", 0.13),
    ("app.bsky.feed.repost", 0.10),
    ("app.bsky.graph.block", 0.03),
    ("app.bsky.graph.listitem", 0.03),
    ("app.bsky.actor.profile", 0.015),
    ("app.bsky.feed.threadgate", 0.01),
    ("app.bsky.feed.postgate", 0.005),
    ("chat.bsky.actor.declaration", 0.004),
    ("app.bsky.graph.list", 0.003),
    ("app.bsky.feed.generator", 0.002),
    ("app.bsky.graph.starterpack", 0.001),
)
WORDS = (
    "the", "a", "bluesky", "today", "new", "post", "love", "this", "is", "so", "good", "art", "music",
    "news", "vote", "game", "photo", "cat", "dog", "coffee", "morning", "night", "thread", "reply",
    "hello", "world", "open", "source", "data", "friends", "weekend", "☕", "🎉", "こんにちは", "ありがとう",
    "días", "ça", "über", "café", "😂", "🦋", "🔥", "日本", "español", "português",
)
LANGS = (("en",), ("en",), ("en",), ("ja",), ("pt",), ("es",), ("de",), ("en", "ja"), ("fr",), ("ko",))
RARE_RATE = 0.05
_B32_OF_BYTE = bytes(b"abcdefghijklmnopqrstuvwxyz234567"[b % 32] for b in range(256))


def _b32(r: random.Random, n: int) -> str:
    """``n`` random base32 characters (the alphabet of DIDs, record keys and CIDs)."""
    return r.randbytes(n).translate(_B32_OF_BYTE).decode("ascii")


def _users(seed: int, n_users: int) -> tuple[list[str], list[float]]:
    """User DIDs and their cumulative Zipf-like activity weights (shared by every part)."""
    r = random.Random(f"users:{seed}")
    dids = [f"did:plc:{_b32(r, 24)}" for _ in range(n_users)]
    weights = [1.0 / (i + 10) ** 1.1 for i in range(n_users)]
    cum = []
    acc = 0.0
    for w in weights:
        acc += w
        cum.append(acc)
    return dids, cum


def _diurnal_times(r: random.Random, n: int, lo: int, hi: int) -> list[int]:
    """``n`` sorted timestamps in [lo, hi) with a day/night rate cycle (peak ~18:00 UTC)."""
    out = []
    while len(out) < n:
        t = r.randrange(lo, hi)
        hour = ((t - START_US) / 3_600_000_000) % 24
        if r.random() < (1.0 + 0.6 * math.sin(2 * math.pi * (hour - 12) / 24)) / 1.6:
            out.append(t)
    out.sort()
    return out


def _cid(r: random.Random) -> str:
    return "bafyrei" + _b32(r, 52)


def _at_uri(r: random.Random, did: str, collection: str) -> str:
    return f"at://{did}/{collection}/{_b32(r, 13)}"


def _iso(t_us: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t_us // 1_000_000)) + f".{(t_us // 1000) % 1000:03d}Z"


def _text(r: random.Random) -> str:
    return " ".join(r.choices(WORDS, k=r.randint(1, 40)))


def _post(r: random.Random, did: str, other: str, created: str) -> dict[str, Any]:
    rec: dict[str, Any] = {"$type": "app.bsky.feed.post", "createdAt": created, "langs": list(r.choice(LANGS)), "text": _text(r)}
    if r.random() < 0.30:
        root = {"cid": _cid(r), "uri": _at_uri(r, other, "app.bsky.feed.post")}
        parent = root if r.random() < 0.5 else {"cid": _cid(r), "uri": _at_uri(r, other, "app.bsky.feed.post")}
        rec["reply"] = {"parent": parent, "root": root}
    u = r.random()
    if u < 0.12:
        rec["embed"] = {"$type": "app.bsky.embed.images", "images": [
            {"alt": _text(r) if r.random() < 0.4 else "",
             "aspectRatio": {"height": r.choice((1080, 1350, 2000)), "width": r.choice((1080, 1440, 1500))},
             "image": {"$type": "blob", "ref": {"$link": _cid(r)}, "mimeType": "image/jpeg", "size": r.randint(20_000, 990_000)}}
            for _ in range(r.randint(1, 4))]}
    elif u < 0.18:
        rec["embed"] = {"$type": "app.bsky.embed.external", "external": {
            "uri": f"https://example.{r.choice(('com', 'org', 'net'))}/{_b32(r, 8)}", "title": _text(r)[:60], "description": _text(r)}}
    elif u < 0.22:
        rec["embed"] = {"$type": "app.bsky.embed.record", "record": {"cid": _cid(r), "uri": _at_uri(r, other, "app.bsky.feed.post")}}
    if r.random() < 0.15:
        start = r.randint(0, 40)
        rec["facets"] = [{"features": [{"$type": "app.bsky.richtext.facet#link", "uri": f"https://example.com/{_b32(r, 6)}"}],
                          "index": {"byteEnd": start + 20, "byteStart": start}}]
    return rec


def _record(r: random.Random, collection: str, did: str, other: str, created: str) -> dict[str, Any]:
    """The record of a create/update, shaped by collection."""
    if collection == "app.bsky.feed.post":
        return _post(r, did, other, created)
    if collection in ("app.bsky.feed.like", "app.bsky.feed.repost"):
        return {"$type": collection, "createdAt": created,
                "subject": {"cid": _cid(r), "uri": _at_uri(r, other, "app.bsky.feed.post")}}
    if collection in ("app.bsky.graph.follow", "app.bsky.graph.block"):
        return {"$type": collection, "createdAt": created, "subject": other}
    if collection == "app.bsky.graph.listitem":
        return {"$type": collection, "createdAt": created, "list": _at_uri(r, did, "app.bsky.graph.list"), "subject": other}
    if collection == "app.bsky.actor.profile":
        return {"$type": collection, "avatar": {"$type": "blob", "ref": {"$link": _cid(r)}, "mimeType": "image/jpeg",
                                                "size": r.randint(10_000, 900_000)},
                "description": _text(r), "displayName": " ".join(r.choices(WORDS, k=2))}
    if collection == "app.bsky.feed.threadgate":
        return {"$type": collection, "allow": [{"$type": "app.bsky.feed.threadgate#mentionRule"}], "createdAt": created,
                "post": _at_uri(r, did, "app.bsky.feed.post")}
    return {"$type": collection, "createdAt": created, "name": " ".join(r.choices(WORDS, k=3))}


def _oddity(r: random.Random, rec: dict[str, Any], t_us: int) -> None:
    """Give ~5% of records a rare field or a field of an unusual type (in place)."""
    kind = r.randrange(6)
    if kind == 0:
        rec["createdAt"] = t_us // 1000  # epoch millis instead of an ISO string
    elif kind == 1 and "langs" in rec:
        rec["langs"] = rec["langs"][0]  # a string instead of an array
    elif kind == 2:
        rec["labels"] = {"$type": "com.atproto.label.defs#selfLabels", "values": [{"val": r.choice(("nudity", "porn", "graphic-media"))}]}
    elif kind == 3:
        rec["tags"] = r.sample(WORDS, k=r.randint(1, 4))
    elif kind == 4:
        rec["via"] = r.choice(("skeetbot", "Graysky", "deck.blue", 7, True))  # mostly strings, sometimes not
    else:
        rec["subject"] = None if "subject" in rec else {"uri": None}


def _part_lines(seed: int, part: int, parts: int, n_events: int) -> list[str]:
    """The JSON lines of one part (its own time slice of the two days)."""
    n_users = max(50, n_events // 8)
    dids, cum = _users(seed, n_users)
    lo = START_US + SPAN_US * part // parts
    hi = START_US + SPAN_US * (part + 1) // parts
    count = n_events * (part + 1) // parts - n_events * part // parts
    r = random.Random(f"events:{seed}:{part}")
    times = _diurnal_times(r, count, lo, hi)
    users = r.choices(dids, cum_weights=cum, k=count)
    others = r.choices(dids, cum_weights=cum, k=count)
    names = [c for c, _ in COLLECTIONS]
    cweights = [w for _, w in COLLECTIONS]
    collections = r.choices(names, weights=cweights, k=count)
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    lines = []
    seq = 1_000_000_000 + part * 10_000_000
    for t_us, did, other, collection in zip(times, users, others, collections, strict=True):
        u = r.random()
        event: dict[str, Any]
        if u < 0.015:
            seq += 1
            event = {"did": did, "time_us": t_us, "kind": "identity",
                     "identity": {"did": did, "handle": f"{did[8:16]}.bsky.social", "seq": seq, "time": _iso(t_us)}}
        elif u < 0.03:
            seq += 1
            event = {"did": did, "time_us": t_us, "kind": "account",
                     "account": {"active": r.random() < 0.9, "did": did, "seq": seq, "time": _iso(t_us)}}
        else:
            v = r.random()
            operation = "create" if v < 0.90 else ("delete" if v < 0.98 else "update")
            commit: dict[str, Any] = {"rev": _b32(r, 13), "operation": operation, "collection": collection, "rkey": _b32(r, 13)}
            if operation != "delete":
                rec = _record(r, collection, did, other, _iso(t_us - r.randrange(0, 5_000_000)))
                if r.random() < RARE_RATE:
                    _oddity(r, rec, t_us)
                commit["record"] = rec
                commit["cid"] = _cid(r)
            event = {"did": did, "time_us": t_us, "kind": "commit", "commit": commit}
        lines.append(dumps(event))
    return lines


def _write_part(args: tuple[int, int, int, int, str]) -> tuple[str, int, int]:
    seed, part, parts, n_events, path = args
    lines = _part_lines(seed, part, parts, n_events)
    data = ("\n".join(lines) + "\n").encode("utf-8")
    Path(path).write_bytes(data)
    return path, len(lines), len(data)


def event_count(scale: float) -> int:
    return max(1, round(EVENTS_AT_SCALE_1 * scale))


def generate_events(out_dir: Path, n_events: int, seed: int = 2026, parts: int = 8, workers: int = 2) -> Source:
    """Write ``n_events`` events as ``parts`` JSON Lines files (generated in ``workers`` processes)."""
    start = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = [(seed, k, parts, n_events, str(out_dir / f"events-{k:03d}.jsonl")) for k in range(parts)]
    if workers > 1 and n_events >= 50_000:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(_write_part, jobs))
    else:
        done = [_write_part(j) for j in jobs]
    return Source(tuple(Path(p) for p, _, _ in done), sum(n for _, n, _ in done), sum(b for _, _, b in done),
                  time.perf_counter() - start, {"events": n_events, "parts": parts, "seed": seed})


def generate(out_dir: Path, scale: float, seed: int) -> Source:
    return generate_events(out_dir, event_count(scale), seed)


def digest(lines: list[str]) -> str:
    """A content hash of generated lines (what the determinism test compares)."""
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


# --- the relational form ---------------------------------------------------------------------


def relational(spark: "SparkSession", paths: Sequence[str]) -> "DataFrame":
    """Events as typed columns: Spark infers one schema over all the JSON (conflicting types
    become strings, as with any inferred schema), and the commit is flattened into columns."""
    parsed = spark.read.option("samplingRatio", "1.0").json(list(paths))
    commit = [f.name for f in parsed.schema["commit"].dataType.fields]  # type: ignore[attr-defined]
    others = [c for c in parsed.columns if c not in ("did", "time_us", "kind", "commit")]
    return parsed.selectExpr("did", "time_us", "kind", *(f"commit.`{c}` AS commit_{c}" for c in commit), *others)


# --- the queries (JSONBench's Bluesky set) -----------------------------------------------------

_POSTS = "('app.bsky.feed.post', 'app.bsky.feed.repost', 'app.bsky.feed.like')"


def _json(path: str) -> str:
    return f"get_json_object(doc, '$.{path}')"


def _var(path: str, typ: str = "string") -> str:
    return f"v:{path}::{typ}"


def _duck(path: str, typ: str = "VARCHAR") -> str:
    return f"v.{path}::{typ}"



QUERIES: tuple[Query, ...] = (
    Query("Q1", "events per collection", {
        Dialect.JSON: f"""
SELECT {_json('commit.collection')} AS event, count(*) AS cnt
FROM {{t}} GROUP BY 1 ORDER BY cnt DESC, event NULLS FIRST""",
        Dialect.VARIANT: f"""
SELECT {_var('commit.collection')} AS event, count(*) AS cnt
FROM {{t}} GROUP BY 1 ORDER BY cnt DESC, event NULLS FIRST""",
        Dialect.RELATIONAL: """
SELECT commit_collection AS event, count(*) AS cnt
FROM {t} GROUP BY 1 ORDER BY cnt DESC, event NULLS FIRST""",
        Dialect.DUCKDB: f"""
SELECT {_duck('commit.collection')} AS event, count(*) AS cnt
FROM {{t}} GROUP BY 1 ORDER BY cnt DESC, event NULLS FIRST""",
    }),
    Query("Q2", "events and distinct users per collection, creates only", {
        Dialect.JSON: f"""
SELECT {_json('commit.collection')} AS event, count(*) AS cnt, count(DISTINCT {_json('did')}) AS users
FROM {{t}}
WHERE {_json('kind')} = 'commit' AND {_json('commit.operation')} = 'create'
GROUP BY 1 ORDER BY cnt DESC, event""",
        Dialect.VARIANT: f"""
SELECT {_var('commit.collection')} AS event, count(*) AS cnt, count(DISTINCT {_var('did')}) AS users
FROM {{t}}
WHERE {_var('kind')} = 'commit' AND {_var('commit.operation')} = 'create'
GROUP BY 1 ORDER BY cnt DESC, event""",
        Dialect.RELATIONAL: """
SELECT commit_collection AS event, count(*) AS cnt, count(DISTINCT did) AS users
FROM {t}
WHERE kind = 'commit' AND commit_operation = 'create'
GROUP BY 1 ORDER BY cnt DESC, event""",
        Dialect.DUCKDB: f"""
SELECT {_duck('commit.collection')} AS event, count(*) AS cnt, count(DISTINCT {_duck('did')}) AS users
FROM {{t}}
WHERE {_duck('kind')} = 'commit' AND {_duck('commit.operation')} = 'create'
GROUP BY 1 ORDER BY cnt DESC, event""",
    }),
    Query("Q3", "hourly activity of posts, reposts and likes", {
        Dialect.JSON: f"""
SELECT {_json('commit.collection')} AS event,
       hour(timestamp_micros(CAST({_json('time_us')} AS BIGINT))) AS hour_of_day, count(*) AS cnt
FROM {{t}}
WHERE {_json('kind')} = 'commit' AND {_json('commit.operation')} = 'create'
  AND {_json('commit.collection')} IN {_POSTS}
GROUP BY 1, 2 ORDER BY hour_of_day, event""",
        Dialect.VARIANT: f"""
SELECT {_var('commit.collection')} AS event,
       hour(timestamp_micros({_var('time_us', 'bigint')})) AS hour_of_day, count(*) AS cnt
FROM {{t}}
WHERE {_var('kind')} = 'commit' AND {_var('commit.operation')} = 'create'
  AND {_var('commit.collection')} IN {_POSTS}
GROUP BY 1, 2 ORDER BY hour_of_day, event""",
        Dialect.RELATIONAL: f"""
SELECT commit_collection AS event, hour(timestamp_micros(time_us)) AS hour_of_day, count(*) AS cnt
FROM {{t}}
WHERE kind = 'commit' AND commit_operation = 'create' AND commit_collection IN {_POSTS}
GROUP BY 1, 2 ORDER BY hour_of_day, event""",
        Dialect.DUCKDB: f"""
SELECT {_duck('commit.collection')} AS event,
       hour(make_timestamp({_duck('time_us', 'BIGINT')})) AS hour_of_day, count(*) AS cnt
FROM {{t}}
WHERE {_duck('kind')} = 'commit' AND {_duck('commit.operation')} = 'create'
  AND {_duck('commit.collection')} IN {_POSTS}
GROUP BY 1, 2 ORDER BY hour_of_day, event""",
    }),
    Query("Q4", "the first three users to post", {
        Dialect.JSON: f"""
SELECT {_json('did')} AS user_id, timestamp_micros(min(CAST({_json('time_us')} AS BIGINT))) AS first_post_ts
FROM {{t}}
WHERE {_json('kind')} = 'commit' AND {_json('commit.operation')} = 'create'
  AND {_json('commit.collection')} = 'app.bsky.feed.post'
GROUP BY 1 ORDER BY first_post_ts, user_id LIMIT 3""",
        Dialect.VARIANT: f"""
SELECT {_var('did')} AS user_id, timestamp_micros(min({_var('time_us', 'bigint')})) AS first_post_ts
FROM {{t}}
WHERE {_var('kind')} = 'commit' AND {_var('commit.operation')} = 'create'
  AND {_var('commit.collection')} = 'app.bsky.feed.post'
GROUP BY 1 ORDER BY first_post_ts, user_id LIMIT 3""",
        Dialect.RELATIONAL: """
SELECT did AS user_id, timestamp_micros(min(time_us)) AS first_post_ts
FROM {t}
WHERE kind = 'commit' AND commit_operation = 'create' AND commit_collection = 'app.bsky.feed.post'
GROUP BY 1 ORDER BY first_post_ts, user_id LIMIT 3""",
        Dialect.DUCKDB: f"""
SELECT {_duck('did')} AS user_id, make_timestamp(min({_duck('time_us', 'BIGINT')})) AS first_post_ts
FROM {{t}}
WHERE {_duck('kind')} = 'commit' AND {_duck('commit.operation')} = 'create'
  AND {_duck('commit.collection')} = 'app.bsky.feed.post'
GROUP BY 1 ORDER BY first_post_ts, user_id LIMIT 3""",
    }),
    Query("Q5", "the three longest posting activity spans", {
        Dialect.JSON: f"""
SELECT {_json('did')} AS user_id,
       (max(CAST({_json('time_us')} AS BIGINT)) - min(CAST({_json('time_us')} AS BIGINT))) DIV 1000 AS activity_span_ms
FROM {{t}}
WHERE {_json('kind')} = 'commit' AND {_json('commit.operation')} = 'create'
  AND {_json('commit.collection')} = 'app.bsky.feed.post'
GROUP BY 1 ORDER BY activity_span_ms DESC, user_id LIMIT 3""",
        Dialect.VARIANT: f"""
SELECT {_var('did')} AS user_id,
       (max({_var('time_us', 'bigint')}) - min({_var('time_us', 'bigint')})) DIV 1000 AS activity_span_ms
FROM {{t}}
WHERE {_var('kind')} = 'commit' AND {_var('commit.operation')} = 'create'
  AND {_var('commit.collection')} = 'app.bsky.feed.post'
GROUP BY 1 ORDER BY activity_span_ms DESC, user_id LIMIT 3""",
        Dialect.RELATIONAL: """
SELECT did AS user_id, (max(time_us) - min(time_us)) DIV 1000 AS activity_span_ms
FROM {t}
WHERE kind = 'commit' AND commit_operation = 'create' AND commit_collection = 'app.bsky.feed.post'
GROUP BY 1 ORDER BY activity_span_ms DESC, user_id LIMIT 3""",
        Dialect.DUCKDB: f"""
SELECT {_duck('did')} AS user_id,
       (max({_duck('time_us', 'BIGINT')}) - min({_duck('time_us', 'BIGINT')})) // 1000 AS activity_span_ms
FROM {{t}}
WHERE {_duck('kind')} = 'commit' AND {_duck('commit.operation')} = 'create'
  AND {_duck('commit.collection')} = 'app.bsky.feed.post'
GROUP BY 1 ORDER BY activity_span_ms DESC, user_id LIMIT 3""",
    }),
)

def workload(seed: int) -> Workload:
    """The events workload (JSONBench's queries have no literals to vary, so ``seed`` only
    matters to the generator, which receives it again at generation time)."""
    del seed
    return WORKLOAD


WORKLOAD = Workload(
    name="events",
    title="Bluesky-shaped firehose events, JSONBench queries",
    queries=QUERIES,
    generate=generate,
    relational=relational,
    paths=("$.kind", "$.did", "$.time_us", "$.commit.collection", "$.commit.operation"),
)
