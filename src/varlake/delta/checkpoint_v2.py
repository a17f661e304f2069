"""Reading V2-spec checkpoints: UUID-named top-level files and their sidecars.

PROTOCOL.md "V2 Spec", "UUID-named checkpoint", "Sidecar Files": a V2 checkpoint
``n.checkpoint.<uuid>.json|parquet`` holds exactly one ``checkpointMetadata`` action
(whose ``version`` is ``n``), every non-file action, and either the ``add``/``remove``
actions themselves or ``sidecar`` actions naming Parquet files in
``_delta_log/_sidecars/`` that hold them. A classic ``n.checkpoint.parquet`` may follow
the V2 spec too (then it may reference sidecars); a multi-part checkpoint never does.

The top-level file's rows are returned in the checkpoint's columnar layout (one struct
column per action type, ``file_table.ACTION_TYPES``) so that ``log.read_checkpoint``
reconciles V1 and V2 checkpoints the same way. A sidecar path may only name a file
inside ``_delta_log/_sidecars``: anything else is refused as an unsafe path.
"""

from __future__ import annotations

import posixpath
import re
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.parquet as pq

from varlake.delta import constants as C
from varlake.delta.file_table import ACTION_TYPES
from varlake.delta.json_fields import load_json
from varlake.errors import (
    CorruptCheckpointError,
    StorageFileNotFoundError,
    UnknownActionError,
    UnsafePathError,
)
from varlake.io.storage import FileInfo, Storage

__all__ = [
    "SIDECAR_DIR",
    "UUID_CHECKPOINT",
    "is_uuid_checkpoint",
    "read_top_level",
    "sidecar_tables",
    "uuid_checkpoint_name",
]

SIDECAR_DIR = "_sidecars"

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
#: ``n.checkpoint.<uuid>.json|parquet`` -> groups (version, uuid, format).
UUID_CHECKPOINT = re.compile(rf"^(\d{{{C.VERSION_DIGITS}}})\.checkpoint\.({_UUID})\.(json|parquet)$")

#: Actions that must not be in a checkpoint but are harmless to skip if one is.
_SKIPPED = frozenset({C.COMMIT_INFO, C.CDC})


def is_uuid_checkpoint(name: str) -> bool:
    """Whether ``name`` is a UUID-named (V2) checkpoint file name."""
    return UUID_CHECKPOINT.match(name) is not None


def uuid_checkpoint_name(version: int, uuid: str, fmt: str = "json") -> str:
    return f"{version:0{C.VERSION_DIGITS}d}.checkpoint.{uuid}.{fmt}"


