"""varlake's Variant SQL functions give Spark 4.3's answers, cell for cell.

One DataFrame holds ~110 Variant documents (parse_json texts, ``cast(... AS VARIANT)`` of
every SQL type, hand-built values Spark cannot make itself such as UUIDs); a cross join
with ~20 paths and a single SELECT computes ``try_variant_get`` for ~25 target types, the
sub-Variant, its schema and ``is_variant_null``. Each cell is then recomputed with varlake.
``variant_get`` errors are derived from Spark's own rule (the cast returned NULL for a
non-null value) and double-checked: every cell varlake accepts is re-run through Spark's
strict ``variant_get``, and one failing cell per type is run alone to compare messages.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
import uuid
from decimal import Decimal
from typing import Any

import pytest

from varlake.errors import InvalidPathError, VariantCastError
from varlake.variant import Variant
from varlake.semantics.calendar import days_from_civil
from varlake.variant.cast import OutOfPythonRange, parse_type
from varlake.variant.encoder import encode_string
from varlake.variant.functions import (
    cast_to_variant,
    is_variant_null,
    to_variant_object,
    try_variant_get,
    variant_explode,
    variant_explode_outer,
    variant_get,
)
from varlake.variant.schema import schema_of_variant, schema_of_variant_agg

pytestmark = pytest.mark.spark

JSON_DOCS = [
    '{"a": 1, "b": "hello", "c": [1, 2, 3], "d": {"e": 1.5, "f": null}, "g": true}',
    '[1, "2", 3.5, null, true, {"a": 7, "A": 8}]',
    '{"a": "2024-02-29 12:34:56", "b": "42", "c": ["1.5", "x", "2024-01-01"], "d": {"e": "NaN", "f": "t"}}',
    '{"a": -1.25e3, "c": [[1, 2], [3, "x"], []], "d": {"e": [], "f": {}}}',
    '{"a b": {"c.d": [10, 20]}, "x\'y": 5, "[": 6, "A": {"B": 1}}',
    '{"c": ["a", 1, null, 2.5, "2024-01-01"], "a": [1, 2], "b": {"x": 1}, "d": {"e": [0.5, "1"], "f": [null]}}',
    '[[1, 2, 3], ["a", "b"], {"c.d": 1}, [], null, [[7]]]',
    '{"d": {"e": "2024-01-01T00:00:00Z", "f": [1.5, "2"]}, "a": 9.99, "b": [{"x": 1}], "c": {"k": "v"}}',
    '{"A": {"B": "x"}, "a": [true, false, null], "c": [{"a": 1}, {"a": "x"}, {"b": 2}]}',
    "1", "-129", "300", "32768", "2147483648", "9223372036854775807", "-9223372036854775808",
    "1.5", "-2.5", "0.5", "-0.5", "0.0000001", "100.0", "99.995",
    "12345678901234567890.123456789", "99999999999999999999999999999999999999", "-0.00000000000000000000000000000000000001",
    "1E3", "1.5e300", "-1.7976931348623157E308", "4.9E-324", "1e-7", "9.223372036854775807E18", "2147483647.9",
    '"1"', '" 12 "', '"1.5"', '"-1.5e2"', '"true"', '"FALSE"', '"yes"', '"N"', '"0"', '"2"', '"abc"', '""',
    '"2024-02-29"', '"2024-02-29T12:34:56.123456789Z"', '"2024-02-29 12:34:56+05:30"', '"  2024-1-2  "',
    '"NaN"', '"-inf"', '"Infinity"', '"1d"', '"0x1p4"', '"2024"', '"2024-03"', '"1.0E-2"', '"2024-02-30"',
    '"+10000-01-01"', '"2024-01-01 25:00:00"', '"2024-03-10 02:30:00 America/Los_Angeles"',
    '"2020-06-01T10:00:00 UTC+3"', '"2020-06-01 10:00:00 PST"', '"9999999999999999999"', '"\\t42\\u007f"',
    '"1e400"', '"3.4028236e38"', '"2024-01-01T"', '"-2024-01-01"', '"1_000"', '"\\u0661\\u0662"',
    '"12:34:56.5"', '"T10:11"', '"10:11:12 Europe/Paris"', '"2024-07-01 12:00:00 CST"',
    '"a long string that is longer than sixty-three bytes so it needs the long string form"',
    "true", "false", "null", "{}", "[]",
]

SQL_DOCS = [
    "cast(cast(1.25 AS float) AS variant)",
    "cast(cast(0.1 AS float) AS variant)",
    "cast(cast(3.4e38 AS float) AS variant)",
    "cast(cast(2147483648 AS float) AS variant)",
    "cast(cast(-0.0 AS double) AS variant)",
    "cast(cast('NaN' AS double) AS variant)",
    "cast(cast('-Infinity' AS double) AS variant)",
    "cast(cast(16777217 AS double) AS variant)",
    "cast(cast(1.50 AS decimal(10,2)) AS variant)",
    "cast(cast(0 AS decimal(38,10)) AS variant)",
    "cast(cast(-123.456 AS decimal(20,3)) AS variant)",
    "cast(cast(5 AS tinyint) AS variant)",
    "cast(true AS variant)",
    "cast(date'2024-02-29' AS variant)",
    "cast(date'0001-01-01' AS variant)",
    "cast(date'-0044-03-15' AS variant)",
    "cast(timestamp'2024-03-10 10:30:00.123456' AS variant)",
    "cast(timestamp'1969-12-31 23:59:59.999999' AS variant)",
    "cast(timestamp_micros(9223372036854775807) AS variant)",
    "cast(timestamp_ntz'2024-11-03 01:30:00' AS variant)",
    "cast(timestamp_ntz'9999-12-31 23:59:59.999999' AS variant)",
    "cast(X'0102ff' AS variant)",
    "cast(encode('h\u00e9llo 12', 'UTF-8') AS variant)",
    "cast(X'' AS variant)",
    "cast(array(1, 2, 3) AS variant)",
    "to_variant_object(named_struct('a', 1.5d, 'b', array(date'2024-01-01'), 'c', map('x', X'00')))",
    "to_variant_object(array(named_struct('a', timestamp'2024-01-01 00:00:00', 'b', cast(1 AS float))))",
]

# Values Spark cannot build from SQL but reads happily: (metadata, value).
INJECTED = [
    (b"\x01\x00\x00", b"\x50" + uuid.UUID("12345678-1234-5678-1234-567812345678").bytes),
    (b"\x01\x00\x00", b"\x40\x03\x00\x00\x00abc"),  # a short string in the long-string encoding
    (b"\x01\x00\x00", b"\x20\x05" + (123_450_000).to_bytes(4, "little", signed=True)),  # 1234.50000
    (b"\x01\x00\x00", b"\x24\x00" + (10**17).to_bytes(8, "little", signed=True)),  # decimal8 1E17
    (b"\x01\x00\x00", b"\x28\x26" + (-(10**38) + 1).to_bytes(16, "little", signed=True)),  # DECIMAL(38,38)
]

PATHS = [
    "$", "$.a", "$.b", "$.c", "$.c[0]", "$.c[2]", "$.c[1][1]", "$.c[5]", "$.d", "$.d.e", "$.d.f", "$.zzz",
    "$[0]", "$[1]", "$[5].a", "$[5]['A']", "$[99]", "$['a b']['c.d'][1]", "$[\"x'y\"]", "$['[']", "$.A.B",
]

SCALAR_TYPES = [
    "boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "decimal(5,2)", "decimal(38,0)",
    "decimal(38,38)", "decimal(10,4)", "string", "binary", "date", "timestamp", "timestamp_ntz", "time",
]
COMPLEX_TYPES = [
    "array<int>", "array<string>", "array<variant>", "array<array<bigint>>", "map<string,string>",
    "map<string,decimal(10,2)>", "struct<a:int,b:string,e:double,`a b`:variant,f:boolean>",
]
TYPES = SCALAR_TYPES + COMPLEX_TYPES + ["variant"]
MESSAGE_TYPES = ["int", "decimal(5,2)", "binary", "date", "timestamp", "map<string,decimal(10,2)>"]
ZONE = "America/Los_Angeles"
ZONE_TYPES = ["string", "date", "timestamp", "timestamp_ntz", "time"]


def sql_str(text: str) -> str:
    """A Spark SQL string literal holding exactly ``text``."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _canon_sql(column: str, t: str) -> str:
    """SQL that turns a result of type ``t`` into something Python receives without loss."""
    if t == "timestamp":
        return f"unix_micros({column})"
    if t == "timestamp_ntz":  # as text: every numeric conversion of NTZ involves the session zone
        return f"cast({column} AS string)"
    if t == "date":
        return f"unix_date({column})"
    return column


