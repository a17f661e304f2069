"""Commit history and commit timestamps (for ``history()`` and time travel by timestamp).

Which timestamp is a commit's? PROTOCOL.md: with In-Commit Timestamps enabled
(``delta.enableInCommitTimestamps=true``) it is ``commitInfo.inCommitTimestamp`` for
versions from ``delta.inCommitTimestampEnablementVersion`` on; otherwise it is the
*modification time of the commit file*. ``commitInfo.timestamp`` is provenance only
(it is when the writer started, and other writers may omit it) and is reported but
never used for time travel. File mtimes can go backwards (clock skew, copies), so --
as the Delta reference implementation does -- they are made strictly increasing:
``ts[v] = max(mtime[v], ts[v-1] + 1)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping

from varlake.delta import config
from varlake.delta.actions import Metadata
from varlake.delta.json_fields import LONG_MAX, LONG_MIN, load_json
from varlake.delta.log import LogListing
from varlake.errors import CorruptLogError, StorageFileNotFoundError, VersionNotFoundError
from varlake.io.storage import Storage

__all__ = [
    "CommitEntry",
    "commit_timestamps",
    "history_entries",
    "ict_start_version",
    "read_commit_info",
    "to_epoch_ms",
    "version_at_timestamp",
]

_COMMIT_INFO_LINE = re.compile(rb'^\s*\{\s*"commitInfo"\s*:')


@dataclass(frozen=True)
class CommitEntry:
    """One row of ``history()``."""

    version: int
    timestamp: int  # ms since the epoch, per the module docstring
    operation: str | None
    operation_parameters: Mapping[str, Any] = field(default_factory=dict)
    read_version: int | None = None
    is_blind_append: bool | None = None
    commit_info: Mapping[str, Any] = field(default_factory=dict)

    @property
    def datetime(self) -> datetime:
        try:
            return datetime.fromtimestamp(self.timestamp / 1000, tz=timezone.utc)
        except (OverflowError, ValueError, OSError) as exc:
            raise CorruptLogError(f"version {self.version}: commit timestamp {self.timestamp} ms is not a date ({exc})") from None


def to_epoch_ms(ts: int | float | datetime) -> int:
    """Milliseconds since the epoch; a naive ``datetime`` is taken as UTC."""
    if isinstance(ts, datetime):
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=timezone.utc)
        return int(ts.timestamp() * 1000)
    return int(ts)


def read_commit_info(storage: Storage, path: str) -> dict[str, Any] | None:
    """The ``commitInfo`` object of one commit file (``None`` if it has none)."""
    try:
        data = storage.read(path)
    except StorageFileNotFoundError:
        return None
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        if _COMMIT_INFO_LINE.match(line):
            obj = load_json(line, f"{path} line {lineno}", "the log line")
            info = obj.get("commitInfo") if isinstance(obj, dict) else None
            return info if isinstance(info, dict) else None
    return None


def ict_start_version(metadata: Metadata) -> int | None:
    """First version whose timestamp is its ``inCommitTimestamp`` (``None``: ICT off)."""
    if not config.in_commit_timestamps_enabled(metadata.configuration):
        return None
    return config.ict_enablement_version(metadata.configuration) or 0


def commit_timestamps(storage: Storage, listing: LogListing, metadata: Metadata) -> dict[int, int]:
    """Commit timestamp (ms) of every listed commit, per the module docstring."""
    ict_from = ict_start_version(metadata)
    out: dict[int, int] = {}
    previous: int | None = None
    for version in sorted(listing.commits):
        info = listing.commits[version]
        ts = info.mtime_ms
        if ict_from is not None and version >= ict_from:
            ci = read_commit_info(storage, info.path) or {}
            ict = ci.get("inCommitTimestamp")
            if type(ict) is int and LONG_MIN <= ict <= LONG_MAX:
                ts = ict
        if previous is not None and ts <= previous and (ict_from is None or version < ict_from):
            ts = previous + 1
        out[version] = ts
        previous = ts
    return out


def version_at_timestamp(timestamps: Mapping[int, int], ts_ms: int, reconstructable_from: int, where: str) -> int:
    """The newest version committed at or before ``ts_ms``.

    A timestamp before the earliest reconstructable commit raises
    ``VersionNotFoundError``; one after the latest commit gives the latest version.
    """
    candidates = sorted(v for v in timestamps if v >= reconstructable_from)
    if not candidates:
        raise VersionNotFoundError(f"{where}: no commits to time travel to")
    first = candidates[0]
    if ts_ms < timestamps[first]:
        raise VersionNotFoundError(
            f"{where}: timestamp {ts_ms} ms is before the earliest available commit "
            f"(version {first} at {timestamps[first]} ms)"
        )
    lo, hi = 0, len(candidates) - 1
    while lo < hi:  # timestamps are increasing: binary search for the last one <= ts_ms
        mid = (lo + hi + 1) // 2
        if timestamps[candidates[mid]] <= ts_ms:
            lo = mid
        else:
            hi = mid - 1
    return candidates[lo]


def history_entries(
    storage: Storage, listing: LogListing, metadata: Metadata, limit: int | None = None
) -> list[CommitEntry]:
    """``CommitEntry`` per listed commit, newest first (at most ``limit``)."""
    timestamps = commit_timestamps(storage, listing, metadata)
    versions = sorted(listing.commits, reverse=True)
    if limit is not None:
        versions = versions[:limit]
    entries = []
    for v in versions:
        ci = read_commit_info(storage, listing.commits[v].path) or {}
        params = ci.get("operationParameters")
        read_version = ci.get("readVersion")
        blind = ci.get("isBlindAppend")
        entries.append(
            CommitEntry(
                version=v,
                timestamp=timestamps[v],
                operation=ci.get("operation") if isinstance(ci.get("operation"), str) else None,
                operation_parameters=params if isinstance(params, dict) else {},
                read_version=read_version if isinstance(read_version, int) else None,
                is_blind_append=blind if isinstance(blind, bool) else None,
                commit_info=ci,
            )
        )
    return entries
