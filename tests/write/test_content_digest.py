"""``multiset_digest``: an aggregable digest of a multiset of logical rows (the Spark
OPTIMIZE's content check on the executors).

- order and partition independent: the digest of a table equals the combination of the
  digests of its rows shuffled and split into parts (hypothesis);
- a changed, dropped or added row changes it; rows whose Variants differ only in their bytes
  (another encoding of the same logical value) do not;
- the same in another process (executors and the driver must agree).
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import reduce

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.variant import Variant
from varlake.write.maintenance.content_check import MultisetDigest, multiset_digest

_VARIANT = pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary())])


def _variant_cell(value: object) -> dict[str, bytes] | None:
    if value is None:
        return None
    v = Variant.from_python(value)
    return {"metadata": v.metadata, "value": v.value}


def _table(rows: list[tuple[int | None, str | None, object]]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "s": pa.array([r[1] for r in rows], pa.string()),
            "v": pa.array([_variant_cell(r[2]) for r in rows], _VARIANT),
        }
    )


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abcd"), inner, max_size=3),
    max_leaves=6,
)
_rows = st.lists(st.tuples(st.none() | st.integers(-5, 5), st.none() | st.sampled_from(["x", "y", ""]), _json), max_size=25)


@settings(derandomize=True, database=None, max_examples=60, deadline=None)
@given(rows=_rows, data=st.data())
def test_the_digest_is_order_and_partition_independent(rows: list, data: st.DataObject) -> None:
    table = _table(rows)
    order = data.draw(st.permutations(range(len(rows))))
    shuffled = table.take(pa.array(order, pa.int64())) if rows else table
    cuts = sorted(data.draw(st.lists(st.integers(0, len(rows)), max_size=4)))
    bounds = [0, *cuts, len(rows)]
    parts = [shuffled.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]
    combined = reduce(MultisetDigest.combine, (multiset_digest(p, "part") for p in parts), MultisetDigest())
    assert combined == multiset_digest(table, "whole")
    assert combined.rows == len(rows)


@settings(derandomize=True, database=None, max_examples=40, deadline=None)
@given(rows=_rows.filter(bool), data=st.data())
def test_a_changed_dropped_or_added_row_changes_the_digest(rows: list, data: st.DataObject) -> None:
    table = _table(rows)
    digest = multiset_digest(table)
    i = data.draw(st.integers(0, len(rows) - 1))
    changed = list(rows)
    changed[i] = (rows[i][0], rows[i][1], {"changed": rows[i][2]})
    assert multiset_digest(_table(changed)) != digest
    assert multiset_digest(_table(rows[:i] + rows[i + 1 :])) != digest
    assert multiset_digest(_table(rows + [rows[i]])) != digest  # a duplicate counts


def test_equal_logical_values_in_other_bytes_digest_alike() -> None:
    from decimal import Decimal

    one = Variant.from_python({"a": 1, "b": "x"})
    other = Variant.from_python({"b": "x", "a": Decimal("1.00")})  # a decimal 1.00 for the int 1
    assert (other.metadata, other.value) != (one.metadata, one.value)
    a = pa.table({"v": pa.array([{"metadata": one.metadata, "value": one.value}], _VARIANT)})
    b = pa.table({"v": pa.array([{"metadata": other.metadata, "value": other.value}], _VARIANT)})
    assert multiset_digest(a) == multiset_digest(b)
    c = pa.table({"v": pa.array([{"metadata": one.metadata, "value": Variant.from_python({"a": 2, "b": "x"}).value}], _VARIANT)})
    assert multiset_digest(c) != multiset_digest(a)


def test_a_sql_null_and_a_variant_null_differ() -> None:
    null = Variant.from_python(None)
    a = pa.table({"v": pa.array([None], _VARIANT)})
    b = pa.table({"v": pa.array([{"metadata": null.metadata, "value": null.value}], _VARIANT)})
    assert multiset_digest(a) != multiset_digest(b)


def test_the_digest_is_the_same_in_another_process() -> None:
    rows = [(i, "xy"[i % 2], {"a": i, "b": [i, str(i)]}) for i in range(50)]
    here = multiset_digest(_table(rows)).as_tuple()
    code = (
        "import json, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from test_content_digest import _table\n"
        "from varlake.write.maintenance.content_check import multiset_digest\n"
        "rows = [(i, 'xy'[i % 2], {'a': i, 'b': [i, str(i)]}) for i in range(50)]\n"
        "print(json.dumps(multiset_digest(_table(rows)).as_tuple()))\n"
    )
    import os

    out = subprocess.run(
        [sys.executable, "-c", code, os.path.dirname(__file__)], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )  # fmt: skip
    assert tuple(json.loads(out.stdout)) == here


def test_signed_round_trip() -> None:
    d = multiset_digest(_table([(1, "x", {"a": 1}), (2, None, None)]))
    signed = [v - (1 << 64) if v >= 1 << 63 else v for v in d.as_tuple()]
    assert all(-(1 << 63) <= v < 1 << 63 for v in signed)
    assert MultisetDigest.from_signed(signed) == d
    assert d + MultisetDigest() == d


@pytest.mark.parametrize("n", [0, 1])
def test_small_tables(n: int) -> None:
    d = multiset_digest(_table([(1, "x", 1)] * n))
    assert d.rows == n and (n or d == MultisetDigest())