def _col(t: str) -> str:
    return "t_" + "".join(c if c.isalnum() else "_" for c in t)


# --- collecting Spark's answers ---------------------------------------------------------------


@pytest.fixture(scope="module")
def docs(spark) -> list[Variant]:
    """Every document as a varlake Variant, in id order (bytes exactly as Spark made them)."""
    exprs = [f"parse_json({sql_str(d)})" for d in JSON_DOCS]
    exprs += SQL_DOCS
    row = spark.sql("SELECT " + ", ".join(f"{e} AS c{i}" for i, e in enumerate(exprs))).collect()[0]
    out = [Variant(bytes(row[i].metadata), bytes(row[i].value)) for i in range(len(exprs))]
    out += [Variant(m, v) for m, v in INJECTED]
    return out


@pytest.fixture(scope="module")
def doc_view(spark, docs) -> str:
    from pyspark.sql.types import VariantVal

    rows = [(i, VariantVal(v.value, v.metadata)) for i, v in enumerate(docs)]
    spark.createDataFrame(rows, "id INT, v VARIANT").createOrReplaceTempView("vlfn_docs")
    paths = ", ".join(sql_str(p) for p in PATHS)
    spark.sql(f"SELECT id, v, p FROM vlfn_docs LATERAL VIEW explode(array({paths})) x AS p").createOrReplaceTempView(
        "vlfn_cells"
    )
    return "vlfn_cells"


