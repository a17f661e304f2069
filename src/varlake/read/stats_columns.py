"""Statistics of many files decoded column-wise with Arrow: one column's integral min and
max over every ``add`` of a snapshot, as numpy arrays.

``read.file_index`` asks for them when a filter first compares an integral column with a
literal. Decoding each file's stats JSON in Python (``delta.stats.file_stats``) costs tens
of microseconds a file; here Arrow's JSON reader parses the stats texts of all files at once,
reading only ``minValues`` and ``maxValues`` of the one column (``explicit_schema``, the
other fields ignored).

The answer is the one ``file_stats`` gives, file by file, or there is none (``None``: the
caller decodes in Python). Arrow's parser refuses every text Python's ``json`` refuses that
matters here, and more:

* a bound that is not a JSON integer in the long range (``5.0``, ``1e3``, ``true``, ``"5"``,
  out of range), a duplicate key, a lone surrogate escape, a stats text that is not one JSON
  object (two objects, a number, garbage): Arrow raises, and the whole column is decoded in
  Python, where such a value gives no bound (or, ``5.0``, its integral value);
* each text is wrapped as ``{"v": <text>}`` on a line of its own, so that a text holding
  ``}{`` cannot make two rows (it makes a row count that differs, refused) and a ``null``
  is a null row;
* texts Arrow could read but Python would refuse or read differently are left to Python
  one by one (``odd``): those holding a line break (a line of their own would not hold
  them) and those with more than ``json_fields.MAX_JSON_DEPTH`` opening brackets (which
  ``json_fields.load_json`` may refuse as nested too deeply).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from varlake.delta.json_fields import MAX_JSON_DEPTH

__all__ = ["ColumnBounds", "integral_bounds"]

ColumnBounds = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""(lo, hi, has_lo, has_hi, odd): int64 bounds, whether each is known, and the files whose
stats Arrow did not decode (their bounds are left for Python)."""


def _nested(key: Sequence[str], leaf: pa.DataType) -> pa.DataType:
    out = leaf
    for name in reversed(key[1:]):
        out = pa.struct([pa.field(name, out)])
    return out


def _field(array: pa.Array, key: Sequence[str]) -> pa.Array:
    for name in key:
        array = pc.struct_field(array, name)
    return array


def integral_bounds(stats: pa.ChunkedArray | pa.Array, key: Sequence[str]) -> ColumnBounds | None:
    """The min and max of the stats key ``key`` (a column path as the log names it) in every
    stats text of ``stats`` (one per file; null: no stats), as ``delta.stats.file_stats`` reads
    an integral column's bounds; ``None`` when Arrow cannot decode the column as a whole."""
    if isinstance(stats, pa.ChunkedArray):
        stats = stats.combine_chunks() if stats.num_chunks != 1 else stats.chunk(0)
    n = len(stats)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty.astype(bool), empty.astype(bool), empty.astype(bool)
    stats = stats.cast(pa.large_string())
    odd_mask = pc.or_(pc.match_substring(stats, "\n"), pc.match_substring(stats, "\r"))
    long = pc.fill_null(pc.greater(pc.binary_length(stats), MAX_JSON_DEPTH), False)
    if pc.any(long).as_py():  # only a text that long can hold that many brackets
        brackets = pc.add(pc.count_substring(stats, "{"), pc.count_substring(stats, "["))
        odd_mask = pc.or_(odd_mask, pc.greater(brackets, MAX_JSON_DEPTH))
    odd_mask = pc.fill_null(odd_mask, False)
    text = pc.fill_null(pc.if_else(odd_mask, pa.scalar(None, pa.large_string()), stats), "null")
    big = pa.large_string()
    lines = pc.binary_join_element_wise(
        pa.scalar('{"v":', big), text, pa.scalar("}\n", big), pa.scalar("", big)
    )
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset : lines.offset + n + 1]
    data = lines.buffers()[2][int(offsets[0]) : int(offsets[-1])]
    leaf = _nested(key, pa.int64())
    bound = pa.struct([pa.field(key[0], leaf)])
    schema = pa.schema([pa.field("v", pa.struct([pa.field("minValues", bound), pa.field("maxValues", bound)]))])
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        block = pj.ReadOptions(block_size=max(1 << 20, min(len(data) + 1, 64 << 20)))
        table = pj.read_json(pa.BufferReader(data), parse_options=options, read_options=block)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != n:
        return None  # a text made more than one row: not one JSON object
    v = table.column("v").combine_chunks()
    lo = _field(pc.struct_field(v, "minValues"), key)
    hi = _field(pc.struct_field(v, "maxValues"), key)
    odd = odd_mask.to_numpy(zero_copy_only=False)
    return (
        np.array(pc.fill_null(lo, 0), dtype=np.int64),
        np.array(pc.fill_null(hi, 0), dtype=np.int64),
        pc.is_valid(lo).to_numpy(zero_copy_only=False) & ~odd,
        pc.is_valid(hi).to_numpy(zero_copy_only=False) & ~odd,
        odd,
    )
