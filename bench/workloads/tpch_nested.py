"""TPC-H, denormalised into one JSON document per order, and TPC-H Q1, Q3, Q6, Q10, Q12 over it.

The data comes from ``tpchgen-cli`` (deterministic for a scale factor). Each order becomes
a document with its customer (and the customer's nation) as nested objects and its line
items as an array of objects, as in the talk's TPCH-NESTED::

    {"o_orderkey": 1, "o_orderdate": "1996-01-02", ..., "customer": {"c_custkey": 370, ...,
     "nation": {"n_nationkey": 12, "n_name": "JAPAN", ...}}, "lineitems": [{"l_quantity": 17.0, ...}]}

Dates are ISO strings (JSON has no date type) and prices are JSON numbers, so every
storage reads them with the same casts (``date``, ``decimal(15,2)``) and the answers are
exactly comparable. The queries keep TPC-H's meaning on the nested shape: a join of
orders with line items is an explode of ``lineitems``, a join with customer or nation is a
path into the order's document. Line items are read in the way each engine allows:
``variant_get(v, '$.lineitems', 'array<struct<...>>')`` (Spark Variant), ``from_json``
with a pruned schema (JSON text), ``explode(lineitems)`` (relational), and a cast of
``v.lineitems`` to a list of structs (DuckDB).

The seed picks the TPC-H substitution parameters: run 0 uses the spec's validation
values, later runs values drawn by the spec's rules, so repeated runs differ.
"""

from __future__ import annotations

import datetime as dt
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from workloads.spec import Dialect, Query, Source, Workload

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: TPC-H scale factor at benchmark scale 1.0 (30,000 orders, ~120,000 line items)
SF_AT_SCALE_1 = 0.02
PARAM_SETS = 4

LINEITEM_FIELDS = (
    ("l_partkey", "BIGINT"), ("l_suppkey", "BIGINT"), ("l_linenumber", "INT"), ("l_quantity", "DECIMAL(15,2)"),
    ("l_extendedprice", "DECIMAL(15,2)"), ("l_discount", "DECIMAL(15,2)"), ("l_tax", "DECIMAL(15,2)"),
    ("l_returnflag", "STRING"), ("l_linestatus", "STRING"), ("l_shipdate", "DATE"), ("l_commitdate", "DATE"),
    ("l_receiptdate", "DATE"), ("l_shipinstruct", "STRING"), ("l_shipmode", "STRING"), ("l_comment", "STRING"),
)
#: the documents' full schema (Spark DDL): what the relational storage is loaded with
DOCUMENT = (
    "o_orderkey BIGINT, o_orderstatus STRING, o_totalprice DECIMAL(15,2), o_orderdate DATE, o_orderpriority STRING, "
    "o_clerk STRING, o_shippriority INT, o_comment STRING, customer STRUCT<c_custkey: BIGINT, c_name: STRING, "
    "c_address: STRING, c_phone: STRING, c_acctbal: DECIMAL(15,2), c_mktsegment: STRING, c_comment: STRING, "
    "nation: STRUCT<n_nationkey: BIGINT, n_name: STRING, n_regionkey: BIGINT>>, "
    "lineitems ARRAY<STRUCT<" + ", ".join(f"{n}: {t}" for n, t in LINEITEM_FIELDS) + ">>"
)

_DOCS_SQL = """
CREATE TEMP TABLE nested AS
WITH li AS (
  SELECT l_orderkey, list(struct_pack(l_partkey, l_suppkey, l_linenumber, l_quantity, l_extendedprice, l_discount,
         l_tax, l_returnflag, l_linestatus, l_shipdate, l_commitdate, l_receiptdate, l_shipinstruct, l_shipmode,
         l_comment) ORDER BY l_linenumber) AS lineitems
  FROM read_parquet('{dir}/lineitem.parquet') GROUP BY l_orderkey)
SELECT row_number() OVER (ORDER BY o_orderkey) AS rn, o_orderkey, o_orderstatus, o_totalprice, o_orderdate,
       o_orderpriority, o_clerk, o_shippriority, o_comment,
       struct_pack(c_custkey, c_name, c_address, c_phone, c_acctbal, c_mktsegment, c_comment,
                   nation := struct_pack(n_nationkey, n_name, n_regionkey)) AS customer,
       li.lineitems AS lineitems
FROM read_parquet('{dir}/orders.parquet') o
JOIN read_parquet('{dir}/customer.parquet') c ON o.o_custkey = c.c_custkey
JOIN read_parquet('{dir}/nation.parquet') n ON c.c_nationkey = n.n_nationkey
JOIN li ON li.l_orderkey = o.o_orderkey
"""


