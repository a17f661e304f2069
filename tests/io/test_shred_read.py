"""read_parquet / unshred_variant: every shredded type, objects, arrays, layouts and invalid files."""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import test_shred_read_support as support
from test_shred_read_support import SQL_NULL

from varlake.errors import (
    InvalidShreddedLayoutError,
    ParquetFooterError,
    StorageFileNotFoundError,
    UnknownColumnError,
    VarlakeError,
)
from varlake.io.parquet_read import SPARK_ROW_METADATA_KEY, read_parquet
from varlake.io.thrift_footer import PhysicalType, parse_file_schema, read_footer_bytes, read_schema
from varlake.shred import UNSHREDDED_TYPE, LeafKind, ObjectLayout, recognise_layout, unshred_variant
from varlake.shred.arrow_extension import VariantExtensionType

VARIANT_OUT = VariantExtensionType(UNSHREDDED_TYPE)  # what read_parquet hands out
from varlake.variant import TimestampNanos, Variant
from varlake.variant.temporal import Float32

UTC = dt.timezone.utc


def _roundtrip(tmp_path: Path, values: list[Any], t: pa.DataType | None, typed_first: bool = False, **kw: Any) -> list[Variant | None]:
    column = support.shredded_column(values, t, typed_first)
    path = support.write_variant_file(tmp_path / "f.parquet", column, **kw)
    table = read_parquet(path, variant_columns=["v"])
    assert table.schema.field("v").type == VARIANT_OUT
    return support.as_variants(table.column("v"))


# --- every shredded primitive type -------------------------------------------------------------

PRIMITIVE_CASES: list[tuple[LeafKind, pa.DataType, list[Any]]] = [
    (LeafKind.BOOLEAN, pa.bool_(), [True, False]),
    (LeafKind.INT8, pa.int8(), [-128, 0, 127]),
    (LeafKind.INT16, pa.int16(), [-32768, 1234, 32767]),
    (LeafKind.INT32, pa.int32(), [-(2**31), 12345, 2**31 - 1]),
    (LeafKind.INT64, pa.int64(), [-(2**63), -9876543210, 2**63 - 1]),
    (LeafKind.FLOAT, pa.float32(), [Float32(10.5), Float32(-0.0), Float32(float("inf"))]),
    (LeafKind.DOUBLE, pa.float64(), [14.3, -1e300, float("nan")]),
    (LeafKind.DECIMAL4, pa.decimal128(9, 2), [Decimal("-12345.67"), Decimal("0.01"), Decimal("9999999.99")]),
    (LeafKind.DECIMAL8, pa.decimal128(18, 4), [Decimal("12345678901234.5678"), Decimal("-0.0001")]),
    (LeafKind.DECIMAL16, pa.decimal128(38, 10), [Decimal("9876543210987654321098765432.1234567890"), Decimal("-1")]),
    (LeafKind.DATE, pa.date32(), [dt.date(1957, 11, 7), dt.date(2024, 2, 29)]),
    (LeafKind.TIME, pa.time64("us"), [dt.time(0, 0), dt.time(12, 33, 54, 123456), dt.time(23, 59, 59, 999999)]),
    (LeafKind.TIMESTAMP, pa.timestamp("us", tz="UTC"), [dt.datetime(2024, 11, 7, 12, 33, 54, 123456, tzinfo=UTC), dt.datetime(1957, 1, 1, tzinfo=UTC)]),
    (LeafKind.TIMESTAMP_NTZ, pa.timestamp("us"), [dt.datetime(2024, 11, 7, 12, 33, 54, 123456), dt.datetime(1900, 1, 1)]),
    (LeafKind.TIMESTAMP_NANOS, pa.timestamp("ns", tz="UTC"), [TimestampNanos(1_730_982_834_123_456_789, True), TimestampNanos(-5, True)]),
    (LeafKind.TIMESTAMP_NTZ_NANOS, pa.timestamp("ns"), [TimestampNanos(1_730_982_834_123_456_789, False)]),
    (LeafKind.STRING, pa.string(), ["", "iceberg", "x" * 63, "y" * 64, "ü" * 300]),
    (LeafKind.BINARY, pa.binary(), [b"", b"\x0a\x0b\x0c\x0d", b"z" * 1000]),
    (LeafKind.UUID, pa.uuid(), [uuid.UUID("f24f9b64-81fa-49d1-b74e-8c09a6e31c56"), uuid.UUID(int=0)]),
]


