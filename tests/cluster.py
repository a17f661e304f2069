"""A Spark standalone cluster (a master and workers) and a Spark Connect server on loopback,
started from the PySpark installation for tests that need executors in other JVMs.

Every process starts in its own process group, so ``stop`` ends it together with what it
started (the workers' executor JVMs and their Python workers): no JVM outlives the test run,
even when a test fails or the run is interrupted (an ``atexit`` hook stops whatever is still
running, and on Linux each launcher dies with the test process).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
LOOPBACK = "127.0.0.1"

# Kept small: the machine running the tests is shared. Each application takes APP_CORES
# one-core executors (``app_conf``), so two applications fit on the workers at once.
WORKER_CORES = 2
WORKER_MEMORY = "2g"
EXECUTOR_MEMORY = "512m"
DAEMON_MEMORY = "256m"
APP_CORES = 2
# Short jobs: the JVMs' JIT compiler stays at its quick first tier, one GC thread.
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

_LOG4J2 = """\
rootLogger.level = info
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex
"""

# Read by the master and workers (and any spark-submit with this conf dir): no REST
# submission server on its fixed port 6066.
_DEFAULTS = "spark.master.rest.enabled false\n"

_running: list[subprocess.Popen[bytes]] = []


class ClusterError(RuntimeError):
    """A cluster process failed to start or to come up in time (names the process and its log)."""


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


if sys.platform.startswith("linux"):
    import ctypes

    _prctl = ctypes.CDLL(None, use_errno=True).prctl
else:  # pragma: no cover
    _prctl = None
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """A new process group; on Linux, SIGTERM when the test process dies."""
    os.setsid()
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _stop(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM the process group (the JVM's shutdown hooks stop its executors), then SIGKILL."""
    if proc in _running:
        _running.remove(proc)
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # The launcher is gone; anything it started is in the same group.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        break


@atexit.register
def _stop_all() -> None:
    for proc in list(reversed(_running)):
        _stop(proc, grace=3.0)


def spark_env(python: str, conf_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a cluster process: loopback only, small daemons, ``python`` for PySpark."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_CONF_DIR=str(conf_dir),
        SPARK_LOCAL_IP=LOOPBACK,
        SPARK_LOCAL_HOSTNAME="localhost",
        SPARK_DAEMON_MEMORY=DAEMON_MEMORY,
        PYSPARK_PYTHON=python,
        PYSPARK_DRIVER_PYTHON=python,
    )
    env.update(extra or {})
    return env


@dataclass
class Process:
    """One launched cluster process and where its output goes."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise ClusterError(f"{self.name} exited with code {self.proc.returncode}; log {self.log}:\n{self.tail()}")


def launch(name: str, argv: Sequence[str], env: Mapping[str, str], log: Path) -> Process:
    """Start ``argv`` in a new process group, output to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as sink:
        proc = subprocess.Popen(
            list(argv), env=dict(env), stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent, cwd=str(log.parent),
        )
    _running.append(proc)
    return Process(name, proc, log)


