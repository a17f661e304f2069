"""A constraint violation shows each value as Spark's ``CAST(value AS STRING)``: timestamps,
timestamp_ntz, dates, decimals, floats, binary and strings, checked against Spark itself."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pyarrow as pa
import pytest

from varlake.errors import ConstraintViolationError
from varlake.table import Table
from varlake.write.staging.constraints import shown_value

from constraint_tables import add_constraints

UTC = dt.timezone.utc

#: column -> (Spark DDL type, Delta type, values)
COLUMNS = {
    "ts": ("timestamp", "timestamp", [dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), dt.datetime(1999, 12, 31, 23, 59, 59, 120000, tzinfo=UTC),
                                     dt.datetime(1, 1, 1, tzinfo=UTC), dt.datetime(2024, 6, 1, 0, 0, 0, 1, tzinfo=UTC)]),
    "ntz": ("timestamp_ntz", "timestamp_ntz", [dt.datetime(2024, 1, 2, 3, 4, 5), dt.datetime(2024, 1, 2, 3, 4, 5, 600),
                                               dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.datetime(1582, 10, 4)]),
    "d": ("date", "date", [dt.date(2024, 2, 29), dt.date(1, 1, 1), dt.date(1582, 10, 15), dt.date(9999, 12, 31)]),
    "dec": ("decimal(10,2)", "decimal(10,2)", [Decimal("0.00"), Decimal("-12.50"), Decimal("12345678.90"), Decimal("0.01")]),
    "small": ("decimal(38,18)", "decimal(38,18)", [Decimal("1E-18"), Decimal("0E-18"), Decimal("-123.456000000000000000"),
                                                   Decimal("99999999999999999999.999999999999999999")]),
    "f": ("float", "float", [1.100000023841858, -0.0, math.inf, 1e-05]),
    "db": ("double", "double", [1e-05, 1e7, 123456789.0, math.nan]),
    "db2": ("double", "double", [-math.inf, 0.1 + 0.2, 5e-324, 1.0]),
    "b": ("binary", "binary", [b"abc", b"", b"\xc3\xa9t\xc3\xa9", b"\x00\x7f\xff\xe2\x82z\xed\xa0\x80"]),
    "s": ("string", "string", ["plain", "", "ünïcødé ✓", "line\nbreak"]),
    "bo": ("boolean", "boolean", [True, False, True, False]),
    "l": ("bigint", "long", [-9223372036854775808, 0, 42, 9223372036854775807]),
}
ROWS = len(next(iter(COLUMNS.values()))[2])


@pytest.mark.spark
@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_values_show_as_spark_casts_them_to_string(spark, zone):
    ddl = ", ".join(f"{name} {kind}" for name, (kind, _, _) in COLUMNS.items())
    rows = [tuple(values[i] for _, _, values in COLUMNS.values()) for i in range(ROWS)]
    df = spark.createDataFrame(rows, ddl)
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        texts = df.selectExpr(*[f"CAST({name} AS STRING)" for name in COLUMNS]).collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
    for i, row in enumerate(texts):
        for j, (name, (_, delta_type, values)) in enumerate(COLUMNS.items()):
            assert shown_value(values[i], delta_type, zone) == row[j], (name, values[i])


def test_a_violation_message_shows_spark_text(tmp_path):
    root = str(tmp_path / "t")
    schema = pa.schema([("ts", pa.timestamp("us", tz="UTC")), ("ntz", pa.timestamp("us")), ("d", pa.date32()),
                        ("dec", pa.decimal128(10, 2)), ("f", pa.float32()), ("db", pa.float64()), ("b", pa.binary()),
                        ("s", pa.string())])
    t = Table.create(root, schema)
    add_constraints(root, constraints={"c": "s <> 'bad' OR ts IS NULL OR ntz IS NULL OR d IS NULL OR dec IS NULL "
                                              "OR f IS NULL OR db IS NULL OR b IS NULL"})
    row = {"ts": dt.datetime(2024, 1, 2, 3, 4, 5, 120000, tzinfo=UTC), "ntz": dt.datetime(2024, 1, 2, 3, 4, 5),
           "d": dt.date(2024, 2, 29), "dec": Decimal("-0.50"), "f": 1.100000023841858, "db": 1e-05, "b": b"hi",
           "s": "bad"}
    with pytest.raises(ConstraintViolationError) as info:
        Table(root).append(pa.Table.from_pylist([row], schema=schema))
    message = str(info.value)
    expected = ["b : hi", "d : 2024-02-29", "db : 1.0E-5", "dec : -0.50", "f : 1.1", "ntz : 2024-01-02 03:04:05",
                "s : bad", "ts : 2024-01-02 03:04:05.12"]
    for line in expected:
        assert f"\n - {line}" in message, (line, message)
    assert t.snapshot().version == Table(root).snapshot().version


@pytest.mark.spark
def test_variant_values_show_as_spark_casts_them(spark):
    from varlake.variant import parse_json

    texts = ['{"a":1,"b":[true,null],"c":"x"}', '{"d":1.50,"e":-0.0,"f":1e300}', '"plain"', "[]"]
    got = spark.sql("SELECT " + ", ".join(f"CAST(parse_json('{t}') AS STRING)" for t in texts)).collect()[0]
    for i, text in enumerate(texts):
        v = parse_json(text)
        assert shown_value({"metadata": v.metadata, "value": v.value}, "variant") == got[i], text
