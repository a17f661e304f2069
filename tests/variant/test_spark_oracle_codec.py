"""The Variant codec against Spark 4.3 itself: ``parse_json`` bytes and ``to_json`` text.

Spark's results are collected in a few DataFrame round trips over the corpus of
tests/corpus.py (hand-written edge cases, >= 2000 seeded random documents and one
document over 16 MiB), then compared document by document. Spark parses with
``try_parse_json`` (the same builder as ``parse_json``; NULL where ``parse_json`` fails,
which one test confirms for a sample of invalid documents).

Known, intentional difference: Spark sorts an object's field ids by UTF-16 code
units, the spec (and varlake) by unsigned UTF-8 bytes. The orders disagree only
when keys hold characters >= U+E000 next to supplementary characters; for such
documents the value bytes differ in field order only, so they are compared
logically (``Variant ==``) and their JSON after re-sorting object members. Spark
4.3 cannot render TIME or nanosecond timestamps at all
(``UNKNOWN_PRIMITIVE_TYPE_IN_VARIANT``); tests/test_codec_json.py covers them.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import struct
import uuid
from collections import Counter
from decimal import Decimal
from typing import Any

import pytest
from corpus import big_document, corpus, duplicate_key_documents, random_documents, utf16_order_differs

import varlake
from varlake import Variant
from varlake.variant import encoder as enc
from varlake.variant.decoder import array_layout, metadata_view, object_layout
from varlake.semantics.numbers import java_double, java_float

pytestmark = pytest.mark.spark

EMPTY_METADATA = b"\x01\x00\x00"
# Zones with odd offsets, DST in both hemispheres, historical LMT offsets with seconds
# (Monrovia, Amsterdam), a skipped day (Apia) and fixed offsets. (Zone rules come from the
# tzdata package, the JVM has its own tzdb: zones whose history IANA revised between the
# two versions, such as Europe/Dublin in 1925, can differ before 1970.)
ZONES = (
    "America/Los_Angeles", "Asia/Kolkata", "Australia/Lord_Howe", "Europe/Amsterdam", "Asia/Kathmandu",
    "Pacific/Chatham", "America/St_Johns", "Europe/Berlin", "Africa/Monrovia", "Pacific/Apia",
    "America/Sao_Paulo", "Etc/GMT+12", "+05:30", "-08:00", "UTC",
)


def sorted_json(text: str) -> Any:
    """JSON text as nested tuples with object members sorted, numbers kept as their text."""

    def pairs(items: list[tuple[str, Any]]) -> tuple:
        return ("{}", tuple(sorted(items)))

    return json.loads(text, object_pairs_hook=pairs, parse_float=str, parse_int=str)


def collect_parsed(spark, texts: list[str]) -> list[tuple[bytes, bytes, str] | None]:  # noqa: ANN001
    """Spark's ``(metadata, value, to_json)`` per text, None where ``try_parse_json`` is NULL."""
    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i int, j string")
    rows = df.selectExpr("i", "try_parse_json(j) as v").selectExpr("i", "v", "to_json(v) as t").collect()
    out: list[tuple[bytes, bytes, str] | None] = [None] * len(texts)
    for row in rows:
        if row.v is not None:
            out[row.i] = (bytes(row.v.metadata), bytes(row.v.value), row.t)
    return out


Oracle = list[tuple[str, str, "tuple[bytes, bytes, str] | None", "Variant | None"]]


@pytest.fixture(scope="module")
def oracle(spark) -> Oracle:  # noqa: ANN001
    """``(name, text, Spark's result, varlake's try_parse_json)`` for the corpus and the big document."""
    docs = list(corpus()) + [big_document()]
    results = collect_parsed(spark, [t for _, t in docs])
    return [(name, text, res, varlake.try_parse_json(text)) for (name, text), res in zip(docs, results)]


