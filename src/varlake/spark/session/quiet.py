"""Keep Spark's JVM output off the terminal: the CLI's answers are the only output.

A local driver JVM writes to the file descriptors it inherits (log4j's console, the
launcher's "Using incubator modules", "Setting default log level"), so the one reliable
way to keep those lines off the terminal is to start the JVM with its stdout and stderr
pointing at a log file. ``quiet_launch`` does that around the call that starts the JVM
and restores the Python process's descriptors right after; the JVM (and the Python
workers it forks) keep writing to the file. The shipped ``log4j2.properties`` sets the
level: errors only, or warnings with ``verbose``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["LOG4J2_PROPERTIES", "driver_log_conf", "handled_errors_unlogged", "log_file", "quiet_launch"]

#: PySpark's loggers that print every Spark Connect error with a query context as it is
#: raised (``PySparkException._log_exception``), caught or not.
_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")

LOG4J2_PROPERTIES = Path(__file__).with_name("log4j2.properties")


def log_file() -> Path:
    """Where a quiet CLI run's Spark output goes: ``$VARLAKE_SPARK_LOG`` or a per-user temp file."""
    configured = os.environ.get("VARLAKE_SPARK_LOG")
    if configured:
        return Path(configured)
    user = os.environ.get("USER") or str(os.getuid())
    return Path(tempfile.gettempdir()) / f"varlake-spark-{user}.log"


def driver_log_conf(verbose: bool) -> dict[str, str]:
    """Spark confs that make the driver JVM use varlake's log4j2 configuration."""
    level = "warn" if verbose else "error"
    options = f"-Dlog4j2.configurationFile={LOG4J2_PROPERTIES.as_uri()} -Dvarlake.log.level={level}"
    return {"spark.driver.extraJavaOptions": options, "varlake.logLevel": level.upper()}


@contextmanager
def quiet_launch(enabled: bool = True) -> Iterator[Path | None]:
    """Point file descriptors 1 and 2 at ``log_file()`` for the block (when ``enabled``).

    Python-level streams are flushed first and the descriptors restored afterwards, so
    only processes started inside the block (the JVM) keep writing to the file."""
    if not enabled:
        yield None
        return
    target = log_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(target, "ab") as sink:
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            yield target
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


@contextmanager
def handled_errors_unlogged() -> Iterator[None]:
    """Keep PySpark from logging the Spark errors raised in the block: varlake handles them
    (a fallback, a verdict) or raises them to the caller, who sees them then."""
    from pyspark.logger import PySparkLogger  # its own class: a plain logging.Logger would break PySpark's calls

    loggers = [PySparkLogger.getLogger(name) for name in _ERROR_LOGGERS]
    before = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, was in zip(loggers, before):
            logger.disabled = was
