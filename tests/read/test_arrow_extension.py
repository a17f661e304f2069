"""Variant columns handed out as Arrow's canonical ``arrow.parquet.variant`` extension type.

``read_parquet`` and ``Table.scan(...).to_arrow()`` tag every Variant (top level, in
structs, lists and maps, and ``"<column>:<path>"`` projections); writers take tagged or
plain data; DuckDB reads the tag as ``VARIANT``; pandas gets ``Variant`` objects (or JSON
text) and gives the tag back on the way to Arrow.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import varlake
from varlake import Table, Variant, parse_json
from varlake.errors import InvalidShreddedLayoutError, TableError
from varlake.shred.arrow_extension import (
    VARIANT_EXTENSION_NAME,
    VariantExtensionType,
    is_variant_extension,
    register_variant_extension,
)
from varlake.shred.shred import shred
from varlake.shred.unshred import UNSHREDDED_TYPE
from varlake.shred.variant_arrays import variant_array
from varlake.shred.variant_columns import variants_as_json, with_variant_extension, without_variant_extension

VARIANT = VariantExtensionType()
DOCS = ['{"a": 1, "b": [1, "x", true]}', "[1, 2]", '"text"', "null", '{"a": {"c": null}}']


def _variants() -> list[Variant | None]:
    return [parse_json(d) for d in DOCS[:3]] + [None] + [parse_json(d) for d in DOCS[3:]]


def _nested_table() -> pa.Table:
    """``v`` Variant, ``s`` struct<w: Variant, n>, ``l`` list<Variant>, ``m`` map<string, Variant>."""
    vs = _variants()
    v = variant_array(vs)
    s = pa.StructArray.from_arrays([v, pa.array(range(6))], names=["w", "n"], mask=pa.array([False] * 5 + [True]))
    offsets = pa.array([0, 2, 2, 3, 4, 5, 6], pa.int32())
    lst = pa.ListArray.from_arrays(offsets, v, mask=pa.array([False, True, False, False, False, False]))
    m = pa.MapArray.from_arrays(pa.array(range(7), pa.int32()), pa.array(list("abcdef")), v)
    return pa.table({"id": pa.array(range(6), pa.int64()), "v": v, "s": s, "l": lst, "m": m})


def _as_python(value: Any) -> Any:
    """Rows with every ``{"metadata", "value"}`` storage dict decoded as a ``Variant``."""
    if isinstance(value, dict):
        if set(value) == {"metadata", "value"}:
            return Variant(value["metadata"], value["value"])
        return {k: _as_python(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_python(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_as_python(v) for v in value)
    return value


# --- the type -----------------------------------------------------------------------------------------


def test_the_type_is_the_canonical_one() -> None:
    assert VARIANT.extension_name == VARIANT_EXTENSION_NAME == "arrow.parquet.variant"
    assert VARIANT.storage_type == UNSHREDDED_TYPE
    assert VARIANT.__arrow_ext_serialize__() == b""  # the canonical metadata is empty
    assert not VARIANT.shredded and is_variant_extension(VARIANT) and not is_variant_extension(UNSHREDDED_TYPE)
    assert hash(VARIANT) == hash(VariantExtensionType()) and hash(pa.schema([("v", VARIANT)]))  # schemas key caches
    # every storage the canonical spec allows: nullable value, other binaries, shredded typed_value
    loose = pa.struct([pa.field("value", pa.large_binary()), pa.field("metadata", pa.binary_view(), False)])
    assert VariantExtensionType(loose).storage_type == loose
    shredded = pa.struct([("metadata", pa.binary()), ("value", pa.binary()), ("typed_value", pa.int64())])
    assert VariantExtensionType(shredded).shredded


@pytest.mark.parametrize(
    "storage",
    [
        pa.binary(),
        pa.struct([("value", pa.binary())]),  # no metadata
        pa.struct([("metadata", pa.binary()), ("value", pa.string())]),
        pa.struct([("metadata", pa.binary()), ("value", pa.binary()), ("typed_value", pa.uint32())]),
    ],
)
def test_storage_the_spec_forbids_is_refused_by_name(storage: pa.DataType) -> None:
    with pytest.raises(InvalidShreddedLayoutError, match="arrow.parquet.variant"):
        VariantExtensionType(storage)


def test_arrays_and_scalars_give_variants_and_json() -> None:
    arr = with_variant_extension(variant_array(_variants()))
    assert arr.type == VARIANT
    assert arr.to_variants() == _variants()
    assert arr.to_json().to_pylist() == ['{"a":1,"b":[1,"x",true]}', "[1,2]", '"text"', None, "null", '{"a":{"c":null}}']
    assert arr[0].as_variant() == parse_json(DOCS[0]) and arr[3].as_variant() is None
    assert arr[1].as_py() == {"metadata": b"\x01\x00\x00", "value": parse_json("[1, 2]").value}  # storage, as before


def test_shredded_storage_reads_as_its_variants() -> None:
    values = [parse_json(d) for d in ['{"a": 1, "b": "x"}', '{"a": 2}', "7"]]
    shredded = shred(variant_array(values), pa.struct([("a", pa.int64())]))
    tagged = with_variant_extension(shredded)
    assert tagged.type.shredded and tagged.to_variants() == values
    unshredded = without_variant_extension(tagged, unshred=True)
    assert unshredded.type == UNSHREDDED_TYPE
    assert with_variant_extension(unshredded).to_variants() == values


# --- read_parquet -------------------------------------------------------------------------------------


def test_read_parquet_tags_variants_at_every_depth(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    table = _nested_table()
    varlake.write_parquet(table, path, variant_columns=["v", "s.w"])
    out = varlake.read_parquet(path, variant_columns=["v", "s.w"])
    assert out.schema.field("v").type == VARIANT
    assert out.schema.field("s").type.field("w").type == VARIANT
    assert out.schema.field("id").type == pa.int64()
    assert _as_python(out.to_pylist()) == _as_python(table.to_pylist())
    plain = varlake.read_parquet(path, variant_columns=["v", "s.w"], arrow_extension=False)
    assert plain.schema.field("v").type == UNSHREDDED_TYPE
    assert without_variant_extension(out).equals(plain)
    projected = varlake.read_parquet(path, columns=["id"], paths={"v": ["$.a", "$.b[1]"]})
    assert projected.schema.field("v:$.a").type == VARIANT == projected.schema.field("v:$.b[1]").type
    assert projected.column("v:$.b[1]").chunk(0).to_variants()[0] == parse_json('"x"')


def test_variants_in_lists_and_maps_are_tagged_when_the_file_marks_them(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    t = Table.create(tmp_path / "t", "id bigint, l array<variant>, m map<string, variant>")
    table = _nested_table().select(["id", "l", "m"])
    t.append(table)
    out = t.scan().to_arrow().sort_by("id")
    assert out.schema.field("l").type.value_type == VARIANT and out.schema.field("m").type.item_type == VARIANT
    assert _as_python(out.to_pylist()) == _as_python(table.to_pylist())
    (add,) = t.files()
    pq.write_table(pq.read_table(t.data_file(add)), path)  # plain pyarrow: the structs stay plain
    assert varlake.read_parquet(path).schema.field("l").type.value_type == UNSHREDDED_TYPE  # nothing marks them


# --- tables -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shredding", ["false", "true"])
def test_scan_tags_variants_and_writes_take_tagged_or_plain_data(tmp_path: Path, shredding: str) -> None:
    t = Table.create(
        tmp_path / "t",
        "id bigint, p string, v variant, s struct<w: variant, n: bigint>, l array<variant>",
        partition_by=["p"],
        properties={"delta.enableVariantShredding": shredding},
    )
    source = _nested_table().drop_columns(["m"]).append_column("p", pa.array(list("xxyyzz")))
    t.append(source)  # plain structs
    out = t.scan().to_arrow().sort_by("id")
    assert out.schema.field("v").type == VARIANT
    assert out.schema.field("s").type.field("w").type == VARIANT and out.schema.field("l").type.value_type == VARIANT
    assert out.schema.field("p").type == pa.string()
    expected = _as_python(source.select(out.column_names).to_pylist())
    assert _as_python(out.to_pylist()) == expected
    t.append(out)  # tagged: the same rows again
    again = t.scan().to_arrow().sort_by("id")
    assert _as_python(again.to_pylist()) == sorted(expected * 2, key=lambda r: r["id"])
    paths = t.scan(columns=["id"], paths={"v": ["$.a"]}).to_arrow().sort_by("id")
    assert paths.schema.field("v:$.a").type == VARIANT
    assert paths.column("v:$.a").combine_chunks().to_variants()[:4] == [parse_json("1")] * 2 + [None] * 2
    # a tagged schema creates a table with Variant columns
    t2 = Table.create(tmp_path / "t2", out.schema)
    assert t2.schema == t.schema.__class__(tuple(t.schema.field(n) for n in out.column_names))


def test_shredded_tagged_input_is_unshredded_on_write(tmp_path: Path) -> None:
    values = [parse_json(d) for d in ['{"a": 1, "b": "x"}', '{"a": 2}', "7"]]
    shredded = with_variant_extension(shred(variant_array(values), pa.struct([("a", pa.int64())])))
    t = Table.create(tmp_path / "t", "id bigint, v variant")
    t.append(pa.table({"id": [1, 2, 3], "v": shredded}))
    out = t.scan().to_arrow().sort_by("id")
    assert out.column("v").chunk(0).to_variants() == values


def test_write_parquet_takes_tagged_tables_and_marks_the_file(tmp_path: Path) -> None:
    tagged = with_variant_extension(_nested_table().select(["id", "v", "s"]))
    path = tmp_path / "f.parquet"
    varlake.write_parquet(tagged, path)
    out = varlake.read_parquet(path)  # found from the file's own VARIANT annotation
    assert out.schema == tagged.schema
    assert _as_python(out.to_pylist()) == _as_python(tagged.to_pylist())


def test_ipc_round_trip_keeps_the_tag_for_duckdb_and_when_registered(tmp_path: Path) -> None:
    tagged = with_variant_extension(_nested_table().select(["id", "v", "s"]))
    varlake.write_parquet(tagged, tmp_path / "f.parquet")
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, tagged.schema) as writer:
        writer.write_table(tagged)
    plain = pa.ipc.open_stream(sink.getvalue()).read_all()
    field = plain.schema.field("v")
    assert field.metadata[b"ARROW:extension:name"] == b"arrow.parquet.variant"  # the tag travels as field metadata
    assert duckdb.sql("select typeof(v), typeof(s) from plain limit 1").fetchall() == [("VARIANT", "STRUCT(w VARIANT, n BIGINT)")]
    assert with_variant_extension(plain).schema.types == tagged.schema.types
    assert register_variant_extension()
    try:
        assert not register_variant_extension()  # once
        typed = pa.ipc.open_stream(sink.getvalue()).read_all()
        assert typed.schema.types == tagged.schema.types and typed.equals(tagged)
        assert pq.read_schema(tmp_path / "f.parquet").field("v").type == VARIANT  # pyarrow's reader uses it too
        assert varlake.read_parquet(tmp_path / "f.parquet").equals(tagged)  # and varlake's still reads the file
    finally:
        pa.unregister_extension_type(VARIANT_EXTENSION_NAME)


# --- DuckDB -------------------------------------------------------------------------------------------


def test_duckdb_reads_scans_as_variant(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant, s struct<w: variant, n: bigint>, l array<variant>")
    t.append(_nested_table().drop_columns(["m"]))
    out = t.scan().to_arrow()
    con = duckdb.connect()
    types = dict(con.sql("select column_name, column_type from (describe out)").fetchall())
    assert types == {"id": "BIGINT", "v": "VARIANT", "s": "STRUCT(w VARIANT, n BIGINT)", "l": "VARIANT[]"}
    rows = con.sql("select id, v.a, v.b[2] from out order by id").fetchall()
    assert rows[0] == (0, 1, "x")
    back = con.sql("select * from out order by id").to_arrow_table()  # DuckDB's own Variant encoding
    assert _as_python(back.to_pylist()) == _as_python(out.sort_by("id").to_pylist())


# --- pandas -------------------------------------------------------------------------------------------


def test_to_pandas_gives_variant_objects_and_round_trips(tmp_path: Path) -> None:
    tagged = with_variant_extension(_nested_table().select(["id", "v", "s"]))
    df = tagged.to_pandas()
    assert str(df["v"].dtype) == "variant"
    assert df["v"].tolist() == _variants()
    assert df["v"].isna().tolist() == [False, False, False, True, False, False]
    assert df["s"][0]["w"] == {"metadata": tagged.column("v")[0].value["metadata"].as_py(), "value": parse_json(DOCS[0]).value}
    back = pa.Table.from_pandas(df, preserve_index=False)
    assert back.schema.field("v").type == VARIANT
    assert back.column("v").chunk(0).to_variants() == _variants()
    again = with_variant_extension(back)  # nested storage structs come back plain from pandas: tag them
    assert is_variant_extension(again.schema.field("s").type.field("w").type)
    assert _as_python(again.to_pylist()) == _as_python(tagged.to_pylist())
    # the frame goes back into a table as it is
    t = Table.create(tmp_path / "t", "id bigint, v variant, s struct<w: variant, n: bigint>")
    t.append(df.drop(columns=["s"]))
    assert t.scan().to_pandas().sort_values("id")["v"].tolist() == _variants()


def test_pandas_variant_columns_behave_like_columns() -> None:
    s = pd.Series([parse_json("1"), None, {"a": [1, 2]}, "x"], dtype=varlake.VariantDtype())
    assert pd.Series([1], dtype="variant").dtype == s.dtype  # the name works once the dtype is loaded
    assert s.tolist() == [parse_json("1"), None, Variant.from_python({"a": [1, 2]}), Variant.from_python("x")]
    assert s.isna().tolist() == [False, True, False, False]
    assert s.take([2, 0]).tolist() == [Variant.from_python({"a": [1, 2]}), parse_json("1")]
    assert pd.concat([s, s]).tolist() == s.tolist() * 2
    assert (s == parse_json("1.0")).tolist() == [True, False, False, False]  # logical equality
    assert pickle.loads(pickle.dumps(s)).tolist() == s.tolist()
    assert s.array.to_json() == ["1", None, '{"a":[1,2]}', '"x"']
    s[1] = [3]
    assert s[1] == Variant.from_python([3])
    assert pa.array(s.array).type == VARIANT


def test_to_pandas_json_and_struct_forms(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant, s struct<w: variant, n: bigint>")
    t.append(_nested_table().select(["id", "v", "s"]))
    scan = t.scan()
    df = scan.to_pandas(variant="json").sort_values("id")
    assert df["v"].tolist()[:4] == ['{"a":1,"b":[1,"x",true]}', "[1,2]", '"text"', None]
    assert df["s"].tolist()[0] == {"w": '{"a":1,"b":[1,"x",true]}', "n": 0}
    raw = scan.to_pandas(variant="struct").sort_values("id")
    assert raw["v"].tolist()[0] == {"metadata": parse_json(DOCS[0]).metadata, "value": parse_json(DOCS[0]).value}
    with pytest.raises(TableError, match="variant must be one of"):
        scan.to_pandas(variant="text")


def test_variants_as_json_renders_every_depth() -> None:
    tagged = with_variant_extension(_nested_table())
    out = variants_as_json(tagged).slice(1, 4)
    assert out.schema.field("l").type == pa.list_(pa.string()) and out.schema.field("m").type.item_type == pa.string()
    assert out.to_pylist()[0] == {"id": 1, "v": "[1,2]", "s": {"w": "[1,2]", "n": 1}, "l": None, "m": [("b", "[1,2]")]}
    assert out.to_pylist()[2] == {"id": 3, "v": None, "s": {"w": None, "n": 3}, "l": [None], "m": [("d", None)]}


def test_duckdb_variant_arrays_decode_and_bad_requests_are_named() -> None:
    from varlake.errors import UnknownColumnError
    from varlake.shred.arrow_extension import variants_of

    exported = duckdb.sql("select '{\"a\": 1}'::JSON::VARIANT as v union all select NULL").to_arrow_table()
    assert exported.schema.field("v").type.field("value").nullable  # DuckDB's storage: value may be null
    assert sorted(variants_of(exported.column("v")), key=lambda v: v is None) == [parse_json('{"a": 1}'), None]
    with pytest.raises(UnknownColumnError, match="no column 'w'"):
        with_variant_extension(exported, ["w"])


def test_merge_takes_a_tagged_source(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant")
    t.append(pa.table({"id": [1, 2], "v": variant_array([parse_json("1"), parse_json("2")])}))
    source = with_variant_extension(pa.table({"id": [2, 3], "v": variant_array([parse_json('"two"'), parse_json("[3]")])}))
    t.merge(source, on="t.id = s.id").when_matched_update_all().when_not_matched_insert_all().execute()
    out = t.scan().to_arrow().sort_by("id")
    assert out.column("v").combine_chunks().to_variants() == [parse_json("1"), parse_json('"two"'), parse_json("[3]")]


def test_null_variants_with_null_children_write_and_bad_ones_are_refused(tmp_path: Path) -> None:
    from varlake.shred.variant_columns import variant_nulls_filled

    loose = pa.struct([("metadata", pa.large_binary()), ("value", pa.large_binary())])
    one = parse_json('{"k": 1}')
    v = pa.array([{"metadata": one.metadata, "value": one.value}, None], loose)  # the null row's children are null
    s = pa.StructArray.from_arrays([v], names=["w"])
    filled = variant_nulls_filled(pa.table({"v": v, "s": s}))
    assert filled.column("v").chunk(0).field("metadata").null_count == 0 and filled.column("v").null_count == 1
    t = Table.create(tmp_path / "t", "id bigint, v variant, s struct<w: variant>")
    t.append(pa.table({"id": [1, 2], "v": v, "s": s}))
    rows = _as_python(t.scan().to_arrow().sort_by("id").to_pylist())
    assert rows == [{"id": 1, "v": one, "s": {"w": one}}, {"id": 2, "v": None, "s": {"w": None}}]
    broken = pa.StructArray.from_arrays([pa.array([one.metadata]), pa.array([None], pa.binary())], names=["metadata", "value"])
    with pytest.raises(TableError, match="has nulls"):  # a non-null Variant without a value stays refused
        t.append(pa.table({"id": [3], "v": broken}))