def _cell_query(types: list[str]) -> str:
    cols = [
        "id", "p", "variant_get(v, p) AS raw", "is_variant_null(variant_get(v, p)) AS isnull",
        "schema_of_variant(variant_get(v, p)) AS schema",
    ]
    cols += [f"{_canon_sql(f'try_variant_get(v, p, {t!r})', t)} AS {_col(t)}" for t in types]
    return "SELECT " + ", ".join(cols) + " FROM vlfn_cells ORDER BY id, p"


@pytest.fixture(scope="module")
def cells(spark, doc_view) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in spark.sql(_cell_query(TYPES)).collect()]


# --- comparing ------------------------------------------------------------------------------------


def _ntz_micros(text: str) -> int:
    """Epoch micros of Spark's ``yyyy-MM-dd HH:mm:ss[.ffffff]`` text of a TIMESTAMP_NTZ."""
    date, time = text.rsplit(" ", 1)
    sign = -1 if date.startswith("-") else 1
    y, m, d = date.lstrip("+-").split("-")
    seconds, _, frac = time.partition(".")
    hh, mm, ss = seconds.split(":")
    days = days_from_civil(sign * int(y), int(m), int(d))
    return ((days * 24 + int(hh)) * 60 + int(mm)) * 60_000_000 + int(ss) * 1_000_000 + int(frac.ljust(6, "0"))


def _py(value: Any, t: str = "") -> Any:
    """Spark's collected value in comparable form."""
    from pyspark.sql.types import VariantVal

    if t == "timestamp_ntz" and isinstance(value, str):
        return _ntz_micros(value)
    if isinstance(value, VariantVal):
        return ("variant", bytes(value.metadata), bytes(value.value))
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, list):
        return [_py(x) for x in value]
    if isinstance(value, dict):
        return {k: _py(x) for k, x in value.items()}
    if isinstance(value, float):
        return ("float", struct.pack("<d", value)) if value == value else ("float", "nan")
    return value


def _mine(value: Any, t: str) -> Any:
    """varlake's result in the same form as ``_py`` gives Spark's (timestamps as micros...)."""
    if isinstance(value, Variant):
        return ("variant", value.metadata, value.value)
    if isinstance(value, dt.datetime):
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) if value.tzinfo else dt.datetime(1970, 1, 1)
        d = value - epoch
        return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds
    if isinstance(value, dt.date):
        return value.toordinal() - dt.date(1970, 1, 1).toordinal()
    if isinstance(value, list):
        return [_mine(x, t) for x in value]
    if isinstance(value, dict):
        return {k: _mine(x, t) for k, x in value.items()}
    if isinstance(value, bytes):
        return value
    if isinstance(value, float):
        return ("float", struct.pack("<d", value)) if value == value else ("float", "nan")
    return value


