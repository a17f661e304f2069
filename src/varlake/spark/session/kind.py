"""Which kind of SparkSession a caller holds: classic (JVM, Py4J) or Spark Connect."""

from __future__ import annotations

from typing import Any

__all__ = ["is_classic"]


def is_classic(spark: Any) -> bool:
    """True for a classic (JVM, Py4J) SparkSession; False for a Spark Connect one.

    The one capability check: classic-only shortcuts (``_jvm``, ``sparkContext``) sit
    behind it, each with an equivalent path that works on Connect.
    """
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return False
    try:
        return spark._jsparkSession is not None
    except Exception:  # Connect sessions raise on JVM attributes  # noqa: BLE001
        return False
