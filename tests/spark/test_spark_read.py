"""varlake.spark.read / sql / explain on hand-built tables: the read paths, skipping, errors, names.

The property test (test_spark_read_properties) checks answers on random data; these
check the mechanics: shredded files are really read as pruned struct leaves with filters
pushed to the row groups, statistics skip files, partitions prune and come back as
values, ANSI errors still surface, the caller's session is left untouched.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

import varlake.spark as vs
from spark_files import spark_shredded_file
from varlake.delta.actions import AddFile
from varlake.delta.schema import parse_schema
from varlake.errors import ExpressionEvaluationError
from varlake.io.parquet_write import write_parquet
from varlake.spark.reading.explain import executed_scans
from varlake.spark.reading.shared_views import IGNORE_VARIANT_ANNOTATION
from varlake.spark.session.local import is_classic, spark_conf
from varlake.table import Table, to_arrow_table

pytestmark = pytest.mark.spark

FILE_SCHEMA = parse_schema(
    '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},'
    '{"name":"v","type":"variant","nullable":true,"metadata":{}}]}'
)


def _add(table: Table, rel: str, partition: dict[str, str] | None = None) -> AddFile:
    path = Path(table.open_file(rel))
    return AddFile(rel, path.stat().st_size, partition or {}, 0, True, table.file_stats_json(rel))


def _write(table: Table, rel: str, rows: list[tuple[int, Any]], layout: str | None, **kwargs: Any) -> str:
    target = Path(table.open_file(rel))
    target.parent.mkdir(parents=True, exist_ok=True)
    data = to_arrow_table({"id": [r[0] for r in rows], "v": [r[1] for r in rows]}, FILE_SCHEMA)
    write_parquet(data, target, shredding={"v": layout} if layout else None, variant_columns=["v"], **kwargs)
    return rel


def _spark_write(spark: Any, table: Table, rel: str, rows: list[tuple[int, str]], layout: str) -> str:
    spark_shredded_file(spark, Path(table.path) / rel, rows, layout)
    return rel


@pytest.fixture()
def events(spark: Any, tmp_path: Path) -> Table:
    """Four files: two perfectly shredded (varlake, Spark), one with a string among the
    ints, one unshredded; ``a`` is clustered so that statistics can skip files."""
    table = Table.create(tmp_path / "events", "id bigint, v variant")
    adds = [
        _add(table, _write(table, "f0.parquet", [(i, {"a": i, "b": f"k{i % 3}", "c": {"d": i * 2}}) for i in range(0, 100)], "a bigint, b string, c struct<d: bigint>", row_group_size=20)),
        _add(table, _spark_write(spark, table, "f1.parquet", [(i, f'{{"a": {i}, "b": "k{i % 3}", "c": {{"d": {i * 2}}}}}') for i in range(100, 200)], "a bigint, b string, c struct<d: bigint>")),
        _add(table, _write(table, "f2.parquet", [(i, {"a": i if i % 10 else str(i), "b": f"k{i % 3}"}) for i in range(200, 300)], "a bigint, b string")),
        _add(table, _write(table, "f3.parquet", [(i, {"a": i, "b": None if i % 7 == 0 else f"k{i % 3}"}) for i in range(300, 400)], None)),
    ]
    table.commit_files(adds, "append")
    return table


def _reference(spark: Any, table: Table, query: str, schema: str = "id bigint, v variant") -> Any:
    files = [table.open_file(a.path) for a in table.files()]
    spark.read.schema(schema).parquet(*files).createOrReplaceTempView("reference_events")
    return spark.sql(query.replace("{e}", "reference_events"))


def _scans(df: Any) -> list[Any]:
    """The file scan nodes of an executed DataFrame's physical plan."""
    return executed_scans(df)


def _scan_rows(df: Any) -> list[int]:
    """``numOutputRows`` of every file scan (rows left after row-group skipping)."""
    return [n.metrics().apply("numOutputRows").value() for n in _scans(df)]


