"""varlake reads what delta-spark 4.4 writes around Variant (issue 31, item 3).

``tests/data/delta_spark`` holds tables ``tests/oracles/delta_spark_tables.py`` wrote with
delta-spark 4.4.0 on Spark 4.2.0, each with its ``expected.json`` (delta-spark's rows, and for each
filter on Variant paths its ids and the data files holding them). These tests read the committed
corpus without the oracle; the last one regenerates the tables with the running oracle and reads
them fresh.
"""

from __future__ import annotations

import json
import os
import shutil
from decimal import Decimal
from pathlib import Path
from urllib.parse import unquote

import pytest

import varlake
from oracles.delta_spark import plain

CORPUS = Path(__file__).resolve().parents[1] / "data" / "delta_spark"
GENERATOR = Path(__file__).resolve().parents[1] / "oracles" / "delta_spark_tables.py"
NAMES = sorted(p.name for p in CORPUS.iterdir() if (p / "_delta_log").is_dir())

#: the filters on which delta-spark's own statistics let a reader skip a file (varlake must use them)
MUST_SKIP = {
    "shredded_stats": ["try_variant_get(v, '$.a', 'bigint') > 70", "v:c.d::double < 2.0"],
    "clustered": ["v:a::bigint >= 400"],
}


def by_value(value):
    """A plain row with each Variant's JSON parsed, numbers as ``Decimal``: Spark 4.2 renders a
    decimal with its scale (``0.50``, ``1.0``), Spark 4.3 (and varlake) without trailing zeros
    (``0.5``, ``1``); the values are the same."""
    if isinstance(value, dict):
        if set(value) == {"$variant"}:
            return {"$variant": json.loads(value["$variant"], parse_float=Decimal)}
        return {k: by_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [by_value(v) for v in value]
    return value


def expected_of(path: Path) -> dict:
    return json.loads((path / "expected.json").read_text())


def file_name(add) -> str:
    return os.path.basename(unquote(add.path))


def check_history(table: varlake.Table, theirs: list[list]) -> None:
    """varlake's history has delta-spark's versions and operations; with in-commit timestamps
    also its timestamps (file times change when the corpus is checked out), and time travel by
    each timestamp lands on that version."""
    ours = sorted([e.version, e.timestamp, e.operation] for e in table.history())
    assert [(v, op) for v, _, op in ours] == [(v, op) for v, _, op in theirs]
    if table.properties.get("delta.enableInCommitTimestamps") == "true":
        assert [ms for _, ms, _ in ours] == [ms for _, ms, _ in theirs]
        for version, ms, _ in theirs:
            assert table.snapshot(timestamp=ms).version == version


def check_reads(path: Path) -> None:
    """varlake reads delta-spark's rows, answers each filter as it does, and never skips a file
    holding a matching row."""
    expected = expected_of(path)
    table = varlake.Table(str(path))
    rows = table.scan().to_arrow().sort_by(expected["order_by"]).to_pylist()
    assert by_value([plain(r) for r in rows]) == by_value(expected["rows"]), path.name
    at_one = table.scan(version=1).to_arrow().sort_by(expected["order_by"]).to_pylist()
    assert by_value([plain(r) for r in at_one]) == by_value(expected["rows_at_version_1"]), path.name
    check_history(table, expected["history"])
    every = {file_name(a) for a in table.files()}
    for query in expected["queries"]:
        condition = query["filter"]
        ids = sorted(table.scan(filter=condition, columns=["id"]).to_arrow()["id"].to_pylist())
        assert ids == query["ids"], (path.name, condition)
        kept = {file_name(a) for a in table.files(filter=condition)}
        assert set(query["files"]) <= kept, (path.name, condition, set(query["files"]) - kept)
        assert kept <= every
        if condition in MUST_SKIP.get(path.name, ()):
            assert kept < every, (path.name, condition, "delta-spark's statistics skip nothing")


def test_the_corpus_covers_delta_spark_s_variant_features():
    """The committed tables carry what delta-spark 4.4 writes: its feature names, Variant
    statistics as Z85 per-path objects, a v2 checkpoint with sidecars, deletion vectors."""
    features: set[str] = set()
    for name in NAMES:
        table = varlake.Table(str(CORPUS / name))
        features |= set(table.protocol.reader_features or ()) | set(table.protocol.writer_features or ())
    for feature in (
        "variantType", "variantShredding-preview", "deletionVectors", "changeDataFeed", "rowTracking",
        "inCommitTimestamp", "v2Checkpoint", "clustering", "columnMapping", "typeWidening",
        "identityColumns", "generatedColumns", "checkConstraints", "domainMetadata",
    ):
        assert feature in features, feature
    stats = [json.loads(a.stats) for a in varlake.Table(str(CORPUS / "shredded_stats")).files()]
    bounds = [varlake.decode_variant_stat(s["minValues"]["v"]).to_python() for s in stats if s.get("minValues", {}).get("v")]
    assert any("$['a']" in b and "$['c']['d']" in b for b in bounds), bounds
    log = CORPUS / "shredded_stats" / "_delta_log"
    assert list((log / "_sidecars").glob("*.parquet")) and list(log.glob("*.checkpoint.*.json"))


@pytest.mark.parametrize("name", NAMES)
def test_varlake_reads_delta_spark_s_table(name):
    check_reads(CORPUS / name)


def spark_plain(value):
    """A PySpark value in the oracle's plain form (Variant as its JSON text)."""
    from pyspark.sql import Row

    if isinstance(value, Row):
        return {k: spark_plain(v) for k, v in value.asDict(recursive=False).items()}
    if isinstance(value, list):
        return [spark_plain(v) for v in value]
    if type(value).__name__ == "VariantVal":
        return {"$variant": value.toJson()}
    return plain(value)


def test_varlake_spark_answers_delta_spark_s_filters(spark):
    """Through ``varlake.spark.sql`` (PySpark 4.3) the tables read to delta-spark's rows and the
    same filters give its ids."""
    from varlake import spark as vs

    for name in NAMES:
        path = CORPUS / name
        expected = expected_of(path)
        rows = vs.sql(spark, f"SELECT * FROM {{t}} ORDER BY {expected['order_by']}", t=str(path)).collect()
        assert by_value([spark_plain(r) for r in rows]) == by_value(expected["rows"]), name
        for query in expected["queries"]:
            found = vs.sql(spark, f"SELECT id FROM {{t}} WHERE {query['filter']} ORDER BY id", t=str(path))
            assert [r.id for r in found.collect()] == query["ids"], (name, query["filter"])


def test_varlake_reads_tables_delta_spark_writes_now(delta_spark, tmp_path):
    """The live oracle writes the tables afresh; varlake reads each to delta-spark's answers."""
    out = tmp_path / "delta_spark"
    out.mkdir()
    counts = delta_spark.run(GENERATOR.read_text() + f"\nresult = generate(spark, {str(out)!r})")
    assert sorted(counts) == NAMES
    for name in NAMES:
        check_reads(out / name)
        fresh, committed = expected_of(out / name), expected_of(CORPUS / name)
        assert fresh["rows"] == committed["rows"] and fresh["queries"] != [], name
        assert [q["ids"] for q in fresh["queries"]] == [q["ids"] for q in committed["queries"]], name
    shutil.rmtree(out)
