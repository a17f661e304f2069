"""SparkSession helpers: a local session for the CLI and demo, temporary confs, job progress.

``local_session`` starts (or reuses) a session with varlake's defaults: UTC session time
zone, no web UI, no console progress bar (callers render their own from
``track_progress``), and Python workers running this interpreter so executors can
import varlake (the writer computes file statistics and the ingest computes
quarantine reasons on them).

``spark_conf`` sets SQL confs for the duration of a block and restores what was there
before. Confs are per session, so two threads that both change the same conf race:
the writer serialises its own conf changes with a lock (see ``writer``).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

# Parquet page checksums (CRC32) in every Spark job varlake runs, as io.parquet_write and
# io.parquet_read do for pyarrow: a corrupted page fails the read with Spark's
# FAILED_READ_FILE naming the file, never reads as other values. Passed as data source
# options, which Spark copies into the job's Hadoop configuration for parquet-mr.
PARQUET_WRITE_OPTIONS: dict[str, str] = {"parquet.page.write-checksum.enabled": "true"}
PARQUET_READ_OPTIONS: dict[str, str] = {"parquet.page.verify-checksum.enabled": "true"}

DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
}


def local_session(master: str = "local[*]", conf: Mapping[str, str] | None = None, app_name: str = "varlake") -> Any:
    """A SparkSession on ``master`` with varlake's defaults, overridden by ``conf``.

    Static confs (driver memory, UI) only take effect when this call starts the JVM.
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = {**DEFAULT_CONF, **dict(conf or {})}
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(settings.get("varlake.logLevel", "ERROR"))
    return session


def parse_conf(pairs: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``["k=v", ...]`` (as given on the command line) as a dict; ``ValueError`` names a bad pair."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf needs key=value, got {pair!r}")
        out[key.strip()] = value
    return out


@contextmanager
def spark_conf(spark: Any, settings: Mapping[str, str | None]) -> Iterator[None]:
    """Set session confs (``None`` unsets) for the block, then restore the previous values."""
    previous: dict[str, str | None] = {}
    try:
        for key, value in settings.items():
            previous[key] = spark.conf.get(key, None)
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def spark_error_summary(exc: BaseException) -> str:
    """One line for a Spark/Py4J failure: its message and its root cause, no JVM stack."""
    noise = ("at ", "...", "An error occurred while calling", "Driver stacktrace", "Suppressed:")
    lines = [line.strip().lstrip(":").strip() for line in str(exc).splitlines()]
    useful = [line for line in lines if line and not line.startswith(noise)]
    if not useful:
        return type(exc).__name__
    summary = useful[0]
    causes = [line for line in useful if line.startswith("Caused by:")]
    if causes and causes[-1][len("Caused by:"):].strip() not in summary:
        summary += f" ({causes[-1]})"
    return summary


# --- progress -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageProgress:
    """Tasks of one running Spark stage."""

    stage_id: int
    name: str
    done: int
    running: int
    failed: int
    total: int


@contextmanager
def track_progress(
    spark: Any, on_update: Callable[[list[StageProgress]], None], interval: float = 0.25
) -> Iterator[None]:
    """Call ``on_update`` with the active stages every ``interval`` seconds during the block.

    It polls Spark's status tracker from a daemon thread; rendering is the caller's job.
    """
    tracker = spark.sparkContext.statusTracker()
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            stages = []
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    stages.append(
                        StageProgress(
                            stage_id,
                            info.name,
                            info.numCompletedTasks,
                            info.numActiveTasks,
                            info.numFailedTasks,
                            info.numTasks,
                        )
                    )
            try:
                on_update(stages)
            except Exception:  # a broken renderer must not kill the job  # noqa: BLE001
                return
            time.sleep(interval)

    thread = threading.Thread(target=poll, name="varlake-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2 * interval + 1)
