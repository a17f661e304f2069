"""String leaves of a data file that hold only ISO dates, proven from their values.

Spark's date and timestamp casts of a text matching ``semantics.datetime_text.ISO_DATE_TEXT``
never fail, so a planner that knows every value of a string leaf matches it reads the
leaf's casts to ``ISO_DATE_TARGETS`` without a failure test. The writer records the fact
(``io.layout_tag.DATES_TAG``); this module establishes it, with Arrow kernels:

* candidates come from the footer: a string ``typed_value`` column whose min and max are
  ISO dates in every row group holding a value (a cheap filter, never the proof);
* each candidate's values are then read (``read``: the columns, one row group at a time,
  as pyarrow reads them) and every non-null value is matched against the pattern; a
  candidate is dropped at its first other value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from varlake.errors import StorageError
from varlake.io.layout_facts import row_group_bounds
from varlake.semantics.datetime_text import ISO_DATE_TEXT, is_iso_date_text

__all__ = ["ReadColumns", "date_leaves", "leaf_values"]

#: reads the named Parquet leaf columns (dotted paths) of the file as pyarrow tables, one per
#: row group (each read when the previous one has been checked)
ReadColumns = Callable[[list[str]], Iterable[pa.Table]]


def _candidate(metadata: pq.FileMetaData, index: int) -> bool:
    bounds = row_group_bounds(metadata, index)
    return bounds is not None and all(isinstance(b, str) and is_iso_date_text(b) for pair in bounds for b in pair)


def leaf_values(table: pa.Table, column: str) -> pa.ChunkedArray:
    """The values of the Parquet leaf column ``column`` (a dotted path, lists in the standard
    ``list.element`` form) in ``table``, flattened through structs and lists (a value under a
    NULL struct or list is not one)."""
    head, *rest = column.split(".")
    found = table.column(head)
    chunks, dtype = list(found.chunks), found.type
    i = 0
    while i < len(rest):
        if pa.types.is_struct(dtype) and dtype.get_field_index(rest[i]) >= 0:
            index = dtype.get_field_index(rest[i])
            chunks, dtype = [c.flatten()[index] for c in chunks], dtype.field(index).type
            i += 1
        elif (pa.types.is_list(dtype) or pa.types.is_large_list(dtype)) and rest[i : i + 2] == ["list", "element"]:
            chunks, dtype = [c.flatten() for c in chunks], dtype.value_type
            i += 2
        else:
            raise ValueError(f"{column}: no {rest[i]!r} in {dtype}")
    return pa.chunked_array(chunks, dtype)


def date_leaves(metadata: pq.FileMetaData, columns: Sequence[str], read: ReadColumns) -> frozenset[str]:
    """Those of the string leaf ``columns`` (dotted Parquet paths) every non-null value of
    which matches ``ISO_DATE_TEXT``."""
    paths = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
    candidates = [c for c in columns if c in paths and _candidate(metadata, paths[c])]
    if not candidates:
        return frozenset()
    proven = set(candidates)
    try:
        for table in read(candidates):
            for column in sorted(proven):
                if not _only_dates(table, column):
                    proven.discard(column)
            if not proven:
                break
    except (OSError, StorageError, pa.ArrowException, ValueError):
        return frozenset()  # the fact is optional: without it planners keep the failure test
    return frozenset(proven)


def _only_dates(table: pa.Table, column: str) -> bool:
    try:
        values = leaf_values(table, column)
    except (KeyError, ValueError, pa.ArrowException):
        return False
    if not pa.types.is_string(values.type) and not pa.types.is_large_string(values.type):
        return False
    matched = pc.match_substring_regex(values, ISO_DATE_TEXT)
    return matched.null_count == len(matched) or bool(pc.all(matched).as_py())
