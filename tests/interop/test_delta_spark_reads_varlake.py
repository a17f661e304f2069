"""varlake -> delta-spark (issue 31, item 2): Variant tables and partitions.

Each test builds one varlake table holding several kinds at once, then asks the delta-spark
oracle (delta-spark 4.4 on Spark 4.2) to read it, describe it, filter it near the bounds of
varlake's statistics (its data skipping runs on them) and write to it; varlake must then
read exactly what delta-spark reads. The checks are in ``delta_spark_checks``.
"""

from __future__ import annotations

import pytest

import datetime as dt

import varlake
from delta_spark_checks import detail, history, ours, peer_writes, same_filtered, same_rows
from oracles.delta_spark import plain

SHREDDED = {"delta.enableVariantShredding": "true"}
VARIANT_SCHEMA = "id bigint, v variant, s struct<k: string, w: variant>, a array<variant>"


def _nested(value: object) -> dict | None:
    """A Variant below the top level, in its Arrow form (writes encode only top-level values)."""
    if value is None:
        return None
    encoded = varlake.Variant.from_python(value)
    return {"metadata": encoded.metadata, "value": encoded.value}


def _variant_rows(start: int, n: int) -> list[dict]:
    rows = []
    for i in range(start, start + n):
        v: object = {"n": i, "name": f"u{i % 7}", "tags": [i, str(i)], "deep": {"x": i * 1.5, "ok": i % 2 == 0}}
        if i % 11 == 0:
            v = {"n": str(i), "other": None}  # a type conflict on $.n, a path missing elsewhere
        if i % 13 == 0:
            v = None
        rows.append(
            {
                "id": i,
                "v": v,
                "s": None if i % 17 == 0 else {"k": f"k{i % 3}", "w": _nested({"when": dt.date(2024, 1, 1 + i % 28), "i": i})},
                "a": None if i % 19 == 0 else [_nested({"i": i}), _nested(i), None, _nested("s")],
            }
        )
    return rows


def _variant_tables(tmp_path):
    plain_t = varlake.Table.create(tmp_path / "unshredded", VARIANT_SCHEMA)
    shredded = varlake.Table.create(tmp_path / "shredded", VARIANT_SCHEMA, properties=SHREDDED)
    for t in (plain_t, shredded):
        for start in (0, 40, 80):  # three files: skipping has something to skip
            t.append(_variant_rows(start, 40))
    return plain_t, shredded


PREDICATES = [  # near the bounds of the three files (ids 0-39, 40-79, 80-119), on paths and nulls
    "variant_get(v, '$.n', 'int') = 38",
    "variant_get(v, '$.n', 'int') > 79",
    "variant_get(v, '$.n', 'int') <= 0",
    "variant_get(v, '$.n', 'string') = '44'",  # a string in one file, numbers elsewhere
    "variant_get(v, '$.name', 'string') > 'u5'",
    "variant_get(v, '$.deep.x', 'double') > 178.0",
    "variant_get(v, '$.missing', 'int') IS NOT NULL",
    "v IS NULL",
    "variant_get(s.w, '$.when', 'date') = DATE'2024-01-28'",
    "s IS NULL OR id > 118",
]


def test_variant_kinds_read_filter_and_describe(delta_spark, tmp_path):
    for table in _variant_tables(tmp_path):
        rows = same_rows(delta_spark, table)
        assert len(rows) == 120
        assert rows[5]["v"] == {"$variant": '{"deep":{"ok":false,"x":7.5},"n":5,"name":"u5","tags":[5,"5"]}'}
        assert rows[13]["v"] is None and rows[17]["s"] is None and rows[19]["a"] is None
        shredded = table.path.endswith("shredded") and not table.path.endswith("unshredded")
        answers = same_filtered(delta_spark, table, PREDICATES if shredded else PREDICATES[:2] + ["id BETWEEN 39 AND 40"])
        assert answers["variant_get(v, '$.n', 'int') = 38"] == [38]
        if shredded:
            assert answers["variant_get(v, '$.n', 'string') = '44'"] == [44]
        row = detail(delta_spark, table)
        assert row["numFiles"] == 3
        assert {"variantType"} <= set(row["tableFeatures"])
        ops = history(delta_spark, table)
        assert [r["operation"] for r in ops][:3] == ["WRITE"] * 3
    # Spark's own variant functions give the same answers on the shredded and unshredded tables
    agg = (
        "SELECT sum(variant_get(v, '$.n', 'int')) n, count(variant_get(s.w, '$.when', 'date')) d, "
        "sum(variant_get(a[0], '$.i', 'int')) i, count(schema_of_variant(v)) k FROM delta.`{}`"
    )
    assert delta_spark.sql(agg.format(tmp_path / "shredded")) == delta_spark.sql(agg.format(tmp_path / "unshredded"))


