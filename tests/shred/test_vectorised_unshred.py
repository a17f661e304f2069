"""The byte-parts unshredding (``shred.unshred_parts``) equals the reference path.

``unshred_variant`` rebuilds Variants from shredded columns with the byte-parts kernels
and sends rows with a residual ``value`` to the reference path
(``shred.unshred_reference``, ``unshred_variant(..., reference=True)``). Random
documents (every primitive type, short and long strings, missing fields, nulls, nested
objects and arrays), shredded with inferred, widened, deliberately narrow and random
schemas, must read back as the same Variants on both paths (logically equal: the fast
path may order object values and size offsets differently), valid per the spec, equal
to the input, and the same errors must be raised for invalid layouts.
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from varlake.errors import InvalidShreddedLayoutError, VarlakeError
from varlake.shred import unshred_parts
from varlake.shred.infer import infer_shredding_schema
from varlake.shred.schema import ShreddingSchema
from varlake.shred.shred import shred
from varlake.shred.unshred import unshred_variant
from varlake.variant import TimestampNanos, Variant
from varlake.variant.encoder import MetadataBuilder, encode_python
from varlake.variant.temporal import Float32
from varlake.write.staging.shredding import stable_widths
from variant_columns import check_unshred, narrow_type, variant_column, variants_of

KEYS = ["a", "b", "c", "é", "k1", "z", "Zed", "日本"]
UTC = dt.timezone.utc

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-200, 200),
    st.floats(allow_nan=False, allow_infinity=True),
    st.floats(width=32, allow_nan=False).map(Float32),
    st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=-(10**12), max_value=10**12),
    st.decimals(allow_nan=False, allow_infinity=False, places=0, min_value=-(10**30), max_value=10**30),
    st.decimals(allow_nan=False, allow_infinity=False, places=6, min_value=-1000, max_value=1000),
    st.text(max_size=8),
    st.text(min_size=60, max_size=90),
    st.binary(max_size=12),
    st.dates(),
    st.datetimes(timezones=st.just(UTC)),
    st.datetimes(),
    st.times(),
    st.uuids(),
    st.integers(-(2**62), 2**62).map(lambda n: TimestampNanos(n, True)),
    st.integers(-(2**62), 2**62).map(lambda n: TimestampNanos(n, False)),
)


def _doc(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaf,
        lambda kids: st.one_of(st.lists(kids, max_size=10), st.dictionaries(st.sampled_from(KEYS), kids, max_size=5)),
        max_leaves=14,
    )


# documents that mostly share one shape (so shredding has something to do), with noise
shaped = st.fixed_dictionaries(
    {
        "a": st.integers(-(2**40), 2**40),
        "b": st.text(max_size=70),
        "c": st.lists(st.fixed_dictionaries({"k1": st.decimals(places=2, min_value=-999, max_value=999, allow_nan=False)}, optional={"z": st.uuids()}), max_size=3),
    },
    optional={
        "z": _doc(scalars),
        "日本": st.datetimes(timezones=st.just(UTC)),
        "é": st.booleans(),
        "k1": st.fixed_dictionaries({"a": st.dates(), "b": st.binary(max_size=70)}, optional={"c": st.none()}),
        "Zed": st.lists(st.one_of(st.text(max_size=70), st.none()), max_size=12),
    },
)
documents = st.one_of(shaped, shaped, shaped, _doc(scalars))


@st.composite
def columns(draw: st.DrawFn) -> pa.StructArray:
    """A Variant column: per-row dictionaries, or one shared dictionary (unsorted keys)."""
    docs = draw(st.lists(st.one_of(st.none(), documents), min_size=1, max_size=40))
    return variant_column(docs, draw(st.booleans()), KEYS)




LEAF_DDL = [
    "boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "decimal(9, 2)", "decimal(18, 6)",
    "decimal(38, 0)", "decimal(38, 10)", "date", "timestamp", "timestamp_ntz", "string", "binary", "uuid", "time",
]

ddl = st.recursive(
    st.sampled_from(LEAF_DDL),
    lambda inner: st.one_of(
        inner.map(lambda t: f"array<{t}>"),
        st.dictionaries(st.sampled_from(KEYS), inner, min_size=1, max_size=4).map(
            lambda d: "struct<" + ", ".join(f"`{k}`: {t}" for k, t in d.items()) + ">"
        ),
    ),
    max_leaves=8,
)


def _schemas(col: pa.StructArray, extra: list[str]) -> list[ShreddingSchema]:
    out = []
    s = infer_shredding_schema(col, min_frequency=0.01, min_type_share=0.5)
    if s is not None:
        out.extend([s, ShreddingSchema(stable_widths(s.arrow_type)), ShreddingSchema(narrow_type(s.arrow_type))])
    out.append(ShreddingSchema.parse("a bigint, b string, c array<struct<k1: decimal(38, 3), z: uuid>>, Zed array<string>"))
    for text in extra:
        try:
            out.append(ShreddingSchema.parse(text))
        except VarlakeError:
            pass  # a leaf the shredder does not offer (e.g. time in a Spark-compatible schema)
    return out


PROPS = settings(max_examples=120, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))


@PROPS
@given(columns(), st.lists(ddl, max_size=3))
def test_byte_parts_equal_the_reference_and_the_input(col: pa.StructArray, extra: list[str]) -> None:
    original = variants_of(col)
    for schema in _schemas(col, extra):
        check_unshred(shred(col, schema), original)


@PROPS
@given(columns(), st.integers(0, 39), st.integers(0, 40))
def test_slices_read_like_whole_columns(col: pa.StructArray, start: int, length: int) -> None:
    schema = infer_shredding_schema(col, min_frequency=0.01, min_type_share=0.5)
    if schema is None:
        return
    shredded = shred(col, schema)
    start = min(start, len(col))
    check_unshred(shredded.slice(start, length), variants_of(col)[start : start + length])
    chunked = pa.chunked_array([shredded.slice(0, start), shredded.slice(start)], type=shredded.type)
    check_unshred(chunked, variants_of(col))


def _column(docs: list[Any], metas: list[bytes] | None = None) -> pa.StructArray:
    variants = [None if d is None else Variant.from_python(d) for d in docs]
    return pa.StructArray.from_arrays(
        [
            pa.array(metas or [b"\x01\x00\x00" if v is None else v.metadata for v in variants], pa.binary()),
            pa.array([b"\x00" if v is None else v.value for v in variants], pa.binary()),
        ],
        fields=[pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary(), nullable=False)],
        mask=pa.array([v is None for v in variants]),
    )


def test_the_fast_path_serves_perfectly_typed_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Clean, perfectly shredded data never reaches the reference path."""
    docs = [
        {"a": i, "b": f"s{i}" * (i % 40), "c": [{"k1": Decimal("1.25"), "z": uuid.UUID(int=i)}] * (i % 4), "é": i % 2 == 0,
         **({"z": "opt"} if i % 3 else {})}
        for i in range(300)
    ]
    col = _column(docs)
    shredded = shred(col, "a bigint, b string, c array<struct<k1: decimal(9, 2), z: uuid>>, `é` boolean, z string")
    monkeypatch.setattr(unshred_parts, "reference_level", None)  # the fast path must not need it
    fast = variants_of(unshred_variant(shredded))
    assert fast == variants_of(col)