QUERIES = [
    "SELECT v:b::string AS b, count(*), sum(v:a::bigint), max(v:c.d::int) FROM {e} GROUP BY 1",
    "SELECT id, v:a::bigint, try_variant_get(v, '$.c.d', 'decimal(20,2)') FROM {e} WHERE v:a::bigint BETWEEN 150 AND 160",
    "SELECT count(*) FROM {e} WHERE v:b IS NULL OR v:c.d::bigint < 10",
    "SELECT x.id, y.v:b::string FROM {e} x JOIN {e} y ON x.v:a::bigint = y.id + 1 WHERE x.v:b::string = 'k1'",
    "SELECT id, TRY_CAST(v:a AS INT), v:a::string FROM {e} WHERE id % 37 = 0",
]


@pytest.mark.parametrize("query", QUERIES)
def test_answers_equal_spark_over_the_same_files(any_spark: Any, spark: Any, events: Table, query: str) -> None:
    got = vs.sql(any_spark, query, e=events)
    expected = _reference(spark, events, query)
    assert got.columns == expected.columns
    assert sorted(got.collect(), key=repr) == sorted(expected.collect(), key=repr)


def test_shredded_files_are_read_as_pruned_leaves_with_filters_pushed_down(spark: Any, events: Table) -> None:
    query = "SELECT sum(v:a::bigint) FROM {e} WHERE v:a::bigint BETWEEN 30 AND 45"
    plan = vs.explain(spark, query, e=events, show=False).plans["e"]
    assert [t.relative_path for t in plan.skipped_by_stats] == ["f1.parquet"]  # a in 100..199
    kinds = {t.relative_path: g.kind for g in plan.groups for t in g.tasks}
    assert kinds == {"f0.parquet": "shredded", "f2.parquet": "variant", "f3.parquet": "variant"}
    df = vs.sql(spark, query, e=events)
    assert df.collect()[0][0] == sum(range(30, 46))
    physical = df._jdf.queryExecution().executedPlan().toString()
    assert "ReadSchema: struct<v:struct<typed_value:struct<a:struct<typed_value:bigint>>>>" in physical
    assert "GreaterThanOrEqual(v.typed_value.a.typed_value,30)" in physical
    # f0 has five row groups of 20 rows: only the two holding 30..45 are read (f2 and f3, read
    # as Variant, have no pushable filter: all their 200 rows are scanned)
    assert sorted(_scan_rows(df)) == [40, 200]


def test_spark_written_shredded_files_take_the_struct_path(spark: Any, events: Table) -> None:
    plan = vs.explain(spark, "SELECT v:c.d::bigint FROM {e} WHERE v:a::bigint > 150", e=events, show=False).plans["e"]
    assert {t.relative_path for g in plan.groups if g.kind == "shredded" for t in g.tasks} == {"f1.parquet"}
    got = [r[0] for r in vs.sql(spark, "SELECT v:c.d::bigint FROM {e} WHERE v:a::bigint > 150", e=events).collect()]
    assert sorted(d for d in got if d is not None) == [2 * i for i in range(151, 200)]
    assert got.count(None) == 200  # f2 and f3 have no c


def test_variant_columns_stay_variant_and_star_reads_everything(any_spark: Any, events: Table) -> None:
    df = vs.read(any_spark, events, where="id IN (1, 302)")
    assert df.schema.simpleString() == "struct<id:bigint,v:variant>"
    assert sorted((r.id, r.v.toJson()) for r in df.collect()) == [
        (1, '{"a":1,"b":"k1","c":{"d":2}}'), (302, '{"a":302,"b":"k2"}'),
    ]
    df = vs.read(any_spark, str(events.path), columns=["id", "v:a::int AS a"], where="v:a::int < 3")
    assert sorted(map(tuple, df.collect())) == [(0, 0), (1, 1), (2, 2)]


def test_casts_that_fail_raise_like_spark(any_spark: Any, spark: Any, events: Table) -> None:
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    failed = (PySparkException, Py4JJavaError)  # a task failure may come back unconverted
    for query in ("SELECT v:b::int FROM {e}", "SELECT variant_get(v, '$.b', 'int') FROM {e} WHERE id = 5"):
        with pytest.raises(failed, match="INVALID_VARIANT_CAST"):
            vs.sql(any_spark, query, e=events).collect()
        with pytest.raises(failed, match="INVALID_VARIANT_CAST"):
            _reference(spark, events, query).collect()
    # the failing file (f2, "210") is outside the range, but statistics cannot show that (no
    # bounds for a mixed-type path), so it is read and the cast fails there as in Spark
    with pytest.raises(failed, match="INVALID_VARIANT_CAST"):
        vs.sql(any_spark, "SELECT id FROM {e} WHERE v:a::tinyint > 0", e=events).collect()
    query = "SELECT count(try_variant_get(v, '$.b', 'int')), count(TRY_CAST(v:a AS TINYINT)) FROM {e}"
    assert tuple(vs.sql(any_spark, query, e=events).collect()[0]) == (0, 128)  # a = 0..127 fit a tinyint
    assert vs.sql(any_spark, query, e=events).collect() == _reference(spark, events, query).collect()


