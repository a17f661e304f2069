"""The benchmark's generators and comparison harness (bench/), at a tiny scale.

The benchmark is only worth its numbers if (1) its data is the same on every run and
(2) every storage answers every query identically, so these tests run the real
harness over every storage -- JSON strings, Spark Variant, Spark shredded, varlake,
relational, DuckDB on both file sets -- and require equal answers, non-empty results
and measured bytes; and they show that the answer check does catch a wrong query.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import harness  # noqa: E402
from workloads import Dialect, Workload, events, tpch_nested  # noqa: E402

ALL_STORAGES = (*harness.STORAGE_KEYS, "duckdb_spark_shredded")
SEED = 7


# --- generators -------------------------------------------------------------------------------------


def _read(paths: tuple[Path, ...]) -> list[bytes]:
    return [p.read_bytes() for p in paths]


def test_events_are_deterministic_per_seed(tmp_path: Path) -> None:
    a = events.generate_events(tmp_path / "a", 4000, seed=SEED, parts=3, workers=1)
    b = events.generate_events(tmp_path / "b", 4000, seed=SEED, parts=3, workers=1)
    c = events.generate_events(tmp_path / "c", 4000, seed=SEED + 1, parts=3, workers=1)
    assert a.rows == b.rows == 4000
    assert _read(a.paths) == _read(b.paths)
    assert _read(a.paths) != _read(c.paths)
    # parts generated in worker processes are the same bytes as in-process ones
    d = events.generate_events(tmp_path / "d", 60_000, seed=SEED, parts=2, workers=2)
    assert [p.read_bytes() for p in d.paths] == [
        ("\n".join(events._part_lines(SEED, k, 2, 60_000)) + "\n").encode() for k in range(2)]


def test_events_have_the_jetstream_shape_skew_and_oddities(tmp_path: Path) -> None:
    src = events.generate_events(tmp_path, 20_000, seed=SEED, parts=2, workers=1)
    docs = [json.loads(line) for p in src.paths for line in p.read_text().splitlines()]
    assert len(docs) == 20_000
    times = [d["time_us"] for d in docs]
    assert times == sorted(times), "the firehose is in time order"
    kinds = Counter(d["kind"] for d in docs)
    assert kinds["commit"] > 0.95 * len(docs) and kinds["identity"] and kinds["account"]
    commits = [d["commit"] for d in docs if d["kind"] == "commit"]
    assert all({"rev", "operation", "collection", "rkey"} <= c.keys() for c in commits)
    collections = Counter(c["collection"] for c in commits)
    assert collections.most_common(1)[0][0] == "app.bsky.feed.like"
    assert 0.4 < collections["app.bsky.feed.like"] / len(commits) < 0.6
    assert len(collections) >= 10
    users = Counter(d["did"] for d in docs)
    top = sum(n for _, n in users.most_common(len(users) // 100))
    assert top > 0.05 * len(docs), "the busiest 1% of users make well over 1% of events"
    records = [c["record"] for c in commits if "record" in c]
    assert all("record" not in c and "cid" not in c for c in commits if c["operation"] == "delete")

    def odd(r: dict[str, Any]) -> bool:
        return (not isinstance(r.get("createdAt", ""), str) or isinstance(r.get("langs", []), str)
                or bool({"labels", "tags", "via"} & r.keys()) or r.get("subject", "") is None
                or r.get("subject") == {"uri": None})

    share = sum(map(odd, records)) / len(records)
    assert 0.025 < share < 0.08, f"{share:.3f} of records carry rare or differently typed fields"
    # the same field has different types across records (follows: DID string, likes: object)
    subjects = {type(r["subject"]).__name__ for r in records if "subject" in r}
    assert {"str", "dict"} <= subjects


def test_tpch_documents_are_deterministic_and_nested(tmp_path: Path) -> None:
    a = tpch_nested.generate_tpch(tmp_path / "a", 0.001, parts=3)
    b = tpch_nested.generate_tpch(tmp_path / "b", 0.001, parts=3)
    assert a.rows == 1500 and a.details["lineitems"] == 6005
    assert _read(a.paths) == _read(b.paths)
    docs = [json.loads(line) for p in a.paths for line in p.read_text().splitlines()]
    assert [d["o_orderkey"] for d in docs] == sorted(d["o_orderkey"] for d in docs)
    assert sum(len(d["lineitems"]) for d in docs) == 6005
    first = docs[0]
    assert set(first["customer"]) >= {"c_custkey", "c_mktsegment", "nation"}
    assert set(first["customer"]["nation"]) == {"n_nationkey", "n_name", "n_regionkey"}
    assert [li["l_linenumber"] for li in first["lineitems"]] == list(range(1, len(first["lineitems"]) + 1))
    assert dt.date.fromisoformat(first["o_orderdate"])


def test_tpch_parameters_are_seeded_and_start_with_the_validation_values() -> None:
    p = tpch_nested.parameters(SEED)
    assert p == tpch_nested.parameters(SEED)
    assert p != tpch_nested.parameters(SEED + 1)
    for name, sets in p.items():
        assert sets[0] == tpch_nested.VALIDATION[name]
        assert len(sets) == tpch_nested.PARAM_SETS
    assert all(60 <= int(s["delta"]) <= 120 for s in p["Q1"])
    assert all(s["mode1"] != s["mode2"] for s in p["Q12"])


def test_every_query_is_written_for_every_dialect() -> None:
    for wl in (tpch_nested.workload(SEED), events.workload(SEED)):
        for q in wl.queries:
            assert set(q.sql) == set(Dialect), f"{wl.name} {q.name}"
            for d in Dialect:
                text = q.render(d, "T", 1)
                assert "{" not in text and "}" not in text, f"{wl.name} {q.name} {d}: unfilled field"


# --- answer checks ----------------------------------------------------------------------------------


def test_canonical_values_agree_across_engines() -> None:
    utc = dt.datetime(2024, 11, 21, 3, 4, 5, 123456)
    local_view = dt.datetime.fromtimestamp(utc.replace(tzinfo=dt.timezone.utc).timestamp())  # what PySpark returns
    assert harness.canonical_value(local_view, "spark") == harness.canonical_value(utc, "duckdb")
    assert harness.canonical_value(decimal.Decimal("1.50"), "spark") == harness.canonical_value(1.5, "duckdb")
    assert harness.canonical_value(dt.date(1995, 3, 15), "spark") == "1995-03-15"
    assert harness.compare_rows([(1.0, "a")], [(1.0 + 1e-9, "a")]) is None
    assert harness.compare_rows([(0.049998, "a")], [(0.0499984, "a")]) is None  # avg: decimal vs double
    assert "row 0" in (harness.compare_rows([(1.0, "a")], [(1.1, "a")]) or "")
    assert "row 1" in (harness.compare_rows([(1.0,), (2.0,)], [(1.0,), (3.0,)]) or "")
    assert "rows" in (harness.compare_rows([(1.0,)], []) or "")
    assert harness.compare_rows([(None, "x")], [(None, "x")]) is None
    assert harness.compare_rows([(None,)], [(0.0,)]) is not None


# --- every storage, the same answers -------------------------------------------------------------------


def _check(result: harness.WorkloadResult, expected_rows: dict[str, int] | None = None) -> None:
    assert not result.mismatches, "\n".join(result.mismatches)
    assert set(result.storages) == set(ALL_STORAGES)
    for key, storage in result.storages.items():
        assert storage.error is None, f"{key}: {storage.error}"
        assert storage.bytes_on_disk and storage.files, key
        for q in result.queries:
            qr = storage.queries[q.name]
            assert qr.error is None, f"{key} {q.name}: {qr.error}"
            assert qr.rows > 0, f"{key} {q.name}: an empty answer proves nothing"
            assert qr.median_bytes and qr.median_bytes > 0, f"{key} {q.name}: no bytes read measured"
            if expected_rows:
                assert qr.rows == expected_rows[q.name], f"{key} {q.name}"


@pytest.mark.spark
def test_every_storage_answers_every_events_query_the_same(spark: Any, tmp_path: Path) -> None:
    wl = events.workload(SEED)
    src = events.generate_events(tmp_path / "src", 3000, seed=SEED, parts=2, workers=1)
    result = harness.run_workload(spark, wl, src, tmp_path / "st", runs=0, log=lambda _: None)
    _check(result)
    rel = result.storages["relational"]
    assert rel.queries["Q1"].rows >= 10  # one row per collection (and the non-commit events)
    # projection is real: relational reads less for one column than the JSON text is
    assert rel.queries["Q1"].median_bytes < result.storages["json_strings"].queries["Q1"].median_bytes
    assert result.storages["varlake"].note  # the write reports its layout


@pytest.mark.spark
def test_every_storage_answers_every_tpch_query_the_same(spark: Any, tmp_path: Path) -> None:
    wl = tpch_nested.workload(SEED)
    src = tpch_nested.generate_tpch(tmp_path / "src", 0.002, parts=2)
    result = harness.run_workload(spark, wl, src, tmp_path / "st", runs=1, log=lambda _: None)
    _check(result)
    q1 = result.storages["relational"].queries["Q1"]
    assert q1.rows == 4 and len(q1.seconds) == 1  # returnflag x linestatus groups; one timed run
    for q in wl.queries:  # every query explodes the line items and reads them field by field
        note = result.storages["varlake"].queries[q.name].note
        assert "shredded read 2/2 files" in note and "exploded from element leaves" in note, (q.name, note)


@pytest.mark.spark
def test_a_wrong_answer_is_reported(spark: Any, tmp_path: Path) -> None:
    wl = events.workload(SEED)
    q1 = wl.queries[0]
    wrong = dataclasses.replace(q1, sql={**q1.sql, Dialect.JSON: q1.sql[Dialect.JSON].replace(
        "FROM {t}", "FROM {t} WHERE get_json_object(doc, '$.kind') = 'commit'")})
    broken = dataclasses.replace(q1, name="Qx", sql={**q1.sql, Dialect.JSON: "SELECT no_such_column FROM {t}"})
    bad: Workload = dataclasses.replace(wl, queries=(wrong, broken))
    src = events.generate_events(tmp_path / "src", 1500, seed=SEED, parts=1, workers=1)
    result = harness.run_workload(spark, bad, src, tmp_path / "st", runs=0, include=["json_strings", "relational"],
                                  log=lambda _: None)
    assert any(m.startswith("json_strings Q1 run 0 differs from relational") for m in result.mismatches)
    assert any(m.startswith("json_strings Qx run 0 failed") for m in result.mismatches)
    assert result.storages["json_strings"].queries["Qx"].error