@pytest.mark.parametrize("kind,arrow_type,good", PRIMITIVE_CASES, ids=[c[0].name for c in PRIMITIVE_CASES])
def test_every_shredded_primitive_type(tmp_path: Path, kind: LeafKind, arrow_type: pa.DataType, good: list[Any]) -> None:
    """Typed values, values of another type (kept in `value`), Variant null and SQL NULL rows."""
    others = [None, {"a": 1}, [1, 2], "n/a" if kind != LeafKind.STRING else 7, 3.25 if kind != LeafKind.DOUBLE else "3.25"]
    values = good + others + [SQL_NULL]
    got = _roundtrip(tmp_path, values, arrow_type, store_decimal_as_integer=True)
    assert got == support.expected_variants(values)
    # the typed rows really were shredded, as the kind the spec's table gives
    raw = pq.read_table(tmp_path / "f.parquet").column("v").combine_chunks().field("typed_value")
    assert raw.null_count == len(values) - len(good)
    layout = recognise_layout(pq.read_schema(tmp_path / "f.parquet").field("v").type)
    assert layout.root.typed.kind == kind  # type: ignore[union-attr]


def test_decimals_are_stored_in_int32_int64_and_fixed_len_byte_array(tmp_path: Path) -> None:
    values = [{"d4": Decimal("1.25"), "d8": Decimal("123456789.0001"), "d16": Decimal("1.0000000001")}]
    t = pa.struct([("d4", pa.decimal128(9, 2)), ("d8", pa.decimal128(18, 4)), ("d16", pa.decimal128(38, 10))])
    assert _roundtrip(tmp_path, values, t, store_decimal_as_integer=True) == support.expected_variants(values)
    with open(tmp_path / "f.parquet", "rb") as h:
        root = read_schema(h, os.path.getsize(tmp_path / "f.parquet"), "f")
    physical = {leaf.path[-2]: leaf.physical_type for leaf in root.leaves() if leaf.name == "typed_value"}
    assert physical == {"d4": PhysicalType.INT32, "d8": PhysicalType.INT64, "d16": PhysicalType.FIXED_LEN_BYTE_ARRAY}


def test_perfectly_shredded_int64_becomes_nine_byte_values() -> None:
    meta = pa.array([b"\x01\x00\x00"] * 3, pa.binary())
    group = pa.StructArray.from_arrays(
        [meta, pa.nulls(3, pa.binary()), pa.array([1, -2, 2**40], pa.int64())], ["metadata", "value", "typed_value"]
    )
    out = unshred_variant(group).field("value").to_pylist()
    assert out == [b"\x18" + v.to_bytes(8, "little", signed=True) for v in (1, -2, 2**40)]


def test_short_and_long_strings_use_the_right_headers() -> None:
    meta = pa.array([b"\x01\x00\x00"] * 2, pa.binary())
    group = pa.StructArray.from_arrays([meta, pa.array(["ab", "x" * 64])], ["metadata", "typed_value"])
    out = unshred_variant(group).field("value").to_pylist()
    assert out == [b"\x09ab", b"\x40" + (64).to_bytes(4, "little") + b"x" * 64]


# --- objects and arrays ---------------------------------------------------------------------------

EVENT = pa.struct([("event_type", pa.string()), ("event_ts", pa.timestamp("us", tz="UTC"))])


