"""``LogStore``: one table's ``_delta_log`` on a ``Storage`` -- list it, read commits and
checkpoints, put a commit file if absent, and replay them into snapshots.

Commits (``transaction``) and ``vacuum`` take a ``LogStore``; ``DeltaLog`` composes one
with create, time travel, history and checkpoints. The store keeps the newest snapshot
it has seen and replays only the commits after it when asked for the latest version
again (unless a newer checkpoint makes that cheaper).
"""

from __future__ import annotations

import time
from typing import Any

from varlake.delta import constants as C
from varlake.delta.actions import Action
from varlake.delta.checkpoint import write_checkpoint
from varlake.delta.commit_file import parse_commit
from varlake.delta.history import ict_start_version, read_commit_info
from varlake.delta.last_checkpoint import read_last_checkpoint
from varlake.delta.log import (
    LogListing,
    build_segment,
    commit_name,
    list_log,
    read_checkpoint,
    read_commit,
    read_commit_for_replay,
)
from varlake.delta.protocol import check_readable, check_writable
from varlake.delta.replay import TableState, replay, state_from_checkpoint
from varlake.delta.snapshot import Snapshot
from varlake.delta.schema import top_level_types
from varlake.errors import StorageFileNotFoundError
from varlake.io.storage import FileInfo, Storage, temporary_name
from varlake.semantics import partition_values

__all__ = ["LogStore"]


