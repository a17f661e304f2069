"""The planner's numpy pre-filter on integral bounds (``read.file_index``) keeps a superset
of what the exact per-file check keeps, and a plan equals the per-file plan file for file."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.delta.stats import file_stats
from varlake.expr import And, Column, Comparison, FileStats, Literal, SkippingEvaluator
from varlake.read.file_index import IntBounds, bound_conjunct
from varlake.read.planner import (
    PLACE_PARTITION_SKIPPED,
    PLACE_PUT_BACK,
    PLACE_READ,
    PLACE_STATS_SKIPPED,
    Residuals,
    bind_filter,
    partition_types,
    plan_scan,
)
from varlake.table import Table

LONG = 2**63 - 1
bounds = st.one_of(st.none(), st.integers(-6, 6), st.sampled_from([-LONG - 1, LONG]))
ops = st.sampled_from(["<", "<=", ">", ">=", "="])
literals = st.one_of(st.integers(-7, 7), st.sampled_from([-LONG - 1, LONG]))


@settings(max_examples=400, deadline=None)
@given(lo=bounds, hi=bounds, nulls=st.one_of(st.none(), st.integers(0, 3)), n=st.one_of(st.none(), st.integers(0, 3)),
       op=ops, value=literals, other=st.integers(-7, 7))  # fmt: skip
def test_prefilter_excludes_only_what_the_evaluator_excludes(lo, hi, nulls, n, op, value, other) -> None:
    col = Column(("id",), "long")
    conjunct = Comparison(op, col, Literal(value, "long"))
    test = bound_conjunct(conjunct, ())
    assert test is not None
    stats = FileStats(
        num_records=n,
        min_values={("id",): lo} if lo is not None else {},
        max_values={("id",): hi} if hi is not None else {},
        null_count={("id",): nulls} if nulls is not None else {},
    )
    excluded = IntBounds([(lo, hi)]).excluded(op, value, np.array([0]))
    if excluded[0]:  # never a file the exact check keeps, alone or in a conjunction
        assert not SkippingEvaluator(conjunct).might_match(stats)
        both = And(Comparison(">", Column(("x",), "long"), Literal(other, "long")), conjunct)
        assert not SkippingEvaluator(both).might_match(stats)


SCHEMA = {"type": "struct", "fields": [
    {"name": n, "type": t, "nullable": True, "metadata": {}}
    for n, t in (("id", "long"), ("part", "string"), ("x", "integer"), ("s", "string"))]}  # fmt: skip

files = st.lists(
    st.tuples(st.sampled_from(["a", "b", None]), bounds, bounds, st.one_of(st.none(), st.integers(0, 4)),
              st.one_of(st.none(), st.integers(-3, 3))),
    min_size=0, max_size=12,
)  # fmt: skip
comparisons = st.builds(lambda c, op, v: f"{c} {op} {v}", st.sampled_from(["id", "x"]), ops, st.integers(-7, 7))
conjuncts = st.one_of(
    comparisons,
    st.sampled_from(["part = 'a'", "part <> 'b'", "part IS NULL", "CAST(s AS INT) = 1", "s = 's1'", "id IS NULL"]),
    st.builds(lambda a, b: f"({a} OR {b})", comparisons, comparisons),
    st.builds(lambda a: f"NOT ({a})", comparisons),
)
filters = st.lists(conjuncts, min_size=1, max_size=4).map(" AND ".join)


def _table(folder: Path, spec: list[tuple]) -> Table:
    log = folder / "_delta_log"
    log.mkdir(parents=True)
    lines = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(SCHEMA),
                      "partitionColumns": ["part"], "configuration": {}, "createdTime": 0}},
    ]  # fmt: skip
    for i, (part, lo, hi, n, x) in enumerate(spec):
        mins = {k: v for k, v in (("id", lo), ("x", x), ("s", "s0")) if v is not None}
        maxs = {k: v for k, v in (("id", hi), ("x", x), ("s", "s9")) if v is not None}
        stats = {"minValues": mins, "maxValues": maxs, "nullCount": {"id": 0}}
        if n is not None:
            stats["numRecords"] = n
        lines.append({"add": {"path": f"f{i}.parquet", "partitionValues": {"part": part}, "size": 1,
                              "modificationTime": 0, "dataChange": True, "stats": json.dumps(stats)}})  # fmt: skip
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    return Table(str(folder))


@settings(max_examples=150, deadline=None)
@given(spec=files, where=filters)
def test_plan_equals_the_per_file_check(spec, where) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        table = _table(Path(tmp) / "t", spec)
        snapshot = table.snapshot()
        schema = snapshot.schema
        plan = plan_scan(snapshot, table.log.root_location, where)
        again = plan_scan(snapshot, table.log.root_location, where)  # the cached per-snapshot state
        residuals = Residuals(bind_filter(where, schema), partition_types(schema, ("part",)), "UTC")
        places: dict[int, list[str]] = {p: [] for p in range(4)}
        for add in snapshot.files:
            stats = file_stats(add.stats, schema, add.partition_values)
            places[residuals.of(add.partition_values).place(stats)[0]].append(add.path)
        for p in (plan, again):
            read = [a for a in (t.add.path for t in p.tasks)]
            assert sorted(read) == sorted(places[PLACE_READ] + places[PLACE_PUT_BACK]), where
            assert [t.add.path for t in p.put_back_tasks] == places[PLACE_PUT_BACK], where
            assert [t.add.path for t in p.skipped_by_partition] == places[PLACE_PARTITION_SKIPPED], where
            assert [t.add.path for t in p.skipped_by_stats] == places[PLACE_STATS_SKIPPED], where
            assert p.num_skipped == len(p.skipped) and p.total_files == len(spec)
            order = [a.path for a in snapshot.files]
            assert read == [f for f in order if f in set(read)]  # tasks in the snapshot's order
            for t in p.tasks + p.skipped:  # each task's stats and residual as the per-file check has them
                assert t.stats == file_stats(t.add.stats, schema, t.add.partition_values)
                assert t.residual == residuals.of(t.add.partition_values).filter
        assert plan == again


def test_a_scan_given_a_snapshot_plans_it_without_listing_the_log(tmp_path: Path, monkeypatch) -> None:
    import pyarrow as pa

    table = Table.create(tmp_path / "t", "id bigint")
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    held = table.snapshot()
    table.append(pa.table({"id": pa.array([3], pa.int64())}))
    assert len(table.scan("id > 0").plan().tasks) == 2  # the latest version, listed
    monkeypatch.setattr(table.log, "snapshot", lambda *a, **k: (_ for _ in ()).throw(AssertionError("listed")))
    plan = table.scan("id > 0", snapshot=held).plan()
    assert plan.version == held.version and len(plan.tasks) == 1
    assert table.scan(snapshot=held).to_arrow().column("id").to_pylist() == [1, 2]


def test_bounds_decoded_group_by_group_equal_bounds_decoded_at_once(tmp_path: Path) -> None:
    from varlake.read.file_index import file_index

    spec = [(("a", "b", None)[i % 3], i, i + 4, 1, i % 5) for i in range(30)]
    table = _table(tmp_path / "t", spec)
    held = table.snapshot()
    wheres = ["part = 'a' AND id > 12", "part = 'b' AND id < 9", "part IS NULL AND id >= 20", "id > 12", "x < 2"]
    for where in wheres:  # each plan decodes the bounds of the files its partitions keep
        fresh = Table(str(tmp_path / "t")).snapshot()  # decodes every file's bounds at once
        once = plan_scan(fresh, table.log.root_location, where.split(" AND ")[-1])
        assert once.total_files == 30
        got = plan_scan(held, table.log.root_location, where)
        expected = plan_scan(fresh, table.log.root_location, where)
        assert [t.add.path for t in got.tasks] == [t.add.path for t in expected.tasks], where
        assert [t.add.path for t in got.skipped_by_stats] == [t.add.path for t in expected.skipped_by_stats], where
    bounds = file_index(held, table.log.root_location).bounds(("id",))
    assert bounds.decoded.all()
    assert bounds.lo.tolist() == list(range(30)) and bounds.hi.tolist() == [i + 4 for i in range(30)]