_PY_MICROS = (-62135596800000000, 253402300800000000)
_PY_DAYS = (-719162, 2932897)


def _outside_python(spark_value: Any, t: str) -> bool:
    if t == "timestamp_ntz":
        spark_value = _ntz_micros(spark_value)
    if t in ("timestamp", "timestamp_ntz"):
        return not _PY_MICROS[0] <= spark_value < _PY_MICROS[1]
    if t == "date":
        return not _PY_DAYS[0] <= spark_value < _PY_DAYS[1]
    return False


def _would_fail(raw: Variant | None, result: Any, t: str) -> bool:
    """Spark's strict variant_get fails exactly where a cast inside returned NULL for a non-null value."""
    if raw is None or raw.is_null():
        return False
    parsed = parse_type(t)
    if parsed.name == "variant":
        return False
    if result is None:
        return True
    if parsed.name == "array":
        return any(_would_fail(e, r, parsed.element.sql) for e, r in zip(raw.elements(), result))
    if parsed.name == "map":
        return any(_would_fail(raw[k], result[k], parsed.element.sql) for k in raw.keys())
    if parsed.name == "struct":
        fields = {f.name: f.type for f in parsed.fields}
        return any(_would_fail(raw[k], result[k], fields[k].sql) for k in raw.keys() if k in fields)
    return False


def _raw(cell: dict[str, Any]) -> Variant | None:
    r = cell["raw"]
    return None if r is None else Variant(bytes(r.metadata), bytes(r.value))


def test_matrix_is_large(docs, cells) -> None:
    assert len(docs) >= 60 and len(PATHS) >= 15 and len(cells) == len(docs) * len(PATHS)
    found = sum(1 for c in cells if c["raw"] is not None)
    assert found > 120  # plenty of paths resolve, plenty are missing
    assert len(cells) - found > 120


def test_try_variant_get_matches_spark(docs, cells) -> None:
    mismatches = []
    for cell in cells:
        v = docs[cell["id"]]
        for t in TYPES:
            want = cell[_col(t)]
            try:
                got = _mine(try_variant_get(v, cell["p"], t), t)
            except OutOfPythonRange:
                if want is None or not _outside_python(want, t):
                    mismatches.append((cell["id"], cell["p"], t, "raised OutOfPythonRange", want))
                continue
            if got != _py(want, t):
                mismatches.append((cell["id"], cell["p"], t, got, _py(want, t)))
    assert not mismatches, f"{len(mismatches)} cells differ, e.g. {mismatches[:8]}"


def test_variant_get_fails_exactly_where_spark_does(docs, cells) -> None:
    mismatches = []
    for cell in cells:
        v = docs[cell["id"]]
        raw = _raw(cell)
        for t in TYPES:
            want = cell[_col(t)]
            spark_fails = _would_fail(raw, want, t)
            try:
                got = variant_get(v, cell["p"], t)
                if spark_fails:
                    mismatches.append((cell["id"], cell["p"], t, "no error", got))
                elif _mine(got, t) != _py(want, t):
                    mismatches.append((cell["id"], cell["p"], t, got, want))
            except VariantCastError as exc:
                if not spark_fails:
                    mismatches.append((cell["id"], cell["p"], t, "error", str(exc)))
            except OutOfPythonRange:
                pass
    assert not mismatches, f"{len(mismatches)} cells differ, e.g. {mismatches[:8]}"