def test_corpus_is_large_and_exercises_every_width(oracle) -> None:  # noqa: ANN001
    assert len(random_documents(5)) == 5 and random_documents(3) == random_documents(3)  # seeded
    assert sum(name.startswith("random") for name, _, _, _ in oracle) >= 2000
    widths: Counter[str] = Counter()
    for _, _, res, _ in oracle:
        if res is None:
            continue
        metadata, value, _ = res
        widths[f"meta{metadata_view(metadata).offset_size}"] += 1
        basic = value[0] & 3
        if basic == 2:
            _, id_size, osz, ids, _, _ = object_layout(value, 0)
            widths[f"obj-id{id_size}"] += 1
            widths[f"obj-off{osz}"] += 1
            widths[f"obj-large{int(ids == 5)}"] += 1  # a 4-byte count moves the ids
        elif basic == 3:
            _, osz, offs, _ = array_layout(value, 0)
            widths[f"arr-off{osz}"] += 1
            widths[f"arr-large{int(offs == 5)}"] += 1
    for w in ("meta1", "meta2", "meta3", "obj-id1", "obj-id2", "obj-id3", "obj-off1", "obj-off2", "obj-off3", "obj-off4",
              "obj-large0", "obj-large1", "arr-off1", "arr-off2", "arr-off3", "arr-large0", "arr-large1"):
        assert widths[w] > 0, f"no top-level value with {w}"
    assert sum(res is None for _, _, res, _ in oracle) >= 80  # invalid documents are in


def test_parse_json_matches_spark(oracle) -> None:  # noqa: ANN001
    failures = []
    for name, text, res, mine in oracle:
        if res is None or mine is None:
            if (res is None) != (mine is None):
                failures.append(f"{name}: spark {'fails' if res is None else 'parses'}, varlake {'fails' if mine is None else 'parses'}")
            continue
        metadata, value, _ = res
        if mine.metadata != metadata:
            failures.append(f"{name}: metadata differs")
        elif mine.value != value:
            if not utf16_order_differs(text):
                failures.append(f"{name}: value differs")
            elif mine != Variant(metadata, value):
                failures.append(f"{name}: value differs logically")
            elif mine.is_object():  # field lookups do not depend on the id order
                theirs = Variant(metadata, value)
                if any(theirs[k] != mine[k] for k in mine.keys()):
                    failures.append(f"{name}: a field lookup in Spark's bytes differs")
    assert not failures, "\n".join(failures[:20])


def test_invalid_documents_fail_in_spark_parse_json_too(spark) -> None:  # noqa: ANN001
    """try_parse_json's NULL above stands for an error of parse_json itself."""
    for text in ('{"a":1,"a":2}', "[" * 1001 + "]" * 1001, r'"\ud800"'):
        with pytest.raises(Exception) as info:  # py4j's Java error or PySpark's
            spark.createDataFrame([(text,)], "j string").selectExpr("parse_json(j)").collect()
        assert "MALFORMED_RECORD" in str(info.value) or "VARIANT" in str(info.value)
        with pytest.raises(varlake.VarlakeError):
            varlake.parse_json(text)


def test_to_json_matches_spark(oracle) -> None:  # noqa: ANN001
    failures = []
    for name, text, res, parsed in oracle:
        if res is None or parsed is None:
            continue
        metadata, value, spark_json = res
        if Variant(metadata, value).to_json() != spark_json:
            failures.append(f"{name}: to_json of Spark's bytes differs")
        mine = parsed.to_json()
        if mine != spark_json and not (utf16_order_differs(text) and sorted_json(mine) == sorted_json(spark_json)):
            failures.append(f"{name}: to_json differs: {mine[:80]!r} vs {spark_json[:80]!r}")
    assert not failures, "\n".join(failures[:20])


def test_big_document_uses_four_byte_offsets(oracle) -> None:  # noqa: ANN001
    name, text, res, mine = oracle[-1]
    assert res is not None and mine is not None
    assert (mine.metadata, mine.value) == res[:2]
    assert len(mine.value) > 16 * 1024 * 1024
    assert object_layout(mine.value, 0)[2] == 4
    assert array_layout(mine.get("$.big").value, 0)[1] == 4


