"""Data files varlake writes carry page CRCs, and every read varlake does verifies them:
a flipped byte inside a data page is a named error naming the file, never different values."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from varlake.errors import VarlakeError
from varlake.io.parquet_read import read_parquet
from varlake.io.parquet_write import write_parquet


def _page_ranges(path: Path) -> list[tuple[int, int]]:
    """Byte ranges of the column chunks' pages (header and data) in the file."""
    meta = pq.read_metadata(path)
    out = []
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            col = meta.row_group(g).column(c)
            start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
            out.append((start, start + col.total_compressed_size))
    return out


def test_flipped_bytes_in_data_pages_never_read_as_other_values(tmp_path: Path) -> None:
    rng = random.Random(11)
    table = pa.table({"id": pa.array(range(2000), pa.int64()), "s": [f"value-{i % 97}" for i in range(2000)]})
    clean = tmp_path / "clean.parquet"
    write_parquet(table, clean, compression="none")
    data = clean.read_bytes()
    ranges = _page_ranges(clean)
    wrong = raised = 0
    for trial in range(200):
        start, end = ranges[trial % len(ranges)]
        at = rng.randrange(start, end)
        broken = bytearray(data)
        broken[at] ^= 1 << rng.randrange(8)
        path = tmp_path / f"b{trial}.parquet"
        path.write_bytes(bytes(broken))
        try:
            got = read_parquet(path)
        except VarlakeError as exc:
            assert str(path) in str(exc)
            raised += 1
            continue
        if got.to_pylist() != table.to_pylist():
            wrong += 1
    assert wrong == 0, f"{wrong} of 200 flips read as different values ({raised} raised)"
    assert raised > 150
