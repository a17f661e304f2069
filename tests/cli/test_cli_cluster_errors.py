"""``--master`` / ``--remote`` failures are one named line and a non-zero exit code, in bounded
time: an unreachable standalone master or Spark Connect server, both options at once, a URL
that is not a Connect URL; and the URL parsing and executor wait behind them
(``varlake.spark.session.endpoints``). No Spark starts here."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from varlake.cli import app
from varlake.errors import SparkUnavailableError
from varlake.spark.session.endpoints import check_reachable, endpoints, wait_for_executors

runner = CliRunner()


def _run(*args: Any) -> Any:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def _closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _one_error_line(result: Any) -> str:
    assert result.exit_code == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("command", [["query", "T", "SELECT count(*) FROM {t}"], ["ingest", "in.jsonl", "T"]])
def test_unreachable_master_or_server_fails_fast_with_one_line(tmp_path: Path, command: list[str]) -> None:
    port = _closed_port()
    started = time.monotonic()
    line = _one_error_line(_run(*command, "--master", f"spark://127.0.0.1:{port}"))
    assert line.startswith("error: cannot reach the Spark master") and f"spark://127.0.0.1:{port}" in line
    line = _one_error_line(_run(*command, "--remote", f"sc://127.0.0.1:{port}"))
    assert line.startswith("error: cannot reach the Spark Connect server") and f"sc://127.0.0.1:{port}" in line
    assert time.monotonic() - started < 20


def test_the_varlake_command_reports_an_unreachable_master_on_one_line(tmp_path: Path) -> None:
    """The installed entry point, as a terminal runs it: one stderr line, exit code 1, nothing on stdout."""
    varlake = Path(sys.executable).with_name("varlake")
    url = f"spark://127.0.0.1:{_closed_port()}"
    env = {**os.environ, "COLUMNS": "40"}  # a narrow terminal still gets one line
    done = subprocess.run([str(varlake), "query", str(tmp_path / "t"), "SELECT count(*) FROM {t}", "--master", url],
                          capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [f"error: cannot reach the Spark master {url} (127.0.0.1:{url.rsplit(':', 1)[1]}: Connection refused)"]


def test_master_and_remote_are_exclusive_and_remote_needs_sc() -> None:
    line = _one_error_line(_run("query", "T", "SELECT 1 FROM {t}", "--master", "local[1]", "--remote", "sc://127.0.0.1:1"))
    assert "--master and --remote are mutually exclusive" in line
    line = _one_error_line(_run("query", "T", "SELECT 1 FROM {t}", "--remote", "spark://127.0.0.1:7077"))
    assert "sc://HOST:PORT" in line and "spark://127.0.0.1:7077" in line
    line = _one_error_line(_run("query", "T", "SELECT 1 FROM {t}", "--remote", "sc://"))
    assert "names no host" in line


def test_endpoints_of_master_and_connect_urls() -> None:
    assert endpoints("spark://10.0.0.1:7077") == [("10.0.0.1", 7077)]
    assert endpoints("spark://a:7077,b:7078") == [("a", 7077), ("b", 7078)]  # standby masters
    assert endpoints("spark://host") == [("host", 7077)]
    assert endpoints("sc://host") == [("host", 15002)]
    assert endpoints("sc://host:443/;token=abc;use_ssl=true") == [("host", 443)]
    assert endpoints("sc://[::1]:15003") == [("::1", 15003)]
    assert endpoints("local[2]") == [] and endpoints("yarn") == [] and endpoints("k8s://https://h:6443") == []
    for bad, message in [("spark://h:x", "not a number"), ("sc://h:0", "out of range"), ("spark://:7077", "names no host")]:
        with pytest.raises(SparkUnavailableError, match=message):
            endpoints(bad)


def test_check_reachable_passes_a_listening_port_and_any_standby() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        check_reachable(f"sc://127.0.0.1:{port}")
        check_reachable(f"spark://127.0.0.1:{_closed_port()},127.0.0.1:{port}")  # one master of two answers
    check_reachable("local[*]")  # nothing to probe


class _FakeContext:
    """The JVM SparkContext calls ``wait_for_executors`` makes, scripted."""

    def __init__(self, block_managers: list[int], stopped: bool = False) -> None:
        self.block_managers = block_managers
        self.stopped = stopped

    def isStopped(self) -> bool:  # noqa: N802 - the JVM's name
        return self.stopped

    def getExecutorMemoryStatus(self) -> Any:  # noqa: N802
        count = self.block_managers.pop(0) if len(self.block_managers) > 1 else self.block_managers[0]
        return type("Map", (), {"size": lambda _self: count})()


class _FakeSession:
    def __init__(self, sc: _FakeContext) -> None:
        jsc = type("JSC", (), {"sc": lambda _self: sc})()
        self.sparkContext = type("SC", (), {"_jsc": jsc})()
        self.conf = type("Conf", (), {"get": lambda _self, key, default=None: "3g"})()


def test_wait_for_executors_returns_once_one_registered_and_is_bounded() -> None:
    assert wait_for_executors(_FakeSession(_FakeContext([1, 1, 3])), "spark://m:7077", timeout=5) == 2
    started = time.monotonic()
    with pytest.raises(SparkUnavailableError, match=r"no executor registered with the Spark master spark://m:7077 within 0s.*3g"):
        wait_for_executors(_FakeSession(_FakeContext([1])), "spark://m:7077", timeout=0.3)
    assert time.monotonic() - started < 2
    with pytest.raises(SparkUnavailableError, match="did not accept the application"):
        wait_for_executors(_FakeSession(_FakeContext([1], stopped=True)), "spark://m:7077", timeout=5)