def test_time_travel_and_empty_results(any_spark: Any, events: Table) -> None:
    more = _add(events, _write(events, "f4.parquet", [(1000, {"a": 1000})], "a bigint"))
    events.commit_files([more], "append")
    assert vs.read(any_spark, events, columns=["count(*)"]).collect()[0][0] == 401
    assert vs.read(any_spark, events, columns=["count(*)"], version=1).collect()[0][0] == 400
    empty = vs.sql(any_spark, "SELECT id, v:a::bigint AS a FROM {e} WHERE v:a::bigint > 5000", e=events)
    assert empty.collect() == [] and empty.columns == ["id", "a"]


def test_partitions_prune_and_come_back_as_values(any_spark: Any, tmp_path: Path) -> None:
    table = Table.create(tmp_path / "parts", "id bigint, v variant, day date, region string", partition_by=["day", "region"])
    adds = []
    for i, (day, region) in enumerate([("2024-01-01", "eu"), ("2024-01-02", "us"), ("2024-01-02", "eu")]):
        rel = _write(table, f"day={day}/region={region}/f.parquet", [(i * 10 + j, {"a": j}) for j in range(5)], "a int")
        adds.append(_add(table, rel, {"day": day, "region": region}))
    table.commit_files(adds, "append")
    query = "SELECT region, day, sum(v:a::bigint) FROM {p} WHERE day = DATE'2024-01-02' GROUP BY 1, 2 ORDER BY 1"
    explanation = vs.explain(any_spark, query, p=table, show=False)
    assert len(explanation.plans["p"].skipped_by_partition) == 1
    assert "skipped by partition values: 1" in str(explanation)
    import datetime as dt

    assert [tuple(r) for r in vs.sql(any_spark, query, p=table).collect()] == [
        ("eu", dt.date(2024, 1, 2), 10), ("us", dt.date(2024, 1, 2), 10),
    ]
    nothing = "SELECT v:a::int AS a, day FROM {p} WHERE day > DATE'2030-01-01'"
    assert vs.explain(any_spark, nothing, p=table, show=False).plans["p"].groups == ()
    empty = vs.sql(any_spark, nothing, p=table)
    assert empty.collect() == [] and empty.schema.simpleString() == "struct<a:int,day:date>"


def test_struct_held_variants_and_two_tables(any_spark: Any, tmp_path: Path, events: Table) -> None:
    nested = Table.create(tmp_path / "nested", "k bigint, s struct<v: variant, n: int>")
    nested.append([{"k": i, "s": {"v": None, "n": i}} for i in range(3)])
    df = vs.sql(any_spark, "SELECT n.k, n.s.n, e.v:b::string FROM {n} n JOIN {e} e ON n.k = e.id ORDER BY 1", n=nested, e=events)
    assert [tuple(r) for r in df.collect()] == [(0, 0, "k0"), (1, 1, "k1"), (2, 2, "k2")]


def test_the_callers_session_is_not_changed_and_its_views_are_visible(any_spark: Any, events: Table) -> None:
    any_spark.range(3).createOrReplaceTempView("wanted_ids")
    before = {t.name for t in any_spark.catalog.listTables()}
    df = vs.sql(any_spark, "SELECT id, v:a::bigint FROM {e} WHERE id IN (SELECT id FROM wanted_ids)", e=events)
    assert sorted(map(tuple, df.collect())) == [(0, 0), (1, 1), (2, 2)]
    assert any_spark.conf.get(IGNORE_VARIANT_ANNOTATION) == "false"
    assert {t.name for t in any_spark.catalog.listTables()} == before
    # the result DataFrame keeps working when combined with the caller's own DataFrames
    assert df.join(any_spark.range(2), "id").count() == 2