def test_residual_rows_are_patched_from_the_reference() -> None:
    docs: list[Any] = [{"a": i, "b": "x"} for i in range(50)]
    docs[7] = {"a": 1, "b": "x", "extra": [1, 2]}  # partially shredded: residual object
    docs[9] = "not an object"
    docs[11] = {"a": "not an int", "b": "y"}
    docs[13] = None
    col = _column(docs)
    check_unshred(shred(col, "a bigint, b string"), variants_of(col))


def test_per_row_dictionaries_with_different_ids() -> None:
    """Rows whose metadata give a key different ids get per-row ids in the headers."""
    docs = [{"b": i, "a": f"v{i}"} for i in range(20)]
    metas = []
    for i in range(20):
        keys = ["a", "b"] if i % 2 else ["b", "zz", "a"]
        metas.append(MetadataBuilder(keys).build())
    values = [encode_python(d, MetadataBuilder(["a", "b"] if i % 2 else ["b", "zz", "a"])) for i, d in enumerate(docs)]
    col = pa.StructArray.from_arrays([pa.array(metas, pa.binary()), pa.array(values, pa.binary())], names=["metadata", "value"])
    check_unshred(shred(col, "a string, b bigint"), [Variant(m, v) for m, v in zip(metas, values)])


def test_wide_headers_many_fields_elements_and_bytes() -> None:
    """Over 255 fields and elements, and over 64 KiB of data, need wide counts and offsets."""
    wide = {f"k{i:04d}": i for i in range(300)}
    docs = [{"o": wide, "l": [f"s{i}" * 40 for i in range(600)], "s": "x" * 70_000}, {"o": wide, "l": [], "s": ""}]
    col = _column(docs)
    t = "o struct<" + ", ".join(f"k{i:04d}: bigint" for i in range(300)) + ">, l array<string>, s string"
    check_unshred(shred(col, t), variants_of(col))


