"""The benchmark at scale (issue 16): cached sources, runs without a warm-up round, read paths
in the report, and the scaling report (bench/scaling.py), at a tiny size."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import harness  # noqa: E402
import run  # noqa: E402
import scaling  # noqa: E402
from workloads import events  # noqa: E402

SEED = 11


def test_generated_sources_are_cached_by_scale_seed_and_code(tmp_path: Path) -> None:
    wl = events.workload(SEED)
    cache = tmp_path / "cache"
    miss = harness.cached_source(wl, 0.01, SEED, tmp_path / "scratch", cache, log=lambda _: None)
    assert miss.details["cache"] == "miss" and miss.rows == 2000
    assert all(p.is_file() and cache in p.parents for p in miss.paths)
    hit = harness.cached_source(wl, 0.01, SEED, tmp_path / "scratch", cache, log=lambda _: None)
    assert hit.details["cache"] == "hit"
    assert (hit.paths, hit.rows, hit.bytes) == (miss.paths, miss.rows, miss.bytes)
    fresh = events.generate_events(tmp_path / "fresh", 2000, seed=SEED)
    assert [p.read_bytes() for p in hit.paths] == [p.read_bytes() for p in fresh.paths]
    # another seed is another entry; a damaged entry is generated again, not trusted
    other = harness.cached_source(wl, 0.01, SEED + 1, tmp_path / "scratch", cache, log=lambda _: None)
    assert other.details["cache"] == "miss" and other.paths[0].parent != hit.paths[0].parent
    hit.paths[0].write_bytes(b"{}\n")
    logged: list[str] = []
    again = harness.cached_source(wl, 0.01, SEED, tmp_path / "scratch", cache, log=logged.append)
    assert again.details["cache"] == "miss" and logged
    assert again.paths[0].read_bytes() == fresh.paths[0].read_bytes()
    assert not list(cache.glob(".partial-*"))
    off = harness.cached_source(wl, 0.01, SEED, tmp_path / "scratch", None)
    assert off.details["cache"] == "off" and tmp_path / "scratch" in off.paths[0].parents


def test_scaling_sizes_are_millions_of_events() -> None:
    args = scaling.parse_args(["--sizes", "1,0.25,0.5", "--storages", "varlake"])
    assert args.size_list == [0.25, 0.5, 1.0]
    assert scaling.scale_of(1.0) == 5.0 and events.event_count(scaling.scale_of(0.25)) == 250_000
    assert set(args.storage_list) == {"varlake", "relational"}  # answers are always checked against relational
    with pytest.raises(SystemExit):
        scaling.parse_args(["--sizes", "0"])
    with pytest.raises(SystemExit):
        scaling.parse_args(["--storages", "nosuch"])


@pytest.mark.spark
def test_reports_say_which_read_path_each_query_took(spark: Any, tmp_path: Path) -> None:
    full = events.workload(SEED)
    wl = dataclasses.replace(full, queries=full.queries[:2])  # two queries keep it quick; all run in test_bench_harness
    src = events.generate_events(tmp_path / "src", 2000, seed=SEED, parts=2, workers=1)
    # no warm-up round (the larger sizes of a scaling run): the first timed run records rows and read paths
    result = harness.run_workload(spark, wl, src, tmp_path / "st", runs=1, include=["relational", "varlake"],
                                  log=lambda _: None, warm_up=False)
    assert not result.mismatches, result.mismatches
    assert {"load relational", "load varlake", "round 1"} <= set(result.phases) and "round 0" not in result.phases
    for q in wl.queries:
        v = result.storages["varlake"].queries[q.name]
        assert len(v.seconds) == 1 and v.rows > 0
        assert "read" in v.note and "files" in v.note, v.note  # e.g. "shredded read 2/2 files"
    records = [scaling.size_record(0.002, result, 1.0, ([0.1], [0.2]), False)] * 2

    # bench/run.py: the query-time table carries a read-path column, and issue 16's targets are reported
    summ = run.summary(result)
    text = "\n".join(run.workload_markdown(result, summ, 1, "events.png"))
    assert "(d) varlake read path |" in text
    for q in wl.queries:
        row = next(line for line in text.splitlines() if line.startswith(f"| {q.name} {q.title} |"))
        assert row.rstrip(" |").endswith(result.storages["varlake"].queries[q.name].note)
    assert "(issue 16) varlake within 1.2x of relational on every query" in text
    assert set(summ["targets_issue16"]["no_whole_variant_read"]["measured"]) == {q.name for q in wl.queries}

    # bench/scaling.py: tables per size, the read path per query, and a chart
    doc = {"generated_at": "now", "machine": {"cpu": "cpu", "cores": 2, "memory_gb": 1.0}, "versions": {"x": "1"},
           "config": {"sizes": [0.002, 0.002], "runs": 1, "warm_up": "first", "seed": SEED, "master": "local[2]"},
           "workloads": {"events": {"sizes": json.loads(json.dumps(records))}}, "wall_seconds": 60.0, "finished": True}
    scaling.write_outputs(doc, tmp_path)
    md = (tmp_path / "SCALING.md").read_text()
    assert (tmp_path / "scaling_events.png").stat().st_size > 10_000
    assert json.loads((tmp_path / "scaling.json").read_text())["finished"] is True
    assert "### Total time relative to (e) relational" in md and "| 2k | " in md
    assert md.count("shredded read 2/2 files") + md.count("variant read 2/2 files") >= 2 * len(wl.queries)
    assert "every run of every query on every storage returned relational's rows" in md

    # a bench/run.py results.json joins the report as a point of its own, said to come from there
    results = {"generated_at": "then", "config": {"scale": 0.005}, "wall_seconds": 1.0,
               "machine": {"load_average_at_start": [0.5], "load_average_at_end": [0.6]},
               "workloads": {"events": {**result.to_json(), "source": {**result.to_json()["source"], "rows": 1000}}}}
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert scaling.main(["--report-only", "--out", str(tmp_path), "--add-results", str(tmp_path / "results.json")]) == 0
    md = (tmp_path / "SCALING.md").read_text()
    assert "| 1k | " in md and "bench/run.py at scale 0.005 (then)" in md and "| 2k | " in md
