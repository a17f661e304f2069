"""varlake's Spark entry points on S3 (MinIO): the test run's one SparkSession reaches the store
through Hadoop's S3A connector (``s3_spark``), varlake's Python side through ``io.object_store``,
both from the same settings. Spark writes read back in Python and the other way round; ``s3a://``
and ``s3://`` name one table; DELETE, optimize, JSON ingest and a stream with its checkpoint
on S3; every data file written straight to its final name by the magic committer."""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest

from varlake import spark as vs
from varlake.spark.session.object_store import COMMITTER_CONF, S3AConnectorMissingError, check_s3a, s3a_conf
from varlake.spark.uris import table_location, table_path
from varlake.table import Table

pytestmark = pytest.mark.spark


def _keys(s3_server, uri: str) -> list[str]:
    """Every object key below ``uri`` (``s3://bucket/prefix``), as the server lists them."""
    bucket, _, prefix = uri[len("s3://"):].partition("/")
    return sorted(o.object_name for o in s3_server.client().list_objects(bucket, prefix=prefix + "/", recursive=True))


def _rows(table: Table) -> list[tuple]:
    got = table.scan().to_arrow()
    return sorted(zip(*[got.column(n).to_pylist() for n in ("id", "name")]))


def test_s3a_conf_from_store_settings():
    conf = s3a_conf({"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}, env={})
    assert conf["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.committer.name"] == "magic"
    assert any(j.endswith(".jar") and "hadoop-aws" in j for j in conf["spark.jars"].split(","))


def test_missing_connector_names_make_tools(tmp_path, monkeypatch):
    monkeypatch.setenv("VARLAKE_CACHE", str(tmp_path))
    with pytest.raises(S3AConnectorMissingError, match="make tools"):
        s3a_conf({}, env={})


def test_uris_s3_and_s3a_name_one_file():
    # Spark's names (percent-encoded, s3 or s3a) and the table's (decoded) of one file agree.
    assert table_path("s3a://bkt/t/a%20b.parquet") == table_path("s3://bkt/t/a%20b.parquet") == "s3://bkt/t/a b.parquet"
    assert table_location("s3://bkt/t/a b.parquet") == table_location("s3a://bkt/t/a b.parquet") == "s3://bkt/t/a b.parquet"
    assert table_path("s3://bkt/t/a%2520b.parquet") == table_location("s3://bkt/t/a%20b.parquet")  # a literal %
    assert table_path("file:///tmp/x/../a%2520b.parquet") == table_location("/tmp/a%20b.parquet") == "/tmp/a%20b.parquet"


def test_spark_write_python_read_and_back(s3_spark, s3_server):
    spark, options = s3_spark, s3_server.options()
    for key, value in COMMITTER_CONF.items():  # the magic committer: no _temporary, no rename
        if key.startswith("spark.hadoop."):
            assert spark.sparkContext._jsc.hadoopConfiguration().get(key[len("spark.hadoop."):]) == value
        else:
            assert spark.conf.get(key) == value
    uri = s3_server.uri("spark")
    df = spark.createDataFrame([(i, f"n{i}") for i in range(20)], "id long, name string")
    result = vs.write(df, uri, storage_options=options)
    assert result.created and result.num_rows == 20
    # The entry point gave its storage_options to Spark too, for this bucket only.
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    assert hadoop.get(f"fs.s3a.bucket.{s3_server.bucket}.endpoint") == s3_server.endpoint
    keys = _keys(s3_server, uri)
    data = [k for k in keys if k.endswith(".parquet")]
    assert data and all(".pending" not in k and "__magic" not in k and "_temporary" not in k for k in keys), keys
    logged = {a.path for a in Table(uri, storage_options=options).files()}
    assert {k.split("/", 1)[1] for k in data} == logged  # every key is a final, logged name
    assert _rows(Table(uri, storage_options=options)) == [(i, f"n{i}") for i in range(20)]

    # Python writes, Spark reads: by the s3:// and the s3a:// name of one table.
    other = s3_server.uri("python")
    Table.create(other, "id long, name string", storage_options=options).append(
        pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]})
    )
    for name in (other, "s3a://" + other[len("s3://"):]):
        got = vs.sql(spark, "SELECT id, name FROM {t} WHERE id > 1 ORDER BY id", t=name, storage_options=options).collect()
        assert [tuple(r) for r in got] == [(2, "b"), (3, "c")]
    vs.write(spark.createDataFrame([(4, "d")], "id long, name string"), "s3a://" + other[len("s3://"):], storage_options=options)
    assert _rows(Table(other, storage_options=options)) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]


