"""varlake.spark.sql answers exactly what Spark answers over the same files, for random tables.

Hypothesis draws rows (per path: ints of two sizes, strings, decimals, booleans, JSON
nulls, arrays, nested objects, missing fields, mixed types), a random physical layout per
file (unshredded, fully or partly shredded, shredded with types that do not fit the
data, written by varlake's ``write_parquet`` or by Spark itself), an optional partition
column, and random queries (projections, filters, aggregates, self joins, IS NULL, the
``variant_get`` / ``try_variant_get`` / ``CAST`` / ``::`` forms, primitive and struct/array
targets, casts that fail). The reference is Spark's own query over ``spark.read.parquet``
of all the table's files with the table schema (Variant as VARIANT); both must return
the same rows, or both fail with the same error condition.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import varlake.spark as vs
from spark_errors import error_condition
from varlake.delta.actions import AddFile
from varlake.delta.schema import StructType
from varlake.io.parquet_write import write_parquet
from varlake.spark.reading.planner import is_nested
from varlake.spark.session.local import spark_conf
from varlake.table import Table, to_arrow_table

pytestmark = pytest.mark.spark

LAYOUTS = [
    None,
    "a bigint, b string, c struct<d: bigint>, arr array<bigint>",
    "a int, b string",
    "a string, c struct<d: string>",
    "a decimal(12,2), b string, c struct<d: bigint>",
    "b string",
    "a bigint, c struct<d: int>, arr array<string>",
    "a smallint, b boolean",
]

SMALL = st.integers(-300, 300)
BIG = st.integers(-(2**40), 2**40)
TEXT = st.sampled_from(["s0", "s1", "s2", "x y", "10", "", "-7"])
DECIMAL = st.builds(lambda n: Decimal(n).scaleb(-2), st.integers(-99999, 99999))
KINDS = {
    "small": SMALL,
    "big": BIG,
    "text": TEXT,
    "decimal": DECIMAL,
    "bool": st.booleans(),
    "null": st.none(),
    "array": st.lists(SMALL, max_size=3),
    "object": st.fixed_dictionaries({"d": SMALL}),
}


@st.composite
def path_kinds(draw: Any, main: list[str]) -> list[str]:
    """The kinds of value one path holds: usually one, sometimes two."""
    first = draw(st.sampled_from(main))
    if draw(st.integers(0, 3)) == 0:
        return sorted({first, draw(st.sampled_from(main))})
    return [first]


@st.composite
def tables(draw: Any) -> dict[str, Any]:
    kinds = {
        "a": draw(path_kinds(["small", "small", "big", "text", "decimal", "null"])),
        "b": draw(path_kinds(["text", "text", "bool", "null"])),
        "c": draw(path_kinds(["object", "object", "object", "small"])),
        "arr": draw(path_kinds(["array", "array", "array", "text"])),
    }
    values = {key: st.one_of([KINDS[k] for k in ks]) for key, ks in kinds.items()}
    missing = draw(st.sampled_from([0.0, 0.1, 0.4]))
    partitioned = draw(st.booleans())
    nested = draw(st.booleans())  # a second Variant, held in struct s
    files = []
    row_id = 0
    for _ in range(draw(st.integers(1, 4))):
        rows = []
        for _ in range(draw(st.integers(0, 12))):
            row: dict[str, Any] = {"id": row_id, "v": draw(documents(values, missing))}
            if nested:
                held = draw(st.sampled_from(["doc", "doc", "doc", "struct null", "variant null"]))
                row["s"] = None if held == "struct null" else {"n": row_id, "v": "SQLNULL" if held == "variant null" else draw(documents(values, missing))}
            rows.append(row)
            row_id += 1
        layouts = LAYOUTS + [_fitting_layout(kinds)] * 8
        files.append({
            "rows": rows,
            "layout": draw(st.sampled_from(layouts)),
            "nested_layout": draw(st.sampled_from(layouts)) if nested else None,
            "spark": not nested and draw(st.integers(0, 3)) == 0,
            "part": draw(st.integers(0, 1)) if partitioned else None,
        })
    return {"files": files, "partitioned": partitioned, "nested": nested, "kinds": kinds}


@st.composite
def documents(draw: Any, values: dict[str, Any], missing: float) -> Any:
    """One event: mostly an object of the paths (each maybe missing), sometimes null or a scalar."""
    doc: dict[str, Any] = {}
    for key, strategy in values.items():
        if draw(st.floats(0, 1)) >= missing:
            doc[key] = draw(strategy)
    whole = draw(st.sampled_from(["object"] * 12 + ["null", "sqlnull", "scalar"]))
    return doc if whole == "object" else {"null": None, "sqlnull": "SQLNULL", "scalar": draw(SMALL)}[whole]


FITTING = {"small": "bigint", "big": "bigint", "text": "string", "decimal": "decimal(12,2)", "bool": "boolean",
           "object": "struct<d: bigint>", "array": "array<bigint>"}


def _fitting_layout(kinds: dict[str, list[str]]) -> str | None:
    """A shredding schema whose leaves fit the data of every single-kind path."""
    fields = [f"{key} {FITTING[ks[0]]}" for key, ks in kinds.items() if len(ks) == 1 and ks[0] in FITTING]
    return ", ".join(fields) or None


TARGETS = ["bigint", "int", "string", "decimal(12,2)", "boolean", "smallint", "double", "decimal(25,2)"]
#: the target that fits each kind of value (so that shredded leaves often serve the query)
NATURAL = {"small": "bigint", "big": "bigint", "text": "string", "decimal": "decimal(12,2)", "bool": "boolean",
           "null": "string", "object": "bigint", "array": "bigint"}
PATHS = {"a": "a", "b": "b", "c": "c.d", "arr": "arr[0]"}


#: struct and array targets (read as Parquet structs where the subtree is perfectly shredded)
NESTED_USES = [
    ("c", "struct<d: bigint>"), ("c", "struct<d: decimal(25,2), e: string>"), ("c", "struct<e: string>"),
    ("c", "struct<D: bigint>"), ("arr", "array<bigint>"), ("arr", "array<int>"), ("arr", "array<string>"),
]


@st.composite
def uses(draw: Any, kinds: dict[str, list[str]]) -> tuple[str, str]:
    if draw(st.integers(0, 5)) == 0:
        return draw(st.sampled_from(NESTED_USES))
    key = draw(st.sampled_from(sorted(PATHS)))
    path = PATHS[key] if draw(st.integers(0, 7)) else draw(st.sampled_from(["arr[1]", "c", "a.x", "arr"]))
    natural = NATURAL[kinds[key][0]]
    return path, natural if draw(st.integers(0, 4)) else draw(st.sampled_from(TARGETS))


@st.composite
def queries(draw: Any, spec: dict[str, Any]) -> str:
    path, target = draw(uses(spec["kinds"]))
    other, other_target = (path, target) if draw(st.booleans()) else draw(uses(spec["kinds"]))
    number = draw(st.integers(-50, 50))
    column = "s.v" if spec["nested"] and draw(st.booleans()) else "v"
    form = draw(st.integers(0, 5))
    filter_kind = draw(st.integers(0, 10 if spec["partitioned"] else 9))
    kind = draw(st.sampled_from(["project", "project", "aggregate", "aggregate", "join", "star"]))

    def parts(q: str) -> tuple[str, str, str]:
        """The cast expression, a try_ expression and a filter, on table alias ``q`` (or none)."""
        v, i = f"{q}{column}", f"{q}id"
        expr = [
            f"{v}:{path}::{target}", f"CAST({v}:{path} AS {target})", f"TRY_CAST({v}:{path} AS {target})",
            f"variant_get({v}, '$.{path}', '{target}')", f"try_variant_get({v}, '$.{path}', '{target}')",
            f"CAST(variant_get({v}, '$.{path}') AS {target})",
        ][form]
        safe = f"try_variant_get({v}, '$.{other}', '{other_target}')"
        filters = [
            f"{v}:{path}::bigint > {number}",
            f"{v}:{path}::{target} IS NOT NULL AND {v}:{path}::bigint BETWEEN {number} AND {number + 40}",
            f"try_variant_get({v}, '$.{path}', 'string') = 's1'",
            f"{v}:{path} IS NULL",
            f"{v}:{path} IS NOT NULL",
            f"{safe} IS NULL",
            f"{expr} IS NOT NULL",
            f"{expr} >= {safe} OR {i} % 3 = {abs(number) % 3}",
            f"{i} % 3 = {abs(number) % 3}",
            "",
            f"{q}p = {abs(number) % 2}",
        ]
        return expr, safe, filters[filter_kind]

    expr, safe, where = parts("")
    where_sql = f" WHERE {where}" if where else ""
    if kind == "project":
        return f"SELECT id, {expr}, {safe} FROM {{t}}{where_sql}"
    if kind == "aggregate":
        return f"SELECT {safe} AS k, count(*), min({expr}), count({expr}) FROM {{t}}{where_sql} GROUP BY 1"
    if kind == "join":
        y_expr = parts("y.")[0]
        x_where = parts("x.")[2]
        return f"SELECT x.id, {y_expr} FROM {{t}} x JOIN {{t}} y ON x.id = y.id" + (f" WHERE {x_where}" if x_where else "")
    return f"SELECT *, {expr} FROM {{t}}{where_sql}"


def _value_column(rows: list[dict[str, Any]]) -> list[Any]:
    from varlake.variant import Variant

    return [None if r["v"] == "SQLNULL" else Variant.from_python(r["v"]) for r in rows]


def _json(value: Any) -> str:
    """JSON text of a generated value, decimals written as exact JSON numbers."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, Decimal)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ",".join(_json(v) for v in value) + "]"
    return "{" + ",".join(f"{json.dumps(k)}:{_json(v)}" for k, v in value.items()) + "}"


