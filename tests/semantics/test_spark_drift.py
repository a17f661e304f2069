"""Drift test: Spark 4.3 is the oracle for ``varlake.semantics``, reached three ways.

The same values rendered as text must agree between (a) the Variant codec
(``variant_get(v, '$', 'string')``), (b) the expression layer (``cast_value`` and
``RowEvaluator`` over ``CAST(x AS STRING) = '...'``) and (c) Spark: >= 10,000 doubles and
floats (1e23, subnormals, signed zeros, NaN, infinities, extremes), decimals, dates and
timestamps, in every time-zone spelling Spark accepts; spellings Spark refuses must be
refused with ``InvalidTimeZoneError``. Each category is one Parquet file and one Spark job.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import struct
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from varlake import Variant
from varlake.errors import ExpressionEvaluationError, InvalidTimeZoneError
from varlake.expr import RowEvaluator, bind, parse_predicate
from varlake.expr.casts import cast_value
from varlake.semantics.zones import SHORT_IDS, region_ids, resolve_zone
from varlake.variant import Float32
from varlake.variant.functions import cast_to_variant, try_variant_get, variant_get

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
RNG_SEED = 20261123


def _double_of_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _float_of_bits(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _doubles(rng: random.Random) -> list[float]:
    special = [
        1e23, 2e23, -1e23, 5e-324, -5e-324, 2.2250738585072014e-308, 2.225073858507201e-308, 0.0, -0.0,
        math.nan, math.inf, -math.inf, 1.7976931348623157e308, -1.7976931348623157e308, 1e7, 9999999.999999998,
        1e-3, 9.999999999999999e-4, 0.1, 0.3, 2.0**63, 2.0**63 - 1024, 2.0**53 + 2, 1.99802253835840973e18,
        4.35e-9, 123456789012345.67, 1e16, 1e21, 1e22, 8.41e21, 5e-310, 1.0, -1.0, 100.0,
    ]
    out = special[:]
    out += [_double_of_bits(rng.getrandbits(64)) for _ in range(4000)]
    out += [rng.uniform(-1, 1) * 10.0 ** rng.randint(-30, 30) for _ in range(2500)]
    out += [round(rng.uniform(-1e6, 1e6), rng.randint(0, 6)) for _ in range(2000)]
    out += [float(rng.randint(-(2**62), 2**62)) for _ in range(1000)]
    out += [10.0 ** k * s for k in range(-320, 309) for s in (1, -1)]
    return out


def _floats(rng: random.Random) -> list[float]:
    special = [1e23, 2e23, 1.4e-45, -1.4e-45, 1.17549435e-38, 1.1754942e-38, 3.4028235e38, -3.4028235e38, 0.0, -0.0,
               math.nan, math.inf, -math.inf, 0.1, 1e7, 1e-3, 9.999999e-4, 16777217.0, 3.3554432e7]
    out = [struct.unpack("<f", struct.pack("<f", x))[0] for x in special]
    out += [_float_of_bits(rng.getrandbits(32)) for _ in range(6000)]
    out += [struct.unpack("<f", struct.pack("<f", rng.uniform(-1, 1) * 10.0 ** rng.randint(-38, 37)))[0] for _ in range(4000)]
    return out


class _Row(dict):
    """A result row: columns by name as keys or attributes."""

    __getattr__ = dict.__getitem__


def _spark_rows(spark, table: pa.Table, path, exprs: list[str]) -> list[_Row]:  # noqa: ANN001
    """One Spark job over ``table`` (written to Parquet at ``path``), fetched as Arrow."""
    pq.write_table(table, path)
    result = spark.read.parquet(str(path)).selectExpr(*exprs).orderBy("i").toArrow()
    return [_Row(r) for r in result.to_pylist()]


def _check(failures: list[str], what: str, mine: str | None, theirs: str | None) -> None:
    if mine != theirs and len(failures) < 30:
        failures.append(f"{what}: varlake {mine!r} vs Spark {theirs!r}")


# --- numbers ----------------------------------------------------------------------------------------------


def test_doubles_and_floats_render_like_spark(spark, tmp_path) -> None:  # noqa: ANN001
    rng = random.Random(RNG_SEED)
    doubles, floats = _doubles(rng), _floats(rng)
    assert len(doubles) >= 10_000 and len(floats) >= 10_000
    n = max(len(doubles), len(floats))
    table = pa.table({
        "i": pa.array(range(n), pa.int32()),
        "d": pa.array([doubles[k] if k < len(doubles) else None for k in range(n)], pa.float64()),
        "f": pa.array([floats[k] if k < len(floats) else None for k in range(n)], pa.float32()),
    })
    rows = _spark_rows(spark, table, tmp_path / "numbers.parquet", [
        "i", "CAST(d AS STRING) AS ds", "CAST(f AS STRING) AS fs",
        "variant_get(CAST(d AS VARIANT), '$', 'string') AS dv", "variant_get(CAST(f AS VARIANT), '$', 'string') AS fv",
    ])
    failures: list[str] = []
    for row in rows:
        k = row.i
        if k < len(doubles):
            d = doubles[k]
            _check(failures, f"double {d!r} CAST", cast_value(d, "double", "string"), row.ds)
            _check(failures, f"double {d!r} codec", variant_get(Variant.from_python(d), "$", "string"), row.ds)
            _check(failures, f"double {d!r} variant_get", row.dv, row.ds)
        if k < len(floats):
            f = floats[k]
            _check(failures, f"float {f!r} CAST", cast_value(f, "float", "string"), row.fs)
            _check(failures, f"float {f!r} codec", variant_get(Variant.from_python(Float32(f)), "$", "string"), row.fs)
            _check(failures, f"float {f!r} variant_get", row.fv, row.fs)
    assert not failures, "\n".join(failures)
    assert rows[0].ds == "9.999999999999999E22"  # 1e23, the text expr used to get wrong (1.0E23)


def test_filters_on_double_text_match_spark(spark, tmp_path) -> None:  # noqa: ANN001
    """``CAST(d AS STRING) = '...'`` selects the same rows in varlake's row evaluator and in Spark."""
    rng = random.Random(RNG_SEED + 1)
    doubles = _doubles(rng)[:3000]
    literals = ["9.999999999999999E22", "1.0E23", "2.0E23", "4.9E-324", "-0.0", "0.0", "NaN", "Infinity", "1.0E7",
                "0.001", "9.999999999999999E-4", "1.99802253835840973E18", "9.223372036854775807E18", "100.0"]
    table = pa.table({"i": pa.array(range(len(doubles)), pa.int32()), "d": pa.array(doubles, pa.float64())})
    exprs = ["i"] + [f"CAST(d AS STRING) = '{lit}' AS p{n}" for n, lit in enumerate(literals)]
    exprs += ["CAST(d AS STRING) LIKE '%E2%' AS plike"]
    rows = _spark_rows(spark, table, tmp_path / "filters.parquet", exprs)
    schema = {("d",): "double"}
    records = [{"d": d} for d in doubles]
    for n, lit in enumerate(literals):
        mine = RowEvaluator(bind(parse_predicate(f"CAST(d AS STRING) = '{lit}'"), schema)).evaluate_rows(records)
        theirs = [row[f"p{n}"] for row in rows]
        assert mine == theirs, f"CAST(d AS STRING) = '{lit}': varlake selects {sum(map(bool, mine))}, Spark {sum(map(bool, theirs))}"
    assert rows[0].p0 and not rows[0].p1  # 1e23 is '9.999999999999999E22', never '1.0E23'


