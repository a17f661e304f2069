"""A streaming ``varlake ingest`` ends its process cleanly: Spark's Py4J threads are stopped
and joined before the interpreter finalizes (``varlake.cli.session.close_session``), so a
successful run exits 0 -- every time, not only when no daemon thread happens to wake
during finalization (then the process could abort: "terminate called without an active
exception", exit code 134)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kill_drivers import expected, write_input_file

pytestmark = pytest.mark.spark

# The CLI as ``python -m varlake.cli`` runs it, plus a report of the threads still alive at
# the very end (an atexit handler registered first runs last, after varlake's own).
DRIVER = """
import atexit, sys, threading
atexit.register(lambda: print("threads at exit:", sorted(t.name for t in threading.enumerate()), file=sys.stderr))
from varlake.cli import app
app(sys.argv[1:], prog_name="varlake")
"""
RUNS = 3


def test_streaming_ingest_exits_zero_with_no_thread_left(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for i in range(2):
        write_input_file(src, i)  # file 1 holds a bad line: the quarantine's Python UDF runs too
    ids, bad = expected(src)
    env = {**os.environ, "VARLAKE_SPARK_LOG": str(tmp_path / "spark.log")}
    for run in range(RUNS):
        table, checkpoint = tmp_path / f"t{run}", tmp_path / f"ck{run}"
        cmd = [sys.executable, "-c", DRIVER, "ingest", str(src), str(table), "--stream", "--checkpoint", str(checkpoint),
               "--trigger", "available-now", "--max-files-per-trigger", "1", "--master", "local[1]", "-f", "json"]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, (run, done.returncode, done.stderr[-6000:])
        assert "terminate called" not in done.stderr
        out = json.loads(done.stdout)
        assert (out["batches"], out["rows_read"]) == (2, len(ids) + len(bad))
        assert "threads at exit: ['MainThread']" in done.stderr, done.stderr[-6000:]
