"""varlake.spark.write: Spark writes the files, varlake commits one version with stats.

Checks the stable shredded layout across writes (read from the Parquet footers), that
varlake, ``read_parquet`` and Spark all read back what was written, partitions, modes,
idempotent app ids, schema checks, failed jobs (no commit; stray files vacuumed) and
concurrent writers.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from varlake import Table, Variant, read_parquet
from varlake.errors import CommitConflictError, SchemaParseError, TableError, TableExistsError
from varlake.spark import spark_conf, write
from varlake.semantics.partition_values import spark_local_timestamp_to_utc as _utc_timestamp_text
from varlake.spark.writing.writer import EXECUTOR_STATS_THRESHOLD, commit_write, stage_write

pytestmark = pytest.mark.spark
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)

EVENTS = """
SELECT id, CAST(id % 3 AS INT) AS part,
       parse_json(CASE
         WHEN id % 11 = 0 THEN format_string('{{"a": "s%d", "b": {{"c": null}}}}', id)
         ELSE format_string('{{"a": %d, "b": {{"c": "x%d", "d": [%d, 2]}}, "t": %d.25}}', id, id % 7, id, id)
       END) AS v,
       timestamp_micros(1700000000000000 + id * 1000003) AS ts
FROM range({start}, {end}, 1, 2)
"""


def _events(spark: Any, start: int, end: int) -> Any:
    return spark.sql(EVENTS.format(start=start, end=end))


def _expected(df: Any) -> dict[int, tuple[int, str, Any]]:
    rows = df.selectExpr("id", "part", "to_json(v) AS j", "unix_micros(ts) AS us").collect()
    return {r["id"]: (r["part"], r["j"], r["us"]) for r in rows}


def _micros(ts: dt.datetime | None) -> int | None:
    return None if ts is None else (ts - EPOCH) // dt.timedelta(microseconds=1)


def _variant_json(value: Any) -> str | None:
    return None if value is None else Variant(value["metadata"], value["value"]).to_json()


def _from_arrow(table: pa.Table) -> dict[int, tuple[int, str | None, Any]]:
    return {
        r["id"]: (r["part"], _variant_json(r["v"]), _micros(r["ts"])) for r in table.to_pylist()
    }


def _layouts(t: Table) -> set[str]:
    return {str(pq.read_schema(t.data_file(f)).field("v").type) for f in t.files()}


def test_writes_share_one_shredded_layout_and_read_back_equal(any_spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "events"
    batches = [_events(any_spark, 0, 300), _events(any_spark, 300, 500), _events(any_spark, 500, 900)]
    expected: dict[int, Any] = {}
    for i, df in enumerate(batches):
        result = write(df, path)
        assert result.version == i + 1 and result.created == (i == 0)
        assert result.num_rows == df.count()
        expected.update(_expected(df))
    t = Table(path)
    assert t.version == 3
    ddl = t.properties["varlake.shredding.v"]
    assert ddl and "typed_value" in next(iter(_layouts(t)))
    assert len(_layouts(t)) == 1, "every file of the table has the same physical layout"
    for add in t.files():
        assert result.layout == {"v": ddl}
        stats = json.loads(add.stats)
        assert stats["numRecords"] > 0 and "v" in stats["minValues"] and "ts" in stats["maxValues"]
        assert not any(p.startswith(("_", ".")) for p in add.path.split("/"))
    # the table layer, the raw Parquet reader and Spark all read back the input
    got = _from_arrow(t.scan().to_arrow())
    want = expected
    assert got == want
    raw = pa.concat_tables([read_parquet(t.data_file(f)) for f in t.files()])
    assert {r["id"]: _variant_json(r["v"]) for r in raw.to_pylist()} == {k: v[1] for k, v in want.items()}
    back = any_spark.read.parquet(*[t.data_file(f) for f in t.files()]).selectExpr("id", "to_json(v) AS j").collect()
    assert {r["id"]: r["j"] for r in back} == {k: v[1] for k, v in want.items()}


def test_partitioned_write_records_partition_values(any_spark: Any, tmp_path: Path) -> None:
    df = any_spark.sql(
        """SELECT id, CASE WHEN id % 4 = 0 THEN NULL ELSE concat('k/', CAST(id % 4 AS STRING), ':=%') END AS k,
                  date_add(DATE'2024-02-28', CAST(id % 3 AS INT)) AS day, parse_json(format_string('{"n": %d}', id)) AS v
           FROM range(0, 60)"""
    )
    result = write(df, tmp_path / "p", partition_by=["k", "day"])
    t = Table(tmp_path / "p")
    assert t.partition_columns == ("k", "day")
    values = {(a.partition_values["k"], a.partition_values["day"]) for a in t.files()}
    assert result.num_files == len(t.files()) and len(values) == 12
    assert (None, "2024-02-28") in values and ("k/1:=%", "2024-03-01") in values
    got = {r["id"]: (r["k"], r["day"].isoformat(), _variant_json(r["v"])) for r in t.scan().to_arrow().to_pylist()}
    want = {
        r["id"]: (r["k"], r["day"].isoformat(), r["j"])
        for r in df.selectExpr("id", "k", "day", "to_json(v) AS j").collect()
    }
    assert got == want
    assert t.files("k = 'k/2:=%'") and all(a.partition_values["k"] == "k/2:=%" for a in t.files("k = 'k/2:=%'"))


def test_timestamp_partition_text_is_utc_and_refuses_ambiguous_local_times() -> None:
    assert _utc_timestamp_text("2024-01-01 01:30:00", "Europe/Berlin", "x") == "2024-01-01T00:30:00.000000Z"
    assert _utc_timestamp_text("2024-01-01 00:00:00.25", "UTC", "x") == "2024-01-01T00:00:00.250000Z"
    with pytest.raises(TableError, match="ambiguous"):
        _utc_timestamp_text("2024-10-27 02:30:00", "Europe/Berlin", "x")


def test_modes_and_idempotent_app_versions(any_spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "m"
    write(_events(any_spark, 0, 20), path, mode="error")
    with pytest.raises(TableExistsError):
        write(_events(any_spark, 0, 20), path, mode="error")
    assert write(_events(any_spark, 20, 30), path, app_id="job", app_version=1).version == 2
    again = write(_events(any_spark, 20, 30), path, app_id="job", app_version=1)
    assert again.version is None and Table(path).version == 2
    assert write(_events(any_spark, 100, 105), path, mode="overwrite").version == 3
    assert sorted(r["id"] for r in Table(path).scan(columns=["id"]).to_arrow().to_pylist()) == list(range(100, 105))
    with pytest.raises(TableError, match="write mode"):
        write(_events(any_spark, 0, 1), path, mode="upsert")


def test_schema_checks_name_the_column(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "s"
    write(_events(spark, 0, 10), path)
    with pytest.raises(TableError, match="'extra'"):
        write(_events(spark, 0, 10).selectExpr("*", "1 AS extra"), path)
    with pytest.raises(TableError, match="'part'.*string.*integer"):
        write(_events(spark, 0, 10).selectExpr("id", "CAST(part AS STRING) AS part", "v", "ts"), path)
    write(_events(spark, 10, 12).select("id", "v"), path)  # missing nullable columns come back NULL
    rows = {r["id"]: r for r in Table(path).scan().to_arrow().to_pylist()}
    assert rows[11]["part"] is None and rows[11]["ts"] is None and rows[3]["part"] == 0
    with pytest.raises(SchemaParseError, match="interval"):
        write(spark.sql("SELECT INTERVAL '1' DAY AS i"), tmp_path / "bad")
    assert not (tmp_path / "bad" / "_delta_log").exists()


def test_shredding_off_unshredded_tables_and_explicit_schemas(spark: Any, tmp_path: Path) -> None:
    off = write(_events(spark, 0, 50), tmp_path / "off", shredding="off")
    t = Table(tmp_path / "off")
    assert off.layout == {"v": None} and "typed_value" not in next(iter(_layouts(t)))
    assert "varlake.shredding.v" not in t.properties and "delta.enableVariantShredding" not in t.properties

    plain = Table.create(tmp_path / "plain", "id bigint, part int, v variant, ts timestamp")
    assert write(_events(spark, 0, 50), plain.path).layout == {"v": None}
    with pytest.raises(TableError, match="enableVariantShredding"):
        write(_events(spark, 0, 50), plain.path, shredding="a bigint")

    forced = write(_events(spark, 0, 50), tmp_path / "forced", shredding="a bigint, zz string")
    t = Table(tmp_path / "forced")
    assert forced.layout == {"v": "a bigint, zz string"} == {"v": t.properties["varlake.shredding.v"]}
    typed = pq.read_schema(t.data_file(t.files()[0])).field("v").type.field("typed_value").type
    assert [typed.field(i).name for i in range(typed.num_fields)] == ["a", "zz"]
    got = {r["id"]: _variant_json(r["v"]) for r in t.scan().to_arrow().to_pylist()}
    assert got == {k: v[1] for k, v in _expected(_events(spark, 0, 50)).items()}


def test_each_variant_column_keeps_its_own_schema(any_spark: Any, tmp_path: Path) -> None:
    # six columns, Variants at the top level and inside a struct, each with its own schema
    df = any_spark.sql(
        """SELECT id, parse_json(format_string('{"a": %d}', id)) AS v, id * 2 AS x,
                  named_struct('k', id, 'inner', parse_json('[1, 2]')) AS s, parse_json('"txt"') AS w, CAST(id AS STRING) AS y
           FROM range(0, 40, 1, 2)"""
    )
    result = write(df, tmp_path / "multi", partition_by=["y"])
    assert result.layout == {"v": "a bigint", "s.inner": "array<bigint>", "w": "string"} and result.note is None
    t = Table(tmp_path / "multi")
    assert {k: v for k, v in t.properties.items() if k.startswith("varlake.shredding.")} == {
        "varlake.shredding.v": "a bigint", "varlake.shredding.s.inner": "array<bigint>", "varlake.shredding.w": "string"
    }
    schema = pq.read_schema(t.data_file(t.files()[0]))
    assert schema.names == ["id", "v", "x", "s", "w"]
    assert str(schema.field("w").type.field("typed_value").type) == "string"
    assert "list" in str(schema.field("s").type.field("inner").type.field("typed_value").type)
    got = {
        r["id"]: (_variant_json(r["v"]), _variant_json(r["s"]["inner"]), _variant_json(r["w"]), r["y"])
        for r in t.scan().to_arrow().to_pylist()
    }
    assert got == {i: (f'{{"a":{i}}}', "[1,2]", '"txt"', str(i)) for i in range(40)}
    back = any_spark.read.parquet(*[t.data_file(f) for f in t.files()]).selectExpr("id", "to_json(s.inner) AS j").collect()
    assert sorted((r["id"], r["j"]) for r in back) == [(i, "[1,2]") for i in range(40)]


def test_failed_job_commits_nothing_and_vacuum_removes_its_files(any_spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "f"
    write(_events(any_spark, 0, 40), path)
    before = Table(path)
    version, live = before.version, {a.path for a in before.files()}
    # four tasks; only the last one fails, after the first ones committed their files
    failing = any_spark.sql(
        """SELECT id, CAST(0 AS INT) AS part,
                  CASE WHEN id = 399 THEN raise_error('boom') ELSE parse_json('{"a": 1}') END AS v,
                  TIMESTAMP'2024-01-01 00:00:00' AS ts
           FROM range(0, 400, 1, 4)"""
    )
    with pytest.raises(TableError, match="sampling.*boom"):
        write(failing, path)
    sample = any_spark.sql("SELECT parse_json('{\"a\": 1}') AS v")
    with pytest.raises(TableError, match="writing.*nothing was committed.*boom"):
        write(failing, path, sample=sample)
    after = Table(path)
    assert after.version == version and {a.path for a in after.files()} == live
    stray = sorted(
        os.path.relpath(os.path.join(d, f), path)
        for d, _, files in os.walk(path)
        if "_delta_log" not in d
        for f in files
        if os.path.relpath(os.path.join(d, f), path).replace(os.sep, "/") not in {p for p in live}
    )
    assert stray, "the tasks that finished left their files"
    assert not any(part.startswith(("_", ".")) for s in stray for part in s.split(os.sep))
    removed = after.vacuum(0, unsafe_retention=True)
    assert sorted(removed) == [s.replace(os.sep, "/") for s in stray]
    assert len(after.scan().to_arrow()) == 40


def test_many_files_get_stats_on_executors(any_spark: Any, tmp_path: Path) -> None:
    n = EXECUTOR_STATS_THRESHOLD + 1
    df = _events(any_spark, 0, 4 * n).repartition(n)
    result = write(df, tmp_path / "many")
    t = Table(tmp_path / "many")
    assert result.num_files == len(t.files()) == n
    for add in t.files():
        from urllib.parse import unquote

        assert add.stats == t.file_stats_json(unquote(add.path))


def test_concurrent_writers_keep_every_row(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "c"
    write(_events(spark, 0, 10), path)
    errors: list[BaseException] = []

    def writer(offset: int) -> None:
        try:
            for k in range(3):
                start = 1000 * offset + 100 * k
                write(_events(spark, start, start + 50), path)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in (1, 2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    t = Table(path)
    ids = sorted(r["id"] for r in t.scan(columns=["id"]).to_arrow().to_pylist())
    want = sorted(list(range(10)) + [1000 * o + 100 * k + i for o in (1, 2) for k in range(3) for i in range(50)])
    assert ids == want and t.version == 7


def test_staged_writers_racing_to_create_a_table(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "race"
    a = stage_write(_events(spark, 0, 30), path)
    b = stage_write(_events(spark, 30, 60), path)
    assert commit_write(a).created and not commit_write(b).created
    t = Table(path)
    assert len(t.scan().to_arrow()) == 60 and t.version == 2 and len(_layouts(t)) == 1

    other = tmp_path / "race2"
    objects = spark.sql("SELECT id, parse_json('{\"a\": 1}') AS v FROM range(20)")
    arrays = spark.sql("SELECT id, parse_json('[1, 2]') AS v FROM range(20)")
    first, second = stage_write(objects, other), stage_write(arrays, other)
    commit_write(first)
    with pytest.raises(CommitConflictError, match="shredding schema"):
        commit_write(second)
    t = Table(other)
    assert t.version == 1 and len(t.scan().to_arrow()) == 20


def test_spark_conf_restores_previous_values(any_spark: Any) -> None:
    key = "spark.sql.variant.forceShreddingSchemaForTest"
    assert any_spark.conf.get(key, None) is None
    with spark_conf(any_spark, {key: "a int", "spark.sql.shuffle.partitions": "7"}):
        assert any_spark.conf.get(key) == "a int" and any_spark.conf.get("spark.sql.shuffle.partitions") == "7"
    assert any_spark.conf.get(key, None) is None and any_spark.conf.get("spark.sql.shuffle.partitions") == "2"


def test_track_progress_reports_running_stages(spark: Any) -> None:
    import time

    from pyspark.sql import functions as F

    from varlake.spark.session.local import StageProgress, track_progress

    seen: list[StageProgress] = []
    slow = F.udf(lambda x: time.sleep(0.25) or x, "bigint")
    with track_progress(spark, seen.extend, interval=0.02):
        spark.range(0, 4, 1, 4).select(slow("id")).collect()
    assert any(s.total == 4 for s in seen) and all(0 <= s.done <= s.total for s in seen)


def test_track_progress_reports_rows_and_bytes(spark: Any, tmp_path: Path) -> None:
    """A stage reading files shows the rows and bytes of its finished tasks as it runs."""
    import time

    from pyspark.sql import functions as F

    from varlake.cli import stage_io_text
    from varlake.spark.session.local import StageProgress, spark_conf, track_progress

    spark.range(0, 4000, 1, 4).write.parquet(str(tmp_path / "p"))
    seen: list[StageProgress] = []
    slow = F.udf(lambda x: (time.sleep(0.3) if x % 1000 == 0 else None) or x, "bigint")  # once per file
    one_file_per_task = {"spark.sql.files.openCostInBytes": str(1 << 30), "spark.sql.files.maxPartitionBytes": str(1 << 20)}
    with spark_conf(spark, one_file_per_task), track_progress(spark, seen.extend, interval=0.02):
        # 4 tasks on the session's cores: the first to finish report while the others run
        spark.read.parquet(str(tmp_path / "p")).where(slow("id") >= 0).agg(F.count("*")).collect()
    started = [s for s in seen if s.rows]
    assert started, seen
    assert all(0 < s.rows <= 4000 and s.bytes_read > 0 for s in started)
    assert max(s.rows for s in started) >= 1000  # at least one file's rows counted while running
    text = stage_io_text(started[-1])
    assert "rows" in text and "read" in text