def test_arrays_of_many_lengths_and_missing_elements() -> None:
    docs: list[Any] = [list(range(n)) for n in range(20)] + [[None, 1, "x", {"a": 1}], None, [], "x"]
    col = _column(docs)
    for schema in ("array<bigint>", "array<string>", "array<struct<a: bigint>>"):
        check_unshred(shred(col, schema), variants_of(col))


@pytest.mark.parametrize(
    ("layout", "pattern"),
    [
        ("both", "both value and typed_value are non-null"),
        ("missing key", "is not in the row's metadata dictionary"),
        ("time", "out of range"),
        ("decimal", "exceeds the column's precision"),
    ],
)
def test_invalid_layouts_raise_the_reference_errors(layout: str, pattern: str) -> None:
    meta = pa.array([b"\x01\x00\x00"] * 3, pa.binary())
    if layout == "both":
        group = pa.StructArray.from_arrays([meta, pa.array([None, b"\x0c\x01", None]), pa.array([1, 2, 3], pa.int64())], ["metadata", "value", "typed_value"])
    elif layout == "missing key":
        field = pa.StructArray.from_arrays([pa.nulls(3, pa.binary()), pa.array([1, 2, 3], pa.int64())], ["value", "typed_value"])
        group = pa.StructArray.from_arrays([meta, pa.StructArray.from_arrays([field], ["a"])], ["metadata", "typed_value"])
    elif layout == "time":
        group = pa.StructArray.from_arrays([meta, pa.array([1, 90_000_000_000, 3], pa.time64("us"))], ["metadata", "typed_value"])
    else:
        group = pa.StructArray.from_arrays([meta, pa.array([1, 10**12, 3], pa.int64()).cast(pa.decimal128(38, 0)).cast(pa.decimal128(9, 0), safe=False)], ["metadata", "typed_value"])
    errors = []
    for reference in (False, True):
        with pytest.raises(InvalidShreddedLayoutError, match=pattern) as info:
            unshred_variant(group, reference=reference)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_decimal_overflow_check_on_wide_storage() -> None:
    """A decimal(9, 0) leaf stored in 16 bytes whose value needs more digits raises; in range reads."""
    meta = pa.array([b"\x01\x00\x00"] * 4, pa.binary())
    ok = pa.array([Decimal(-(10**9) + 1), Decimal(10**9 - 1), None, Decimal(-5)], pa.decimal128(9, 0))
    group = pa.StructArray.from_arrays([meta, ok], ["metadata", "typed_value"])
    fast, ref = variants_of(unshred_variant(group)), variants_of(unshred_variant(group, reference=True))
    assert fast == ref and [v.to_python() for v in fast] == [Decimal(-(10**9) + 1), Decimal(10**9 - 1), None, Decimal(-5)]


def test_fixed_parts_store_every_width() -> None:
    """``Fixed`` pieces of 1-4 and 8 bytes, constants and per-row numbers, land little-endian."""
    from varlake.shred.byte_parts import Fixed, join_parts

    n = 5
    values = np.array([0, 1, 255, 70_000, 2**31 + 5], dtype=np.int64)
    part = Fixed(n, [(0xAB, 1), (values, 3), (0x0102030405, 5), (values, 8), (values, 2), (values, 4), (7, 1), (values, 1)])
    got = join_parts([part], n).to_pylist()
    for i, v in enumerate(values.tolist()):
        assert got[i] == (
            b"\xab" + (v & 0xFFFFFF).to_bytes(3, "little") + (0x0102030405).to_bytes(5, "little") + v.to_bytes(8, "little")
            + (v & 0xFFFF).to_bytes(2, "little") + v.to_bytes(4, "little") + b"\x07" + (v & 0xFF).to_bytes(1, "little")
        )


