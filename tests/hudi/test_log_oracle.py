"""Every log file of the MOR test tables parses, and merged file slices give hudi-rs's rows.

The oracle is hudi-rs (PyPI ``hudi``): for each table and each completed instant (time
travel), the union of our merged file slices must equal its snapshot rows. File slices
come from a plain listing (base files and log files grouped by file id, the slice of a
base file holding the log files written at or after it); tables with Lance base files
are left to the Lance reader (their log files are still parsed).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_log_tables import (
    BASE_NAME,
    LOG_NAME,
    all_log_files,
    completed_instants,
    data_log_files,
    mor_zips,
    unzip_table,
)
from varlake.errors import HudiLogUnsupportedError
from varlake.hudi.log_blocks import decode_data_block, decode_delete_block
from varlake.hudi.log_format import BlockType, parse_log_file
from varlake.hudi.log_merge import infer_merge_mode, merge_file_slice

hudi = pytest.importorskip("hudi")

ZIPS = mor_zips()


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("hudi_mor")
    return {z.stem: unzip_table(z, tmp) for z in ZIPS}


def _properties(root: Path) -> dict[str, str]:
    text = (root / ".hoodie" / "hoodie.properties").read_text()
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    return {k.strip(): v.strip().replace("\\:", ":") for k, v in pairs}


def test_the_test_data_is_there() -> None:
    assert len(ZIPS) >= 9


@pytest.mark.parametrize("zip_path", ZIPS, ids=[z.stem for z in ZIPS])
def test_every_log_file_parses(tables: dict[str, Path], zip_path: Path) -> None:
    """Data logs decode fully; the metadata table's HFile blocks are refused by name."""
    root = tables[zip_path.stem]
    seen = 0
    for path in all_log_files(root):
        log = parse_log_file(path.read_bytes(), path.name)
        assert log.blocks, path
        for block in log.blocks:
            assert block.block_type != BlockType.CORRUPT, path
            assert block.instant_time and block.instant_time.isdigit()
            if block.block_type == BlockType.DELETE:
                deletes = decode_delete_block(block)
                assert all(d.record_key for d in deletes)
                assert deletes or ".hoodie" in path.parts  # the metadata table writes empty ones
            elif block.block_type == BlockType.HFILE_DATA:
                with pytest.raises(HudiLogUnsupportedError, match="HFile"):
                    decode_data_block(block)
            elif block.is_data:
                records = decode_data_block(block)
                assert records.num_rows > 0
                assert "_hoodie_record_key" in records.column_names
            seen += 1
    assert seen > 0 or not all_log_files(root)


def _slices(root: Path, as_of: str) -> list[tuple[Path | None, list[Path]]]:
    """File slices as of an instant: per file id, the latest base file at or before it and the
    log files after that base (by the instant in the log's name, which is its base's or its own)."""
    bases: dict[tuple[Path, str], list[tuple[str, Path]]] = defaultdict(list)
    logs: dict[tuple[Path, str], list[tuple[str, Path]]] = defaultdict(list)
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if ".hoodie" in rel.parts or "__MACOSX" in rel.parts or not p.is_file():
            continue
        if m := BASE_NAME.match(p.name):
            if m["instant"] <= as_of:
                bases[(p.parent, m["fid"])].append((m["instant"], p))
        elif m := LOG_NAME.match(p.name):
            logs[(p.parent, m["fid"])].append((m["instant"], p))
    out = []
    for group in set(bases) | set(logs):
        base = max(bases[group]) if bases.get(group) else None
        since = base[0] if base else ""
        out.append((base[1] if base else None, [p for inst, p in sorted(logs.get(group, [])) if inst >= since]))
    return out


def _rows(table: pa.Table, key: str) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: (r[key], r.get("_hoodie_commit_time")))


def _cases() -> list[tuple[str, str]]:
    out = []
    for z in ZIPS:
        if "lance" in z.stem:
            continue
        out.append((z.stem, "latest"))
        out.append((z.stem, "every"))
    return out


@pytest.mark.parametrize(("name", "when"), _cases(), ids=[f"{n}-{w}" for n, w in _cases()])
def test_merged_slices_match_hudi_rs(tables: dict[str, Path], name: str, when: str) -> None:
    root = tables[name]
    props = _properties(root)
    mode, ordering = infer_merge_mode(props)
    completed = sorted(completed_instants(root))
    table = hudi.HudiTableBuilder.from_base_uri(str(root)).build()
    points = completed[-1:] if when == "latest" else completed
    merged_any = False
    key: str | list[str] = "_hoodie_record_key"
    sort_key = "_hoodie_record_key"
    if props.get("hoodie.populate.meta.fields", "true") == "false" or "no_metafields" in name:
        key = props["hoodie.table.recordkey.fields"].split(",")
        sort_key = key[0]
    for as_of in points:
        options = hudi.HudiReadOptions().with_as_of_timestamp(as_of)
        listed = table.get_file_slices(options)
        # the live file groups come from the timeline (hudi-core); the slices' contents from us
        live = {f.file_id for f in listed}
        valid = {i for i in completed if i <= as_of}
        parts = []
        for base_path, log_paths in _slices(root, as_of):
            fid = (BASE_NAME.match(base_path.name) or LOG_NAME.match(log_paths[0].name))["fid"] if base_path else LOG_NAME.match(log_paths[0].name)["fid"]
            if fid not in live:
                continue
            base = pq.read_table(base_path) if base_path else None
            logs = [parse_log_file(p.read_bytes(), p.name) for p in log_paths]
            merged_any = merged_any or bool(logs)
            parts.append(
                merge_file_slice(
                    base, logs, key_fields=key, ordering_field=ordering,
                    merge_mode=mode, valid_instants=valid, as_of=as_of,
                )
            )
        got = pa.concat_tables(parts) if parts else None
        expected = pa.Table.from_batches(table.read(options))
        assert got is not None and got.num_rows == expected.num_rows, as_of
        # without meta fields hudi-rs leaves out the (null) meta columns the base files carry
        assert set(expected.column_names) <= set(got.column_names)
        got = got.select(expected.column_names)
        assert _rows(got, sort_key) == _rows(expected, sort_key), as_of
    if when == "every" and data_log_files(root):
        assert merged_any
