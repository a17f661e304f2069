"""Merge-on-read: a file slice's base file merged with its log files, as Hudi's readers do.

``merge_file_slice(base, log_files, ...)`` follows Hudi's merged log record scanner:

* Blocks are taken in log file order (instant, version, write token), then file order.
  Corrupt blocks are skipped. Data and delete blocks count only when their instant is
  a completed one (``valid_instants``, or older than ``timeline_start``: instants
  archived before the active timeline begins); blocks of failed or pending writes are
  ignored. A rollback command block removes the blocks of its target instant read so far.
  With ``as_of`` (time travel) the scan ends at the first data or delete block after it.
* Records are merged per record key in arrival order (base, then log blocks).
  ``EVENT_TIME_ORDERING``: a newer version wins unless the older one has a greater
  ordering value (ties go to the newer); a delete record whose ordering value is
  missing or ``0`` always wins. ``COMMIT_TIME_ORDERING`` (or no ordering field): the
  newer version always wins.
* A record whose ``_hoodie_is_deleted`` is true, whose ``_hoodie_operation`` is ``D``,
  or that carries ``delete_marker`` (a column and the string that marks deletes) is a
  delete: it merges like a record and, when it wins, removes the key.
* With ``partial_update`` the winning version's null fields take the losing version's
  values (Hudi's partial update modes ``IGNORE_DEFAULTS``/``KEEP_VALUES``).

``merge_settings(properties)`` reads a table's merge mode, ordering field, partial update
mode and delete marker from its ``hoodie.properties`` (RFC-97's mapping of payload classes).

The result has ``schema`` (by default the base file's, else the last data block's); log
records lacking a column get nulls there. Rows come in base order (merged rows in their
base position), then keys first seen in the logs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.errors import HudiLogMergeError, HudiLogUnsupportedError
from varlake.hudi.log_blocks import decode_data_block, decode_delete_block
from varlake.hudi.log_format import BlockType, CommandType, LogBlock, LogFile, parse_log_file_name
from varlake.shred.arrow_extension import VariantExtensionType

__all__ = [
    "COMMIT_TIME_ORDERING",
    "EVENT_TIME_ORDERING",
    "MergeSettings",
    "infer_merge_mode",
    "merge_settings",
    "merge_file_slice",
    "record_keys",
    "valid_log_blocks",
]

EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
_IS_DELETED = "_hoodie_is_deleted"
_OPERATION = "_hoodie_operation"

_PAYLOAD = "org.apache.hudi.common.model."
# payload class -> (merge mode, partial updates, delete marker), as Hudi 1.1 upgrades them (RFC-97)
_PAYLOADS: dict[str, tuple[str, bool, tuple[str, str] | None]] = {
    _PAYLOAD + "DefaultHoodieRecordPayload": (EVENT_TIME_ORDERING, False, None),
    _PAYLOAD + "EventTimeAvroPayload": (EVENT_TIME_ORDERING, False, None),
    _PAYLOAD + "OverwriteWithLatestAvroPayload": (COMMIT_TIME_ORDERING, False, None),
    _PAYLOAD + "OverwriteNonDefaultsWithLatestAvroPayload": (COMMIT_TIME_ORDERING, True, None),
    _PAYLOAD + "PartialUpdateAvroPayload": (EVENT_TIME_ORDERING, True, None),
    _PAYLOAD + "AWSDmsAvroPayload": (COMMIT_TIME_ORDERING, False, ("Op", "D")),
}
_PAYLOAD_KEYS = ("hoodie.compaction.payload.class", "hoodie.table.payload.class", "hoodie.legacy.payload.class")
# partial update modes whose "missing" value is null (the schema default of Spark-written columns)
_NULL_PARTIAL_MODES = {"IGNORE_DEFAULTS", "KEEP_VALUES", "FILL_DEFAULTS"}


@dataclass(frozen=True)
class MergeSettings:
    """How a table merges versions of a record: ``merge_file_slice``'s keyword arguments
    ``merge_mode``, ``ordering_field``, ``partial_update`` and ``delete_marker``."""

    merge_mode: str
    ordering_field: str | None
    partial_update: bool = False
    delete_marker: tuple[str, str] | None = None

    def as_kwargs(self) -> dict[str, Any]:
        return {
            "merge_mode": self.merge_mode,
            "ordering_field": self.ordering_field,
            "partial_update": self.partial_update,
            "delete_marker": self.delete_marker,
        }


def merge_settings(properties: Mapping[str, str]) -> MergeSettings:
    """A table's ``MergeSettings`` from its ``hoodie.properties``, as Hudi 1.1 reads (or, for
    tables before version 9, upgrades) them: ``hoodie.record.merge.mode`` when set, else the
    payload class (RFC-97's table: ``DefaultHoodieRecordPayload`` and ``EventTimeAvroPayload``
    event time; ``OverwriteWithLatestAvroPayload`` commit time; ``PartialUpdateAvroPayload``
    and ``OverwriteNonDefaultsWithLatestAvroPayload`` with partial updates; ``AWSDmsAvroPayload``
    with the delete marker ``Op = D``); ``hoodie.table.partial.update.mode`` and the
    ``hoodie.payload.delete.field``/``marker`` merge properties. Custom payloads, mergers and
    marker-based partial updates raise ``HudiLogUnsupportedError``."""
    ordering = properties.get("hoodie.table.ordering.fields") or properties.get("hoodie.table.precombine.field")
    ordering = (ordering.split(",")[0].strip() or None) if ordering else None
    payload = next((properties[k] for k in _PAYLOAD_KEYS if properties.get(k)), None)
    known = _PAYLOADS.get(payload) if payload else None
    mode = properties.get("hoodie.record.merge.mode")
    partial, marker = (known[1], known[2]) if known else (False, None)
    if mode is None:
        if payload is not None and known is None:
            raise HudiLogUnsupportedError(f"merging with the custom payload class {payload}")
        mode = known[0] if known else (EVENT_TIME_ORDERING if ordering else COMMIT_TIME_ORDERING)
    mode = mode.strip().upper()
    if mode not in (EVENT_TIME_ORDERING, COMMIT_TIME_ORDERING):
        what = f" (payload class {payload})" if payload else ""
        raise HudiLogUnsupportedError(f"merge mode {mode}{what}")
    partial_mode = (properties.get("hoodie.table.partial.update.mode") or "").strip().upper()
    if partial_mode and partial_mode != "NONE":
        if partial_mode not in _NULL_PARTIAL_MODES:
            raise HudiLogUnsupportedError(f"partial update mode {partial_mode}")
        partial = True
    field = _merge_property(properties, "hoodie.payload.delete.field")
    value = _merge_property(properties, "hoodie.payload.delete.marker")
    if field and value is not None:
        marker = (field, value)
    return MergeSettings(mode, ordering, partial, marker)


def _merge_property(properties: Mapping[str, str], key: str) -> str | None:
    return properties.get(f"hoodie.record.merge.property.{key}", properties.get(key))


def infer_merge_mode(properties: Mapping[str, str]) -> tuple[str, str | None]:
    """``(merge mode, ordering field)`` of ``merge_settings(properties)``."""
    settings = merge_settings(properties)
    return settings.merge_mode, settings.ordering_field


def _sorted_files(log_files: Sequence[LogFile]) -> list[LogFile]:
    names = [parse_log_file_name(f.name) for f in log_files]
    if any(n is None for n in names):
        return list(log_files)
    return [f for _, _, f in sorted((n, i, f) for i, (n, f) in enumerate(zip(names, log_files)))]


def valid_log_blocks(
    log_files: Sequence[LogFile],
    valid_instants: Collection[str],
    timeline_start: str | None = None,
    as_of: str | None = None,
) -> list[LogBlock]:
    """The data and delete blocks that count, in merge order (see the module docstring).
    With ``as_of``, the scan stops at the first data or delete block written after it (as
    Hudi's scanner stops at its latest instant to read)."""
    valid = set(valid_instants)
    queue: list[LogBlock] = []
    for log_file in _sorted_files(log_files):
        for block in log_file.blocks:
            if block.block_type == BlockType.CORRUPT:
                continue
            if block.block_type == BlockType.COMMAND:
                if block.command_type() == CommandType.ROLLBACK:
                    target = block.target_instant_time
                    queue = [b for b in queue if b.instant_time != target]
                continue
            instant = block.instant_time or ""
            if as_of is not None and instant > as_of:
                return queue
            if block.block_type == BlockType.CDC_DATA:
                continue  # change data for incremental queries, not part of a snapshot
            if instant in valid or (timeline_start is not None and instant < timeline_start):
                if block.is_partial:
                    raise HudiLogUnsupportedError(f"{block.where()}: partial-update blocks")
                queue.append(block)
    return queue


def _column(table: pa.Table, name: str, what: str) -> pa.ChunkedArray:
    if name not in table.column_names:
        raise HudiLogMergeError(f"the {what} column {name!r} is missing (columns: {table.column_names})")
    return table.column(name)


def record_keys(table: pa.Table, key_fields: str | Sequence[str]) -> list[Any]:
    """The Hudi record key of each row: the one key column as text, or for several key
    columns ``f1:v1,f2:v2`` (``__null__`` for null, ``__empty__`` for an empty string), the
    form Hudi's complex key generator writes and delete blocks carry."""
    return _key_array(table, key_fields).to_pylist()


def _key_array(table: pa.Table, key_fields: str | Sequence[str]) -> pa.Array:
    fields = [key_fields] if isinstance(key_fields, str) else list(key_fields)
    if not fields:
        raise HudiLogMergeError("no record key field given")
    if len(fields) == 1:
        return _as_text(_column(table, fields[0], "record key")).combine_chunks()
    parts = []
    for name in fields:
        text = _as_text(_column(table, name, "record key"))
        text = pc.if_else(pc.equal(text, ""), pa.scalar("__empty__"), text)
        text = pc.fill_null(text, "__null__")
        parts.append(pc.binary_join_element_wise(f"{name}:", text, ""))
    return pc.binary_join_element_wise(*parts, ",").combine_chunks()


def _as_text(col: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_string(col.type):
        return col
    try:
        return pc.cast(col, pa.string())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise HudiLogMergeError(f"a record key column of type {col.type} has no text form: {e}") from None


def _deleted_flags(table: pa.Table, delete_marker: tuple[str, str] | None) -> list[bool] | None:
    flags: Any = None
    if _IS_DELETED in table.column_names and pa.types.is_boolean(table.column(_IS_DELETED).type):
        flags = pc.fill_null(table.column(_IS_DELETED), False)
    if _OPERATION in table.column_names and pa.types.is_string(table.column(_OPERATION).type):
        op = pc.fill_null(pc.equal(table.column(_OPERATION), "D"), False)
        flags = op if flags is None else pc.or_(flags, op)
    if delete_marker is not None and delete_marker[0] in table.column_names:
        marked = pc.fill_null(pc.equal(_as_text(table.column(delete_marker[0])), delete_marker[1]), False)
        flags = marked if flags is None else pc.or_(flags, marked)
    return None if flags is None else flags.to_pylist()


def _is_natural(ordering: Any) -> bool:
    return ordering is None or (type(ordering) is int and ordering == 0)


def _newer_wins(old_ordering: Any, new_ordering: Any, new_is_delete_record: bool) -> bool:
    """Event-time ordering: whether a newer version replaces an older one."""
    if new_is_delete_record and _is_natural(new_ordering):
        return True
    if old_ordering is None:
        return True
    if new_ordering is None:
        return False
    try:
        return not old_ordering > new_ordering
    except TypeError:  # values of different kinds (Hudi: not the same class): the newer wins
        return True


def _fit(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """``arr`` as ``target``: struct fields matched by name (missing ones null, extra ones
    dropped, as Hudi's schema evolution reads older records), Variants between their
    extension type and its storage, everything else by Arrow's cast."""
    if arr.type == target:
        return arr
    if isinstance(arr.type, VariantExtensionType) and arr.type.storage_type == target:
        return arr.storage
    if isinstance(target, VariantExtensionType) and arr.type == target.storage_type:
        return pa.ExtensionArray.from_storage(target, arr)
    if pa.types.is_struct(arr.type) and pa.types.is_struct(target):
        flat = arr.flatten()
        names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
        children = [
            _fit(flat[names.index(f.name)], f.type) if f.name in names else pa.nulls(len(arr), f.type) for f in target
        ]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=arr.is_null())
    if pa.types.is_list(arr.type) and pa.types.is_list(target) and arr.type.value_type != target.value_type:
        values = _fit(arr.values, target.value_type)
        return pa.ListArray.from_arrays(arr.offsets, values, type=target, mask=arr.is_null())
    return pc.cast(arr, target)


def _conform(table: pa.Table, schema: pa.Schema, what: str) -> pa.Table:
    columns = []
    for f in schema:
        if f.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, f.type))
            continue
        col = table.column(f.name)
        try:
            col = pa.chunked_array([_fit(c, f.type) for c in col.chunks], f.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise HudiLogMergeError(f"{what}: column {f.name!r} of type {col.type} does not fit {f.type}: {e}") from None
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=schema)


