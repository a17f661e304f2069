"""Both writers at once (issue 31, item 4): varlake (Python and Spark) and delta-spark 4.4
commit to one table on local disk at the same time.

- appends from all sides: every row lands exactly once;
- MERGE on one side against DELETE on the other: the loser is refused with its named error
  (varlake's ``Concurrent...Error``, delta-spark's ``Concurrent...Exception``), nothing of
  it is committed, and after its retry the table equals the serial order winner-then-loser.
  Each refusal is made certain, not left to timing: varlake's by running delta-spark's
  change inside varlake's commit (after it read, before it writes the log), delta-spark's by
  a gate in its MERGE's source that holds the running MERGE until varlake committed;
- OPTIMIZE on one side against appends on the other: no refusal, every row once.

delta-spark's writes run in a thread inside the oracle (``oracles.jobs``) so that both
sides commit at once.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from oracles import jobs
from oracles.delta_spark import plain
from varlake import Table
from varlake.delta import transaction
from varlake.write.changes.rows import RETRYABLE



def _ids(table: Table) -> list[int]:
    return sorted(table.scan(columns=["id"]).to_arrow().column("id").to_pylist())


def _state(table: Table) -> dict[int, int]:
    rows = table.scan(columns=["id", "n"]).to_arrow().to_pylist()
    assert len({r["id"] for r in rows}) == len(rows), "a row is duplicated"
    return {r["id"]: r["n"] for r in rows}


def _oracle_state(oracle, path: Path) -> dict[int, int]:
    rows = oracle.rows(path, "id, n", order_by="id")
    assert len({r["id"] for r in rows}) == len(rows), "delta-spark reads a duplicated row"
    return {r["id"]: r["n"] for r in rows}


def _inside_next_commit(monkeypatch, action) -> list[int]:
    """Run ``action()`` inside varlake's next commit, after it read the table and before it
    writes the log (the other writer wins the race); returns the versions it ran before."""
    original = transaction.Transaction.commit
    fired: list[int] = []

    def commit(self, *args, **kwargs):
        if not fired:
            fired.append(self.snapshot.version)
            action()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(transaction.Transaction, "commit", commit)
    return fired


def test_appends_from_varlake_python_spark_and_delta_spark_land_once(delta_spark, spark, tmp_path):
    from varlake import spark as vs

    path = tmp_path / "appends"
    table = Table.create(str(path), "id bigint, src string, v variant")
    spark_batches, theirs = 3, 12
    jobs.start(delta_spark, "appends", f"""
def _job():
    for i in range({theirs}):
        rows = [(200000 + 2 * i, "delta-spark", '{{"i": %d}}' % i), (200001 + 2 * i, "delta-spark", '[%d]' % i)]
        (spark.createDataFrame(rows, "id bigint, src string, j string")
            .selectExpr("id", "src", "parse_json(j) AS v")
            .write.format("delta").mode("append").save({str(path)!r}))
    return {theirs}