def _spark_file(spark: Any, rows: list[dict[str, Any]], layout: str | None, target: Path) -> Path:
    """Write ``rows`` with Spark's own writer (forced shredding schema, or none) as one file."""
    data = [(r["id"], None if r["v"] == "SQLNULL" else _json(r["v"])) for r in rows]
    df = spark.createDataFrame(data, "id bigint, j string").selectExpr("id", "parse_json(j) AS v").coalesce(1)
    conf = {
        "spark.sql.variant.writeShredding.enabled": "true" if layout else "false",
        "spark.sql.variant.inferShreddingSchema": "false",
        "spark.sql.variant.forceShreddingSchemaForTest": layout or "",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    }
    staging = target.parent / f".staging-{target.name}"
    with spark_conf(spark, conf):
        df.write.mode("overwrite").parquet(str(staging))
    (part,) = [p for p in staging.iterdir() if p.name.endswith(".parquet")]
    os.replace(part, target)
    shutil.rmtree(staging)
    return target


def _schema(spec_or_table: Any) -> str:
    nested = spec_or_table["nested"] if isinstance(spec_or_table, dict) else "s" in spec_or_table.schema.names
    partitioned = spec_or_table["partitioned"] if isinstance(spec_or_table, dict) else bool(spec_or_table.partition_columns)
    return "id bigint, v variant" + (", s struct<n: int, v: variant>" if nested else "") + (", p int" if partitioned else "")


