"""String leaves proven to hold only ISO dates (``io.date_leaves``): the footer picks the
candidates, every value of a candidate is read and checked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from varlake.io.date_leaves import date_leaves, leaf_values
from varlake.semantics.datetime_text import is_iso_date_text

LEAF = pa.struct([("value", pa.binary()), ("typed_value", pa.string())])
ITEM = pa.struct([("typed_value", pa.struct([("d", LEAF), ("n", LEAF)]))])
SCHEMA = pa.schema([
    ("v", pa.struct([
        ("value", pa.binary()),
        ("typed_value", pa.struct([
            ("day", LEAF),
            ("note", LEAF),
            ("items", pa.struct([("value", pa.binary()), ("typed_value", pa.list_(pa.field("element", ITEM)))])),
        ])),
    ])),
])  # fmt: skip
DAY = "v.typed_value.day.typed_value"
NOTE = "v.typed_value.note.typed_value"
ITEM_D = "v.typed_value.items.typed_value.list.element.typed_value.d.typed_value"
ITEM_N = "v.typed_value.items.typed_value.list.element.typed_value.n.typed_value"


def _leaf(text: str | None) -> dict[str, Any]:
    return {"value": None, "typed_value": text}


def _row(day: str | None, note: str | None, items: list[tuple[str | None, str | None]] | None) -> dict[str, Any]:
    typed_items = None if items is None else [{"typed_value": {"d": _leaf(d), "n": _leaf(n)}} for d, n in items]
    return {"v": {"value": None, "typed_value": {"day": _leaf(day), "note": _leaf(note), "items": {"value": None, "typed_value": typed_items}}}}


def _write(path: Path, rows: list[dict[str, Any]], row_group_size: int = 1000) -> pq.FileMetaData:
    pq.write_table(pa.Table.from_pylist(rows, SCHEMA), path, row_group_size=row_group_size)
    return pq.read_metadata(path)


class _Reader:
    """Reads columns of one file and remembers which were asked for."""

    def __init__(self, path: Path) -> None:
        self.path, self.asked = path, []  # type: list[list[str]]

    def __call__(self, columns: list[str]) -> Iterator[pa.Table]:
        self.asked.append(columns)
        parquet = pq.ParquetFile(self.path)
        for group in range(parquet.num_row_groups):
            yield parquet.read_row_group(group, columns=columns)


ALL = [DAY, NOTE, ITEM_D, ITEM_N]


def test_dates_at_the_top_and_in_arrays_of_objects_are_proven(tmp_path: Path) -> None:
    rows = [_row(f"1995-01-{i + 1:02d}", "x", [(f"1996-02-{i + 1:02d}", "n"), (None, None)]) for i in range(28)]
    rows += [_row(None, None, None), _row("2000-02-29", "y", [])]
    path = tmp_path / "f.parquet"
    meta = _write(path, rows, row_group_size=7)
    read = _Reader(path)
    assert date_leaves(meta, ALL, read) == {DAY, ITEM_D}
    assert read.asked == [[DAY, ITEM_D]]  # the notes' footer bounds are no dates: never read


def test_reading_stops_when_no_candidate_is_left(tmp_path: Path) -> None:
    """``1995-02-30`` sorts between its row group's bounds: the first row group read drops the leaf."""
    rows = [_row("1995-01-01", None, None), _row("1995-02-30", None, None)] + [_row("1995-12-31", None, None)] * 7
    path = tmp_path / "f.parquet"
    meta = _write(path, rows, row_group_size=3)
    groups: list[int] = []

    def read(columns: list[str]) -> Iterator[pa.Table]:
        parquet = pq.ParquetFile(path)
        for group in range(parquet.num_row_groups):
            groups.append(group)
            yield parquet.read_row_group(group, columns=columns)

    assert date_leaves(meta, [DAY], read) == frozenset()
    assert groups == [0]


def test_a_bad_day_between_good_bounds_is_found_in_the_values(tmp_path: Path) -> None:
    """``1995-02-30`` has the shape and sorts between the bounds: only the values tell."""
    rows = [_row("1995-01-01", "x", [("1995-01-01", "n")]), _row("1995-03-01", "x", [("1995-02-30", "n"), ("1995-03-01", "n")])]
    rows += [_row("1995-02-28", "x", [("1995-02-28", None)])]
    path = tmp_path / "f.parquet"
    meta = _write(path, rows)
    assert date_leaves(meta, ALL, _Reader(path)) == {DAY}


def test_other_spellings_spark_reads_as_dates_are_not_proven(tmp_path: Path) -> None:
    for i, bad in enumerate(["1995-1-05", " 1995-01-05", "1995-01-05T00:00", "1995-01-05\n"]):
        path = tmp_path / f"f{i}.parquet"
        meta = _write(path, [_row("1995-01-01", None, None), _row(bad, None, None), _row("1995-12-31", None, None)])
        assert date_leaves(meta, [DAY], _Reader(path)) == frozenset(), bad


def test_leaves_without_values_are_vacuously_proven_and_absent_columns_ignored(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    meta = _write(path, [_row(None, None, None), _row(None, "1995-01-01", [])])
    assert date_leaves(meta, [DAY, NOTE, ITEM_D, "v.typed_value.nothing.typed_value"], _Reader(path)) == {DAY, NOTE, ITEM_D}


def test_an_unreadable_file_proves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    meta = _write(path, [_row("1995-01-01", None, None)])

    def broken(columns: list[str]) -> Iterator[pa.Table]:
        yield pq.read_table(path, columns=columns)
        raise OSError("gone")

    assert date_leaves(meta, [DAY], broken) == frozenset()


def test_values_under_null_parents_are_not_values(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    _write(path, [_row("1995-01-01", None, [("1995-01-02", None)]), _row(None, None, None), {"v": None}])
    table = pq.ParquetFile(path).read(columns=[DAY, ITEM_D])
    assert leaf_values(table, DAY).to_pylist() == ["1995-01-01", None, None]
    assert leaf_values(table, ITEM_D).to_pylist() == ["1995-01-02"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    days=st.lists(
        st.one_of(st.none(), st.dates().map(lambda d: d.isoformat()), st.sampled_from(["1995-02-30", "1995-1-1", "x", "1995-01-01 "])),
        min_size=1,
        max_size=30,
    ),
    group=st.integers(1, 8),
)
def test_proven_exactly_when_every_value_matches(tmp_path: Path, days: list[str | None], group: int) -> None:
    path = tmp_path / "f.parquet"
    meta = _write(path, [_row(d, None, [(d, None)]) for d in days], row_group_size=group)
    expected = all(d is None or is_iso_date_text(d) for d in days)
    assert date_leaves(meta, [DAY, ITEM_D], _Reader(path)) == ({DAY, ITEM_D} if expected else frozenset())


def test_bounds_that_are_no_utf8_are_no_candidates(tmp_path: Path) -> None:
    """A hostile file's string leaf with bytes that are no UTF-8: its footer bounds cannot be
    decoded (pyarrow raises on them); the leaf is simply not proven, and nothing is read."""
    data = b"\xff\xfe1995-01-01"
    offsets = pa.py_buffer(bytes([0, 0, 0, 0, len(data), 0, 0, 0]))
    broken = pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])
    leaf = pa.StructArray.from_arrays([pa.nulls(1, pa.binary()), broken], names=["value", "typed_value"])
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"v": pa.StructArray.from_arrays([leaf], names=["day"])}), path)
    read = _Reader(path)
    assert date_leaves(pq.read_metadata(path), ["v.day.typed_value"], read) == frozenset()
    assert read.asked == []