def merge_file_slice(
    base: pa.Table | None,
    log_files: Sequence[LogFile],
    *,
    key_fields: str | Sequence[str],
    ordering_field: str | None,
    valid_instants: Collection[str],
    merge_mode: str = EVENT_TIME_ORDERING,
    timeline_start: str | None = None,
    as_of: str | None = None,
    schema: pa.Schema | None = None,
    delete_marker: tuple[str, str] | None = None,
    partial_update: bool = False,
) -> pa.Table:
    """The rows of a file slice: ``base`` (its base file's rows, or ``None`` for a slice of
    logs only) merged with the parsed ``log_files`` (``log_format.parse_log_file``); see the
    module docstring for the rules. ``partial_update``: null fields of the winning version
    take the losing version's values (Hudi's ``PartialUpdateAvroPayload`` with event-time
    ordering, ``OverwriteNonDefaultsWithLatestAvroPayload`` with commit-time ordering)."""
    mode = merge_mode.strip().upper()
    if mode not in (EVENT_TIME_ORDERING, COMMIT_TIME_ORDERING):
        raise HudiLogUnsupportedError(f"merge mode {merge_mode}")
    event_time = mode == EVENT_TIME_ORDERING and ordering_field is not None
    if base is not None:
        for name in [key_fields] if isinstance(key_fields, str) else key_fields:
            _column(base, name, "record key")

    blocks = valid_log_blocks(log_files, valid_instants, timeline_start, as_of)
    # per key: (is_delete, ordering value, rows into `combined`: the winner first, then (with
    # partial updates) the versions whose values fill the winner's nulls)
    state: dict[Any, _Version] = {}
    tables: list[pa.Table] = []
    offset = base.num_rows if base is not None else 0

    def put(key: Any, is_delete: bool, ordering: Any, row: int, delete_record: bool) -> None:
        if delete_record and _is_natural(ordering):
            ordering = None  # wins by arrival; a later record then wins over it
        new: _Version = (is_delete, ordering, () if delete_record else (row,))
        old = state.get(key)
        if old is None:
            state[key] = new
        else:
            wins = not event_time or _newer_wins(old[1], ordering, delete_record)
            state[key] = _combine(new, old) if wins else (_combine(old, new) if partial_update else old)

    def _combine(winner: _Version, loser: _Version) -> _Version:
        if not partial_update or winner[0] or loser[0]:
            return winner
        return (False, winner[1], winner[2] + loser[2])

    for block in blocks:
        if block.block_type == BlockType.DELETE:
            for rec in decode_delete_block(block):
                put(rec.record_key, True, rec.ordering_value, -1, True)
            continue
        table = decode_data_block(block)
        keys = record_keys(table, key_fields)
        orderings = (
            table.column(ordering_field).to_pylist()
            if event_time and ordering_field in table.column_names
            else [None] * table.num_rows
        )
        deleted = _deleted_flags(table, delete_marker) or [False] * table.num_rows
        for i, key in enumerate(keys):
            put(key, deleted[i], orderings[i], offset + i, False)
        tables.append(table)
        offset += table.num_rows

    if schema is None:
        schema = base.schema if base is not None else (tables[-1].schema if tables else None)
    if schema is None:
        return pa.table({})
    parts = [_conform(base, schema, "base file")] if base is not None else []
    parts += [_conform(t, schema, "log block") for t in tables]
    combined = pa.concat_tables(parts) if parts else schema.empty_table()

    seen: set[Any] = set()
    first = np.arange(base.num_rows if base is not None else 0, dtype=np.int64)
    tails: dict[int, tuple[int, ...]] = {}  # output position -> the rows filling its nulls
    if base is not None and state:
        base_ordering = ordering_field if event_time else None
        first, tails = _merge_base(base, state, seen, key_fields, base_ordering, partial_update)
    extra: list[int] = []
    for key, (is_delete, _, chain) in state.items():
        if key not in seen and not is_delete:
            if len(chain) > 1:
                tails[len(first) + len(extra)] = chain[1:]
            extra.append(chain[0])
    if extra:
        first = np.concatenate([first, np.array(extra, dtype=np.int64)])
    return _assemble(combined, first, tails)


