"""``varlake query``: at most ``--limit`` rows printed with the rest counted, ``--output``
writes every row (CSV, JSON Lines, Parquet; checked with pyarrow and DuckDB), and a
fresh CLI process keeps Spark's log lines off the terminal."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from varlake import Table, parse_json
from varlake.cli import app
from varlake.errors import ExportError
from varlake.spark.reading.export import format_for

pytestmark = pytest.mark.spark
runner = CliRunner()
N = 137


def _run(*args: Any) -> Any:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cliq") / "t"
    rows = [{"id": i, "doc": parse_json(json.dumps({"n": i, "tag": f"t{i % 3}", "xs": [i, None]}))} for i in range(N)]
    Table.create(root, "id bigint, doc variant")
    Table(root).append(rows)
    return root


def test_limit_prints_first_rows_and_counts_the_rest(spark: Any, table: Path) -> None:
    r = _run("query", table, "SELECT id FROM {t} ORDER BY id", "-f", "csv")
    assert r.exit_code == 0, r.output
    assert [int(row["id"]) for row in csv.DictReader(io.StringIO(r.stdout))] == list(range(40))
    assert f"40 of {N} rows shown" in r.stderr
    r = _run("query", table, "SELECT id FROM {t} ORDER BY id", "-f", "json", "--limit", "5")
    assert [row["id"] for row in json.loads(r.stdout)] == [0, 1, 2, 3, 4] and f"5 of {N}" in r.stderr
    r = _run("query", table, "SELECT id FROM {t} WHERE id < 3", "-f", "json")
    assert len(json.loads(r.stdout)) == 3 and "rows shown" not in r.stderr  # nothing more to tell
    r = _run("query", table, "SELECT id FROM {t}", "--limit", "0", "-f", "csv")
    assert r.stdout.strip() == "id" and f"0 of {N}" in r.stderr  # the header only


def test_table_form_prints_one_line_per_row_at_the_terminal_width(spark: Any, table: Path) -> None:
    """Long Variant cells are cut with an ellipsis, not wrapped: the header and 40 rows."""
    sql = "SELECT id, doc, parse_json(to_json(named_struct('text', repeat('lorem ', 40)))) AS long FROM {t} ORDER BY id"
    r = runner.invoke(app, ["query", str(table), sql], env={"COLUMNS": "80"}, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert len(lines) == 4 + 40  # rules above and below the header and at the end, 40 rows
    assert all(len(line) <= 80 for line in lines)
    assert lines[3].startswith("│ 0 ") and lines[3].endswith("… │") and '{"text":"lorem lorem' in lines[3]
    assert f"40 of {N} rows shown" in r.stderr


@pytest.mark.parametrize("suffix, fmt", [(".csv", None), (".jsonl", None), (".parquet", None), (".out", "csv")])
def test_output_writes_every_row(spark: Any, table: Path, tmp_path: Path, suffix: str, fmt: str | None) -> None:
    target = tmp_path / f"result{suffix}"
    target.write_text("old contents")  # replaced whole
    args = ["query", table, "SELECT id, doc:tag::string AS tag, doc FROM {t} ORDER BY id", "-o", target]
    r = _run(*args, *(["-f", fmt] if fmt else []))
    assert r.exit_code == 0, r.output
    assert r.stdout == "" and f"wrote {N:,} row(s)" in r.stderr
    kind = fmt or format_for(target, None)
    if kind == "csv":
        rows = list(csv.DictReader(io.StringIO(target.read_text())))
        got = [(int(x["id"]), x["tag"], json.loads(x["doc"])) for x in rows]
    elif kind == "json":
        got = [(x["id"], x["tag"], x["doc"]) for x in map(json.loads, target.read_text().splitlines())]
    else:
        assert pq.read_metadata(target).num_rows == N
        con = duckdb.connect()
        got = [(i, t, json.loads(d)) for i, t, d in con.execute(f"SELECT id, tag, doc::JSON FROM read_parquet('{target}') ORDER BY id").fetchall()]
    assert got == [(i, f"t{i % 3}", {"n": i, "tag": f"t{i % 3}", "xs": [i, None]}) for i in range(N)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no staging directory left


def test_output_errors_are_one_line(spark: Any, table: Path, tmp_path: Path) -> None:
    r = _run("query", table, "SELECT id FROM {t}", "-o", tmp_path / "x.txt")
    assert r.exit_code == 1 and "--format csv|json|parquet" in r.output
    r = _run("query", table, "SELECT id FROM {t}", "-f", "parquet")
    assert r.exit_code == 1 and "needs --output" in r.output
    r = _run("query", table, "SELECT id FROM {t}", "-o", tmp_path / "missing" / "x.csv")
    assert r.exit_code == 1 and "does not exist" in r.output
    with pytest.raises(ExportError, match="cannot be written"):
        format_for("x.csv", "table")


def test_fresh_cli_keeps_spark_logs_off_the_terminal(table: Path, tmp_path: Path) -> None:
    env = {**os.environ, "VARLAKE_SPARK_LOG": str(tmp_path / "spark.log")}
    cmd = [sys.executable, "-m", "varlake.cli", "query", str(table), "SELECT count(*) AS n FROM {t}", "-f", "json",
           "--master", "local[1]"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"n": N}]
    noise = re.compile(r"WARN|log4j|Using incubator|Setting default log level|setLogLevel|NativeCodeLoader")
    assert not noise.search(done.stdout + done.stderr), done.stderr
    assert (tmp_path / "spark.log").exists()  # the JVM's output went there
    assert not (tmp_path / "spark-warehouse").exists()  # nothing left in the working directory


def test_json_output_stays_strict_json_for_non_finite_floats() -> None:
    from varlake.cli import plain

    text = json.dumps(plain({"min": float("nan"), "max": float("inf"), "low": float("-inf"), "x": 1.5}), allow_nan=False)
    assert json.loads(text) == {"min": "NaN", "max": "Infinity", "low": "-Infinity", "x": 1.5}
