"""Partially shredded objects read the same on the fast path and the reference path.

Random documents whose objects hold a few shredded keys and many others (so most rows
keep a residual ``value`` object next to ``typed_value`` at several levels), with nested
objects, arrays of objects, nulls, missing fields, keys that look alike (case, spaces,
accents, composed and decomposed forms), residual keys sorting before, between and
after the shredded ones, per-row and shared dictionaries, and objects with hundreds of
fields (wide counts, 2-byte ids) or long values (wide offsets). ``unshred_variant``
must give the same Variants as ``unshred_variant(..., reference=True)`` and as the
input, valid per the spec; the grouped header writer (``shred.object_headers``) and
its entry-by-entry fallback must both be exercised.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from varlake.shred import object_headers
from varlake.shred.shred import shred
from varlake.shred.unshred import unshred_variant
from varlake.variant import Variant
from varlake.variant.decoder import array_positions, metadata_view, object_entries
from variant_columns import check_unshred, variant_column, variants_of

# shredded keys first; the rest look like them or sort around them
SHREDDED = ["b", "m", "x"]
OTHERS = ["a", "B", "b ", "c", "l", "mm", "m\u0301", "\u1e3f", "n", "w", "y", "z", "\u00e9", "e\u0301", "\u65e5\u672c", "~", " "]
KEYS = SHREDDED + OTHERS

leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.text(max_size=6),
    st.text(min_size=64, max_size=80),
    st.floats(allow_nan=False, allow_infinity=False),
)


def _obj(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(KEYS), inner, max_size=6)


values = st.recursive(leaf, lambda kids: st.one_of(st.lists(kids, max_size=4), _obj(kids)), max_leaves=8)

# a record: shredded keys of the schema's types (mostly), nested "m" object with its own
# residuals, an array of objects under "x"; any other key lands in the residual
record = st.fixed_dictionaries(
    {},
    optional={
        "b": st.one_of(st.integers(-1000, 1000), st.integers(-1000, 1000), values),
        "m": st.one_of(st.fixed_dictionaries({}, optional={"b": st.text(max_size=8), "x": st.integers(0, 9), **{k: values for k in OTHERS[:6]}}), values),
        "x": st.one_of(st.lists(st.fixed_dictionaries({}, optional={"b": st.integers(0, 99), "a": values, "z": values}), max_size=3), values),
        **{k: values for k in OTHERS},
    },
)
documents = st.one_of(record, record, record, values)

SCHEMAS = [
    "b bigint, m struct<b: string, x: int>, x array<struct<b: bigint>>",
    "b bigint, m struct<x: bigint>",
    "m struct<b: string>, x array<struct<b: int, z: string>>",
    "x array<struct<b: bigint>>",
]

PROPS = settings(max_examples=150, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))


def _keys_ascend(v: Variant) -> None:
    """Every object's fields are in UTF-8 key order (VariantEncoding.md), at every depth."""
    meta = metadata_view(v.metadata)
    todo = [0]
    while todo:
        pos = todo.pop()
        basic = v.value[pos] & 0x03
        if basic == 2:
            entries = object_entries(meta, v.value, pos)
            names = [k.encode("utf-8") for k, _ in entries]
            assert names == sorted(names) and len(set(names)) == len(names), names
            todo.extend(p for _, p in entries)
        elif basic == 3:
            todo.extend(array_positions(v.value, pos))


def _check(col: pa.StructArray, schema: str) -> None:
    check_unshred(shred(col, schema), variants_of(col), _keys_ascend)


@PROPS
@given(st.lists(st.one_of(st.none(), documents), min_size=1, max_size=40), st.booleans(), st.sampled_from(SCHEMAS))
def test_partially_shredded_objects_equal_the_reference(docs: list[Any], shared: bool, schema: str) -> None:
    _check(variant_column(docs, shared, KEYS), schema)


