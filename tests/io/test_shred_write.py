"""Shredding schemas, the shred kernel, the Parquet writer and the VARIANT footer patch."""

from __future__ import annotations

import datetime as dt
import json
import struct
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.errors import MalformedVariantError, ParquetFooterError, ShreddingError, ShreddingSchemaError, StorageError, VarlakeError
from varlake.io.parquet_annotate import (
    annotate_footer,
    annotate_variant_columns,
    encode_struct,
    parse_file_metadata,
    read_footer,
    schema_nodes,
    variant_columns_in_footer,
)
from varlake.io.parquet_write import SPARK_ROW_METADATA, rows_per_group, write_parquet
from varlake.io.parquet_read import read_parquet
from varlake.shred.unshred import unshred_variant
from varlake.shred.infer import infer_shredding_schema
from varlake.shred.schema import ShreddingSchema, from_ddl, to_ddl
from varlake.shred.shred import shred, variant_array
from varlake.variant import TimestampNanos, Variant, parse_json
from varlake.variant.temporal import Float32


def variants_of(column: pa.Array | pa.ChunkedArray) -> list[Variant | None]:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if isinstance(column, pa.ExtensionArray):  # read_parquet's arrow.parquet.variant
        column = column.storage
    valid = column.is_valid().to_pylist()
    metas = column.field("metadata").to_pylist()
    values = column.field("value").to_pylist()
    return [Variant(m, v) if ok else None for ok, m, v in zip(valid, metas, values)]


def js(*docs: str) -> list[Variant]:
    return [parse_json(d) for d in docs]


# --- schema ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ddl, arrow",
    [
        ("a bigint, b struct<c: string>, tags array<string>",
         pa.struct([("a", pa.int64()), ("b", pa.struct([("c", pa.string())])), ("tags", pa.list_(pa.string()))])),
        ("struct<a: tinyint, b: smallint, c: int>", pa.struct([("a", pa.int8()), ("b", pa.int16()), ("c", pa.int32())])),
        ("bigint", pa.int64()),
        ("array<struct<x: decimal(10,2)>>", pa.list_(pa.struct([("x", pa.decimal128(10, 2))]))),
        ("`a b` date, `we``ird` timestamp_ntz", pa.struct([("a b", pa.date32()), ("we`ird", pa.timestamp("us"))])),
        ("ts timestamp, t time(6), u uuid, n timestamp_ns, m timestamp_ntz_ns",
         pa.struct([("ts", pa.timestamp("us", "UTC")), ("t", pa.time64("us")), ("u", pa.uuid()),
                    ("n", pa.timestamp("ns", "UTC")), ("m", pa.timestamp("ns"))])),
        ("f float, d double, b boolean, x binary", pa.struct([("f", pa.float32()), ("d", pa.float64()), ("b", pa.bool_()), ("x", pa.binary())])),
    ],
)
def test_ddl_round_trip(ddl: str, arrow: pa.DataType) -> None:
    schema = ShreddingSchema.parse(ddl)
    assert schema.arrow_type == ShreddingSchema(arrow).arrow_type
    assert ShreddingSchema.parse(schema.ddl) == schema
    assert ShreddingSchema.parse(arrow) == schema


def test_ddl_accepts_spark_spellings() -> None:
    t = from_ddl("A INTEGER NOT NULL COMMENT 'x', B LONG, C DECIMAL(5), D VARCHAR(10), E TIMESTAMP_LTZ, F TIME")
    assert t == pa.struct([("A", pa.int32()), ("B", pa.int64()), ("C", pa.decimal128(5, 0)), ("D", pa.string()),
                           ("E", pa.timestamp("us", "UTC")), ("F", pa.time64("us"))])
    assert to_ddl(t) == "A int, B bigint, C decimal(5,0), D string, E timestamp, F time(6)"


@pytest.mark.parametrize(
    "bad",
    ["", "a map<string, int>", "a struct<>", "a bigint,", "a unknown", "a decimal(40,2)", "a decimal(5,6)",
     "a bigint, a string", "a time(3)", "struct<a: int", "a int)"],
)
def test_bad_ddl_is_rejected(bad: str) -> None:
    with pytest.raises(ShreddingSchemaError):
        ShreddingSchema.parse(bad)


