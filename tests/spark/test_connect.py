"""varlake.spark on Spark Connect: the session helpers, and the pieces built without a JVM.

The entry points themselves (``read``, ``sql``, ``explain``, ``write``, ``ingest_json``) run
on both sessions in their own test files (the ``any_spark`` fixture); here are the parts
that only exist because of Connect: ``is_classic``, ``connect_session``, Spark's shredded
write schema built in Python (checked against Spark's JVM utility for many DDLs), the
statistics job, progress.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import varlake.spark as vs
from varlake.errors import ShreddingSchemaError
from varlake.spark.session.local import is_classic, track_progress
from varlake.spark.types import shredded_struct_json
from varlake.table import Table

pytestmark = pytest.mark.spark

DDLS = [
    "a bigint",
    "bigint",
    "string",
    "array<bigint>",
    "variant",
    "a variant, b array<variant>",
    "a int, b string, c struct<d: bigint, `e f`: array<decimal(10,2)>>",
    "x array<struct<y: timestamp>>",
    "z timestamp_ntz, w date, q binary, r boolean, s float, t double, u tinyint, v smallint",
    "struct<a: decimal(38,18), b: array<array<string>>>",
    "`a.b` long, `c``d` integer, E BYTE, f short, g real, h dec(5), i numeric(7, 3)",
    "deep struct<l1: struct<l2: struct<l3: array<struct<l4: boolean>>>>>",
    "decimal(4,0)",
    "array<struct<a: int, b: variant>>",
    "array<variant>",
    "s struct<v: variant, w: array<variant>>",
]


@pytest.mark.parametrize("ddl", DDLS)
def test_shredded_struct_json_is_what_spark_builds(spark: Any, ddl: str) -> None:
    """The shredded write schema varlake builds in Python equals Spark's own
    (``SparkShreddingUtils.variantShreddingSchema`` + ``addWriteShreddingMetadata``)."""
    jvm = spark._jvm
    utils = jvm.org.apache.spark.sql.execution.datasources.parquet.SparkShreddingUtils
    struct = utils.variantShreddingSchema(jvm.org.apache.spark.sql.types.DataType.fromDDL(ddl), True, False)
    assert shredded_struct_json(ddl) == json.loads(utils.addWriteShreddingMetadata(struct).json())


@pytest.mark.parametrize("ddl", ["m map<string, int>", "t time", "a char(3)", "a bigint,", ""])
def test_unshreddable_ddl_is_a_named_error(ddl: str) -> None:
    with pytest.raises(ShreddingSchemaError, match="DDL"):
        shredded_struct_json(ddl)


def test_is_classic_tells_the_sessions_apart(spark: Any, connect_spark: Any) -> None:
    assert is_classic(spark)
    assert not is_classic(connect_spark)


def test_connect_session_sets_varlake_defaults(connect_spark: Any) -> None:
    assert connect_spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert connect_spark.range(3).count() == 3


def test_track_progress_on_connect_reports_or_stays_quiet(connect_spark: Any) -> None:
    seen: list[Any] = []
    with track_progress(connect_spark, seen.append, interval=0.0):
        assert connect_spark.range(0, 200000, 1, 4).selectExpr("sum(id)").collect()[0][0] == sum(range(200000))
    for update in seen:  # a server may send no progress at all; what it sends is well formed
        assert all(0 <= s.done <= s.total for s in update)


def _rows(path: Path) -> list[tuple[Any, ...]]:
    from varlake import Variant

    rows = Table(path).scan().to_arrow().to_pylist()
    return sorted((r["id"], Variant(r["v"]["metadata"], r["v"]["value"]).to_json()) for r in rows)


def test_row_level_changes_give_the_same_answers_on_both_sessions(spark: Any, connect_spark: Any, tmp_path: Path) -> None:
    """DELETE, UPDATE, MERGE and SQL DELETE on a Connect session: the counts and rows a
    classic session gives for the same changes."""
    import os

    source = "SELECT id, parse_json(format_string('{\"a\": %d}', id)) AS v FROM range(0, 60, 1, 2)"
    merged = "SELECT id, parse_json('{\"a\": 7}') AS v FROM range(55, 65)"
    outcomes = {}
    for name, session in (("classic", spark), ("connect", connect_spark)):
        if name == "classic":  # the fixture switched functions to Connect for this test
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        else:
            os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
        path = tmp_path / name
        vs.write(session.sql(source), path)
        counts = [
            vs.delete(session, path, "v:a::int < 10").num_deleted_rows,
            vs.update(session, path, {"v": "parse_json('{\"a\": -1}')"}, "id >= 50").num_updated_rows,
            vs.merge(session, path, session.sql(merged), "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute().num_inserted_rows,
            vs.sql(session, "DELETE FROM {t} WHERE id = 30", t=path).collect()[0][0],
        ]
        outcomes[name] = (counts, _rows(path))
    assert outcomes["connect"] == outcomes["classic"]
    assert outcomes["classic"][0] == [10, 10, 5, 1]


def test_executed_scans_needs_a_classic_session(connect_spark: Any) -> None:
    from varlake.errors import TableError
    from varlake.spark.reading.explain import executed_scans

    with pytest.raises(TableError, match="classic"):
        executed_scans(connect_spark.range(3))
