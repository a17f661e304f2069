"""``read.file_columns`` answers as the per-file code does: relative paths (and the first bad
one raises) and groups of files by partition values (absent, null and repeated keys)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.delta.paths import relative_data_path
from varlake.errors import UnsafePathError
from varlake.read.file_columns import partition_groups, relative_paths

ROOT = "/data/t"
PATHS = [
    "a.parquet", "p=1/a.parquet", "p=1//a.parquet", "./a.parquet", "p=1/./a.parquet", "p=1/", ".", "..",
    "../x", "p/../a", "p/..", ".hidden/a", "a%20b.parquet", "a%2Fb", "%2E%2E/x", "/data/t/a.parquet",
    "/data/other/a", "file:///data/t/a.parquet", "s3://b/t/a", "C:\\x", "p\\a", "_delta_log/0.json",
    "_delta_log", "_delta_logs/a", "", "a\x00b", "a/.b", "a.b/c", "é/ü.parquet", "a:b",
]  # fmt: skip


def _one(path: str) -> str | type:
    try:
        return relative_data_path(path, ROOT, f"add {path!r}")
    except UnsafePathError:
        return UnsafePathError


@pytest.mark.parametrize("path", PATHS)
def test_each_path_as_the_per_file_check_has_it(path: str) -> None:
    expected = _one(path)
    paths = pa.chunked_array([["ok.parquet", path, "q=2/b.parquet"]], pa.string())
    if expected is UnsafePathError:
        with pytest.raises(UnsafePathError, match=f"add {path!r}".replace("\\", "\\\\")[:8]):
            relative_paths(paths, ROOT)
    else:
        assert relative_paths(paths, ROOT) == ["ok.parquet", expected, "q=2/b.parquet"]


def test_the_first_bad_path_raises() -> None:
    paths = pa.chunked_array([["a", "../one"], ["b", "/elsewhere/two"]], pa.string())
    with pytest.raises(UnsafePathError, match="one"):
        relative_paths(paths, ROOT)


MAP = pa.map_(pa.string(), pa.string())
entries = st.lists(st.tuples(st.sampled_from(["p", "q", "r"]), st.one_of(st.none(), st.sampled_from(["1", "2", ""]))), max_size=4)
maps = st.one_of(st.none(), entries)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(maps, max_size=12), keys=st.lists(st.sampled_from(["p", "q", "x"]), max_size=3, unique=True),
       split=st.integers(0, 12))  # fmt: skip
def test_groups_as_a_dict_of_partition_values_makes_them(rows, keys, split) -> None:
    absent = object()
    expected: dict[tuple[object, ...], list[int]] = {}
    for i, row in enumerate(rows):
        values = dict(row) if row else {}
        expected.setdefault(tuple(values.get(k, absent) for k in keys), []).append(i)
    split = min(split, len(rows))
    column = pa.chunked_array([pa.array(rows[:split], MAP), pa.array(rows[split:], MAP)])
    got = partition_groups(column, keys)
    assert [g.tolist() for g in got] == list(expected.values())
    assert all(g.dtype == np.int64 for g in got)


def test_groups_of_many_distinct_values_in_many_keys() -> None:
    keys = [f"k{j}" for j in range(7)]  # 700 values a key: too many sets to number in one int64
    rows = [[(k, str((i * 7919 + j * 13) % 700)) for j, k in enumerate(keys)] for i in range(700)] + [[], None]
    rows += rows[:5]
    absent = object()
    expected: dict[tuple[object, ...], list[int]] = {}
    for i, row in enumerate(rows):
        values = dict(row) if row else {}
        expected.setdefault(tuple(values.get(k, absent) for k in keys), []).append(i)
    got = partition_groups(pa.chunked_array([pa.array(rows, MAP)]), keys)
    assert [g.tolist() for g in got] == list(expected.values())