def test_spec_event_table(tmp_path: Path) -> None:
    """The rows of VariantShredding.md's object table (valid ones)."""
    ts = dt.datetime(2024, 10, 24, 18, 21, 54, 937000, tzinfo=UTC)
    values = [
        {"event_type": "noop", "event_ts": ts},
        {"event_type": "login", "event_ts": ts, "email": "user@example.com"},
        {"error_msg": "malformed: ..."},
        "malformed: not an object",
        {"event_ts": ts, "click": "_button"},
        {"event_type": None, "event_ts": ts},
        {"event_type": "noop", "event_ts": "2024-10-24"},
        {},
        None,
        SQL_NULL,
    ]
    assert _roundtrip(tmp_path, values, EVENT) == support.expected_variants(values)


def test_missing_field_differs_from_explicit_null(tmp_path: Path) -> None:
    values = [{"a": None}, {}, {"a": 1}]
    got = _roundtrip(tmp_path, values, pa.struct([("a", pa.int64())]))
    assert got[0].keys() == ["a"] and got[0]["a"].is_null()
    assert got[1].keys() == []
    raw = pq.read_table(tmp_path / "f.parquet").column("v").to_pylist()
    assert raw[0]["typed_value"]["a"] == {"value": b"\x00", "typed_value": None}
    assert raw[1]["typed_value"]["a"] == {"value": None, "typed_value": None}


def test_partially_shredded_objects_merge_with_the_residual(tmp_path: Path) -> None:
    values = [
        {"a": 1, "z": "residual", "b": {"c": 2, "d": [1, "x"]}},
        {"y": {"deep": True}, "b": {"d": 5}},
        {"a": "not an int", "b": "not an object"},
    ]
    t = pa.struct([("a", pa.int64()), ("b", pa.struct([("c", pa.int64())]))])
    got = _roundtrip(tmp_path, values, t)
    assert got == support.expected_variants(values)
    for v in got:
        v.validate()  # sorted field ids, offsets and sizes are all well formed


def test_nested_arrays_of_objects(tmp_path: Path) -> None:
    values = [
        [{"a": [1, 2, 3], "b": 100}, {"a": [4, 5, 6], "b": 200}],
        [{"a": [1, 2, 3], "b": 100, "c": "unexpected"}, {"a": [4, 5, 6], "b": 200}, "not an object"],
        [],
        [[], [None], {"a": "x"}],
        {"not": "an array"},
    ]
    t = pa.list_(pa.struct([("a", pa.list_(pa.int64())), ("b", pa.int64())]))
    assert _roundtrip(tmp_path, values, t) == support.expected_variants(values)


def test_large_containers_use_wide_headers(tmp_path: Path) -> None:
    """More than 255 elements/fields and > 64 KiB of data switch to 4-byte counts and wider offsets."""
    big_list = [f"s{i}" * 50 for i in range(600)]
    big_obj = {f"k{i:04d}": i for i in range(300)}
    values = [big_list, {"o": big_obj, "l": big_list}]
    t = pa.struct([("o", pa.struct([(f"k{i:04d}", pa.int64()) for i in range(300)])), ("l", pa.list_(pa.string()))])
    got = _roundtrip(tmp_path, [values[1]], t)
    assert got == support.expected_variants([values[1]])
    assert _roundtrip(tmp_path, [values[0]], pa.list_(pa.string())) == support.expected_variants([values[0]])
    got[0].validate()


def test_either_child_order(tmp_path: Path) -> None:
    values = [{"a": 1, "b": ["x", 2]}, "s", {"b": []}]
    t = pa.struct([("a", pa.int32()), ("b", pa.list_(pa.string()))])
    column = support.shredded_column(values, t, typed_first=True)
    assert column.type.names == ["metadata", "typed_value", "value"]
    assert _roundtrip(tmp_path, values, t, typed_first=True) == support.expected_variants(values)


def test_files_without_value_or_typed_value_columns(tmp_path: Path) -> None:
    ints = pa.array([1, None, 3], pa.int64())
    meta = pa.array([b"\x01\x00\x00"] * 3, pa.binary())
    no_value = pa.StructArray.from_arrays([meta, ints], ["metadata", "typed_value"])
    no_typed = pa.StructArray.from_arrays([meta, pa.array([b"\x0c\x01", b"\x00", b"\x0c\x03"])], ["metadata", "value"])
    for name, group in (("no_value", no_value), ("no_typed", no_typed)):
        path = support.write_variant_file(tmp_path / f"{name}.parquet", group)
        got = support.as_variants(read_parquet(path, variant_columns=["v"]).column("v"))
        expected_middle = Variant.null()  # missing top-level value reads as Variant null
        assert got == [Variant.from_python(1), expected_middle, Variant.from_python(3)]