# --- decimals, dates, timestamps ----------------------------------------------------------------------------


def _dec(unscaled: int, scale: int) -> Decimal:
    """``unscaled * 10**-scale`` exactly (no context rounding)."""
    return Decimal((0 if unscaled >= 0 else 1, tuple(map(int, str(abs(unscaled)))), -scale))


def _random_decimal(rng: random.Random, precision: int, scale: int) -> Decimal:
    digits = rng.randint(1, precision)
    return _dec(rng.randint(-(10**digits - 1), 10**digits - 1), scale)


def test_decimals_render_like_spark(spark, tmp_path) -> None:  # noqa: ANN001
    rng = random.Random(RNG_SEED + 2)
    types = {"a": (38, 10), "b": (10, 2), "c": (5, 0), "e": (38, 0), "g": (18, 18)}
    n = 3000
    values = {c: [_random_decimal(rng, p, s) for _ in range(n)] for c, (p, s) in types.items()}
    for c, (p, s) in types.items():  # zeros, tiny and extreme values
        values[c][:4] = [_dec(0, s), _dec(1, s), _dec(10**p - 1, s), _dec(-(10**p - 1), s)]
    table = pa.table({"i": pa.array(range(n), pa.int32()),
                      **{c: pa.array(values[c], pa.decimal128(p, s)) for c, (p, s) in types.items()}})
    exprs = ["i"] + [f"CAST({c} AS STRING) AS {c}s" for c in types] + [f"variant_get(CAST({c} AS VARIANT), '$', 'string') AS {c}v" for c in types]
    rows = _spark_rows(spark, table, tmp_path / "decimals.parquet", exprs)
    failures: list[str] = []
    for row in rows:
        for c, (p, s) in types.items():
            value = values[c][row.i]
            _check(failures, f"decimal({p},{s}) {value} CAST", cast_value(value, f"decimal({p},{s})", "string"), row[f"{c}s"])
            codec = variant_get(cast_to_variant(value, f"decimal({p},{s})"), "$", "string")
            _check(failures, f"decimal({p},{s}) {value} codec", codec, row[f"{c}v"])
    assert not failures, "\n".join(failures)


