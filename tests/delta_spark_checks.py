"""Checks shared by the varlake -> delta-spark tests (issue 31, item 2): one varlake table
against the delta-spark oracle (``oracles.delta_spark``).

- ``same_rows``: delta-spark reads exactly the rows varlake reads (compared through ``plain``);
- ``same_filtered``: filtered queries give the same answers on both sides (delta-spark skips
  files by varlake's statistics, varlake by its own);
- ``detail`` / ``history``: DESCRIBE DETAIL and DESCRIBE HISTORY, checked against varlake's
  own view of the table;
- ``peer_writes``: delta-spark appends, MERGEs, OPTIMIZEs and VACUUMs the table, after which
  varlake must read exactly the rows delta-spark reads.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

import varlake
from oracles.delta_spark import DeltaSpark, plain


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _escaped(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def ascii_variants(value: Any) -> Any:
    """``value`` with every Variant's JSON text in ASCII, non-ASCII characters as ``\\uXXXX``
    escapes: PySpark's ``VariantVal.toJson`` (how the oracle answers) escapes them, varlake's
    ``to_json`` (as Spark's JVM ``to_json``) writes them as they are; the values are the same."""
    if isinstance(value, dict):
        if set(value) == {"$variant"}:
            return {"$variant": _NON_ASCII.sub(_escaped, value["$variant"])}
        return {k: ascii_variants(v) for k, v in value.items()}
    if isinstance(value, list):
        return [ascii_variants(v) for v in value]
    return value


def ours(table: varlake.Table, filter: str | None = None, key: str = "id") -> list[dict]:
    """varlake's rows (``filter`` applied), sorted by ``key``, in the oracle's plain form."""
    rows = table.scan(filter=filter).to_arrow().to_pylist()
    return sorted((ascii_variants(plain(r)) for r in rows), key=lambda r: (r[key] is None, r[key]))


def theirs(oracle: DeltaSpark, path: str | Path, where: str | None = None, key: str = "id") -> list[dict]:
    query = f"SELECT * FROM delta.`{path}`"
    if where:
        query += f" WHERE {where}"
    return oracle.sql(query + f" ORDER BY {key} NULLS LAST")


def same_rows(oracle: DeltaSpark, table: varlake.Table, key: str = "id") -> list[dict]:
    """Assert delta-spark reads the rows varlake reads; return them."""
    mine = ours(varlake.Table(table.path), key=key)
    spark = theirs(oracle, table.path, key=key)
    if spark != mine:
        diff = next(((a, b) for a, b in zip(spark, mine) if a != b), None)
        raise AssertionError(f"{table.path}: delta-spark {len(spark)} rows, varlake {len(mine)}; first difference {diff}")
    return mine


def same_filtered(
    oracle: DeltaSpark, table: varlake.Table, predicates: Iterable[str | tuple[str, str]], key: str = "id"
) -> dict[str, list[Any]]:
    """For each predicate (SQL text both sides take, or a (varlake, Spark) pair) assert that
    varlake's filtered scan, delta-spark's filtered query (skipping files by varlake's
    statistics) and delta-spark's evaluation of the predicate on every row (no WHERE, so no
    skipping) give the same keys. Two oracle queries in all. Returns the keys per predicate."""
    pairs = [p if isinstance(p, tuple) else (p, p) for p in predicates]
    table = varlake.Table(table.path)
    source = f"delta.`{table.path}`"
    flags = ", ".join(f"coalesce({spark}, false) AS c{i}" for i, (_, spark) in enumerate(pairs))
    every = oracle.sql(f"SELECT {key}, {flags} FROM {source}")
    branches = " UNION ALL ".join(
        f"SELECT {i} AS p, {key} FROM {source} WHERE {spark}" for i, (_, spark) in enumerate(pairs)
    )
    skipped = oracle.sql(branches)
    out: dict[str, list[Any]] = {}
    for i, (mine_text, spark_text) in enumerate(pairs):
        mine = sorted(r[key] for r in table.scan(filter=mine_text, columns=[key]).to_arrow().to_pylist())
        theirs_ = sorted(r[key] for r in skipped if r["p"] == i)
        full = sorted(r[key] for r in every if r[f"c{i}"])
        assert (mine, theirs_) == (full, full), f"{mine_text!r}: varlake {mine}, delta-spark {theirs_}, every row {full}"
        out[mine_text] = mine
    return out


def detail(oracle: DeltaSpark, table: varlake.Table) -> dict:
    """DESCRIBE DETAIL, checked against what varlake says of the table."""
    table = varlake.Table(table.path)
    [row] = oracle.sql(f"DESCRIBE DETAIL delta.`{table.path}`")
    assert row["format"] == "delta"
    assert row["numFiles"] == len(table.files())
    assert row["partitionColumns"] == list(table.partition_columns)
    assert row["minReaderVersion"] == table.protocol.min_reader_version
    assert row["minWriterVersion"] == table.protocol.min_writer_version
    for key, value in table.properties.items():
        assert row["properties"].get(key) == value, (key, row["properties"])
    assert row["sizeInBytes"] == sum(f.size for f in table.files())
    return row


def history(oracle: DeltaSpark, table: varlake.Table) -> list[dict]:
    """DESCRIBE HISTORY: every version, newest first, with varlake's operations."""
    table = varlake.Table(table.path)
    rows = oracle.sql(f"DESCRIBE HISTORY delta.`{table.path}`")
    assert [r["version"] for r in rows] == list(range(table.version, -1, -1))
    mine = {e.version: e for e in table.history()}
    for r in rows:
        entry = mine[r["version"]]
        assert r["operation"] == entry.operation, (r["version"], r["operation"], entry)
    return rows


def peer_writes(
    oracle: DeltaSpark,
    table: varlake.Table,
    insert: str,
    merge_source: str,
    merge_set: str = "*",
    key: str = "id",
) -> list[dict]:
    """delta-spark appends (``insert``: the text after ``INSERT INTO t``), MERGEs
    (``merge_source``: a SELECT giving rows of the table's schema, matched on ``key``),
    OPTIMIZEs and VACUUMs (no retention) the table; after each step varlake must read the
    rows delta-spark reads. Returns the final rows."""
    path = table.path
    target = f"delta.`{path}`"
    oracle.execute(f"INSERT INTO {target} {insert}")
    same_rows(oracle, table, key)
    update = "UPDATE SET *" if merge_set == "*" else f"UPDATE SET {merge_set}"
    oracle.execute(
        f"MERGE INTO {target} t USING ({merge_source}) s ON t.{key} = s.{key} "
        f"WHEN MATCHED THEN {update} WHEN NOT MATCHED THEN INSERT *"
    )
    same_rows(oracle, table, key)
    oracle.execute(f"OPTIMIZE {target}")
    same_rows(oracle, table, key)
    oracle.execute("SET spark.databricks.delta.retentionDurationCheck.enabled = false")
    try:
        oracle.execute(f"VACUUM {target} RETAIN 0 HOURS")
    finally:
        oracle.execute("SET spark.databricks.delta.retentionDurationCheck.enabled = true")
    rows = same_rows(oracle, table, key)
    live = {varlake.Table(path).data_file(f) for f in varlake.Table(path).files()}
    assert all(Path(p).exists() for p in live)
    return rows