def test_spark_strict_variant_get_succeeds_wherever_varlake_does(spark, docs, cells) -> None:
    """Run Spark's strict variant_get on exactly the cells varlake accepts: no error may occur."""
    ok: dict[tuple[int, str], list[bool]] = {}
    for cell in cells:
        flags = []
        for t in TYPES:
            try:
                variant_get(docs[cell["id"]], cell["p"], t)
                flags.append(True)
            except (VariantCastError, OutOfPythonRange):
                flags.append(False)
        ok[(cell["id"], cell["p"])] = flags
    assert sum(not f for flags in ok.values() for f in flags) > 500  # failures exist and are excluded
    rows = [(i, p, *flags) for (i, p), flags in ok.items()]
    schema = "id INT, p STRING, " + ", ".join(f"ok{j} BOOLEAN" for j in range(len(TYPES)))
    spark.createDataFrame(rows, schema).createOrReplaceTempView("vlfn_ok")
    cols = [f"count(CASE WHEN ok{j} THEN variant_get(c.v, c.p, {t!r}) END)" for j, t in enumerate(TYPES)]
    counted = spark.sql(
        "SELECT " + ", ".join(cols) + " FROM vlfn_cells c JOIN vlfn_ok o ON c.id = o.id AND c.p = o.p"
    ).collect()[0]
    assert sum(counted) > 800


def test_variant_get_error_messages_match_spark(spark, docs, cells) -> None:
    """One failing cell per kind of target type, run alone in Spark: same value text, same type."""
    checked = 0
    for t in MESSAGE_TYPES:
        for cell in cells:
            try:
                variant_get(docs[cell["id"]], cell["p"], t)
                continue
            except VariantCastError as exc:
                mine = str(exc)
            except OutOfPythonRange:
                continue
            with pytest.raises(Exception) as info:
                spark.sql(f"SELECT variant_get(v, {sql_str(cell['p'])}, {t!r}) FROM vlfn_docs WHERE id = {cell['id']}").collect()
            theirs = str(info.value).split("\n")[0]
            assert "INVALID_VARIANT_CAST" in theirs
            assert theirs.split(" SQLSTATE")[0] in mine, (mine, theirs)
            checked += 1
            break
    assert checked == len(MESSAGE_TYPES)


def test_zone_dependent_casts_follow_the_session_zone(spark, docs, doc_view) -> None:
    spark.conf.set("spark.sql.session.timeZone", ZONE)
    try:
        rows = [r.asDict() for r in spark.sql(_cell_query(ZONE_TYPES)).collect()]
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    mismatches = []
    differs_from_utc = 0
    for cell in rows:
        v = docs[cell["id"]]
        for t in ZONE_TYPES:
            want = cell[_col(t)]
            try:
                got = _mine(try_variant_get(v, cell["p"], t, zone=ZONE), t)
            except OutOfPythonRange:
                continue
            if got != _py(want, t):
                mismatches.append((cell["id"], cell["p"], t, got, want))
            try:
                differs_from_utc += got != _mine(try_variant_get(v, cell["p"], t), t)
            except OutOfPythonRange:
                pass
    assert not mismatches, f"{len(mismatches)} cells differ, e.g. {mismatches[:8]}"
    assert differs_from_utc > 20


def test_schema_and_null_test_match_spark(docs, cells) -> None:
    for cell in cells:
        sub = variant_get(docs[cell["id"]], cell["p"])
        if cell["raw"] is None:
            assert sub is None and schema_of_variant(sub) is None and not is_variant_null(sub)
            continue
        assert is_variant_null(sub) == cell["isnull"], cell
        if sub.primitive_type is None or sub.primitive_type.value not in (17, 18, 19):
            assert schema_of_variant(sub) == cell["schema"], (cell["id"], cell["p"])


def test_schema_of_variant_agg_matches_spark(spark, docs, doc_view) -> None:
    rows = spark.sql(
        "SELECT p, schema_of_variant_agg(variant_get(v, p)) AS s FROM "
        "(SELECT /*+ COALESCE(1) */ * FROM (SELECT * FROM vlfn_cells ORDER BY id)) GROUP BY p"
    ).collect()
    assert len(rows) == len(PATHS)
    for row in rows:
        mine = schema_of_variant_agg(variant_get(d, row["p"]) for d in docs)
        assert mine == row["s"], row["p"]
    everything = spark.sql("SELECT schema_of_variant_agg(v) FROM vlfn_docs").collect()[0][0]
    assert schema_of_variant_agg(docs) == everything == "VARIANT"
    objects = [d for d in docs if d.is_object()]
    object_schema = spark.sql(
        "SELECT schema_of_variant_agg(v) FROM vlfn_docs WHERE schema_of_variant(v) LIKE 'OBJECT%'"
    ).collect()[0][0]
    assert schema_of_variant_agg(objects) == object_schema
    assert object_schema.startswith("OBJECT<")


