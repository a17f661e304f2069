"""Exactly-once under SIGKILL: a driver process that ingests, and the harness that kills it.

As a script (``python tests/kill_drivers.py KIND SRC TABLE CHECKPOINT [--once]``) it starts
a local Spark session, prints ``READY`` and then works until killed (``--once``: until the
input is used up, then exits 0):

- ``ingest``: ``ingest_json`` over the growing directory SRC again and again (incremental);
- ``stream``: ``ingest_stream`` (``varlake ingest --stream``), one file per micro-batch;
- ``write-stream``: ``write_stream`` of ``spark.readStream.json(SRC)``, one file per batch.

To land kills between a batch's two commits as well as anywhere else, the driver waits a
random moment right before the quarantine commit (``ingest``: after the table commit,
``stream``: before it) -- test-only instrumentation around the public functions.

``run_kill_trials`` is the harness: it grows SRC by whole files (written under a hidden
name, then renamed), starts the driver in its own process group, kills the group (the
Python driver and its JVM at once) with SIGKILL at a random moment after READY, again and
again, then runs it once to the end, and returns the ids and bad lines the tables hold
next to the ones the input holds.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

LINES_PER_FILE = 20
BAD_LINE = 6  # odd files hold one bad line, at this line number
KINDS = ("ingest", "stream", "write-stream")


# --- the input ----------------------------------------------------------------------------------------------


def write_input_file(src: Path, i: int, with_bad: bool = True) -> None:
    """File ``i``: ids ``i*1000 + j``; an odd file's line ``BAD_LINE`` is not JSON (when ``with_bad``)."""
    lines = [json.dumps({"id": i * 1000 + j, "kind": ["a", "b"][j % 2]}) for j in range(LINES_PER_FILE)]
    if with_bad and i % 2:
        lines.insert(BAD_LINE - 1, "{not json " + str(i))
    tmp = src / f".{i:05d}.jsonl.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    os.rename(tmp, src / f"{i:05d}.jsonl")


def expected(src: Path, with_bad: bool = True) -> tuple[list[int], list[tuple[str, int]]]:
    """(sorted ids, sorted (file, line) of bad lines) the files in ``src`` hold."""
    ids, bad = [], []
    for f in sorted(src.glob("*.jsonl")):
        i = int(f.name.split(".")[0])
        ids += [i * 1000 + j for j in range(LINES_PER_FILE)]
        if with_bad and i % 2:
            bad.append((str(f), BAD_LINE))
    return sorted(ids), sorted(bad)


def committed_column(table: Path, column: str) -> list:
    """Values of ``column`` in every live file of the table's latest snapshot (no Variant decoding)."""
    import pyarrow.parquet as pq

    from varlake.delta.table_log import DeltaLog
    from varlake.io.storage import LocalStorage

    snapshot = DeltaLog(LocalStorage(), str(table)).snapshot()
    out: list = []
    for add in snapshot.files:
        assert add.deletion_vector is None
        out += pq.read_table(os.path.join(str(table), unquote(add.path)), columns=[column]).column(column).to_pylist()
    return out


# --- the harness -------------------------------------------------------------------------------------------------


@dataclass
class KillReport:
    kills: int
    ids: list[int]
    expected_ids: list[int]
    bad: list[tuple[str, int]]
    expected_bad: list[tuple[str, int]]
    seconds: float
    kill_delays: list[str]

    @property
    def exact(self) -> bool:
        return self.ids == self.expected_ids and self.bad == self.expected_bad


def _start(kind: str, src: Path, table: Path, checkpoint: Path, once: bool, log: Path) -> subprocess.Popen:
    args = [sys.executable, __file__, kind, str(src), str(table), str(checkpoint)] + (["--once"] if once else [])
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYSPARK_PYTHON": sys.executable}
    return subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=log.open("ab"), text=True, start_new_session=True, env=env
    )


