"""Shared helpers of the Hudi log tests: the zipped Hudi test tables, unzipped once per session,
their completed instants by a plain listing of the timeline, and their file slices by listing."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

TESTDATA = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "hudi"
if not TESTDATA.is_dir():  # a worktree beside the main checkout
    TESTDATA = Path("/work/shared/testdata/hudi")

LOG_NAME = re.compile(r"\A\.(?P<fid>.+)_(?P<instant>[^_]+)\.log\.(?P<ver>\d+)_(?P<token>[0-9-]+)\Z")
BASE_NAME = re.compile(r"\A(?P<fid>.+?)_(?P<token>[0-9]+-[0-9]+-[0-9]+)_(?P<instant>[0-9]+)\.(?P<ext>parquet|lance)\Z")
_COMPLETED = re.compile(r"\A(?P<instant>[0-9]+)(?:_[0-9]+)?\.(?P<action>commit|deltacommit|replacecommit|compaction)\Z")


def mor_zips() -> list[Path]:
    return sorted(p for p in TESTDATA.rglob("*.zip") if "/mor/" in p.as_posix())


def unzip_table(zip_path: Path, into: Path) -> Path:
    """Unzip a test table under ``into``; returns the table's root (the folder with ``.hoodie``)."""
    dest = into / zip_path.stem
    if not dest.exists():
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(dest)
    roots = [p.parent for p in dest.rglob(".hoodie") if "__MACOSX" not in p.parts and p.parent.name != "metadata"]
    roots = [r for r in roots if ".hoodie" not in r.parts]
    assert len(roots) == 1, roots
    return roots[0]


def completed_instants(root: Path) -> set[str]:
    """Instants of completed commits and delta commits (timeline layouts 1 and 2)."""
    out: set[str] = set()
    for folder in (root / ".hoodie", root / ".hoodie" / "timeline"):
        if folder.is_dir():
            for p in folder.iterdir():
                m = _COMPLETED.match(p.name)
                if m:
                    out.add(m["instant"])
    return out


def data_log_files(root: Path) -> list[Path]:
    """Every log file of the table's data (not of its metadata table)."""
    return sorted(
        p for p in root.rglob(".*.log.*") if ".hoodie" not in p.relative_to(root).parts and LOG_NAME.match(p.name)
    )


def all_log_files(root: Path) -> list[Path]:
    """Every log file, the metadata table's included."""
    return sorted(p for p in root.rglob(".*.log.*") if LOG_NAME.match(p.name) and "__MACOSX" not in p.parts)
