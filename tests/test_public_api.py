"""The top-level API: ``import varlake`` gives the codec, Spark's Variant function set,
Parquet read/write, shredding inference and the table, one name per concept."""

from __future__ import annotations

import pyarrow as pa

import varlake
from varlake.delta.schema import PrimitiveType as DeltaPrimitiveType

EXPECTED = {
    "BasicType", "PrimitiveType", "Scan", "Table", "TimestampNanos", "TypeFamily", "Variant", "VariantPath",
    "VarlakeError", "cast_to_variant", "decode_variant_stat", "encode_variant_stat", "infer_shredding_schema",
    "is_variant_null", "parse_json", "parse_shorthand", "read_parquet", "schema_of_variant", "schema_of_variant_agg",
    "to_json", "try_parse_json", "try_variant_get", "variant_explode", "variant_explode_outer", "variant_get",
    "write_parquet", "variant_set", "try_variant_set", "variant_insert", "try_variant_insert", "variant_delete",
    "variant_array_append", "try_variant_array_append", "variant_strip_nulls", "is_valid_variant",
    "VariantExtensionType", "VariantDtype", "with_variant_extension", "without_variant_extension",
    "register_variant_extension",
}


def test_top_level_names_resolve() -> None:
    assert EXPECTED <= set(varlake.__all__)
    for name in varlake.__all__:
        assert getattr(varlake, name) is not None, name
    assert len(set(varlake.__all__)) == len(varlake.__all__)


def test_one_name_per_concept() -> None:
    # the top-level PrimitiveType is the Variant type-id enum, never Delta's schema type
    assert varlake.PrimitiveType is not DeltaPrimitiveType
    assert varlake.PrimitiveType.__module__ == "varlake.variant.constants"
    assert varlake.Table.__module__ == "varlake.table"
    # Arrow's canonical Variant extension type and its pandas dtype
    assert varlake.VariantExtensionType().extension_name == "arrow.parquet.variant"
    assert varlake.VariantDtype.name == "variant"


def test_function_set_works_on_python_values(tmp_path) -> None:
    v = varlake.parse_json('{"a": {"b": [1, 2.5, "x"]}, "n": null}')
    assert varlake.variant_get(v, "$.a.b[0]", "int") == 1
    assert varlake.try_variant_get(v, "$.a.b[2]", "int") is None
    assert varlake.is_variant_null(varlake.variant_get(v, "$.n", "variant"))
    assert varlake.schema_of_variant(v) == "OBJECT<a: OBJECT<b: ARRAY<VARIANT>>, n: VOID>"
    assert varlake.schema_of_variant_agg([varlake.parse_json("1"), varlake.parse_json("2.5")]) == "DECIMAL(21,1)"  # BIGINT is DECIMAL(20,0) here
    assert [k for _, k, _ in varlake.variant_explode(v)] == ["a", "n"]
    patched = varlake.variant_set(v, "$.a.c", varlake.parse_json('"new"'))
    assert varlake.variant_get(patched, "$.a.c", "string") == "new"
    assert varlake.variant_get(varlake.variant_delete(patched, "$.a.c"), "$.a.c", "string") is None
    assert varlake.is_valid_variant(patched) and varlake.variant_strip_nulls(v).to_json() == '{"a":{"b":[1,2.5,"x"]}}'
    path = tmp_path / "f.parquet"
    table = pa.table({"id": [1, 2]})
    varlake.write_parquet(table, path)
    assert varlake.read_parquet(path).column("id").to_pylist() == [1, 2]


def test_one_type_family() -> None:
    # the codec owns the type families; the expression layer speaks the same enum
    from varlake.expr import TypeFamily as ExprFamily
    from varlake.expr.types import family_of

    assert ExprFamily is varlake.TypeFamily
    assert family_of("long") is varlake.TypeFamily.EXACT_NUMERIC
    assert varlake.parse_json('"x"').type_family is family_of("string")
    assert family_of("array") is None and family_of("variant") is None