class _Lines:
    """The driver's stdout lines, read by a thread (so waits can time out)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        import queue
        import threading

        self.queue: Any = queue.Queue()
        self.proc = proc
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.queue.put(line.strip())
        self.queue.put(None)

    def wait_for(self, prefix: str, timeout: float) -> bool:
        """True when a line starting with ``prefix`` came within ``timeout`` s."""
        import queue

        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.queue.get(timeout=left)
            except queue.Empty:
                return False
            if line is None:
                return False
            if line.startswith(prefix):
                return True
        return False


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the driver's process group: the Python driver and its JVM die at once."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)


def run_kill_trials(kind: str, root: Path, kills: int, seed: int = 0) -> KillReport:
    """Grow the input, kill the driver ``kills`` times at random moments, run it to the end.

    Half the kills come at a random time after READY (up to 1.5 times the time the last
    run took to its first commit), half a random moment (< 0.5 s) after a random one of
    the first commits the driver reports -- so kills land before, between and after them."""
    rng = random.Random(seed)
    src, table, checkpoint, log = root / "src", root / "table", root / "checkpoint", root / "driver.log"
    src.mkdir(parents=True, exist_ok=True)
    with_bad = kind != "write-stream"
    started = time.perf_counter()
    n = 0
    delays: list[str] = []
    to_first_commit = 10.0

    def _learn(seconds: float) -> None:
        """The time-based window follows the time to a first commit (a run that starts
        by completing a killed run's quarantine commits at once: not a measure)."""
        nonlocal to_first_commit
        if seconds > 1.0:
            to_first_commit = seconds

    for _trial in range(kills):
        for _ in range(2):
            write_input_file(src, n, with_bad)
            n += 1
        proc = _start(kind, src, table, checkpoint, False, log)
        try:
            lines = _Lines(proc)
            if not lines.wait_for("READY", 300):
                raise RuntimeError(f"the {kind} driver was not READY; see {log}")
            ready = time.monotonic()
            write_input_file(src, n, with_bad)  # the directory grows while the driver works
            n += 1
            if rng.random() < 0.5:
                delay = rng.uniform(0.0, 1.5 * to_first_commit)
                if lines.wait_for("COMMIT", delay):
                    _learn(time.monotonic() - ready)
                    lines.wait_for("never", max(0.0, ready + delay - time.monotonic()))
                delays.append(f"t+{delay:.1f}s")
            else:
                k = rng.randint(1, 3)
                for i in range(k):
                    if not lines.wait_for("COMMIT", 300):
                        break
                    if i == 0:
                        _learn(time.monotonic() - ready)
                pause = rng.uniform(0.0, 0.5)
                time.sleep(pause)
                delays.append(f"commit{k}+{pause:.2f}s")
        finally:
            _kill_group(proc)
    write_input_file(src, n, with_bad)
    proc = _start(kind, src, table, checkpoint, True, log)
    try:
        code = proc.wait(timeout=900)
    finally:
        if proc.poll() is None:
            _kill_group(proc)
    if code != 0:
        raise RuntimeError(f"the final run of the {kind} driver failed ({code}); see {log}")
    ids, bad = expected(src, with_bad)
    got_bad: list[tuple[str, int]] = []
    q = Path(str(table) + "_quarantine")
    if with_bad and (q / "_delta_log").is_dir():
        got_bad = sorted(zip(committed_column(q, "file"), committed_column(q, "line")))
    return KillReport(kills, sorted(committed_column(table, "id")), ids, got_bad, bad, time.perf_counter() - started, delays)


# --- the driver ---------------------------------------------------------------------------------------------------


def _pause(rng: random.Random) -> None:
    time.sleep(rng.uniform(0.0, 0.4))


def _drive(kind: str, src: str, table: str, checkpoint: str, once: bool) -> None:
    from varlake.spark import local_session

    rng = random.Random()
    spark = local_session("local[2]", {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
    columns = {"id": "$.id::bigint", "kind": "$.kind::string"}
    shredding = os.environ.get("VARLAKE_KILL_SHREDDING", "off")  # "off" keeps each run short
    if kind == "ingest":
        import varlake.spark.writing.ingest as ingest

        real = ingest.complete_quarantine

        def paused(record, *args):  # type: ignore[no-untyped-def]
            print(f"COMMIT table batch {record.batch}", flush=True)
            _pause(rng)
            version = real(record, *args)
            print(f"COMMIT quarantine batch {record.batch}", flush=True)
            return version

        ingest.complete_quarantine = paused
        print("READY", flush=True)
        while True:
            ingest.ingest_json(spark, src, table, columns, shredding=shredding)
            if once:
                return
            time.sleep(0.05)
    if kind == "stream":
        import varlake.spark.writing.stream as stream

        real_commit = stream.commit_write

        def paused_commit(staged, **kw):  # type: ignore[no-untyped-def]
            result = real_commit(staged, **kw)
            print(f"COMMIT {os.path.basename(staged.root)} {kw.get('app_version')}", flush=True)
            _pause(rng)
            return result

        stream.commit_write = paused_commit
        query = stream.ingest_stream(
            spark, src, table, checkpoint, columns, shredding=shredding, trigger="available-now" if once else None,
            max_files_per_trigger=1,
        )
        print("READY", flush=True)
        query.awaitTermination()
        if query.exception() is not None:
            raise SystemExit(f"stream failed: {query.exception()}")
        return
    if kind == "write-stream":
        from varlake.spark.writing.stream import write_stream

        df = spark.readStream.schema("id bigint, kind string").option("maxFilesPerTrigger", "1").json(src)
        import varlake.spark.writing.stream as stream

        real_write = stream.write

        def reporting_write(*args, **kw):  # type: ignore[no-untyped-def]
            result = real_write(*args, **kw)
            print(f"COMMIT table {kw.get('app_version')}", flush=True)
            return result

        stream.write = reporting_write
        df = df.selectExpr("id", "kind", "parse_json(to_json(named_struct('id', id, 'kind', kind))) AS doc")
        query = write_stream(df, table, checkpoint, trigger="available-now" if once else None, shredding=shredding)
        print("READY", flush=True)
        query.awaitTermination()
        if query.exception() is not None:
            raise SystemExit(f"stream failed: {query.exception()}")
        return
    raise SystemExit(f"unknown driver kind {kind!r}; one of {KINDS}")


if __name__ == "__main__":
    argv = sys.argv[1:]
    once_flag = "--once" in argv
    rest = [a for a in argv if a != "--once"]
    if len(rest) != 4:
        raise SystemExit("usage: kill_drivers.py KIND SRC TABLE CHECKPOINT [--once]")
    _drive(*rest, once=once_flag)
