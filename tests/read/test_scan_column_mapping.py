"""Scans of column-mapped tables (PROTOCOL.md "Column Mapping", reader requirements):
files read by physical name (``name`` mode) or Parquet field id (``id`` mode), nested fields
too; partition values and statistics keyed by physical names; columns a file lacks as nulls;
data skipping on the mapped golden tables skips files and never drops a live row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import varlake
from handmade_tables import ID_MODE, ID_MODE_ROWS, add, commit, field, id_mode_table, metadata, protocol, struct
from varlake.errors import ColumnMappingError

from golden_expected import GOLDEN, SKIPPING_LITERALS  # noqa: E402 - one place says where the golden tables are
golden = pytest.mark.usefixtures("golden_tables")

NAME_MODE = {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "9"}


def _check_never_drops(table: varlake.Table, wheres: list[str], key: Any) -> int:
    """Every filtered scan returns exactly the rows of the full scan the filter keeps; returns
    how many files the filters skipped in all."""
    every = table.scan().to_arrow().to_pylist()
    skipped = 0
    for where, keep in wheres:
        got = sorted(table.scan(where).to_arrow().to_pylist(), key=key)
        assert got == sorted([r for r in every if keep(r)], key=key), where
        skipped += len(table.scan(where).plan().skipped)
    return skipped


# --- a name-mode table by hand: rename, drop and re-add, nested, partitioned --------------------


def _name_mode_table(root: Path) -> varlake.Table:
    """v0: id, name, x, s.inner, p (partition) under physical names; v1: ``name`` renamed
    ``label``, ``s.inner`` renamed ``s.deep``, ``x`` dropped; v2: ``x`` re-added (new physical
    name) and a second file written."""
    def schema(*fields: dict) -> dict:
        return struct(*fields)

    s_v0 = struct(field("inner", "integer", 5, "col-inner"))
    s_v1 = struct(field("deep", "integer", 5, "col-inner"))
    v0 = schema(
        field("id", "long", 1, "col-id"), field("name", "string", 2, "col-name"), field("x", "integer", 3, "col-x"),
        field("s", s_v0, 4, "col-s"), field("p", "integer", 6, "col-p"),
    )  # fmt: skip
    f0 = pa.table(
        {
            "col-id": pa.array([0, 1, 2], pa.int64()),
            "col-name": ["a", "b", None],
            "col-x": pa.array([10, 11, 12], pa.int32()),
            "col-s": pa.array([{"col-inner": 5}, None, {"col-inner": 7}], pa.struct([("col-inner", pa.int32())])),
        }
    )
    stats0 = {
        "numRecords": 3,
        "minValues": {"col-id": 0, "col-name": "a", "col-x": 10, "col-s": {"col-inner": 5}},
        "maxValues": {"col-id": 2, "col-name": "b", "col-x": 12, "col-s": {"col-inner": 7}},
        "nullCount": {"col-id": 0, "col-name": 1, "col-x": 0, "col-s": {"col-inner": 1}},
    }
    commit(
        root, 0, protocol(2, 5), metadata(v0, NAME_MODE, ["p"]),
        add(root, "col-p=1/f0.parquet", f0, {"col-p": "1"}, stats0),
    )  # fmt: skip
    v1 = schema(
        field("id", "long", 1, "col-id"), field("label", "string", 2, "col-name"), field("s", s_v1, 4, "col-s"),
        field("p", "integer", 6, "col-p"),
    )  # fmt: skip
    commit(root, 1, metadata(v1, NAME_MODE, ["p"]))
    v2 = schema(
        field("id", "long", 1, "col-id"), field("label", "string", 2, "col-name"), field("s", s_v1, 4, "col-s"),
        field("p", "integer", 6, "col-p"), field("x", "integer", 7, "col-x-again"),
    )  # fmt: skip
    f1 = pa.table(
        {
            "col-id": pa.array([100, 101], pa.int64()),
            "col-name": ["c", "d"],
            "col-s": pa.array([{"col-inner": 9}, {"col-inner": None}], pa.struct([("col-inner", pa.int32())])),
            "col-x-again": pa.array([20, None], pa.int32()),
        }
    )
    stats1 = {
        "numRecords": 2,
        "minValues": {"col-id": 100, "col-name": "c", "col-s": {"col-inner": 9}, "col-x-again": 20},
        "maxValues": {"col-id": 101, "col-name": "d", "col-s": {"col-inner": 9}, "col-x-again": 20},
        "nullCount": {"col-id": 0, "col-name": 0, "col-s": {"col-inner": 1}, "col-x-again": 1},
    }
    commit(root, 2, metadata(v2, NAME_MODE, ["p"]), add(root, "col-p=2/f1.parquet", f1, {"col-p": "2"}, stats1))
    return varlake.Table(root)


NAME_ROWS = [
    # id, label, s, p, x -- the old x (col-x) is gone: x reads null in f0
    (0, "a", {"deep": 5}, 1, None),
    (1, "b", None, 1, None),
    (2, None, {"deep": 7}, 1, None),
    (100, "c", {"deep": 9}, 2, 20),
    (101, "d", {"deep": None}, 2, None),
]


def test_name_mode_rename_drop_and_re_add(tmp_path: Path) -> None:
    table = _name_mode_table(tmp_path / "t")
    out = table.scan().to_arrow()
    assert out.column_names == ["id", "label", "s", "p", "x"]
    assert out.schema.field("s").type == pa.struct([("deep", pa.int32())])
    assert sorted((tuple(r.values()) for r in out.to_pylist()), key=repr) == sorted(NAME_ROWS, key=repr)
    assert table.scan(columns=["x", "label"]).to_arrow().to_pylist()[0].keys() == {"x", "label"}


def test_name_mode_old_versions_read_their_own_names(tmp_path: Path) -> None:
    table = _name_mode_table(tmp_path / "t")
    old = table.scan(version=0).to_arrow()
    assert old.column_names == ["id", "name", "x", "s", "p"]
    assert sorted(old.column("x").to_pylist()) == [10, 11, 12]  # col-x was live then
    assert old.column("s").to_pylist() == [{"inner": 5}, None, {"inner": 7}]


def test_name_mode_skipping_by_physical_stats_and_partitions(tmp_path: Path) -> None:
    table = _name_mode_table(tmp_path / "t")
    assert len(table.scan("id >= 100").plan().skipped_by_stats) == 1
    assert len(table.scan("p = 1").plan().skipped_by_partition) == 1
    assert len(table.scan("s.deep > 8").plan().skipped_by_stats) == 1
    assert len(table.scan("label = 'z'").plan().skipped) == 2
    assert len(table.scan("x = 20").plan().skipped) == 0  # f0 has no stats for x (col-x-again): read
    wheres = [
        ("id >= 100", lambda r: r["id"] >= 100),
        ("p = 1", lambda r: r["p"] == 1),
        ("s.deep > 8", lambda r: r["s"] is not None and r["s"]["deep"] is not None and r["s"]["deep"] > 8),
        ("label = 'b'", lambda r: r["label"] == "b"),
        ("x IS NULL", lambda r: r["x"] is None),
        ("x = 20", lambda r: r["x"] == 20),
        ("label IS NULL OR id > 100", lambda r: r["label"] is None or r["id"] > 100),
    ]
    assert _check_never_drops(table, wheres, key=repr) >= 4


def test_writes_to_mapped_tables_use_physical_names(tmp_path: Path) -> None:
    """Appends after a rename, a drop and a re-add write the current physical names
    (writing is tested in tests/table/test_column_mapped_writes.py)."""
    table = _name_mode_table(tmp_path / "t")
    table.append(pa.table({"id": pa.array([7], pa.int64()), "label": ["e"], "x": pa.array([30], pa.int32())}))
    out = varlake.Table(table.path).scan("id = 7").to_arrow().to_pylist()
    assert out == [{"id": 7, "label": "e", "s": None, "p": None, "x": 30}]
    newest = [a for a in table.files() if a.partition_values == {"col-p": None}]
    assert len(newest) == 1 and '"col-x-again":30' in newest[0].stats and '"col-name":"e"' in newest[0].stats


def test_mapping_mode_ignored_without_the_feature(tmp_path: Path) -> None:
    """A mode property on a protocol without columnMapping is not honoured: display names."""
    root = tmp_path / "t"
    schema = struct(field("id", "long", 1, "col-id"))
    commit(root, 0, protocol(1, 2), metadata(schema, NAME_MODE), add(root, "f.parquet", pa.table({"id": pa.array([1], pa.int64())})))
    assert varlake.Table(root).scan().to_arrow().column("id").to_pylist() == [1]


# --- id mode: resolve by field id, whatever the names ---------------------------------------------


def test_id_mode_resolves_by_field_id(tmp_path: Path) -> None:
    table = varlake.Table(id_mode_table(tmp_path / "t"))
    out = table.scan().to_arrow()
    assert out.column_names == ["a", "s", "l", "gone"]
    assert out.to_pylist() == ID_MODE_ROWS
    assert len(table.scan("a > 8").plan().skipped_by_stats) == 1
    assert table.scan("s.b = 2").to_arrow().column("a").to_pylist() == [8]


def test_id_mode_file_without_field_ids_is_refused(tmp_path: Path) -> None:
    table = varlake.Table(id_mode_table(tmp_path / "t", with_ids=False))
    with pytest.raises(ColumnMappingError, match="f.parquet.*no field ids"):
        table.scan().to_arrow()


def test_id_mode_schema_without_ids_is_named(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema = struct(field("a", "long", None, "col-a"))
    commit(root, 0, protocol(2, 5), metadata(schema, ID_MODE), add(root, "f.parquet", pa.table({"col-a": [1]})))
    with pytest.raises(ColumnMappingError, match="'a' has no integer delta.columnMapping.id"):
        varlake.Table(root).scan().to_arrow()


# --- the golden tables ----------------------------------------------------------------------------

#: the id-mode copy of the all-types table (float and double are never used for skipping)
_ALL_TYPES_LITERALS = {c: v for c, v in SKIPPING_LITERALS.items() if c not in ("as_float", "as_double")}


@golden
@pytest.mark.parametrize("column", sorted(_ALL_TYPES_LITERALS))
def test_golden_id_mode_stats_skip_by_physical_name(column: str) -> None:
    """ScanSuite 'basic data skipping for all types' on the columnmapping-id variant."""
    table = varlake.Table(GOLDEN / "data-skipping-basic-stats-all-types-columnmapping-id")
    value, small, big = _ALL_TYPES_LITERALS[column]
    for where in (f"{column} = {value}", f"{column} >= {value}", f"{column} < {big}"):
        assert len(table.scan(where).plan().tasks) == 1, where
        assert table.scan(where).to_arrow().num_rows == 1, where
    for where in (f"{column} = {small}", f"{column} > {value}", f"{column} <= {small}"):
        assert len(table.scan(where).plan().tasks) == 0, where


@golden
def test_golden_dv_with_column_mapping_skips_and_keeps_live_rows() -> None:
    table = varlake.Table(GOLDEN / "dv-with-columnmapping")
    assert len(table.scan("part = 3").plan().tasks) < len(table.scan().plan().tasks)
    wheres = [
        ("part = 3", lambda r: r["part"] == 3),
        ("col1 > 40", lambda r: r["col1"] > 40),
        ("col1 < 10", lambda r: r["col1"] < 10),
        ("col2 = 'foo1'", lambda r: r["col2"] == "foo1"),
        ("col1 = 4", lambda r: r["col1"] == 4),  # deleted by a DV: stays gone
        ("part = 1 AND col1 >= 31", lambda r: r["part"] == 1 and r["col1"] >= 31),
    ]
    assert _check_never_drops(table, wheres, key=repr) > 0


@golden
def test_golden_name_mode_nested_stats() -> None:
    table = varlake.Table(GOLDEN / "table-with-columnmapping-mode-name")
    assert len(table.scan("nested_struct.ac.aca = 7").plan().tasks) == 0
    assert len(table.scan("nested_struct.aa = '4'").plan().tasks) == 1
    assert len(table.scan("ByteType > 3").plan().tasks) == 1
    assert table.scan("ByteType > 3").to_arrow().column("ByteType").to_pylist() == [4]
    wheres = [
        ("IntegerType <= 1", lambda r: r["IntegerType"] is not None and r["IntegerType"] <= 1),
        ("nested_struct.aa = '3'", lambda r: r["nested_struct"] is not None and r["nested_struct"]["aa"] == "3"),
        ("StringType IS NULL", lambda r: r["StringType"] is None),
    ]
    _check_never_drops(table, wheres, key=repr)


@golden
def test_golden_timestamp_ntz_id_mode_partition_pruning() -> None:
    table = varlake.Table(GOLDEN / "data-reader-timestamp_ntz-id-mode")
    plan = table.scan("tsNtzPartition = TIMESTAMP_NTZ'2013-07-05 17:01:00.123456'").plan()
    assert plan.skipped_by_partition and plan.tasks
    assert sorted(table.scan("tsNtzPartition IS NULL").to_arrow().column("id").to_pylist()) == [6, 7, 8]


@golden
def test_golden_dv_small_column_mapping_skipping() -> None:
    table = varlake.Table(GOLDEN / "table-with-dv-small")
    assert len(table.scan("value > 9").plan().tasks) == 0
    assert table.scan("value >= 8").to_arrow().column("value").to_pylist() == [8]  # 9 is deleted
