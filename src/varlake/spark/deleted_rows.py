"""The per-row deletion test of Spark reads of files with deletion vectors, as Spark SQL.

Rows a deletion vector deletes must never reach an expression of the query: under ANSI a
cast in a filter (``v:a::int = 1``, ``CAST(s AS INT) = 1``) would raise on a deleted row.
An anti-join does not do that: Spark pushes the query's filter below the join, onto the
scan. So the reader puts the deletion test in a ``Filter`` right above the scan: Spark's
``CombineFilters`` merges the query's filters (pushed down to it) *after* it, as
``And(keep, query)``, and ``And`` evaluates its right side only where the left is true,
while the query's comparisons still reach the Parquet scan (``PushedFilters``) to skip
row groups by statistics.

``keep_sql`` builds that test from a row's ``_metadata``: a binary search on the file size
(long comparisons) picks the file, its name is checked (a row of a file named otherwise
raises: never a deleted row returned), then its row index is looked up -- in an ``IN``
list (a hash set) for a few rows, else in a bitset (an ``array<bigint>`` literal parsed
from JSON once per query plan, one word per 64 rows between the first and the last
deleted row). Every step is constant time per row but the search (``log2`` of the files).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["DeletedRows", "IN_LIST_MAX", "keep_sql", "row_test"]

#: Up to this many deleted rows a file's test is an ``IN`` list, above it a bitset.
IN_LIST_MAX = 64


@dataclass(frozen=True)
class DeletedRows:
    """One data file's deleted row indexes (sorted), its name as ``_metadata.file_path``
    spells it and its size in bytes (``_metadata.file_size``)."""

    name: str
    size: int
    rows: np.ndarray


def _string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def row_test(rows: np.ndarray, row: str) -> str:
    """SQL that is true where the row index ``row`` is not one of ``rows`` (sorted)."""
    if len(rows) == 0:
        return "true"
    if len(rows) <= IN_LIST_MAX:
        return f"NOT ({row} IN ({', '.join(str(int(r)) for r in rows)}))"
    rows = rows.astype(np.uint64)
    words_at = (rows >> np.uint64(6)).astype(np.int64)
    first, last = int(words_at[0]), int(rows[-1])
    words = np.zeros(int(words_at[-1]) - first + 1, dtype=np.uint64)
    np.bitwise_or.at(words, words_at - first, np.left_shift(np.uint64(1), rows & np.uint64(63)))
    text = "[" + ",".join(map(str, words.view(np.int64).tolist())) + "]"
    word = f"get(from_json('{text}', 'array<bigint>'), CAST(shiftright({row}, 6) - {first} AS INT))"
    bit = f"(shiftright({word}, CAST({row} & 63 AS INT)) & 1) = 0"
    return f"({row} < {first * 64} OR {row} > {last} OR {bit})"  # OR stops before the cast when out of range


def keep_sql(files: Sequence[DeletedRows], row: str, file: str, size: str, guard: str) -> str:
    """SQL that is true for a row of one of ``files`` that its deletion vector keeps and
    false for one it deletes; a row of any other file raises ``guard`` (a message)."""
    by_size: dict[int, list[DeletedRows]] = {}
    for f in files:
        by_size.setdefault(f.size, []).append(f)
    sizes = sorted(by_size)
    fail = f"raise_error({_string(guard)})"

    def leaf(members: list[DeletedRows]) -> str:
        branches = " ".join(f"WHEN {file} = {_string(m.name)} THEN {row_test(m.rows, row)}" for m in members)
        return f"CASE {branches} ELSE {fail} END"

    def search(lo: int, hi: int) -> str:
        if hi - lo == 1:
            return leaf(by_size[sizes[lo]])
        mid = (lo + hi) // 2
        return f"IF({size} < {sizes[mid]}, {search(lo, mid)}, {search(mid, hi)})"

    return search(0, len(sizes)) if sizes else fail
