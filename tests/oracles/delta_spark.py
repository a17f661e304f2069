"""The delta-spark oracle (issue 31): delta-spark 4.4.0 on PySpark 4.2.0 in a side virtualenv.

``tools/delta_oracle.sh`` builds it into the cache (``make tools`` runs it). ``delta_spark``
(session-scoped fixture) starts one long-lived process, ``delta_spark_server.py``, and talks to it
over JSON lines; it is stopped by its pid at the end of the run. Without the oracle the tests that
need it are skipped with the reason -- unless ``VARLAKE_REQUIRE_ORACLES`` is set (CI sets it), then
they fail.

Values come back as JSON: Variant as ``{"$variant": json text}``, bytes as ``{"$bytes": hex}``,
decimals, dates and timestamps as tagged text (see the server's ``plain_value``); ``plain`` turns
varlake's Python values into the same form so answers compare directly.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from s3_server import CACHE, stop_process
from varlake import Variant

ROOT = Path(__file__).resolve().parents[2]
ORACLE = Path(os.environ.get("VARLAKE_DELTA_ORACLE", CACHE / "oracles" / "delta-spark"))
SERVER = Path(__file__).with_name("delta_spark_server.py")
START_TIMEOUT = 240.0


class OracleError(AssertionError):
    """delta-spark refused a request: its exception class and message."""

    def __init__(self, error: str, message: str, trace: str = "") -> None:
        super().__init__(f"delta-spark: {error}: {message}")
        self.error = error
        self.message = message
        self.trace = trace


def oracle_python() -> Path | None:
    python = ORACLE / "venv" / "bin" / "python"
    jars = ORACLE / "jars"
    if python.is_file() and jars.is_dir() and any(jars.glob("delta-spark_*.jar")):
        return python
    return None


def require_oracle() -> Path:
    python = oracle_python()
    if python is None:
        reason = f"the delta-spark oracle is not built (no {ORACLE}): run `make tools` or tools/delta_oracle.sh"
        if os.environ.get("VARLAKE_REQUIRE_ORACLES"):
            pytest.fail(f"VARLAKE_REQUIRE_ORACLES is set but {reason}")
        pytest.skip(reason)
    return python


@dataclass
class DeltaSpark:
    """A running delta-spark: ``sql`` and ``run`` send one request each and wait for its answer."""

    process: subprocess.Popen
    log: Path
    spark_version: str
    _lock: threading.Lock

    def _request(self, request: dict, timeout: float = 600.0) -> dict:
        with self._lock:
            if self.process.poll() is not None:
                raise RuntimeError(f"the delta-spark oracle exited ({self.process.returncode}); see {self.log}")
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the delta-spark oracle closed its output; see {self.log}")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise OracleError(answer.get("error", "?"), answer.get("message", ""), answer.get("trace", ""))
        return answer

    def sql(self, statement: str) -> list[dict]:
        """Run a statement; its rows as dicts of plain values (see the module's docstring)."""
        return self._request({"op": "sql", "sql": statement, "collect": True})["rows"]

    def execute(self, statement: str) -> None:
        """Run a statement whose rows are not needed."""
        self._request({"op": "sql", "sql": statement, "collect": False})

    def run(self, code: str):
        """Run Python in the oracle (``spark``, ``DeltaTable`` in scope); its ``result``."""
        return self._request({"op": "exec", "code": code})["result"]

    def rows(self, path: str | Path, columns: str = "*", order_by: str | None = None) -> list[dict]:
        """The table's rows as delta-spark reads them (Variant as JSON text)."""
        query = f"SELECT {columns} FROM delta.`{path}`"
        if order_by:
            query += f" ORDER BY {order_by}"
        return self.sql(query)


def plain(value):
    """A Python value as the oracle answers it: the two sides' rows then compare with ``==``.

    varlake's Variant values (``varlake.Variant``, or the ``{metadata, value}`` dict of a Variant
    column's Arrow form) become ``{"$variant": json}`` through their JSON text, as Spark's
    ``VariantVal.toJson`` writes it.
    """
    if isinstance(value, dict):
        if set(value) == {"metadata", "value"} and isinstance(value["value"], (bytes, bytearray)):
            return {"$variant": Variant(value["metadata"], value["value"]).to_json()}
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, Variant):
        return {"$variant": value.to_json()}
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": bytes(value).hex()}
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, datetime.datetime):
        return {"$timestamp": value.replace(tzinfo=None).isoformat()}
    if isinstance(value, datetime.date):
        return {"$date": value.isoformat()}
    if isinstance(value, float) and value != value:
        return {"$float": "NaN"}
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return {"$float": str(value)}
    return value


def s3a_jars() -> list[str]:
    """Hadoop's S3A connector (``tools/s3a.sh``: hadoop-aws and the AWS SDK, for the Hadoop
    3.5 that PySpark 4.2 and 4.3 both carry), so the oracle reaches ``s3a://`` tables; none
    when it is not fetched. Spark's own cloud-committer jar is left out: Delta needs none."""
    folder = CACHE / "jars" / "s3a"
    if not folder.is_dir():
        return []
    return sorted(str(p) for p in folder.glob("*.jar") if not p.name.startswith("spark-hadoop-cloud"))


def start(python: Path, settings: dict[str, str] | None = None) -> DeltaSpark:
    """Start the oracle process; ``settings`` are extra environment variables of the server
    (``DELTA_ORACLE_CONF``: Spark confs, one ``key=value`` a line; ``DELTA_ORACLE_MEMORY``)."""
    work = Path(tempfile.mkdtemp(prefix="varlake-delta-oracle-"))
    log = work / "oracle.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_", "PYTHONPATH"))}
    env["PYSPARK_PYTHON"] = str(python)
    env["DELTA_ORACLE_EXTRA_JARS"] = ",".join(s3a_jars())
    env.update(settings or {})
    with log.open("wb") as err:
        process = subprocess.Popen(
            [str(python), str(SERVER), str(ORACLE / "jars"), str(work / "warehouse")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
            cwd=work,
            start_new_session=True,
        )
    ready: list[str] = []
    reader = threading.Thread(target=lambda: ready.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    if not ready or not ready[0]:
        stop_process(process)
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        raise RuntimeError(f"the delta-spark oracle did not start in {START_TIMEOUT:.0f} s:\n{tail}")
    hello = json.loads(ready[0])
    return DeltaSpark(process, log, hello["spark"], threading.Lock())


def stop(oracle: DeltaSpark) -> None:
    """Let the server stop its SparkSession and exit; stopped by its pid if it does not."""
    try:
        oracle.process.stdin.close()
        oracle.process.wait(timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        pass
    stop_process(oracle.process)


@pytest.fixture(scope="session")
def delta_spark():
    """One delta-spark process for the whole test run, stopped by its pid at the end."""
    oracle = start(require_oracle())
    try:
        yield oracle
    finally:
        stop(oracle)
