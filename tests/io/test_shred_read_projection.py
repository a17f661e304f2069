"""read_parquet(paths=...): the Variant at a path per row, reading only the columns it needs."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import test_shred_read_support as support
from test_shred_read_support import SQL_NULL

from varlake.errors import InvalidShreddedLayoutError, UnknownColumnError
from varlake.io.parquet_read import read_parquet
from varlake.shred import UNSHREDDED_TYPE, project_path
from varlake.shred.arrow_extension import VariantExtensionType
from varlake.variant import Variant, VariantPath

SCHEMA = pa.struct(
    [
        ("a", pa.int64()),
        ("b", pa.string()),
        ("c", pa.struct([("d", pa.float64()), ("e", pa.list_(pa.struct([("x", pa.int32())])))])),
    ]
)

VALUES: list[Any] = [
    {"a": 1, "b": "one", "c": {"d": 1.5, "e": [{"x": 1}, {"x": 2, "y": "extra"}]}},
    {"a": "not int", "z": {"deep": [1, 2]}, "c": {"d": None, "f": True}},
    {"b": "only b", "c": "c is a string"},
    [1, 2, 3],
    "scalar",
    None,
    SQL_NULL,
    {"a": 2, "c": {"e": ["not an object", {"x": 300000}, []]}},
    {},
]

PATHS = ["$", "$.a", "$.b", "$.c", "$.c.d", "$.c.f", "$.c.e", "$.c.e[0]", "$.c.e[1].x", "$.c.e[1].y", "$.c.e[5]",
         "$.z", "$.z.deep[1]", "$[0]", "$[2]", "$.nope", "$.a.b", "$.c.e.x"]


def _expected(value: Any, path: str) -> Variant | None:
    if value is SQL_NULL:
        return None
    return Variant.from_python(value).get(path)


def _path_rows(table: pa.Table, name: str) -> list[Variant | None]:
    assert table.schema.field(name).type == VariantExtensionType(UNSHREDDED_TYPE)
    return support.as_variants(table.column(name))


@pytest.mark.parametrize("typed_first", [False, True])
def test_paths_match_navigating_the_full_value(tmp_path: Path, typed_first: bool) -> None:
    column = support.shredded_column(VALUES, SCHEMA, typed_first)
    path = support.write_variant_file(tmp_path / "f.parquet", column, row_group_size=4)
    table = read_parquet(path, variant_columns=["v"], paths={"v": PATHS})
    assert table.column_names == ["id"] + [f"v:{p}" for p in PATHS]
    for p in PATHS:
        assert _path_rows(table, f"v:{p}") == [_expected(v, p) for v in VALUES], p


def test_kernel_on_in_memory_arrays() -> None:
    column = support.shredded_column(VALUES, SCHEMA)
    for p in PATHS:
        got = support.as_variants(project_path(column, p))
        assert got == [_expected(v, p) for v in VALUES], p
    chunked = pa.chunked_array([column.slice(0, 3), column.slice(3)])
    assert support.as_variants(project_path(chunked, VariantPath.parse("$.c.d"))) == [_expected(v, "$.c.d") for v in VALUES]
    for start in range(len(VALUES)):  # sliced arrays (non-zero offsets) through lists too
        for p in ("$.c.e[1].x", "$.c.e[0]", "$[2]"):
            got = support.as_variants(project_path(column.slice(start), p))
            assert got == [_expected(v, p) for v in VALUES[start:]], (start, p)


def test_columns_and_paths_together(tmp_path: Path) -> None:
    column = support.shredded_column(VALUES, SCHEMA)
    path = support.write_variant_file(tmp_path / "f.parquet", column)
    with_v = read_parquet(path, columns=["v"], variant_columns=["v"], paths={"v": "$.a"})
    assert with_v.column_names == ["v", "v:$.a"]
    assert support.as_variants(with_v.column("v")) == support.expected_variants(VALUES)
    with pytest.raises(InvalidShreddedLayoutError, match="not a top-level Variant column"):
        read_parquet(path, paths={"id": ["$.a"]})
    with pytest.raises(UnknownColumnError):
        read_parquet(path, variant_columns=["v"], paths={"nope": ["$.a"]})


def test_projection_rejects_a_shredded_field_repeated_in_the_residual() -> None:
    typed = pa.array([{"a": {"value": None, "typed_value": 1}}], pa.struct([pa.field("a", support.level_type(pa.int64()), False)]))
    group = pa.StructArray.from_arrays(
        [pa.array([b"\x01\x01\x00\x01a"]), pa.array([b"\x02\x01\x00\x00\x02\x0c\x02"]), typed], ["metadata", "value", "typed_value"]
    )
    with pytest.raises(InvalidShreddedLayoutError, match=r"row 0, path \$: field 'a' is both shredded"):
        project_path(group, "$.a")


def test_keys_with_dots_and_quotes(tmp_path: Path) -> None:
    values = [{"a.b": 1, "a": {"b": 2}, "it's": [3]}, {"a.b": "x"}]
    schema = pa.struct([("a.b", pa.int64()), ("a", pa.struct([("b", pa.int64())])), ("it's", pa.list_(pa.int64()))])
    path = support.write_variant_file(tmp_path / "f.parquet", support.shredded_column(values, schema))
    wanted = ["$['a.b']", "$.a.b", '$["it\'s"][0]']
    table = read_parquet(path, variant_columns=["v"], paths={"v": wanted})
    for p in wanted:
        assert _path_rows(table, f"v:{p}") == [_expected(v, p) for v in values], p
    assert _path_rows(table, "v:$['a.b']") == [Variant.from_python(1), Variant.from_python("x")]


# --- reading only what a path needs ----------------------------------------------------------------


class RecordingFile(io.FileIO):
    """A file that remembers every byte range read from it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, "rb")
        self.reads: list[tuple[int, int]] = []

    def read(self, size: int = -1) -> bytes:
        start = self.tell()
        out = super().read(size)
        self.reads.append((start, len(out)))
        return out

    def readinto(self, buffer: Any) -> int:
        start = self.tell()
        n = super().readinto(buffer) or 0
        self.reads.append((start, n))
        return n