def _random_datetime(rng: random.Random) -> dt.datetime:
    low = dt.datetime(1, 1, 2).timestamp()
    high = dt.datetime(9999, 12, 30).timestamp()
    micros = rng.randint(int(low * 1e6), int(high * 1e6))
    if rng.random() < 0.5:
        micros -= micros % rng.choice((1_000_000, 1000, 100_000))
    return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)


def test_dates_and_timestamps_render_like_spark(spark, tmp_path) -> None:  # noqa: ANN001
    rng = random.Random(RNG_SEED + 3)
    walls = [dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.datetime(1582, 10, 4),
             dt.datetime(1582, 10, 15), dt.datetime(1970, 1, 1), dt.datetime(1900, 1, 1, 0, 0, 0, 120000)]
    walls += [_random_datetime(rng) for _ in range(4000)]
    n = len(walls)
    table = pa.table({
        "i": pa.array(range(n), pa.int32()),
        "d": pa.array([w.date() for w in walls], pa.date32()),
        "t": pa.array([w.replace(tzinfo=UTC) for w in walls], pa.timestamp("us", tz="UTC")),
        "n": pa.array(walls, pa.timestamp("us")),
    })
    rows = _spark_rows(spark, table, tmp_path / "datetimes.parquet", [
        "i", "CAST(d AS STRING) AS ds", "CAST(t AS STRING) AS ts", "CAST(n AS STRING) AS ns", "typeof(n) AS nt",
    ])
    assert rows[0].nt == "timestamp_ntz"
    failures: list[str] = []
    for row in rows:
        wall = walls[row.i]
        aware = wall.replace(tzinfo=UTC)
        _check(failures, f"date {wall.date()} CAST", cast_value(wall.date(), "date", "string"), row.ds)
        _check(failures, f"date {wall.date()} codec", variant_get(cast_to_variant(wall.date(), "date"), "$", "string"), row.ds)
        _check(failures, f"timestamp {aware} CAST", cast_value(aware, "timestamp", "string"), row.ts)
        _check(failures, f"timestamp {aware} codec", variant_get(cast_to_variant(aware, "timestamp"), "$", "string"), row.ts)
        _check(failures, f"timestamp_ntz {wall} CAST", cast_value(wall, "timestamp_ntz", "string"), row.ns)
        _check(failures, f"timestamp_ntz {wall} codec",
               variant_get(cast_to_variant(wall, "timestamp_ntz"), "$", "string"), row.ns)
    assert not failures, "\n".join(failures)


