"""Shared fixtures. One SparkSession serves the whole test run (it is slow to start)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