@pytest.mark.parametrize(
    "bad", [pa.struct([]), pa.uint8(), pa.timestamp("ms"), pa.time64("ns"), pa.map_(pa.string(), pa.int64()),
            pa.struct([("", pa.int64())]), pa.float16()],
)
def test_unshreddable_arrow_types_are_rejected(bad: pa.DataType) -> None:
    with pytest.raises(ShreddingSchemaError):
        ShreddingSchema(bad)


def test_physical_layout_has_value_and_typed_value_at_every_level() -> None:
    schema = ShreddingSchema.parse("a bigint, b struct<c: string>, tags array<string>")
    t = schema.variant_type
    assert t.field("metadata").nullable is False
    assert t.field("value").nullable and t.field("typed_value").nullable
    typed = t.field("typed_value").type
    for name in ("a", "b", "tags"):
        group = typed.field(name)
        assert group.nullable is False  # object fields are required groups
        assert [f.name for f in group.type] == ["value", "typed_value"]
    element = typed.field("tags").type.field("typed_value").type.value_field
    assert element.nullable is False and [f.name for f in element.type] == ["value", "typed_value"]
    assert ShreddingSchema.from_physical(t) == schema


# --- shred: the spec's examples --------------------------------------------------------------------------


def test_primitive_example_from_the_spec() -> None:
    """measurements ``34, null, "n/a", 100`` shredded as int64."""
    out = shred(variant_array(js("34", "null", '"n/a"', "100")), "bigint").to_pylist()
    assert [(r["value"], r["typed_value"]) for r in out] == [(None, 34), (b"\x00", None), (b"\x0dn/a", None), (None, 100)]


def test_array_example_from_the_spec() -> None:
    docs = js('["comedy", "drama"]', '["horror", null]', '["comedy", "drama", "romance"]', "null")
    out = shred(variant_array(docs), "array<string>").to_pylist()
    assert out[0]["value"] is None
    assert out[0]["typed_value"] == [{"value": None, "typed_value": "comedy"}, {"value": None, "typed_value": "drama"}]
    assert out[1]["typed_value"] == [{"value": None, "typed_value": "horror"}, {"value": b"\x00", "typed_value": None}]
    assert [e["typed_value"] for e in out[2]["typed_value"]] == ["comedy", "drama", "romance"]
    assert out[3] == {"metadata": docs[3].metadata, "value": b"\x00", "typed_value": None}


def test_object_example_from_the_spec() -> None:
    ts = dt.datetime(2024, 10, 24, 18, 21, 54, 937000, tzinfo=dt.timezone.utc)
    rows = [
        {"event_type": "noop", "event_ts": ts},
        {"event_type": "login", "event_ts": ts, "email": "user@example.com"},
        {"error_msg": "malformed: ..."},
        "malformed: not an object",
        {"event_ts": ts, "click": "_button"},
        {"event_type": None, "event_ts": ts},
        {"event_type": "noop", "event_ts": "2024-10-24"},
        {},
        None,
    ]
    variants: list[Variant | None] = [Variant.from_python(r) for r in rows] + [None]
    out = shred(variant_array(variants), "event_type string, event_ts timestamp").to_pylist()

    def fields(i: int) -> tuple:
        tv = out[i]["typed_value"]
        if tv is None:
            return None  # type: ignore[return-value]
        return (tv["event_type"]["value"], tv["event_type"]["typed_value"], tv["event_ts"]["value"], tv["event_ts"]["typed_value"])

    def residual(i: int) -> object:
        v = out[i]["value"]
        return None if v is None else Variant(out[i]["metadata"], v).to_python()

    assert (residual(0), fields(0)) == (None, (None, "noop", None, ts))
    assert (residual(1), fields(1)) == ({"email": "user@example.com"}, (None, "login", None, ts))
    assert (residual(2), fields(2)) == ({"error_msg": "malformed: ..."}, (None, None, None, None))
    assert (residual(3), fields(3)) == ("malformed: not an object", None)
    assert (residual(4), fields(4)) == ({"click": "_button"}, (None, None, None, ts))
    assert (residual(5), fields(5)) == (None, (b"\x00", None, None, ts))
    assert fields(6)[:2] == (None, "noop") and Variant(out[6]["metadata"], fields(6)[2]).to_python() == "2024-10-24"
    assert (residual(7), fields(7)) == (None, (None, None, None, None))
    assert (out[8]["value"], out[8]["typed_value"]) == (b"\x00", None)
    assert out[9] is None