def _get_json(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return json.load(response)
    except (OSError, ValueError):
        return None


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        return s.connect_ex((LOOPBACK, port)) == 0


def app_conf() -> dict[str, str]:
    """Confs for an application on a ``StandaloneCluster``: two one-core executors, which the
    master spreads over the two workers, so two applications (the CLI's driver and a Connect
    server) run side by side, each with an executor on every worker."""
    return {
        "spark.cores.max": str(APP_CORES),
        "spark.executor.cores": "1",
        "spark.executor.memory": EXECUTOR_MEMORY,
        "spark.executor.extraJavaOptions": QUICK_JVM,
    }


@dataclass
class StandaloneCluster:
    """A standalone master and ``workers`` workers on loopback (``url``: ``spark://127.0.0.1:<port>``),
    optionally with a Spark Connect server whose driver runs on the cluster (``connect_url``).

    ``launch`` starts the processes and returns at once (JVMs start slowly: let them start
    while other work goes on); ``wait`` returns once the workers are registered and the
    Connect server listens; ``stop`` ends them all."""

    root: Path
    python: str = sys.executable
    workers: int = 2
    connect: bool = False
    port: int = 0
    webui_port: int = 0
    connect_port: int = 0
    processes: list[Process] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://{LOOPBACK}:{self.port}"

    @property
    def connect_url(self) -> str:
        if not self.connect:
            raise ClusterError("this cluster runs no Spark Connect server (connect=False)")
        return f"sc://{LOOPBACK}:{self.connect_port}"

    @property
    def conf_dir(self) -> Path:
        return self.root / "conf"

    @property
    def connect_events(self) -> Path:
        """Where the Connect server's application writes its event log."""
        return self.root / "connect-events"

    def launch(self) -> "StandaloneCluster":
        """Start the master, the workers and (``connect``) the Connect server; do not wait."""
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "log4j2.properties").write_text(_LOG4J2)
        (self.conf_dir / "spark-defaults.conf").write_text(_DEFAULTS)
        env = spark_env(self.python, self.conf_dir, {"SPARK_DAEMON_JAVA_OPTS": QUICK_JVM})
        spark_class = str(SPARK_HOME / "bin" / "spark-class")
        self.port, self.webui_port = free_port(), free_port()
        self.processes.append(launch(
            "master",
            [spark_class, "org.apache.spark.deploy.master.Master",
             "--host", LOOPBACK, "--port", str(self.port), "--webui-port", str(self.webui_port)],
            env, self.root / "logs" / "master.log",
        ))
        # Workers retry registering until the master is up, so they start at once.
        for i in range(self.workers):
            work_dir = self.root / f"worker-{i}"
            work_dir.mkdir(parents=True, exist_ok=True)
            self.processes.append(launch(
                f"worker-{i}",
                [spark_class, "org.apache.spark.deploy.worker.Worker", self.url,
                 "--host", LOOPBACK, "--webui-port", "0",
                 "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY, "--work-dir", str(work_dir)],
                env, self.root / "logs" / f"worker-{i}.log",
            ))
        if self.connect:
            self._launch_connect_server()
        return self

    def _launch_connect_server(self) -> None:
        self.connect_port = free_port()
        conf = {
            **app_conf(),
            **event_log_conf(self.connect_events),
            "spark.connect.grpc.binding.address": LOOPBACK,
            "spark.connect.grpc.binding.port": str(self.connect_port),
            "spark.ui.enabled": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.shuffle.partitions": "2",
            "spark.pyspark.python": self.python,
            "spark.pyspark.driver.python": self.python,
            "spark.driver.extraJavaOptions": QUICK_JVM,
        }
        submit = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", self.url,
                  "--class", "org.apache.spark.sql.connect.service.SparkConnectServer", "--name", "varlake-connect"]
        for key, value in conf.items():
            submit += ["--conf", f"{key}={value}"]
        # The server's driver registers its application once, then retries only every 20 s:
        # start it when the master listens (bash waits, then becomes spark-submit).
        wait_then_run = f'until (exec 3<>/dev/tcp/{LOOPBACK}/{self.port}) 2>/dev/null; do sleep 0.2; done; exec "$@"'
        # spark-submit sizes a Connect server's driver by SPARK_DAEMON_MEMORY, not spark.driver.memory.
        env = spark_env(self.python, self.conf_dir, {"SPARK_CONNECT_MODE": "0", "SPARK_DAEMON_MEMORY": "1g"})
        self.processes.append(launch(
            "connect-server", ["bash", "-c", wait_then_run, "wait-for-master", *submit],
            env, self.root / "logs" / "connect-server.log",
        ))

    def start(self, timeout: float = 120.0) -> "StandaloneCluster":
        """``launch`` then ``wait``."""
        return self.launch().wait(timeout)

    def state(self) -> dict | None:
        """The master's JSON status (``aliveworkers``, ``workers``, ``activeapps``, ``completedapps``)."""
        return _get_json(f"http://{LOOPBACK}:{self.webui_port}/json/")

    def wait(self, timeout: float = 120.0) -> "StandaloneCluster":
        """Return once every worker is registered and alive (and the Connect server listens);
        ``ClusterError`` with the processes' last log lines if one died or time ran out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p in self.processes:
                p.check_alive()
            state = self.state()
            workers_up = state is not None and state.get("aliveworkers", 0) >= self.workers
            if workers_up and (not self.connect or _listening(self.connect_port)):
                return self
            time.sleep(0.5)
        logs = "\n".join(f"--- {p.name} ({p.log})\n{p.tail(8)}" for p in self.processes)
        raise ClusterError(f"cluster {self.url} not up within {timeout:.0f}s\n{logs}")

    def executor_dirs(self, app_id: str) -> list[Path]:
        """The work directories (``worker-N/<app_id>/<executor id>``) of the executors the
        workers launched for application ``app_id``."""
        return sorted(p for i in range(self.workers) for p in (self.root / f"worker-{i}" / app_id).glob("*") if p.is_dir())

    def stop(self) -> None:
        """Stop every process of the cluster, newest first (the Connect server, the workers
        with their executors, the master)."""
        for p in reversed(self.processes):
            _stop(p.proc)
        self.processes.clear()


# Physical plan operators that run Python code in Python workers beside each executor.
_PYTHON_OPERATORS = re.compile(r"EvalPython|InPandas|InArrow|PythonUDTF|PythonDataSource")


@dataclass
class AppEvents:
    """What a Spark application's event log says about where its work ran."""

    app_ids: list[str] = field(default_factory=list)
    executors: dict[str, str] = field(default_factory=dict)  # executor id -> host
    task_executors: set[str] = field(default_factory=set)  # executor ids that ran a task
    python_task_executors: set[str] = field(default_factory=set)  # ... a task of a plan running Python
    tasks: int = 0
    failed_tasks: int = 0


