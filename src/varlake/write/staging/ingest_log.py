"""Which input files an incremental ingest took, recorded in the table it feeds.

An incremental ingest -- ``varlake ingest SOURCE TABLE`` run again and again over a
growing source -- is named by ``ingest_app_id(sources, table)`` (a hash of the absolute
input paths as given and of the table path). Every run that takes new files commits,
in ONE version of the table:

- the ``add`` actions of their rows;
- ``txn(appId, version=batch)``, the batch number one above the last one;
- the record, ``IngestRecord``, as ``domainMetadata`` actions (``to_domains``): the *index*
  ``varlake.ingest.<hash>`` -- the batch number, the batch's *quarantine commit* (the
  ``add`` actions, and schema for a quarantine table still to create, of its bad lines,
  staged in the quarantine table) and the numbers of the segments -- and the *segment*
  ``varlake.ingest.<hash>.<batch>`` listing the files this batch took (absolute path, size,
  mtime in ms; JSON, zlib, base64). Earlier segments stay in their own domains and are
  never rewritten, so a commit writes the record of its own files only (its size does not
  grow with the files taken before); reading the record joins the index's segments.
  Records of the first format (every file in the one domain, ``to_domain``) are read too;
  the next batch moves their files into a segment once.

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
from varlake.io.locations import is_object_store_uri, parse_uri
from varlake.io.storage import Storage
from varlake.write.staging.commit import PendingWrite, commit_write

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
_FORMAT = 1  # the whole record in one domain (``to_domain``; read for older tables)
_SEGMENTED = 2  # an index domain plus one never-rewritten segment domain per batch


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


def _canonical(path: str | os.PathLike[str]) -> str:
    """The absolute local path, or the canonical URI of an object-store location
    (``s3a://b/t`` as ``s3://b/t``; never made into a local path)."""
    if is_object_store_uri(path):
        return parse_uri(path).location
    return os.path.abspath(os.fspath(path))


def ingest_app_id(sources: Sequence[str], table: str) -> str:
    """The ``txn`` appId of the incremental ingest of ``sources`` (paths, directories or
    globs, as given) into ``table``: stable for the same absolute paths or URIs."""
    key = json.dumps([sorted(_canonical(s) for s in sources), _canonical(table)])
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


def _pack(files: Mapping[str, tuple[int, int]]) -> str:
    rows = sorted([p, s, m] for p, (s, m) in files.items())
    return base64.b64encode(zlib.compress(json.dumps(rows, separators=(",", ":")).encode("utf-8"), 9)).decode("ascii")


def _unpack(text: str) -> dict[str, tuple[int, int]]:
    rows = json.loads(zlib.decompress(base64.b64decode(text, validate=True)))
    return {str(p): (int(s), int(m)) for p, s, m in rows}


def _ranges(numbers: Sequence[int]) -> list[list[int]]:
    """Sorted numbers as ``[first, last]`` runs (segments are mostly consecutive batches)."""
    out: list[list[int]] = []
    for n in sorted(numbers):
        if out and out[-1][1] == n - 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return out


def _from_ranges(runs: Any) -> tuple[int, ...]:
    out: list[int] = []
    for first, last in runs:
        first, last = int(first), int(last)
        if last < first or last - first > 10_000_000:
            raise ValueError(f"bad segment range {[first, last]}")
        out.extend(range(first, last + 1))
    return tuple(out)


@dataclass(frozen=True)
class IngestRecord:
    """What an incremental ingest has taken so far (see the module doc).

    ``files`` are all files taken; ``segments`` the batch numbers whose segment domains
    hold them in the snapshot read; ``fresh`` the files no committed segment holds yet (the
    next ``to_domains`` writes them as one new segment); ``dropped`` segments an overwrite
    removes."""

    app_id: str
    sources: tuple[str, ...]
    batch: int
    files: Mapping[str, tuple[int, int]]
    quarantine: QuarantineBatch | None = None
    segments: tuple[int, ...] = ()
    fresh: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    dropped: tuple[int, ...] = ()

    @property
    def domain(self) -> str:
        return DOMAIN_PREFIX + self.app_id.removeprefix(_APP_PREFIX)

    def segment_domain(self, number: int) -> str:
        """The domain of the segment written by batch ``number``."""
        return f"{self.domain}.{number}"

    @classmethod
    def empty(cls, app_id: str, sources: Sequence[str]) -> IngestRecord:
        return cls(app_id, tuple(_canonical(s) for s in sources), 0, {})

    def taking(self, files: Sequence[SourceFile], quarantine: QuarantineBatch | None, *, replace: bool = False) -> IngestRecord:
        """The record after the next batch takes ``files`` (``replace``: only them, after an overwrite)."""
        new = {f.path: (f.size, f.mtime_ms) for f in files}
        if replace:
            return IngestRecord(self.app_id, self.sources, self.batch + 1, new, quarantine, (), new, self.segments + self.dropped)
        taken = {**self.files, **new}
        return IngestRecord(self.app_id, self.sources, self.batch + 1, taken, quarantine, self.segments, {**self.fresh, **new}, self.dropped)

    def to_domain(self) -> DomainMetadata:
        """The whole record in one domain (the first format: rewritten whole by every batch;
        ``to_domains`` writes only what is new)."""
        body = {
            "format": _FORMAT,
            "appId": self.app_id,
            "sources": list(self.sources),
            "batch": self.batch,
            "numFiles": len(self.files),
            "files": _pack(self.files),
            "quarantine": self.quarantine.to_json() if self.quarantine is not None else None,
        }
        return DomainMetadata(self.domain, json.dumps(body, separators=(",", ":"), ensure_ascii=False))

    def to_domains(self) -> tuple[DomainMetadata, ...]:
        """The domains a batch commits: the index, the segment of its new files (if any) and
        removals of the segments an overwrite dropped; earlier segments are left alone."""
        segments = self.segments + ((self.batch,) if self.fresh else ())
        body = {
            "format": _SEGMENTED,
            "appId": self.app_id,
            "sources": list(self.sources),
            "batch": self.batch,
            "numFiles": len(self.files),
            "segments": _ranges(segments),
            "quarantine": self.quarantine.to_json() if self.quarantine is not None else None,
        }
        out = [DomainMetadata(self.domain, json.dumps(body, separators=(",", ":"), ensure_ascii=False))]
        if self.fresh:
            segment = {"batch": self.batch, "numFiles": len(self.fresh), "files": _pack(self.fresh)}
            out.append(DomainMetadata(self.segment_domain(self.batch), json.dumps(segment, separators=(",", ":"))))
        out.extend(DomainMetadata(self.segment_domain(n), "", removed=True) for n in self.dropped if n not in segments)
        return tuple(out)

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
        segments: tuple[int, ...] = ()
        try:
            body = json.loads(domain.configuration)
            fmt = body.get("format")
            if fmt == _FORMAT:
                files = _unpack(body["files"])
            elif fmt == _SEGMENTED:
                segments = _from_ranges(body["segments"])
                files = {}
                for n in segments:
                    files.update(_read_segment(snapshot, empty.segment_domain(n), n))
            else:
                raise CorruptLogError(f"{where}: unknown ingest record format {fmt!r}")
            batch = int(body["batch"])
            q = body.get("quarantine")
            quarantine = QuarantineBatch.from_json(q, where) if q is not None else None
            if int(body.get("numFiles", len(files))) != len(files):
                raise CorruptLogError(f"{where}: records {body.get('numFiles')} files but its segments hold {len(files)}")
        except (ValueError, TypeError, KeyError, AttributeError, zlib.error) as exc:
            raise CorruptLogError(f"{where} is not an ingest record: {exc}") from None
        if version != batch:
            raise CorruptLogError(f"{where}: records batch {batch} but txn {app_id!r} is at {version}")
        record_sources = tuple(str(s) for s in body.get("sources") or empty.sources)
        fresh = files if fmt == _FORMAT else {}  # the first format's files move into a segment once
        return cls(app_id, record_sources, batch, files, quarantine, segments, fresh)


def _read_segment(snapshot: Snapshot, name: str, number: int) -> dict[str, tuple[int, int]]:
    """The files of one segment domain (``CorruptLogError`` when it is missing or damaged)."""
    found = snapshot.domains.get(name)
    if found is None or found.removed:
        raise CorruptLogError(f"{snapshot.root}: ingest record segment {name} is missing")
    try:
        body = json.loads(found.configuration)
        files = _unpack(body["files"])
        if int(body["batch"]) != number or int(body["numFiles"]) != len(files):
            raise ValueError(f"segment {name} says batch {body['batch']} with {body['numFiles']} files, holds {len(files)}")
    except (ValueError, TypeError, KeyError, AttributeError, zlib.error) as exc:
        raise CorruptLogError(f"{snapshot.root}: domain {name} is not an ingest record segment: {exc}") from None
    return files


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


def complete_quarantine(record: IngestRecord, storage: Storage) -> int | None:
    """Commit the quarantine files of ``record``'s batch into its quarantine table, once
    (``txn(appId, batch)``; the table is created if missing). The new version, or None when
    there is nothing to commit or it was committed already. ``storage``: the quarantine
    table's (chosen by ``varlake.table.locate``)."""
    q = record.quarantine
    if q is None or not q.adds:
        return None
    log = DeltaLog(storage, q.root)
    try:
        log.latest_version()
        snapshot: Snapshot | None = log.snapshot()
    except TableNotFoundError:
        snapshot = None
    if snapshot is not None and (snapshot.app_version(record.app_id) or -1) >= record.batch:
        return None
    missing = [a.path for a in q.adds if not storage.exists(f"{q.root}/{_unquote(a.path)}")]
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
