"""Test helper: a Parquet file shredded by Spark itself, for tables that mix writers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from varlake.spark.session.local import spark_conf


def spark_shredded_file(spark: Any, target: Path, rows: list[tuple[int, str | None]], layout: str) -> None:
    """Write ``(id, JSON text)`` rows as one Parquet file at ``target`` with Spark's own
    shredding writer forced to ``layout`` (columns ``id bigint, v variant``)."""
    staging = target.parent / f"_staging_{target.name}"
    conf = {
        "spark.sql.variant.writeShredding.enabled": "true",
        "spark.sql.variant.inferShreddingSchema": "false",
        "spark.sql.variant.forceShreddingSchemaForTest": layout,
    }
    with spark_conf(spark, conf):
        spark.createDataFrame(rows, "id bigint, j string").selectExpr("id", "parse_json(j) AS v").coalesce(1).write.parquet(str(staging))
    (part,) = staging.glob("*.parquet")
    part.rename(target)