def _held(rows: list[dict[str, Any]]) -> Any:
    """Column ``s`` (``struct<n: int, v: variant>``) as Arrow."""
    import pyarrow as pa

    from varlake.delta.schema import variant_arrow_type
    from varlake.variant import Variant

    structs = [r["s"] for r in rows]
    encoded = [None if s is None or s["v"] == "SQLNULL" else Variant.from_python(s["v"]) for s in structs]
    v = pa.StructArray.from_arrays(
        [pa.array([b"\x01\x00\x00" if e is None else e.metadata for e in encoded], pa.binary()),
         pa.array([b"\x00" if e is None else e.value for e in encoded], pa.binary())],
        fields=list(variant_arrow_type()), mask=pa.array([e is None for e in encoded], pa.bool_()),
    )
    n = pa.array([None if s is None else s["n"] for s in structs], pa.int32())
    return pa.StructArray.from_arrays([n, v], names=["n", "v"], mask=pa.array([s is None for s in structs], pa.bool_()))


def _build(spark: Any, spec: dict[str, Any], root: Path) -> Table:
    partitioned = spec["partitioned"]
    table = Table.create(root, _schema(spec), partition_by=["p"] if partitioned else [])
    adds = []
    for i, f in enumerate(spec["files"]):
        directory = f"p={f['part']}/" if partitioned else ""
        rel = f"{directory}part-{i}.parquet"
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if f["spark"] and f["rows"]:
            _spark_file(spark, f["rows"], f["layout"], target)
        else:
            columns: dict[str, Any] = {"id": [r["id"] for r in f["rows"]], "v": _value_column(f["rows"])}
            shredding = {"v": f["layout"], "s.v": f["nested_layout"]}
            if spec["nested"]:
                columns["s"] = _held(f["rows"])
            file_schema = StructType(tuple(table.schema.field(name) for name in columns))
            data = to_arrow_table(columns, file_schema)
            write_parquet(data, target, shredding={c: d for c, d in shredding.items() if d and (c == "v" or spec["nested"])} or None,
                          variant_columns=["v", "s.v"] if spec["nested"] else ["v"])
        partition_values = {"p": str(f["part"])} if partitioned else {}
        adds.append(AddFile(path=quote(rel), size=target.stat().st_size, partition_values=partition_values,
                            modification_time=0, data_change=True, stats=table.file_stats_json(rel)))
    table.commit_files(adds, "append")
    return table


