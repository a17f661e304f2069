"""The table commands take object-store URIs: settings from the environment or
``--storage-option KEY=VALUE``; an error names the table, never the secret."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from varlake import Table
from varlake.cli import app

runner = CliRunner()


def _run(*args: str, env=None):
    return runner.invoke(app, list(args), env=env)


def _s3_table(s3_server):
    uri = s3_server.uri()
    table = Table.create(uri, "id bigint, v variant", storage_options=s3_server.options())
    table.append([{"id": i, "v": {"a": i}} for i in range(5)])
    table.append([{"id": 5, "v": {"a": 5}}])
    return uri, table


def test_table_commands_on_s3_with_storage_options(s3_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri, _ = _s3_table(s3_server)
    options = [x for k, v in s3_server.options().items() for x in ("--storage-option", f"{k}={v}")]
    described = _run("describe", uri.replace("s3://", "s3a://"), *options, "--format", "json")
    assert described.exit_code == 0, described.output
    doc = json.loads(described.stdout)
    assert doc["path"] == uri and doc["rows"] == 6 and doc["version"] == 2
    history = _run("history", uri, *options, "--format", "json")
    assert history.exit_code == 0, history.output
    assert [e["version"] for e in json.loads(history.stdout)] == [2, 1, 0]
    optimized = _run("optimize", uri, *options, "--format", "json")
    assert optimized.exit_code == 0, optimized.output
    checkpoint = _run("checkpoint", uri, *options, "--format", "json")
    assert checkpoint.exit_code == 0, checkpoint.output
    assert json.loads(checkpoint.stdout)["checkpoint"].startswith(f"{uri}/_delta_log/")
    vacuumed = _run("vacuum", uri, *options, "--retention-hours", "0", "--unsafe", "--format", "json")
    assert vacuumed.exit_code == 0, vacuumed.output
    assert len(json.loads(vacuumed.stdout)) == 2  # the two files optimize compacted
    doctor = _run("doctor", uri, *options, "--json")
    assert doctor.exit_code == 0, doctor.output
    assert json.loads(doctor.stdout)["rows"] == 6
    for text in (described.output, history.output, checkpoint.output, vacuumed.output, doctor.output):
        assert s3_server.secret_key not in text
    assert list(tmp_path.iterdir()) == []


def test_settings_from_the_environment_and_errors_without_the_secret(s3_server, monkeypatch):
    uri, _ = _s3_table(s3_server)
    for key, value in s3_server.options().items():
        if not key.startswith("varlake."):
            monkeypatch.setenv(key, value)
    described = _run("describe", uri, "--format", "json")
    assert described.exit_code == 0, described.output
    assert json.loads(described.stdout)["rows"] == 6
    wrong = "wrong-secret-0123456789"
    denied = _run("history", uri, "--storage-option", f"AWS_SECRET_ACCESS_KEY={wrong}")
    assert denied.exit_code == 1 and "access denied" in denied.output and uri in denied.output
    assert wrong not in denied.output and s3_server.secret_key not in denied.output
    unknown = _run("describe", "hdfs://nn/t")
    assert unknown.exit_code == 1 and "unsupported storage scheme" in unknown.output
    malformed = _run("describe", uri, "--storage-option", "AWS_REGION")
    assert malformed.exit_code == 1 and "--storage-option" in malformed.output


def test_ingest_and_query_an_s3_table_through_spark(s3_spark, s3_server, tmp_path, monkeypatch):
    """``varlake ingest FILE s3://…`` and ``varlake query s3a://…`` with ``--storage-option``:
    the Spark commands reach the table through S3A with the same settings."""
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "events.jsonl"
    src.write_text("".join(json.dumps({"id": i, "kind": "ab"[i % 2]}) + "\n" for i in range(20)) + "{broken\n")
    uri = s3_server.uri()
    options = [x for k, v in s3_server.options().items() for x in ("--storage-option", f"{k}={v}")]
    ingested = _run("ingest", str(src), uri, *options, "-c", "kind=$.kind::string", "-f", "json")
    assert ingested.exit_code == 0, ingested.output
    summary = json.loads(ingested.stdout)
    assert (summary["read"], summary["written"], summary["quarantined"]) == (21, 20, 1), summary
    queried = _run("query", uri.replace("s3://", "s3a://"), "SELECT kind, count(*) AS n FROM {t} GROUP BY kind ORDER BY kind",
                   *options, "--format", "json")
    assert queried.exit_code == 0, queried.output
    assert json.loads(queried.stdout) == [{"kind": "a", "n": 10}, {"kind": "b", "n": 10}]
    assert Table(uri, storage_options=s3_server.options()).scan().to_arrow().num_rows == 20
    assert s3_server.secret_key not in ingested.output + queried.output
    assert [p.name for p in tmp_path.iterdir()] == ["events.jsonl"]


def test_table_commands_on_azure_from_the_environment(azure_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = azure_server.uri()
    table = Table.create(uri, "id bigint, v variant", storage_options=azure_server.options())
    table.append([{"id": i, "v": {"a": i}} for i in range(4)])
    for key, value in azure_server.options().items():
        if not key.startswith("varlake."):
            monkeypatch.setenv(key, value)
    described = _run("describe", uri, "--format", "json")
    assert described.exit_code == 0, described.output
    assert json.loads(described.stdout)["rows"] == 4
    table.delete("id < 2")
    optimized = _run("optimize", uri, "--format", "json")
    assert optimized.exit_code == 0, optimized.output
    history = _run("history", uri, "--format", "json")
    assert [e["version"] for e in json.loads(history.stdout)] == [3, 2, 1, 0]
    assert Table(uri, storage_options=azure_server.options()).scan().to_arrow().num_rows == 2
    wrong = "d3Jvbmcta2V5LTAxMjM0NTY3ODk="
    denied = _run("history", uri, "--storage-option", f"AZURE_STORAGE_ACCOUNT_KEY={wrong}")
    assert denied.exit_code == 1 and uri in denied.output
    for text in (described.output, optimized.output, history.output, denied.output):
        assert azure_server.key not in text and wrong not in text
    assert list(tmp_path.iterdir()) == []
