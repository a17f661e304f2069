"""Reaching a Spark cluster in bounded time: a standalone master (``spark://``) or a Spark
Connect server (``sc://``).

Spark itself waits long and quietly when the other end is missing: a driver keeps asking an
unreachable master to register its application for a minute and then leaves a stopped
context behind, a job on a master without workers waits for executors forever, and the
Connect client retries with backoff. The CLI checks first and gives up with one named error
(``SparkUnavailableError``) that says which URL and what to check.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from varlake.errors import SparkUnavailableError

__all__ = [
    "CONNECT_DEFAULT_PORT",
    "check_reachable",
    "endpoints",
    "open_classic",
    "open_connect",
    "wait_for_executors",
]

CONNECT_DEFAULT_PORT = 15002  # Spark Connect's default (spark.connect.grpc.binding.port)
MASTER_DEFAULT_PORT = 7077  # the standalone master's default
REACH_TIMEOUT = 10.0  # seconds to open a TCP connection to a master or Connect server
EXECUTOR_TIMEOUT = 120.0  # seconds for a standalone application to get its first executor
EXECUTOR_TIMEOUT_CONF = "varlake.cluster.executorTimeout"


def endpoints(url: str) -> list[tuple[str, int]]:
    """The ``(host, port)`` pairs of a ``spark://h1:p1,h2:p2`` master (several with standby
    masters) or an ``sc://host:port/;param=value`` Connect URL; empty for other masters
    (``local[N]``, ``yarn``, ``k8s://``), which are not probed."""
    if url.startswith("spark://"):
        hosts, default = url[len("spark://"):], MASTER_DEFAULT_PORT
    elif url.startswith("sc://"):
        hosts, default = url[len("sc://"):].split("/", 1)[0], CONNECT_DEFAULT_PORT
    else:
        return []
    out: list[tuple[str, int]] = []
    for item in hosts.split(","):
        item = item.strip()
        if item.startswith("["):  # [ipv6]:port
            host, _, rest = item[1:].partition("]")
            port_text = rest.lstrip(":")
        else:
            host, _, port_text = item.rpartition(":") if ":" in item else (item, "", "")
        if not host:
            raise SparkUnavailableError(f"{url!r} names no host (expected {url.split('://')[0]}://HOST:PORT)")
        try:
            port = int(port_text) if port_text else default
        except ValueError:
            raise SparkUnavailableError(f"{url!r}: port {port_text!r} is not a number") from None
        if not 0 < port < 65536:
            raise SparkUnavailableError(f"{url!r}: port {port} is out of range")
        out.append((unquote(host), port))
    return out


def check_reachable(url: str, timeout: float = REACH_TIMEOUT) -> None:
    """Raise ``SparkUnavailableError`` unless some endpoint of ``url`` accepts a TCP
    connection within ``timeout`` seconds (each); other master URLs pass unchecked."""
    targets = endpoints(url)
    reasons = []
    for host, port in targets:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as exc:
            reasons.append(f"{host}:{port}: {exc.strerror or type(exc).__name__}")
    if targets:
        what = "Spark Connect server" if url.startswith("sc://") else "Spark master"
        raise SparkUnavailableError(f"cannot reach the {what} {url} ({'; '.join(reasons)})")


def wait_for_executors(spark: Any, master: str, timeout: float = EXECUTOR_TIMEOUT) -> int:
    """Block until the classic session's application has at least one executor; return how
    many it has. Raises ``SparkUnavailableError`` if the master stopped the application or no
    executor registered within ``timeout`` seconds (no worker, or none with the cores and
    memory the application asks for)."""
    sc = spark.sparkContext._jsc.sc()
    deadline = time.monotonic() + timeout
    while True:
        if sc.isStopped():
            raise SparkUnavailableError(
                f"the Spark master {master} did not accept the application (is it a standalone master, "
                "and does its version match this PySpark's?)"
            )
        # The driver counts itself among the block managers; executors are the rest.
        executors = sc.getExecutorMemoryStatus().size() - 1
        if executors > 0:
            return int(executors)
        if time.monotonic() >= deadline:
            memory = spark.conf.get("spark.executor.memory", "1g")
            raise SparkUnavailableError(
                f"no executor registered with the Spark master {master} within {timeout:.0f}s: are workers "
                f"running with a free core and {memory} of memory (spark.executor.memory)?"
            )
        time.sleep(0.2)


def open_classic(master: str, conf: Mapping[str, str], start: Any) -> Any:
    """``start(master, conf)`` (a classic session) after checking a ``spark://`` master is
    reachable, then waiting (bounded) for its first executor."""
    check_reachable(master)
    spark = start(master, conf)
    if master.startswith("spark://"):
        timeout = float(conf.get(EXECUTOR_TIMEOUT_CONF, EXECUTOR_TIMEOUT))
        wait_for_executors(spark, master, timeout)
    return spark


def open_connect(remote: str, conf: Mapping[str, str]) -> Any:
    """A Spark Connect session on ``remote`` (``sc://HOST:PORT``) after checking the server is
    reachable; ``conf`` holds session confs to set on it."""
    from varlake.spark.session.local import connect_session

    if not remote.startswith("sc://"):
        raise SparkUnavailableError(f"--remote needs a Spark Connect URL sc://HOST:PORT, got {remote!r}")
    check_reachable(remote)
    return connect_session(remote, conf)