def test_element_without_value_column(tmp_path: Path) -> None:
    elem = pa.struct([pa.field("typed_value", pa.string())])
    group_type = pa.struct([pa.field("metadata", pa.binary(), False), ("typed_value", pa.list_(pa.field("element", elem, False)))])
    group = pa.array([{"metadata": b"\x01\x00\x00", "typed_value": [{"typed_value": "a"}, {"typed_value": "b"}]}], group_type)
    path = support.write_variant_file(tmp_path / "f.parquet", group)
    assert support.as_variants(read_parquet(path, variant_columns=["v"]).column("v")) == [Variant.from_python(["a", "b"])]


def test_underscore_fields_are_ignored_and_unknown_fields_rejected(tmp_path: Path) -> None:
    meta = pa.array([b"\x01\x00\x00"], pa.binary())
    ok = pa.StructArray.from_arrays([meta, pa.array([b"\x0c\x07"]), pa.array([1])], ["metadata", "value", "_spark_extra"])
    assert support.as_variants(unshred_variant(ok)) == [Variant.from_python(7)]
    bad = pa.StructArray.from_arrays([meta, pa.array([b"\x0c\x07"]), pa.array([1])], ["metadata", "value", "extra"])
    path = support.write_variant_file(tmp_path / "f.parquet", bad)
    with pytest.raises(InvalidShreddedLayoutError, match=r"f\.parquet: column 'v', path \$: unexpected field 'extra'"):
        read_parquet(path, variant_columns=["v"])


def test_in_memory_children_of_null_parents_are_ignored() -> None:
    """Arrow may keep arbitrary child values under a null parent; they must not leak or raise."""
    a_group = pa.StructArray.from_arrays([pa.array([None, b"\x0c\x02"]), pa.array([1, 9], pa.int64())], ["value", "typed_value"])
    typed = pa.StructArray.from_arrays([a_group], ["a"], mask=pa.array([False, True]))
    meta = pa.array([b"\x01\x01\x00\x01a"] * 2, pa.binary())
    group = pa.StructArray.from_arrays([meta, pa.array([None, b"\x0c\x05"]), typed], ["metadata", "value", "typed_value"])
    assert support.as_variants(unshred_variant(group)) == [Variant.from_python({"a": 1}), Variant.from_python(5)]


# --- invalid data ------------------------------------------------------------------------------------


def _group(values: list[bytes | None], typed: pa.Array, meta: bytes = b"\x01\x00\x00") -> pa.StructArray:
    n = len(values)
    return pa.StructArray.from_arrays([pa.array([meta] * n, pa.binary()), pa.array(values, pa.binary()), typed], ["metadata", "value", "typed_value"])


def test_both_value_and_typed_value_for_a_primitive_raises(tmp_path: Path) -> None:
    group = _group([None, None, b"\x0c\x01"], pa.array([1, 2, 3], pa.int64()))
    path = support.write_variant_file(tmp_path / "bad.parquet", group, row_group_size=2)
    with pytest.raises(InvalidShreddedLayoutError) as info:
        read_parquet(path, variant_columns=["v"])
    msg = str(info.value)
    assert "bad.parquet" in msg and "column 'v'" in msg and "row 2" in msg and "path $" in msg


def test_non_object_value_next_to_shredded_object_raises() -> None:
    typed = pa.array([{"a": {"value": None, "typed_value": 1}}], pa.struct([pa.field("a", support.level_type(pa.int64()), False)]))
    meta = b"\x01\x01\x00\x01a"
    with pytest.raises(InvalidShreddedLayoutError, match=r"row 0, path \$: non-object value"):
        unshred_variant(_group([b"\x0c\x01"], typed, meta), where="x.parquet: column 'v'")


