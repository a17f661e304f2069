"""Damaged Hudi tables give rows or a named error (a ``VarlakeError``), never a raw exception:
``hoodie.properties``, timeline instants and commit metadata, base files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hudi_tables import hudi_tables  # noqa: F401
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import varlake
from varlake.errors import DataFileMissingError, TableNotFoundError, VarlakeError
from varlake.hudi import read_snapshot
from varlake.io.storage import LocalStorage

SOURCES = ("cow/v6_simplekeygen_nonhivestyle_overwritetable", "cow/v9_txns_simple_nometa", "mor/parquet/v6_nonpartitioned")


def _read(root: Path) -> None:
    try:
        read_snapshot(LocalStorage(), str(root))
        varlake.Table(root).scan(filter="_hoodie_commit_time > '0'").to_arrow()
    except VarlakeError:
        pass


def _mutate(data: bytes, at: int, new: bytes, cut: bool) -> bytes:
    if not data:
        return new
    at %= len(data)
    return data[:at] if cut else data[:at] + new + data[at + len(new) :]


@pytest.mark.parametrize("name", SOURCES)
def test_damaged_metadata_and_files_give_rows_or_named_errors(hudi_tables: dict[str, Path], tmp_path_factory, name: str) -> None:
    src = hudi_tables[name]
    targets = sorted(p.relative_to(src) for p in src.rglob("*") if p.is_file() and p.stat().st_size > 0 and "archived" not in p.parts)

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(targets), st.integers(0, 1 << 20), st.binary(min_size=1, max_size=8), st.booleans())
    def run(target: Path, at: int, new: bytes, cut: bool) -> None:
        root = tmp_path_factory.mktemp("bad") / "t"
        shutil.copytree(src, root)
        path = root / target
        path.write_bytes(_mutate(path.read_bytes(), at, new, cut))
        _read(root)

    run()


def test_missing_pieces_are_named(hudi_tables: dict[str, Path], tmp_path: Path) -> None:
    root = tmp_path / "t"
    shutil.copytree(hudi_tables["cow/v8_nonpartitioned"], root)
    table = varlake.Table(root)
    base = next(p for p in root.glob("*.parquet"))
    latest = table.scan().plan().tasks
    assert latest
    for task in latest:
        (root / task.relative_path).unlink()
    with pytest.raises(DataFileMissingError):
        table.scan().to_arrow()
    (root / ".hoodie" / "hoodie.properties").unlink()
    with pytest.raises(TableNotFoundError):
        varlake.Table(root)
    assert base.name
