"""The Z-values of the Spark OPTIMIZE (``spark.zorder.z_values``), without Spark.

- with every distinct value in the sample, one key orders rows as the Python path's
  ``clustering.zorder_indices`` does (dense ranks: NULLs first, strings by their bytes,
  NaN last);
- for every key type Spark gives (numbers, decimals, dates, timestamps, booleans, text,
  bytes) the Z-value is monotone in the value, with bounds from a sample too;
- with two keys, the Z-value grows with each key while the other stays (the Z-curve).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake import Table
from varlake.spark.changes.zorder import _bounds, z_values
from varlake.write.maintenance.clustering import parse_keys, zorder_indices

_LIMIT = (1 << 31) - 2


def _order(values: list, bounds_from: list | None = None) -> list:
    array = pa.array(values)
    bounds = _bounds(pa.array(bounds_from, array.type) if bounds_from is not None else array, _LIMIT)
    z = z_values([array], [bounds])
    return [values[i] for i in np.argsort(z, kind="stable")]


@pytest.fixture(scope="module")
def string_key(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    return parse_keys(["s"], Table.create(tmp_path_factory.mktemp("z") / "t", "s string").snapshot())


@settings(derandomize=True, database=None, max_examples=50, deadline=None)
@given(values=st.lists(st.none() | st.text(alphabet="aAzé€😀\x00", max_size=3), max_size=30))
def test_one_key_orders_as_the_python_path(string_key: tuple, values: list) -> None:
    keys = string_key
    rows = pa.table({"s": pa.array(values, pa.string())})
    python = [values[i] for i in zorder_indices(rows, keys)]
    spark = _order(values) if values else []
    assert [v is None for v in spark] == [v is None for v in python]
    assert spark == python or [(v or "").encode() for v in spark] == [(v or "").encode() for v in python]


@pytest.mark.parametrize(
    "values",
    [
        [3, None, -(2**62), 7, 2**62, 0],
        [1.5, float("nan"), None, -0.5, float("inf"), -float("inf")],
        [Decimal("1.10"), None, Decimal("-3.00"), Decimal("99999.99")],
        [dt.date(2024, 1, 2), None, dt.date(1969, 12, 31), dt.date(9999, 1, 1)],
        [dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc), None, dt.datetime(1900, 1, 1, tzinfo=dt.timezone.utc)],
        [True, None, False],
        ["b", "a", None, "é", "\x7f", "ab"],
        [b"\xff", b"", None, b"\x00\x01", b"\x7f"],
    ],
    ids=["long", "double", "decimal", "date", "timestamp", "boolean", "string", "binary"],
)
def test_z_is_monotone_in_every_key_type(values: list) -> None:
    present = [v for v in values if v is not None]
    expected = [None] * (len(values) - len(present)) + sorted(present, key=_sort_key)
    assert _order(values) == expected or _nan_equal(_order(values), expected)
    sampled = _order(values, bounds_from=present[:2])  # ranks from a two-value sample: ties allowed
    ranks = [_sort_key(v) for v in sampled if v is not None]
    assert sampled[: len(values) - len(present)] == [None] * (len(values) - len(present))
    coarse = z_values([pa.array(sampled)], [_bounds(pa.array(present[:2], pa.array(values).type), _LIMIT)])
    assert list(coarse) == sorted(coarse) and len(ranks) == len(present)


def _sort_key(v: object) -> object:
    if isinstance(v, float) and v != v:
        return (1, 0.0)
    if isinstance(v, float):
        return (0, v)
    if isinstance(v, str):
        return v.encode()
    return v


def _nan_equal(a: list, b: list) -> bool:
    return len(a) == len(b) and all((x != x and y != y) or x == y for x, y in zip(a, b))


def test_two_keys_follow_the_z_curve() -> None:
    a = pa.array([i % 8 for i in range(64)])
    b = pa.array([i // 8 for i in range(64)])
    z = z_values([a, b], [_bounds(a, _LIMIT), _bounds(b, _LIMIT)])
    grid = {(x, y): int(v) for x, y, v in zip(a.to_pylist(), b.to_pylist(), z)}
    for x in range(8):
        for y in range(7):
            assert grid[(x, y)] < grid[(x, y + 1)] and grid[(y, x)] < grid[(y + 1, x)]
    assert len(set(grid.values())) == 64 and min(grid.values()) >= 0