# --- time zones ------------------------------------------------------------------------------------------

# Instants around DST changes and in several eras (LMT offsets with seconds included).
INSTANTS = [dt.datetime(y, m, d, h, mi, tzinfo=UTC) for y, m, d, h, mi in [
    (1850, 6, 1, 12, 0), (1901, 1, 1, 0, 0), (1945, 8, 15, 3, 30), (1970, 1, 1, 0, 0), (1974, 2, 1, 12, 0),
    (1990, 3, 25, 1, 30), (1999, 12, 31, 23, 59), (2000, 10, 29, 1, 30), (2011, 3, 27, 1, 59), (2014, 10, 26, 0, 30),
    (2016, 3, 13, 10, 0), (2019, 6, 21, 18, 45), (2021, 11, 7, 8, 30), (2023, 1, 1, 0, 0), (2023, 7, 15, 12, 0),
]]
# History IANA revised after the JDK 17 tzdb was cut (Python reads tzdata 2026f): tzdata 2024b
# made CST6CDT & co. links (LMT before 1883), 2025 revised Baja California in 1974. Data, not rules.
TZDB_REVISED = {("CST6CDT", 1850), ("EST5EDT", 1850), ("MST7MDT", 1850), ("PST8PDT", 1850), ("America/Tijuana", 1974),
                ("America/Ensenada", 1974), ("America/Santa_Isabel", 1974), ("Mexico/BajaNorte", 1974)}
OFFSET_SPELLINGS = [
    "Z", "UTC", "GMT", "UT", "+8", "-8", "+08", "+08:00", "-08:30", "+0830", "+08:00:00", "+083045", "-08:30:45",
    "+18:00", "-18:00", "GMT+8", "GMT-08:00", "UTC+08:00", "UTC+8", "UT+1", "UT-0130", "+5:30", "+05:3", "GMT+8:00",
    "UTC-3:30", "GMT+0", "GMT-0", "UTC+00:00", "+0:30",
]
REFUSED_SPELLINGS = [
    "utc", "gmt+8", "Utc", "pst", "UTC+25", "+19:00", "+18:01", "-18:00:01", "Mars/Olympus", "ROC", "x", "",
    " UTC", "UTC ", "GMT+", "+", "UTC+8:0:0", "america/los_angeles", "Europe/Pariss", "+8:", "GMT+08:00:0",
]


def _zone_spellings(spark) -> list[str]:  # noqa: ANN001
    jvm = spark.sparkContext._jvm
    java_regions = set(jvm.java.util.ArrayList(jvm.java.time.ZoneId.getAvailableZoneIds()))
    assert region_ids() == java_regions, (
        f"region ids differ from Java's: only varlake {sorted(region_ids() - java_regions)}, "
        f"only Java {sorted(java_regions - region_ids())}")
    java_short = dict(jvm.java.util.HashMap(jvm.java.time.ZoneId.SHORT_IDS))
    assert SHORT_IDS == java_short
    return sorted(java_regions) + sorted(SHORT_IDS) + OFFSET_SPELLINGS


def test_every_zone_spelling_spark_accepts_gives_the_same_text(spark, tmp_path) -> None:  # noqa: ANN001
    zones = _zone_spellings(spark)
    table = pa.table({"i": pa.array(range(len(INSTANTS)), pa.int32()), "t": pa.array(INSTANTS, pa.timestamp("us", tz="UTC"))})
    # from_utc_timestamp resolves its zone with the same DateTimeUtils.getZoneId as the session zone.
    exprs = ["i"] + [f"CAST(from_utc_timestamp(t, '{z}') AS STRING) AS z{n}" for n, z in enumerate(zones)]
    rows = _spark_rows(spark, table, tmp_path / "zones.parquet", exprs)
    failures: list[str] = []
    for row in rows:
        instant = INSTANTS[row.i]
        variant = cast_to_variant(instant, "timestamp")
        for n, z in enumerate(zones):
            theirs = row[f"z{n}"]
            if (z, instant.year) in TZDB_REVISED:
                continue
            _check(failures, f"{instant} in {z!r} expr", cast_value(instant, "timestamp", "string", tz=z), theirs)
            _check(failures, f"{instant} in {z!r} codec", variant_get(variant, "$", "string", zone=z), theirs)
    assert not failures, f"{len(zones)} zones checked\n" + "\n".join(failures)


