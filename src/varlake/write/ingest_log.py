"""Which input files an incremental ingest took, recorded in the table it feeds.

An incremental ingest -- ``varlake ingest SOURCE TABLE`` run again and again over a
growing source -- is named by ``ingest_app_id(sources, table)`` (a hash of the absolute
input paths as given and of the table path). Every run that takes new files commits,
in ONE version of the table:

- the ``add`` actions of their rows;
- ``txn(appId, version=batch)``, the batch number one above the last one;
- the ``domainMetadata`` action ``varlake.ingest.<hash>`` holding ``IngestRecord``: every
  file taken so far (absolute path, size, mtime in ms; JSON, zlib, base64), the batch
  number, and the batch's *quarantine commit*: the ``add`` actions (and schema, for a
  quarantine table still to create) of its bad lines, staged in the quarantine table.

The quarantine table is committed after the table, with the same ``txn`` (so at most
once), from that record: ``complete_quarantine``. Every run first completes the
quarantine commit of the last recorded batch, so whatever moment a run is killed at:

- before the table commit: nothing is recorded; its staged files are unreferenced (vacuum
  deletes them) and the next run takes the same files again;
- after the table commit, before the quarantine commit: the files are taken, and the
  next run commits the recorded quarantine files (they are in place), once;
- after both: nothing left to do.

Two runs of the same ingest at once: the table commit of one of them wins the batch
number; the other becomes a no-op (its files stay untaken for the next run).

A taken file that later has another size or mtime is *not* ingested again (as Auto
Loader's default, ``cloudFiles.allowOverwrites=false``): ``plan`` reports it as
changed. Sources should add files whole (write, then rename into the directory). A file
removed from the source stays recorded, so a file put back under the same name is not
taken again either.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from varlake.delta.actions import AddFile, DomainMetadata
from varlake.delta.schema import parse_schema
from varlake.delta.snapshot import Snapshot
from varlake.delta.table_log import DeltaLog
from varlake.errors import CorruptLogError, DataFileMissingError, TableNotFoundError
from varlake.io.storage import LocalStorage
from varlake.write.commit import PendingWrite, commit_write

__all__ = [
    "DOMAIN_PREFIX",
    "IngestRecord",
    "QuarantineBatch",
    "SourceFile",
    "complete_quarantine",
    "ingest_app_id",
    "plan",
    "source_files",
]

DOMAIN_PREFIX = "varlake.ingest."
_APP_PREFIX = "varlake-ingest-"
_FORMAT = 1


@dataclass(frozen=True, order=True)
class SourceFile:
    """An input file as the ingest saw it: absolute path, size in bytes, mtime in ms."""

    path: str
    size: int
    mtime_ms: int


def source_files(paths: Sequence[str]) -> list[SourceFile]:
    """``SourceFile``s of existing local files (``os.stat`` once each)."""
    out = []
    for p in paths:
        st = os.stat(p)
        out.append(SourceFile(os.path.abspath(p), st.st_size, st.st_mtime_ns // 1_000_000))
    return out


def ingest_app_id(sources: Sequence[str], table: str) -> str:
    """The ``txn`` appId of the incremental ingest of ``sources`` (paths, directories or
    globs, as given) into ``table``: stable for the same absolute paths."""
    key = json.dumps([sorted(os.path.abspath(os.fspath(s)) for s in sources), os.path.abspath(os.fspath(table))])
    return _APP_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


@dataclass(frozen=True)
class QuarantineBatch:
    """The quarantine commit of one batch: files staged in the quarantine table at ``root``."""

    root: str
    adds: tuple[AddFile, ...]
    schema_string: str
    create_properties: Mapping[str, str] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return sum(a.num_records or 0 for a in self.adds)

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "adds": [a.to_dict() for a in self.adds],
            "schema": self.schema_string,
            "properties": dict(self.create_properties),
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any], where: str) -> QuarantineBatch:
        return cls(
            root=str(body["root"]),
            adds=tuple(AddFile.from_dict(a, where) for a in body["adds"]),
            schema_string=str(body["schema"]),
            create_properties={str(k): str(v) for k, v in dict(body.get("properties") or {}).items()},
        )


@dataclass(frozen=True)
class IngestRecord:
    """What an incremental ingest has taken so far (see the module doc)."""

    app_id: str
    sources: tuple[str, ...]
    batch: int
    files: Mapping[str, tuple[int, int]]
    quarantine: QuarantineBatch | None = None

    @property
    def domain(self) -> str:
        return DOMAIN_PREFIX + self.app_id.removeprefix(_APP_PREFIX)

    @classmethod
    def empty(cls, app_id: str, sources: Sequence[str]) -> IngestRecord:
        return cls(app_id, tuple(os.path.abspath(os.fspath(s)) for s in sources), 0, {})

    def taking(self, files: Sequence[SourceFile], quarantine: QuarantineBatch | None, *, replace: bool = False) -> IngestRecord:
        """The record after the next batch takes ``files`` (``replace``: only them, after an overwrite)."""
        taken = {} if replace else dict(self.files)
        taken.update({f.path: (f.size, f.mtime_ms) for f in files})
        return IngestRecord(self.app_id, self.sources, self.batch + 1, taken, quarantine)

    def to_domain(self) -> DomainMetadata:
        rows = sorted([p, s, m] for p, (s, m) in self.files.items())
        packed = base64.b64encode(zlib.compress(json.dumps(rows, separators=(",", ":")).encode("utf-8"), 9)).decode("ascii")
        body = {
            "format": _FORMAT,
            "appId": self.app_id,
            "sources": list(self.sources),
            "batch": self.batch,
            "numFiles": len(rows),
            "files": packed,
            "quarantine": self.quarantine.to_json() if self.quarantine is not None else None,
        }
        return DomainMetadata(self.domain, json.dumps(body, separators=(",", ":"), ensure_ascii=False))

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot | None, app_id: str, sources: Sequence[str]) -> IngestRecord:
        """The record of ``app_id`` in ``snapshot`` (an empty one when it has none)."""
        empty = cls.empty(app_id, sources)
        if snapshot is None:
            return empty
        domain = snapshot.domains.get(empty.domain)
        version = snapshot.app_version(app_id)
        if domain is None or domain.removed:
            if version is not None:
                raise CorruptLogError(f"{snapshot.root}: txn {app_id!r} is at batch {version} but domain {empty.domain} is missing")
            return empty
        where = f"{snapshot.root}: domain {empty.domain}"
        try:
            body = json.loads(domain.configuration)
            rows = json.loads(zlib.decompress(base64.b64decode(body["files"], validate=True)))
            files = {str(p): (int(s), int(m)) for p, s, m in rows}
            batch = int(body["batch"])
            q = body.get("quarantine")
            quarantine = QuarantineBatch.from_json(q, where) if q is not None else None
        except (ValueError, TypeError, KeyError, zlib.error) as exc:
            raise CorruptLogError(f"{where} is not an ingest record: {exc}") from None
        if body.get("format") != _FORMAT:
            raise CorruptLogError(f"{where}: unknown ingest record format {body.get('format')!r}")
        if version != batch:
            raise CorruptLogError(f"{where}: records batch {batch} but txn {app_id!r} is at {version}")
        return cls(app_id, tuple(str(s) for s in body.get("sources") or empty.sources), batch, files, quarantine)


def plan(record: IngestRecord, candidates: Sequence[SourceFile]) -> tuple[list[SourceFile], list[SourceFile]]:
    """(files to take now, taken files that changed since: other size or mtime, not taken again)."""
    new, changed = [], []
    for f in candidates:
        seen = record.files.get(f.path)
        if seen is None:
            new.append(f)
        elif seen != (f.size, f.mtime_ms):
            changed.append(f)
    return new, changed


def complete_quarantine(record: IngestRecord) -> int | None:
    """Commit the quarantine files of ``record``'s batch into its quarantine table, once
    (``txn(appId, batch)``; the table is created if missing). The new version, or None when
    there is nothing to commit or it was committed already."""
    q = record.quarantine
    if q is None or not q.adds:
        return None
    log = DeltaLog(LocalStorage(), q.root)
    try:
        log.latest_version()
        snapshot: Snapshot | None = log.snapshot()
    except TableNotFoundError:
        snapshot = None
    if snapshot is not None and (snapshot.app_version(record.app_id) or -1) >= record.batch:
        return None
    missing = [a.path for a in q.adds if not os.path.exists(os.path.join(q.root, _unquote(a.path)))]
    if missing:
        raise DataFileMissingError(
            f"{q.root}: the staged quarantine files {missing} of ingest batch {record.batch} ({record.app_id}) are gone "
            "(vacuumed?); their bad lines cannot be committed"
        )
    schema = parse_schema(q.schema_string, f"{q.root}: recorded quarantine schema")
    pending = PendingWrite(
        root=q.root, mode="append", schema=schema, partition_columns=(), adds=q.adds,
        snapshot=snapshot, create_properties=dict(q.create_properties),
    )
    return commit_write(log, pending, app_id=record.app_id, app_version=record.batch).version


def _unquote(path: str) -> str:
    from urllib.parse import unquote

    return unquote(path)
