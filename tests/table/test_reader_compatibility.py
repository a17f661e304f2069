"""Tables other Python readers read: ``varlake.compatibility=deltalake`` (``delta.protocol``).

Oracles: ``deltalake`` 1.6 (``DeltaTable.to_pyarrow_table``), Polars (``read_delta`` and
``scan_delta``) and DuckDB over deltalake's Arrow dataset read a compatibility table to
the rows ``Table.scan`` reads, after appends, DELETE, UPDATE, MERGE, OPTIMIZE and a
checkpoint. DuckDB's own ``delta_scan`` is asked too: its extension is downloaded on first
use, so on a machine without the extension repository that test is skipped with the reason.
Default tables give each reader's own refusal, asserted by its name, so a reader that
starts (or stops) reading them shows up here.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from varlake import Table
from varlake.delta import constants as C
from varlake.delta.actions import Protocol
from varlake.errors import InvalidTablePropertyError
from varlake.variant import Variant

deltalake = pytest.importorskip("deltalake")
pl = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")

SCHEMA = "id bigint, p string, n int, ts timestamp_ntz, v variant"
COMPAT = "deltalake"


def _batch(ids: range, tag: str = "a") -> list[dict[str, Any]]:
    return [
        {"id": i, "p": "xy"[i % 2], "n": i * 10, "ts": datetime.datetime(2024, 1, 1) + datetime.timedelta(hours=i),
         "v": {"id": i, "tag": tag, "tags": [tag, i]}}
        for i in ids
    ]  # fmt: skip


def _norm(row: dict[str, Any]) -> tuple:
    """A row as comparable values: a Variant (struct of metadata and value bytes) as its JSON."""
    out = []
    for key in sorted(row):
        value = row[key]
        if isinstance(value, dict) and set(value) == {"metadata", "value"}:
            value = json.dumps(Variant(value["metadata"], value["value"]).to_python(), sort_keys=True, default=str)
        out.append((key, value))
    return tuple(out)


def _rows(table: pa.Table | Any) -> list[tuple]:
    if isinstance(table, pa.RecordBatchReader):  # DuckDB's relation.arrow()
        table = table.read_all()
    elif not isinstance(table, pa.Table):  # a Polars frame
        table = table.to_arrow()
    return sorted((_norm(r) for r in table.to_pylist()), key=repr)


def _varlake(root: Path) -> list[tuple]:
    return _rows(Table(root).scan().to_arrow())


def _deltalake(root: Path) -> list[tuple]:
    return _rows(deltalake.DeltaTable(str(root)).to_pyarrow_table())


def _polars(root: Path) -> list[tuple]:
    eager = _rows(pl.read_delta(str(root)))
    assert _rows(pl.scan_delta(str(root)).collect()) == eager
    return eager


def _duckdb_over_deltalake(root: Path) -> list[tuple]:
    dataset = deltalake.DeltaTable(str(root)).to_pyarrow_dataset()
    con = duckdb.connect()
    con.register("t", dataset)
    return _rows(con.sql("SELECT * FROM t").arrow())


def _check_readers(root: Path) -> list[tuple]:
    mine = _varlake(root)
    assert _deltalake(root) == mine
    assert _polars(root) == mine
    assert _duckdb_over_deltalake(root) == mine
    return mine


def _check_table_stays_compatible(t: Table) -> None:
    snapshot = Table(t.path).snapshot()
    assert snapshot.properties[C.PROP_COMPATIBILITY] == COMPAT
    assert snapshot.protocol.reader_feature_set <= {C.TIMESTAMP_NTZ, C.VARIANT_TYPE}
    assert all(f.deletion_vector is None for f in snapshot.files)
    assert not any(k.startswith("varlake.shredding.") and v for k, v in snapshot.properties.items())


def test_compatibility_table_is_read_by_deltalake_polars_and_duckdb_through_every_change(tmp_path: Path) -> None:
    root = tmp_path / "t"
    ict = {C.PROP_ENABLE_ICT: "true"}  # in-commit timestamps: a writer feature, read by all
    t = Table.create(root, SCHEMA, partition_by=["p"], properties=ict, compatibility=COMPAT)
    assert t.properties[C.PROP_ENABLE_DELETION_VECTORS] == "false"
    assert t.properties[C.PROP_ENABLE_VARIANT_SHREDDING] == "false"
    for start in (0, 10, 20):
        t.append(_batch(range(start, start + 10)))
    assert len(_check_readers(root)) == 30

    t.delete("n < 30 OR v:id::int = 17")
    assert len(_check_readers(root)) == 26
    t.update("id % 5 = 0", {"n": "n + 1", "v": "variant_set(v, '$.tag', 'upd')"})
    rows = _check_readers(root)
    assert sum(1 for r in rows if '"tag": "upd"' in dict(r)["v"]) == 5  # ids 5, 10, 15, 20, 25
    source = _batch(range(25, 35), "merged")
    (
        t.merge(source, on="t.id = s.id")
        .when_matched_update({"v": "s.v", "n": "-1"})
        .when_not_matched_insert_all()
        .execute()
    )
    rows = _check_readers(root)
    assert len(rows) == 31 and sum(1 for r in rows if dict(r)["n"] == -1) == 5
    _check_table_stays_compatible(t)

    t.optimize()
    assert _check_readers(root) == rows
    t.checkpoint()
    assert (root / "_delta_log" / f"{Table(root).version:020d}.checkpoint.parquet").exists()
    t.append(_batch(range(100, 103)))
    assert len(_check_readers(root)) == 34
    t.optimize(cluster_by=["v:id::int"])  # clustering: writer features only (domainMetadata, clustering)
    assert len(_check_readers(root)) == 34
    _check_table_stays_compatible(t)
    # every version deltalake time-travels to reads as varlake's
    for version in (3, 5):
        theirs = _rows(deltalake.DeltaTable(str(root), version=version).to_pyarrow_table())
        assert theirs == _rows(Table(root).scan(version=version).to_arrow())


def test_variant_reads_as_a_struct_of_binaries(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(root, "id bigint, v variant", compatibility=COMPAT)
    t.append([{"id": 1, "v": {"a": 1}}])
    want = pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)])
    assert deltalake.DeltaTable(str(root)).to_pyarrow_table().schema.field("v").type == want
    assert pl.read_delta(str(root)).schema["v"] == pl.Struct({"metadata": pl.Binary, "value": pl.Binary})
    # the files carry no VARIANT annotation (Polars cannot parse it), yet DuckDB's
    # read_parquet and varlake still know the column as a Variant from Spark's schema JSON
    (f,) = t.files()
    assert duckdb.sql(f"SELECT typeof(v) FROM read_parquet('{t.data_file(f)}')").fetchall()[0][0].startswith("STRUCT")
    assert t.scan().to_arrow().schema.field("v").type.extension_name == "arrow.parquet.variant"


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping_is_refused_because_its_readers_read_nulls(tmp_path: Path, mode: str) -> None:
    mapped = {C.PROP_COLUMN_MAPPING_MODE: mode}
    with pytest.raises(InvalidTablePropertyError, match="columnMapping .they read a column-mapped table's columns as nulls"):
        Table.create(tmp_path / "c", "id bigint, n int", properties=mapped, compatibility=COMPAT)
    # why: a column-mapped table (reader version 2, which deltalake accepts) reads as nulls
    root = tmp_path / "default"
    t = Table.create(root, "id bigint, n int", properties={**mapped, C.PROP_ENABLE_DELETION_VECTORS: "false"})
    t.append([{"id": i, "n": i} for i in range(3)])
    assert t.protocol.to_dict() == {"minReaderVersion": 2, "minWriterVersion": 5}
    nulls = [{"id": None, "n": None}] * 3
    assert deltalake.DeltaTable(str(root)).to_pyarrow_table().to_pylist() == nulls
    assert pl.read_delta(str(root)).to_dicts() == nulls
    assert _duckdb_over_deltalake(root) == _rows(pa.Table.from_pylist(nulls))
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [0, 1, 2]


def test_compatibility_is_kept_by_later_commits(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = Table.create(root, "id bigint, v variant", compatibility=COMPAT)
    snapshot = t.snapshot()
    for key, feature in (
        (C.PROP_ENABLE_DELETION_VECTORS, "deletionVectors"),
        (C.PROP_ENABLE_VARIANT_SHREDDING, "variantShredding"),
        ("delta.enableTypeWidening", "typeWidening"),
    ):
        changed = replace(snapshot.metadata, configuration={**snapshot.properties, key: "true"})
        txn = t.log.transaction(snapshot, "SET TBLPROPERTIES").set_metadata(changed)
        with pytest.raises(InvalidTablePropertyError, match=f"cannot read reader table feature {feature} \\(set by {key}=true\\)"):
            txn.commit()
    protocol = Protocol(3, 7, ("deletionVectors", "variantType"), ("deletionVectors", "variantType"))
    with pytest.raises(InvalidTablePropertyError, match="deletionVectors"):
        t.log.transaction(snapshot, "UPGRADE PROTOCOL").set_protocol(protocol).commit()
    assert Table(root).version == 0
    # dropping the property is how a table leaves compatibility
    plain = {k: v for k, v in snapshot.properties.items() if k != C.PROP_COMPATIBILITY}
    t.log.transaction(snapshot, "SET TBLPROPERTIES").set_metadata(replace(snapshot.metadata, configuration=plain)).commit()
    assert C.PROP_COMPATIBILITY not in Table(root).properties


def test_compatibility_refuses_what_its_readers_cannot_read_at_creation(tmp_path: Path) -> None:
    with pytest.raises(InvalidTablePropertyError, match="deletionVectors"):
        Table.create(tmp_path / "a", "id bigint", properties={C.PROP_ENABLE_DELETION_VECTORS: "true"}, compatibility=COMPAT)
    with pytest.raises(InvalidTablePropertyError, match="variantShredding"):
        Table.create(tmp_path / "b", "v variant", properties={C.PROP_ENABLE_VARIANT_SHREDDING: "true"}, compatibility=COMPAT)
    with pytest.raises(InvalidTablePropertyError, match="must be one of: deltalake"):
        Table.create(tmp_path / "c", "id bigint", compatibility="duckdb")
    for name in "abc":
        assert not (tmp_path / name / "_delta_log").exists() or not any((tmp_path / name / "_delta_log").iterdir())
    # the property alone does the same as the keyword
    t = Table.create(tmp_path / "d", "id bigint", properties={C.PROP_COMPATIBILITY: COMPAT})
    assert t.properties[C.PROP_ENABLE_DELETION_VECTORS] == "false"
    assert t.protocol.to_dict() == {"minReaderVersion": 1, "minWriterVersion": 2}


# --- default tables: each reader's named refusal --------------------------------------------------


def test_default_tables_give_each_reader_its_named_refusal(tmp_path: Path) -> None:
    plain = tmp_path / "plain"  # default: deletion vectors on
    t = Table.create(plain, "id bigint, s string")
    t.append([{"id": i, "s": str(i)} for i in range(6)])
    t.delete("id = 2")
    with pytest.raises(deltalake.exceptions.DeltaProtocolError, match="reader feature 'deletionVectors'"):
        deltalake.DeltaTable(str(plain)).to_pyarrow_table()
    with pytest.raises(deltalake.exceptions.DeltaProtocolError, match="reader feature 'deletionVectors'"):
        deltalake.DeltaTable(str(plain)).to_pyarrow_dataset()  # what DuckDB would be handed
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(plain))).execute("SELECT * FROM t")
    assert _rows(pa.table(query.read_all())) == _varlake(plain)  # its DataFusion reader applies them
    assert _polars(plain) == _varlake(plain)  # Polars applies deletion vectors itself

    variant = tmp_path / "variant"  # unshredded, but its files carry the VARIANT annotation
    t = Table.create(variant, "id bigint, v variant", properties={C.PROP_ENABLE_DELETION_VECTORS: "false"})
    t.append([{"id": 1, "v": {"a": 1}}])
    assert _deltalake(variant) == _varlake(variant) == _duckdb_over_deltalake(variant)
    with pytest.raises(pl.exceptions.ComputeError, match="LogicalType union has no variant set"):
        pl.read_delta(str(variant))

    shredded = tmp_path / "shredded"  # as a write creates it: shredding on
    t = Table.create(shredded, "id bigint, v variant", properties={C.PROP_ENABLE_VARIANT_SHREDDING: "true"})
    t.append([{"id": 1, "v": {"a": 1}}])
    with pytest.raises(deltalake.exceptions.DeltaProtocolError, match="reader features: \\{'variantShredding'\\}"):
        deltalake.DeltaTable(str(shredded)).to_pyarrow_table()
    with pytest.raises(deltalake.exceptions.DeltaProtocolError, match="'variantShredding'"):
        deltalake.DeltaTable(str(shredded)).to_pyarrow_dataset()
    with pytest.raises(deltalake.exceptions.DeltaProtocolError, match="'variantShredding'"):
        pl.read_delta(str(shredded))

    widened = tmp_path / "widened"
    Table.create(widened, "id int", properties={"delta.enableTypeWidening": "true"}).append([{"id": 1}])
    with pytest.raises(deltalake.exceptions.DeltaProtocolError, match="'typeWidening'"):
        deltalake.DeltaTable(str(widened)).to_pyarrow_table()
    with pytest.raises(deltalake.exceptions.DeltaProtocolError, match="'typeWidening'"):
        deltalake.DeltaTable(str(widened)).to_pyarrow_dataset()
    with pytest.raises(deltalake.exceptions.DeltaProtocolError, match="'typeWidening'.*polars delta scanner"):
        pl.read_delta(str(widened))


def test_duckdb_delta_scan(tmp_path: Path) -> None:
    con = duckdb.connect()
    try:
        con.sql("INSTALL delta")
        con.sql("LOAD delta")
    except duckdb.Error as exc:  # the extension comes from DuckDB's extension repository
        pytest.skip(f"DuckDB's delta extension cannot be installed here: {str(exc).splitlines()[0]}")
    root = tmp_path / "t"
    t = Table.create(root, "id bigint, p string, n int", partition_by=["p"], compatibility=COMPAT)
    t.append([{"id": i, "p": "xy"[i % 2], "n": i} for i in range(10)])
    t.delete("id = 3")
    t.update("id = 4", {"n": "-1"})
    t.checkpoint()
    theirs = _rows(con.sql(f"SELECT * FROM delta_scan('{root}')").arrow())
    assert theirs == _varlake(root)