def test_session_zone_spellings_match_spark_and_refusals_are_named(spark, tmp_path) -> None:  # noqa: ANN001
    """The real ``spark.sql.session.timeZone`` for the spellings the issue names, and refusals."""
    instant = dt.datetime(2024, 1, 15, 12, 34, 56, 789000, tzinfo=UTC)
    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"t": pa.array([instant], pa.timestamp("us", tz="UTC")), "s": ["2024-07-01 10:00:00"]}), path)
    df = spark.read.parquet(str(path))
    accepted = ["PST", "GMT+8", "UTC+08:00", "+08:00", "Z", "America/Los_Angeles", "Asia/Kolkata", "EST", "+5:30",
                "SystemV/PST8PDT"]
    refused_by_spark: list[str] = []
    try:
        for z in accepted:
            spark.conf.set("spark.sql.session.timeZone", z)
            row = df.selectExpr("CAST(t AS STRING) AS ts", "CAST(CAST(s AS TIMESTAMP) AS STRING) AS back",
                                "CAST(CAST(s AS TIMESTAMP) AS LONG) AS epoch").collect()[0]
            assert cast_value(instant, "timestamp", "string", tz=z) == row.ts, z
            assert variant_get(cast_to_variant(instant, "timestamp"), "$", "string", zone=z) == row.ts, z
            parsed = cast_value("2024-07-01 10:00:00", "string", "timestamp", tz=z)
            assert int(parsed.timestamp()) == row.epoch, z
            assert cast_value(parsed, "timestamp", "string", tz=z) == row.back, z
            mine = RowEvaluator(bind(parse_predicate(f"CAST(t AS STRING) = '{row.ts}'"), {("t",): "timestamp"}, session_tz=z))
            assert mine.evaluate({"t": instant}) is True, z
        for z in REFUSED_SPELLINGS:
            try:
                spark.conf.set("spark.sql.session.timeZone", z)
            except Exception:  # noqa: BLE001 - Spark's INVALID_CONF_VALUE.TIME_ZONE
                refused_by_spark.append(z)
            finally:
                spark.conf.set("spark.sql.session.timeZone", "UTC")
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert refused_by_spark == REFUSED_SPELLINGS, f"Spark accepted {sorted(set(REFUSED_SPELLINGS) - set(refused_by_spark))}"
    for z in REFUSED_SPELLINGS:
        with pytest.raises(InvalidTimeZoneError):
            resolve_zone(z)
        with pytest.raises(InvalidTimeZoneError):
            variant_get(cast_to_variant(instant, "timestamp"), "$", "string", zone=z)
        with pytest.raises(InvalidTimeZoneError):
            cast_value(instant, "timestamp", "string", tz=z)
        with pytest.raises(InvalidTimeZoneError):
            bind(parse_predicate("t IS NULL"), {("t",): "timestamp"}, session_tz=z)
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