def test_spark_delete_and_optimize_on_s3(s3_spark, s3_server):
    spark, options = s3_spark, s3_server.options()
    uri = s3_server.uri("dml")
    for start in (0, 10, 20):  # three appends: three small files
        vs.write(spark.createDataFrame([(i, f"n{i}") for i in range(start, start + 10)], "id long, name string"), uri,
                 storage_options=options)  # fmt: skip
    deleted = vs.delete(spark, uri, "id % 3 = 0", storage_options=options)
    assert deleted.num_affected_rows == 10
    expected = [(i, f"n{i}") for i in range(30) if i % 3]
    assert _rows(Table(uri, storage_options=options)) == expected
    # Spark reads past the deletion vectors (its file names matched to the table's), by the s3a:// name too.
    assert any(a.deletion_vector is not None for a in Table(uri, storage_options=options).files())
    s3a = "s3a://" + uri[len("s3://"):]
    got = vs.sql(spark, "SELECT id FROM {t} ORDER BY id", t=s3a, storage_options=options).collect()
    assert [r["id"] for r in got] == [i for i, _ in expected]
    updated = vs.sql(spark, "UPDATE {t} SET name = upper(name) WHERE id = 1", t=s3a, storage_options=options).collect()
    assert updated[0]["num_affected_rows"] == 1
    expected = [(i, n.upper() if i == 1 else n) for i, n in expected]
    result = vs.optimize(spark, uri, storage_options=options)
    assert result.version is not None
    table = Table(uri, storage_options=options)
    assert len(table.files()) == 1
    assert _rows(table) == expected
    got = vs.read(spark, uri, columns=["count(*) AS n"], storage_options=options).collect()
    assert got[0]["n"] == len(expected)


def test_spark_ingest_jsonl_into_s3(s3_spark, s3_server, tmp_path):
    options = s3_server.options()
    source = tmp_path / "events.jsonl"
    source.write_text("".join(json.dumps({"kind": f"k{i % 2}", "n": i}) + "\n" for i in range(12)) + "{bad\n")
    uri = s3_server.uri("ingest")
    result = vs.ingest_json(s3_spark, str(source), uri, columns={"kind": "$.kind::string"}, storage_options=options)
    assert (result.written, result.quarantined) == (12, 1)
    got = vs.sql(s3_spark, "SELECT kind, sum(doc:n::int) AS s FROM {t} GROUP BY kind ORDER BY kind", t=uri,
                 storage_options=options).collect()  # fmt: skip
    assert [tuple(r) for r in got] == [("k0", 30), ("k1", 36)]
    quarantine = Table(uri + "_quarantine", storage_options=options)
    assert quarantine.scan().to_arrow().num_rows == 1


def test_stream_with_checkpoint_on_s3(s3_spark, s3_server, tmp_path):
    options = s3_server.options()
    source = tmp_path / "in"
    source.mkdir()
    (source / "a.jsonl").write_text("".join(json.dumps({"n": i}) + "\n" for i in range(5)))
    uri, checkpoint = s3_server.uri("stream"), s3_server.uri("checkpoint")
    versions = []
    for batch in range(2):  # a restart: the second run goes on from the checkpoint on S3
        query = vs.ingest_stream(s3_spark, str(source), uri, checkpoint, storage_options=options)
        query.awaitTermination()
        versions.append(Table(uri, storage_options=options).snapshot().version)
        if batch == 0:
            (source / "b.jsonl").write_text("".join(json.dumps({"n": i}) + "\n" for i in range(5, 8)))
    table = Table(uri, storage_options=options)
    assert table.scan().to_arrow().num_rows == 8
    assert versions[1] == versions[0] + 1  # one commit for the new file, a.jsonl not taken again
    assert any(k.endswith("varlake-stream-id") for k in _keys(s3_server, checkpoint))
    assert any("/offsets/" in k for k in _keys(s3_server, checkpoint))


def test_check_s3a_names_the_missing_connector(spark, monkeypatch):
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    before = hadoop.get("fs.s3.impl")
    hadoop.unset("fs.s3.impl")
    try:
        with pytest.raises(S3AConnectorMissingError):
            check_s3a(spark, f"s3://bkt/{uuid.uuid4().hex}")
    finally:
        if before is not None:
            hadoop.set("fs.s3.impl", before)
