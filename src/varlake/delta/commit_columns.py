"""A commit file with many ``add`` lines, its adds decoded column-wise by Arrow.

``parse_commit_lines`` decodes each line in Python: tens of microseconds a line, most of
the time it takes to open a table whose log holds a commit of thousands of files (a bulk
load). ``columnar_commit`` gives the same actions, in the same order, with the plain
``add`` lines decoded at once by Arrow's JSON reader into ``file_table.ADD_SCHEMA`` rows
(``ColumnarCommit``); ``replay`` takes either form.

A line is decoded by Arrow only when Arrow's answer is the one ``parse_line`` gives;
every other line goes through ``parse_line`` itself, so its action and its errors are
exactly as before:

* a candidate line begins ``{"add"`` and has at most ``json_fields.MAX_JSON_DEPTH`` opening
  brackets (a deeper one ``parse_line`` refuses; Arrow would not);
* Arrow reads the fields with their ``ADD_SCHEMA`` types (``explicit_schema``): it refuses a
  field of another JSON type (``"size": 1.5``, ``"path": 5``, ``"stats": {...}``), an
  integer out of the long range, a duplicate key, a lone surrogate escape, a second
  object on the line (one row per line is checked). Any refusal: the whole file is
  decoded by ``parse_commit_lines`` (which raises the error, if it is one);
* a row whose ``partitionValues`` or ``tags`` have a null or absent key (a JSON object's
  keys vary by line; Arrow makes one struct of them all, so absent and null look alike),
  a value that is not a string, a ``deletionVector``, a null ``path`` or ``size``, or a
  null ``add``: that line goes through ``parse_line``; a top-level key besides ``add``
  anywhere: the whole file does;
* defaults are filled as ``AddFile.from_dict`` and ``adds_to_table`` fill them
  (``modificationTime`` 0, ``dataChange`` true, ``partitionValues`` empty).

The paths of the Arrow rows are checked like the others (``relative_data_path``, with the
file and line in the error), the plain ones column-wise (``paths.plain_paths``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from varlake.delta.actions import Action, AddFile, RemoveFile
from varlake.delta.commit_file import parse_line
from varlake.delta.file_table import ADD_SCHEMA, STR_MAP
from varlake.delta.json_fields import MAX_JSON_DEPTH
from varlake.delta.paths import plain_paths, relative_data_path

__all__ = ["ColumnarCommit", "MIN_ROWS", "columnar_commit"]

#: fewer candidate lines than this: the file is decoded line by line (Arrow's fixed cost)
MIN_ROWS = 64
_PREFIX = '{"add"'
_TYPED = [f for f in ADD_SCHEMA if f.name not in ("partitionValues", "tags", "deletionVector")]
_SCHEMA = pa.schema([pa.field("add", pa.struct(_TYPED))])


@dataclass(frozen=True)
class ColumnarCommit:
    """The actions of one commit in file order: an ``Action``, or a ``range`` of ``add``s in
    ``adds`` (``ADD_SCHEMA`` rows, no deletion vector; row ``i``'s key is ``paths[i]``)."""

    items: list[Action | range]
    adds: pa.Table
    paths: list[str]


def _string_map(column: pa.Array, n: int) -> tuple[pa.Array, np.ndarray] | None:
    """``column`` (a struct a JSON object was inferred as, or absent) as ``STR_MAP`` rows, and
    the rows Arrow cannot tell (a null or absent key); ``None`` if a value is not a string."""
    if column is None:
        return pa.nulls(n, STR_MAP), np.zeros(n, dtype=bool)
    if not pa.types.is_struct(column.type):
        return None if column.null_count < n else (pa.nulls(n, STR_MAP), np.zeros(n, dtype=bool))
    names = [column.type.field(i).name for i in range(column.type.num_fields)]
    children = [pc.struct_field(column, [i]) for i in range(len(names))]
    if any(not (pa.types.is_string(c.type) or pa.types.is_null(c.type)) for c in children):
        return None
    python = np.zeros(n, dtype=bool)
    for child in children:
        python |= np.asarray(child.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    present = np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    python &= present  # a null object is a null map
    k = len(names)
    counts = np.where(present & ~python, k, 0).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    take = np.flatnonzero(present & ~python)
    keys = pa.array(np.tile(np.array(names, dtype=object), len(take)), pa.string()) if k else pa.array([], pa.string())
    if k:
        stacked = np.stack([np.asarray(c.cast(pa.string()).to_numpy(zero_copy_only=False), dtype=object) for c in children], axis=1)
        items = pa.array(stacked[take].reshape(-1), pa.string())
    else:
        items = pa.array([], pa.string())
    mask = pa.array(~present)
    maps = pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), keys, items, mask=mask)
    return maps.cast(STR_MAP), python


