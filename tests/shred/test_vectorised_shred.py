"""The column-at-a-time shredder and path statistics equal the row-by-row reference.

``shred`` runs the numpy/Arrow kernels of ``varlake.shred.columnar`` and falls back to
``shred_rows`` (the reference) for input they leave alone; ``infer.collect`` likewise.
Random documents (mixed types, nulls, missing fields, nested objects and arrays,
conflicting types that stay in ``value``, decimals, timestamps, unicode strings), several
schemas for each (inferred, inferred from half the rows, stable widths, deliberately
narrow leaves) and randomly corrupted bytes must give the same arrays, the same
statistics and the same errors on both paths.
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from varlake.errors import VarlakeError
from varlake.shred import columnar, columnar_stats, infer
from varlake.shred.infer import infer_shredding_schema
from varlake.shred.schema import ShreddingSchema
from varlake.shred.shred import shred, shred_rows
from varlake.variant import Variant
from varlake.variant.temporal import Float32, TimestampNanos
from varlake.write.staging.shredding import stable_widths
from variant_columns import narrow_type, variant_column

KEYS = ["a", "b", "c", "é", "k1", "z", "Zed", "日本"]
UTC = dt.timezone.utc

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-200, 200),
    st.floats(allow_nan=False, allow_infinity=True),  # NaN != NaN for equals: see the float32 test
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
)


def _doc(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaf,
        lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.sampled_from(KEYS), kids, max_size=5)),
        max_leaves=12,
    )


# documents that mostly share one shape (so shredding has something to do), with noise
shaped = st.fixed_dictionaries(
    {"a": st.integers(-(2**40), 2**40), "b": st.text(max_size=70), "c": st.lists(st.fixed_dictionaries({"k1": st.decimals(places=2, min_value=-999, max_value=999, allow_nan=False)}), max_size=3)},
    optional={"z": _doc(scalars), "日本": st.datetimes(timezones=st.just(UTC)), "é": st.booleans()},
)
documents = st.one_of(shaped, shaped, _doc(scalars))


@st.composite
def columns(draw: st.DrawFn) -> pa.StructArray:
    """A Variant column: per-row dictionaries, or one shared dictionary (unsorted keys)."""
    docs = draw(st.lists(st.one_of(st.none(), documents), min_size=1, max_size=40))
    return variant_column(docs, draw(st.booleans()), KEYS)




def _schemas(col: pa.StructArray) -> list[ShreddingSchema]:
    out = []
    for sample in (col, col.slice(0, max(1, len(col) // 2))):
        for compatible in (True, False):
            s = infer_shredding_schema(sample, min_frequency=0.01, min_type_share=0.5, spark_compatible=compatible)
            if s is not None:
                out.extend([s, ShreddingSchema(stable_widths(s.arrow_type)), ShreddingSchema(narrow_type(s.arrow_type))])
    out.append(ShreddingSchema.parse("a bigint, b string, c array<struct<k1: decimal(38, 3)>>"))
    out.append(ShreddingSchema.parse("decimal(38, 10)"))
    out.append(ShreddingSchema.parse("array<string>"))
    return out


def _outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except (VarlakeError, pa.ArrowException, ValueError) as exc:
        return ("error", type(exc), str(exc))


def _same(a: Any, b: Any) -> None:
    assert a[0] == b[0], (a, b)
    if a[0] == "ok":
        assert a[1].type == b[1].type
        assert a[1].equals(b[1])
    else:
        assert a[1:] == b[1:]


def _row_collect(sample: Any) -> Any:
    original = infer.collect_columnar

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise columnar.Fallback

    infer.collect_columnar = refuse  # type: ignore[assignment]
    try:
        return infer.collect(sample)
    finally:
        infer.collect_columnar = original  # type: ignore[assignment]


PROPS = settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))


@PROPS
@given(columns())
def test_columnar_shred_equals_row_path(col: pa.StructArray) -> None:
    for schema in _schemas(col):
        fast = shred(col, schema)
        assert fast.equals(shred_rows(col, schema)), schema.ddl
        assert fast.type == shred_rows(col, schema).type


@PROPS
@given(columns())
def test_columnar_statistics_equal_row_path(col: pa.StructArray) -> None:
    fast = _outcome(lambda: infer.collect(col))
    slow = _outcome(lambda: _row_collect(col))
    assert fast[0] == slow[0]
    assert fast[1:] == slow[1:]


@PROPS
@given(columns(), st.data())
def test_corrupted_bytes_give_the_row_paths_result_or_error(col: pa.StructArray, data: st.DataObject) -> None:
    values = col.field("value").to_pylist()
    metas = col.field("metadata").to_pylist()
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(values) - 1))
        b = bytearray(values[i])
        if data.draw(st.booleans()) and len(b) > 1:
            del b[data.draw(st.integers(1, len(b) - 1)) :]  # truncated
        else:
            b[data.draw(st.integers(0, len(b) - 1))] = data.draw(st.integers(0, 255))
        values[i] = bytes(b)
    bad = pa.StructArray.from_arrays(
        [pa.array(metas, pa.binary()), pa.array(values, pa.binary())], names=["metadata", "value"], mask=col.is_null()
    )
    for schema in _schemas(col)[:4]:
        _same(_outcome(lambda: shred(bad, schema)), _outcome(lambda: shred_rows(bad, schema)))
    fast = _outcome(lambda: infer.collect(bad))
    slow = _outcome(lambda: _row_collect(bad))
    assert fast[0] == slow[0] and fast[1:] == slow[1:]


def test_the_columnar_path_is_taken_for_clean_data() -> None:
    """Clean data never needs the row path (else the speed claim would be hollow)."""
    docs = [{"a": i, "b": f"s{i}" * (i % 30), "c": [{"k1": Decimal("1.25")}] * (i % 3), "z": {"x": i} if i % 2 else "s"} for i in range(200)]
    col = pa.StructArray.from_arrays(
        [pa.array([Variant.from_python(d).metadata for d in docs]), pa.array([Variant.from_python(d).value for d in docs])],
        names=["metadata", "value"],
    )
    schema = infer_shredding_schema(col)
    assert schema is not None
    meta, value, typed, mask = columnar.shred_columnar(col, schema.arrow_type)  # raises Fallback otherwise
    assert value.null_count < len(col)  # "z" conflicts: strings stay in value, objects shred
    stats, rows = columnar_stats.collect_columnar(col, 50, infer._KINDS, infer.PathStats)
    assert rows == 200 and (stats, rows) == _row_collect(col)


@pytest.mark.parametrize(
    "value",
    [
        b"\x02\x01\x00\x00\x01\x0c",  # object whose only field's id is past the dictionary
        b"\x0c",  # int8 without its byte
        b"\x15abc",  # short string running past the row
        b"\x03\x02\x00\x01",  # array whose offsets run past the row
        b"\xfc",  # unknown primitive type
    ],
)
def test_malformed_rows_raise_the_row_paths_error(value: bytes) -> None:
    meta = b"\x01\x01\x00\x01a"
    col = pa.StructArray.from_arrays([pa.array([meta, meta]), pa.array([b"\x0c\x01", value])], names=["metadata", "value"])
    for schema in ("a bigint", "bigint", "string", "array<bigint>"):
        _same(_outcome(lambda: shred(col, schema)), _outcome(lambda: shred_rows(col, schema)))
    _same_stats = (_outcome(lambda: infer.collect(col)), _outcome(lambda: _row_collect(col)))
    assert _same_stats[0][0] == _same_stats[1][0] and _same_stats[0][1:] == _same_stats[1][1:]


def test_float32_nan_payloads_and_negative_zero_match() -> None:
    import struct as _struct

    raw = [_struct.pack("<Bf", 0x38, x) for x in (float("-0.0"), float("inf"), 1.5)] + [b"\x38\x01\x00\xa0\x7f", b"\x38\x01\x00\xc0\x7f"]
    meta = b"\x01\x00\x00"
    col = pa.StructArray.from_arrays([pa.array([meta] * len(raw)), pa.array(raw)], names=["metadata", "value"])
    fast, slow = shred(col, "float").field("typed_value"), shred_rows(col, "float").field("typed_value")
    assert fast.view(pa.int32()).equals(slow.view(pa.int32()))  # bit for bit (NaN != NaN for equals)


def test_dates_times_and_uuids_shred_alike() -> None:
    docs: list[Any] = [dt.date(2024, 2, 29), dt.time(23, 59, 59, 999999), uuid.UUID(int=7), dt.datetime(1, 1, 1), "x", 5]
    col = pa.StructArray.from_arrays(
        [pa.array([Variant.from_python(d).metadata for d in docs]), pa.array([Variant.from_python(d).value for d in docs])],
        names=["metadata", "value"],
    )
    for schema in ("date", "time", "uuid", "timestamp_ntz", "timestamp", "decimal(5,2)", "tinyint", "binary"):
        assert shred(col, schema).equals(shred_rows(col, schema)), schema


def test_a_chunked_variant_column_is_rebuilt_without_concatenating_its_chunks() -> None:
    from varlake.shred import unshred_nested, unshred_variant

    docs = [{"a": i, "b": "x" * i} for i in range(10)]
    col = pa.StructArray.from_arrays(
        [pa.array([Variant.from_python(d).metadata for d in docs]), pa.array([Variant.from_python(d).value for d in docs])],
        names=["metadata", "value"],
    )
    shredded = shred(col, "a bigint, b string")
    chunked = pa.chunked_array([shredded.slice(0, 4), shredded.slice(4)])
    out = unshred_nested(chunked, [()], source="f.parquet", name="v")
    assert isinstance(out, pa.ChunkedArray) and [len(c) for c in out.chunks] == [4, 6]
    assert out.combine_chunks().equals(unshred_variant(shredded))
    got = [Variant(m, v) for m, v in zip(out.combine_chunks().field("metadata").to_pylist(), out.combine_chunks().field("value").to_pylist())]
    assert got == [Variant(m, v) for m, v in zip(col.field("metadata").to_pylist(), col.field("value").to_pylist())]