def test_residual_object_reuses_the_row_metadata() -> None:
    v = parse_json('{"a": 1, "zz": {"q": [1, 2]}, "b": "x"}')
    out = shred(variant_array([v]), "a bigint").to_pylist()[0]
    assert out["metadata"] == v.metadata
    assert Variant(v.metadata, out["value"]) == parse_json('{"zz": {"q": [1, 2]}, "b": "x"}')


def test_arrays_of_objects_shred_their_elements() -> None:
    v = parse_json('{"items": [{"sku": "a", "n": 1}, {"sku": "b", "extra": true}, 5]}')
    out = shred(variant_array([v]), "items array<struct<sku: string, n: int>>").to_pylist()[0]
    elems = out["typed_value"]["items"]["typed_value"]
    assert elems[0] == {"value": None, "typed_value": {"sku": {"value": None, "typed_value": "a"}, "n": {"value": None, "typed_value": 1}}}
    assert elems[1]["typed_value"]["n"] == {"value": None, "typed_value": None}
    assert Variant(v.metadata, elems[1]["value"]) == parse_json('{"extra": true}')
    assert elems[2] == {"value": b"\x0c\x05", "typed_value": None}


@pytest.mark.parametrize(
    "schema, value, typed",
    [
        ("tinyint", 5, 5), ("tinyint", 300, None), ("smallint", 300, 300), ("int", 2**31, None), ("bigint", 2**40, 2**40),
        ("decimal(5,2)", Decimal("1.5"), Decimal("1.50")), ("decimal(5,2)", Decimal("1.555"), None),
        ("decimal(5,2)", 7, Decimal("7.00")), ("decimal(5,2)", 12345, None), ("decimal(38,10)", Decimal("-1.25"), Decimal("-1.25")),
        ("double", 1.5, 1.5), ("double", Float32(1.5), None), ("float", Float32(1.5), 1.5), ("float", 1.5, None),
        ("bigint", Decimal("1"), None), ("string", 1, None), ("boolean", True, True), ("boolean", 0, None),
        ("date", dt.date(2020, 2, 29), dt.date(2020, 2, 29)), ("date", "2020-02-29", None),
        ("timestamp", dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)),
        ("timestamp", dt.datetime(2020, 1, 1), None), ("timestamp_ntz", dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 1)),
        ("time(6)", dt.time(1, 2, 3, 4), dt.time(1, 2, 3, 4)), ("uuid", uuid.UUID(int=7), uuid.UUID(int=7)),
        ("binary", b"\x00\xff", b"\x00\xff"), ("string", "x" * 100, "x" * 100), ("array<string>", "not an array", None),
    ],
)
def test_leaf_matching(schema: str, value: object, typed: object) -> None:
    v = Variant.from_python(value)
    out = shred(variant_array([v]), schema)
    row = out.to_pylist()[0]
    if typed is None:
        assert row["typed_value"] is None and row["value"] == v.value
    else:
        assert row["value"] is None
        got = row["typed_value"]
        assert (uuid.UUID(bytes=got) if isinstance(got, bytes) and schema == "uuid" else got) == typed
    assert variants_of(unshred_variant(out)) == [v]


def test_nanosecond_timestamps_shred_by_unit() -> None:
    ns = TimestampNanos(1_700_000_000_123_456_789, True)
    row = shred(variant_array([Variant.from_python(ns)]), "timestamp_ns").to_pylist()[0]
    assert row["value"] is None
    micros = shred(variant_array([Variant.from_python(ns)]), "timestamp").to_pylist()[0]
    assert micros["typed_value"] is None


def test_malformed_input_names_the_row() -> None:
    good = parse_json('{"a": 1}')
    bad = pa.StructArray.from_arrays(
        [pa.array([good.metadata, good.metadata]), pa.array([good.value, b"\x02\x05\x00"])], names=["metadata", "value"]
    )
    with pytest.raises(MalformedVariantError, match="row 1"):
        shred(bad, "a bigint")
    with pytest.raises(MalformedVariantError, match="row 1"):
        shred(bad, "a bigint", validate=True)


def test_shred_rejects_non_variant_input() -> None:
    with pytest.raises(ShreddingError):
        shred(pa.array([1, 2]), "bigint")
    already = shred(variant_array(js("1")), "bigint")
    with pytest.raises(ShreddingError, match="already shredded"):
        shred(already, "bigint")
    with pytest.raises(ShreddingError, match="row 0"):
        shred(pa.StructArray.from_arrays([pa.array([b"\x01\x00\x00"]), pa.array([None], pa.binary())], names=["metadata", "value"]), "bigint")


