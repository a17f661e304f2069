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

from varlake.spark.session.kind import is_classic  # noqa: F401 -- re-exported: callers import it from here

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


def local_session(
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    app_name: str = "varlake",
    storage_options: Mapping[str, str] | None = None,
) -> Any:
    """A SparkSession on ``master`` with varlake's defaults, overridden by ``conf``.

    With ``storage_options``, or ``AWS_*`` credentials or an endpoint in the environment,
    the session reaches S3 through Hadoop's S3A connector with the same settings varlake's
    Python side uses (``session.object_store.s3a_conf``: jars from ``make tools``,
    ``s3://`` = ``s3a://``, the magic committer): the driver and its executors then agree.
    ``conf`` still overrides any of it. Static confs (driver memory, UI, jars) only take
    effect when this call starts the JVM.
    """
    from pyspark.sql import SparkSession

    from varlake.spark.session.object_store import S3AConnectorMissingError, object_store_requested, s3a_conf

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    store: dict[str, str] = {}
    if object_store_requested(storage_options):
        try:
            store = s3a_conf(storage_options, master=master)
        except S3AConnectorMissingError:
            if storage_options:
                raise
            # S3 settings in the environment only: local tables still work without the connector
            # (an s3:// table then fails naming ``make tools``, see ``object_store.check_s3a``).
    settings = {**DEFAULT_CONF, **store, **dict(conf or {})}
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(settings.get("varlake.logLevel", "ERROR"))
    return session


# Confs a Connect client may not set: static ones, fixed when the server started.
_SERVER_ONLY_CONF = ("spark.ui.enabled", "spark.ui.showConsoleProgress")


def connect_session(remote: str, conf: Mapping[str, str] | None = None, app_name: str = "varlake") -> Any:
    """A Spark Connect session on ``remote`` (``sc://host:port`` or ``local[N]``) with varlake's defaults.

    Runtime confs from ``DEFAULT_CONF`` and ``conf`` are set on the new session; static
    ones (UI, memory) belong to the server and are skipped, unless ``remote`` is
    ``local[N]``: then PySpark starts a Connect server in this process and gets them all.

    ``pyspark.sql.functions`` (and ``Column``, ``Observation``) pick their Connect or
    classic form per process (``SPARK_CONNECT_MODE_ENABLED``), which PySpark's builder
    sets here. A process that already runs a classic session keeps that setting: it
    may still open a Connect session (tests do) but must set the variable itself
    while it works with it.
    """
    import warnings

    from pyspark.sql import SparkSession

    settings = {k: v for k, v in {**DEFAULT_CONF, **dict(conf or {})}.items() if not k.startswith("varlake.")}
    starts_server = not remote.startswith("sc://")
    classic = SparkSession._instantiatedSession
    if starts_server or classic is None or classic._sc._jsc is None:
        builder = SparkSession.builder.remote(remote).appName(app_name)
    else:
        # PySpark's generic builder refuses a remote session next to a classic one;
        # the Connect client itself does not mind.
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        builder = ConnectSession.builder.remote(remote).appName(app_name)
    if starts_server:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        for key, value in settings.items():
            builder = builder.config(key, value)
    with warnings.catch_warnings():  # PySpark warns for each static conf it cannot re-set
        warnings.simplefilter("ignore", UserWarning)
        session = builder.getOrCreate()
    if starts_server:
        from pyspark import SparkContext

        server = SparkContext._active_spark_context
        if server is not None:
            server.setLogLevel((conf or {}).get("varlake.logLevel", "ERROR"))
        return session
    for key, value in settings.items():
        if key in _SERVER_ONLY_CONF:
            continue
        try:
            session.conf.set(key, value)
        except Exception:  # a static conf the server fixed at start  # noqa: BLE001
            continue
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
    bytes_read: int = 0  # input bytes of the stage's finished tasks
    rows: int = 0  # input records (output records for a stage without input) of its finished tasks
    bytes_written: int = 0  # output bytes of its finished tasks


@contextmanager
def track_progress(
    spark: Any, on_update: Callable[[list[StageProgress]], None], interval: float = 0.25
) -> Iterator[None]:
    """Call ``on_update`` with the active stages every ``interval`` seconds during the block.

    It polls Spark's status tracker from a daemon thread; rendering is the caller's job. On
    Spark Connect the server reports progress with each response instead: ``on_update`` is
    called from the client's progress handler (at most every ``interval`` seconds), and
    not at all if the server sends none.
    """
    if not is_classic(spark):
        with _connect_progress(spark, on_update, interval):
            yield
        return
    tracker = spark.sparkContext.statusTracker()
    stop = threading.Event()
    io = _StageIo(spark)

    def poll() -> None:
        while not stop.is_set():
            stages = []
            metrics = io.active()
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
                            *metrics.get(stage_id, (0, 0, 0)),
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


class _StageIo:
    """Rows and bytes of a classic application's active stages, from Spark's status store
    (what its web UI shows; PySpark's ``StatusTracker`` has task counts only). The store is
    a JVM object: if this Spark does not offer it as expected, progress shows task counts
    only, quietly."""

    def __init__(self, spark: Any) -> None:
        try:
            self._store = spark.sparkContext._jsc.sc().statusStore()
        except Exception:  # noqa: BLE001 - no store: task counts only
            self._store = None

    def active(self) -> dict[int, tuple[int, int, int]]:
        """``stage id -> (bytes read, rows, bytes written)`` of the tasks finished so far."""
        if self._store is None:
            return {}
        try:
            stages = self._store.activeStages()
            out = {}
            for i in range(stages.size()):
                s = stages.apply(i)
                rows = s.inputRecords() or s.outputRecords()
                out[int(s.stageId())] = (int(s.inputBytes()), int(rows), int(s.outputBytes()))
            return out
        except Exception:  # noqa: BLE001 - the store changed or the application stopped
            self._store = None
            return {}


@contextmanager
def _connect_progress(spark: Any, on_update: Callable[[list[StageProgress]], None], interval: float) -> Iterator[None]:
    """``track_progress`` on Spark Connect: a progress handler for the block's operations."""
    last = [0.0]
    broken = [False]

    def handler(stages: Any = None, inflight_tasks: int = 0, operation_id: Any = None, done: bool = False, **_: Any) -> None:
        now = time.monotonic()
        if broken[0] or (not done and now - last[0] < interval):
            return
        last[0] = now
        running = [s for s in (stages or []) if not s.done]
        update = [
            StageProgress(s.stage_id, f"stage {s.stage_id}", s.num_completed_tasks, inflight_tasks if i == 0 else 0, 0, s.num_tasks, s.num_bytes_read)
            for i, s in enumerate(running)
        ]
        try:
            on_update(update)
        except Exception:  # a broken renderer must not kill the job  # noqa: BLE001
            broken[0] = True

    try:
        spark.registerProgressHandler(handler)
    except Exception:  # an older client: no progress, quietly  # noqa: BLE001
        yield
        return
    try:
        yield
    finally:
        try:
            spark.removeProgressHandler(handler)
        except Exception:  # noqa: BLE001 - the session is gone: nothing to remove
            pass
