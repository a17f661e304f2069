"""Spark's DELETE, UPDATE and MERGE (``varlake.spark.changes.dml``): Spark finds the rows and writes
the new ones, the driver commits once through ``write.row_changes``.

Oracles: the Python path (``Table.delete/update/merge``) run on a copy of the same table
gives the same rows (read back by ``Table.scan``); ``varlake.spark.read`` reads the written
deletion vectors; the footer of a rewritten file shows the patched Variant path still in its
``typed_value`` column; every table version reads back as it was.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import varlake.spark as vs
from varlake import Table
from varlake.variant import Variant
from varlake.errors import (
    AppendOnlyTableError,
    ConcurrentDeleteDeleteError,
    ConstraintViolationError,
    MergeCardinalityError,
    UnknownColumnError,
    VarlakeError,
)

pytestmark = pytest.mark.spark

SCHEMA = "id bigint, x int, p string, v variant"


def make(path: Path, *, partitioned: bool = False, shredded: bool = False, dv: bool = True, n: int = 40, files: int = 2) -> Table:
    props = {"delta.enableDeletionVectors": str(dv).lower(), "delta.enableVariantShredding": str(shredded).lower()}
    t = Table.create(path, SCHEMA, partition_by=["p"] if partitioned else [], properties=props)
    per = n // files
    for f in range(files):
        t.append([
            {"id": i, "x": None if i % 7 == 0 else i % 10, "p": "ab"[i % 2], "v": {"user": {"id": i % 5}, "n": i}}
            for i in range(f * per, (f + 1) * per)
        ])  # fmt: skip
    return Table(path)


def rows(path: Path | str, version: int | None = None) -> list[tuple]:
    data = Table(path).scan(version=version).to_arrow().to_pylist()
    out = []
    for r in data:
        v = r["v"]
        value = None if v is None else Variant(v["metadata"], v["value"]).to_python()
        out.append((r["id"], r["x"], r["p"], json.dumps(value, sort_keys=True, default=str)))
    return sorted(out)


def copies(tmp_path: Path, **kw) -> tuple[Path, Path]:
    a = tmp_path / "spark"
    make(a, **kw)
    b = tmp_path / "python"
    shutil.copytree(a, b)
    return a, b


def source_rows() -> list[dict]:
    return [{"id": i, "x": i * 2, "p": "ab"[i % 2], "v": {"user": {"id": 9}, "n": -i}} for i in range(30, 46)]


def source_df(spark, data: list[dict]):
    plain = [(r["id"], r["x"], r["p"], json.dumps(r["v"])) for r in data]
    return spark.createDataFrame(plain, "id bigint, x int, p string, j string").selectExpr("id", "x", "p", "parse_json(j) AS v")


@pytest.mark.parametrize(
    "partitioned,shredded,dv", [(False, True, True), (True, True, False), (True, False, True)]
)
def test_spark_and_python_paths_agree(spark, tmp_path: Path, partitioned: bool, shredded: bool, dv: bool) -> None:
    a, b = copies(tmp_path, partitioned=partitioned, shredded=shredded, dv=dv)
    ta, tb = Table(a), Table(b)

    r1, p1 = vs.delete(spark, a, "x = 3 OR v:n::int < 2"), tb.delete("x = 3 OR v:n::int < 2")
    assert (r1.num_deleted_rows, r1.version) == (p1.num_deleted_rows, p1.version) and r1.num_deleted_rows == 6
    assert rows(a) == rows(b)

    r2 = vs.update(spark, a, {"x": "x + 100", "v": "variant_set(v, '$.n', 0)"}, "id % 4 = 0")
    p2 = tb.update({"x": "x + 100", "v": "variant_set(v, '$.n', 0)"}, where="id % 4 = 0")
    assert r2.num_updated_rows == p2.num_updated_rows > 0
    assert rows(a) == rows(b)

    data = source_rows()
    r3 = (
        vs.merge(spark, a, source_df(spark, data), "t.id = s.id")
        .when_matched_update({"x": "s.x"}, condition="s.id % 2 = 0")
        .when_matched_delete()
        .when_not_matched_insert_all(condition="s.id < 44")
        .execute()
    )
    p3 = (
        tb.merge(data, "t.id = s.id")
        .when_matched_update({"x": "s.x"}, condition="s.id % 2 = 0")
        .when_matched_delete()
        .when_not_matched_insert_all(condition="s.id < 44")
        .execute()
    )
    assert (r3.num_updated_rows, r3.num_deleted_rows, r3.num_inserted_rows) == (5, 4, 5)
    assert (r3.num_updated_rows, r3.num_deleted_rows, r3.num_inserted_rows) == (
        p3.num_updated_rows, p3.num_deleted_rows, p3.num_inserted_rows
    )  # fmt: skip
    assert rows(a) == rows(b)
    assert r1.num_deletion_vectors_added > 0 if dv else r1.num_deletion_vectors_added == 0
    for version in range(ta.version + 1):  # time travel: every version as it was
        assert rows(a, version) == rows(b, version)
    # the written DVs read back through Spark
    spark_ids = sorted(r.id for r in vs.read(spark, a, ["id"]).collect())
    assert spark_ids == [r[0] for r in rows(a)]


def test_merge_by_source_and_cardinality(spark, tmp_path: Path) -> None:
    a, b = copies(tmp_path, n=20)
    data = [{"id": i, "x": 1, "p": "a", "v": {"n": i}} for i in (3, 4, 50)]
    r = (
        vs.merge(spark, a, source_df(spark, data), "t.id = s.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_update({"x": "-1"}, condition="t.id > 15")
        .when_not_matched_by_source_delete(condition="t.id < 2")
        .execute()
    )
    p = (
        Table(b).merge(data, "t.id = s.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_update({"x": "-1"}, condition="t.id > 15")
        .when_not_matched_by_source_delete(condition="t.id < 2")
        .execute()
    )  # fmt: skip
    assert (r.num_updated_rows, r.num_deleted_rows, r.num_inserted_rows) == (6, 2, 1)
    assert (p.num_updated_rows, p.num_deleted_rows, p.num_inserted_rows) == (6, 2, 1)
    assert rows(a) == rows(b)

    twice = source_df(spark, [{"id": 5, "x": 1, "p": "a", "v": {}}, {"id": 5, "x": 2, "p": "a", "v": {}}])
    before = Table(a).version
    with pytest.raises(MergeCardinalityError):
        vs.merge(spark, a, twice, "t.id = s.id").when_matched_update({"x": "s.x"}).execute()
    assert Table(a).version == before
    gone = vs.merge(spark, a, twice, "t.id = s.id").when_matched_delete().execute()  # allowed: unconditional DELETE
    assert gone.num_deleted_rows == 1 and 5 not in [r[0] for r in rows(a)]


def test_variant_set_keeps_the_shredded_path_typed(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    data = spark.range(30).selectExpr("id", "parse_json(format_string('{\"n\": %d, \"s\": \"k%d\"}', id, id)) AS v")
    vs.write(data, str(path))
    assert Table(path).properties["varlake.shredding.v"] == "n bigint, s string"
    before = {a.path for a in Table(path).files()}
    r = vs.update(spark, path, {"v": "variant_set(v, '$.n', id * 10)"}, "v:n::int < 5")
    assert r.num_updated_rows == 5 and r.num_deletion_vectors_added == 1
    new = [a for a in Table(path).files() if a.path not in before]
    assert len(new) == 1
    footer = pq.read_table(Table(path).data_file(new[0]))
    n = footer.column("v").combine_chunks().field("typed_value").field("n")
    assert n.type.field("typed_value").type == "int64"
    assert sorted(n.field("typed_value").to_pylist()) == [0, 10, 20, 30, 40]  # the patched values, typed
    assert n.field("value").to_pylist() == [None] * 5  # nothing left in the residual binary
    got = {r.id: r.n for r in vs.read(spark, path, ["id", "v:n::bigint AS n"]).collect()}
    assert got == {i: (i * 10 if i < 5 else i) for i in range(30)}


def test_sql_forms(spark, tmp_path: Path) -> None:
    a, b = copies(tmp_path, n=20, partitioned=True)
    out = vs.sql(spark, "DELETE FROM {t} WHERE v:n::int >= 17", t=str(a)).collect()
    assert out[0].num_affected_rows == 3
    out = vs.sql(spark, "UPDATE {t} AS tt SET x = tt.x * 2, v = variant_set(v, '$.user.id', 7) WHERE tt.id < 4", t=str(a)).collect()
    assert out[0].num_affected_rows == 4
    source_df(spark, [{"id": i, "x": 0, "p": "b", "v": {"n": i}} for i in (2, 3, 30)]).createOrReplaceTempView("dml_src")
    out = vs.sql(
        spark,
        "MERGE INTO {t} AS t USING (SELECT * FROM dml_src WHERE id > 2) AS s ON t.id = s.id "
        "WHEN MATCHED AND s.id = 3 THEN UPDATE SET x = s.x WHEN MATCHED THEN DELETE "
        "WHEN NOT MATCHED THEN INSERT (id, x, p, v) VALUES (s.id, s.x + 1, s.p, s.v)",
        t=str(a),
    ).collect()
    assert out[0].asDict() == {"num_affected_rows": 2, "num_updated_rows": 1, "num_deleted_rows": 0, "num_inserted_rows": 1}

    tb = Table(b)
    tb.delete("v:n::int >= 17")
    tb.update({"x": "x * 2", "v": "variant_set(v, '$.user.id', 7)"}, where="id < 4")
    (tb.merge([{"id": 3, "x": 0, "p": "b", "v": {"n": 3}}, {"id": 30, "x": 0, "p": "b", "v": {"n": 30}}], "t.id = s.id")
       .when_matched_update({"x": "s.x"}, condition="s.id = 3").when_matched_delete()
       .when_not_matched_insert({"id": "s.id", "x": "s.x + 1", "p": "s.p", "v": "s.v"}).execute())  # fmt: skip
    assert rows(a) == rows(b)
    assert vs.sql(spark, "SELECT count(*) AS n FROM {t}", t=str(a)).collect()[0].n == len(rows(a))


def test_refusals_and_no_op(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    make(path, n=10, files=1)
    before = Table(path).version
    r = vs.delete(spark, path, "id > 100")
    assert r.version is None and r.num_deleted_rows == 0 and Table(path).version == before
    with pytest.raises(UnknownColumnError):
        vs.update(spark, path, {"nope": "1"}, "id = 1")
    with pytest.raises(VarlakeError):
        vs.delete(spark, path, "no_such_column = 1")
    ap = tmp_path / "ap"
    Table.create(ap, SCHEMA, properties={"delta.appendOnly": "true"}).append([{"id": 1, "x": 1, "p": "a", "v": {"n": 1}}])
    with pytest.raises(AppendOnlyTableError):
        vs.delete(spark, ap, "id = 1")
    src = source_df(spark, [{"id": 1, "x": 5, "p": "a", "v": {}}, {"id": 2, "x": 5, "p": "a", "v": {}}])
    with pytest.raises(AppendOnlyTableError):
        vs.merge(spark, ap, src, "t.id = s.id").when_matched_delete().execute()
    r = vs.merge(spark, ap, src, "t.id = s.id").when_not_matched_insert_all().execute()  # insert-only: allowed
    assert r.num_inserted_rows == 1 and sorted(x["id"] for x in Table(ap).scan().to_arrow().to_pylist()) == [1, 2]
    everything = vs.delete(spark, path)  # no condition: every row
    assert everything.num_deleted_rows == 10 and everything.num_files_removed == 1 and rows(path) == []


def _interleaved(monkeypatch, concurrent) -> None:
    """Run ``concurrent()`` (another writer's commit) right before the Spark change commits."""
    from varlake.spark.changes import dml
    from varlake.write.changes.rows import commit_change as real

    def commit(table, staged):
        concurrent()
        return real(table, staged)

    monkeypatch.setattr(dml, "commit_change", commit)


def test_conflicts_follow_the_commit_rules(spark, tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "t"
    make(path, n=20)
    t = Table(path)
    _interleaved(monkeypatch, lambda: t.append([{"id": 100, "x": 1, "p": "a", "v": {"n": 100}}]))
    r = vs.delete(spark, path, "id = 1")  # a blind append does not fail a DELETE (WriteSerializable)
    assert r.num_deleted_rows == 1 and 100 in [x[0] for x in rows(path)]
    assert (r.num_files_scanned, r.num_files_skipped) == (1, 1)  # the other file cannot hold id 1 (statistics)
    _interleaved(monkeypatch, lambda: t.delete("id = 2"))  # the same file changed concurrently
    before = sorted(x[0] for x in rows(path))
    with pytest.raises(ConcurrentDeleteDeleteError):
        vs.update(spark, path, {"x": "0"}, "id = 3")
    assert sorted(x[0] for x in rows(path)) == [i for i in before if i != 2]
    calls = []
    _interleaved(monkeypatch, lambda: calls or calls.append(t.delete("id = 4")))  # loses once, then re-plans
    r = vs.delete(spark, path, "id = 5", retries=1)
    assert r.attempts == 2 and not {4, 5} & {x[0] for x in rows(path)}
    monkeypatch.undo()
    r = vs.delete(spark, path, "d.id = 12", target_alias="d")  # an aliased condition still skips files
    assert r.num_deleted_rows == 1 and r.num_files_scanned == 1 and r.num_files_skipped >= 1


def test_updated_rows_are_checked_against_constraints(spark, tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = Table.create(path, "id bigint, x int", properties={"delta.constraints.positive": "x > 0"})
    t.append([{"id": i, "x": i + 1} for i in range(5)])
    version = t.version
    with pytest.raises(ConstraintViolationError, match="positive"):
        vs.update(spark, path, {"x": "x - 10"}, "id = 2")
    assert Table(path).version == version
    out = vs.sql(spark, "DELETE FROM {t} AS d WHERE d.id >= 3", t=str(path)).collect()
    assert out[0].num_affected_rows == 2
    src = tmp_path / "src"
    Table.create(src, "id bigint, x int").append([{"id": 1, "x": 50}, {"id": 9, "x": 90}])
    out = vs.sql(
        spark, "MERGE INTO {t} USING {src} ON {t}.id = {src}.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        t=str(path), src=str(src),
    ).collect()  # fmt: skip
    assert (out[0].num_updated_rows, out[0].num_inserted_rows) == (1, 1)
    assert sorted((r["id"], r["x"]) for r in Table(path).scan().to_arrow().to_pylist()) == [(0, 1), (1, 50), (2, 3), (9, 90)]


# --- random sequences: the Spark path and the Python path agree ------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_OPS = st.one_of(
    st.tuples(st.just("delete"), st.integers(0, 9), st.integers(0, 4)),
    st.tuples(st.just("update"), st.integers(0, 9), st.integers(-50, 50)),
    st.tuples(st.just("merge"), st.integers(0, 60), st.integers(1, 12)),
)


def _apply(spark, op: tuple, a: Path, b: Path) -> None:
    kind, p, q = op
    if kind == "delete":
        where = f"x = {p} OR v:user.id::int = {q}"
        ra, rb = vs.delete(spark, a, where), Table(b).delete(where)
        assert ra.num_deleted_rows == rb.num_deleted_rows
    elif kind == "update":
        where, assign = f"x >= {p}", {"x": f"x + {q}", "v": f"variant_set(v, '$.n', {q})"}
        ra, rb = vs.update(spark, a, assign, where), Table(b).update(assign, where=where)
        assert ra.num_updated_rows == rb.num_updated_rows
    else:
        data = [{"id": i, "x": i % 10, "p": "ab"[i % 2], "v": {"user": {"id": i % 5}, "n": i}} for i in range(p, p + q)]
        clauses = lambda m: m.when_matched_update({"x": "t.x + s.x"}, condition="s.id % 3 = 0").when_matched_delete(  # noqa: E731
            condition="s.id % 3 = 1"
        ).when_not_matched_insert_all()
        ra = clauses(vs.merge(spark, a, source_df(spark, data), "t.id = s.id")).execute()
        rb = clauses(Table(b).merge(data, "t.id = s.id")).execute()
        assert (ra.num_updated_rows, ra.num_deleted_rows, ra.num_inserted_rows) == (
            rb.num_updated_rows, rb.num_deleted_rows, rb.num_inserted_rows
        )  # fmt: skip


@settings(max_examples=5, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(
    layout=st.tuples(st.booleans(), st.booleans(), st.booleans()),
    ops=st.lists(_OPS, min_size=2, max_size=3),
)
def test_random_sequences_agree_with_the_python_path(spark, tmp_path_factory, layout, ops) -> None:
    partitioned, shredded, dv = layout
    root = tmp_path_factory.mktemp("seq")
    a, b = copies(root, partitioned=partitioned, shredded=shredded, dv=dv, n=24)
    for op in ops:
        _apply(spark, op, a, b)
        assert rows(a) == rows(b), op
    for version in range(Table(a).version + 1):
        assert rows(a, version) == rows(b, version)