def test_variant_explode_matches_spark(spark, docs, doc_view) -> None:
    rows = spark.sql(
        "SELECT c.id, c.p, e.pos, e.key, e.value FROM vlfn_cells c, "
        "LATERAL variant_explode_outer(variant_get(c.v, c.p)) e ORDER BY c.id, c.p, e.pos"
    ).collect()
    theirs: dict[tuple[int, str], list[Any]] = {}
    for r in rows:
        theirs.setdefault((r["id"], r["p"]), []).append((r["pos"], r["key"], _py(r["value"])))
    assert sum(1 for rs in theirs.values() if rs[0][0] is not None) > 30
    for (i, p), want in theirs.items():
        sub = variant_get(docs[i], p)
        mine = [(pos, key, None if val is None else _mine(val, "variant")) for pos, key, val in variant_explode_outer(sub)]
        assert mine == want, (i, p)
        assert [r for r in mine if r[0] is not None] == [
            (pos, key, _mine(val, "variant")) for pos, key, val in variant_explode(sub)
        ]


TO_VARIANT_OBJECT_CASES = [
    ({"b": 1, "a": [1.5, None, 3.0]}, "named_struct('b', 1, 'a', array(1.5d, null, 3.0d))"),
    ({"z": {"y": "x", "w": None}, "a": True}, "named_struct('z', named_struct('y', 'x', 'w', cast(null AS string)), 'a', true)"),
    ({"k2": 7, "k1": 300, "k3": 2**40}, "map('k2', 7L, 'k1', 300L, 'k3', 1099511627776L)"),
    ([{"a": Decimal("1.50")}, {"a": Decimal("-0.01")}], "array(named_struct('a', 1.50BD), named_struct('a', -0.01BD))"),
    ({"d": dt.date(2024, 2, 29), "t": dt.datetime(2024, 1, 1, 12, tzinfo=dt.timezone.utc), "n": dt.datetime(2024, 1, 1, 12)},
     "named_struct('d', date'2024-02-29', 't', timestamp'2024-01-01 12:00:00', 'n', timestamp_ntz'2024-01-01 12:00:00')"),
    ({"bin": b"\x00\xff", "s": "long " * 20}, "named_struct('bin', X'00FF', 's', repeat('long ', 20))"),
    ([], "cast(array() AS array<int>)"),
    ({}, "cast(map() AS map<string, int>)"),
]


def test_to_variant_object_matches_spark(spark) -> None:
    exprs = [f"to_variant_object({sql})" for _, sql in TO_VARIANT_OBJECT_CASES]
    exprs.append(
        "to_variant_object(named_struct('b', 1, 'a', parse_json('{\"z\":1,\"y\":[true, {\"b\": 2}]}')))"
    )
    row = spark.sql("SELECT " + ", ".join(f"{e} AS c{i}" for i, e in enumerate(exprs))).collect()[0]
    nested = Variant.from_python({"z": 1, "y": [True, {"b": 2}]})
    cases = [value for value, _ in TO_VARIANT_OBJECT_CASES] + [{"b": 1, "a": nested}]
    for i, value in enumerate(cases):
        mine = to_variant_object(value)
        assert (mine.metadata, mine.value) == (bytes(row[i].metadata), bytes(row[i].value)), value


CAST_TO_VARIANT_CASES = [
    (5, "tinyint", "cast(5 AS tinyint)"),
    (300, "smallint", "cast(300 AS smallint)"),
    (-70000, "int", "-70000"),
    (2**40, "bigint", "1099511627776L"),
    (1, "bigint", "1L"),
    (1.5, "float", "cast(1.5 AS float)"),
    (0.1, "float", "cast(0.1 AS float)"),
    (0.1, "double", "0.1d"),
    (Decimal("1.5"), "decimal(10,2)", "cast(1.5 AS decimal(10,2))"),
    (Decimal("12345678901.5"), "decimal(38,20)", "cast(12345678901.5 AS decimal(38,20))"),
    (Decimal("-7"), "decimal(18,0)", "cast(-7 AS decimal(18,0))"),
    ("hi", "string", "'hi'"),
    (b"\x01", "binary", "X'01'"),
    (True, "boolean", "true"),
    (dt.date(1999, 12, 31), "date", "date'1999-12-31'"),
    (dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.timezone.utc), "timestamp", "timestamp'2024-05-06 07:08:09.123456'"),
    (dt.datetime(2024, 5, 6, 7, 8, 9), "timestamp_ntz", "timestamp_ntz'2024-05-06 07:08:09'"),
    ([1, None, 3], "array<int>", "array(1, null, 3)"),
    ([[1.5], []], "array<array<double>>", "array(array(1.5d), array())"),
]