def scale_factor(scale: float) -> float:
    return round(SF_AT_SCALE_1 * scale, 6)


def _tpchgen() -> str:
    """``tpchgen-cli`` next to this interpreter (the venv) or on PATH."""
    local = Path(sys.executable).with_name("tpchgen-cli")
    found = str(local) if local.exists() else shutil.which("tpchgen-cli")
    if not found:
        raise FileNotFoundError("tpchgen-cli not found: install the bench extra (pip install -e '.[bench]')")
    return found


def generate_tpch(out_dir: Path, sf: float, parts: int = 8) -> Source:
    """Generate TPC-H tables at ``sf`` with tpchgen-cli and write one JSON document per order."""
    import duckdb

    start = time.perf_counter()
    raw = out_dir / "tpch"
    raw.mkdir(parents=True, exist_ok=True)
    subprocess.run([_tpchgen(), "parquet", "-s", str(sf), "--tables", "orders,lineitem,customer,nation",
                    "-o", str(raw), "--overwrite", "-q"], check=True)
    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")
        con.execute(_DOCS_SQL.format(dir=raw.as_posix()))
        (orders,) = con.execute("SELECT count(*) FROM nested").fetchone()  # type: ignore[misc]
        (items,) = con.execute("SELECT sum(len(lineitems)) FROM nested").fetchone()  # type: ignore[misc]
        paths = []
        for k in range(parts):
            lo, hi = orders * k // parts, orders * (k + 1) // parts
            path = out_dir / f"orders-{k:03d}.jsonl"
            con.execute(f"COPY (SELECT * EXCLUDE (rn) FROM nested WHERE rn > {lo} AND rn <= {hi} ORDER BY rn) "
                        f"TO '{path.as_posix()}' (FORMAT json)")
            paths.append(path)
    finally:
        con.close()
    shutil.rmtree(raw)
    size = sum(p.stat().st_size for p in paths)
    return Source(tuple(paths), int(orders), size, time.perf_counter() - start,
                  {"scale_factor": sf, "orders": int(orders), "lineitems": int(items or 0), "parts": parts})


def generate(out_dir: Path, scale: float, seed: int) -> Source:
    del seed  # tpchgen's data is fixed by the scale factor; the seed drives the query parameters
    return generate_tpch(out_dir, scale_factor(scale))


def relational(spark: "SparkSession", paths: Sequence[str]) -> "DataFrame":
    """Orders as typed columns (customer and nation flattened), line items an array of structs."""
    docs = spark.read.schema(DOCUMENT).json(list(paths))
    return docs.selectExpr(
        "o_orderkey", "o_orderstatus", "o_totalprice", "o_orderdate", "o_orderpriority", "o_clerk", "o_shippriority",
        "o_comment", "customer.c_custkey", "customer.c_name", "customer.c_address", "customer.c_phone",
        "customer.c_acctbal", "customer.c_mktsegment", "customer.c_comment", "customer.nation.n_nationkey",
        "customer.nation.n_name", "customer.nation.n_regionkey", "lineitems",
    )


# --- substitution parameters (TPC-H 2.4.x.3) ------------------------------------------------------

SEGMENTS = ("AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY")
SHIPMODES = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")
VALIDATION: Mapping[str, Mapping[str, str]] = {
    "Q1": {"delta": "90"},
    "Q3": {"segment": "BUILDING", "date": "1995-03-15"},
    "Q6": {"date": "1994-01-01", "discount": "0.06", "quantity": "24"},
    "Q10": {"date": "1993-10-01"},
    "Q12": {"mode1": "MAIL", "mode2": "SHIP", "date": "1994-01-01"},
}


