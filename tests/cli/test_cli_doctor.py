"""``varlake doctor``: the rich chart names every path and section; ``--json`` is exactly
``Table.doctor().to_dict()``; ``--sample`` limits the rows analysed; errors are one line."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from varlake import Table, parse_json
from varlake.cli import app
from varlake.write import ENABLE_SHREDDING, SHREDDING_PROPERTY


def _mixed_table(root: Path) -> Table:
    """a: int in 8 rows, string in 4 (stored a bigint); b in 6 rows of the older file only,
    which shreds it (the second write drops b from the stored schema)."""
    t = Table.create(root, "id int, v variant", properties={ENABLE_SHREDDING: "true", SHREDDING_PROPERTY + "v": "a bigint"})
    docs = ['{"a": %d, "b": "x"}' % i for i in range(6)] + ['{"a": "s%d"}' % i for i in range(4)]
    t.append([{"id": i, "v": parse_json(d)} for i, d in enumerate(docs)])
    t.append([{"id": 10 + i, "v": parse_json('{"a": %d}' % i)} for i in range(2)])
    return t


def test_chart_names_paths_and_sections(tmp_path: Path) -> None:
    t = _mixed_table(tmp_path / "t")
    result = CliRunner().invoke(app, ["doctor", t.path], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    out = result.output
    for text in ("coverage of v", "$.a", "$.b", "type conflicts", "integer 8, string 4", "files whose layout differs",
                 "suggestions", "optimize would rewrite", "12 live row(s)", "est. saved",
                 "re-shredding 1 drifted file(s) into the table's layout", "in total about"):  # fmt: skip
        assert text in out, text
    assert "█" in out and "▒" in out  # typed and residual cells in the bars


def test_json_is_the_report(tmp_path: Path) -> None:
    t = _mixed_table(tmp_path / "t")
    result = CliRunner().invoke(app, ["doctor", t.path, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc == json.loads(json.dumps(t.doctor().to_dict()))
    a = next(p for p in doc["columns"][0]["paths"] if p["path"] == "$.a")
    assert (a["typed"], a["residual"], a["missing"]) == (8, 4, 0)
    assert doc["columns"][0]["conflicts"][0]["types"] == {"integer": 8, "string": 4}
    assert doc["columns"][0]["schema"] == "a bigint"
    assert [s["path"] for s in doc["columns"][0]["suggestions"]] == ["$.b"]
    assert len(doc["drifted_files"]) == 1 and doc["optimize"]["files_to_rewrite"] == 2
    o = doc["optimize"]
    assert (o["reshred_files"], o["reshred_files_sampled"], o["reshred_sample_rows"]) == (1, 1, 20_000)
    assert o["estimated_reshred_bytes_saved"] == doc["drifted_files"][0]["estimated_bytes_saved"]
    assert o["estimated_total_bytes_saved"] == o["estimated_bytes_saved"] + o["estimated_reshred_bytes_saved"]


def test_sample_option(tmp_path: Path) -> None:
    t = _mixed_table(tmp_path / "t")
    result = CliRunner().invoke(app, ["doctor", t.path, "--json", "--sample", "4"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert (doc["rows"], doc["rows_analyzed"], doc["sampled"]) == (12, 4, True)
    assert doc == json.loads(json.dumps(t.doctor(sample=4).to_dict()))
    bad = CliRunner().invoke(app, ["doctor", t.path, "--sample", "0"])
    assert bad.exit_code != 0


def test_missing_table_is_one_error_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["doctor", str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert "error:" in result.output and "Traceback" not in result.output


def test_coverage_bar_cells() -> None:
    from varlake.cli.doctor_chart import BAR_WIDTH, coverage_bar
    from varlake.write.diagnostics.report import PathCoverage

    def bar(typed: int, residual: int, missing: int) -> str:
        return coverage_bar(PathCoverage("$.a", True, "bigint", typed + residual + missing, typed, residual, missing, 0, 0)).plain

    assert bar(15, 5, 0) == "█" * 12 + "▒" * 4
    assert bar(0, 0, 7) == "░" * BAR_WIDTH
    assert bar(1, 0, 999) == "█" + "░" * (BAR_WIDTH - 1)  # a sliver stays visible
    assert bar(0, 0, 0) == "·" * BAR_WIDTH  # no value at all
    assert all(len(bar(t, r, m)) == BAR_WIDTH for t in range(4) for r in range(4) for m in range(4) if t + r + m)