def test_shredded_field_repeated_in_residual_raises_with_nested_path() -> None:
    inner = pa.struct([pa.field("c", support.level_type(pa.int64()), False)])
    typed = pa.array(
        [{"b": {"value": b"\x02\x01\x00\x00\x02\x0c\x09", "typed_value": {"c": {"value": None, "typed_value": 1}}}}],
        pa.struct([pa.field("b", support.level_type(pa.struct([("c", pa.int64())])), False)]),
    )
    assert typed.type.field("b").type.field("typed_value").type == inner
    meta = b"\x01\x02\x00\x01\x02cb"  # keys: c (id 0), b (id 1)
    with pytest.raises(InvalidShreddedLayoutError, match=r"row 0, path \$\.b: field 'c' is both shredded and present"):
        unshred_variant(_group([None], typed, meta))


def test_shredded_key_missing_from_metadata_raises() -> None:
    typed = pa.array([{"a": {"value": None, "typed_value": 1}}], pa.struct([pa.field("a", support.level_type(pa.int64()), False)]))
    with pytest.raises(InvalidShreddedLayoutError, match="'a' is not in the row's metadata"):
        unshred_variant(_group([None], typed))


def test_empty_value_bytes_raise() -> None:
    with pytest.raises(InvalidShreddedLayoutError, match="row 1, path \\$: empty Variant value"):
        unshred_variant(_group([b"\x00", b""], pa.array([None, None], pa.int64())))


def test_out_of_range_time_and_overflowing_decimal_raise() -> None:
    time = pa.array([0, 86_400_000_000], pa.time64("us"))
    with pytest.raises(InvalidShreddedLayoutError, match="time of day"):
        unshred_variant(_group([None, None], time))
    # a decimal(5, 0) column holding a value wider than 5 digits (writers must not do this)
    raw = (10**12).to_bytes(16, "little", signed=True)
    dec = pa.Array.from_buffers(pa.decimal128(5, 0), 1, [None, pa.py_buffer(raw)])
    with pytest.raises(InvalidShreddedLayoutError, match="exceeds the column's precision"):
        unshred_variant(_group([None], dec))


@pytest.mark.parametrize(
    "name,typed,pattern",
    [
        ("uint8", pa.array([1], pa.uint8()), r"INTEGER\(8,false\)"),
        ("timestamp_ms", pa.array([1], pa.timestamp("ms")), r"TIMESTAMP\(false, MILLIS\)"),
        ("time_ms", pa.array([1], pa.time32("ms")), r"TIME\(false, MILLIS\)"),
        ("float16", pa.array([np.float16(1)], pa.float16()), r"FLOAT16"),
    ],
)
def test_leaf_types_outside_the_spec_table_are_rejected(tmp_path: Path, name: str, typed: pa.Array, pattern: str) -> None:
    pq.write_table(pa.table({"v": _group([None], typed)}), tmp_path / f"{name}.parquet", coerce_timestamps=None)
    with pytest.raises(InvalidShreddedLayoutError, match="unsupported shredded value type: optional .*" + pattern):
        read_parquet(tmp_path / f"{name}.parquet", variant_columns=["v"])


def test_int96_leaves_are_rejected(tmp_path: Path) -> None:
    table = pa.table({"v": _group([None], pa.array([1], pa.timestamp("ns")))})
    pq.write_table(table, tmp_path / "i96.parquet", use_deprecated_int96_timestamps=True)
    with pytest.raises(InvalidShreddedLayoutError, match=r"unsupported shredded value type: optional int96 typed_value"):
        read_parquet(tmp_path / "i96.parquet", variant_columns=["v"])


# --- which columns are Variants --------------------------------------------------------------------


def test_undeclared_struct_is_left_alone(tmp_path: Path) -> None:
    column = support.shredded_column([{"a": 1}], pa.struct([("a", pa.int64())]))
    path = support.write_variant_file(tmp_path / "f.parquet", column)
    table = read_parquet(path)
    assert table.schema.field("v").type == column.type  # not declared: returned as stored


