"""Shared fixtures. One SparkSession serves the whole test run (it is slow to start)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# The MinIO server of the object-storage tests (session-scoped; skipped without the binary).
from s3_server import s3_server  # noqa: F401
# The Azurite (Azure Blob) server of the Azure tests (session-scoped, like MinIO).
from azure_server import azure_server  # noqa: F401
# The delta-spark oracle of issue 31 (session-scoped; one long-lived process per run).
from oracles.delta_spark import delta_spark  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
TESTDATA = SHARED / "testdata"


@pytest.fixture(scope="session")
def testdata() -> Path:
    """``../shared/testdata``: files other implementations wrote."""
    if not TESTDATA.is_dir():
        pytest.fail(f"shared test data not found at {TESTDATA}")
    return TESTDATA


@pytest.fixture(scope="session")
def golden_tables(testdata: Path) -> Path:
    """Delta's golden tables (``../shared/testdata/delta/golden``): missing data fails, never skips."""
    golden = testdata / "delta" / "golden"
    if not golden.is_dir():
        pytest.fail(f"Delta's golden tables not found at {golden}")
    return golden


def _s3a_static_conf() -> dict[str, str]:
    """The S3A connector's static confs (jars, ``s3://`` = S3A, the magic committer) for the
    shared session, when MinIO and the connector are both there (the object-store Spark
    tests then run on this one session; ``s3_spark`` adds the server's endpoint and keys)."""
    from s3_server import minio_binary

    from varlake.spark.session.object_store import S3AConnectorMissingError, s3a_conf

    if minio_binary() is None:
        return {}
    try:
        conf = s3a_conf({}, env={})
    except S3AConnectorMissingError:
        return {}
    return {k: v for k, v in conf.items() if "fs.s3a.endpoint" not in k and "access.key" not in k}


@pytest.fixture(scope="session")
def s3_spark(spark, s3_server):
    """The shared session reaching the test MinIO through S3A (its endpoint and keys set on the
    running session's Hadoop configuration, as ``object_store.s3a_conf`` would at start)."""
    from varlake.io.store_settings import StoreSettings
    from varlake.spark.session.object_store import S3AConnectorMissingError, s3a_jars

    try:
        s3a_jars()
    except S3AConnectorMissingError as exc:
        if os.environ.get("VARLAKE_REQUIRE_S3"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in StoreSettings("s3", s3_server.options(), {}).s3a_properties().items():
        hadoop.set(key, value)
    return spark


@pytest.fixture(scope="session")
def spark():
    """A local SparkSession shared by every test (UTC, small shuffles, no UI)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("varlake-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.ansi.enabled", "true")
        # Where ``connect_spark`` serves Spark Connect from this JVM: an ephemeral loopback port.
        .config("spark.connect.grpc.binding.address", "127.0.0.1")
        .config("spark.connect.grpc.binding.port", "0")
    )
    for key, value in _s3a_static_conf().items():
        session = session.config(key, value)
    session = session.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def _connect_session(spark):
    """A Spark Connect session served by the test run's own JVM (no second JVM to start).

    Spark's Connect service runs on the classic session's SparkContext, on an ephemeral
    loopback port; the client talks to it over gRPC like to any remote server.
    """
    from varlake.spark.session.local import connect_session

    service = spark._jvm.org.apache.spark.sql.connect.service
    service.SparkConnectService.start(spark.sparkContext._jsc.sc())
    port = getattr(getattr(service, "SparkConnectService$"), "MODULE$").localPort()
    session = connect_session(f"sc://127.0.0.1:{port}", {"spark.sql.ansi.enabled": "true"})
    yield session
    session.stop()
    service.SparkConnectService.stop(
        spark._jvm.scala.Option.empty(), spark._jvm.scala.Option.empty()
    )


@pytest.fixture
def connect_spark(_connect_session, monkeypatch):
    """The Connect session, with ``pyspark.sql.functions`` in Connect mode for the test.

    PySpark picks classic or Connect Columns per process (``SPARK_CONNECT_MODE_ENABLED``);
    this run also holds a classic session, so the switch is on only during the test.
    """
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    return _connect_session


@pytest.fixture(params=["classic", "connect"])
def any_spark(request):
    """The classic session, then the Connect one: the same test and answers on both."""
    if request.param == "classic":
        return request.getfixturevalue("spark")
    return request.getfixturevalue("connect_spark")
