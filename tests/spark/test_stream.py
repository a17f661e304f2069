"""Structured Streaming into varlake tables exactly once: ``write_stream`` and
``ingest_stream`` (``varlake ingest --stream``) commit each micro-batch with
``txn(stream id, batchId)``, so a batch Spark runs again -- after a crash at any point --
is never committed twice; the stream id lives in the checkpoint. Re-run batches called
directly, a restart over a grown directory, then real SIGKILLs of a streaming driver
(``VARLAKE_KILL_TRIALS`` kills; the issue's figure is 20)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kill_drivers import committed_column, expected, run_kill_trials, write_input_file
from varlake.cli import app
from varlake.delta.table_log import DeltaLog
from varlake.errors import StreamError
from varlake.io.storage import LocalStorage
from varlake.spark import ingest_stream, write_stream
from varlake.spark.writing import stream as stream_module
from varlake.spark.writing.ingest import IngestOptions, quarantine_path_for
from varlake.spark.writing.stream import STREAM_ID_FILE, stream_id

pytestmark = pytest.mark.spark

COLUMNS = {"id": "$.id::bigint"}


class Crash(BaseException):
    """Stands for the process dying at this point."""


def _snapshot(path: Path | str) -> Any:
    return DeltaLog(LocalStorage(), str(path)).snapshot()


def _lines(spark: Any, src: Path) -> Any:
    """A batch DataFrame shaped like one micro-batch of the ingest stream."""
    from pyspark.sql import functions as F

    return spark.read.text(str(src)).select(F.col("_metadata.file_path").alias("_file"), F.col("value"))


def test_stream_id_is_created_once_and_kept_in_the_checkpoint(tmp_path: Path) -> None:
    first = stream_id(tmp_path / "ck")
    assert first.startswith("varlake-stream-") and stream_id(tmp_path / "ck") == first
    assert (tmp_path / "ck" / STREAM_ID_FILE).read_text().strip() == first
    assert stream_id(f"file://{tmp_path}/ck") == first
    assert stream_id(tmp_path / "other") != first
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / STREAM_ID_FILE).write_text("nope")
    with pytest.raises(StreamError, match="not a varlake stream id"):
        stream_id(tmp_path / "bad")
    assert not [p for p in os.listdir(tmp_path / "ck") if p.endswith(".tmp")]


def test_a_batch_run_again_is_committed_once(spark: Any, tmp_path: Path) -> None:
    df = spark.range(5).selectExpr("id", "parse_json(to_json(named_struct('n', id))) AS doc")
    fn = stream_module._AppendBatch(str(tmp_path / "t"), "varlake-stream-" + "0" * 32, (), "auto")
    fn(df, 0)
    fn(df, 0)  # Spark re-runs batch 0 after a crash before its checkpoint commit
    fn(df, 1)
    snap = _snapshot(tmp_path / "t")
    assert sorted(committed_column(tmp_path / "t", "id")) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert snap.app_version("varlake-stream-" + "0" * 32) == 1 and snap.version == 2


def test_an_ingest_batch_killed_between_its_commits_quarantines_once(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, table = tmp_path / "src", tmp_path / "t"
    src.mkdir()
    for i in range(3):
        write_input_file(src, i)
    options = IngestOptions(str(table), quarantine_path_for(table), COLUMNS, (), "off", "doc", False, "append", 100)
    fn = stream_module._IngestBatch(options, "varlake-stream-" + "1" * 32)
    real = stream_module.commit_write
    calls: list[str] = []

    def dies_after_quarantine(staged: Any, **kw: Any) -> Any:
        calls.append(staged.root)
        result = real(staged, **kw)
        if staged.root.endswith("_quarantine") and len(calls) == 1:
            raise Crash()
        return result

    monkeypatch.setattr(stream_module, "commit_write", dies_after_quarantine)
    with pytest.raises(Crash):
        fn(_lines(spark, src), 0)
    assert not (table / "_delta_log").exists()
    fn(_lines(spark, src), 0)  # the restarted query runs batch 0 again
    fn(_lines(spark, src), 0)  # and once more: both tables already hold it
    ids, bad = expected(src)
    assert sorted(committed_column(table, "id")) == ids
    q = quarantine_path_for(table)
    assert sorted(zip(committed_column(Path(q), "file"), committed_column(Path(q), "line"))) == bad
    assert _snapshot(q).version == 1 and _snapshot(table).version == 1


def test_ingest_stream_restarted_over_a_grown_directory(spark: Any, tmp_path: Path) -> None:
    src, table, ck = tmp_path / "src", tmp_path / "t", tmp_path / "ck"
    src.mkdir()
    for i in range(3):
        write_input_file(src, i)
    query = ingest_stream(spark, src, table, ck, COLUMNS, shredding="off", max_files_per_trigger=2)
    query.awaitTermination()
    assert query.exception() is None
    sid = stream_id(ck)
    assert _snapshot(table).app_version(sid) == 1  # batches 0 and 1
    write_input_file(src, 3)
    query = ingest_stream(spark, src, table, ck, COLUMNS, shredding="off", trigger="once")
    query.awaitTermination()
    ids, bad = expected(src)
    assert sorted(committed_column(table, "id")) == ids
    q = Path(quarantine_path_for(table))
    assert sorted(zip(committed_column(q, "file"), committed_column(q, "line"))) == bad
    assert _snapshot(table).app_version(sid) == 2 and _snapshot(q).app_version(sid) == 2


def test_write_stream_appends_each_batch_once_across_restarts(spark: Any, tmp_path: Path) -> None:
    src, table, ck = tmp_path / "src", tmp_path / "t", tmp_path / "ck"
    src.mkdir()
    for i in range(2):
        write_input_file(src, i, with_bad=False)

    def start() -> Any:
        df = spark.readStream.schema("id bigint, kind string").option("maxFilesPerTrigger", "1").json(str(src))
        df = df.selectExpr("id", "parse_json(to_json(named_struct('kind', kind))) AS doc")
        return write_stream(df, table, ck, trigger="available-now")

    query = start()
    query.awaitTermination()
    write_input_file(src, 2, with_bad=False)
    query = start()
    query.awaitTermination()
    assert query.exception() is None
    assert sorted(committed_column(table, "id")) == expected(src, with_bad=False)[0]
    snap = _snapshot(table)
    assert snap.app_version(stream_id(ck)) == 2 and "varlake.shredding.doc" in snap.properties


def test_bad_arguments_are_named(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(StreamError, match="streaming DataFrame"):
        write_stream(spark.range(1), tmp_path / "t", tmp_path / "ck")
    df = spark.readStream.format("rate").load()
    with pytest.raises(StreamError, match="trigger must be"):
        write_stream(df, tmp_path / "t", tmp_path / "ck", trigger="sometimes")
    with pytest.raises(StreamError, match="compact_every"):
        write_stream(df, tmp_path / "t", tmp_path / "ck", compact_every=0)
    assert not (tmp_path / "ck").exists()  # refused before the stream id is created
    with pytest.raises(StreamError, match="local directory"):  # s3:// checkpoints work: test_spark_object_store
        write_stream(df, tmp_path / "t", "hdfs://namenode/ck")
    r = CliRunner().invoke(app, ["ingest", "--stream", str(tmp_path), str(tmp_path / "t")])
    assert r.exit_code == 1 and "--checkpoint" in r.output


def test_cli_ingest_stream_with_auto_compaction(spark: Any, tmp_path: Path) -> None:
    src, table, ck = tmp_path / "src", tmp_path / "t", tmp_path / "ck"
    src.mkdir()
    for i in range(4):
        write_input_file(src, i)
    r = CliRunner().invoke(app, [
        "ingest", "--stream", str(src), str(table), "--checkpoint", str(ck), "-c", "id=$.id::bigint",
        "--shredding", "off", "--max-files-per-trigger", "1", "--compact-every", "2", "-f", "json",
    ])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["stream_id"] == stream_id(ck) and out["last_batch"] == 3 and out["rows_read"] == 82
    assert sorted(committed_column(table, "id")) == expected(src)[0]
    history = [json.loads(line) for p in sorted((table / "_delta_log").glob("*.json")) for line in p.read_text().splitlines()]
    operations = [h["commitInfo"]["operation"] for h in history if "commitInfo" in h]
    assert operations.count("OPTIMIZE") >= 1  # after batches 1 and 3


def test_cli_ingest_stream_counts_each_line_read_once(spark: Any, tmp_path: Path) -> None:
    """``rows_read`` is the number of lines the stream read, also when each batch is sampled
    for its shredding schema (a second read of the batch, which Spark counted as input again)."""
    src, table, ck = tmp_path / "src", tmp_path / "t", tmp_path / "ck"
    src.mkdir()
    for i in range(4):
        write_input_file(src, i)
    r = CliRunner().invoke(app, [
        "ingest", "--stream", str(src), str(table), "--checkpoint", str(ck), "-c", "id=$.id::bigint",
        "--max-files-per-trigger", "2", "-f", "json",
    ])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    ids, bad = expected(src)
    assert (out["batches"], out["rows_read"]) == (2, len(ids) + len(bad))
    assert sorted(committed_column(table, "id")) == ids


KILL_KINDS = ["stream"] + (["write-stream"] if os.environ.get("VARLAKE_KILL_TRIALS") else [])


@pytest.mark.parametrize("kind", KILL_KINDS)
def test_sigkill_at_random_points_streams_every_line_exactly_once(tmp_path: Path, kind: str) -> None:
    """``stream``: ``ingest --stream`` with a quarantine; ``write-stream`` (with the env var):
    ``write_stream`` of a JSON file source."""
    kills = int(os.environ.get("VARLAKE_KILL_TRIALS", "1"))
    report = run_kill_trials(kind, tmp_path, kills, seed=15)
    print(f"{kind}: {report.kills} kills {report.kill_delays}, {len(report.ids)} rows, {len(report.bad)} bad, {report.seconds:.0f}s")
    assert report.ids == report.expected_ids  # no row lost, none doubled
    assert report.bad == report.expected_bad  # every bad line quarantined once


def test_write_stream_on_spark_connect(connect_spark: Any, tmp_path: Path) -> None:
    """On Connect, ``foreachBatch`` runs in a Python worker of the server: the batch function
    travels pickled and writes through the Connect session it is handed."""
    src, table, ck = tmp_path / "src", tmp_path / "t", tmp_path / "ck"
    src.mkdir()
    for i in range(2):
        write_input_file(src, i, with_bad=False)
    df = connect_spark.readStream.schema("id bigint, kind string").option("maxFilesPerTrigger", "1").json(str(src))
    df = df.selectExpr("id", "parse_json(to_json(named_struct('kind', kind))) AS doc")
    query = write_stream(df, table, ck, trigger="available-now")
    query.awaitTermination()
    assert query.exception() is None
    assert sorted(committed_column(table, "id")) == expected(src, with_bad=False)[0]
    assert _snapshot(table).app_version(stream_id(ck)) == 1


def test_ingest_stream_on_spark_connect(connect_spark: Any, tmp_path: Path) -> None:
    """The streaming ingest on a Connect session: every line written or quarantined, once."""
    src, table, ck = tmp_path / "src", tmp_path / "t", tmp_path / "ck"
    src.mkdir()
    for i in range(2):
        write_input_file(src, i)
    query = ingest_stream(connect_spark, src, table, ck, COLUMNS, shredding="off", trigger="available-now")
    query.awaitTermination()
    assert query.exception() is None
    ids, bad = expected(src)
    assert sorted(committed_column(table, "id")) == ids
    q = Path(quarantine_path_for(table))
    assert sorted(zip(committed_column(q, "file"), committed_column(q, "line"))) == bad