def _draw(name: str, r: random.Random) -> dict[str, str]:
    if name == "Q1":
        return {"delta": str(r.randint(60, 120))}
    if name == "Q3":
        return {"segment": r.choice(SEGMENTS), "date": (dt.date(1995, 3, 1) + dt.timedelta(r.randint(0, 30))).isoformat()}
    if name == "Q6":
        return {"date": f"{r.randint(1993, 1997)}-01-01", "discount": f"0.0{r.randint(2, 9)}", "quantity": str(r.randint(24, 25))}
    if name == "Q10":
        month = r.randint(0, 23)  # February 1993 .. January 1995
        return {"date": dt.date(1993 + (month + 1) // 12, (month + 1) % 12 + 1, 1).isoformat()}
    if name == "Q12":
        m1, m2 = r.sample(SHIPMODES, 2)
        return {"mode1": m1, "mode2": m2, "date": f"{r.randint(1993, 1997)}-01-01"}
    raise KeyError(name)


def parameters(seed: int, sets: int = PARAM_SETS) -> dict[str, tuple[Mapping[str, str], ...]]:
    """Per query: the validation values first, then ``sets - 1`` seeded draws."""
    r = random.Random(f"tpch-params:{seed}")
    return {q: (VALIDATION[q], *(_draw(q, r) for _ in range(sets - 1))) for q in VALIDATION}


# --- the queries ----------------------------------------------------------------------------------


ITEM_TYPES = {"l_quantity": "decimal(15,2)", "l_extendedprice": "decimal(15,2)", "l_discount": "decimal(15,2)",
              "l_tax": "decimal(15,2)", "l_returnflag": "string", "l_linestatus": "string", "l_shipdate": "date",
              "l_commitdate": "date", "l_receiptdate": "date", "l_shipmode": "string"}
DUCK_TYPES = {"decimal(15,2)": "DECIMAL(15,2)", "string": "VARCHAR", "date": "DATE", "bigint": "BIGINT"}


def _items(fields: str) -> str:
    """A line-item struct type with just the fields a query reads (Spark DDL)."""
    return ",".join(f"{f}:{ITEM_TYPES[f]}" for f in fields.split())


def _duck_items(fields: str) -> str:
    return ", ".join(f"{f} {DUCK_TYPES[ITEM_TYPES[f]]}" for f in fields.split())


Q1_ITEMS = "l_returnflag l_linestatus l_quantity l_extendedprice l_discount l_tax l_shipdate"
Q1_SELECT = """
SELECT l.l_returnflag, l.l_linestatus, sum(l.l_quantity) AS sum_qty, sum(l.l_extendedprice) AS sum_base_price,
       sum(l.l_extendedprice * (1 - l.l_discount)) AS sum_disc_price,
       sum(l.l_extendedprice * (1 - l.l_discount) * (1 + l.l_tax)) AS sum_charge,
       avg(l.l_quantity) AS avg_qty, avg(l.l_extendedprice) AS avg_price, avg(l.l_discount) AS avg_disc,
       count(*) AS count_order"""
Q1_TAIL = "GROUP BY l.l_returnflag, l.l_linestatus ORDER BY l.l_returnflag, l.l_linestatus"

Q3_ITEMS = "l_extendedprice l_discount l_shipdate"
Q3_TAIL = """
WHERE l.l_shipdate > DATE'{date}'
GROUP BY o_orderkey, o_orderdate, o_shippriority
ORDER BY revenue DESC, o_orderdate, o_orderkey LIMIT 10"""
Q3_SELECT = "SELECT o_orderkey, sum(l.l_extendedprice * (1 - l.l_discount)) AS revenue, o_orderdate, o_shippriority"

Q6_ITEMS = "l_extendedprice l_discount l_quantity l_shipdate"
Q6_WHERE = """
WHERE l.l_shipdate >= DATE'{date}' AND l.l_shipdate < {year_later}
  AND l.l_discount BETWEEN {discount} - 0.01 AND {discount} + 0.01 AND l.l_quantity < {quantity}"""

Q10_ITEMS = "l_extendedprice l_discount l_returnflag"
Q10_TAIL = """
GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment
ORDER BY revenue DESC, c_custkey LIMIT 20"""
Q10_SELECT = "SELECT c_custkey, c_name, sum(rev) AS revenue, c_acctbal, n_name, c_address, c_phone, c_comment"

Q12_ITEMS = "l_shipmode l_commitdate l_receiptdate l_shipdate"
Q12_SELECT = """
SELECT l.l_shipmode,
       sum(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END) AS high_line_count,
       sum(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH' THEN 1 ELSE 0 END) AS low_line_count"""
Q12_WHERE = """
WHERE l.l_shipmode IN ('{mode1}', '{mode2}') AND l.l_commitdate < l.l_receiptdate AND l.l_shipdate < l.l_commitdate
  AND l.l_receiptdate >= DATE'{date}' AND l.l_receiptdate < {year_later}
GROUP BY l.l_shipmode ORDER BY l.l_shipmode"""

SPARK_YEAR = "add_months(DATE'{date}', 12)"
DUCK_YEAR = "CAST(DATE '{date}' + INTERVAL 1 YEAR AS DATE)"
C_FIELDS = ("c_custkey", "bigint"), ("c_name", "string"), ("c_acctbal", "decimal(15,2)"), ("c_address", "string"), \
    ("c_phone", "string"), ("c_comment", "string")


def _variant_items(fields: str) -> str:
    return f"variant_get(v, '$.lineitems', 'array<struct<{_items(fields)}>>')"


def _json_doc(extra: str, fields: str) -> str:
    """``from_json`` with a schema pruned to what the query reads (one parse per document)."""
    return f"from_json(doc, 'struct<{extra}{',' if extra else ''}lineitems:array<struct<{_items(fields)}>>>')"


def _duck_unnest(fields: str) -> str:
    return f"unnest(v.lineitems::STRUCT({_duck_items(fields)})[]) AS x(l)"


def queries(seed: int) -> tuple[Query, ...]:
    """The five queries with substitution parameters drawn from ``seed``."""
    p = parameters(seed)
    c_var = ", ".join(f"v:customer.{c}::{t} AS {c}" for c, t in C_FIELDS)
    c_duck = ", ".join(f"v.customer.{c}::{DUCK_TYPES[t]} AS {c}" for c, t in C_FIELDS)
    c_json_type = ",".join(f"{c}:{t}" for c, t in C_FIELDS)
    c_json = ", ".join(f"d.customer.{c}" for c, _ in C_FIELDS)
    c_rel = ", ".join(c for c, _ in C_FIELDS)
    return (
        Query("Q1", "pricing summary report (all line items)", {
            Dialect.JSON: f"""{Q1_SELECT}
FROM (SELECT {_json_doc('', Q1_ITEMS)}.lineitems AS lis FROM {{t}}) LATERAL VIEW explode(lis) x AS l
WHERE l.l_shipdate <= date_sub(DATE'1998-12-01', {{delta}})
{Q1_TAIL}""",
            Dialect.VARIANT: f"""{Q1_SELECT}
FROM (SELECT {_variant_items(Q1_ITEMS)} AS lis FROM {{t}}) LATERAL VIEW explode(lis) x AS l
WHERE l.l_shipdate <= date_sub(DATE'1998-12-01', {{delta}})
{Q1_TAIL}""",
            Dialect.RELATIONAL: f"""{Q1_SELECT}
FROM {{t}} LATERAL VIEW explode(lineitems) x AS l
WHERE l.l_shipdate <= date_sub(DATE'1998-12-01', {{delta}})
{Q1_TAIL}""",
            Dialect.DUCKDB: f"""{Q1_SELECT}
FROM {{t}}, {_duck_unnest(Q1_ITEMS)}
WHERE l.l_shipdate <= DATE '1998-12-01' - {{delta}}
{Q1_TAIL}""",
        }, p["Q1"]),
        Query("Q3", "shipping priority (segment, order and ship dates)", {
            Dialect.JSON: f"""{Q3_SELECT}
FROM (SELECT d.o_orderkey, d.o_orderdate, d.o_shippriority, d.lineitems AS lis
      FROM (SELECT {_json_doc('o_orderkey:bigint,o_orderdate:date,o_shippriority:int,customer:struct<c_mktsegment:string>', Q3_ITEMS)} AS d FROM {{t}})
      WHERE d.customer.c_mktsegment = '{{segment}}' AND d.o_orderdate < DATE'{{date}}')
  LATERAL VIEW explode(lis) x AS l{Q3_TAIL}""",
            Dialect.VARIANT: f"""{Q3_SELECT}
FROM (SELECT v:o_orderkey::bigint AS o_orderkey, v:o_orderdate::date AS o_orderdate,
             v:o_shippriority::int AS o_shippriority, {_variant_items(Q3_ITEMS)} AS lis
      FROM {{t}} WHERE v:customer.c_mktsegment::string = '{{segment}}' AND v:o_orderdate::date < DATE'{{date}}')
  LATERAL VIEW explode(lis) x AS l{Q3_TAIL}""",
            Dialect.RELATIONAL: f"""{Q3_SELECT}
FROM (SELECT o_orderkey, o_orderdate, o_shippriority, lineitems
      FROM {{t}} WHERE c_mktsegment = '{{segment}}' AND o_orderdate < DATE'{{date}}')
  LATERAL VIEW explode(lineitems) x AS l{Q3_TAIL}""",
            Dialect.DUCKDB: f"""{Q3_SELECT}
FROM (SELECT v.o_orderkey::BIGINT AS o_orderkey, v.o_orderdate::DATE AS o_orderdate,
             v.o_shippriority::INTEGER AS o_shippriority, v
      FROM {{t}} WHERE v.customer.c_mktsegment::VARCHAR = '{{segment}}' AND v.o_orderdate::DATE < DATE '{{date}}') o,
  {_duck_unnest(Q3_ITEMS)}{Q3_TAIL}""",
        }, p["Q3"]),
        Query("Q6", "forecasting revenue change (all line items)", {
            Dialect.JSON: f"""SELECT sum(l.l_extendedprice * l.l_discount) AS revenue
FROM (SELECT {_json_doc('', Q6_ITEMS)}.lineitems AS lis FROM {{t}}) LATERAL VIEW explode(lis) x AS l
{Q6_WHERE.replace('{year_later}', SPARK_YEAR)}""",
            Dialect.VARIANT: f"""SELECT sum(l.l_extendedprice * l.l_discount) AS revenue
FROM (SELECT {_variant_items(Q6_ITEMS)} AS lis FROM {{t}}) LATERAL VIEW explode(lis) x AS l
{Q6_WHERE.replace('{year_later}', SPARK_YEAR)}""",
            Dialect.RELATIONAL: f"""SELECT sum(l.l_extendedprice * l.l_discount) AS revenue
FROM {{t}} LATERAL VIEW explode(lineitems) x AS l
{Q6_WHERE.replace('{year_later}', SPARK_YEAR)}""",
            Dialect.DUCKDB: f"""SELECT sum(l.l_extendedprice * l.l_discount) AS revenue
FROM {{t}}, {_duck_unnest(Q6_ITEMS)}
{Q6_WHERE.replace('{year_later}', DUCK_YEAR).replace("DATE'", "DATE '")}""",
        }, p["Q6"]),
        Query("Q10", "returned item reporting (customer, nation, returned items in a quarter)", {
            Dialect.JSON: f"""{Q10_SELECT}
FROM (SELECT {c_json}, d.customer.nation.n_name AS n_name, l.l_extendedprice * (1 - l.l_discount) AS rev
      FROM (SELECT {_json_doc(f'o_orderdate:date,customer:struct<{c_json_type},nation:struct<n_name:string>>', Q10_ITEMS)} AS d
            FROM {{t}})
        LATERAL VIEW explode(d.lineitems) x AS l
      WHERE d.o_orderdate >= DATE'{{date}}' AND d.o_orderdate < add_months(DATE'{{date}}', 3) AND l.l_returnflag = 'R'){Q10_TAIL}""",
            Dialect.VARIANT: f"""{Q10_SELECT}
FROM (SELECT c_custkey, c_name, c_acctbal, c_address, c_phone, c_comment, n_name,
             l.l_extendedprice * (1 - l.l_discount) AS rev
      FROM (SELECT {c_var}, v:customer.nation.n_name::string AS n_name, {_variant_items(Q10_ITEMS)} AS lis
            FROM {{t}} WHERE v:o_orderdate::date >= DATE'{{date}}' AND v:o_orderdate::date < add_months(DATE'{{date}}', 3))
        LATERAL VIEW explode(lis) x AS l
      WHERE l.l_returnflag = 'R'){Q10_TAIL}""",
            Dialect.RELATIONAL: f"""{Q10_SELECT}
FROM (SELECT {c_rel}, n_name, l.l_extendedprice * (1 - l.l_discount) AS rev
      FROM {{t}} LATERAL VIEW explode(lineitems) x AS l
      WHERE o_orderdate >= DATE'{{date}}' AND o_orderdate < add_months(DATE'{{date}}', 3)
        AND l.l_returnflag = 'R'){Q10_TAIL}""",
            Dialect.DUCKDB: f"""{Q10_SELECT}
FROM (SELECT {c_duck}, v.customer.nation.n_name::VARCHAR AS n_name, l.l_extendedprice * (1 - l.l_discount) AS rev
      FROM {{t}}, {_duck_unnest(Q10_ITEMS)}
      WHERE v.o_orderdate::DATE >= DATE '{{date}}' AND v.o_orderdate::DATE < CAST(DATE '{{date}}' + INTERVAL 3 MONTH AS DATE)
        AND l.l_returnflag = 'R'){Q10_TAIL}""",
        }, p["Q10"]),
        Query("Q12", "shipping modes and order priority", {
            Dialect.JSON: f"""{Q12_SELECT}
FROM (SELECT d.o_orderpriority, d.lineitems AS lis
      FROM (SELECT {_json_doc('o_orderpriority:string', Q12_ITEMS)} AS d FROM {{t}}))
  LATERAL VIEW explode(lis) x AS l
{Q12_WHERE.replace('{year_later}', SPARK_YEAR)}""",
            Dialect.VARIANT: f"""{Q12_SELECT}
FROM (SELECT v:o_orderpriority::string AS o_orderpriority, {_variant_items(Q12_ITEMS)} AS lis FROM {{t}})
  LATERAL VIEW explode(lis) x AS l
{Q12_WHERE.replace('{year_later}', SPARK_YEAR)}""",
            Dialect.RELATIONAL: f"""{Q12_SELECT}
FROM {{t}} LATERAL VIEW explode(lineitems) x AS l
{Q12_WHERE.replace('{year_later}', SPARK_YEAR)}""",
            Dialect.DUCKDB: f"""{Q12_SELECT}
FROM (SELECT v.o_orderpriority::VARCHAR AS o_orderpriority, v FROM {{t}}) o, {_duck_unnest(Q12_ITEMS)}
{Q12_WHERE.replace('{year_later}', DUCK_YEAR).replace("DATE'", "DATE '")}""",
        }, p["Q12"]),
    )


def workload(seed: int) -> Workload:
    return Workload(
        name="tpch_nested",
        title="TPC-H nested: one JSON document per order (customer, nation, line items)",
        queries=queries(seed),
        generate=generate,
        relational=relational,
        paths=("$.o_orderdate", "$.o_orderpriority", "$.o_shippriority", "$.customer.c_mktsegment",
               "$.customer.nation.n_name", "$.lineitems[*].l_*"),
    )