def test_explain_shows_groups_skips_and_sql(any_spark: Any, events: Table, capsys: Any) -> None:
    vs.explain(any_spark, "SELECT v:b::string, count(*) FROM {e} WHERE v:a::bigint < 50 GROUP BY 1", e=events)
    text = capsys.readouterr().out
    assert "skipped by statistics: 1" in text and "f1.parquet" in text
    assert "shredded read: 1 file(s), 100 row(s): struct leaves v:$['b'] AS string <- string; v:$['a'] AS long <- long" in text
    assert "variant read: 2 file(s), 200 row(s)" in text
    assert "IF(__vl_shredded, __vl_0, CAST(VARIANT_GET(v, '$.b') AS STRING))" in text
    text = str(vs.explain(any_spark, events, columns=["*"], show=False))
    assert "Variant columns read whole: SELECT * reads every column" in text and "(as written)" in text



def test_explain_lists_the_files_put_back_and_the_cast_that_could_raise(spark: Any, tmp_path: Path) -> None:
    table = Table.create(tmp_path / "t", "id bigint, v variant", properties={"delta.enableVariantShredding": "true"})
    table.append([{"id": i, "v": {"a": i}} for i in range(5)])
    table.append([{"id": 10 + i, "v": {"a": 1000 + i}} for i in range(3)])  # too large for a TINYINT
    where = "v:a::tinyint < -5"
    explanation = vs.explain(spark, table, ["id"], where, show=False)
    text = str(explanation)
    assert "skipped by statistics: 1" in text
    assert "put back although statistics exclude them (a cast in the filter could raise): 1" in text
    assert "variant_get(v, '$[\\'a\\']', 'byte')" in text
    assert [p.task.num_records for p in explanation.plans["table"].put_back] == [3]
    # Spark meets the failing cast in the file put back; so does the pyarrow reader
    with pytest.raises(Exception, match="INVALID_VARIANT_CAST|CAST"):
        vs.read(spark, table, ["id"], where).collect()
    with pytest.raises(ExpressionEvaluationError, match="TINYINT|byte"):
        table.scan(where).to_arrow()


DELTA_QUERIES = [
    "SELECT i, v:id::bigint, v:name::string, nv.v:name::string FROM {t} WHERE v:id::bigint > 3",
    "SELECT v:name::string, count(*) FROM {t} WHERE v:id::bigint BETWEEN 2 AND 6 GROUP BY 1",
    "SELECT i, to_json(v), to_json(nv.v) FROM {t}",
]


@pytest.mark.parametrize("query", DELTA_QUERIES)
def test_a_table_written_by_delta_lake(spark: Any, testdata: Path, query: str) -> None:
    table = Table(testdata / "delta" / "variant-stats-no-checkpoint")
    got = vs.sql(spark, query, t=table)
    expected = _reference(spark, table, query.replace("{t}", "{e}"), "i int, v variant, nv struct<v: variant>")
    assert sorted(map(tuple, got.collect())) == sorted(map(tuple, expected.collect()))


ICEBERG_CASES = [44, 46, 83, 130, 133, 134]  # shredded objects written by Apache Iceberg (parquet-avro)
ICEBERG_QUERIES = [
    "SELECT id, var:a::int, var:b::string, var:c.a::bigint, var:c.b::string FROM {e}",
    "SELECT id FROM {e} WHERE var:a IS NULL OR var:c.a::int > 0",
    "SELECT id, to_json(var) FROM {e}",
]


def test_files_written_by_iceberg(spark: Any, testdata: Path, tmp_path: Path) -> None:
    import shutil

    table = Table.create(tmp_path / "iceberg", "id int, var variant")
    adds = []
    for case in ICEBERG_CASES:
        rel = f"case-{case:03d}.parquet"
        shutil.copyfile(testdata / "parquet-testing" / "shredded_variant" / rel, Path(table.path) / rel)
        adds.append(_add(table, rel))
    table.commit_files(adds, "append")
    plan = vs.explain(spark, ICEBERG_QUERIES[0], e=table, show=False).plans["e"]
    assert {g.kind for g in plan.groups} == {"variant"}  # no file has every path perfectly shredded
    shredded = vs.explain(spark, "SELECT var:b::string FROM {e}", e=table, show=False).plans["e"]
    assert {t.relative_path for g in shredded.groups if g.kind == "shredded" for t in g.tasks} == {
        "case-046.parquet", "case-130.parquet", "case-133.parquet", "case-134.parquet",
    }
    for query in ICEBERG_QUERIES + ["SELECT id, var:b::string FROM {e} WHERE var:b IS NOT NULL"]:
        got = sorted(map(tuple, vs.sql(spark, query, e=table).collect()), key=repr)
        expected = sorted(map(tuple, _reference(spark, table, query, "id int, var variant").collect()), key=repr)
        assert got == expected, query


