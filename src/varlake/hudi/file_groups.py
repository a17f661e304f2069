"""File groups and file slices, from a listing of the table's partitions.

Every data file of a Hudi table belongs to a *file group* (a partition path and a file
id). A base file is named ``<file id>_<write token>_<instant>.<ext>``; a log file
``.<file id>_<instant>.log.<version>_<write token>`` (``.cdc`` appended for change-data
logs, which a reader skips). In layout 1 a log file's instant is the base instant of the
slice it extends; from table version 8 on it is the delta commit that wrote it.

A *file slice* is one base file (or none, for a group that only has logs) and the log
files written on top of it; ``snapshot`` picks the slice a read sees.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from varlake.hudi.properties import HOODIE_DIR
from varlake.io.storage import FileInfo, Storage

__all__ = ["BaseFile", "FileGroup", "FileSlice", "LogFile", "list_file_groups", "parse_base_name", "parse_log_name"]

BASE_EXTENSIONS = ("parquet", "orc", "hfile", "lance")
PARTITION_METADATA = ".hoodie_partition_metadata"

_LOG = re.compile(r"^\.(.+)_(\d{14,17})\.(log|archive)\.(\d+)(?:_([0-9]+-[0-9]+-[0-9]+))?(\.cdc)?$")
_BASE = re.compile(r"^(.+)_([^_]+)_(\d{14,17})\.([a-z]+)$")


@dataclass(frozen=True)
class BaseFile:
    path: str  # relative to the table root
    file_id: str
    instant: str
    extension: str
    size: int = 0


@dataclass(frozen=True)
class LogFile:
    path: str  # relative to the table root
    file_id: str
    instant: str
    version: int
    write_token: str
    size: int = 0

    @property
    def sort_key(self) -> tuple[str, int, str]:
        return (self.instant, self.version, self.write_token)


@dataclass
class FileGroup:
    partition: str
    file_id: str
    bases: list[BaseFile] = field(default_factory=list)
    logs: list[LogFile] = field(default_factory=list)


@dataclass(frozen=True)
class FileSlice:
    """What a read sees of one file group: its base file (None: logs only) and logs in order."""

    partition: str
    file_id: str
    base_instant: str
    base: BaseFile | None
    logs: tuple[LogFile, ...] = ()


def parse_base_name(name: str, partition: str) -> BaseFile | None:
    m = _BASE.match(name)
    if m is None or m.group(4) not in BASE_EXTENSIONS:
        return None
    file_id, _token, instant, ext = m.groups()
    return BaseFile(_join(partition, name), file_id, instant, ext)


def parse_log_name(name: str, partition: str) -> LogFile | None:
    m = _LOG.match(name)
    if m is None or m.group(3) != "log" or m.group(6):
        return None
    file_id, instant, _kind, version, token, _cdc = m.groups()
    return LogFile(_join(partition, name), file_id, instant, int(version), token or "")


def _join(partition: str, name: str) -> str:
    return f"{partition}/{name}" if partition else name


def _data_files(storage: Storage, root: str) -> list[FileInfo]:
    prefix = root.rstrip("/")
    out = []
    for info in storage.walk(prefix):
        rel = info.path[len(prefix) + 1 :] if info.path.startswith(prefix + "/") else info.path
        if rel.startswith(HOODIE_DIR + "/") or any(part.startswith(".hoodie") for part in rel.split("/")[:-1]):
            continue
        out.append(FileInfo(rel, info.size, info.mtime_ms))
    return out


def list_file_groups(storage: Storage, root: str) -> list[FileGroup]:
    """Every file group below ``root`` (``.hoodie`` left out), from one recursive listing."""
    groups: dict[tuple[str, str], FileGroup] = {}
    for info in _data_files(storage, root):
        partition, _, name = info.path.rpartition("/")
        if name == PARTITION_METADATA or name.startswith(PARTITION_METADATA):
            continue
        if name.startswith("."):
            log = parse_log_name(name, partition)
            if log is None:
                continue
            log = LogFile(log.path, log.file_id, log.instant, log.version, log.write_token, info.size)
            groups.setdefault((partition, log.file_id), FileGroup(partition, log.file_id)).logs.append(log)
            continue
        base = parse_base_name(name, partition)
        if base is None:
            continue
        base = BaseFile(base.path, base.file_id, base.instant, base.extension, info.size)
        groups.setdefault((partition, base.file_id), FileGroup(partition, base.file_id)).bases.append(base)
    for g in groups.values():
        g.bases.sort(key=lambda b: b.instant)
        g.logs.sort(key=lambda lf: lf.sort_key)
    return [groups[k] for k in sorted(groups)]