_Version = tuple[bool, Any, tuple[int, ...]]


def _merge_base(
    base: pa.Table,
    state: dict[Any, _Version],
    seen: set[Any],
    key_fields: str | Sequence[str],
    ordering_field: str | None,
    partial_update: bool,
) -> tuple[np.ndarray, dict[int, tuple[int, ...]]]:
    """The base merged with the logs' final versions: the row (into base + log rows) of each
    output row and the rows filling its nulls (partial updates). Only base rows whose key
    the logs touch are looked at one by one."""
    first = np.arange(base.num_rows, dtype=np.int64)
    keys = _key_array(base, key_fields)
    hit = pc.is_in(keys, value_set=pa.array(list(state), pa.string()))
    touched = np.flatnonzero(hit.to_numpy(zero_copy_only=False))
    touched_keys = keys.take(pa.array(touched, pa.int64())).to_pylist()
    orderings = base.column(ordering_field).take(pa.array(touched, pa.int64())).to_pylist() if (
        ordering_field is not None and ordering_field in base.column_names
    ) else [None] * len(touched)
    tails: dict[int, tuple[int, ...]] = {}
    for i, key, base_ordering in zip(touched.tolist(), touched_keys, orderings):
        seen.add(key)
        is_delete, ordering, chain = state[key]
        if ordering_field is not None and not _newer_wins(base_ordering, ordering, not chain and is_delete):
            if partial_update and not is_delete:
                tails[i] = chain
            continue  # the base version stays
        if is_delete:
            first[i] = -1
            continue
        first[i] = chain[0]
        tail = chain[1:] + ((i,) if partial_update else ())
        if tail:
            tails[i] = tail
    kept = first >= 0
    if kept.all():
        return first, tails
    new_position = np.cumsum(kept) - 1
    return first[kept], {int(new_position[i]): t for i, t in tails.items()}