""")
    failures: list[BaseException] = []

    def spark_appends() -> None:
        try:
            for i in range(spark_batches):
                rows = [(100000 + 2 * i, "varlake-spark", f'{{"s": {i}}}'), (100001 + 2 * i, "varlake-spark", "null")]
                df = spark.createDataFrame(rows, "id bigint, src string, j string").selectExpr("id", "src", "parse_json(j) AS v")
                vs.write(df, str(path), "append")
        except BaseException as exc:  # noqa: BLE001 -- reported by the test
            failures.append(exc)

    thread = threading.Thread(target=spark_appends)
    thread.start()
    # varlake's Python appends go on for as long as delta-spark's do (at least 12), so the two
    # really race; the count is bounded by the oracle's job
    ours = 0
    while ours < 12 or (ours < 60 and not jobs.done(delta_spark, "appends")):
        table.append([{"id": 2 * ours, "src": "varlake", "v": {"p": ours}}, {"id": 2 * ours + 1, "src": "varlake", "v": "x"}])
        ours += 1
    thread.join(timeout=600)
    assert jobs.wait(delta_spark, "appends") == theirs
    assert failures == []

    expected = (
        [x for i in range(ours) for x in (2 * i, 2 * i + 1)]
        + [x for i in range(spark_batches) for x in (100000 + 2 * i, 100001 + 2 * i)]
        + [x for i in range(theirs) for x in (200000 + 2 * i, 200001 + 2 * i)]
    )
    fresh = Table(str(path))
    assert _ids(fresh) == sorted(expected)  # every row once
    rows = fresh.scan(filter="id = 200002").to_arrow().to_pylist()
    assert rows[0]["src"] == "delta-spark" and plain(rows[0]["v"]) == {"$variant": '{"i":1}'}
    theirs_read = delta_spark.sql(f"SELECT src, count(*) AS c, count(DISTINCT id) AS d FROM delta.`{path}` GROUP BY src ORDER BY src")
    assert theirs_read == [
        {"src": "delta-spark", "c": 2 * theirs, "d": 2 * theirs},
        {"src": "varlake", "c": 2 * ours, "d": 2 * ours},
        {"src": "varlake-spark", "c": 2 * spark_batches, "d": 2 * spark_batches},
    ]
    # one version per append, none lost or doubled, as both sides list the log
    assert fresh.version == ours + spark_batches + theirs
    history = delta_spark.sql(f"DESCRIBE HISTORY delta.`{path}`")
    assert sorted(h["version"] for h in history) == list(range(fresh.version + 1))


def test_merge_against_delete_follows_deltas_conflict_rules_on_both_sides(delta_spark, tmp_path, monkeypatch):
    path = tmp_path / "merge_delete"
    table = Table.create(str(path), "id bigint, n bigint, v variant")
    table.append([{"id": i, "n": 0, "v": {"i": i}} for i in range(40)])
    table.append([{"id": i, "n": 0, "v": {"i": i}} for i in range(40, 80)])
    model = {i: 0 for i in range(80)}
    where = f"delta.`{path}`"

    # 1. varlake's DELETE read the table; delta-spark's MERGE commits first, rewriting the file
    #    the DELETE changes and adding a file of rows it matches: varlake refuses its commit
    #    and commits nothing.
    fired = _inside_next_commit(monkeypatch, lambda: delta_spark.execute(
        f"MERGE INTO {where} t USING (SELECT id FROM range(0, 40, 2)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET n = t.n + 1"
    ))
    with pytest.raises(RETRYABLE) as refused:
        table.delete("id % 4 = 1 AND id < 40")
    names = [type(refused.value).__name__]
    assert fired == [2]
    model.update({i: model[i] + 1 for i in range(0, 40, 2)})
    assert _state(Table(str(path))) == model  # the MERGE, and nothing of the refused DELETE
    result = table.delete("id % 4 = 1 AND id < 40", retries=2)  # the retry, on top of the MERGE
    assert result.num_deleted_rows == 10
    for i in range(1, 40, 4):
        del model[i]
    assert _state(Table(str(path))) == model == _oracle_state(delta_spark, path)
    monkeypatch.undo()

    # 2. varlake's MERGE against delta-spark's DELETE of rows in the file it reads.
    fired = _inside_next_commit(monkeypatch, lambda: delta_spark.execute(f"DELETE FROM {where} WHERE id IN (41, 43)"))
    source = [{"id": i, "n": 0, "v": None} for i in (40, 41, 42, 43, 100, 101)]

    def merge(retries: int):
        return (
            table.merge(source, "t.id = s.id", retries=retries)
            .when_matched_update({"n": "t.n + 10"})
            .when_not_matched_insert_all()
            .execute()
        )

    with pytest.raises(RETRYABLE) as refused:
        merge(0)
    names.append(type(refused.value).__name__)
    # Both winners added a file of rows the loser's condition may match (the MERGE's updated
    # rows, the DELETE's file re-added with a deletion vector): varlake names a concurrent
    # append first, as delta-spark's conflict checker does.
    assert names == ["ConcurrentAppendError", "ConcurrentAppendError"]
    for i in (41, 43):
        del model[i]
    assert _state(Table(str(path))) == model
    result = merge(2)
    assert (result.num_updated_rows, result.num_inserted_rows) == (2, 4)  # 41 and 43 are gone: inserted again
    model.update({40: 10, 42: 10, 41: 0, 43: 0, 100: 0, 101: 0})
    assert _state(Table(str(path))) == model == _oracle_state(delta_spark, path)
    monkeypatch.undo()

    # 3. delta-spark's MERGE read the table and is held by a gate in its source; varlake's
    #    DELETE commits meanwhile; delta-spark refuses its commit (concurrent delete-read) and
    #    its retry loop runs it again on top of varlake's DELETE.
    started, go = tmp_path / "merge_started", tmp_path / "merge_go"
    jobs.start(delta_spark, "gated_merge", f"""
