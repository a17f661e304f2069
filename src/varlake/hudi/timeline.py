"""The Hudi timeline: instants named by their files, in layout 1 and layout 2.

An instant is an action (``commit``, ``deltacommit``, ``replacecommit``, ``clean``,
``rollback``, ``restore``, ``compaction``, ``clustering``...) at a request time (17 digits,
``yyyyMMddHHmmssSSS``; older tables 14) in a state: requested, inflight or completed.

* Layout 1 (table versions 6 and before) keeps the active timeline in ``.hoodie/``:
  ``<ts>.<action>.requested``, ``<ts>.<action>.inflight`` (a commit's is ``<ts>.inflight``)
  and ``<ts>.<action>`` when completed; commit metadata is JSON.
* Layout 2 (versions 8 and 9) keeps it in ``.hoodie/timeline/``, and a completed instant's
  file also names its completion time: ``<ts>_<completion ts>.<action>``; commit metadata
  is an Avro container file. Clustering and compaction are requested and inflight as
  ``clustering``/``compaction`` and complete as ``replacecommit``/``commit``.

Instants older than the active timeline were archived (``archived/`` or ``timeline/history``);
a reader treats a file written before the active timeline starts as committed, as Hudi does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from varlake.errors import CorruptHudiTimelineError
from varlake.hudi.commit_metadata import CommitMetadata, parse_commit_metadata
from varlake.hudi.properties import HOODIE_DIR, HudiProperties
from varlake.io.storage import Storage

__all__ = ["Instant", "Timeline", "load_timeline", "with_archived", "REQUESTED", "INFLIGHT", "COMPLETED"]

REQUESTED = "requested"
INFLIGHT = "inflight"
COMPLETED = "completed"

#: actions that write data files; compaction and clustering complete as commit/replacecommit
WRITE_ACTIONS = frozenset({"commit", "deltacommit", "replacecommit"})
KNOWN_ACTIONS = frozenset(
    {"commit", "deltacommit", "replacecommit", "clean", "rollback", "restore", "savepoint", "compaction",
     "logcompaction", "clustering", "indexing", "schemacommit"}
)

_NAME = re.compile(r"^(\d{14,17})(?:_(\d{14,17}))?\.([a-z]+)(?:\.(requested|inflight))?$")


@dataclass(frozen=True, order=True)
class Instant:
    """One instant: request ``timestamp``, ``action``, ``state``, completion time (layout 2)
    and the file holding its metadata (relative to the table root)."""

    timestamp: str
    action: str
    state: str
    completion_time: str | None = None
    file: str = ""

    @property
    def is_completed(self) -> bool:
        return self.state == COMPLETED


def parse_instant_name(name: str, folder: str) -> Instant | None:
    """The instant a timeline file names, None for other files (``hoodie.properties``, dirs)."""
    m = _NAME.match(name)
    if m is None:
        return None
    ts, completion, action, suffix = m.groups()
    file = f"{folder}/{name}"
    if action == "inflight" and suffix is None:  # ``<ts>.inflight``: a commit in flight
        return Instant(ts, "commit", INFLIGHT, None, file)
    if action not in KNOWN_ACTIONS:
        return None
    if suffix is not None:
        return Instant(ts, action, suffix, None, file)
    return Instant(ts, action, COMPLETED, completion, file)


@dataclass(frozen=True)
class Timeline:
    """The active timeline of a table: every instant's latest state, by request time."""

    storage: Storage
    root: str
    instants: tuple[Instant, ...]  # one per (timestamp, action family), latest state, sorted
    _metadata: dict[str, CommitMetadata] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def completed(self) -> tuple[Instant, ...]:
        return tuple(i for i in self.instants if i.is_completed)

    @cached_property
    def undone(self) -> frozenset[str]:
        """Request times of instants a completed rollback or restore undid (Hudi deletes
        a rolled-back instant's files and its completed instant file; where they are left,
        the instant still does not count)."""
        out: set[str] = set()
        for inst in self.completed:
            if inst.action in ("rollback", "restore"):
                out.update(self.metadata(inst).rolled_back)
        return frozenset(out)

    @cached_property
    def completed_writes(self) -> tuple[Instant, ...]:
        """Completed commits, delta commits and replace commits not undone, by request time."""
        return tuple(i for i in self.completed if i.action in WRITE_ACTIONS and i.timestamp not in self.undone)

    @cached_property
    def pending(self) -> tuple[Instant, ...]:
        return tuple(i for i in self.instants if not i.is_completed)

    @property
    def first_timestamp(self) -> str | None:
        """The request time the active timeline starts at (None when empty)."""
        return self.instants[0].timestamp if self.instants else None

    @property
    def latest_write(self) -> Instant | None:
        return self.completed_writes[-1] if self.completed_writes else None

    def is_before_start(self, timestamp: str) -> bool:
        """Whether ``timestamp`` is older than the active timeline (archived, so committed)."""
        first = self.first_timestamp
        return first is not None and timestamp < first

    def find(self, timestamp: str) -> Instant | None:
        for i in self.completed:
            if i.timestamp == timestamp:
                return i
        return None

    def metadata(self, instant: Instant) -> CommitMetadata:
        """The commit metadata of a completed instant (JSON in layout 1, Avro in layout 2),
        read once per timeline (a completed instant's file does not change)."""
        found = self._metadata.get(instant.file)
        if found is None:
            found = parse_commit_metadata(self.storage.read(f"{self.root}/{instant.file}"), instant.file)
            self._metadata[instant.file] = found
        return found


def load_timeline(storage: Storage, root: str, props: HudiProperties) -> Timeline:
    """The active timeline of the table at ``root`` (one listing of its timeline folder)."""
    folder = HOODIE_DIR if not props.timeline_folder else f"{HOODIE_DIR}/{props.timeline_folder}"
    latest: dict[tuple[str, str], Instant] = {}
    rank = {REQUESTED: 0, INFLIGHT: 1, COMPLETED: 2}
    for info in storage.list(f"{root}/{folder}"):
        inst = parse_instant_name(info.name, folder)
        if inst is None:
            continue
        key = (inst.timestamp, _family(inst.action))
        old = latest.get(key)
        if old is None or rank[inst.state] > rank[old.state]:
            latest[key] = inst
    for (ts, _), inst in latest.items():
        if inst.completion_time is not None and inst.completion_time < ts:
            raise CorruptHudiTimelineError(f"{root}/{inst.file}: completion time before request time")
    return Timeline(storage, root, tuple(sorted(latest.values())))


def _family(action: str) -> str:
    """Actions that are one instant in different states (clustering completes as a
    replacecommit, compaction as a commit, a commit's inflight file names no action)."""
    if action in ("clustering", "replacecommit"):
        return "replacecommit"
    if action in ("compaction", "commit"):
        return "commit"
    if action in ("logcompaction", "deltacommit"):
        return "deltacommit"
    return action


def with_archived(timeline: Timeline, archived: list[tuple[Instant, CommitMetadata]]) -> Timeline:
    """``timeline`` with the archived instants (``archived.load_archived``) before its own,
    their metadata held in memory."""
    if not archived:
        return timeline
    known = {(i.timestamp, _family(i.action)) for i in timeline.instants}
    extra = [(i, md) for i, md in archived if (i.timestamp, _family(i.action)) not in known]
    merged = Timeline(timeline.storage, timeline.root, tuple(sorted([*timeline.instants, *(i for i, _ in extra)])))
    merged._metadata.update(timeline._metadata)
    merged._metadata.update({i.file: md for i, md in extra})
    return merged