def test_cast_to_variant_matches_spark(spark) -> None:
    exprs = [f"cast({sql} AS variant)" for _, _, sql in CAST_TO_VARIANT_CASES]
    row = spark.sql("SELECT " + ", ".join(f"{e} AS c{i}" for i, e in enumerate(exprs))).collect()[0]
    for i, (value, t, _) in enumerate(CAST_TO_VARIANT_CASES):
        mine = cast_to_variant(value, t)
        assert (mine.metadata, mine.value) == (bytes(row[i].metadata), bytes(row[i].value)), (value, t)


INVALID_PATHS = ["a", "$.", "$[ 0 ]", "$[-1]", "$[99999999999]", "$['a", "$['a'b']", "$..a", "$[a]", "$.a[", "$ .a"]
VALID_ODD_PATHS = ["$.a b", "$.a]", "$.'a'", "$[\"a'b\"]", "$['a\"b']", "$[00]", "$.é"]


def test_path_grammar_matches_spark(spark) -> None:
    doc = '{"a b": 1, "a]": 2, "\'a\'": 3, "a\'b": 4, "a\\"b": 5, "\u00e9": 6}'
    v = spark.sql(f"SELECT parse_json({sql_str(doc)}) AS v").collect()[0][0]
    mine_doc = Variant(bytes(v.metadata), bytes(v.value))
    for path in INVALID_PATHS:
        with pytest.raises(Exception, match="INVALID_VARIANT_GET_PATH"):
            spark.sql(f"SELECT variant_get(parse_json('1'), {sql_str(path)}, 'int')").collect()
        with pytest.raises(InvalidPathError):
            try_variant_get(mine_doc, path, "int")
    exprs = [f"variant_get(parse_json({sql_str(doc)}), {sql_str(p)}, 'int')" for p in VALID_ODD_PATHS]
    row = spark.sql("SELECT " + ", ".join(exprs)).collect()[0]
    assert [variant_get(mine_doc, p, "int") for p in VALID_ODD_PATHS] == list(row)
    assert any(x is not None for x in row)


def test_float_and_rounding_edges_match_spark(spark) -> None:
    """Numbers chosen to sit on rounding boundaries of float32, doubles and decimals."""
    texts = [
        "0.3000000119", "16777217", "3.4028235677973366e38", "3.4028236e38", "1.401298464324817e-45",
        "7.006492321624085e-46", "9007199254740993", "123456789.125", "2.5", "-2.5", "0.125",
        "1.9999999999999999999", "-99999.995", "1e-46",
    ]
    types = ["float", "double", "decimal(10,2)", "decimal(5,0)", "int", "string", "bigint", "timestamp"]
    exprs = []
    for i, text in enumerate(texts):
        for j, t in enumerate(types):
            get = f"try_variant_get(parse_json({sql_str(text)}), '$', {sql_str(t)})"
            exprs.append(f"{_canon_sql(get, t)} AS c{i}_{j}")
            get = f"try_variant_get(to_variant_object(array({sql_str(text)})), '$[0]', {sql_str(t)})"
            exprs.append(f"{_canon_sql(get, t)} AS s{i}_{j}")
    row = spark.sql("SELECT " + ", ".join(exprs)).collect()[0]
    from varlake.variant import parse_json

    for i, text in enumerate(texts):
        v = parse_json(text)
        s = Variant(b"\x01\x00\x00", encode_string(text))
        for j, t in enumerate(types):
            assert _mine(try_variant_get(v, "$", t), t) == _py(row[f"c{i}_{j}"], t), (text, t)
            assert _mine(try_variant_get(s, "$", t), t) == _py(row[f"s{i}_{j}"], t), (repr(text), t)


def test_special_floats_compare_by_bits() -> None:
    assert _mine(-0.0, "double") != _mine(0.0, "double")
    assert _mine(math.nan, "double") == _py(float("nan"))