def test_spark_row_metadata_marks_variants(tmp_path: Path) -> None:
    values = [{"a": 1, "b": "x"}, [1, 2]]
    column = support.shredded_column(values, pa.struct([("a", pa.int64())]))
    nested = pa.StructArray.from_arrays([column], ["inner"])
    listed = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), column)
    mapped = pa.MapArray.from_arrays(pa.array([0, 1, 2], pa.int32()), pa.array(["k0", "k1"]), column)
    spark_schema = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": False, "metadata": {}},
            {"name": "v", "type": "variant", "nullable": True, "metadata": {}},
            {"name": "s", "type": {"type": "struct", "fields": [{"name": "inner", "type": "variant", "nullable": True, "metadata": {}}]}, "nullable": True, "metadata": {}},
            {"name": "l", "type": {"type": "array", "elementType": "variant", "containsNull": True}, "nullable": True, "metadata": {}},
            {"name": "m", "type": {"type": "map", "keyType": "string", "valueType": "variant", "valueContainsNull": True}, "nullable": True, "metadata": {}},
        ],
    }
    table = pa.table({"id": [0, 1], "v": column, "s": nested, "l": listed, "m": mapped})
    table = table.replace_schema_metadata({SPARK_ROW_METADATA_KEY: json.dumps(spark_schema).encode()})
    pq.write_table(table, tmp_path / "spark.parquet")
    out = read_parquet(tmp_path / "spark.parquet")
    expected = support.expected_variants(values)
    assert support.as_variants(out.column("v")) == expected
    assert out.schema.field("s").type == pa.struct([pa.field("inner", VARIANT_OUT)])
    assert [Variant(r["inner"]["metadata"], r["inner"]["value"]) for r in out.column("s").to_pylist()] == expected
    assert [Variant(r[0]["metadata"], r[0]["value"]) for r in out.column("l").to_pylist()] == expected
    assert [Variant(r[0][1]["metadata"], r[0][1]["value"]) for r in out.column("m").to_pylist()] == expected
    assert out.schema.field("m").type.item_type == VARIANT_OUT


def test_variant_columns_name_nested_struct_fields(tmp_path: Path) -> None:
    values = [{"a": 1}, "x", SQL_NULL]
    column = support.shredded_column(values, pa.struct([("a", pa.int64())]))
    nested = pa.StructArray.from_arrays([column, pa.array([1, 2, 3])], ["inner", "n"], mask=pa.array([False, True, False]))
    pq.write_table(pa.table({"s": nested}), tmp_path / "f.parquet")
    out = read_parquet(tmp_path / "f.parquet", variant_columns=["s.inner"]).column("s").to_pylist()
    assert out[1] is None
    assert Variant(out[0]["inner"]["metadata"], out[0]["inner"]["value"]) == Variant.from_python({"a": 1})
    assert out[2]["inner"] is None and out[2]["n"] == 3
    with pytest.raises(UnknownColumnError):
        read_parquet(tmp_path / "f.parquet", variant_columns=["s.nope"])


def test_columns_selects_and_rejects_unknown_names(tmp_path: Path) -> None:
    column = support.shredded_column([1, 2], pa.int64())
    path = support.write_variant_file(tmp_path / "f.parquet", column)
    assert read_parquet(path, columns=["id"], variant_columns=["v"]).column_names == ["id"]
    with pytest.raises(UnknownColumnError, match="no column 'nope'"):
        read_parquet(path, columns=["nope"])


def test_multiple_row_groups_and_error_rows_count_from_file_start(tmp_path: Path) -> None:
    values = list(range(10))
    column = support.shredded_column(values, pa.int64())
    path = support.write_variant_file(tmp_path / "f.parquet", column, row_group_size=3)
    assert support.as_variants(read_parquet(path, variant_columns=["v"]).column("v")) == support.expected_variants(values)
    bad = _group([None] * 7 + [b"\x0c\x01"] + [None] * 2, pa.array(range(10), pa.int64()))
    path = support.write_variant_file(tmp_path / "bad.parquet", bad, row_group_size=3)
    with pytest.raises(InvalidShreddedLayoutError, match="row 7,"):
        read_parquet(path, variant_columns=["v"])