def test_strings_parse_to_the_same_instants_as_spark(spark, tmp_path) -> None:  # noqa: ANN001
    """String -> date/timestamp through expr and codec against Spark's TRY_CAST (NULL = refused)."""
    texts = ["2024-01-01", "2024-1-2", "2024-01-01 10:00", "2024-01-01 10:00+02:00", "2024-01-01T10:11:12.1234567Z",
             "2024-01-01 10:11:12+02:00", "2024-06-01 12:00:00 Europe/Paris", "2024-06-01 12:00 Europe/Paris",
             "2024-01-01 10:00:00 PST", "2024-01-01 10:00:00GMT+8", "2024-01-01 10:00:00 UTC+08:00", "2024-01-01 10:00:00 ROC",
             " 2024-03-10 02:30:00 ", "2024-13-01", "2024-02-30", "+2024-01-01", "2024", "2024-07",
             "2024-01-01T", "2024-01-01 25:00:00", "10:11:12", "2024-01-01 10:00:00 Z", "2024-01-01 10:00:00 utc"]
    path = tmp_path / "texts.parquet"
    pq.write_table(pa.table({"i": pa.array(range(len(texts)), pa.int32()), "s": texts}), path)
    rows = spark.read.parquet(str(path)).selectExpr(
        "i", "CAST(try_cast(s AS DATE) AS STRING) AS d", "CAST(try_cast(s AS TIMESTAMP) AS STRING) AS t",
        "CAST(try_cast(s AS TIMESTAMP_NTZ) AS STRING) AS n").orderBy("i").collect()
    failures: list[str] = []
    for row in rows:
        text = texts[row.i]
        if text == "10:11:12":
            continue  # a time without date takes today's date: checked in the unit tests
        for target, theirs in (("date", row.d), ("timestamp", row.t), ("timestamp_ntz", row.n)):
            try:
                mine = cast_value(cast_value(text, "string", target), target, "string")
            except ExpressionEvaluationError:
                mine = None
            _check(failures, f"{text!r} -> {target} expr", mine, theirs)
            codec = try_variant_get(Variant.from_python(text), "$", target)
            codec_text = None if codec is None else cast_value(codec, target, "string")
            _check(failures, f"{text!r} -> {target} codec", codec_text, theirs)
    assert not failures, "\n".join(failures)


def test_iso_date_text_is_accepted_by_every_date_cast_of_spark(spark, tmp_path) -> None:  # noqa: ANN001
    """``ISO_DATE_TEXT`` (what the writer proves a string leaf holds): Spark's TRY_CAST to
    DATE, TIMESTAMP (in zones with odd offsets and DST gaps at midnight) and TIMESTAMP_NTZ
    accepts every text it matches, as the same day; texts it refuses include ones Spark reads."""
    from varlake.semantics.datetime_text import ISO_DATE_TARGETS, is_iso_date_text, string_to_date

    rng = random.Random(RNG_SEED)
    texts = ["0000-01-01", "0000-02-29", "0001-01-01", "1582-10-10", "1900-02-28", "2000-02-29", "9999-12-31",
             "1995-02-29", "1995-04-31", "1995-1-01", " 1995-01-01", "1995-01-01T", "+1995-01-01", "1995-13-01"]
    texts += [f"{rng.randint(0, 9999):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 31):02d}" for _ in range(3000)]
    path = tmp_path / "dates.parquet"
    pq.write_table(pa.table({"i": pa.array(range(len(texts)), pa.int32()), "s": texts}), path)
    assert {"date", "timestamp", "timestamp_ntz"} == ISO_DATE_TARGETS
    failures: list[str] = []
    before = spark.conf.get("spark.sql.session.timeZone")
    for zone in ("UTC", "America/Sao_Paulo", "Asia/Kathmandu", "Pacific/Apia"):
        spark.conf.set("spark.sql.session.timeZone", zone)
        try:
            rows = spark.read.parquet(str(path)).selectExpr(
                "i", "datediff(try_cast(s AS DATE), DATE'1970-01-01') AS d", "try_cast(s AS TIMESTAMP) IS NOT NULL AS t",
                "try_cast(s AS TIMESTAMP_NTZ) IS NOT NULL AS n").collect()
        finally:
            spark.conf.set("spark.sql.session.timeZone", before)
        for row in rows:
            text = texts[row.i]
            if is_iso_date_text(text):
                if not (row.d == string_to_date(text) and row.t and row.n):
                    failures.append(f"{text!r} in {zone}: Spark gives {row.d}, {row.t}, {row.n}")
    assert sum(map(is_iso_date_text, texts)) > 2000
    assert not failures, "\n".join(failures[:20])


