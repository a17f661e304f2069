"""varlake on a real Spark standalone cluster (a master and two workers on loopback, each
executor its own JVM with its own Python workers), through the CLI with ``--master
spark://...`` and, against a Spark Connect server whose driver runs on that cluster, with
``--remote sc://...``: ingest JSON Lines -> query -> write a result (``--output``) -> append
-> describe give the answers local mode gives, and the applications' event logs
show every task ran on the workers' executors, Python-evaluating tasks included.

The test run's own SparkSession is a classic local one (one per process), so the cluster
flows run in a child process (``cluster.run_cli``), one driver for all the commands.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from cluster import QUICK_JVM, StandaloneCluster, app_conf, event_log_conf, read_event_logs, run_cli
from varlake.cli import app

pytestmark = pytest.mark.spark

QUERY_GROUPS = "SELECT kind, count(*) AS n, sum(doc:n::int) AS total FROM {t} GROUP BY kind ORDER BY kind"
QUERY_SEVENS = "SELECT kind, doc FROM {t} WHERE doc:n::int % 7 = 0"


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A master, two workers and a Spark Connect server on loopback, launched without
    waiting (they start while the local answers are computed); every JVM stops at the end."""
    cluster = StandaloneCluster(tmp_path_factory.mktemp("standalone"), python=sys.executable, workers=2, connect=True)
    try:
        yield cluster.launch()
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two JSON Lines files (one bad line each: two input partitions) and a third to append."""
    root = tmp_path_factory.mktemp("cluster-inputs")
    for part in (0, 1):
        lines = [json.dumps({"kind": f"k{i % 3}", "n": i, "tags": ["a", i]}) for i in range(part * 150, part * 150 + 150)]
        lines.insert(40, "{not json" if part == 0 else '{"n": 1, "n": 2}')
        (root / f"events{part}.jsonl").write_text("\n".join(lines) + "\n")
    (root / "more.jsonl").write_text("".join(json.dumps({"kind": "k9", "n": i}) + "\n" for i in range(1000, 1010)))
    return root


def _flow(inputs: Path, out: Path, spark_args: list[str]) -> list[list[str]]:
    """ingest (two files) -> query -> query --output parquet -> ingest (append) -> describe."""
    table = str(out / "t")
    extract = ["-c", "kind=$.kind::string"]
    return [
        ["ingest", str(inputs / "events0.jsonl"), str(inputs / "events1.jsonl"), table, *extract, "-f", "json", *spark_args],
        ["query", table, QUERY_GROUPS, "-f", "json", *spark_args],
        ["query", table, QUERY_SEVENS, "--output", str(out / "sevens.parquet"), *spark_args],
        ["ingest", str(inputs / "more.jsonl"), table, *extract, "-f", "json", *spark_args],
        ["describe", table, "-f", "json"],
    ]


def _answers(results: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    """The flow's answers without what names this run (paths, ids, timings)."""
    assert [r["exit_code"] for r in results] == [0] * 5, [(r["args"][0], r["stderr"][-500:]) for r in results]
    run_specific = {"table", "quarantine", "seconds", "lines_per_second", "ingest_id", "input_bytes"}
    ingests = [{k: v for k, v in json.loads(results[i]["stdout"]).items() if k not in run_specific} for i in (0, 3)]
    described = json.loads(results[4]["stdout"])
    described.pop("path")
    sevens = pq.read_table(out / "sevens.parquet").to_pylist()
    return {
        "ingests": ingests,
        "groups": json.loads(results[1]["stdout"]),
        "sevens": sorted(sevens, key=repr),
        "wrote": re.findall(r"wrote ([\d,]+) row", results[2]["stderr"]),
        "describe": described,
    }