def test_duplicate_keys_both_ways(spark) -> None:  # noqa: ANN001
    docs = duplicate_key_documents(300) + ['{"a":{"x":1},"b":3,"a":2}', '{"a":1,"a":1,"a":{"a":[1,{"a":2,"a":3}]}}']
    rejected = collect_parsed(spark, docs)
    assert all(r is None for r in rejected)
    assert all(varlake.try_parse_json(d) is None for d in docs)
    previous = spark.conf.get("spark.sql.variant.allowDuplicateKeys", "false")
    spark.conf.set("spark.sql.variant.allowDuplicateKeys", "true")
    try:
        allowed = collect_parsed(spark, docs)
    finally:
        spark.conf.set("spark.sql.variant.allowDuplicateKeys", previous)
    for text, res in zip(docs, allowed):
        assert res is not None, text
        mine = varlake.parse_json(text, allow_duplicate_keys=True)
        assert mine.metadata == res[0], text
        assert mine.value == res[1] or (utf16_order_differs(text) and mine == Variant(res[0], res[1])), text
        assert mine.to_json() == res[2] or sorted_json(mine.to_json()) == sorted_json(res[2])


# --- typed values built by Spark casts, rendered in many time zones ------------------------------


def _typed_inputs(n: int) -> list[tuple[int, int, str, float, str]]:
    r = random.Random(99)
    rows = []
    for _ in range(n):
        seconds = r.choice([r.randint(-2_208_988_800, 4_102_444_800), r.randint(-62_135_596_800, 253_402_300_799),
                            r.randint(-3_000_000_000, 3_000_000_000)])
        micros = seconds * 1_000_000 + r.choice([0, 500_000, 120_000, r.randrange(1_000_000)])
        days = r.randint(-719_162, 2_932_896)
        blob = bytes(r.getrandbits(8) for _ in range(r.randint(0, 24))).hex()
        number = struct.unpack("<d", struct.pack("<Q", r.getrandbits(64)))[0]
        if number != number or abs(number) == float("inf"):
            number = 0.5
        decimal = f"{r.randint(-10**20, 10**20)}.{r.randrange(10**10):010d}"
        rows.append((micros, days, blob, number, decimal))
    return rows


@pytest.fixture(scope="module")
def typed_variants(spark) -> list[tuple[str, bytes, bytes]]:  # noqa: ANN001
    """``(kind, metadata, value)`` from Spark casts to variant (in UTC), plus varlake-built UUIDs."""
    rows = _typed_inputs(600)
    df = spark.createDataFrame(rows, "m long, d int, h string, f double, s string")
    casts = {
        "timestamp": "cast(timestamp_micros(m) as variant)",
        "timestamp_ntz": "cast(cast(timestamp_micros(m) as timestamp_ntz) as variant)",
        "date": "cast(date_from_unix_date(d) as variant)",
        "binary": "cast(unhex(h) as variant)",
        "float": "cast(cast(f as float) as variant)",
        "double": "cast(f as variant)",
        "decimal": "cast(cast(s as decimal(38, 10)) as variant)",
        "decimal_small": "cast(cast(cast(s as decimal(38, 10)) % 1000 as decimal(8, 3)) as variant)",
    }
    out = df.selectExpr(*[f"{expr} as {kind}" for kind, expr in casts.items()]).collect()
    built = [(kind, bytes(row[kind].metadata), bytes(row[kind].value)) for row in out for kind in casts]
    # Spark's casts produce exactly what varlake's encoder writes for the same values.
    for (micros, days, blob, number, decimal), row in zip(rows, out):
        assert bytes(row["timestamp"].value) == enc.encode_timestamp_micros(micros, True)
        assert bytes(row["timestamp_ntz"].value) == enc.encode_timestamp_micros(micros, False)
        assert bytes(row["date"].value) == enc.encode_date_days(days)
        assert bytes(row["binary"].value) == enc.encode_binary(bytes.fromhex(blob))
        assert bytes(row["double"].value) == enc.encode_double(number)
        assert Variant(bytes(row["decimal"].metadata), bytes(row["decimal"].value)).to_python() == Decimal(decimal)
    r = random.Random(5)
    for _ in range(200):
        built.append(("uuid", EMPTY_METADATA, enc.encode_uuid(uuid.UUID(int=r.getrandbits(128)))))
    for micros in (-(2**63), 2**63 - 1, -62_135_596_800_000_000 - 1, 253_402_300_799_999_999 + 1):
        built.append(("timestamp", EMPTY_METADATA, enc.encode_timestamp_micros(micros, True)))
        built.append(("timestamp_ntz", EMPTY_METADATA, enc.encode_timestamp_micros(micros, False)))
    for days in (-(2**31), 2**31 - 1):
        built.append(("date", EMPTY_METADATA, enc.encode_date_days(days)))
    nested = Variant.from_python({"t": dt.datetime(2021, 3, 28, 1, 30, tzinfo=dt.timezone.utc),
                                  "d": [dt.date(1, 1, 1), dt.date(9999, 12, 31)], "n": dt.datetime(2000, 1, 1, 0, 0, 0, 1)})
    built.append(("object", nested.metadata, nested.value))
    return built


