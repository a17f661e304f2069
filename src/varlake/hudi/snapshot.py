"""Which file slices make the table at an instant: latest, time travel, read-optimized.

A base or log file counts when the instant that wrote it is a completed commit, delta
commit or replace commit of the active timeline no later than the read's instant, or when
it is older than the active timeline (its instant was archived, so it completed: a
failed write's files are rolled back before its instant leaves the timeline). Instants
undone by a completed rollback or restore do not count (``Timeline.undone``). A file group retired by a
completed replace commit (insert overwrite, clustering) is not read. A base file a counted
commit wrote that the listing lacks, with no later one in its file group, is a
``DataFileMissingError`` (``check_base_files``), not an older version read silently.

Of each file group the read sees the slice of its latest counted base file, with the
counted log files on top: in layout 1 a log names its slice's base instant; from table
version 8 on it names the delta commit that wrote it, and belongs to the latest slice
whose base instant is no later than that commit's completion time. A read-optimized read
sees the base files only.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from varlake.errors import DataFileMissingError, HudiInstantNotFoundError, UnsupportedHudiFeatureError
from varlake.hudi.file_groups import BaseFile, FileGroup, FileSlice, LogFile, list_file_groups, parse_base_name
from varlake.hudi.properties import HOODIE_DIR, HudiProperties, load_properties
from varlake.hudi.archived import load_archived
from varlake.hudi.timeline import Instant, Timeline, load_timeline, with_archived
from varlake.io.storage import Storage

__all__ = ["HudiSnapshot", "normalize_instant", "open_snapshot", "refuse_lsm_history", "visible_slices"]


def normalize_instant(value: object, where: str) -> str:
    """An instant time as Hudi writes it: 17 digits (``yyyyMMddHHmmssSSS``); 14-digit and
    ``yyyy-MM-dd HH:mm:ss[.SSS]`` forms are accepted."""
    text = str(value).strip()
    digits = "".join(ch for ch in text if ch.isdigit())
    if text.isdigit() and len(text) in (14, 17):
        return text
    if len(digits) in (14, 17) and all(ch in "0123456789-: .T" for ch in text):
        return digits
    raise HudiInstantNotFoundError(f"{where}: {value!r} is not a Hudi instant time (yyyyMMddHHmmssSSS)")


def _pad(ts: str) -> str:
    return ts + "999" if len(ts) == 14 else ts


@dataclass(frozen=True)
class Validity:
    """Which instants count for a read at ``as_of`` (module doc)."""

    timeline: Timeline
    as_of: str

    @cached_property
    def valid(self) -> frozenset[str]:
        return frozenset(i.timestamp for i in self.timeline.completed_writes if i.timestamp <= self.as_of)

    @cached_property
    def completion(self) -> dict[str, str]:
        return {i.timestamp: i.completion_time or i.timestamp for i in self.timeline.completed_writes}

    def counts(self, instant: str) -> bool:
        if instant in self.valid:
            return True
        return self.timeline.is_before_start(instant) and instant <= self.as_of and instant not in self.timeline.undone

    @cached_property
    def replaced(self) -> frozenset[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for inst in self.timeline.completed_writes:
            if inst.action == "replacecommit" and inst.timestamp in self.valid:
                out |= self.timeline.metadata(inst).replaced()
        return frozenset(out)


def _slice_of(group: FileGroup, validity: Validity, by_completion: bool, read_optimized: bool) -> FileSlice | None:
    bases = [b for b in group.bases if validity.counts(b.instant)]
    latest: BaseFile | None = bases[-1] if bases else None
    if read_optimized:
        return None if latest is None else FileSlice(group.partition, group.file_id, latest.instant, latest)
    logs: list[LogFile] = []
    for log in group.logs:
        if not validity.counts(log.instant):
            if by_completion or not bases:
                continue
        if by_completion:
            done = validity.completion.get(log.instant, log.instant)
            owner = max((b.instant for b in bases if b.instant <= done), default=None)
        else:
            owner = max((b.instant for b in bases if b.instant <= log.instant), default=None)
        if owner == (latest.instant if latest else None):
            logs.append(log)
    if latest is None and not logs:
        return None
    base_instant = latest.instant if latest else min(lf.instant for lf in logs)
    return FileSlice(group.partition, group.file_id, base_instant, latest, tuple(logs))


def check_base_files(groups: list[FileGroup], validity: Validity, where: str) -> None:
    """``DataFileMissingError`` when a base file a counted commit wrote is not listed while
    its file group has no later one (the cleaner removes only older versions of a file
    group, so reading the listing without it would silently give an older version)."""
    latest = {(g.partition, g.file_id): max((b.instant for b in g.bases if validity.counts(b.instant)), default="") for g in groups}
    timeline = validity.timeline
    for inst in timeline.completed_writes:
        if inst.timestamp not in validity.valid:
            continue
        for stat in timeline.metadata(inst).write_stats:
            name = stat.path.rsplit("/", 1)[-1]
            base = parse_base_name(name, stat.partition)
            if base is None or base.instant != inst.timestamp:
                continue
            key = (stat.partition, stat.file_id)
            if key in validity.replaced:
                continue
            if latest.get(key, "") < inst.timestamp:
                raise DataFileMissingError(
                    f"{where}: base file {stat.path!r} written by instant {inst.timestamp} is not in the file listing"
                )


def visible_slices(
    groups: list[FileGroup], timeline: Timeline, props: HudiProperties, as_of: str, read_optimized: bool = False
) -> tuple[FileSlice, ...]:
    """The slice of each file group a read at ``as_of`` sees (module doc)."""
    validity = Validity(timeline, as_of)
    check_base_files(groups, validity, timeline.root)
    by_completion = props.timeline_layout >= 2 and props.version >= 8
    out = []
    for group in groups:
        if (group.partition, group.file_id) in validity.replaced:
            continue
        s = _slice_of(group, validity, by_completion, read_optimized or not props.is_mor)
        if s is not None:
            out.append(s)
    return tuple(out)


@dataclass(frozen=True)
class HudiSnapshot:
    """The table at ``instant`` (None: an empty table): its slices and the instants that count."""

    storage: Storage
    root: str
    properties: HudiProperties
    timeline: Timeline
    instant: Instant | None
    slices: tuple[FileSlice, ...]
    read_optimized: bool = False

    @cached_property
    def valid_instants(self) -> frozenset[str]:
        """Instant times whose log blocks count (merge-on-read)."""
        if self.instant is None:
            return frozenset()
        validity = Validity(self.timeline, self.instant.timestamp)
        return validity.valid

    @cached_property
    def avro_schema(self) -> str | None:
        """The writer schema (Avro JSON) the read's instant recorded, if any."""
        if self.instant is None:
            return None
        return self.timeline.metadata(self.instant).schema

    def counts(self, instant_time: str) -> bool:
        """Whether a log block of ``instant_time`` counts for this read."""
        if self.instant is None:
            return False
        return Validity(self.timeline, self.instant.timestamp).counts(instant_time)