def read_event_logs(directory: Path) -> AppEvents:
    """Parse every (uncompressed) event log in ``directory``: the executors each application
    got, and which executors ran its tasks, in particular tasks of SQL plans evaluating Python."""
    out = AppEvents()
    for path in sorted(p for p in directory.iterdir() if p.is_file()):
        python_executions: set[str] = set()
        stage_execution: dict[int, str] = {}
        for line in path.read_text(errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:  # the last line of a log still being written
                continue
            kind = event.get("Event", "")
            if kind == "SparkListenerApplicationStart":
                out.app_ids.append(event.get("App ID", ""))
            elif kind == "SparkListenerExecutorAdded":
                out.executors[str(event["Executor ID"])] = event["Executor Info"]["Host"]
            elif kind.endswith(("SparkListenerSQLExecutionStart", "SparkListenerSQLAdaptiveExecutionUpdate")):
                if _PYTHON_OPERATORS.search(event.get("physicalPlanDescription") or ""):
                    python_executions.add(str(event["executionId"]))
            elif kind == "SparkListenerJobStart":
                execution = str((event.get("Properties") or {}).get("spark.sql.execution.id"))
                for stage in event.get("Stage IDs", []):
                    stage_execution[stage] = execution
            elif kind == "SparkListenerTaskEnd":
                executor = str(event["Task Info"]["Executor ID"])
                out.tasks += 1
                out.failed_tasks += event["Task Info"].get("Failed", False)
                out.task_executors.add(executor)
                if stage_execution.get(event["Stage ID"]) in python_executions:
                    out.python_task_executors.add(executor)
    return out


# One Python process runs a list of ``varlake`` commands with typer's runner: they share one
# driver (and so one set of executors), as commands in one notebook would, instead of paying
# a driver and executor start per command.
_CLI_RUNNER = """
import json, sys
from typer.testing import CliRunner
from varlake.cli import app

commands = json.load(open(sys.argv[1]))
runner = CliRunner()
results = []
for args in commands:
    r = runner.invoke(app, args, catch_exceptions=False)
    results.append({"args": args, "exit_code": r.exit_code, "stdout": r.stdout, "stderr": r.stderr})
    if r.exit_code != 0:
        break
json.dump(results, open(sys.argv[2], "w"))
try:  # end the application cleanly: its event log is complete and closed
    from pyspark.sql import SparkSession
    session = SparkSession.getActiveSession()
    if session is not None:
        session.stop()
except Exception:
    pass
"""


def run_cli(commands: Sequence[Sequence[str]], workdir: Path, python: str = sys.executable,
            timeout: float = 300.0) -> list[dict]:
    """Run ``varlake`` ``commands`` in order in one fresh Python process (stopping at the first
    that fails); returns each one's ``args``, ``exit_code``, ``stdout`` and ``stderr``."""
    workdir.mkdir(parents=True, exist_ok=True)
    spec, answers, log = workdir / "commands.json", workdir / "results.json", workdir / "cli.log"
    spec.write_text(json.dumps([[str(a) for a in c] for c in commands]))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(PYSPARK_PYTHON=python, VARLAKE_SPARK_LOG=str(workdir / "spark.log"))
    with open(log, "wb") as sink:
        proc = subprocess.Popen([python, "-c", _CLI_RUNNER, str(spec), str(answers)], env=env, cwd=str(workdir),
                                stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                preexec_fn=_die_with_parent)
        _running.append(proc)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            _stop(proc, grace=5.0)
    if code != 0 or not answers.exists():
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise ClusterError(f"the varlake CLI process {'timed out' if code is None else f'exited with {code}'}; log {log}:\n{tail}")
    return json.loads(answers.read_text())


def event_log_conf(directory: Path) -> dict[str, str]:
    """Spark confs that record every event of an application as plain JSON lines in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    return {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": directory.as_uri(),
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
    }