def _gate(x, started={str(started)!r}, go={str(go)!r}):
    import os, time
    open(started, "a").close()
    deadline = time.time() + 120
    while not os.path.exists(go) and time.time() < deadline:
        time.sleep(0.02)
    return x

spark.udf.register("vl_gate", _gate, "bigint")

def _job():
    spark.conf.set("spark.databricks.delta.merge.materializeSource", "none")  # the gate runs inside the MERGE
    try:
        return retrying("MERGE INTO {where} t USING (SELECT vl_gate(id) AS id FROM range(1, 40, 2)) s "
                        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = t.n + 100")
    finally:
        spark.conf.unset("spark.databricks.delta.merge.materializeSource")
""")
    _wait_for(started)
    assert table.delete("id = 39").num_deleted_rows == 1
    del model[39]
    go.touch()
    refusals = jobs.wait(delta_spark, "gated_merge")
    # varlake's DELETE re-added the file with a deletion vector: delta-spark checks added files
    # first and names the conflict a concurrent append, as varlake did in 1. and 2.
    assert refusals == [["ConcurrentAppendException", "DELTA_CONCURRENT_APPEND"]], refusals
    model.update({i: model[i] + 100 for i in range(1, 40, 2) if i in model})
    assert _state(Table(str(path))) == model == _oracle_state(delta_spark, path)

    # Every version is one committed change: nothing of the refused attempts is in the log.
    operations = [h["operation"] for h in sorted(delta_spark.sql(f"DESCRIBE HISTORY {where}"), key=lambda h: h["version"])]
    assert operations == ["CREATE TABLE", "WRITE", "WRITE", "MERGE", "DELETE", "DELETE", "MERGE", "DELETE", "MERGE"], operations


def _wait_for(flag: Path, timeout: float = 900.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not flag.exists():
        assert time.monotonic() < deadline, f"{flag} never appeared"
        time.sleep(0.05)


def test_optimize_against_appends_on_both_sides(delta_spark, tmp_path):
    path = tmp_path / "optimize"
    table = Table.create(str(path), "id bigint, n bigint, v variant")
    for b in range(8):
        table.append([{"id": 10 * b + j, "n": b, "v": {"b": b}} for j in range(10)])
    expected = list(range(80))

    # varlake OPTIMIZEs while delta-spark appends
    jobs.start(delta_spark, "appends_during_optimize", f"""
def _job():
    for i in range(8):
        (spark.range(1000 + 10 * i, 1010 + 10 * i).selectExpr("id", "id AS n", "parse_json('{{}}') AS v")
            .write.format("delta").mode("append").save({str(path)!r}))
    return 8
""")
    optimized = [table.optimize() for _ in range(2)]
    assert jobs.wait(delta_spark, "appends_during_optimize") == 8
    expected += [1000 + 10 * i + j for i in range(8) for j in range(10)]
    assert optimized[0].version is not None  # compacted the 8 files, refused by no append
    assert _ids(Table(str(path))) == expected

    # delta-spark OPTIMIZEs while varlake appends
    jobs.start(delta_spark, "optimize_during_appends", f"""
def _job():
    refusals = []
    for _ in range(2):
        refusals += retrying("OPTIMIZE delta.`{path}`")
    return refusals
""")
    for i in range(10):
        table.append([{"id": 5000 + 10 * i + j, "n": i, "v": [i]} for j in range(10)])
    assert jobs.wait(delta_spark, "optimize_during_appends") == []  # appends never refuse OPTIMIZE
    expected += [5000 + 10 * i + j for i in range(10) for j in range(10)]
    assert _ids(Table(str(path))) == expected
    assert delta_spark.sql(f"SELECT count(*) AS c, count(DISTINCT id) AS d FROM delta.`{path}`") == [
        {"c": len(expected), "d": len(expected)}
    ]
    operations = [h["operation"] for h in delta_spark.sql(f"DESCRIBE HISTORY delta.`{path}`")]
    assert operations.count("OPTIMIZE") >= 2 and operations.count("WRITE") == 8 + 8 + 10, operations