def open_snapshot(
    storage: Storage,
    root: str,
    as_of: object = None,
    *,
    read_optimized: bool = False,
    properties: HudiProperties | None = None,
    timeline: Timeline | None = None,
    groups: list[FileGroup] | None = None,
    archived: bool | None = None,
) -> HudiSnapshot:
    """The table at ``root`` at its latest completed write, or at the last completed write
    no later than ``as_of`` (time travel); ``HudiInstantNotFoundError`` before the first.
    The archived timeline (layout 1) is read when ``archived``, or by default when ``as_of``
    is older than every completed write of the active timeline."""
    props = properties or load_properties(storage, root)
    props.check_readable(root)
    timeline = timeline or load_timeline(storage, root, props)
    if as_of is not None and archived is None:
        target = _pad(normalize_instant(as_of, root))
        archived = not any(i.timestamp <= target for i in timeline.completed_writes)
    if archived:
        timeline = with_archived(timeline, load_archived(storage, root, props))
    groups = list_file_groups(storage, root) if groups is None else groups
    if as_of is None:
        instant = timeline.latest_write
    else:
        target = _pad(normalize_instant(as_of, root))
        earlier = [i for i in timeline.completed_writes if i.timestamp <= target]
        if not earlier:
            refuse_lsm_history(storage, root, props, as_of)
            raise HudiInstantNotFoundError(f"{root}: no completed commit at or before instant {as_of!r}")
        instant = earlier[-1]
    if instant is None:
        return HudiSnapshot(storage, root, props, timeline, None, (), read_optimized)
    slices = visible_slices(groups, timeline, props, instant.timestamp, read_optimized)
    return HudiSnapshot(storage, root, props, timeline, instant, slices, read_optimized)


def refuse_lsm_history(storage: Storage, root: str, props: HudiProperties, as_of: object) -> None:
    """``UnsupportedHudiFeatureError`` when a layout-2 table has archived instants (its LSM
    history holds files) that a read at ``as_of`` would need."""
    if props.timeline_layout < 2:
        return
    if storage.list(f"{root}/{HOODIE_DIR}/{props.history_folder}"):
        raise UnsupportedHudiFeatureError(
            f"{root}: instant {as_of!r} has left the active timeline; the LSM timeline history (layout 2) is not read"
        )