def _plain(value: Any) -> Any:
    """A comparable form of a result value (Variants as JSON, also inside structs)."""
    if hasattr(value, "toJson"):
        return ("variant", value.toJson())
    if isinstance(value, float) and value != value:
        return ("nan",)
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    return value


def _run(spark: Any, fn: Any) -> tuple[str, Any]:
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    try:
        rows = fn().collect()
    except (PySparkException, Py4JJavaError) as exc:
        return "error", error_condition(exc)
    return "rows", sorted((tuple(_plain(v) for v in row) for row in rows), key=repr)


def _reference(spark: Any, table: Table, query: str) -> Any:
    schema = _schema(table)
    files = [table.open_file(unquote(t.path)) for t in table.files()]
    reader = spark.read.schema(schema)
    if table.partition_columns:
        reader = reader.option("basePath", table.path)
    frame = reader.parquet(*files) if files else spark.createDataFrame([], schema)
    frame.createOrReplaceTempView("reference_t")
    return spark.sql(query.replace("{t}", "reference_t"))


_COUNTER = itertools.count()

#: Errors raised by a row's value: when rows in two files raise different ones, which one a
#: query reports depends on which task fails first, which Spark leaves to its scheduler.
ROW_ERRORS = frozenset({
    "CAST_INVALID_INPUT", "INVALID_VARIANT_CAST", "CAST_OVERFLOW", "ARITHMETIC_OVERFLOW",
    "NUMERIC_VALUE_OUT_OF_RANGE", "DIVIDE_BY_ZERO", "INVALID_ARRAY_INDEX",
})


def _same_outcome(got: tuple[str, Any], expected: tuple[str, Any]) -> bool:
    if got == expected:
        return True
    conditions = {str(got[1]).split(".")[0], str(expected[1]).split(".")[0]}
    return got[0] == expected[0] == "error" and conditions <= ROW_ERRORS


#: raise for a longer bug hunt, e.g. VARLAKE_SPARK_READ_EXAMPLES=300 VARLAKE_SPARK_READ_RANDOM=1
#: (CI runs a fixed sequence of examples: the same test never passes on one run and fails on the next)
EXAMPLES = int(os.environ.get("VARLAKE_SPARK_READ_EXAMPLES", "30"))
RANDOM = bool(os.environ.get("VARLAKE_SPARK_READ_RANDOM"))


@settings(max_examples=EXAMPLES, derandomize=not RANDOM, database=None, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(spec=tables(), data=st.data())
def test_sql_matches_spark_over_the_same_files(spark: Any, tmp_path: Path, spec: dict[str, Any], data: Any) -> None:
    root = tmp_path / f"t{next(_COUNTER)}"
    table = _build(spark, spec, root)
    for _ in range(3):
        query = data.draw(queries(spec))
        expected = _run(spark, lambda: _reference(spark, table, query))
        got = _run(spark, lambda: vs.sql(spark, query, t=table))
        plan = vs.explain(spark, query, t=table, show=False)
        event(f"outcome: {expected[0]}")
        event(f"struct-pruned groups: {sum(g.kind == 'shredded' for g in plan.plans['t'].groups) > 0}")
        event(f"files skipped by statistics: {bool(plan.plans['t'].skipped_by_stats)}")
        nested = [u for g in plan.plans["t"].groups if g.kind == "shredded" for u, _ in g.leaf_types if is_nested(u.target)]
        event(f"struct/array target read as structs: {bool(nested)}")
        assert _same_outcome(got, expected), f"{got} != {expected}: {query}\n{plan}"