# --- the footer --------------------------------------------------------------------------------------


def test_footer_reader_finds_variant_annotation_and_leaf_types(testdata: Path) -> None:
    path = testdata / "parquet-testing" / "shredded_variant" / "case-044.parquet"
    with open(path, "rb") as h:
        root = read_schema(h, os.path.getsize(path), str(path))
    var = root.child("var")
    assert var is not None and var.is_variant() and var.logical.version == 1  # type: ignore[union-attr]
    leaves = {".".join(leaf.path): leaf for leaf in root.leaves()}
    assert [leaf.leaf_index for leaf in root.leaves()] == list(range(len(leaves)))
    assert leaves["var.typed_value.c.typed_value.b.typed_value"].logical.kind == "STRING"  # type: ignore[union-attr]
    # agrees with pyarrow's view of the leaves
    pf = pq.ParquetFile(path)
    assert [tuple(p.split(".")) for p in (pf.schema.column(i).path for i in range(pf.metadata.num_columns))] == [leaf.path for leaf in root.leaves()]


@pytest.mark.parametrize("cut", [1, 7, 50, 200])
def test_corrupt_footers_raise_footer_errors(tmp_path: Path, testdata: Path, cut: int) -> None:
    src = (testdata / "parquet-testing" / "shredded_variant" / "case-044.parquet").read_bytes()
    with open(tmp_path / "x", "wb") as h:
        h.write(src)
    with open(tmp_path / "x", "rb") as h:
        footer = read_footer_bytes(h, len(src), "x")
    with pytest.raises(ParquetFooterError, match="corrupt Parquet footer"):
        parse_file_schema(footer[: min(cut, len(footer) - 1)], "x")


def test_garbage_footer_bytes_never_hang_or_crash() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        blob = rng.integers(0, 256, int(rng.integers(0, 200)), dtype=np.uint8).tobytes()
        try:
            parse_file_schema(blob, "fuzz")
        except ParquetFooterError:
            pass


def test_not_parquet_and_missing_files(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_bytes(b"hello, this is not parquet at all")
    with pytest.raises(ParquetFooterError, match="not a Parquet file"):
        read_parquet(tmp_path / "t.txt")
    with pytest.raises(StorageFileNotFoundError):
        read_parquet(tmp_path / "missing.parquet")
    (tmp_path / "short").write_bytes(b"PAR1")
    with pytest.raises(VarlakeError):
        read_parquet(tmp_path / "short")


def test_reads_from_a_file_object_and_a_filesystem(tmp_path: Path) -> None:
    from pyarrow import fs

    column = support.shredded_column([{"a": 1}], pa.struct([("a", pa.int64())]))
    path = support.write_variant_file(tmp_path / "f.parquet", column)
    with open(path, "rb") as h:
        got = support.as_variants(read_parquet(h, variant_columns=["v"]).column("v"))
    assert got == [Variant.from_python({"a": 1})]
    got = support.as_variants(read_parquet(str(path), variant_columns=["v"], filesystem=fs.LocalFileSystem()).column("v"))
    assert got == [Variant.from_python({"a": 1})]


def test_layout_recognition_by_name() -> None:
    t = support.variant_group_type(pa.struct([("b", pa.int64()), ("a", pa.list_(pa.string()))]), typed_first=True)
    layout = recognise_layout(t)
    assert isinstance(layout.root.typed, ObjectLayout)
    assert [k for k, _ in layout.root.typed.fields] == ["b", "a"]
    assert layout.root.typed.field("a").path == "$.a"  # type: ignore[union-attr]
    with pytest.raises(InvalidShreddedLayoutError, match="no 'metadata'"):
        recognise_layout(pa.struct([("value", pa.binary())]))
    with pytest.raises(InvalidShreddedLayoutError, match="'value' must be binary"):
        recognise_layout(pa.struct([("metadata", pa.binary()), ("value", pa.string())]))