def columnar_commit(lines: list[str], path: str, root_location: str) -> ColumnarCommit | None:
    """The commit split into ``lines`` with its plain ``add`` lines decoded by Arrow
    and every file path checked; ``None`` when it has too few such lines or Arrow refuses one
    (then decode it line by line)."""
    candidates = [i for i, line in enumerate(lines) if line.startswith(_PREFIX)]
    if len(candidates) < MIN_ROWS:
        return None
    # a line with more opening brackets than any text Python decodes goes to ``parse_line``
    # (which refuses it); only a line that long can have that many
    deep = {j for j, c in enumerate(candidates) if len(lines[c]) > MAX_JSON_DEPTH and _brackets(lines[c]) > MAX_JSON_DEPTH}
    if deep:
        candidates = [c for j, c in enumerate(candidates) if j not in deep]
    n = len(candidates)
    data = "\n".join([lines[c] for c in candidates]).encode("utf-8")
    options = pj.ParseOptions(explicit_schema=_SCHEMA, unexpected_field_behavior="infer")
    try:
        table = pj.read_json(pa.BufferReader(data), parse_options=options, read_options=_read_options(len(data)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    if table.num_rows != n or table.column_names != ["add"]:
        return None  # a second object on a line, or another action key beside "add"
    add = table.column("add").combine_chunks()
    fields = {add.type.field(i).name: i for i in range(add.type.num_fields)}

    def field(name: str) -> pa.Array | None:
        return pc.struct_field(add, [fields[name]]) if name in fields else None

    values = _string_map(field("partitionValues"), n)
    tags = _string_map(field("tags"), n)
    if values is None or tags is None:
        return None
    python = values[1] | tags[1] | np.asarray(add.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    dv = field("deletionVector")
    if dv is not None:
        python |= np.asarray(dv.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    for name in ("path", "size"):
        python |= np.asarray(field(name).is_null().to_numpy(zero_copy_only=False), dtype=bool)  # type: ignore[union-attr]
    empty = pa.array([[]] * n, STR_MAP)
    columns = {
        "path": field("path"),
        "partitionValues": pc.if_else(values[0].is_null(), empty, values[0]),
        "size": field("size"),
        "modificationTime": pc.fill_null(field("modificationTime"), 0),
        "dataChange": pc.fill_null(field("dataChange"), True),
        "stats": field("stats"),
        "tags": tags[0],
        "deletionVector": pa.nulls(n, ADD_SCHEMA.field("deletionVector").type),
        "baseRowId": field("baseRowId"),
        "defaultRowCommitVersion": field("defaultRowCommitVersion"),
        "clusteringProvider": field("clusteringProvider"),
    }
    adds = pa.Table.from_arrays([columns[f.name] for f in ADD_SCHEMA], schema=ADD_SCHEMA)
    fast = ~python
    rows = np.full(len(lines), -1, dtype=np.int64)
    rows[np.asarray(candidates, dtype=np.int64)[fast]] = np.arange(int(fast.sum()))
    adds = adds.filter(pa.array(fast))
    paths = adds.column("path").to_pylist()
    items: list[Action | range] = []
    checks: list[tuple[int, Action]] = []
    others = np.flatnonzero(rows < 0).tolist()
    start = 0  # the first line not yet taken
    for at in others + [len(lines)]:
        if at > start:  # lines start..at-1 are Arrow rows, numbered consecutively
            items.append(range(int(rows[start]), int(rows[at - 1]) + 1))
        start = at + 1
        if at == len(lines) or not lines[at].strip():
            continue
        action = parse_line(lines[at], f"{path} line {at + 1}")
        if action is not None:
            items.append(action)
            checks.append((at + 1, action))
    plain = plain_paths(adds.column("path"))
    linenos = np.flatnonzero(rows >= 0) + 1
    checked = iter(checks)
    pending = next(checked, None)
    # paths checked in line order, as ``read_commit`` does
    for row in np.flatnonzero(~plain).tolist() + [len(paths)]:
        line_of_row = int(linenos[row]) if row < len(paths) else len(lines) + 1
        while pending is not None and pending[0] < line_of_row:
            _check(pending[1], f"{path} line {pending[0]}", root_location)
            pending = next(checked, None)
        if row < len(paths):
            relative_data_path(paths[row], root_location, f"{path} line {line_of_row}")
    return ColumnarCommit(items, adds, paths)


def _brackets(line: str) -> int:
    return line.count("{") + line.count("[")


def _read_options(size: int) -> pj.ReadOptions:
    """One block for the whole text (up to 64 MB): types are inferred once, not per block
    and then unified."""
    return pj.ReadOptions(block_size=max(1 << 20, min(size + 1, 64 << 20)))


def _check(action: Action, where: str, root_location: str) -> None:
    if isinstance(action, (AddFile, RemoveFile)):
        relative_data_path(action.path, root_location, where)
