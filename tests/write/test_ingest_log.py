"""The incremental ingest's record (``varlake.write.staging.ingest_log``) in segments: each batch
commits an index plus the segment of its own files, so a commit's record bytes do not grow
with the files taken before; reading joins the segments exactly; records of the first
format (the whole record in one domain) are still read and move into a segment once.

Oracles: synthetic ``SourceFile`` lists (no real files) and the committed log's JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from varlake.delta.actions import DomainMetadata
from varlake.delta.schema import parse_schema
from varlake.delta.table_log import DeltaLog
from varlake.errors import CorruptLogError
from varlake.io.storage import LocalStorage
from varlake.write import PendingWrite, commit_write
from varlake.write.staging.ingest_log import IngestRecord, SourceFile, ingest_app_id, plan

SOURCES = ["/data/in"]


def _new_table(root: Path) -> DeltaLog:
    log = DeltaLog(LocalStorage(), str(root))
    log.create(parse_schema('{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'))
    return log


def _files(start: int, count: int) -> list[SourceFile]:
    return [SourceFile(f"/data/in/2026/11/24/part-{i:07d}.jsonl", 1000 + i % 977, 1_795_000_000_000 + i) for i in range(start, start + count)]


def _commit(log: DeltaLog, root: Path, domains: tuple[DomainMetadata, ...], app_id: str, batch: int) -> int:
    snap = log.snapshot()
    pending = PendingWrite(str(root), "append", snap.schema, (), (), snap, domains=domains)
    version = commit_write(log, pending, app_id=app_id, app_version=batch).version
    assert version is not None
    return version


def _record_bytes(root: Path, version: int) -> int:
    """Bytes of the domainMetadata actions in one commit file."""
    lines = (root / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    return sum(len(line) for line in lines if "domainMetadata" in json.loads(line))


def test_a_hundred_thousand_files_in_batches_keep_each_commit_small(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _new_table(root)
    app_id = ingest_app_id(SOURCES, str(root))
    per_batch, batches = 25_000, 5  # 125,000 files taken
    listing = _files(0, batches * per_batch + 10)
    sizes = []
    for b in range(batches):
        record = IngestRecord.from_snapshot(log.snapshot(), app_id, SOURCES)
        assert len(record.files) == b * per_batch and record.batch == b
        arriving = listing[: (b + 1) * per_batch + 10]  # everything listed again, plus 10 not yet taken
        new, changed = plan(record, arriving)
        assert [f.path for f in new] == [f.path for f in arriving[b * per_batch :]] and not changed
        take = new[:per_batch]
        after = record.taking(take, None)
        version = _commit(log, root, after.to_domains(), app_id, after.batch)
        sizes.append(_record_bytes(root, version))
    # each commit holds its own batch's files: bounded, not growing with the ~100k taken before
    assert max(sizes) < 1.3 * min(sizes), sizes
    assert max(sizes) < 20 * per_batch  # ~12 bytes a file at most, for this batch only
    final = IngestRecord.from_snapshot(log.snapshot(), app_id, SOURCES)
    assert final.batch == batches and len(final.files) == batches * per_batch
    assert final.files == {f.path: (f.size, f.mtime_ms) for f in listing[: batches * per_batch]}
    # a changed file is reported, a new one taken, nothing else
    changed_one = SourceFile(_files(5, 1)[0].path, 1, 1)
    new, changed = plan(final, [*_files(0, 20), changed_one, *_files(batches * per_batch, 3)])
    assert [f.path for f in new] == [f.path for f in _files(batches * per_batch, 3)] and changed == [changed_one]
    # the index stays small: segments are runs of batch numbers
    index = log.snapshot().domains[final.domain].configuration
    assert len(index) < 400 and json.loads(index)["segments"] == [[1, batches]]


def test_a_first_format_record_is_read_and_moves_into_a_segment_once(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _new_table(root)
    app_id = ingest_app_id(SOURCES, str(root))
    old = IngestRecord.empty(app_id, SOURCES).taking(_files(0, 300), None)
    _commit(log, root, (old.to_domain(),), app_id, 1)  # written by the previous version of varlake
    body = json.loads(log.snapshot().domains[old.domain].configuration)
    assert body["format"] == 1 and body["numFiles"] == 300

    read = IngestRecord.from_snapshot(log.snapshot(), app_id, SOURCES)
    assert read.files == old.files and read.batch == 1 and read.segments == ()
    new, _ = plan(read, _files(0, 310))
    assert [f.path for f in new] == [f.path for f in _files(300, 10)]
    second = read.taking(new, None)
    _commit(log, root, second.to_domains(), app_id, 2)  # the old files move into segment 2 with the new
    third = IngestRecord.from_snapshot(log.snapshot(), app_id, SOURCES).taking(_files(310, 5), None)
    domains = third.to_domains()
    assert [d.domain for d in domains] == [third.domain, third.segment_domain(3)]
    assert json.loads(domains[1].configuration)["numFiles"] == 5  # only the new files
    _commit(log, root, domains, app_id, 3)
    back = IngestRecord.from_snapshot(log.snapshot(), app_id, SOURCES)
    assert back.files == {f.path: (f.size, f.mtime_ms) for f in _files(0, 315)} and back.segments == (2, 3)


def test_an_overwrite_drops_the_old_segments(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _new_table(root)
    app_id = ingest_app_id(SOURCES, str(root))
    record = IngestRecord.empty(app_id, SOURCES)
    for b in range(3):
        record = IngestRecord.from_snapshot(log.snapshot(), app_id, SOURCES).taking(_files(b * 10, 10), None)
        _commit(log, root, record.to_domains(), app_id, record.batch)
    replaced = IngestRecord.from_snapshot(log.snapshot(), app_id, SOURCES).taking(_files(100, 2), None, replace=True)
    _commit(log, root, replaced.to_domains(), app_id, replaced.batch)
    snap = log.snapshot()
    back = IngestRecord.from_snapshot(snap, app_id, SOURCES)
    assert set(back.files) == {f.path for f in _files(100, 2)} and back.segments == (4,)
    assert not any(d.startswith(back.domain + ".") and d != back.segment_domain(4) for d in snap.domains)


def test_a_missing_or_damaged_segment_is_named(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = _new_table(root)
    app_id = ingest_app_id(SOURCES, str(root))
    record = IngestRecord.empty(app_id, SOURCES).taking(_files(0, 4), None)
    index, segment = record.to_domains()
    _commit(log, root, (index,), app_id, 1)  # the segment never committed
    with pytest.raises(CorruptLogError, match="segment .* is missing"):
        IngestRecord.from_snapshot(log.snapshot(), app_id, SOURCES)
    bad = DomainMetadata(segment.domain, '{"batch": 1, "numFiles": 4, "files": "not base64!"}')
    root2 = tmp_path / "u"
    log2 = _new_table(root2)
    _commit(log2, root2, (index, bad), app_id, 1)
    with pytest.raises(CorruptLogError, match="not an ingest record segment"):
        IngestRecord.from_snapshot(log2.snapshot(), app_id, SOURCES)