@pytest.fixture(scope="module")
def local_answers(spark: Any, inputs: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same flow on the test run's local session: the answers a cluster must give."""
    out = tmp_path_factory.mktemp("cluster-local")
    runner = CliRunner()
    results = []
    for args in _flow(inputs, out, ["--master", "local[2]"]):
        r = runner.invoke(app, args, catch_exceptions=False)
        results.append({"args": args, "exit_code": r.exit_code, "stdout": r.stdout, "stderr": r.stderr})
    answers = _answers(results, out)
    assert answers["groups"] == [
        {"kind": "k0", "n": 100, "total": 14850},
        {"kind": "k1", "n": 100, "total": 14950},
        {"kind": "k2", "n": 100, "total": 15050},
    ]
    assert answers["ingests"][0]["quarantined"] == 2 and answers["wrote"] == ["43"]
    assert (answers["describe"]["version"], answers["describe"]["rows"]) == (2, 310)
    return answers


def _spark_args(flag: str, url: str, conf: dict[str, str]) -> list[str]:
    args = [flag, url]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    return args


def _check_ran_on_executors(events_dir: Path, standalone: StandaloneCluster) -> None:
    events = read_event_logs(events_dir)
    assert len(events.app_ids) == 1, events
    # Both workers launched an executor for the application, each a JVM of its own...
    assert sorted(events.executors) == ["0", "1"] and set(events.executors.values()) == {"127.0.0.1"}
    app_id = events.app_ids[0]
    launched = standalone.executor_dirs(app_id)
    assert sorted(p.name for p in launched) == ["0", "1"] and all((p / "stderr").is_file() for p in launched)
    # ... and those executors, never the driver, ran every task: both of them, including
    # tasks of plans evaluating varlake's Python (the ingest's quarantine reasons).
    assert events.tasks > 0 and events.failed_tasks == 0
    assert events.task_executors == {"0", "1"}
    assert events.python_task_executors and events.python_task_executors <= {"0", "1"}


def test_cli_on_standalone_master(standalone: StandaloneCluster, inputs: Path, local_answers: dict[str, Any],
                                  tmp_path: Path) -> None:
    events_dir = tmp_path / "events"
    conf = {**app_conf(), **event_log_conf(events_dir), "spark.sql.shuffle.partitions": "2", "spark.driver.extraJavaOptions": QUICK_JVM}
    standalone.wait()
    results = run_cli(_flow(inputs, tmp_path, _spark_args("--master", standalone.url, conf)), tmp_path / "run")
    assert _answers(results, tmp_path) == local_answers
    _check_ran_on_executors(events_dir, standalone)


def test_cli_on_spark_connect_server(standalone: StandaloneCluster, inputs: Path, local_answers: dict[str, Any],
                                     tmp_path: Path) -> None:
    standalone.wait()
    results = run_cli(_flow(inputs, tmp_path, _spark_args("--remote", standalone.connect_url, {})), tmp_path / "run")
    assert _answers(results, tmp_path) == local_answers
    _check_ran_on_executors(standalone.connect_events, standalone)


# One driver on the cluster, in a child process (this process runs a local session), with
# the table only in S3: neither the driver's nor the executors' directories hold any of it.
_S3_FLOW = """
import json, sys
from varlake import spark as vs
from varlake.spark.session.endpoints import wait_for_executors
from varlake.table import Table

cfg = json.load(open(sys.argv[1]))
uri, opts = cfg["uri"], cfg["options"]
spark = vs.local_session(cfg["master"], cfg["conf"], storage_options=opts)
wait_for_executors(spark, cfg["master"], 120)
df = spark.range(0, 200, numPartitions=4).selectExpr("id", "CAST(id % 5 AS STRING) AS k")
written = vs.write(df, uri, storage_options=opts)
groups = vs.sql(spark, "SELECT k, count(*) AS n FROM {t} GROUP BY k ORDER BY k", t="s3a://" + uri[len("s3://"):],
                storage_options=opts).collect()
deleted = vs.delete(spark, uri, "id < 50", storage_options=opts)
table = Table(uri, storage_options=opts)
json.dump({
    "files": written.num_files,
    "groups": [[r["k"], r["n"]] for r in groups],
    "deleted": deleted.num_affected_rows,
    "rows": table.scan().to_arrow().num_rows,
    "committer": spark.conf.get("spark.sql.sources.commitProtocolClass"),
}, open(sys.argv[2], "w"))
spark.stop()
"""


def test_spark_on_standalone_master_with_table_in_s3(standalone: StandaloneCluster, s3_server, tmp_path: Path) -> None:
    import os
    import subprocess

    from varlake.spark.session.object_store import S3AConnectorMissingError, s3a_jars

    try:
        s3a_jars()
    except S3AConnectorMissingError as exc:
        pytest.skip(str(exc))
    events_dir, driver_dir = tmp_path / "events", tmp_path / "driver"
    driver_dir.mkdir()
    uri = s3_server.uri("cluster")
    conf = {**app_conf(), **event_log_conf(events_dir), "spark.sql.shuffle.partitions": "2",
            "spark.driver.extraJavaOptions": QUICK_JVM, "spark.pyspark.python": sys.executable}
    spec, answer = driver_dir / "spec.json", driver_dir / "answer.json"
    spec.write_text(json.dumps({"uri": uri, "options": s3_server.options(), "master": standalone.url, "conf": conf}))
    standalone.wait()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_", "AWS_"))}
    done = subprocess.run([sys.executable, "-c", _S3_FLOW, str(spec), str(answer)], cwd=driver_dir, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(answer.read_text())
    assert got["groups"] == [[str(k), 40] for k in range(5)]
    assert (got["deleted"], got["rows"]) == (50, 150)
    assert got["committer"] == "org.apache.spark.internal.io.cloud.PathOutputCommitProtocol"
    bucket, _, prefix = uri[len("s3://"):].partition("/")
    keys = [o.object_name for o in s3_server.client().list_objects(bucket, prefix=prefix + "/", recursive=True)]
    assert keys and not any("_temporary" in k or "__magic" in k or k.endswith(".pending") for k in keys), keys
    # Nothing of the table on any local disk: not beside the driver, not in the executors' work dirs.
    local = [p for p in [*driver_dir.rglob("*.parquet"), *standalone.root.rglob("*.parquet")]]
    assert local == []
    events = read_event_logs(events_dir)
    assert events.tasks > 0 and events.failed_tasks == 0 and events.task_executors <= {"0", "1"} and events.task_executors