def test_select_rows_drops_bytes_and_nulls() -> None:
    from varlake.shred.byte_parts import Fixed, join_parts, select_rows, var

    arr = pa.array([b"ab", None, b"cde", b"f"], pa.binary())
    keep = np.array([True, False, False, True])
    out = join_parts([select_rows(var(arr), keep), select_rows(Fixed(4, [(np.arange(4), 1)]), keep)], 4)
    assert out.to_pylist() == [b"ab\x00", b"", b"", b"f\x03"]
    assert pc.sum(pc.binary_length(out)).as_py() == 5


def test_partially_shredded_objects_merge_column_wise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Residual objects next to shredded fields (most rows) merge without the reference path,
    at the top and in nested objects, with keys on both sides of the shredded ones."""
    docs: list[Any] = [
        {"b": i, "a": f"x{i}", "k1": {"a": i, "zz": [i, "s"]} if i % 3 else {"a": i}, **({"c": {"deep": True}, "Zed": 1.5} if i % 4 else {})}
        for i in range(120)
    ]
    docs[5] = {"k1": "not an object", "b": 1}
    docs[6] = None
    col = _column(docs)
    shredded = shred(col, "b bigint, k1 struct<a: bigint>")
    assert shredded.field("value").null_count < len(docs) // 2
    monkeypatch.setattr(unshred_parts, "reference_level", None)  # the fast path must not need it
    fast = variants_of(unshred_variant(shredded))
    assert fast == variants_of(col)
    for v in fast:
        if v is not None:
            v.validate()


@pytest.mark.parametrize(
    "residual",
    [
        b"\x0c\x01",  # not an object
        b"\x02\x01\x00\x00\x05",  # offsets past the end
        b"\x02\x01\x01\x00\x02\x0c\x01",  # the shredded key again
        b"\x02\x01\x09\x00\x02\x0c\x01",  # id outside the dictionary
        b"\x02\x01\x00\x00\x02\x0c\x01\xff",  # trailing byte
    ],
)
def test_bad_residuals_get_the_reference_outcome(residual: bytes) -> None:
    meta = b"\x01\x02\x00\x01\x02zb"  # keys "z", "b"
    field = pa.StructArray.from_arrays([pa.nulls(2, pa.binary()), pa.array([1, 2], pa.int64())], ["value", "typed_value"])
    group = pa.StructArray.from_arrays(
        [pa.array([meta, meta]), pa.array([None, residual], pa.binary()), pa.StructArray.from_arrays([field], ["b"])],
        ["metadata", "value", "typed_value"],
    )
    outcomes = []
    for reference in (False, True):
        try:
            outcomes.append(("ok", variants_of(unshred_variant(group, reference=reference))))
        except VarlakeError as exc:
            outcomes.append(("error", type(exc), str(exc)))
    assert outcomes[0] == outcomes[1]


def test_all_null_residual_columns_are_not_read(tmp_path: Any) -> None:
    """A perfectly shredded file's ``value`` leaves (all null by their statistics) are left
    out of a full read, with the same Variants as reading every leaf."""
    from varlake.io import parquet_read
    from varlake.io.parquet_write import write_parquet

    docs = [{"a": i, "b": f"s{i}", "c": [{"k1": Decimal("1.50")}] * (i % 3)} for i in range(100)]
    docs[3] = {"a": "text", "b": "x", "c": []}  # $.a keeps a residual: its value leaf is read
    col = _column(docs)
    path = tmp_path / "f.parquet"
    write_parquet(pa.table({"v": col}), path, shredding={"v": "a bigint, b string, c array<struct<k1: decimal(9, 2)>>"})
    pf, root = parquet_read._open(path, None)
    variants = parquet_read.variant_column_paths(pf, root, (), str(path))
    leaves = parquet_read._without_null_values(pf, root, ["v"], variants)
    assert leaves is not None and "v.typed_value.a.value" in leaves and "v.typed_value.b.value" not in leaves
    got = variants_of(parquet_read.read_parquet(path, arrow_extension=False).column("v"))
    saved = parquet_read._without_null_values
    parquet_read._without_null_values = lambda *a: None  # type: ignore[assignment]
    try:
        every = variants_of(parquet_read.read_parquet(path, arrow_extension=False).column("v"))
    finally:
        parquet_read._without_null_values = saved  # type: ignore[assignment]
    assert got == every == variants_of(col)