def test_iso_date_texts_compare_with_dates_in_the_span_as_their_days(spark, tmp_path) -> None:  # noqa: ANN001
    """``ISO_DATE_SPAN``: Spark's text of every DATE in the span is its ISO text, and for
    ISO date strings ``a``, ``b`` and such a DATE ``d``, ``CAST(a AS DATE) op d`` is
    ``a op CAST(d AS STRING)`` and ``CAST(a AS DATE) op CAST(b AS DATE)`` is ``a op b``
    for every comparison (``leaf_casts.iso_date_text_sql``)."""
    from varlake.semantics.datetime_text import ISO_DATE_SPAN, format_date, is_iso_date_text, string_to_date
    from varlake.spark.reading.leaf_casts import iso_date_text_sql

    rng = random.Random(RNG_SEED)
    first, last = (string_to_date(t) for t in ISO_DATE_SPAN)
    assert first is not None and last is not None and format_date(first) == ISO_DATE_SPAN[0] and format_date(last) == ISO_DATE_SPAN[1]
    edges = [first, first + 1, first + 59, first + 60, last - 1, last, string_to_date("1582-10-04"), string_to_date("1582-10-15"), 0, -1]
    days = edges + [rng.randint(first, last) for _ in range(1500)] + [rng.randint(-1000, 1000) for _ in range(200)]
    texts = [format_date(d) for d in days]
    assert all(map(is_iso_date_text, texts))
    # DATEs outside the span too (years -1, 10000, ...): their text is not ISO, the test says so
    dates = days + [first - 1, last + 1, first - 400, last + 400, first - 10**6, last + 10**6]
    rows = [(i, texts[i % len(texts)], texts[(i * 7 + 3) % len(texts)], dates[(i * 7 + 5) % len(dates)]) for i in range(len(dates))]
    rows += [(len(rows), None, texts[0], days[0]), (len(rows) + 1, texts[1], None, None)]
    path = tmp_path / "pairs.parquet"
    pq.write_table(pa.table({"i": [r[0] for r in rows], "a": [r[1] for r in rows], "b": [r[2] for r in rows],
                             "d": pa.array([r[3] for r in rows], pa.int32())}), path)
    spark.read.parquet(str(path)).selectExpr("i", "a", "b", "date_add(DATE'1970-01-01', d) AS d").createOrReplaceTempView("iso_pairs")
    test, text = iso_date_text_sql("d")
    assert not any(is_iso_date_text(format_date(d)) for d in dates[len(days):])
    checks = [f"CAST(d AS STRING) <=> {text}", "CAST(d AS STRING) <=> format_date_iso"]  # Spark's text is format_date's
    for op in ("=", "<>", "<", "<=", ">", ">=", "<=>"):
        checks.append(f"NOT {test} OR ((try_cast(a AS DATE) {op} d) <=> (a {op} {text}))")
        checks.append(f"(try_cast(a AS DATE) {op} try_cast(b AS DATE)) <=> (a {op} b)")
    checks.append(f"NOT {test} OR ((d BETWEEN try_cast(a AS DATE) AND try_cast(b AS DATE)) <=> ({text} BETWEEN a AND b))")
    formatted = spark.createDataFrame([(r[0], None if r[3] is None else format_date(r[3])) for r in rows], "i int, format_date_iso string")
    frame = spark.table("iso_pairs").join(formatted, "i")
    inside = frame.selectExpr(f"{test} AS inside").where("inside").count()
    assert inside == sum(1 for r in rows if r[3] is not None and first <= r[3] <= last) > 1000
    assert frame.where("d IS NOT NULL").count() - inside >= 4  # some outside
    failed = frame.selectExpr("i", *[f"({c}) AS c{n}" for n, c in enumerate(checks)])
    bad = failed.where(" OR ".join(f"NOT coalesce(c{n}, false)" for n in range(len(checks)))).limit(5).collect()
    assert not bad, (checks, bad)
