"""``varlake optimize TABLE [--where] [--cluster-by ...] [--target-size] [--dry-run]`` (Python
engine): JSON output of what was done, and errors as one line with exit code 1."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from optimize_tables import logical_rows, mixed_table
from varlake import Table
from varlake.cli import app
from varlake.write.maintenance.clustering import stored_keys

runner = CliRunner()


def _run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_cli_optimize_dry_run_then_run(tmp_path: Path) -> None:
    t = mixed_table(tmp_path / "t")
    before, version = logical_rows(t), t.version
    code, out, _ = _run("optimize", t.path, "--dry-run", "--format", "json")
    assert code == 0
    dry = json.loads(out)
    assert dry["dry_run"] is True and dry["version"] is None and dry["plan"]["files_to_rewrite"] == 5
    assert Table(t.path).version == version
    code, out, _ = _run("optimize", t.path, "--cluster-by", "v:b::string", "--cluster-by", "id", "--target-size", "64mb", "-f", "json")
    assert code == 0
    done = json.loads(out)
    assert done["version"] == version + 1 and done["files_removed"] == 5 and done["cluster_by"] == ["v:b::string", "id"]
    assert done["plan"]["target_file_size"] == 64 * 1024 * 1024 and "reasons" not in done["plan"]
    assert stored_keys(Table(t.path).snapshot()) == ("v:b::string", "id")
    assert logical_rows(Table(t.path)) == before


def test_cli_optimize_errors_are_one_line(tmp_path: Path) -> None:
    t = mixed_table(tmp_path / "t")
    code, _, err = _run("optimize", t.path, "--where", "id > 3")
    assert code == 1 and "not partition columns" in err
    code, _, err = _run("optimize", t.path, "--target-size", "huge")
    assert code == 1 and "not a file size" in err
    code, _, err = _run("optimize", t.path, "--cluster-by", "v:a")
    assert code == 1 and "give the path a type" in err
