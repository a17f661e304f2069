"""``varlake.Table`` on Hudi tables: the same rows as hudi-rs, filters that skip files by
footer statistics and never drop a matching row, engines' views, time travel, the CLI."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from hudi_tables import LANCE_TABLES, hudi_tables, oracle_read, rows  # noqa: F401
from typer.testing import CliRunner

import varlake
from varlake.cli import app, describe_table
from varlake.errors import UnsupportedHudiFeatureError, VersionNotFoundError
from varlake.write.staging.hudi_format import HudiCore

COW = (
    "cow/v6_simplekeygen_hivestyle_no_metafields",
    "cow/v6_simplekeygen_nonhivestyle_overwritetable",
    "cow/v8_complexkeygen_hivestyle",
    "cow/v8_nonpartitioned",
    "cow/v8_simplekeygen_nonhivestyle",
    "cow/v9_timebasedkeygen_epochmillis",
    "cow/v9_timebasedkeygen_unixtimestamp",
    "cow/v9_txns_complex_nometa",
    "cow/v9_txns_nonpart_nometa",
    "cow/v9_txns_simple_nometa",
)

MOR = (
    "mor/avro/v6_trips_8i3d",
    "mor/avro/v9_timebasedkeygen_nonhivestyle",
    "mor/avro/v9_txns_complex_nometa",
    "mor/avro/v9_txns_nonpart_nometa",
    "mor/avro/v9_txns_simple_nometa",
    "mor/parquet/v6_complexkeygen_hivestyle",
    "mor/parquet/v6_nonpartitioned",
    "mor/parquet/v6_simplekeygen_hivestyle_no_metafields",
    "mor/parquet/v6_simplekeygen_nonhivestyle_overwritetable",
)


def test_table_reads_equal_hudi_rs(hudi_tables: dict[str, Path]) -> None:
    for name in COW + MOR:
        table = varlake.Table(hudi_tables[name])
        assert isinstance(table.core, HudiCore)
        assert rows(table.scan().to_arrow()) == rows(oracle_read(hudi_tables[name])), name
    assert varlake.Table(hudi_tables["cow/v6_empty"]).scan().to_arrow().num_rows == 0


def _literal(value: object) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return f"DATE '{value.isoformat()}'"
    return None


def _holds(op: str, a: object, b: object) -> bool:
    if a is None:
        return False
    return {"=": a == b, "<": a < b, ">=": a >= b}[op]  # type: ignore[operator]


def test_filters_skip_files_and_keep_every_matching_row(hudi_tables: dict[str, Path]) -> None:
    """For each top-level column of a plain type and a value it holds, ``=``, ``<`` and
    ``>=`` give exactly the rows a row-by-row check gives; some plans skip files."""
    skipped = 0
    checked = 0
    for name in COW + MOR:
        table = varlake.Table(hudi_tables[name])
        everything = table.scan().to_arrow().to_pylist()
        if not everything:
            continue
        for column in table.scan().to_arrow().column_names:
            values = sorted({r[column] for r in everything if r[column] is not None and _literal(r[column])}, key=repr)
            if not values or isinstance(values[0], bool):
                continue
            value = values[len(values) // 2]
            for op in ("=", "<", ">="):
                scan = table.scan(filter=f"`{column}` {op} {_literal(value)}")
                got = scan.to_arrow().to_pylist()
                want = [r for r in everything if _holds(op, r[column], value)]
                assert sorted(map(repr, got)) == sorted(map(repr, want)), (name, column, op, value)
                skipped += len(scan.plan().skipped_by_stats)
                checked += 1
    assert checked > 100
    assert skipped > 20


def test_partition_filter_reads_only_its_partition(hudi_tables: dict[str, Path]) -> None:
    table = varlake.Table(hudi_tables["cow/v9_txns_simple_nometa"])
    plan = table.scan(filter="region = 'eu'").plan()
    assert {t.relative_path.split("/")[0] for t in plan.tasks} == {"region=eu"}
    assert len(plan.skipped_by_stats) == 3
    assert set(table.scan(filter="region = 'eu'").to_arrow().column("region").to_pylist()) == {"eu"}


def test_engines(hudi_tables: dict[str, Path]) -> None:
    import duckdb

    table = varlake.Table(hudi_tables["cow/v9_txns_complex_nometa"])
    n = table.scan().to_arrow().num_rows
    assert len(table.scan().to_pandas()) == n
    assert table.to_polars().height == n
    con = duckdb.connect()
    table.to_duckdb(con, "t")
    assert con.execute("select count(*) from t").fetchone()[0] == n
    assert con.execute("select count(*) from t where region = 'us'").fetchone()[0] == sum(
        r == "us" for r in table.scan().to_arrow().column("region").to_pylist()
    )


def test_versions_and_time_travel(hudi_tables: dict[str, Path]) -> None:
    root = hudi_tables["cow/v6_simplekeygen_nonhivestyle_overwritetable"]
    table = varlake.Table(root)
    assert table.version == 2
    history = table.history()
    assert [e.version for e in history] == [2, 1, 0]
    assert [e.operation_parameters["action"] for e in history] == ["replacecommit", "commit", "commit"]
    first_instant = history[-1].operation_parameters["instant"]
    assert table.scan(version=0).to_arrow().num_rows == 3
    assert table.scan(version=1).to_arrow().num_rows == 4
    assert table.scan().to_arrow().num_rows == 1
    assert table.snapshot(timestamp=first_instant).version == 0
    assert table.snapshot(timestamp=dt.datetime(2024, 7, 7, 0, 13, 2, 500000)).version == 1
    with pytest.raises(VersionNotFoundError):
        table.snapshot(3)


def test_writes_and_unsupported_tables_are_refused_by_name(hudi_tables: dict[str, Path]) -> None:
    table = varlake.Table(hudi_tables["cow/v8_nonpartitioned"])
    with pytest.raises(UnsupportedHudiFeatureError, match="writing"):
        table.append(pa.table({"id": [1]}))
    with pytest.raises(UnsupportedHudiFeatureError, match="vacuum"):
        table.vacuum()
    for name in LANCE_TABLES:
        with pytest.raises(UnsupportedHudiFeatureError, match="LANCE"):
            varlake.Table(hudi_tables[name])


def test_cli_describe_and_history(hudi_tables: dict[str, Path]) -> None:
    root = str(hudi_tables["cow/v9_txns_simple_nometa"])
    doc = describe_table(root)
    assert (doc["rows"], doc["files"], doc["version"]) == (12, 5, 11)
    assert doc["properties"]["hoodie.table.type"] == "COPY_ON_WRITE"
    stats = {c["column"]: c for c in doc["column_stats"]}
    assert (stats["region"]["min"], stats["region"]["max"]) == ("apac", "us")
    result = CliRunner().invoke(app, ["history", root, "--format", "json", "--limit", "2"])
    assert result.exit_code == 0, result.output
    entries = json.loads(result.output)
    assert [e["version"] for e in entries] == [11, 10]
    assert entries[1]["operation"] == "CLUSTER"
    empty = describe_table(str(hudi_tables["cow/v6_empty"]))
    assert (empty["version"], empty["files"], empty["rows"]) == (-1, 0, 0)


def test_cli_doctor(hudi_tables: dict[str, Path]) -> None:
    result = CliRunner().invoke(app, ["doctor", str(hudi_tables["cow/v9_txns_simple_nometa"]), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert (doc["files"], doc["rows"]) == (5, 12)


def test_no_delta_table_is_created_over_a_hudi_table(hudi_tables: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    from varlake.errors import TableExistsError

    root = tmp_path / "t"
    shutil.copytree(hudi_tables["cow/v8_nonpartitioned"], root)
    with pytest.raises(TableExistsError, match="Hudi"):
        varlake.Table.create(root, "id int")
    assert not (root / "_delta_log").exists()
    assert isinstance(varlake.Table.create(root, "id int", exist_ok=True).core, HudiCore)
