"""Spark jobs varlake runs write page CRCs and verify them (issue 11 item 8, Spark side).

Every data page of a file varlake's Spark writer produces carries a CRC32 in its page
header, and varlake's Spark reads verify them: a flipped byte inside a data page fails
the query with Spark's FAILED_READ_FILE naming the file, never returns other values.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from varlake import Table
from varlake.io.thrift_compact import CompactReader
from varlake.spark import read, write

pytestmark = pytest.mark.spark

PAGE_HEADER_CRC = 4  # PageHeader.crc in parquet.thrift


def _page_headers(path: Path) -> list[tuple[int, int, bool]]:
    """(column chunk start, end, first page header has a crc) of every column chunk."""
    data = path.read_bytes()
    meta = pq.read_metadata(path)
    out = []
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            col = meta.row_group(g).column(c)
            start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
            end = start + col.total_compressed_size
            header = CompactReader(data[start:end], str(path)).struct()
            out.append((start, end, header.get(PAGE_HEADER_CRC) is not None))
    return out


def test_spark_written_pages_carry_crcs(spark, tmp_path: Path) -> None:
    df = spark.sql("SELECT id, parse_json(format_string('{\"a\": %d, \"s\": \"x%d\"}', id, id % 5)) AS v FROM range(5000)")
    write(df, tmp_path / "t")
    files = [tmp_path / "t" / f.path for f in Table(tmp_path / "t").files()]
    assert files
    headers = [h for f in files for h in _page_headers(f)]
    assert headers and all(has_crc for _, _, has_crc in headers), headers


def test_spark_reads_verify_page_crcs(spark, tmp_path: Path) -> None:
    """Flips inside the data pages of an uncompressed file: each read is right or fails naming the file."""
    expected = [(i, f"value-{i % 97}") for i in range(3000)]
    base = tmp_path / "base"
    table = Table.create(base, pa.schema([("id", pa.int64()), ("s", pa.string())]))
    table.append(pa.table({"id": [i for i, _ in expected], "s": [s for _, s in expected]}))
    (data_file,) = [base / f.path for f in table.files()]
    # Rewrite the one data file uncompressed (same rows, with CRCs) so that a flipped bit changes
    # values instead of breaking a decompressor: only the checksum can catch it.
    rows = pq.read_table(data_file)
    pq.write_table(rows, data_file, compression="none", write_page_checksum=True, use_dictionary=False)
    assert sorted(tuple(r) for r in read(spark, base).collect()) == expected
    clean = data_file.read_bytes()
    ranges = [(s, e) for s, e, _ in _page_headers(data_file)]
    rng = random.Random(5)
    wrong = failed = 0
    for trial in range(12):
        start, end = ranges[trial % len(ranges)]
        at = rng.randrange(start + (end - start) // 2, end)  # inside the values, past the page header
        broken = bytearray(clean)
        broken[at] ^= 1 << rng.randrange(8)
        copy = tmp_path / f"flip{trial}"
        shutil.copytree(base, copy)
        (copy / data_file.relative_to(base)).write_bytes(bytes(broken))
        try:
            got = sorted(tuple(r) for r in read(spark, copy).collect())
        except Exception as exc:  # Spark's FAILED_READ_FILE, naming the file
            assert "FAILED_READ_FILE" in str(exc) and data_file.name in str(exc), str(exc)[:500]
            failed += 1
            continue
        wrong += got != expected
    assert wrong == 0 and failed == 12
