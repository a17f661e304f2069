"""``delta.column_mapping``: the mode of a table, physical names and ids (nested too), and the
translation of partition values, statistics and data-file columns to logical names."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from handmade_tables import field, struct
from varlake.delta import constants as C
from varlake.delta.actions import Metadata, Protocol
from varlake.delta.column_mapping import ColumnMapping, column_mapping, mapping_mode, to_table_type
from varlake.delta.schema import parse_schema
from varlake.errors import ColumnMappingError, UnsupportedTypeChangeError

NESTED = struct(
    field("a", "long", 1, "p-a"),
    field("s", struct(field("x", "integer", 3, "p-x"), field("y", "string", 4, "p-y")), 2, "p-s"),
    field("m", {"type": "map", "keyType": "string", "valueType": struct(field("v", "integer", 6, "p-v")), "valueContainsNull": True}, 5, "p-m"),
    field("part", "string", 7, "p-part"),
)  # fmt: skip


def _meta(mode: str | None, schema: dict = NESTED) -> Metadata:
    config = {} if mode is None else {C.PROP_COLUMN_MAPPING_MODE: mode}
    return Metadata(id="t", schema_string=json.dumps(schema), partition_columns=("part",), configuration=config)


def test_mode_needs_the_protocol_feature() -> None:
    assert mapping_mode(Protocol(2, 5), _meta("name")) == "name"
    assert mapping_mode(Protocol(3, 7, ("columnMapping",), ("columnMapping",)), _meta("id")) == "id"
    assert mapping_mode(Protocol(1, 2), _meta("name")) == "none"  # property not honoured
    assert mapping_mode(Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)), _meta("name")) == "none"
    assert mapping_mode(Protocol(2, 5), _meta(None)) == "none"
    with pytest.raises(ColumnMappingError, match="'sideways'"):
        mapping_mode(Protocol(2, 5), _meta("sideways"))


def test_physical_schema_and_paths() -> None:
    schema = parse_schema(json.dumps(NESTED))
    m = ColumnMapping("name", schema)
    assert m.physical_schema.names == ("p-a", "p-s", "p-m", "p-part")
    assert m.physical_path(("s", "y")) == ("p-s", "p-y")
    value = m.physical_schema.fields[2].type.value_type  # type: ignore[union-attr]
    assert value.names == ("p-v",)
    ids = m.file_schema("parquet.field.id")
    assert ids.fields[1].metadata == {}  # name mode: no ids asked for
    ids = ColumnMapping("id", schema).file_schema("parquet.field.id")
    assert ids.fields[1].metadata == {"parquet.field.id": 2}
    assert ids.fields[1].type.fields[1].metadata == {"parquet.field.id": 4}  # type: ignore[union-attr]


def test_partition_values_and_stats_to_logical() -> None:
    schema = parse_schema(json.dumps(NESTED))
    m = column_mapping(Protocol(2, 5), _meta("name"), schema)
    assert m is not None and column_mapping(Protocol(2, 5), _meta("name"), schema) is m  # one per schema
    assert column_mapping(Protocol(1, 2), _meta("name"), schema) is None
    assert m.partition_values({"p-part": "x", "part": "wrong"}, ("part",)) == {"part": "x"}
    assert m.partition_values({}, ("part",)) == {}  # absent stays absent
    stats = json.dumps(
        {
            "numRecords": 3,
            "minValues": {"p-a": 1, "p-s": {"p-x": 5, "p-y": "b"}, "a": 99},
            "maxValues": {"p-a": 9, "p-s": {"p-x": 7, "p-y": "q"}},
            "nullCount": {"p-a": 0, "p-s": {"p-x": 1, "p-y": 0}},
        }
    )
    fs = m.file_stats(stats, {"part": "x"})
    assert fs.num_records == 3
    assert fs.min_values == {("a",): 1, ("s", "x"): 5, ("s", "y"): "b"}
    assert fs.max_values[("s", "x")] == 7
    assert fs.null_count == {("a",): 0, ("s", "x"): 1, ("s", "y"): 0}
    assert fs.partition_values == {"part": "x"}
    assert m.file_stats(json.loads(stats)).min_values == fs.min_values


def test_file_columns_by_name_and_by_id() -> None:
    schema = parse_schema(json.dumps(NESTED))
    by_name = ColumnMapping("name", schema)
    assert by_name.file_columns(["a", "s", "m"], ["p-s", "a", "p-a"], lambda: pytest.fail("not read in name mode"), "f") == {"a": "p-a", "s": "p-s"}
    arrow = pa.schema([pa.field("whatever", pa.int64(), metadata={b"PARQUET:field_id": b"1"}), pa.field("p-s", pa.int32())])
    assert ColumnMapping("id", schema).file_columns(["a", "s"], arrow.names, lambda: arrow, "f") == {"a": "whatever"}
    bare = pa.schema([pa.field("p-a", pa.int64())])
    with pytest.raises(ColumnMappingError, match="f: .*no field ids"):
        ColumnMapping("id", schema).file_columns(["a"], bare.names, lambda: bare, "f")


def test_to_table_type_renames_nested_and_fills_missing() -> None:
    schema = parse_schema(json.dumps(NESTED))
    m = ColumnMapping("name", schema)
    file_s = pa.array([{"p-y": "q", "old": 1}, None], pa.struct([("p-y", pa.string()), ("old", pa.int8())]))
    out = to_table_type(pa.chunked_array([file_s]), schema.field("s").type, m, "f: column 's'")
    assert out.to_pylist() == [{"x": None, "y": "q"}, None]
    file_m = pa.array([[("k", {"p-v": 3})], None], pa.map_(pa.string(), pa.struct([("p-v", pa.int16())])))
    out = to_table_type(pa.chunked_array([file_m]), schema.field("m").type, m, "f: column 'm'")
    assert out.to_pylist() == [[("k", {"v": 3})], None]  # short widened to integer
    bad = pa.array([{"p-x": "7", "p-y": "q"}], pa.struct([("p-x", pa.string()), ("p-y", pa.string())]))
    with pytest.raises(UnsupportedTypeChangeError, match="f: column 's'.x: the file holds string"):
        to_table_type(pa.chunked_array([bad]), schema.field("s").type, m, "f: column 's'")


def test_physical_layout_check_for_name_resolving_readers() -> None:
    schema = parse_schema(json.dumps(NESTED))
    m = ColumnMapping("id", schema)

    def fid(name: str, t: pa.DataType, n: int) -> pa.Field:
        return pa.field(name, t, metadata={b"PARQUET:field_id": str(n).encode()})

    good = pa.schema([fid("p-a", pa.int64(), 1), fid("p-s", pa.struct([fid("p-x", pa.int32(), 3)]), 2)])
    m.check_physical_layout(good, "f")  # p-y, m, part missing: fine
    swapped = pa.schema([fid("p-a", pa.int64(), 1), fid("p-s", pa.struct([fid("p-x", pa.int32(), 4)]), 2)])
    with pytest.raises(ColumnMappingError, match="f: field id 3 .'x'. is stored as None"):
        m.check_physical_layout(swapped, "f")
    with pytest.raises(ColumnMappingError, match="no field ids"):
        m.check_physical_layout(pa.schema([pa.field("p-a", pa.int64())]), "f")
    ColumnMapping("name", schema).check_physical_layout(swapped, "f")  # name mode: nothing to check
