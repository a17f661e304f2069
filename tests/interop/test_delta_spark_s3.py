"""varlake and delta-spark 4.4 on one S3 table (MinIO): what is safe to mix, and what is not.

delta-spark's open-source log store for ``s3://``/``s3a://`` is ``S3SingleDriverLogStore``:
it commits ``_delta_log/N.json`` by checking that the object is absent (a HEAD through S3A)
and then writing it with a plain ``PUT``. Its mutual exclusion is a lock inside one JVM. S3A
in Hadoop 3.5 can send ``If-None-Match: *`` (``createFile`` with
``fs.option.create.conditional.overwrite``), but Delta 4.4 does not ask for it. So:

- safe: delta-spark writing while varlake only reads, varlake writing while delta-spark only
  reads, and the two taking turns (the HEAD sees the other's commit, delta-spark retries);
- not safe: delta-spark committing while varlake commits. A varlake commit that lands
  between delta-spark's HEAD and its PUT is overwritten: varlake's append returned its
  version and its rows are gone. Shown here with Delta's own log store class, held between
  the two requests.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from oracles import jobs
from oracles.delta_spark import s3a_jars
from varlake import Table
from varlake.io.store_settings import StoreSettings


@pytest.fixture
def s3_oracle(delta_spark, s3_server):
    """The oracle reaching the test MinIO through S3A (settings on its running session)."""
    if not s3a_jars():
        reason = "Hadoop's S3A jars are not fetched (make tools): the oracle cannot reach s3a://"
        if os.environ.get("VARLAKE_REQUIRE_S3"):
            pytest.fail(reason)
        pytest.skip(reason)
    settings = StoreSettings("s3", s3_server.options(), {}).s3a_properties()
    delta_spark.run(
        "hadoop = spark.sparkContext._jsc.hadoopConfiguration()\n"
        f"for k, v in {dict(settings)!r}.items():\n"
        "    hadoop.set(k, v)\n"
        "result = True\n"
    )
    return delta_spark


def _s3a(uri: str) -> str:
    return "s3a://" + uri.split("://", 1)[1]


def test_taking_turns_on_s3_is_safe(s3_oracle, s3_server):
    uri = s3_server.uri("turns")
    options = s3_server.options()
    table = Table.create(uri, "id bigint, v variant", storage_options=options)
    table.append([{"id": i, "v": {"i": i}} for i in range(3)])
    for turn in range(2):
        s3_oracle.run(
            f"spark.range({100 + 10 * turn}, {103 + 10 * turn}).selectExpr('id', \"parse_json('[1]') AS v\")"
            f".write.format('delta').mode('append').save({_s3a(uri)!r})\nresult = True"
        )
        table.append([{"id": 50 + turn, "v": "x"}])
    expected = [0, 1, 2, 50, 51, 100, 101, 102, 110, 111, 112]
    fresh = Table(uri, storage_options=options)
    assert sorted(fresh.scan(columns=["id"]).to_arrow().column("id").to_pylist()) == expected
    assert [r["id"] for r in s3_oracle.rows(_s3a(uri), "id", order_by="id")] == expected
    assert fresh.version == 5


def test_delta_spark_s3_log_store_overwrites_a_varlake_commit(s3_oracle, s3_server, tmp_path):
    # the log store delta-spark uses for s3a:// (no spark.delta.logStore.s3a.impl is set)
    assert s3_oracle.run(
        "result = [spark.sparkContext._jvm.org.apache.spark.sql.delta.storage.DelegatingLogStore"
        ".defaultS3LogStoreClassName(), spark.conf.get('spark.delta.logStore.s3a.impl', None)]"
    ) == ["io.delta.storage.S3SingleDriverLogStore", None]
    uri = s3_server.uri("overwritten")
    options = s3_server.options()
    table = Table.create(uri, "id bigint", storage_options=options)
    table.append([{"id": 1}])  # version 1
    held, go = tmp_path / "held", tmp_path / "go"
    commit = f"{_s3a(uri)}/_delta_log/{2:020d}.json"
    # delta-spark's log store commits version 2; its actions are read from an iterator that
    # waits once the object was found absent and the stream opened (before the PUT).
    jobs.start(s3_oracle, "held_commit", f"""
from pyspark.java_gateway import ensure_callback_server_started

class _Held:
    def __init__(self, lines):
        self.lines, self.i = lines, 0
    def hasNext(self):
        return self.i < len(self.lines)
    def next(self):
        import os, time
        if self.i == 0:
            open({str(held)!r}, "a").close()
            deadline = time.time() + 120
            while not os.path.exists({str(go)!r}) and time.time() < deadline:
                time.sleep(0.02)
        self.i += 1
        return self.lines[self.i - 1]
    class Java:
        implements = ["java.util.Iterator"]

def _job():
    ensure_callback_server_started(spark.sparkContext._gateway)
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    store = jvm.io.delta.storage.S3SingleDriverLogStore(conf)
    line = '{{"commitInfo":{{"timestamp":1,"operation":"WRITE","operationParameters":{{}},"engineInfo":"held"}}}}'
    store.write(jvm.org.apache.hadoop.fs.Path({commit!r}), _Held([line]), False, conf)
    return "written"
""")
    deadline = time.monotonic() + 240
    while not held.exists():
        assert time.monotonic() < deadline and not jobs.done(s3_oracle, "held_commit"), jobs.wait(s3_oracle, "held_commit", 1)
        time.sleep(0.05)
    assert table.append([{"id": 2}]) == 2  # varlake's put-if-absent wins version 2 ...
    assert sorted(Table(uri, storage_options=options).scan().to_arrow().column("id").to_pylist()) == [1, 2]
    Path(go).touch()
    assert jobs.wait(s3_oracle, "held_commit") == "written"  # ... and delta-spark's PUT replaces it
    fresh = Table(uri, storage_options=options)
    assert fresh.version == 2
    latest = max(fresh.history(), key=lambda e: e.version)
    assert latest.commit_info.get("engineInfo") == "held"  # delta-spark's commit, not varlake's
    assert fresh.scan().to_arrow().column("id").to_pylist() == [1]  # varlake's committed row is lost
    # S3A can do put-if-absent when asked: the same write through createFile with
    # fs.option.create.conditional.overwrite is refused by the store
    refused = s3_oracle.run(f"""
jvm = spark.sparkContext._jvm
conf = spark.sparkContext._jsc.hadoopConfiguration()
path = jvm.org.apache.hadoop.fs.Path({commit!r})
out = path.getFileSystem(conf).createFile(path).overwrite(False).must("fs.option.create.conditional.overwrite", True).build()
out.write(bytearray(b"{{}}"))
try:
    out.close()
    result = None
except Exception as exc:
    result = str(exc)[:300]
""")
    assert refused and "RemoteFileChangedException" in refused and "pre-conditions" in refused, refused  # HTTP 412