class LogStore:
    """The ``_delta_log`` of the table at ``root`` (a path understood by ``storage``)."""

    def __init__(self, storage: Storage, root: str) -> None:
        self.storage = storage
        self.root = root.rstrip("/") or "/"
        self.log_dir = f"{self.root}/{C.LOG_DIR}"
        self.root_location = storage.location(self.root)
        self._latest: Snapshot | None = None
        self._latest_file: FileInfo | None = None
        #: the listing ``latest_version`` made while no snapshot was cached: the next
        #: ``snapshot`` lists only from its newest version on, without ``_last_checkpoint``
        self._opened: LogListing | None = None

    def __repr__(self) -> str:
        return f"LogStore({self.storage!r}, {self.root!r})"

    # --- log files -----------------------------------------------------------------------

    def commit_path(self, version: int) -> str:
        return f"{self.log_dir}/{commit_name(version)}"

    def listing(self, from_version: int | None = None) -> LogListing:
        """The commit and checkpoint files of the log (from ``from_version`` on)."""
        return list_log(self.storage, self.log_dir, from_version=from_version)

    def _listing_for(self, version: int | None) -> LogListing:
        """List the log, from the ``_last_checkpoint`` hint on when that suffices."""
        hint = read_last_checkpoint(self.storage, self.log_dir)
        if hint is not None and (version is None or version >= hint["version"]) and hint["version"] > 0:
            listing = self.listing(from_version=hint["version"])
            if hint["version"] in listing.checkpoints:
                return listing
        return self.listing()

    def latest_version(self) -> int | None:
        """The newest committed version, ``None`` if there is no log.

        While no snapshot is cached, the listing is kept for the next ``snapshot``: opening a
        table and then loading it reads ``_last_checkpoint`` once, and the load lists only the
        versions from the one found here on (to see commits made since)."""
        listing = self._listing_for(None)
        if self._latest is None and listing.latest_version is not None:
            self._opened = listing
        return listing.latest_version

    def _since_opened(self, version: int | None) -> LogListing | None:
        """The listing kept by ``latest_version`` brought up to date by listing from its newest
        version on; ``None`` when it does not serve ``version`` or the log changed under it."""
        opened, self._opened = self._opened, None
        if opened is None or opened.latest_version is None:
            return None
        if not opened.complete and version is not None and version < min(opened.checkpoints, default=version + 1):
            return None  # an older version than the hinted checkpoint: list everything
        start = opened.latest_version
        newer = self.listing(from_version=start)
        if newer.latest_version is None or not _same_file(newer.commits.get(start), opened.commits.get(start)):
            return None  # emptied or rewritten since: start afresh
        return LogListing(
            {**opened.commits, **newer.commits}, {**opened.checkpoints, **newer.checkpoints}, opened.complete
        )

    def write_commit(self, version: int, data: bytes) -> bool:
        """Put-if-absent the commit file of ``version``; ``False`` if it exists. Before a
        table's first commit on an object store, the store is proven to honour put-if-absent
        (``ObjectStorage.check_put_if_absent``: ``UnsafeStorageError`` unless single-writer)
        with a probe key inside the log (hidden as a temporary name, deleted after)."""
        check = getattr(self.storage, "check_put_if_absent", None)
        if version == 0 and check is not None:
            check(f"{self.log_dir}/{temporary_name('put-if-absent-probe')}")
        return self.storage.write_if_absent(self.commit_path(version), data)

    def read_actions(self, version: int) -> list[Action]:
        """All actions of the commit at ``version`` (ignored action types left out)."""
        return parse_commit(self.storage.read(self.commit_path(version)), self.commit_path(version))

    def read_commits_from(self, version: int) -> list[tuple[int, list[Action]]]:
        """Commits ``version``, ``version+1``, ... as far as they exist contiguously."""
        listing = self.listing(from_version=version)
        out = []
        v = version
        while v in listing.commits:
            out.append((v, read_commit(self.storage, listing.commits[v], self.root_location)))
            v += 1
        return out

    def commit_info(self, version: int) -> dict[str, Any] | None:
        return read_commit_info(self.storage, self.commit_path(version))

    def commit_file_mtime(self, version: int) -> int:
        try:
            return self.storage.info(self.commit_path(version)).mtime_ms
        except StorageFileNotFoundError:
            return 0

    def write_checkpoint(self, snapshot: Snapshot) -> str:
        """Write a classic checkpoint for ``snapshot`` and update ``_last_checkpoint``."""
        check_writable(snapshot.protocol, snapshot.metadata, self.root)
        return write_checkpoint(self.storage, self.log_dir, snapshot.state)

    # --- snapshots -----------------------------------------------------------------------

    def snapshot(self, version: int | None = None) -> Snapshot:
        """The table at ``version`` (latest if ``None``)."""
        cached = self._latest
        listing = None
        if cached is not None and (version is None or version >= cached.version):
            listing = self.listing(from_version=cached.version)
            listed = listing.commits.get(cached.version)
            if not _same_file(listed, self._latest_file):
                cached, listing = None, None  # the log changed under us: start afresh
            else:
                self._latest_file = listed  # now with the store's own mtime
        if listing is None and cached is None:
            listing = self._since_opened(version)
        if listing is None:
            listing = self._listing_for(version)
        known = cached.version if cached is not None else None
        segment = build_segment(listing, self.log_dir, version, known_version=known)
        if segment.known_version is not None and cached is not None:
            if segment.version == cached.version:
                return cached
            base: TableState | None = cached.state
        elif segment.checkpoint is not None:
            base = state_from_checkpoint(read_checkpoint(self.storage, segment.checkpoint, self.root_location))
        else:
            base = None
        commits = [(v, read_commit_for_replay(self.storage, info, self.root_location)) for v, info in segment.commits]
        state = replay(base, commits, self.log_dir)
        snap = self._make_snapshot(state, listing.commits.get(state.version))
        if version is None or (self._latest is None or snap.version >= self._latest.version):
            self._remember(snap, listing.commits.get(state.version))
        return snap

    def adopt_state(self, state: TableState, commit_size: int | None = None) -> Snapshot:
        """A snapshot for a state this process just built (after a commit); cached as latest.

        ``commit_size``: the size of the commit file this process has just put for
        ``state.version``. Then nothing is asked of the store: the file's time is the local
        clock's (as delta-rs and Delta Spark take it), and the next listing only checks the
        file's path and size (and remembers the store's time). Without it the file is looked up."""
        info: FileInfo | None
        if commit_size is not None:
            info = FileInfo(self.commit_path(state.version), commit_size, _UNKNOWN_MTIME)
        else:
            try:
                info = self.storage.info(self.commit_path(state.version))
            except StorageFileNotFoundError:
                info = None
        snap = self._make_snapshot(state, info)
        self._remember(snap, info)
        return snap

    def _make_snapshot(self, state: TableState, commit_file: FileInfo | None) -> Snapshot:
        check_readable(state.protocol, state.metadata, self.root)
        snap = Snapshot(self.root, state, self._timestamp_of(state, commit_file))
        # A schema string that does not parse, or partition columns it does not have, fail the
        # open, not a later scan or append.
        partition_values.check_partition_columns(
            snap.partition_columns, top_level_types(snap.schema), f"{self.root} metaData.partitionColumns"
        )
        return snap

    def _remember(self, snap: Snapshot, commit_file: FileInfo | None) -> None:
        if commit_file is not None:
            self._latest, self._latest_file, self._opened = snap, commit_file, None

    def _timestamp_of(self, state: TableState, commit_file: FileInfo | None) -> int:
        ict_from = ict_start_version(state.metadata)
        if ict_from is not None and state.version >= ict_from:
            info = state.commit_info.values if state.commit_info is not None else self.commit_info(state.version)
            if info and isinstance(info.get("inCommitTimestamp"), int):
                return info["inCommitTimestamp"]
        if commit_file is not None:
            if commit_file.mtime_ms == _UNKNOWN_MTIME:  # a commit this process has just put
                said = state.commit_info.values.get("timestamp") if state.commit_info is not None else None
                return said if isinstance(said, int) else int(time.time() * 1000)
            return commit_file.mtime_ms
        return self.commit_file_mtime(state.version)


#: The mtime of a commit file this process has just put and not yet listed (``adopt_state``).
_UNKNOWN_MTIME = -1


def _same_file(listed: FileInfo | None, remembered: FileInfo | None) -> bool:
    """Whether the listed commit file is the one remembered (its time unless not yet known)."""
    if listed is None or remembered is None:
        return listed == remembered
    if remembered.mtime_ms == _UNKNOWN_MTIME:
        return (listed.path, listed.size) == (remembered.path, remembered.size)
    return listed == remembered