def _chunk_ranges(path: Path) -> dict[tuple[int, str], tuple[int, int]]:
    md = pq.ParquetFile(path).metadata
    ranges = {}
    for rg in range(md.num_row_groups):
        for j in range(md.num_columns):
            c = md.row_group(rg).column(j)
            start = c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset
            ranges[(rg, c.path_in_schema)] = (start, start + c.total_compressed_size)
    return ranges


def test_path_reads_only_the_columns_it_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = 20_000
    big = "x" * 100
    # row group 0: some rows keep a residual (top-level value non-null); row group 1: none do
    values = [{"a": i, "b": f"{big}{i}", "c": {"d": float(i)}, **({"r": i} if i % 7 == 0 and i < n // 2 else {})} for i in range(n)]
    column = support.shredded_column(values, SCHEMA)
    path = support.write_variant_file(tmp_path / "f.parquet", column, row_group_size=n // 2, use_dictionary=False)

    requested: list[tuple[int, list[str]]] = []
    original = pq.ParquetFile.read_row_group

    def spy(self: pq.ParquetFile, i: int, columns: list[str] | None = None, **kw: Any) -> pa.Table:
        requested.append((i, sorted(columns or [])))
        return original(self, i, columns=columns, **kw)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", spy)
    with RecordingFile(path) as f:
        table = read_parquet(f, columns=[], variant_columns=["v"], paths={"v": ["$.a"]})
        reads = list(f.reads)
    assert support.as_variants(table.column("v:$.a")) == [Variant.from_python(i) for i in range(n)]
    assert requested == [
        (0, ["v.metadata", "v.typed_value.a.typed_value", "v.value"]),  # top-level value has residuals here
        (1, ["v.metadata", "v.typed_value.a.typed_value"]),  # all-null per footer statistics: skipped
    ]
    ranges = _chunk_ranges(path)
    size = path.stat().st_size
    data_reads = [(s, ln) for s, ln in reads if s + ln < size]  # reads reaching the end are footer reads
    touched = {key for key, (lo, hi) in ranges.items() if any(s < hi and s + ln > lo for s, ln in data_reads)}
    assert (0, "v.typed_value.a.typed_value") in touched and (1, "v.typed_value.a.typed_value") in touched
    for never in ("v.typed_value.b.typed_value", "v.typed_value.c.typed_value.d.typed_value", "id"):
        assert (0, never) not in touched and (1, never) not in touched, never
    # (tiny all-null chunks lying between two requested ones may still be fetched: pyarrow's
    # pre-buffering coalesces reads across holes smaller than 8 KiB; they are not decoded.)


def test_path_into_arrays_and_objects_plans_the_subtree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    values = [{"a": 1, "c": {"d": 2.0, "e": [{"x": 1}, {"x": 2}]}}, {"c": {"e": [{"x": 3, "q": 1}]}}]
    column = support.shredded_column(values, SCHEMA)
    path = support.write_variant_file(tmp_path / "f.parquet", column)
    requested: list[list[str]] = []
    original = pq.ParquetFile.read_row_group

    def spy(self: pq.ParquetFile, i: int, columns: list[str] | None = None, **kw: Any) -> pa.Table:
        requested.append(sorted(columns or []))
        return original(self, i, columns=columns, **kw)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", spy)
    table = read_parquet(path, columns=[], variant_columns=["v"], paths={"v": ["$.c.e[0]"]})
    assert _path_rows(table, "v:$.c.e[0]") == [Variant.from_python({"x": 1}), Variant.from_python({"x": 3, "q": 1})]
    element = "v.typed_value.c.typed_value.e.typed_value.list.element"
    assert requested == [sorted(["v.metadata", f"{element}.value", f"{element}.typed_value.x.typed_value"])]
