"""bench/dml.py at a tiny scale: every figure is produced, and the counts are the workload's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import dml  # noqa: E402


def test_dml_bench_runs_and_counts(tmp_path: Path, monkeypatch, capsys) -> None:
    out = tmp_path / "dml.json"
    argv = ["dml.py", "--rows", "4000", "--files", "4", "--reps", "1", "--merge-rows", "200", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    dml.main()
    figures = json.loads(out.read_text())
    delete, merge = figures["delete"], figures["merge"]
    assert delete["dv"]["rows_deleted"] == delete["cow"]["rows_deleted"] == 4  # uid = 7: one row in 1000
    assert delete["dv"]["deletion_vectors"] == 4 and delete["dv"]["files_removed"] == 0
    assert delete["cow"]["files_removed"] == 4 and delete["cow"]["rows_copied"] == 3996
    for side in ("dv", "cow"):
        assert (merge[side]["rows_updated"], merge[side]["rows_inserted"]) == (100, 100)
    assert figures["scan"]["python_scan"]["dv"] > 0 and "DELETE 0.1% seconds" in capsys.readouterr().out
