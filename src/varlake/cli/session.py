"""The Spark session of a command (``--master``/``--remote``/``--conf``) and its live
progress bars on stderr."""

from __future__ import annotations

from collections.abc import Mapping

import atexit
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.text import Text

from varlake.cli.base import err
from varlake.cli.doctor_chart import size_text

__all__ = ["close_session", "progress", "spark_session", "stage_io_text"]


def spark_session(
    master: str | None,
    conf: list[str],
    verbose: bool = False,
    remote: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> Any:
    """The session for a command: a Spark Connect session on ``remote``, else a classic one on
    ``master`` (default ``local[*]``). An unreachable master or server, or a standalone master
    that gives no executor, fails in bounded time (``varlake.spark.session.endpoints``). Unless
    ``verbose``, a local JVM starts with its output sent to a log file (``varlake.spark.session.quiet``),
    so the terminal shows only varlake's own lines. ``storage_options`` (``--storage-option``)
    configure the session's S3A connector as ``varlake.spark.local_session`` does."""
    import logging
    import warnings

    from varlake.spark.session.endpoints import open_classic, open_connect
    from varlake.spark.session.local import local_session, parse_conf
    from varlake.spark.session.quiet import driver_log_conf, quiet_launch

    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)  # errors are reported once, below
    if remote is not None:
        if master is not None:
            raise ValueError("--master and --remote are mutually exclusive (--remote names a Spark Connect server)")
        return open_connect(remote, parse_conf(conf))
    master = master or "local[*]"
    settings = {**driver_log_conf(verbose), "spark.sql.warehouse.dir": str(Path(tempfile.gettempdir()) / "varlake-warehouse")}
    user = parse_conf(conf)
    if "spark.driver.extraJavaOptions" in user:
        user["spark.driver.extraJavaOptions"] = settings["spark.driver.extraJavaOptions"] + " " + user["spark.driver.extraJavaOptions"]

    def start(master: str, conf: Any) -> Any:
        with quiet_launch(enabled=not verbose):
            return local_session(master, conf, storage_options=storage_options)

    spark = open_classic(master, {**settings, **user}, start)
    if not _OPENED:
        atexit.register(_close_opened)
    _OPENED.append(spark)
    return spark


_OPENED: list[Any] = []  # the classic sessions commands of this process opened


def _close_opened() -> None:
    while _OPENED:
        close_session(_OPENED.pop())


def close_session(spark: Any, timeout: float = 30.0) -> None:
    """End a classic session and everything it runs in this process, while the interpreter
    is whole (the sessions ``spark_session`` opened are closed by an ``atexit`` handler, which
    runs before the interpreter finalizes).

    Left running, Py4J's daemon threads -- the callback server and its connections (where a
    ``foreachBatch`` of a stream ran), its finalizer worker, the accumulator server -- wake
    while the interpreter finalizes, and a thread that then takes the GIL is ended under
    native frames, which can abort the process after the command succeeded ("terminate
    called without an active exception", exit code 134). So: streams stopped, the
    SparkContext stopped, the gateway shut down, the JVM ended by closing its stdin (as it
    would be at exit), and those threads joined. A failure here is a warning on stderr: the
    command's own exit code stands."""
    from pyspark import SparkContext

    threads = [t for t in threading.enumerate() if t.daemon and _owner(t).startswith(("py4j", "pyspark"))]
    try:
        if SparkContext._active_spark_context is not None:
            for q in spark.streams.active:
                q.stop()
            spark.stop()
        gateway = SparkContext._gateway
        if gateway is not None:
            proc = getattr(gateway, "proc", None)
            gateway.shutdown()
            SparkContext._gateway = SparkContext._jvm = None
            if proc is not None and proc.stdin is not None:
                proc.stdin.close()  # spark-submit ends its JVM when its stdin closes
                proc.wait(timeout)
    except Exception as exc:  # the JVM may be gone already  # noqa: BLE001
        print(f"warning: stopping Spark at exit: {type(exc).__name__}: {exc}", file=sys.stderr)
        return  # its threads may not end: they are left to the interpreter, as before
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))


def _owner(thread: threading.Thread) -> str:
    """The module of what a thread runs: its class's, or its target's (a method's object)."""
    if type(thread) is not threading.Thread:
        return type(thread).__module__
    target = getattr(thread, "_target", None)
    owner = getattr(target, "__self__", None)
    return type(owner).__module__ if owner is not None else getattr(target, "__module__", "") or ""


def stage_io_text(stage: Any) -> str:
    """``12,000 rows · 3.4 MB read · 1.2 MB written`` for a stage's finished tasks (what is known)."""
    parts = []
    if stage.rows:
        parts.append(f"{stage.rows:,} rows")
    for amount, verb in ((stage.bytes_read, "read"), (stage.bytes_written, "written")):
        if amount:
            parts.append(f"{size_text(amount)} {verb}")
    return " · ".join(parts)


@contextmanager
def progress(spark: Any) -> Iterator[Any]:
    """A live bar per running Spark stage on stderr; yields a callback for phase messages."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from varlake.spark.session.local import StageProgress, track_progress

    bars = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[io]}"),
        TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
        console=err, transient=True,
    )
    tasks: dict[int, Any] = {}

    def update(stages: list[StageProgress]) -> None:
        for s in stages:
            if s.stage_id not in tasks:
                tasks[s.stage_id] = bars.add_task(f"stage {s.stage_id}", total=s.total, io="")
            bars.update(tasks[s.stage_id], completed=s.done, total=s.total, io=stage_io_text(s))
        live = {s.stage_id for s in stages}
        for stage_id, task in list(tasks.items()):
            if stage_id not in live:
                bars.update(task, visible=False)

    start = time.perf_counter()

    def phase(message: str) -> None:
        err.print(Text.assemble((f"{time.perf_counter() - start:7.1f}s ", "dim"), message))

    with bars, track_progress(spark, update):
        yield phase
