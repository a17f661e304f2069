"""The Table facade: writes, scans, skipping soundness, interoperability, bad input."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from varlake import Table, Variant
from varlake.errors import StorageError, TableError, TableNotFoundError, VarlakeError

SHARED_TABLE = Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "delta" / "variant-stats-no-checkpoint"


def _rows(table: pa.Table) -> list[dict]:
    out = []
    for row in table.to_pylist():
        for k, v in row.items():
            if isinstance(v, dict) and set(v) == {"metadata", "value"}:
                row[k] = Variant(v["metadata"], v["value"]).to_python()
        out.append(row)
    return sorted(out, key=repr)


def _events(n: int, start: int = 0) -> list[dict]:
    return [
        {
            "id": i,
            "day": dt.date(2024, 1, 1 + i % 3),
            "v": {"a": i, "b": f"s{i % 5}", "c": [i, None], "d": Decimal(i) / 4} if i % 9 else {"a": None, "z": True},
        }
        for i in range(start, start + n)
    ]


@pytest.mark.parametrize("shredded", [True, False])
def test_append_scan_round_trip(tmp_path: Path, shredded: bool) -> None:
    props = {"delta.enableVariantShredding": "true"} if shredded else {}
    t = Table.create(tmp_path / "t", "id bigint, day date, v variant", partition_by=["day"], properties=props)
    assert t.protocol.min_reader_version == 3 and "variantType" in t.protocol.reader_feature_set
    assert ("variantShredding" in t.protocol.reader_feature_set) == shredded
    t.append(_events(40))
    t.append(_events(20, 40))
    got = _rows(t.scan().to_arrow())
    want = sorted(({**r, "v": Variant.from_python(r["v"]).to_python()} for r in _events(60)), key=repr)
    assert got == want
    assert t.version == 2
    if shredded:
        layouts = {str(pq.read_schema(t.data_file(f)).field("v").type) for f in t.files()}
        assert len(layouts) == 1, "every file of the table shares one shredded layout"
        assert "typed_value" in layouts.pop()
        assert "varlake.shredding.v" in t.properties


def test_overwrite_and_time_travel(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant")
    t.append([{"id": 1, "v": {"x": 1}}])
    t.overwrite([{"id": 2, "v": {"x": 2}}])
    assert [r["id"] for r in t.scan().to_arrow().to_pylist()] == [2]
    assert [r["id"] for r in t.scan(version=1).to_arrow().to_pylist()] == [1]
    assert [h.operation for h in t.history()][:2] == ["WRITE", "WRITE"]


def test_skipping_uses_partitions_and_variant_stats(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, day date, v variant", partition_by=["day"],
                     properties={"delta.enableVariantShredding": "true"})
    for k in range(4):
        t.append([{"id": k * 100 + i, "day": dt.date(2024, 1, 1), "v": {"a": k * 100 + i, "s": f"k{k}"}} for i in range(50)])
    assert len(t.files()) == 4
    assert len(t.files("v:a::bigint BETWEEN 120 AND 130")) == 1
    assert len(t.files("variant_get(v, '$.a', 'bigint') > 1000")) == 0
    assert len(t.files("v:s::string = 'k2'")) == 1
    assert len(t.files("day = '2024-01-02'")) == 0
    assert len(t.files("v:a::string = '5'")) == 4, "a cast to another type family never skips"
    got = sorted(r["id"] for r in t.scan("v:a::bigint BETWEEN 120 AND 130", columns=["id"]).to_arrow().to_pylist())
    assert got == list(range(120, 131))


def test_path_projection(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties={"delta.enableVariantShredding": "true"})
    t.append([{"id": i, "v": {"a": i, "b": {"c": f"x{i}"}} if i else None} for i in range(5)])
    got = t.scan(columns=["id"], paths={"v": ["$.a", "$.b.c", "$.nope"]}, filter="id >= 0").to_arrow()
    assert got.column_names == ["id", "v:$.a", "v:$.b.c", "v:$.nope"]
    rows = {r["id"]: r for r in got.to_pylist()}
    as_py = lambda x: None if x is None else Variant(x["metadata"], x["value"]).to_python()  # noqa: E731
    assert [as_py(rows[i]["v:$.a"]) for i in range(5)] == [None, 1, 2, 3, 4]
    assert as_py(rows[3]["v:$.b.c"]) == "x3" and rows[3]["v:$.nope"] is None
    assert t.scan().select_paths("v", "$.a").select("id").to_arrow().column_names == ["id", "v:$.a"]


def test_columns_projection_and_unknown_column(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, name string, v variant")
    t.append([{"id": 1, "name": "a", "v": [1, 2]}])
    assert t.scan(columns=["name"]).to_arrow().column_names == ["name"]
    with pytest.raises(TableError, match="unknown columns"):
        t.scan(columns=["nope"]).to_arrow()


# --- soundness: skipping never changes the answer -------------------------------------------------

_values = st.one_of(st.none(), st.integers(-50, 50), st.sampled_from(["a", "b", "zz", "x" * 40, "x" * 41]),
                    st.decimals(-10, 10, places=2, allow_nan=False), st.booleans())
_docs = st.one_of(st.none(), st.fixed_dictionaries({}, optional={"a": _values, "b": _values, "n": st.fixed_dictionaries({}, optional={"c": _values})}))
_row = st.fixed_dictionaries({"id": st.integers(0, 100), "s": st.one_of(st.none(), st.sampled_from(["p", "q", "r" * 35])), "v": _docs})
_lit = st.one_of(st.integers(-60, 60).map(str), st.sampled_from(["'a'", "'b'", "'zz'", "'" + "x" * 40 + "'", "NULL"]))
_term = st.sampled_from(["id", "s", "try_variant_get(v, '$.a', 'bigint')", "try_variant_get(v, '$.b', 'string')",
                         "try_variant_get(v, '$.n.c', 'int')", "try_variant_get(v, '$.a', 'string')",
                         "try_variant_get(v, '$.b', 'decimal(10,2)')"])
_cmp = st.builds(lambda t, op, lit: f"{t} {op} {lit}", _term, st.sampled_from(["=", "<", "<=", ">", ">=", "<>", "<=>"]), _lit)
_leaf = st.one_of(_cmp, _term.map(lambda t: f"{t} IS NULL"), _term.map(lambda t: f"{t} IS NOT NULL"),
                  st.builds(lambda t, a, b: f"{t} BETWEEN {a} AND {b}", _term, st.integers(-60, 0), st.integers(0, 60)),
                  st.builds(lambda t, xs: f"{t} IN ({', '.join(xs)})", _term, st.lists(_lit, min_size=1, max_size=3)))
_pred = st.recursive(_leaf, lambda inner: st.one_of(
    st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner),
    st.builds(lambda a, b: f"({a}) OR ({b})", inner, inner),
    inner.map(lambda a: f"NOT ({a})")), max_leaves=4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(files=st.lists(st.lists(_row, min_size=1, max_size=8), min_size=1, max_size=4), preds=st.lists(_pred, min_size=1, max_size=4),
       shredded=st.booleans())
def test_skipping_never_changes_the_answer(tmp_path_factory: pytest.TempPathFactory, files, preds, shredded) -> None:  # noqa: ANN001
    root = tmp_path_factory.mktemp("sound") / "t"
    props = {"delta.enableVariantShredding": "true"} if shredded else {}
    t = Table.create(root, "id bigint, s string, v variant", properties=props)
    for rows in files:
        t.append(rows)
    everything = t.scan().to_arrow()
    from varlake.expr import IsNotNull, RowEvaluator
    from varlake.read import bind_filter
    from varlake.expr.rows import row_variant_get as _variant_get
    from varlake.read.arrow_reader import RowFilter
    from varlake.read.residual import eager_terms

    from varlake.errors import ExpressionError

    for pred in preds:
        try:
            bound = bind_filter(pred, t.schema)
        except ExpressionError:
            with pytest.raises(ExpressionError):  # Spark rejects such a query too; so must the scan
                t.scan(pred).to_arrow()
            continue
        # The oracle: every row evaluated, with no file skipped, in the order Spark evaluates
        # a filter (eager extractions, inferred IS NOT NULL, repeated casts first: read.residual).
        try:
            for term in eager_terms(bound):
                RowEvaluator(IsNotNull(term), variant_get=_variant_get).evaluate_table(everything)
            mask = RowFilter(bound).mask(everything)
            want = sorted(repr(r) for r, keep in zip(everything.to_pylist(), mask) if keep)
        except ExpressionError:
            continue  # a row fails a cast (an error in Spark too); skipped files may hide it, as in Spark

        got = sorted(repr(r) for r in t.scan(pred).to_arrow().to_pylist())
        assert got == want, pred
    shutil.rmtree(root)


# --- other engines and other writers --------------------------------------------------------------


def test_deltalake_reads_unshredded_tables(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    # no deletion vectors: deltalake 1.6's to_pyarrow_table refuses the deletionVectors reader feature
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties={"delta.enableDeletionVectors": "false"})
    t.append([{"id": i, "v": {"a": i, "s": "x" * i}} for i in range(5)])
    theirs = deltalake.DeltaTable(str(tmp_path / "t")).to_pyarrow_table()
    mine = t.scan().to_arrow()
    key = lambda r: r["id"]  # noqa: E731
    assert sorted(theirs.to_pylist(), key=key) == sorted(mine.to_pylist(), key=key)


def test_duckdb_reads_every_file_as_variant(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties={"delta.enableVariantShredding": "true"})
    t.append([{"id": i, "v": {"a": i, "b": [1, "x"]}} for i in range(10)])
    for f in t.files():
        rows = duckdb.sql(f"SELECT typeof(v), CAST(v AS VARCHAR) FROM read_parquet('{t.data_file(f)}') ORDER BY 2").fetchall()
        assert {r[0] for r in rows} == {"VARIANT"}
        assert len(rows) == 10


@pytest.mark.spark
def test_spark_reads_the_snapshot_files(tmp_path: Path, spark) -> None:  # noqa: ANN001
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties={"delta.enableVariantShredding": "true"})
    t.append([{"id": i, "v": {"a": i, "b": f"s{i}"}} for i in range(20)])
    paths = [t.data_file(f) for f in t.files()]
    got = {(r.id, r.j) for r in spark.read.parquet(*paths).selectExpr("id", "to_json(v) AS j").collect()}
    assert got == {(i, f'{{"a":{i},"b":"s{i}"}}') for i in range(20)}


def test_reads_the_delta_written_shared_table(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    shutil.copytree(SHARED_TABLE, root)  # a copy, so nothing can touch the shared data
    t = Table(root)
    assert [f.name for f in t.schema.fields] == ["i", "v", "nv"]
    assert {"variantType", "variantShredding"} <= {f.replace("-preview", "") for f in t.protocol.reader_feature_set}
    rows = t.scan().to_arrow()
    assert rows.num_rows == 10
    ids = sorted(r["i"] for r in rows.to_pylist())
    assert ids == list(range(100, 110))
    assert len(t.files("variant_get(v, '$.id', 'int') > 100")) == 0
    assert len(t.files("variant_get(v, '$.id', 'int') BETWEEN 3 AND 4")) == 1
    assert len(t.files("variant_get(nv.v, '$.id', 'int') < 10")) == 0


# --- bad input --------------------------------------------------------------------------------------


def test_missing_table_and_missing_data_file(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        Table(tmp_path / "nothing")
    t = Table.create(tmp_path / "t", "id bigint")
    t.append([{"id": 1}])
    os.remove(t.data_file(t.files()[0]))
    with pytest.raises((StorageError, TableError)) as err:
        t.scan().to_arrow()
    assert "part-" in str(err.value)


def test_bad_rows_do_not_commit(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant")
    with pytest.raises(VarlakeError):
        t.append([{"id": 1, "v": {"x": object()}}])
    with pytest.raises(TableError, match="not in the table schema"):
        t.append([{"id": 1, "v": 1, "extra": 2}])
    assert t.version == 0 and t.files() == []


def test_partition_by_variant_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TableError):
        Table.create(tmp_path / "t", "id bigint, v variant", partition_by=["v"])
