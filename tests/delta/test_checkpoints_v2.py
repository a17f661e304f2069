"""Checkpoints as Delta writes them: V2 (UUID-named JSON/Parquet, sidecars, classic-named V2),
multi-part, checkpoint-only logs, a missing or corrupt ``_last_checkpoint``, and checkpoints
that break the spec (PROTOCOL.md "Checkpoints", "V2 Spec", "Sidecar Files").

Most tests start from Delta's golden ``v2-checkpoint-json`` (a JSON V2 checkpoint at
version 2 with two sidecars; ids 0..9) and rewrite its log the way another writer could.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import varlake
from varlake.delta.actions import Metadata, Protocol
from varlake.delta.protocol import check_readable
from varlake.errors import (
    CorruptCheckpointError,
    MissingCommitError,
    UnknownActionError,
    UnsafePathError,
    VarlakeError,
    VersionNotFoundError,
)

from golden_expected import GOLDEN  # noqa: E402 - one place says where the golden tables are
pytestmark = pytest.mark.usefixtures("golden_tables")

V2_NAME = "00000000000000000002.checkpoint.6374b053-df23-479b-b2cf-c9c550132b49.json"
IDS = list(range(10))

# An independent statement of the checkpoint column types (PROTOCOL.md "Checkpoint Schema").
_MAP = pa.map_(pa.string(), pa.string())
TOP_LEVEL = pa.schema(
    [
        pa.field(
            "protocol",
            pa.struct(
                [
                    ("minReaderVersion", pa.int32()),
                    ("minWriterVersion", pa.int32()),
                    ("readerFeatures", pa.list_(pa.string())),
                    ("writerFeatures", pa.list_(pa.string())),
                ]
            ),
        ),
        pa.field(
            "metaData",
            pa.struct(
                [
                    ("id", pa.string()),
                    ("format", pa.struct([("provider", pa.string()), ("options", _MAP)])),
                    ("schemaString", pa.string()),
                    ("partitionColumns", pa.list_(pa.string())),
                    ("configuration", _MAP),
                    ("createdTime", pa.int64()),
                ]
            ),
        ),
        pa.field("checkpointMetadata", pa.struct([("version", pa.int64()), ("tags", _MAP)])),
        pa.field(
            "sidecar",
            pa.struct([("path", pa.string()), ("sizeInBytes", pa.int64()), ("modificationTime", pa.int64())]),
        ),
    ]
)


def _writable_copy(name: str, dest: Path) -> Path:
    shutil.copytree(GOLDEN / name, dest)
    for p in [dest, *dest.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return dest


def _ids(path: Path, version: int | None = None) -> list[int]:
    return sorted(varlake.Table(path).scan(version=version).to_arrow().column("id").to_pylist())


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write_lines(path: Path, actions: list[dict]) -> None:
    path.write_text("".join(json.dumps(a) + "\n" for a in actions))


def _to_row(action: dict) -> dict:
    (name, body), = action.items()
    body = dict(body)
    for key in ("configuration", "options"):
        if isinstance(body.get(key), dict):
            body[key] = list(body[key].items())
    if name == "metaData":
        body["format"] = {"provider": body["format"]["provider"], "options": list(body["format"]["options"].items())}
    return {name: body}


def _parquet_checkpoint(path: Path, actions: list[dict]) -> None:
    pq.write_table(pa.Table.from_pylist([_to_row(a) for a in actions], schema=TOP_LEVEL), path)


@pytest.fixture
def v2_table(tmp_path: Path) -> Path:
    path = _writable_copy("v2-checkpoint-json", tmp_path / "v2")
    (path / "_delta_log" / "_last_checkpoint").unlink()  # most tests exercise the listing
    return path


def _log(path: Path) -> Path:
    return path / "_delta_log"


def _drop_commits(path: Path, upto: int) -> None:
    for v in range(upto + 1):
        (_log(path) / f"{v:020d}.json").unlink(missing_ok=True)


def test_v2_checkpoint_feature_is_readable() -> None:
    meta = Metadata(id="t", schema_string='{"type":"struct","fields":[]}')
    check_readable(Protocol(3, 7, ("v2Checkpoint",), ("v2Checkpoint",)), meta, "t")


def test_json_v2_checkpoint_with_sidecars_is_used(v2_table: Path) -> None:
    _drop_commits(v2_table, 2)  # the checkpoint alone must reconstruct version 2
    assert _ids(v2_table) == IDS
    table = varlake.Table(v2_table)
    assert table.version == 2
    assert "v2Checkpoint" in table.protocol.reader_feature_set
    assert table.properties["delta.checkpointPolicy"] == "v2"
    with pytest.raises(VersionNotFoundError):
        table.snapshot(1)


def test_golden_last_checkpoint_hint_is_followed(tmp_path: Path) -> None:
    path = _writable_copy("v2-checkpoint-json", tmp_path / "v2")
    _drop_commits(path, 2)
    assert _ids(path) == IDS


@pytest.mark.parametrize("name", [V2_NAME.replace(".json", ".parquet"), "00000000000000000002.checkpoint.parquet"])
def test_parquet_v2_checkpoint_uuid_or_classic_named(v2_table: Path, name: str) -> None:
    top = _log(v2_table) / V2_NAME
    _parquet_checkpoint(_log(v2_table) / name, _lines(top))
    top.unlink()
    _drop_commits(v2_table, 2)
    assert _ids(v2_table) == IDS


def test_v2_checkpoint_with_file_actions_inline(v2_table: Path) -> None:
    top = _log(v2_table) / V2_NAME
    sidecars = sorted((_log(v2_table) / "_sidecars").glob("*.parquet"))
    adds = [{"add": r["add"]} for s in sidecars for r in pq.read_table(s).to_pylist() if r["add"]]
    for a in adds:
        a["add"] = {k: v for k, v in a["add"].items() if v is not None}
        a["add"]["partitionValues"] = {}
    actions = [a for a in _lines(top) if "sidecar" not in a] + adds
    _write_lines(top, actions)
    shutil.rmtree(_log(v2_table) / "_sidecars")
    _drop_commits(v2_table, 2)
    assert _ids(v2_table) == IDS


def test_sidecar_given_as_absolute_uri_inside_sidecars(v2_table: Path) -> None:
    top = _log(v2_table) / V2_NAME
    actions = _lines(top)
    for a in actions:
        if "sidecar" in a:
            a["sidecar"]["path"] = (_log(v2_table) / "_sidecars" / a["sidecar"]["path"]).as_uri()
    _write_lines(top, actions)
    _drop_commits(v2_table, 2)
    assert _ids(v2_table) == IDS


@pytest.mark.parametrize(
    "bad", ["../00000000000000000000.json", "/etc/passwd", "s3://bucket/x.parquet", "sub/x.parquet", "%2E%2E/x"]
)
def test_sidecar_outside_sidecars_dir_is_refused(v2_table: Path, bad: str) -> None:
    top = _log(v2_table) / V2_NAME
    actions = _lines(top)
    next(a for a in actions if "sidecar" in a)["sidecar"]["path"] = bad
    _write_lines(top, actions)
    with pytest.raises(UnsafePathError, match="sidecar path"):
        varlake.Table(v2_table).scan().to_arrow()


def test_missing_sidecar_is_named(v2_table: Path) -> None:
    victim = sorted((_log(v2_table) / "_sidecars").glob("*.parquet"))[0]
    victim.unlink()
    with pytest.raises(CorruptCheckpointError, match=rf"_sidecars/{re.escape(victim.name)}: sidecar file is missing"):
        varlake.Table(v2_table).snapshot()


@pytest.mark.parametrize(
    "edit, error, match",
    [
        (lambda acts: [a for a in acts if "checkpointMetadata" not in a], CorruptCheckpointError, "exactly one checkpointMetadata"),
        (lambda acts: acts + [{"checkpointMetadata": {"version": 2}}], CorruptCheckpointError, "exactly one checkpointMetadata"),
        (lambda acts: [{"checkpointMetadata": {"version": 7}} if "checkpointMetadata" in a else a for a in acts], CorruptCheckpointError, "version is 7"),
        (lambda acts: [a for a in acts if "protocol" not in a], CorruptCheckpointError, "one protocol"),
        (lambda acts: [a for a in acts if "metaData" not in a], CorruptCheckpointError, "metaData"),
        (lambda acts: acts + [{"hologram": {"x": 1}}], UnknownActionError, "hologram"),
        (lambda acts: acts + [{"protocol": {"minReaderVersion": "three"}}], CorruptCheckpointError, "protocol"),
    ],
)  # fmt: skip
def test_broken_v2_checkpoint_is_named(v2_table: Path, edit, error, match) -> None:
    top = _log(v2_table) / V2_NAME
    _write_lines(top, edit(_lines(top)))
    with pytest.raises(error, match=match):
        varlake.Table(v2_table).snapshot()


def test_v2_checkpoint_with_bad_json_line(v2_table: Path) -> None:
    top = _log(v2_table) / V2_NAME
    top.write_text(top.read_text() + '{"add": {"path": \n')
    with pytest.raises(CorruptCheckpointError, match="line 6: truncated or invalid JSON"):
        varlake.Table(v2_table).snapshot()


def test_multipart_checkpoint_with_sidecar_is_refused(tmp_path: Path) -> None:
    path = _writable_copy("multi-part-checkpoint", tmp_path / "mp")
    part = _log(path) / "00000000000000000001.checkpoint.0000000001.0000000002.parquet"
    table = pq.read_table(part)
    sidecar = pa.array([{"path": "x.parquet", "sizeInBytes": 1, "modificationTime": 1}] + [None] * (table.num_rows - 1))
    pq.write_table(table.append_column("sidecar", sidecar), part)
    with pytest.raises(CorruptCheckpointError, match="multi-part checkpoint cannot reference sidecar"):
        varlake.Table(path).snapshot()


def test_multipart_checkpoint_with_missing_part_is_ignored(tmp_path: Path) -> None:
    path = _writable_copy("multi-part-checkpoint", tmp_path / "mp")
    (_log(path) / "00000000000000000001.checkpoint.0000000002.0000000002.parquet").unlink()
    assert _ids(path) == sorted([0, *range(30)])
    _drop_commits(path, 0)  # no commit 0 and no complete checkpoint: a gap, not a wrong answer
    with pytest.raises(MissingCommitError, match="version 0 is missing"):
        varlake.Table(path).scan().to_arrow()


@pytest.mark.parametrize(
    "content",
    [b"", b"{not json", b'{"version": 99, "size": 3}', b'{"version": 10, "size": 3, "checksum": "0000"}', b"[1,2]"],
)
def test_missing_or_corrupt_last_checkpoint_falls_back_to_listing(tmp_path: Path, content: bytes) -> None:
    path = _writable_copy("basic-with-inserts-deletes-checkpoint", tmp_path / "t")
    (_log(path) / "_last_checkpoint").write_bytes(content)
    expected = [*range(0, 5), *range(10, 15), *range(20, 25), *range(30, 35), *range(40, 45), *range(50, 66)]
    assert _ids(path) == expected
    (_log(path) / "_last_checkpoint").unlink()
    assert _ids(path) == expected


def test_checkpoint_only_history(tmp_path: Path) -> None:
    """Commits before the checkpoint cleaned up: the latest state and later versions still read,
    earlier versions are gone (VersionNotFoundError, not a wrong answer)."""
    path = _writable_copy("basic-with-inserts-deletes-checkpoint", tmp_path / "t")
    _drop_commits(path, 10)
    assert _ids(path, 10) == [*range(0, 5), *range(10, 15), *range(20, 25), *range(30, 35), *range(40, 45), *range(50, 60)]
    assert len(_ids(path)) == 41
    with pytest.raises(VersionNotFoundError):
        varlake.Table(path).scan(version=9).to_arrow()
    _drop_commits(path, 13)  # nothing but the checkpoint: the table is its version 10
    assert varlake.Table(path).version == 10
    assert len(_ids(path)) == 35


def test_checkpoint_without_metadata_is_refused(tmp_path: Path) -> None:
    # Delta: "The metadata of your Delta table could not be recovered" (DELTA_STATE_RECOVER_ERROR)
    path = _writable_copy("deltalog-state-reconstruction-from-checkpoint-missing-protocol", tmp_path / "t")
    ckpt = _log(path) / "00000000000000000010.checkpoint.parquet"
    table = pq.read_table(ckpt)
    table = table.filter(pa.compute.is_null(table.column("metaData")))
    pq.write_table(table, ckpt)
    with pytest.raises(CorruptCheckpointError, match="found 0 and 0"):
        varlake.Table(path).snapshot()


def test_stale_last_checkpoint_after_checkpoint_cleanup(tmp_path: Path) -> None:
    # DeltaTableReadsSuite 'read table with stale _last_checkpoint after checkpoint cleanup':
    # the hint names version 10, whose checkpoint was deleted; the commits still rebuild it.
    path = _writable_copy("basic-with-inserts-deletes-checkpoint", tmp_path / "t")
    assert json.loads((_log(path) / "_last_checkpoint").read_text())["version"] == 10
    (_log(path) / "00000000000000000010.checkpoint.parquet").unlink()
    assert len(_ids(path)) == 41
    assert varlake.Table(path).version == 13


def test_varlake_checkpoint_on_a_v2_table_is_read_back(v2_table: Path) -> None:
    """A writer may always add a classic V1 checkpoint, even when v2Checkpoint is enabled."""
    table = varlake.Table(v2_table)
    table.append(pa.table({"id": pa.array([10, 11], pa.int64())}))
    table.checkpoint()
    version = varlake.Table(v2_table).version
    assert (_log(v2_table) / f"{version:020d}.checkpoint.parquet").exists()
    _drop_commits(v2_table, version)
    assert _ids(v2_table) == [*IDS, 10, 11]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_ACTION = st.sampled_from(["add", "remove", "protocol", "metaData", "txn", "domainMetadata", "sidecar", "checkpointMetadata"])
_FIELDS = st.sampled_from(["path", "size", "partitionValues", "version", "minReaderVersion", "configuration", "deletionVector", "tags", "appId"])


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(
    st.lists(
        st.tuples(_ACTION, st.dictionaries(_FIELDS, _JSON, max_size=4)) | st.binary(max_size=20).map(lambda b: ("raw", b)),
        min_size=1,
        max_size=4,
    )
)
def test_hostile_json_checkpoint_lines_give_named_errors(tmp_path_factory: pytest.TempPathFactory, extra: list) -> None:
    """Whatever a JSON V2 checkpoint line holds, reading gives the table or a VarlakeError."""
    path = _writable_copy("v2-checkpoint-json", tmp_path_factory.mktemp("h") / "v2")
    (_log(path) / "_last_checkpoint").unlink()
    top = _log(path) / V2_NAME
    data = top.read_bytes()
    for kind, body in extra:
        data += body + b"\n" if kind == "raw" else (json.dumps({kind: body}) + "\n").encode()
    top.write_bytes(data)
    try:
        varlake.Table(path).scan().to_arrow()
    except VarlakeError:
        pass


@pytest.mark.parametrize(
    "content, match",
    [
        (pa.table({"add": [1, 2]}), "no path"),
        (pa.Table.from_arrays([pa.array([None]), pa.array([None])], names=["add", "add"]), "duplicate action columns"),
        (pa.table({"add": [{"path": "x", "size": "big"}]}), "unexpected layout"),
        (b"PAR1 not parquet PAR1", "unreadable checkpoint Parquet"),
    ],
)
def test_hostile_sidecar_content_is_named(v2_table: Path, content: object, match: str) -> None:
    sidecar = sorted((_log(v2_table) / "_sidecars").glob("*.parquet"))[0]
    if isinstance(content, bytes):
        sidecar.write_bytes(content)
    else:
        pq.write_table(content, sidecar)
    with pytest.raises(CorruptCheckpointError, match=match):
        varlake.Table(v2_table).snapshot()