def _assemble(combined: pa.Table, first: np.ndarray, tails: dict[int, tuple[int, ...]]) -> pa.Table:
    """The output rows ``first`` (into ``combined``), with null fields filled from the rows
    of ``tails`` in order (partial updates)."""
    out = combined.take(pa.array(first, pa.int64()))
    if not tails:
        return out
    depth = max(len(t) for t in tails.values())
    levels = []
    for d in range(depth):
        idx: list[int | None] = [None] * len(first)
        for pos, tail in tails.items():
            if d < len(tail):
                idx[pos] = tail[d]
        levels.append(pa.array(idx, pa.int64()))
    columns = []
    for name, col in zip(out.column_names, out.columns):
        field_type = col.type
        storage = isinstance(field_type, pa.ExtensionType)
        parts = [col] + [combined.column(name).take(idx) for idx in levels]
        if storage:
            parts = [pa.chunked_array([c.storage for c in p.chunks], field_type.storage_type) for p in parts]
        try:
            merged = pc.coalesce(*parts)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as e:
            raise HudiLogUnsupportedError(f"partial updates of column {name!r} of type {field_type}: {e}") from None
        if storage:
            merged = pa.chunked_array([pa.ExtensionArray.from_storage(field_type, c) for c in merged.chunks], field_type)
        columns.append(merged)
    return pa.Table.from_arrays(columns, schema=out.schema)