# --- the Parquet file --------------------------------------------------------------------------------------


def _leaf_types(path: Path) -> dict[str, tuple[str, str]]:
    schema = pq.ParquetFile(path).schema
    return {schema.column(i).path: (schema.column(i).physical_type, schema.column(i).logical_type.to_json()) for i in range(len(schema))}


def test_leaf_parquet_types_follow_the_spec_table(tmp_path: Path) -> None:
    ddl = ("i8 tinyint, i16 smallint, i32 int, i64 bigint, d4 decimal(9,2), d8 decimal(18,3), d16 decimal(38,4), "
           "dt date, tm time(6), ts timestamp, ntz timestamp_ntz, tsn timestamp_ns, ntzn timestamp_ntz_ns, u uuid, "
           "s string, b binary, f float, d double, o boolean")
    t = pa.table({"v": variant_array(js('{"i8": 1}'))})
    write_parquet(t, tmp_path / "f.parquet", shredding={"v": ddl})
    types = _leaf_types(tmp_path / "f.parquet")

    def of(name: str) -> tuple[str, dict]:
        phys, logical = types[f"v.typed_value.{name}.typed_value"]
        return phys, json.loads(logical)

    assert of("i8") == ("INT32", {"Type": "Int", "bitWidth": 8, "isSigned": True})
    assert of("i16") == ("INT32", {"Type": "Int", "bitWidth": 16, "isSigned": True})
    assert of("i32")[0] == "INT32" and of("i64")[0] == "INT64"
    assert of("d4") == ("INT32", {"Type": "Decimal", "precision": 9, "scale": 2})
    assert of("d8") == ("INT64", {"Type": "Decimal", "precision": 18, "scale": 3})
    assert of("d16") == ("FIXED_LEN_BYTE_ARRAY", {"Type": "Decimal", "precision": 38, "scale": 4})
    assert of("dt") == ("INT32", {"Type": "Date"})
    assert of("tm") == ("INT64", {"Type": "Time", "isAdjustedToUTC": False, "timeUnit": "microseconds"})
    for name, utc, unit in (("ts", True, "microseconds"), ("ntz", False, "microseconds"), ("tsn", True, "nanoseconds"), ("ntzn", False, "nanoseconds")):
        phys, logical = of(name)
        assert phys == "INT64" and (logical["Type"], logical["isAdjustedToUTC"], logical["timeUnit"]) == ("Timestamp", utc, unit)
    assert of("u") == ("FIXED_LEN_BYTE_ARRAY", {"Type": "UUID"})
    assert of("s") == ("BYTE_ARRAY", {"Type": "String"})
    assert of("b") == ("BYTE_ARRAY", {"Type": "None"})
    assert (of("f")[0], of("d")[0], of("o")[0]) == ("FLOAT", "DOUBLE", "BOOLEAN")
    assert types["v.metadata"][0] == "BYTE_ARRAY"


def test_write_marks_variant_groups_and_reads_back(tmp_path: Path) -> None:
    docs = js('{"a": 1, "b": {"c": "x"}}', '"s"', "null", '{"a": "no"}')
    inner = pa.StructArray.from_arrays([variant_array(docs)], names=["v"], mask=pa.array([False, False, True, False]))
    t = pa.table({"id": pa.array(range(4), pa.int32()), "v": variant_array(docs[:3] + [None]), "nv": inner})
    path = tmp_path / "f.parquet"
    result = write_parquet(t, path, shredding={"v": "a bigint, b struct<c: string>", ("nv", "v"): "a bigint"})
    assert set(variant_columns_in_footer(path)) == {("v",), ("nv", "v")}
    assert result.shredding["v"] == ShreddingSchema.parse("a bigint, b struct<c: string>")
    spark_schema = json.loads(pq.read_metadata(path).metadata[SPARK_ROW_METADATA])
    assert spark_schema["fields"][1] == {"name": "v", "type": "variant", "nullable": True, "metadata": {}}
    assert spark_schema["fields"][2]["type"]["fields"][0]["type"] == "variant"
    assert pq.read_metadata(path).row_group(0).column(0).compression == "ZSTD"
    back = read_parquet(path)
    assert variants_of(back.column("v")) == docs[:3] + [None]
    nv = back.column("nv").combine_chunks()
    assert nv.is_valid().to_pylist() == [True, True, False, True]
    assert variants_of(nv.field("v"))[:2] == docs[:2] and variants_of(nv.field("v"))[3] == docs[3]


