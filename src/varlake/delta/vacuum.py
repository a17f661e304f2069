"""Vacuum: delete data files no retained table version needs.

A version is *retained* if time travel inside the retention window can reach it:
every version committed after ``now - retention`` plus the version that was current
at that instant (the newest one committed at or before it). A file is kept if any
retained version references it -- i.e. it is live in the oldest retained version or
added by a later commit -- or if it is a tombstone younger than the retention.
Everything else under the table root that is older than the retention is deleted;
hidden paths (a component starting with ``_`` or ``.``, such as ``_delta_log``, unless
it is a ``name=value`` partition directory) are never touched.

Deletion vector files (``u``: ``<prefix>/deletion_vector_<uuid>.bin``; ``p``: an absolute
path inside the root) follow the same rule as data files: one referenced by a kept
logical file (a live ``add`` of a retained version, an ``add``/``remove`` committed
after it, a tombstone younger than the retention) is kept; an unreferenced one older
than the retention is deleted. A DV outside the root is never touched.

A retention below 168 hours (or below the table's
``delta.deletedFileRetentionDuration`` if that is longer) can break concurrent
readers and time travel, so it needs ``unsafe_retention=True``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from varlake.delta import config
from varlake.delta import constants as C
from varlake.delta.actions import AddFile, RemoveFile
from varlake.delta.deletion_vectors import DeletionVector
from varlake.delta.history import commit_timestamps
from varlake.delta.log_store import LogStore
from varlake.delta.paths import relative_data_path
from varlake.delta.protocol import check_writable
from varlake.errors import UnsafePathError, UnsafeRetentionError
from varlake.io.storage import is_temporary

__all__ = ["vacuum"]


def _hidden(rel_path: str) -> bool:
    return any(part[:1] in ("_", ".") and "=" not in part for part in rel_path.split("/"))


def _dv_paths(descriptors: Iterable[Mapping[str, Any] | None], root: str, where: str) -> set[str]:
    """Root-relative paths of the DV files ``descriptors`` name (inline ones and ones
    outside the root name none: vacuum never deletes them anyway)."""
    paths: set[str] = set()
    for descriptor in descriptors:
        if descriptor is None or descriptor.get("storageType") == "i":
            continue
        try:
            paths.add(DeletionVector.parse(descriptor, where).relative_path(root, where))
        except UnsafePathError:
            continue
    return paths


def vacuum(
    store: LogStore,
    retention_hours: float = C.MIN_SAFE_VACUUM_RETENTION_HOURS,
    *,
    dry_run: bool = False,
    unsafe_retention: bool = False,
    now_ms: int | None = None,
) -> list[str]:
    """Delete (or with ``dry_run`` only list) unreferenced files; return their root-relative paths."""
    latest = store.snapshot()
    check_writable(latest.protocol, latest.metadata, store.root)  # also what vacuumProtocolCheck asks
    if retention_hours < 0:
        raise UnsafeRetentionError(f"{store.root}: vacuum retention must not be negative ({retention_hours} h)")
    safe = max(C.MIN_SAFE_VACUUM_RETENTION_HOURS, config.deleted_file_retention_hours(latest.metadata.configuration))
    if retention_hours < safe and not unsafe_retention:
        raise UnsafeRetentionError(
            f"{store.root}: vacuum retention {retention_hours} h is below the safe minimum of {safe} h; "
            "pass unsafe_retention=True if no reader or writer can still need older versions"
        )
    now = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = now - int(retention_hours * 3600 * 1000)

    listing = store.listing()
    stamps = commit_timestamps(store.storage, listing, latest.metadata)
    earliest = 0 if 0 in listing.commits else min(listing.checkpoints, default=latest.version)
    at_cutoff = [v for v, ts in stamps.items() if ts <= cutoff and v >= earliest]
    oldest = max(at_cutoff) if at_cutoff else earliest

    root = store.root_location
    keep: set[str] = set()
    oldest_snapshot = latest if oldest == latest.version else store.snapshot(oldest)
    files = oldest_snapshot.files_table
    keep.update(relative_data_path(p, root, store.log_dir) for p in files.column("path").to_pylist())
    dvs = files.column("deletionVector")
    if dvs.null_count < len(dvs):
        keep |= _dv_paths(dvs.drop_null().to_pylist(), root, store.log_dir)
    for version, actions in store.read_commits_from(oldest + 1):
        for a in actions:
            if isinstance(a, (AddFile, RemoveFile)):
                keep.add(relative_data_path(a.path, root, store.commit_path(version)))
                keep |= _dv_paths([a.deletion_vector], root, store.commit_path(version))
    for tomb in latest.tombstones:
        if (tomb.deletion_timestamp or 0) >= cutoff:
            keep.add(relative_data_path(tomb.path, root, store.log_dir))
            keep |= _dv_paths([tomb.deletion_vector], root, store.log_dir)

    prefix = store.root + "/"
    doomed: list[tuple[str, str]] = []
    for info in store.storage.walk(store.root):
        rel = info.path[len(prefix) :] if info.path.startswith(prefix) else info.path
        if info.mtime_ms >= cutoff or rel in keep:
            continue
        if _hidden(rel) and not is_temporary(rel.rsplit("/", 1)[-1]):  # crash leftovers go; the log stays
            continue
        doomed.append((rel, info.path))
    doomed.sort()
    if not dry_run:
        for _rel, path in doomed:
            store.storage.delete(path)
    return [rel for rel, _path in doomed]