@pytest.mark.slow_oracle
def test_variant_tables_written_by_delta_spark_read_by_varlake(delta_spark, tmp_path):
    _, shredded = _variant_tables(tmp_path)
    peer_writes(
        delta_spark,
        shredded,
        insert=(
            "SELECT 1000 + id, parse_json(concat('{\"n\":', id, ',\"name\":\"p\"}')), "
            "named_struct('k', 'p', 'w', parse_json('[1,2]')), array(parse_json('null'), parse_json('\"x\"')) "
            "FROM range(3)"
        ),
        merge_source=(
            f"SELECT id, parse_json('{{\"n\":-1,\"merged\":true}}') v, s, a FROM delta.`{shredded.path}` "
            f"WHERE id % 10 = 0 UNION ALL SELECT 2000, parse_json('{{\"new\":1}}'), NULL, NULL"
        ),
    )
    t = varlake.Table(shredded.path)
    assert t.scan(filter="id = 2000").to_arrow().num_rows == 1
    merged = ours(t, filter="variant_get(v, '$.merged', 'boolean')")
    assert [r["id"] for r in merged] == [*range(0, 120, 10), 1000]  # 1000: delta-spark's own insert
    same_filtered(delta_spark, t, PREDICATES[:4] + ["variant_get(v, '$.n', 'int') = -1", "id >= 1000"])
    # varlake writes again on top of delta-spark's files, and delta-spark reads it
    t.append(_variant_rows(3000, 5))
    t.delete("id = 1001")
    same_rows(delta_spark, t)
    history(delta_spark, t)


SPECIAL = [
    None,
    "",
    " ",
    "  two  ",
    "a/b",
    "100%",
    "%2F",
    "x=y",
    "ünï 😀",
    "a:b",
    "__HIVE_DEFAULT_PARTITION__",
    "{brace}",
    "#hash?",
]


def test_partitions_with_special_values(delta_spark, tmp_path):
    t = varlake.Table.create(
        tmp_path / "parts",
        "id bigint, p string, d date, ts timestamp, n int, v variant",
        partition_by=["p", "d", "ts", "n"],
        properties=SHREDDED,
    )
    rows = []
    for i, p in enumerate(SPECIAL):
        rows.append(
            {
                "id": i,
                "p": p,
                "d": None if i == 3 else dt.date(2024, 2, 29) if i % 2 else dt.date(1969, 12, 31),
                "ts": None if i == 4 else dt.datetime(2024, 3, 10, 2, 30, 15, 123456 if i % 3 else 0, tzinfo=dt.timezone.utc),
                "n": None if i == 5 else i % 3 - 1,
                "v": {"p": p, "i": i},
            }
        )
    t.append(rows)
    same_rows(delta_spark, t)
    row = detail(delta_spark, t)
    assert row["partitionColumns"] == ["p", "d", "ts", "n"]
    assert row["numFiles"] == len(t.files())
    predicates = [
        "p = 'a/b'",
        "p = '100%'",
        "p = 'ünï 😀'",
        "p = '  two  '",
        "p IS NULL",
        "p = ''",
        "d IS NULL",
        "d < DATE'1970-01-01'",
        "ts IS NULL",
        "ts = TIMESTAMP'2024-03-10 02:30:15.123456'",
        "n IS NULL OR n = -1",
        "variant_get(v, '$.i', 'int') > 11",
    ]
    answers = same_filtered(delta_spark, t, predicates)
    assert answers["p IS NULL"] == [0, 1] and answers["p = ''"] == []  # '' is NULL, as Spark writes it
    assert answers["p = '  two  '"] == [3]  # spaces are kept
    assert answers["p = 'a/b'"] == [4]
    peer_writes(
        delta_spark,
        t,
        insert="VALUES (100, 'a/b', DATE'2000-01-01', TIMESTAMP'2000-01-01 00:00:00', 7, parse_json('1')), "
        "(101, NULL, NULL, NULL, NULL, NULL), (102, '', DATE'2024-02-29', NULL, 0, parse_json('{\"p\":\"\"}'))",
        merge_source="SELECT 200 + id id, p, d, ts, n, v FROM delta.`" + str(t.path) + "` WHERE id < 4",
    )
    assert plain(varlake.Table(t.path).scan(filter="id = 101").to_arrow().to_pylist()[0]["p"]) is None
    same_filtered(delta_spark, varlake.Table(t.path), predicates[:6])
