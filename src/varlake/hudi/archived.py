"""The archived timeline of layout 1: instants that left ``.hoodie/`` for ``archived/``.

Hudi (table versions 6 to 8 on layout 1) archives old instants into log files in
``.hoodie/archived`` (``.commits_.archive.<n>_<write token>``), in the same log format as
merge-on-read logs: Avro data blocks of ``HoodieArchivedMetaEntry`` records, each naming
``commitTime``, ``actionType``, ``actionState`` (completed when absent) and carrying the
instant's metadata in the field of its action (``hoodieCommitMetadata``,
``hoodieReplaceCommitMetadata``, ``hoodieRollbackMetadata``...). They are read only where a
read needs them: time travel or an incremental read that starts before the active
timeline. (Layout 2's LSM history is not read: such reads are refused by name.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from varlake.hudi.commit_metadata import CommitMetadata, metadata_of
from varlake.hudi.log_blocks import decode_data_block
from varlake.hudi.log_format import parse_log_file
from varlake.hudi.properties import HOODIE_DIR, HudiProperties
from varlake.hudi.timeline import COMPLETED, KNOWN_ACTIONS, Instant
from varlake.io.storage import Storage

__all__ = ["ARCHIVE_PREFIX", "load_archived"]

ARCHIVE_PREFIX = ".commits_.archive"
_METADATA_FIELDS = {
    "commit": "hoodieCommitMetadata",
    "deltacommit": "hoodieCommitMetadata",
    "replacecommit": "hoodieReplaceCommitMetadata",
    "rollback": "hoodieRollbackMetadata",
    "restore": "hoodieRestoreMetadata",
}


def _plain(value: Any) -> Any:
    """Arrow's Python form of Avro data as JSON-like values: a map (a list of key/value
    pairs) as a dict."""
    if isinstance(value, list):
        if value and all(isinstance(x, tuple) and len(x) == 2 for x in value):
            return {str(k): _plain(v) for k, v in value}
        return [_plain(x) for x in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def load_archived(storage: Storage, root: str, props: HudiProperties) -> list[tuple[Instant, CommitMetadata]]:
    """The completed instants of the archived timeline with their metadata, by request time
    (empty for layout 2 and for a table that archived nothing)."""
    if props.timeline_layout >= 2:
        return []
    folder = f"{HOODIE_DIR}/{props.history_folder}"
    out: dict[tuple[str, str], tuple[Instant, CommitMetadata]] = {}
    for info in storage.list(f"{root}/{folder}"):
        if not info.name.startswith(ARCHIVE_PREFIX):
            continue
        where = f"{folder}/{info.name}"
        log = parse_log_file(storage.read(info.path), where)
        for block in log.blocks:
            if not block.is_data:
                continue
            for row in decode_data_block(block).to_pylist():
                action = str(row.get("actionType") or "")
                ts = str(row.get("commitTime") or "")
                state = str(row.get("actionState") or COMPLETED).lower()
                if action not in KNOWN_ACTIONS or not ts.isdigit() or state != COMPLETED:
                    continue
                raw = _plain(row.get(_METADATA_FIELDS.get(action, "")) or {})
                instant = Instant(ts, action, COMPLETED, None, f"{where}#{ts}.{action}")
                out[(ts, action)] = (instant, metadata_of(raw, instant.file))
    return [out[k] for k in sorted(out)]