def test_unshredded_write_keeps_value_required(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    write_parquet(pa.table({"v": variant_array(js("1", '"x"') + [None])}), path)
    schema = pq.ParquetFile(path).schema_arrow
    assert schema.field("v").type.field("value").nullable is False
    assert variant_columns_in_footer(path) == [("v",)]
    assert variants_of(read_parquet(path).column("v")) == js("1", '"x"') + [None]


def test_auto_shredding_infers_per_column(tmp_path: Path) -> None:
    docs = [parse_json(json.dumps({"id": i, "name": f"n{i}", "tags": ["a", "b"][: i % 3]})) for i in range(200)]
    t = pa.table({"v": variant_array(docs), "w": variant_array([None] * 200)})
    result = write_parquet(t, tmp_path / "f.parquet", shredding="auto")
    assert result.shredding["v"] == ShreddingSchema.parse("id smallint, name string, tags array<string>")
    assert result.shredding["w"] is None
    assert variants_of(read_parquet(tmp_path / "f.parquet").column("v")) == docs


def test_row_groups_and_compression_are_configurable(tmp_path: Path) -> None:
    docs = js(*[json.dumps({"i": i}) for i in range(1000)])
    t = pa.table({"v": variant_array(docs)})
    result = write_parquet(t, tmp_path / "f.parquet", shredding={"v": "i int"}, row_group_size=300, compression="snappy")
    assert result.metadata.num_row_groups == 4 and result.num_rows == 1000
    assert result.metadata.row_group(0).column(0).compression == "SNAPPY"
    assert rows_per_group(t, None, 128 * 1024 * 1024) == 1024 * 1024
    assert 99 <= rows_per_group(t, None, t.nbytes // 10) <= 100
    assert variants_of(read_parquet(tmp_path / "f.parquet").column("v")) == docs


def test_write_rejects_bad_requests(tmp_path: Path) -> None:
    t = pa.table({"v": variant_array(js("1")), "x": pa.array([1])})
    with pytest.raises(ShreddingError, match="not Variant columns"):
        write_parquet(t, tmp_path / "a.parquet", shredding={"x": "bigint"})
    with pytest.raises(ShreddingError, match="not a Variant"):
        write_parquet(t, tmp_path / "a.parquet", variant_columns=["x"])
    with pytest.raises(ShreddingError, match="no column"):
        write_parquet(t, tmp_path / "a.parquet", variant_columns=["nope"])
    with pytest.raises(ShreddingSchemaError):
        write_parquet(t, tmp_path / "a.parquet", shredding={"v": "a map<string,int>"})


def test_empty_table_writes(tmp_path: Path) -> None:
    t = pa.table({"v": variant_array([])})
    result = write_parquet(t, tmp_path / "f.parquet", shredding={"v": "a bigint, t array<string>"})
    assert result.num_rows == 0
    assert read_parquet(tmp_path / "f.parquet").num_rows == 0


# --- the footer patch ---------------------------------------------------------------------------------------


def test_footer_patch_changes_only_the_variant_elements(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    t = pa.table({"a": pa.array([1, 2]), "v": variant_array(js("1", "2"))})
    pq.write_table(t, path)
    data_before = path.read_bytes()
    footer, start = read_footer(path)
    meta = parse_file_metadata(footer)
    assert encode_struct(meta) == footer  # the codec round-trips a real footer exactly
    annotate_variant_columns(path, [("v",)])
    data_after = path.read_bytes()
    new_footer, new_start = read_footer(path)
    assert new_start == start and data_after[:start] == data_before[:start]
    assert data_after[-4:] == b"PAR1" and struct.unpack("<I", data_after[-8:-4])[0] == len(new_footer)
    v_node = next(n for n in schema_nodes(meta) if n.path == ("v",))
    assert new_footer[: v_node.element.start] == footer[: v_node.element.start]
    assert new_footer[len(new_footer) - (len(footer) - v_node.element.end):] == footer[v_node.element.end:]
    assert variant_columns_in_footer(path) == [("v",)]
    assert pq.read_table(path).equals(t)
    annotate_variant_columns(path, [("v",)])  # idempotent
    assert path.read_bytes() == data_after


def test_footer_patch_refuses_what_is_not_a_variant(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"a": pa.array([1]), "s": pa.array([{"x": 1}])}), path)
    footer, _ = read_footer(path)
    for target in (("a",), ("s",), ("nope",)):
        with pytest.raises(ParquetFooterError):
            annotate_footer(footer, [target])


@pytest.mark.parametrize("cut", [1, 5, 40, 200])
def test_truncated_footers_raise(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"v": variant_array(js("1"))}), path)
    footer, _ = read_footer(path)
    with pytest.raises(ParquetFooterError):
        annotate_footer(footer[: len(footer) - cut], [("v",)])