def test_typed_values_render_like_spark_in_every_zone(spark, typed_variants) -> None:  # noqa: ANN001
    from pyspark.sql.types import VariantVal

    df = spark.createDataFrame([(i, VariantVal(v, m)) for i, (_, m, v) in enumerate(typed_variants)], "i int, v variant")
    # One query: to_json's timeZone option stands in for the session time zone.
    columns = [f"to_json(v, map('timeZone', '{zone}')) as z{n}" for n, zone in enumerate(ZONES)]
    rows = df.selectExpr("i", *columns).collect()
    rendered = {zone: {row.i: row[f"z{n}"] for row in rows} for n, zone in enumerate(ZONES)}
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kathmandu")
    try:  # the session time zone is what plain to_json uses
        session = {row.i: row.t for row in df.selectExpr("i", "to_json(v) as t").collect()}
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    assert session == rendered["Asia/Kathmandu"]
    failures = []
    for zone in ZONES:
        for i, (kind, metadata, value) in enumerate(typed_variants):
            mine = Variant(metadata, value).to_json(zone)
            if mine != rendered[zone][i]:
                failures.append(f"{kind} in {zone}: {mine} vs {rendered[zone][i]}")
    assert not failures, "\n".join(failures[:20])


# --- doubles and floats: Java 17's Double.toString / Float.toString --------------------------------


def _random_bit_patterns(n: int, bits: int, seed: int) -> list[int]:
    r = random.Random(seed)
    return [r.getrandbits(bits) for _ in range(n)]


def test_doubles_and_floats_render_like_java(spark) -> None:  # noqa: ANN001
    """20,000 random doubles and floats (all bit patterns, plus integral and short decimal values)."""
    r = random.Random(17)
    doubles = [struct.unpack("<d", struct.pack("<Q", b))[0] for b in _random_bit_patterns(14_000, 64, 1)]
    doubles += [float(r.randint(-(2**63), 2**63)) for _ in range(3000)]
    doubles += [r.randint(-10**7, 10**7) / 10 ** r.randint(0, 9) for _ in range(3000)]
    floats = [struct.unpack("<f", struct.pack("<I", b))[0] for b in _random_bit_patterns(17_000, 32, 2)]
    floats += [float(struct.unpack("<f", struct.pack("<f", float(r.randint(-(2**40), 2**40))))[0]) for _ in range(3000)]
    df = spark.createDataFrame([(i, d, f) for i, (d, f) in enumerate(zip(doubles, floats))], "i int, d double, f double")
    rows = df.selectExpr("i", "cast(d as variant) as v", "to_json(cast(d as variant)) as dj",
                         "to_json(cast(cast(f as float) as variant)) as fj").collect()
    assert len(rows) == 20_000
    failures = []
    for row in rows:
        d, f = doubles[row.i], floats[row.i]
        if bytes(row.v.value) != enc.encode_double(d):
            failures.append(f"double {d!r} encodes differently")
        if Variant(EMPTY_METADATA, enc.encode_double(d)).to_json() != row.dj:
            failures.append(f"double {d!r}: {java_double(d)} vs {row.dj}")
        if Variant(EMPTY_METADATA, enc.encode_float(f)).to_json() != row.fj:
            failures.append(f"float {f!r}: {java_float(f)} vs {row.fj}")
    assert not failures, "\n".join(failures[:20])