def _struct_column(structs: list[dict[str, Any] | None]) -> Any:
    """``struct<n: int, v: variant>`` as Arrow, the Variants encoded from Python values."""
    import pyarrow as pa

    from varlake.delta.schema import variant_arrow_type
    from varlake.variant import Variant

    encoded = [None if s is None or s["v"] is None else Variant.from_python(s["v"]) for s in structs]
    v = pa.StructArray.from_arrays(
        [pa.array([b"\x01\x00\x00" if e is None else e.metadata for e in encoded], pa.binary()),
         pa.array([b"\x00" if e is None else e.value for e in encoded], pa.binary())],
        fields=list(variant_arrow_type()), mask=pa.array([e is None for e in encoded], pa.bool_()),
    )
    n = pa.array([None if s is None else s["n"] for s in structs], pa.int32())
    return pa.StructArray.from_arrays([n, v], names=["n", "v"], mask=pa.array([s is None for s in structs], pa.bool_()))


def test_variants_held_in_structs_take_the_struct_path(spark: Any, tmp_path: Path) -> None:
    table = Table.create(tmp_path / "nested", "id bigint, s struct<n: int, v: variant>, w variant")
    schema = table.schema
    adds = []
    files = [
        ([{"n": i, "v": {"a": i, "b": f"k{i % 2}"}} for i in range(20)], "a bigint, b string"),
        ([{"n": i, "v": {"a": str(i)}} if i % 3 else None for i in range(20, 40)], "a bigint"),
        ([{"n": None, "v": None} for _ in range(40, 45)], None),
    ]
    for i, (structs, layout) in enumerate(files):
        rel = f"f{i}.parquet"
        start = {0: 0, 1: 20, 2: 40}[i]
        data = to_arrow_table({"id": list(range(start, start + len(structs))), "s": _struct_column(structs), "w": [{"z": 1}] * len(structs)}, schema)
        write_parquet(data, Path(table.path) / rel, shredding={"s.v": layout} if layout else None, variant_columns=["s.v", "w"])
        adds.append(_add(table, rel))
    table.commit_files(adds, "append")
    query = "SELECT id, s.n, s.v:a::bigint, x.s.v:b IS NULL FROM {e} x WHERE s.v:a::bigint BETWEEN 5 AND 30 OR s IS NULL"
    plan = vs.explain(spark, query, e=table, show=False).plans["e"]
    assert not plan.whole_variant
    assert {t.relative_path for g in plan.groups if g.kind == "shredded" for t in g.tasks} == {"f0.parquet"}
    got = vs.sql(spark, query, e=table)
    expected = _reference(spark, table, query, "id bigint, s struct<n: int, v: variant>, w variant")
    assert got.columns == expected.columns
    assert sorted(map(tuple, got.collect()), key=repr) == sorted(map(tuple, expected.collect()), key=repr)
    got.collect()
    read = sorted(n.requiredSchema().simpleString() for n in _scans(got))
    assert "struct<id:bigint,s:struct<n:int,v:struct<typed_value:struct<a:struct<typed_value:bigint>,b:struct<typed_value:string>>>>>" in read


def test_sql_spark_rejects_after_rewriting_falls_back_to_reading_variants(any_spark: Any, spark: Any, events: Table) -> None:
    from varlake.spark.reading.prepare import prepare
    from varlake.spark.reading.reader import run

    query = "SELECT v:b::string AS b, count(*) AS n FROM {e} WHERE v:a::bigint < 120 GROUP BY 1"
    prepared = prepare(any_spark, query, {"e": events})
    assert prepared.rewritten
    expected = sorted(map(tuple, run(any_spark, prepared).collect()))
    prepared.sql = prepared.sql.replace("GROUP BY", "GROUP BY BY")  # as if sqlglot had rendered bad SQL
    assert sorted(map(tuple, run(any_spark, prepared).collect())) == expected
    assert expected == sorted(map(tuple, _reference(spark, events, query).collect()))


