"""Untrusted logs: every kind of damage raises a named error that names the file."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from varlake.delta import DeltaLog
from varlake.delta.checkpoint import checkpoint_table
from varlake.errors import (
    CorruptCheckpointError,
    CorruptCommitError,
    CorruptLogError,
    MissingCommitError,
    SchemaParseError,
    TableError,
    TableNotFoundError,
    UnknownActionError,
    UnsafePathError,
    UnsupportedFeatureError,
)
from varlake.io import LocalStorage

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
PROTOCOL = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
METADATA = {
    "metaData": {
        "id": "t-1",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": SCHEMA,
        "partitionColumns": [],
        "configuration": {},
    }
}


def _add(path: str) -> dict:
    return {"add": {"path": path, "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True}}


def _write(root: Path, version: int, *actions: dict | str) -> Path:
    path = root / "_delta_log" / f"{version:020d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(a if isinstance(a, str) else json.dumps(a) for a in actions))
    return path


def _open(root: Path):
    return DeltaLog(LocalStorage(), str(root)).snapshot()


def test_valid_raw_log_opens(tmp_path: Path) -> None:
    _write(tmp_path, 0, PROTOCOL, METADATA)
    _write(tmp_path, 1, _add("a.parquet"))
    assert [f.path for f in _open(tmp_path).files] == ["a.parquet"]


def test_no_table(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        _open(tmp_path)


def test_truncated_commit_names_file_and_line(tmp_path: Path) -> None:
    _write(tmp_path, 0, PROTOCOL, METADATA)
    good = json.dumps(_add("a.parquet"))
    path = _write(tmp_path, 1, good, good.replace("a.parquet", "b.parquet")[:-9])
    with pytest.raises(CorruptCommitError, match=f"{path} line 2: truncated or invalid JSON") as info:
        _open(tmp_path)
    assert info.value.path == f"{path} line 2"


def test_empty_commit_file(tmp_path: Path) -> None:
    _write(tmp_path, 0, PROTOCOL, METADATA)
    path = _write(tmp_path, 1)
    with pytest.raises(CorruptCommitError, match=f"{path}: empty commit file"):
        _open(tmp_path)


def test_missing_commit(tmp_path: Path) -> None:
    _write(tmp_path, 0, PROTOCOL, METADATA)
    _write(tmp_path, 2, _add("a.parquet"))
    with pytest.raises(MissingCommitError, match="00000000000000000001.json: commit for version 1 is missing"):
        _open(tmp_path)


def test_unknown_action(tmp_path: Path) -> None:
    _write(tmp_path, 0, PROTOCOL, METADATA)
    path = _write(tmp_path, 1, {"teleport": {"path": "x"}})
    with pytest.raises(UnknownActionError, match=f"{path} line 1: unknown action 'teleport'"):
        _open(tmp_path)


def test_log_without_protocol_or_metadata(tmp_path: Path) -> None:
    _write(tmp_path, 0, METADATA)
    with pytest.raises(CorruptLogError, match="no protocol action"):
        _open(tmp_path)
    _write(tmp_path, 0, PROTOCOL)
    with pytest.raises(CorruptLogError, match="no metaData action"):
        _open(tmp_path)


@pytest.mark.parametrize(
    ("protocol", "message"),
    [
        (
            {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": ["catalogManaged"],  # (deletionVectors and columnMapping are read now)
                "writerFeatures": ["catalogManaged"],
            },
            "catalogManaged",
        ),
        (
            {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": ["warpDrive"],
                "writerFeatures": ["warpDrive"],
            },
            "unknown reader table feature.*warpDrive",
        ),
        ({"minReaderVersion": 5, "minWriterVersion": 7}, "reader version 5"),
    ],
)
def test_unsupported_or_unknown_feature_fails_open(tmp_path: Path, protocol: dict, message: str) -> None:
    _write(tmp_path, 0, {"protocol": protocol}, METADATA)
    with pytest.raises(UnsupportedFeatureError, match=message):
        _open(tmp_path)


def test_bad_schema_string_fails_open(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(METADATA))
    bad["metaData"]["schemaString"] = '{"type":"struct","fields":[{"name":"x","type":"uint256"}]}'
    _write(tmp_path, 0, PROTOCOL, bad)
    with pytest.raises(SchemaParseError, match="unknown type 'uint256'"):
        _open(tmp_path)


@pytest.mark.parametrize(
    "path",
    [
        "../outside.parquet",
        "a/../../outside.parquet",
        "%2E%2E/outside.parquet",
        "/etc/passwd",
        "file:///etc/passwd",
        "https://evil.example/x.parquet",
        "_delta_log/00000000000000000000.json",
    ],
)
def test_add_path_escaping_root_in_commit(tmp_path: Path, path: str) -> None:
    _write(tmp_path, 0, PROTOCOL, METADATA)
    log_file = _write(tmp_path, 1, _add(path))
    with pytest.raises(UnsafePathError) as info:
        _open(tmp_path)
    assert str(log_file) in str(info.value) and repr(path) in str(info.value)


def _checkpoint_rows(tmp_path: Path) -> pa.Table:
    _write(tmp_path / "src", 0, PROTOCOL, METADATA)
    _write(tmp_path / "src", 1, _add("a.parquet"))
    return checkpoint_table(_open(tmp_path / "src").state)


def _with_checkpoint(root: Path, table: pa.Table | bytes) -> Path:
    _write(root, 0, PROTOCOL, METADATA)
    _write(root, 1, _add("a.parquet"))
    path = root / "_delta_log" / f"{1:020d}.checkpoint.parquet"
    if isinstance(table, bytes):
        path.write_bytes(table)
    else:
        pq.write_table(table, path)
    return path


def test_corrupt_checkpoint_bytes(tmp_path: Path) -> None:
    path = _with_checkpoint(tmp_path / "t", b"PAR1 this is not parquet at all")
    with pytest.raises(CorruptCheckpointError, match=f"{path}: unreadable checkpoint Parquet"):
        _open(tmp_path / "t")


def test_truncated_checkpoint(tmp_path: Path) -> None:
    table = _checkpoint_rows(tmp_path)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    data = sink.getvalue().to_pybytes()
    path = _with_checkpoint(tmp_path / "t", data[: len(data) // 2])
    with pytest.raises(CorruptCheckpointError, match=str(path)):
        _open(tmp_path / "t")


def test_checkpoint_without_protocol(tmp_path: Path) -> None:
    table = _checkpoint_rows(tmp_path)
    rows = table.filter(pc.is_null(table.column("protocol")))
    path = _with_checkpoint(tmp_path / "t", rows)
    with pytest.raises(CorruptCheckpointError, match=f"{path}: a checkpoint needs exactly one protocol"):
        _open(tmp_path / "t")


def test_checkpoint_with_unreadable_add_column(tmp_path: Path) -> None:
    table = _checkpoint_rows(tmp_path)
    add_type = pa.struct([("path", pa.string()), ("size", pa.string())])
    adds = pa.array([None, None, {"path": "a.parquet", "size": "huge"}], add_type)
    bad = table.drop_columns(["add"]).append_column("add", adds)
    path = _with_checkpoint(tmp_path / "t", bad)
    with pytest.raises(CorruptCheckpointError, match=f"{path}: column 'add' has an unexpected layout"):
        _open(tmp_path / "t")


def test_checkpoint_with_escaping_path(tmp_path: Path) -> None:
    table = _checkpoint_rows(tmp_path)
    adds = table.column("add").combine_chunks()
    paths = pc.if_else(adds.is_valid(), pa.scalar("../../etc/shadow"), pa.scalar(None, pa.string()))
    fields = [adds.field(i) if adds.type.field(i).name != "path" else paths for i in range(adds.type.num_fields)]
    bad_adds = pa.StructArray.from_arrays(fields, fields=list(adds.type), mask=adds.is_null())
    bad = table.drop_columns(["add"]).append_column("add", bad_adds)
    path = _with_checkpoint(tmp_path / "t", bad)
    with pytest.raises(UnsafePathError, match=f"{path}.*'../../etc/shadow' escapes the table root"):
        _open(tmp_path / "t")


def test_checkpoint_with_unknown_action_or_sidecar(tmp_path: Path) -> None:
    table = _checkpoint_rows(tmp_path)
    extra = pa.array([None, None, {"x": 1}], pa.struct([("x", pa.int64())]))
    path = _with_checkpoint(tmp_path / "t", table.append_column("hologram", extra))
    with pytest.raises(UnknownActionError, match=f"{path}: checkpoint holds unknown action column 'hologram'"):
        _open(tmp_path / "t")
    sidecar = pa.array([None, None, {"path": "s.parquet"}], pa.struct([("path", pa.string())]))
    _with_checkpoint(tmp_path / "u", table.append_column("sidecar", sidecar))
    # Sidecars are read now (V2 spec), but only in a checkpoint that has its checkpointMetadata.
    with pytest.raises(CorruptCheckpointError, match="sidecar actions needs a checkpointMetadata"):
        _open(tmp_path / "u")


def test_every_error_is_a_table_error() -> None:
    for cls in (
        CorruptCheckpointError,
        CorruptCommitError,
        MissingCommitError,
        SchemaParseError,
        UnknownActionError,
        UnsafePathError,
        UnsupportedFeatureError,
    ):
        assert issubclass(cls, TableError)
