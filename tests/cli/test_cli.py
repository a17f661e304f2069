"""The ``varlake`` CLI end to end on local Spark: ingest -> query -> describe -> history
-> vacuum -> checkpoint, in every output format, and errors as exit code 1."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from varlake import Table
from varlake.cli import app

pytestmark = pytest.mark.spark
runner = CliRunner()


def _run(*args: str) -> Any:
    result = runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
    return result


def _events(path: Path, n: int) -> None:
    lines = [json.dumps({"kind": ["post", "like"][i % 2], "time_us": 1_700_000_000_000_000 + i, "n": i}) for i in range(n)]
    lines.insert(3, "{not json")
    lines.insert(10, '{"n": 1, "n": 2}')
    path.write_text("\n".join(lines) + "\n")


def test_ingest_query_describe_history_vacuum_checkpoint(spark: Any, tmp_path: Path) -> None:
    src = tmp_path / "events.jsonl"
    _events(src, 200)
    table = tmp_path / "t"
    r = _run("ingest", src, table, "-c", "kind=$.kind::string", "-c", "ts=timestamp_micros(doc:time_us::bigint)",
             "--partition-by", "kind", "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2", "-f", "json")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert (summary["read"], summary["written"], summary["quarantined"]) == (202, 200, 2)
    assert summary["check"] == "read 202 = written 200 + quarantined 2"
    assert summary["reasons"] == {"duplicate key": 1, "invalid JSON": 1}
    assert summary["quarantine"] == str(table) + "_quarantine"

    r = _run("query", table, "SELECT kind, count(*) AS n, max(doc:n::int) AS top FROM {t} GROUP BY kind ORDER BY kind", "-f", "csv")
    assert r.exit_code == 0, r.output
    assert list(csv.DictReader(io.StringIO(r.stdout))) == [
        {"kind": "like", "n": "100", "top": "199"},
        {"kind": "post", "n": "100", "top": "198"},
    ]
    r = _run("query", table, "SELECT doc FROM {t} WHERE doc:n::int = 7", "-f", "json", "--explain")
    assert json.loads(r.stdout) == [{"doc": {"kind": "like", "n": 7, "time_us": 1_700_000_000_000_007}}]
    assert "skipping filter" in r.stderr
    r = _run("query", str(table) + "_quarantine", "SELECT line, kind FROM {t} ORDER BY line")
    assert r.exit_code == 0 and "duplicate key" in r.stdout and "invalid JSON" in r.stdout

    r = _run("describe", table, "-f", "json")
    info = json.loads(r.stdout)
    assert info["version"] == 1 and info["rows"] == 200 and info["files"] == len(Table(table).files())
    assert info["partition_columns"] == ["kind"] and info["size_bytes"] > 0
    assert "variantShredding" in info["protocol"]["readerFeatures"]
    assert info["shredding"]["doc"] == info["properties"]["varlake.shredding.doc"]
    stats = {c["column"]: c for c in info["column_stats"]}
    assert stats["kind"]["min"] == "like" and stats["kind"]["max"] == "post" and stats["ts"]["nulls"] == 0
    paths = {(p["column"], p["path"]): p for p in info["variant_path_stats"]}
    assert paths[("doc", "$['n']")]["min"] == 0 and paths[("doc", "$['n']")]["max"] == 199
    r = _run("describe", table)
    assert r.exit_code == 0 and "varlake.shredding.doc" in r.stdout

    r = _run("history", table, "-f", "csv")
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [row["operation"] for row in rows] == ["WRITE", "CREATE TABLE"]

    r = _run("vacuum", table, "--retention-hours", "0", "--dry-run")
    assert r.exit_code == 1 and "safe minimum" in r.output  # needs --unsafe
    r = _run("vacuum", table, "--retention-hours", "0", "--dry-run", "--unsafe", "-f", "json")
    assert r.exit_code == 0 and json.loads(r.stdout) == []

    r = _run("checkpoint", table, "-f", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)["version"] == 1
    assert Table(table).version == 1 and len(Table(table).scan().to_arrow()) == 200


def test_errors_exit_with_one_line(spark: Any, tmp_path: Path) -> None:
    r = _run("describe", tmp_path / "nothing")
    assert r.exit_code == 1 and "no Delta table" in r.output
    r = _run("ingest", tmp_path / "missing.jsonl", tmp_path / "t")
    assert r.exit_code == 1 and "does not exist" in r.output
    r = _run("ingest", tmp_path / "t")
    assert r.exit_code == 1 and "INPUT and the TABLE" in r.output
    src = tmp_path / "e.jsonl"
    _events(src, 5)
    assert _run("ingest", src, tmp_path / "t", "--conf", "novalue").exit_code == 1
    assert _run("ingest", src, tmp_path / "t", "-c", "broken").exit_code == 1
    assert _run("ingest", src, tmp_path / "t").exit_code == 0
    r = _run("query", tmp_path / "t", "SELECT nope FROM {t}")
    assert r.exit_code == 1 and "Spark error" in r.output and "nope" in r.output
    r = _run("query", tmp_path / "t", "SELECT 1")
    assert r.exit_code == 1 and "{t}" in r.output
