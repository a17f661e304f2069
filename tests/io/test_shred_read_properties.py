"""Property tests: any value shredded with any schema reads back as the original Variant."""

from __future__ import annotations

import io
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import test_shred_read_support as support
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_shred_read_support import SQL_NULL

from varlake.errors import VarlakeError
from varlake.io.parquet_read import read_parquet
from varlake.shred import project_path, unshred_variant
from varlake.variant import Variant

KEYS = ["a", "b", "c", "d", "ä"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-200, 200),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=70),
    st.decimals(min_value=Decimal("-99999.99"), max_value=Decimal("99999.99"), places=2, allow_nan=False),
    st.dates(),
    st.binary(max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
    ),
    max_leaves=12,
)

leaf_types = st.sampled_from(
    [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float64(), pa.string(), pa.bool_(), pa.date32(), pa.binary(), pa.decimal128(9, 2)]
)


def _object(inner: st.SearchStrategy[pa.DataType]) -> st.SearchStrategy[pa.DataType]:
    return st.dictionaries(st.sampled_from(KEYS), inner, min_size=1, max_size=4).map(lambda d: pa.struct(list(d.items())))


schemas = st.recursive(leaf_types, lambda inner: st.one_of(st.builds(pa.list_, inner), _object(inner)), max_leaves=6)
rows = st.lists(st.one_of(values, st.just(SQL_NULL)), min_size=1, max_size=12)
paths = st.lists(st.one_of(st.sampled_from(KEYS), st.integers(0, 3)), max_size=3)


def _path_text(segments: list[Any]) -> str:
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else f"['{s}']" for s in segments)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows, schemas, st.booleans(), st.integers(1, 5))
def test_shredded_files_read_back_the_original_values(data: list[Any], schema: pa.DataType, typed_first: bool, rg: int) -> None:
    column = support.shredded_column(data, schema, typed_first)
    buf = io.BytesIO()
    pq.write_table(pa.table({"v": column}), buf, row_group_size=rg)
    buf.seek(0)
    got = support.as_variants(read_parquet(buf, variant_columns=["v"]).column("v"))
    assert got == support.expected_variants(data)
    for v in got:
        if v is not None:
            v.validate()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows, schemas, st.lists(paths, min_size=1, max_size=3))
def test_path_projection_equals_navigating_the_value(data: list[Any], schema: pa.DataType, path_list: list[list[Any]]) -> None:
    column = support.shredded_column(data, schema)
    for segments in path_list:
        text = _path_text(segments)
        got = support.as_variants(project_path(column, text))
        want = [None if v is SQL_NULL else Variant.from_python(v).get(text) for v in data]
        assert got == want, text


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.dates(), st.integers(-5, 5)), min_size=1, max_size=20), st.integers(0, 19), st.integers(0, 19))
def test_sliced_arrays_unshred_like_whole_ones(data: list[Any], start: int, length: int) -> None:
    """Arrow slices (non-zero offsets) must give the same bytes as the rows they cover."""
    column = support.shredded_column([{"a": v, "b": [v]} for v in data], pa.struct([("a", pa.date32()), ("b", pa.list_(pa.date32()))]))
    whole = support.as_variants(unshred_variant(column))
    part = support.as_variants(unshred_variant(column.slice(start, length)))
    assert part == whole[start : start + length]
    assert all(isinstance(v, Variant) for v in part)


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=40), st.binary(min_size=0, max_size=12))
def test_garbage_residuals_raise_named_errors_or_read(residual: bytes, meta_tail: bytes) -> None:
    """Arbitrary residual bytes (made to look like an object) never crash the reader."""
    residual = bytes([(residual[0] & 0xFC) | 0x02]) + residual[1:]
    metadata = b"\x01\x02\x00\x01\x02ab" if not meta_tail else b"\x01" + meta_tail
    typed = pa.array([{"a": {"value": None, "typed_value": 1}}], pa.struct([pa.field("a", support.level_type(pa.int64()), False)]))
    group = pa.StructArray.from_arrays([pa.array([metadata]), pa.array([residual]), typed], ["metadata", "value", "typed_value"])
    for run in (lambda: unshred_variant(group), lambda: project_path(group, "$.b"), lambda: project_path(group, "$.a")):
        try:
            out = support.as_variants(run())
        except VarlakeError:
            continue
        assert len(out) == 1
