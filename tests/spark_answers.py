"""Test helper: a query over a varlake table against Spark's over the same documents as unshredded Variants."""

from __future__ import annotations

import itertools
import json
from typing import Any

import varlake.spark as vs
from spark_errors import error_condition
from varlake.table import Table

_COUNTER = itertools.count()


def reference_view(spark: Any, docs: list[Any], prefix: str = "ref") -> str:
    """A temporary view ``(id, v)`` of ``docs`` as unshredded Variants (``parse_json``), ids
    0, 1, ...; decimals and dates as JSON strings (``str``)."""
    name = f"{prefix}_{next(_COUNTER)}"
    rows = [(i, None if d is None else json.dumps(d, default=str)) for i, d in enumerate(docs)]
    spark.createDataFrame(rows, "id bigint, j string").selectExpr("id", "parse_json(j) AS v").createOrReplaceTempView(name)
    return name


def outcome(fn: Any) -> tuple[str, Any]:
    """("rows", (the schema, the rows as JSON text computed by Spark, sorted: dates before
    year 1 have no Python value)) or ("error", Spark's error condition) of running ``fn()``."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    try:
        frame = fn()
        rows = frame.toDF(*[f"c{i}" for i in range(len(frame.columns))]).selectExpr("to_json(struct(*))").collect()
    except (PySparkException, Py4JJavaError) as exc:
        return "error", error_condition(exc)
    return "rows", (frame.schema.simpleString(), sorted(row[0] for row in rows))


def same_outcome(spark: Any, table: Any, ref: str, query: str) -> tuple[str, Any]:
    """``outcome`` of ``vs.sql`` over ``table`` (``{t}``), asserted equal to Spark's over ``ref``."""
    got = outcome(lambda: vs.sql(spark, query, t=table))
    expected = outcome(lambda: spark.sql(query.replace("{t}", ref)))
    assert got == expected, f"{query}\nvarlake: {got}\nspark:   {expected}"
    return got


def appended_table(root: Any, files: list[list[Any]]) -> Table:
    """A shredded table ``(id, v)`` with one ``Table.append`` per list of documents (ids
    numbered on, as ``reference_view`` numbers their concatenation): written by the one
    write path, so its files carry the layout tags (ISO dates proven)."""
    table = Table.create(root, "id bigint, v variant", properties={"delta.enableVariantShredding": "true"})
    first = 0
    for docs in files:
        table.append([{"id": first + j, "v": d} for j, d in enumerate(docs)])
        first += len(docs)
    return table
