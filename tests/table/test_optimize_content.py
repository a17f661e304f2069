"""OPTIMIZE's content check (``varlake.write.maintenance.content_check``): a rewrite corrupted on purpose --
a shredded value turned into NULL inside the shredder, a row dropped, a value changed --
aborts with ``ContentCheckError`` before anything is committed; logically equal rows with
other bytes (another shredding layout, another Variant encoding) pass.

Oracles: the table's version and rows before and after; hand-built Arrow tables.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import varlake.io.parquet_write as parquet_write
from optimize_tables import logical_rows, mixed_table, null_first_typed
from varlake import Table
from varlake.errors import ContentCheckError
from varlake.variant import Variant, parse_json
from varlake.write.maintenance.content_check import check_same_rows, logical_hashes, row_hashes


def _v(value: object) -> dict[str, bytes]:
    v = value if isinstance(value, Variant) else Variant.from_python(value)
    return {"metadata": v.metadata, "value": v.value}


def _variants(items: list[object]) -> pa.Array:
    return pa.array(
        [None if i is None else _v(i) for i in items],
        pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)]),
    )


def test_equal_multisets_pass_in_any_order() -> None:
    t = pa.table({"id": [1, 2, 2, None], "v": _variants([{"a": 1}, [1, 2], [1, 2], None])})
    assert check_same_rows(t, t.take([3, 2, 0, 1]), "here") == 4


def test_logically_equal_variants_with_other_bytes_pass() -> None:
    read = pa.table({"id": [1, 2, 3], "v": _variants([{"a": 1, "b": "x"}, Decimal("2.50"), parse_json('{"z": [1, 2]}')])})
    written = pa.table({"id": [3, 1, 2], "v": _variants([{"z": [1, 2]}, {"b": "x", "a": 1}, Decimal("2.5")])})
    assert sorted(row_hashes(read).hashes.tolist()) != sorted(row_hashes(written).hashes.tolist())  # other bytes
    assert check_same_rows(read, written, "here") == 3


@pytest.mark.parametrize(
    ("written_v", "written_id"),
    [
        ([{"a": 1, "b": "x"}, {"a": None}], [1, 2]),  # a value turned into a Variant null
        ([{"a": 1, "b": "x"}, None], [1, 2]),  # a whole Variant lost
        ([{"a": 1, "b": "x"}, {"a": 2}], [1, 3]),  # a plain column changed
        ([{"a": 1, "b": "x"}, {"a": 2}, {"a": 2}], [1, 2, 2]),  # a duplicated row
        ([{"a": 1, "b": "x"}, {"a": 2.0}], [1, 2]),  # int 2 became double 2.0: another value
    ],
)
def test_any_difference_is_named(written_v: list[object], written_id: list[int]) -> None:
    read = pa.table({"id": [1, 2], "v": _variants([{"a": 1, "b": "x"}, {"a": 2}])})
    written = pa.table({"id": written_id, "v": _variants(written_v)})
    with pytest.raises(ContentCheckError, match="nothing was committed"):
        check_same_rows(read, written, "t: OPTIMIZE")


def test_logical_digests_are_deterministic_and_ignore_field_order() -> None:
    a = pa.table({"v": _variants([{"x": 1, "y": {"p": True}}])})
    b = pa.table({"v": _variants([parse_json('{"y": {"p": true}, "x": 1}')])})
    assert logical_hashes(a).tobytes() == logical_hashes(b).tobytes() == logical_hashes(a).tobytes()
    c = pa.table({"v": _variants([{"x": 1, "y": {"p": False}}])})
    assert logical_hashes(a).tobytes() != logical_hashes(c).tobytes()


def test_a_shredded_value_nulled_by_the_writer_aborts_the_optimize(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The silent-null failure: the shredder drops the typed value of ``a`` in one row."""
    t = mixed_table(tmp_path / "t")
    version, before, files = t.version, logical_rows(t), {f.path for f in t.files()}
    original = parquet_write.shred

    def corrupt(*args: object, **kwargs: object) -> pa.StructArray:
        return null_first_typed(original(*args, **kwargs), "a")

    monkeypatch.setattr(parquet_write, "shred", corrupt)
    with pytest.raises(ContentCheckError, match="were not written as they were"):
        t.optimize()
    monkeypatch.undo()
    assert t.version == version and logical_rows(t) == before
    assert {p.name for p in Path(t.path).glob("*.parquet")} == files  # the corrupt files were deleted


def test_a_dropped_row_aborts_the_optimize(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = mixed_table(tmp_path / "t")
    version = t.version
    original = Table.stage

    def lossy(self: Table, data: pa.Table, *args: object, **kwargs: object) -> object:
        return original(self, data.slice(1), *args, **kwargs)

    monkeypatch.setattr(Table, "stage", lossy)
    with pytest.raises(ContentCheckError, match="read 500 rows and wrote 499"):
        t.optimize()
    assert t.version == version


def test_a_changed_variant_aborts_the_optimize(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = mixed_table(tmp_path / "t")
    version = t.version
    original = Table.stage

    def altered(self: Table, data: pa.Table, *args: object, **kwargs: object) -> object:
        v = data.column("v").to_pylist()
        v[7] = _v({"a": 7, "b": "k1", "c": {"d": 15}})  # d was 14
        return original(self, data.set_column(data.schema.get_field_index("v"), "v", pa.array(v, data.schema.field("v").type)), *args, **kwargs)

    monkeypatch.setattr(Table, "stage", altered)
    with pytest.raises(ContentCheckError, match="1 of 500 rows"):
        t.optimize()
    assert t.version == version


def test_variants_inside_structs_are_compared_logically() -> None:
    struct = pa.struct([pa.field("k", pa.int64()), pa.field("v", _variants([{"a": 1}]).type)])

    def table(v: object, k: int | None = 1) -> pa.Table:
        inner = pa.StructArray.from_arrays([pa.array([k], pa.int64()), _variants([v])], fields=list(struct))
        return pa.table({"s": inner})

    assert check_same_rows(table(Decimal("2.50")), table(Decimal("2.5")), "here") == 1
    with pytest.raises(ContentCheckError):
        check_same_rows(table({"a": 1}), table({"a": None}), "here")
    with pytest.raises(ContentCheckError):
        check_same_rows(table({"a": 1}), table({"a": 1}, k=2), "here")


@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=30), st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=30))
def test_the_multiset_difference_of_hashes_is_exact(left: list[tuple[int, int]], right: list[tuple[int, int]]) -> None:
    """``_differences`` (two radix sorts and run counts) against ``collections.Counter``."""
    from collections import Counter

    from varlake.write.maintenance.content_check import _differences

    def pairs(items: list[tuple[int, int]]) -> np.ndarray:
        out = np.empty(len(items), dtype=[("a", np.uint64), ("b", np.uint64)])
        out["a"] = [(a << 62) + a for a, _ in items]  # high bits too
        out["b"] = [b for _, b in items]
        return out

    only_left, only_right = _differences(pairs(left), pairs(right))
    assert Counter(left[i] for i in only_left) == Counter(left) - Counter(right)
    assert Counter(right[i] for i in only_right) == Counter(right) - Counter(left)
    assert len(set(only_left.tolist())) == len(only_left) and len(set(only_right.tolist())) == len(only_right)