@PROPS
@given(st.lists(st.one_of(st.none(), documents), min_size=1, max_size=30), st.booleans(), st.sampled_from(SCHEMAS))
def test_the_entry_by_entry_headers_equal_the_reference(docs: list[Any], shared: bool, schema: str) -> None:
    """With room for no shape group, every header takes the entry-by-entry writer."""
    saved = object_headers.MAX_GROUPS
    object_headers.MAX_GROUPS = 0
    try:
        _check(variant_column(docs, shared, KEYS), schema)
    finally:
        object_headers.MAX_GROUPS = saved


@settings(max_examples=15, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, 2**31), st.booleans())
def test_wide_residuals_and_many_shapes(seed: int, shared: bool) -> None:
    """Over 255 fields in a merged object (4-byte count, 2-byte ids), values past 64 KiB
    (wider offsets), and more row shapes than one group each."""
    rng = np.random.default_rng(seed)
    wide = [f"k{i:03d}" for i in range(300)]
    docs: list[Any] = []
    for i in range(60):
        d: dict[str, Any] = {"b": int(rng.integers(0, 100)), "m": {"x": i, **{k: i for k in rng.choice(wide, 4, replace=False)}}}
        if i % 7 == 0:
            d.update({k: int(rng.integers(0, 5)) for k in wide})
        if i % 11 == 0:
            d["z"] = "v" * 70_000
        d.update({k: "s" for k in rng.choice(wide, int(rng.integers(0, 6)), replace=False)})
        docs.append(d)
    col = variant_column(docs, shared, KEYS + wide)
    _check(col, "b bigint, m struct<x: bigint>")
    saved = object_headers.MAX_GROUPS
    object_headers.MAX_GROUPS = 3
    try:
        _check(col, "b bigint, m struct<x: bigint>")
    finally:
        object_headers.MAX_GROUPS = saved


def test_value_only_rows_keep_their_bytes() -> None:
    """Rows whose whole Variant is in ``value`` (not an object) next to merged rows read as stored."""
    docs: list[Any] = [{"b": i, "a": [i], "z": {"q": 1}} for i in range(20)] + ["text", 7, [1, {"b": 2}], None, {"b": "s"}]
    _check(variant_column(docs, False, KEYS + ["q"]), "b bigint")
    _check(variant_column(docs, True, KEYS + ["q"]), "b bigint, m struct<x: bigint>")


def test_merged_levels_do_not_reach_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Well-formed residuals at the top, in a nested object and in array elements merge
    column-wise (the reference path is never called)."""
    from varlake.shred import unshred_parts

    docs = [{"b": i, "a": i, "m": {"x": i, "c": [i], **({"z": "q"} if i % 2 else {})}, "x": [{"b": i, "z": 1}] * (i % 3), "~": 1} for i in range(50)]
    col = variant_column(docs, False, KEYS)
    shredded = shred(col, SCHEMAS[0])
    monkeypatch.setattr(unshred_parts, "reference_level", None)  # the fast path must not need it
    fast = variants_of(unshred_variant(shredded))
    assert fast == variants_of(col)


def test_strings_of_one_length_fuse_into_fixed_parts() -> None:
    """Strings of one length (ids, timestamps as text) become one part each, fixed-width
    when present in every row; fields present in the same rows fuse into one part."""
    from varlake.shred import unshred_parts

    docs: list[Any] = [
        {"b": f"{i:06d}", "m": {"b": f"{i:04d}", "l": "xy", "x": i, "n": "v" * (i % 5)}, "w": 1.5} if i % 3 else {"b": f"{i:06d}", "z": [i]}
        for i in range(90)
    ]
    docs[4] = None
    col = variant_column(docs, False, KEYS)
    fused: list[int] = []
    saved = unshred_parts._fuse_same_rows

    def spy(fields: list[Any]) -> list[Any]:
        out = saved(fields)
        fused.append(sum(1 for f in out if not f.parts))
        return out

    unshred_parts._fuse_same_rows = spy  # type: ignore[assignment]
    try:
        for schema in ("b string, m struct<b: string, l: string, x: bigint, n: string>", "m struct<l: string, b: string>, b string"):
            _check(col, schema)
    finally:
        unshred_parts._fuse_same_rows = saved  # type: ignore[assignment]
    assert max(fused) >= 1
