"""Incremental ingest: run again over a growing directory, ``ingest_json`` takes each file
exactly once -- the taken files are recorded in the table's own commit (``txn`` plus the
``varlake.ingest.*`` domain), and a run stopped at any point and run again neither loses
nor doubles a row or a quarantined line. In-process crashes at each commit boundary, the
record's encoding, then real SIGKILLs of a driver process (``VARLAKE_KILL_TRIALS`` kills;
the issue's figure is 20)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kill_drivers import committed_column, expected, run_kill_trials, write_input_file
from varlake.cli import app
from varlake.delta.actions import DomainMetadata
from varlake.delta.schema import parse_schema
from varlake.delta.table_log import DeltaLog
from varlake.errors import CommitConflictError, CorruptLogError, InvalidCommitError
from varlake.io.storage import LocalStorage
from varlake.spark import ingest_json
from varlake.spark.writing import ingest as ingest_module
from varlake.write import PendingWrite, commit_write
from varlake.write.staging.ingest_log import DOMAIN_PREFIX, IngestRecord, SourceFile, ingest_app_id, plan

COLUMNS = {"id": "$.id::bigint"}


class Crash(BaseException):
    """Stands for the process dying at this point (not an error the ingest may catch)."""


def _snapshot(path: Path) -> Any:
    return DeltaLog(LocalStorage(), str(path)).snapshot()


def _quarantine(table: Path) -> Path:
    return Path(str(table) + "_quarantine")


def _check_exact(src: Path, table: Path) -> None:
    ids, bad = expected(src)
    assert sorted(committed_column(table, "id")) == ids
    q = _quarantine(table)
    got_bad = sorted(zip(committed_column(q, "file"), committed_column(q, "line"))) if bad else []
    assert got_bad == bad


@pytest.mark.spark
def test_a_rerun_takes_only_new_files_and_records_them_in_the_same_commit(spark: Any, tmp_path: Path) -> None:
    src, table = tmp_path / "src", tmp_path / "t"
    src.mkdir()
    for i in range(3):
        write_input_file(src, i)
    first = ingest_json(spark, src, table, COLUMNS, shredding="off")
    assert (first.read, first.written, first.quarantined, first.batch, first.files) == (61, 60, 1, 1, 3)
    app_id = ingest_app_id([str(src)], str(table))
    snap = _snapshot(table)
    assert snap.app_version(app_id) == 1 and "domainMetadata" in snap.protocol.writer_features
    record = IngestRecord.from_snapshot(snap, app_id, [str(src)])
    assert sorted(record.files) == sorted(str(p) for p in src.glob("*.jsonl"))
    commit = (table / "_delta_log" / f"{snap.version:020d}.json").read_text().splitlines()
    kinds = [next(iter(json.loads(line))) for line in commit]
    assert {"add", "txn", "domainMetadata"} <= set(kinds)  # data, txn and record in ONE version

    again = ingest_json(spark, src, table, COLUMNS, shredding="off")
    assert (again.read, again.files, again.table_version, again.batch) == (0, 0, None, 1)
    assert "no new input files (3 taken before)" in (again.note or "")
    assert _snapshot(table).version == snap.version

    write_input_file(src, 3)
    write_input_file(src, 4)
    third = ingest_json(spark, src, table, COLUMNS, shredding="off")
    assert (third.files, third.read, third.written, third.quarantined, third.batch) == (2, 41, 40, 1, 2)
    _check_exact(src, table)


@pytest.mark.spark
def test_killed_before_the_table_commit_takes_the_files_again(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, table = tmp_path / "src", tmp_path / "t"
    src.mkdir()
    write_input_file(src, 0)
    ingest_json(spark, src, table, COLUMNS, shredding="off")
    write_input_file(src, 1)  # has a bad line
    write_input_file(src, 2)
    real = ingest_module.commit_write

    def dies(*args: Any, **kw: Any) -> Any:
        raise Crash()

    monkeypatch.setattr(ingest_module, "commit_write", dies)
    with pytest.raises(Crash):
        ingest_json(spark, src, table, COLUMNS, shredding="off")
    assert _snapshot(table).version == 1 and not (_quarantine(table) / "_delta_log").exists()  # nothing recorded
    monkeypatch.setattr(ingest_module, "commit_write", real)
    result = ingest_json(spark, src, table, COLUMNS, shredding="off")
    assert (result.files, result.written, result.quarantined) == (2, 40, 1)
    _check_exact(src, table)


@pytest.mark.spark
def test_killed_between_the_table_and_the_quarantine_commit_completes_the_quarantine_once(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, table = tmp_path / "src", tmp_path / "t"
    src.mkdir()
    for i in range(4):
        write_input_file(src, i)
    real = ingest_module.complete_quarantine
    monkeypatch.setattr(ingest_module, "complete_quarantine", lambda record, *args: (_ for _ in ()).throw(Crash()))
    with pytest.raises(Crash):
        ingest_json(spark, src, table, COLUMNS, shredding="off")
    assert sorted(committed_column(table, "id")) == expected(src)[0]  # the files are taken ...
    assert not (_quarantine(table) / "_delta_log").exists()  # ... their bad lines wait in the record
    monkeypatch.setattr(ingest_module, "complete_quarantine", real)
    write_input_file(src, 5)
    result = ingest_json(spark, src, table, COLUMNS, shredding="off")  # completes batch 1, takes file 5
    assert (result.files, result.quarantined, result.batch) == (1, 1, 2)
    _check_exact(src, table)
    q = _snapshot(_quarantine(table))
    assert q.app_version(ingest_app_id([str(src)], str(table))) == 2
    assert ingest_json(spark, src, table, COLUMNS, shredding="off").table_version is None
    _check_exact(src, table)


@pytest.mark.spark
def test_a_changed_file_is_reported_and_not_ingested_again(spark: Any, tmp_path: Path) -> None:
    src, table = tmp_path / "src", tmp_path / "t"
    src.mkdir()
    write_input_file(src, 0)
    ingest_json(spark, src, table, COLUMNS, shredding="off")
    with (src / "00000.jsonl").open("a") as f:
        f.write('{"id": 999999}\n')
    result = ingest_json(spark, src, table, COLUMNS, shredding="off")
    assert result.changed_files == (str(src / "00000.jsonl"),) and result.read == 0
    assert len(committed_column(table, "id")) == 20


@pytest.mark.spark
def test_all_reads_every_file_and_overwrite_records_only_its_files(spark: Any, tmp_path: Path) -> None:
    src, table = tmp_path / "src", tmp_path / "t"
    src.mkdir()
    write_input_file(src, 0)
    ingest_json(spark, src, table, COLUMNS, shredding="off")
    again = ingest_json(spark, src, table, COLUMNS, shredding="off", incremental=False)
    assert again.read == 20 and again.batch is None and len(committed_column(table, "id")) == 40
    (src / "00000.jsonl").unlink()
    write_input_file(src, 2)
    over = ingest_json(spark, src, table, COLUMNS, shredding="off", mode="overwrite")
    assert over.files == 1 and sorted(committed_column(table, "id")) == expected(src)[0]
    record = IngestRecord.from_snapshot(_snapshot(table), ingest_app_id([str(src)], str(table)), [str(src)])
    assert list(record.files) == [str(src / "00002.jsonl")] and record.batch == 2


@pytest.mark.spark
def test_cli_ingest_twice_reports_the_batch_and_nothing_new(spark: Any, tmp_path: Path) -> None:
    src, table = tmp_path / "src", tmp_path / "t"
    src.mkdir()
    write_input_file(src, 1)
    runner = CliRunner()
    r = runner.invoke(app, ["ingest", str(src), str(table), "-c", "id=$.id::bigint", "--shredding", "off", "-f", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["read"], out["quarantined"], out["batch"]) == (21, 1, 1)
    r = runner.invoke(app, ["ingest", str(src), str(table), "-f", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["read"] == 0 and "no new input files" in json.loads(r.stdout)["note"]
    r = runner.invoke(app, ["ingest", str(src), str(table), "--all", "--shredding", "off", "-c", "id=$.id::bigint", "-f", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["read"] == 21 and "batch" not in json.loads(r.stdout)


# --- the record, without Spark --------------------------------------------------------------------------------


def _new_table(tmp_path: Path) -> DeltaLog:
    log = DeltaLog(LocalStorage(), str(tmp_path / "t"))
    log.create(parse_schema('{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'))
    return log


def test_record_round_trips_through_its_domain_compactly(tmp_path: Path) -> None:
    app_id = ingest_app_id(["/data/in"], "/data/t")
    assert app_id == ingest_app_id(["/data/in/"], "/data/t") != ingest_app_id(["/data/in"], "/data/u")
    files = [SourceFile(f"/data/in/2026/11/24/part-{i:06d}.jsonl", 1000 + i, 1_795_000_000_000 + i) for i in range(5000)]
    record = IngestRecord.empty(app_id, ["/data/in"]).taking(files, None)
    domain = record.to_domain()
    assert domain.domain == DOMAIN_PREFIX + app_id.removeprefix("varlake-ingest-")
    assert len(domain.configuration) < 60_000  # 5000 paths, sizes and mtimes: ~12 bytes each
    log = _new_table(tmp_path)
    committed = commit_write(
        log, PendingWrite(str(tmp_path / "t"), "append", log.snapshot().schema, (), (), log.snapshot(), domains=(domain,)),
        app_id=app_id, app_version=1,
    )
    assert committed.version == 1
    back = IngestRecord.from_snapshot(log.snapshot(), app_id, ["/data/in"])
    assert back.files == record.files and back.batch == 1 and back.quarantine is None
    new, changed = plan(back, [files[0], SourceFile(files[1].path, 5, files[1].mtime_ms), SourceFile("/data/in/x", 1, 1)])
    assert [f.path for f in new] == ["/data/in/x"] and [f.path for f in changed] == [files[1].path]


def test_the_same_batch_commits_once_and_a_stale_record_never_lands(tmp_path: Path) -> None:
    log = _new_table(tmp_path)
    base = log.snapshot()
    app_id = ingest_app_id(["/in"], "/t")
    empty = IngestRecord.empty(app_id, ["/in"])
    a = empty.taking([SourceFile("/in/a", 1, 1)], None)
    b = empty.taking([SourceFile("/in/a", 1, 1), SourceFile("/in/b", 1, 1)], None)

    def pending(record: IngestRecord) -> PendingWrite:
        return PendingWrite(str(tmp_path / "t"), "append", base.schema, (), (), base, domains=(record.to_domain(),))

    assert commit_write(log, pending(a), app_id=app_id, app_version=1).version == 1
    assert commit_write(log, pending(b), app_id=app_id, app_version=1).version is None  # lost the race: no-op
    assert list(IngestRecord.from_snapshot(log.snapshot(), app_id, ["/in"]).files) == ["/in/a"]
    with pytest.raises(CommitConflictError, match="metadata domain"):  # a stale record is never rebased over
        commit_write(log, pending(b), app_id="another-app", app_version=1)


def test_a_domain_needs_the_feature_and_a_damaged_record_is_named(tmp_path: Path) -> None:
    log = _new_table(tmp_path)
    with pytest.raises(InvalidCommitError, match="domainMetadata"):
        log.commit([DomainMetadata("varlake.ingest.x", "{}")], "WRITE", 0)
    app_id = ingest_app_id(["/in"], "/t")
    bad = DomainMetadata(IngestRecord.empty(app_id, ["/in"]).domain, '{"format": 1, "files": "not base64!"}')
    commit_write(
        log, PendingWrite(str(tmp_path / "t"), "append", log.snapshot().schema, (), (), log.snapshot(), domains=(bad,)),
        app_id=app_id, app_version=1,
    )
    with pytest.raises(CorruptLogError, match="not an ingest record"):
        IngestRecord.from_snapshot(log.snapshot(), app_id, ["/in"])


# --- SIGKILL ----------------------------------------------------------------------------------------------------------


@pytest.mark.spark
def test_sigkill_at_random_points_ingests_every_line_exactly_once(tmp_path: Path) -> None:
    """Driver processes start their own Spark; this test needs no session of its own."""
    kills = int(os.environ.get("VARLAKE_KILL_TRIALS", "1"))
    report = run_kill_trials("ingest", tmp_path, kills, seed=14)
    print(f"ingest: {report.kills} kills {report.kill_delays}, {len(report.ids)} rows, {len(report.bad)} bad, {report.seconds:.0f}s")
    assert report.ids == report.expected_ids  # no row lost, none doubled
    assert report.bad == report.expected_bad  # every bad line quarantined once