def test_queries_share_table_reads_and_stay_correct(any_spark: Any, spark: Any, events: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    from varlake.spark.reading import reader
    from varlake.spark.reading.shared_views import SharedReads

    reads = SharedReads(capacity=2)
    monkeypatch.setattr(reader, "SHARED_READS", reads)
    query = "SELECT {e}.id, v:a::bigint + %d AS x FROM {e} WHERE v:b::string = 'k1'"
    first = vs.sql(any_spark, query % 1, e=events)
    second = vs.sql(any_spark, query % 2, e=events)
    assert len(reads) == 1  # one plan, one shared read
    unnamed = "SELECT {e}.id, sum(v:a::bigint + 3) FROM {e} WHERE {e}.id %% 2 = %d GROUP BY {e}.id"
    with spark_conf(any_spark, {"spark.sql.parquet.enableVectorizedReader": "false"}):
        third = vs.sql(any_spark, unnamed % 0, e=events)  # other confs: a read of its own
        assert third.columns == _reference(spark, events, unnamed % 0).columns
        assert sorted(third.collect()) == sorted(_reference(spark, events, unnamed % 0).collect())
    assert len(reads) == 2
    oldest = reads.views[0]
    other = vs.sql(any_spark, "SELECT v:c.d::int AS d FROM {e}", e=events)  # evicts the oldest read
    assert len(reads) == 2 and oldest not in reads.views
    listed = {(oldest[0], t.name) for t in any_spark.catalog.listTables(oldest[0])}
    assert set(reads.views) <= listed
    # classic DataFrames hold their analysed reads; Connect ones name the view, which stays
    # (retired) while first and second live
    assert (oldest not in listed) if is_classic(any_spark) else (oldest in listed)
    # DataFrames made before keep their reads
    for df, k in ((first, 1), (second, 2)):
        assert sorted(df.collect()) == sorted(_reference(spark, events, query % k).collect())
    assert sorted(other.collect(), key=repr) == sorted(_reference(spark, events, "SELECT v:c.d::int AS d FROM {e}").collect(), key=repr)
    again = vs.sql(any_spark, unnamed % 1, e=events)
    assert again.columns == _reference(spark, events, unnamed % 1).columns
    assert sorted(again.collect()) == sorted(_reference(spark, events, unnamed % 1).collect())
    del first, second, df
    gc.collect()
    vs.sql(any_spark, query % 3, e=events)  # a later query drops the retired view nothing uses
    assert oldest not in {(oldest[0], t.name) for t in any_spark.catalog.listTables(oldest[0])}


def test_narrower_numeric_casts_take_the_struct_path_when_footer_bounds_fit(spark: Any, tmp_path: Path) -> None:
    from decimal import Decimal

    table = Table.create(tmp_path / "nums", "id bigint, v variant")
    layout = "q decimal(18,2), n bigint"
    adds = [
        _add(table, _write(table, "fit.parquet", [(i, {"q": Decimal(i) / 4, "n": i - 50}) for i in range(100)], layout)),
        _add(table, _write(table, "wide.parquet", [(100, {"q": Decimal("12345678901234.25"), "n": 2**40})], layout)),
    ]
    table.commit_files(adds, "append")
    query = "SELECT id, try_variant_get(v, '$.q', 'decimal(15,2)') AS q, try_variant_get(v, '$.n', 'int') AS n FROM {e}"
    plan = vs.explain(spark, query, e=table, show=False).plans["e"]
    assert {t.relative_path: g.kind for g in plan.groups for t in g.tasks} == {"fit.parquet": "shredded", "wide.parquet": "variant"}
    got, expected = vs.sql(spark, query, e=table), _reference(spark, table, query)
    assert got.dtypes == expected.dtypes
    assert sorted(got.collect()) == sorted(expected.collect())
    with pytest.raises(Exception, match="INVALID_VARIANT_CAST"):  # as Spark: the wide file's n does not fit an int
        vs.sql(spark, "SELECT sum(v:n::int) FROM {e}", e=table).collect()
