"""Hostile Parquet footers: varlake's own footer decoder refuses what pyarrow would crash on
(a column name that is not UTF-8) or cannot read (a tree deeper than Arrow's limit), with a
``ParquetFooterError`` that names the file -- before pyarrow is asked."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from varlake.errors import ParquetFooterError
from varlake.io.parquet_read import file_column_names, read_parquet
from varlake.io.thrift_footer import MAX_SCHEMA_DEPTH, parse_file_schema, read_footer_bytes


def _file(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _rename_in_footer(data: bytes, old: bytes, new: bytes) -> bytes:
    assert len(old) == len(new)
    out = bytearray(data)
    length = int.from_bytes(out[-8:-4], "little")
    at = out.index(old, len(out) - 8 - length)
    out[at : at + len(old)] = new
    return bytes(out)


def test_a_column_name_that_is_not_utf8(tmp_path: Path) -> None:
    data = _rename_in_footer(_file(pa.table({"id": [1], "qqqq": ["a"]})), b"qqqq", b"\xff\xfeqq")
    path = tmp_path / "bad.parquet"
    path.write_bytes(data)
    with pytest.raises(ParquetFooterError, match=f"{path}: corrupt Parquet footer: the name of schema element 2 .*not UTF-8"):
        file_column_names(str(path))
    with pytest.raises(ParquetFooterError, match=f"{path}: corrupt Parquet footer"):
        read_parquet(str(path))
    with pytest.raises(ParquetFooterError, match="not UTF-8"):
        file_column_names(io.BytesIO(data))
    with pytest.raises(ParquetFooterError, match="not UTF-8"):
        parse_file_schema(read_footer_bytes(io.BytesIO(data), len(data), "x"), "x")


def test_a_nested_column_name_that_is_not_utf8_names_its_parent(tmp_path: Path) -> None:
    data = _file(pa.table({"outer": pa.array([{"zzzz": 1}])}))
    data = _rename_in_footer(data, b"zzzz", b"z\xc3(z")
    with pytest.raises(ParquetFooterError, match=r"under outer\) is not UTF-8"):
        file_column_names(io.BytesIO(data))


def test_schema_depth_limit_is_arrows() -> None:
    def nested(levels: int) -> pa.Table:
        t: pa.DataType = pa.int64()
        for _ in range(levels):
            t = pa.struct([("a", t)])
        return pa.table({"x": pa.nulls(1, t)})

    ok = _file(nested(MAX_SCHEMA_DEPTH - 1))  # leaf at depth 99: the deepest pyarrow writes
    assert file_column_names(io.BytesIO(ok)) == ["x"]
    assert read_parquet(io.BytesIO(ok)).num_rows == 1
    too_deep = _file(nested(MAX_SCHEMA_DEPTH))  # pyarrow writes a leaf at depth 100 ...
    with pytest.raises(OSError, match="too deeply nested"):
        pq.read_table(io.BytesIO(too_deep))  # ... but cannot read it back; varlake says so by name
    with pytest.raises(ParquetFooterError, match=f"schema nested deeper than {MAX_SCHEMA_DEPTH} levels"):
        file_column_names(io.BytesIO(too_deep))
    with pytest.raises(ParquetFooterError, match=f"schema nested deeper than {MAX_SCHEMA_DEPTH} levels"):
        read_parquet(io.BytesIO(too_deep))


def test_truncated_and_garbage_footers(tmp_path: Path) -> None:
    data = _file(pa.table({"id": [1, 2]}))
    for bad in (data[:-3], data[: len(data) // 2] + data[-8:], b"PAR1" + b"\x00" * 20 + b"PAR1", b"", b"PAR1"):
        with pytest.raises(ParquetFooterError):
            file_column_names(io.BytesIO(bad))