def test_not_a_parquet_file(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    path.write_bytes(b"PAR1 this is not parquet at all")
    with pytest.raises(ParquetFooterError):
        annotate_variant_columns(path, [("v",)])
    path.write_bytes(b"abc")
    with pytest.raises(ParquetFooterError, match="too small"):
        read_footer(path)


def test_failed_writes_leave_nothing_behind(tmp_path: Path) -> None:
    t = pa.table({"v": variant_array(js("1"))})
    with pytest.raises(StorageError):
        write_parquet(t, tmp_path / "missing-dir" / "f.parquet")
    assert list(tmp_path.iterdir()) == []


def test_stale_spark_schema_is_not_copied(tmp_path: Path) -> None:
    stale = {SPARK_ROW_METADATA: b'{"type":"struct","fields":[]}'}
    t = pa.table({"v": variant_array(js("1")), "u": pa.array([1], pa.uint32())}).replace_schema_metadata(stale)
    write_parquet(t, tmp_path / "f.parquet")
    assert SPARK_ROW_METADATA not in (pq.read_metadata(tmp_path / "f.parquet").metadata or {})  # uint32 has no Spark type
    assert variant_columns_in_footer(tmp_path / "f.parquet") == [("v",)]
    assert [p.name for p in tmp_path.iterdir()] == ["f.parquet"]


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=40), st.sampled_from([b"\x01\x00\x00", b"\x01\x02\x00\x01\x02ab", b"\x11\x01\x00\x01a"]))
def test_garbage_bytes_fail_with_varlake_errors(value: bytes, metadata: bytes) -> None:
    col = pa.StructArray.from_arrays([pa.array([metadata]), pa.array([value])], names=["metadata", "value"])
    try:
        valid = Variant(metadata, value).validate()
    except VarlakeError:
        valid = None
    for schema in ("a bigint, b struct<a: string>", "array<struct<a: int>>", "string"):
        if valid is None:
            with pytest.raises(VarlakeError):
                shred(col, schema, validate=True)
            try:
                shred(col, schema)  # without validation, garbage may pass but must not crash
            except VarlakeError:
                pass
        else:
            assert variants_of(unshred_variant(shred(col, schema))) == [valid]
    try:
        infer_shredding_schema(col)
    except VarlakeError:
        assert valid is None


@pytest.mark.parametrize("value", [None, b""])
def test_unshredded_write_rejects_missing_values(tmp_path: Path, value: bytes | None) -> None:
    col = pa.StructArray.from_arrays(
        [pa.array([b"\x01\x00\x00"] * 2), pa.array([b"\x0c\x01", value], pa.large_binary())], names=["metadata", "value"]
    )
    with pytest.raises(ShreddingError, match="row 1"):
        write_parquet(pa.table({"v": col}), tmp_path / "f.parquet")


def test_already_shredded_columns_are_written_as_they_are(tmp_path: Path) -> None:
    docs = js('{"a": 1, "b": "x"}', '{"a": 2}')
    pre = shred(variant_array(docs), "a bigint")
    t = pa.table({"v": pre})
    for shredding in (None, "auto", {"v": "a bigint"}):
        result = write_parquet(t, tmp_path / "f.parquet", shredding=shredding)  # type: ignore[arg-type]
        assert result.shredding["v"] == ShreddingSchema.parse("a bigint")
        assert variants_of(read_parquet(tmp_path / "f.parquet").column("v")) == docs
    with pytest.raises(ShreddingError, match="different schema"):
        write_parquet(t, tmp_path / "f.parquet", shredding={"v": "b string"})
