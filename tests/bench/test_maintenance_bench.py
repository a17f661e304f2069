"""bench/maintenance.py at a tiny scale: the table arrives as small files, OPTIMIZE bin-packs
them, clustering by a Variant path makes the selective query skip files, and every copy
answers the query with the same rows."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import maintenance  # noqa: E402


def test_maintenance_bench_tiny(tmp_path: Path) -> None:
    out = maintenance.main(
        ["--rows", "3000", "--files", "12", "--collections", "40", "--reps", "1", "--clustered-files", "10",
         "--work", str(tmp_path / "work"), "--out", str(tmp_path / "m.json")]
    )  # fmt: skip
    before, packed, clustered = out["before"], out["bin_packed"], out["clustered"]
    assert before["files"] == 12 and packed["files"] == 1 and clustered["files"] >= 5
    rows = {f["selective_query"]["rows"] for f in (before, packed, clustered)}
    assert len(rows) == 1 and rows.pop() > 0
    assert {f["full_scan"]["rows"] for f in (before, packed, clustered)} == {3000}
    assert before["selective_query"]["skipped_share"] == 0 and out["unclustered_skip_ok"]
    assert clustered["selective_query"]["skipped_share"] >= 0.5
    assert out["bin_packed_optimize"]["rows"] == out["clustered_optimize"]["rows"] == 3000
    assert out["bin_packed_optimize"]["rows_per_second"] > 0
    assert out["clustered_second_optimize_version"] is None
    assert (tmp_path / "m.json").exists()