def _json_rows(data: bytes, where: str) -> dict[str, list]:
    """The actions of a JSON checkpoint, as one list (one entry per line) per action column."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptCheckpointError(f"checkpoint is not UTF-8: {exc}", where) from None
    lines = [(i, line) for i, line in enumerate(text.split("\n"), 1) if line.strip()]
    columns: dict[str, list] = {name: [None] * len(lines) for name in ACTION_TYPES}
    for row, (lineno, line) in enumerate(lines):
        obj = load_json(line, f"{where} line {lineno}", "checkpoint action", error=CorruptCheckpointError)
        if not isinstance(obj, dict) or len(obj) != 1:
            raise CorruptCheckpointError(f"line {lineno} is not a single-action JSON object", where)
        (name, body), = obj.items()
        if name in _SKIPPED:
            continue
        if name not in ACTION_TYPES:
            raise UnknownActionError(f"line {lineno}: checkpoint holds unknown action {name!r}", where)
        if not isinstance(body, dict):
            raise CorruptCheckpointError(f"line {lineno}: action {name!r} is not a JSON object", where)
        columns[name][row] = body
    return columns


def _json_table(data: bytes, where: str) -> pa.Table:
    columns = _json_rows(data, where)
    arrays = []
    for name, values in columns.items():
        try:
            array = pa.array(values, ACTION_TYPES[name])
            array.validate(full=True)
            arrays.append(array)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            raise CorruptCheckpointError(f"action {name!r} has a malformed field: {exc}", where) from None
    return pa.Table.from_arrays(arrays, names=list(columns))


def _parquet_table(data: bytes, where: str, allowed: frozenset[str]) -> pa.Table:
    """The action columns of a checkpoint Parquet file; unknown non-null columns are refused."""
    try:
        pf = pq.ParquetFile(pa.BufferReader(data))
        names = pf.schema_arrow.names
        if len(set(names)) != len(names):
            raise CorruptCheckpointError(f"duplicate action columns in {names}", where)
        unknown = [n for n in names if n not in allowed and n not in _SKIPPED and n not in ACTION_TYPES]
        table = pf.read(columns=[n for n in names if n in allowed or n in unknown])
        table.validate(full=True)  # e.g. strings that are not UTF-8: pyarrow does not check on read
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CorruptCheckpointError(f"unreadable checkpoint Parquet: {exc}", where) from None
    for name in unknown:
        if table.column(name).null_count < table.num_rows:
            raise UnknownActionError(f"checkpoint holds unknown action column {name!r}", where)
    return table.drop_columns(unknown)


def _read(storage: Storage, path: str, what: str) -> bytes:
    try:
        return storage.read(path)
    except StorageFileNotFoundError as exc:
        raise CorruptCheckpointError(f"{what} is missing", path) from exc


def read_top_level(storage: Storage, info: FileInfo) -> pa.Table:
    """The rows of a UUID-named checkpoint file (JSON or Parquet) as action columns."""
    data = _read(storage, info.path, "checkpoint file")
    if info.name.endswith(".json"):
        return _json_table(data, info.path)
    return _parquet_table(data, info.path, frozenset(ACTION_TYPES))


def _valid_rows(table: pa.Table, name: str) -> list[dict]:
    if name not in table.column_names:
        return []
    col = table.column(name)
    if col.null_count == len(col):
        return []
    return col.filter(col.is_valid()).to_pylist()


def _sidecar_path(log_dir: str, log_location: str, raw: object, where: str) -> str:
    """The storage path of a sidecar named by a ``sidecar.path`` (kept inside ``_sidecars``)."""
    if not isinstance(raw, str) or not raw:
        raise CorruptCheckpointError(f"sidecar action has an invalid path {raw!r}", where)
    decoded = unquote(raw)
    sidecar_dir = f"{log_location.rstrip('/')}/{SIDECAR_DIR}"
    if re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*:", decoded):
        parts = urlsplit(decoded)
        if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
            raise UnsafePathError(f"{where}: sidecar path {raw!r} is not in {sidecar_dir!r}")
        decoded = parts.path
    if decoded.startswith("/"):
        norm = posixpath.normpath(decoded)
        if posixpath.dirname(norm) != posixpath.normpath(sidecar_dir):
            raise UnsafePathError(f"{where}: sidecar path {raw!r} is not in {sidecar_dir!r}")
        name = posixpath.basename(norm)
    else:
        name = decoded
    if "/" in name or "\\" in name or "\x00" in name or name in (".", ".."):
        raise UnsafePathError(f"{where}: sidecar path {raw!r} is not a file in {sidecar_dir!r}")
    return f"{log_dir}/{SIDECAR_DIR}/{name}"


def sidecar_tables(
    storage: Storage,
    log_dir: str,
    version: int,
    files: tuple[FileInfo, ...],
    tables: list[pa.Table],
    where: str,
) -> list[pa.Table]:
    """Check the V2 parts of a checkpoint and read the file actions of its sidecars.

    ``files`` are the checkpoint's files and ``tables`` their rows. A UUID-named
    checkpoint needs exactly one ``checkpointMetadata``; any ``checkpointMetadata``
    must carry the checkpoint's version; sidecars are only valid in a single-file
    checkpoint. Returns one table (``add``/``remove`` columns) per sidecar file.
    """
    metas = [r for t in tables for r in _valid_rows(t, C.CHECKPOINT_METADATA)]
    sidecars = [r for t in tables for r in _valid_rows(t, C.SIDECAR)]
    uuid_named = len(files) == 1 and is_uuid_checkpoint(files[0].name)
    if uuid_named and len(metas) != 1:
        raise CorruptCheckpointError(
            f"a V2 checkpoint needs exactly one checkpointMetadata action, found {len(metas)}", where
        )
    if len(metas) > 1:
        raise CorruptCheckpointError(f"checkpoint holds {len(metas)} checkpointMetadata actions", where)
    for meta in metas:
        if meta.get("version") != version:
            raise CorruptCheckpointError(
                f"checkpointMetadata.version is {meta.get('version')!r}, the checkpoint is of version {version}",
                where,
            )
    if sidecars and len(files) > 1:
        raise CorruptCheckpointError("a multi-part checkpoint cannot reference sidecar files", where)
    if sidecars and not metas:
        raise CorruptCheckpointError("a checkpoint with sidecar actions needs a checkpointMetadata action", where)
    log_location = storage.location(log_dir)
    paths = [_sidecar_path(log_dir, log_location, s.get("path"), where) for s in sidecars]
    if len(paths) <= 1:
        return [_sidecar(storage, p) for p in paths]
    with ThreadPoolExecutor(max_workers=min(8, len(paths))) as pool:  # Parquet decoding drops the GIL
        return list(pool.map(lambda p: _sidecar(storage, p), paths))


def _sidecar(storage: Storage, path: str) -> pa.Table:
    """The ``add``/``remove`` columns of one sidecar file."""
    allowed = frozenset({C.ADD, C.REMOVE})
    table = _parquet_table(_read(storage, path, "sidecar file"), path, allowed)
    return table.select([n for n in table.column_names if n in allowed])
