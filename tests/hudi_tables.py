"""hudi-rs's test tables (``../shared/testdata/hudi``, written by Hudi on Spark), unzipped
once per run, and hudi-rs (PyPI ``hudi``) as the oracle to compare reads with."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyarrow as pa
import pytest

#: tables varlake refuses, and the feature the refusal names
LANCE_TABLES = ("cow/v9_trips_lance", "cow/v9_lance_txns_nonpart", "mor/avro/v9_lance_nonhivestyle", "mor/avro/v9_trips_lance")


def _unzip_all(src: Path, dest: Path) -> dict[str, Path]:
    tables: dict[str, Path] = {}
    for archive in sorted(src.rglob("*.zip")):
        rel = archive.relative_to(src).with_suffix("")
        parts = rel.parts[1:]  # sample_table/ or quickstart_trips_table/ left out
        name = "/".join(parts)
        out = dest / rel
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(out)
        tables[name] = out / rel.name
    return tables


@pytest.fixture(scope="session")
def hudi_tables(testdata: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``"cow/v8_nonpartitioned"`` (kind/[log format/]name) -> the unzipped table root."""
    src = testdata / "hudi"
    if not src.is_dir():
        pytest.fail(f"hudi-rs test tables not found at {src}")
    tables = _unzip_all(src, tmp_path_factory.mktemp("hudi"))
    assert len(tables) >= 20, sorted(tables)
    return tables


def oracle_read(root: Path, *, read_optimized: bool = False, as_of: str | None = None) -> pa.Table:
    """hudi-rs's rows of the table at ``root`` (an empty table when it reads no batch)."""
    from hudi import HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(str(root.resolve())).build()
    options = HudiReadOptions()
    if read_optimized:
        options = options.with_hudi_option("hoodie.read.use.read_optimized.mode", "true")
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    batches = table.read(options)
    return pa.Table.from_batches(batches) if batches else pa.table({})


def oracle_incremental(root: Path, start: str, end: str) -> pa.Table:
    from hudi import HudiQueryType, HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(str(root.resolve())).build()
    options = HudiReadOptions().with_query_type(HudiQueryType.Incremental).with_start_timestamp(start).with_end_timestamp(end)
    batches = table.read(options)
    return pa.Table.from_batches(batches) if batches else pa.table({})


def rows(table: pa.Table, text: bool = False) -> tuple[list[str], list[tuple[str, ...]]]:
    """Column names (sorted) and the rows as sorted tuples of their values (``repr``, or
    ``str`` with ``text``, for a column read as a number by one and text by the other)."""
    cols = sorted(table.column_names)
    show = str if text else repr
    return cols, sorted(tuple(show(r[c]) for c in cols) for r in table.to_pylist())
