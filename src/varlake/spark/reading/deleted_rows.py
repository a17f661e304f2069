"""The per-row deletion test of Spark reads of files with deletion vectors, as Spark SQL.

Rows a deletion vector deletes must never reach an expression of the query: under ANSI a
cast in a filter (``v:a::int = 1``, ``CAST(s AS INT) = 1``) would raise on a deleted row.
An anti-join does not do that: Spark pushes the query's filter below the join, onto the
scan. So the reader puts the deletion test in a ``Filter`` right above the scan: Spark's
``CombineFilters`` merges the query's filters (pushed down to it) *after* it, as
``And(keep, query)``, and ``And`` evaluates its right side only where the left is true,
while the query's comparisons still reach the Parquet scan (``PushedFilters``) to skip
row groups by statistics.

``keep_sql`` builds that test from a row's ``_metadata`` as one lookup in one bitset
(an ``array<bigint>`` literal parsed from JSON once per query plan): a row is kept where
``bit(words[W], row & 63) = 0``. With every file's row count known (``records``, from
``numRecords``) the expression has a constant size (``_hashed_keep``): the file is found by
a perfect hash of Spark's ``xxhash64`` of its path, checked against the stored hash (a
row of any other file raises, never a deleted row returned), and ``W`` is the file's word
offset plus ``row >> 6``. Otherwise (``_searched_keep``) ``W`` is picked per file by a
binary search on the file size, the file checked by its size or, among files of one
size, by its name:

* a file with no deleted rows reads word 0 (all zero: every row kept);
* a *dense* file (its deleted rows span few words) reads its own words,
  ``offset + (row >> 6)``, word 0 outside the span;
* a *sparse* file reads word 1 (all ones: deleted) where ``row IN (...)`` (a hash set),
  else word 0.

Why a constant size matters: Spark compiles a query stage into one Java method, and the
JVM does not JIT-compile a method above 8,000 bytes of bytecode. A tree with one test
per file crossed that at some tens of files, and each row then cost ~1.2 us of CPU
(50 files, 5M rows: 6 s for a ``count``; the hashed form takes 0.37 s).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from varlake.errors import TableError
from varlake.semantics.types import backquote
from varlake.spark.types import holds_variant
from varlake.spark.uris import spark_file_name, table_location, table_path
from varlake.spark.reading.planner import TablePlan
from varlake.table import Table

__all__ = [
    "DeletedRows",
    "IN_LIST_MAX",
    "deleted_rows_by_name",
    "file_size",
    "keep_sql",
    "spark_xxhash64",
    "variants_masked",
    "without_deleted_rows",
    "word_index_sql",
]

#: Up to this many deleted rows a file may be tested by an ``IN`` set instead of bitset words.
IN_LIST_MAX = 64
#: A file's deleted rows are tested by bitset words when they span at most this many words
#: per deleted row (or ``_DENSE_WORDS`` words in all); sparser ones by an ``IN`` set.
_WORDS_PER_ROW = 64
_DENSE_WORDS = 16384
_ZERO, _ONES = 0, 1  # the all-zero and all-one words at the start of the bitset


@dataclass(frozen=True)
class DeletedRows:
    """One data file's deleted row indexes (sorted), its name as ``_metadata.file_path``
    spells it and its size in bytes (``_metadata.file_size``)."""

    name: str
    size: int
    rows: np.ndarray
    records: int | None = None  # rows in the file (numRecords), deleted ones included


def _string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _words(rows: np.ndarray) -> tuple[int, np.ndarray]:
    """``(first word, words)`` of the bitset holding ``rows`` (sorted), from the first
    deleted row's word to the last's."""
    rows = rows.astype(np.uint64)
    at = (rows >> np.uint64(6)).astype(np.int64)
    first = int(at[0])
    words = np.zeros(int(at[-1]) - first + 1, dtype=np.uint64)
    np.bitwise_or.at(words, at - first, np.left_shift(np.uint64(1), rows & np.uint64(63)))
    return first, words


def word_index_sql(rows: np.ndarray, row: str, words: list[np.ndarray], offset: int) -> str:
    """SQL of the bitset word a row index ``row`` of a file with deleted ``rows`` (sorted)
    is tested in; a dense file's words are appended to ``words`` (the bitset after its
    first ``offset`` words)."""
    if len(rows) == 0:
        return str(_ZERO)
    first, own = _words(rows)
    if len(rows) <= IN_LIST_MAX and len(own) > len(rows) or len(own) > max(_DENSE_WORDS, _WORDS_PER_ROW * len(rows)):
        return f"IF({row} IN ({', '.join(str(int(r)) for r in rows)}), {_ONES}, {_ZERO})"
    words.append(own)
    last = int(rows[-1])
    return f"IF({row} < {first * 64} OR {row} > {last}, {_ZERO}, {offset - first} + shiftright({row}, 6))"


def keep_sql(files: Sequence[DeletedRows], row: str, file: str, size: str, guard: str) -> str:
    """SQL that is true for a row of one of ``files`` that its deletion vector keeps and
    false for one it deletes; a row of any other file raises ``guard`` (a message).

    With every file's row count known (``records``) it is ``_hashed_keep``, otherwise the
    binary search of ``_searched_keep``."""
    if files and all(f.records is not None for f in files):
        hashed = _hashed_keep(files, row, file, guard)
        if hashed is not None:
            return hashed
    return _searched_keep(files, row, file, size, guard)


def _bitset_sql(words: np.ndarray) -> str:
    text = "[" + ",".join(map(str, words.view(np.int64).tolist())) + "]"
    return f"from_json('{text}', 'array<bigint>')"


def _searched_keep(files: Sequence[DeletedRows], row: str, file: str, size: str, guard: str) -> str:
    fail = f"raise_error({_string(guard)})"
    if not files:
        return fail
    by_size: dict[int, list[DeletedRows]] = {}
    for f in files:
        by_size.setdefault(f.size, []).append(f)
    sizes = sorted(by_size)
    words: list[np.ndarray] = [np.array([0, np.iinfo(np.uint64).max], dtype=np.uint64)]
    index: dict[str, str] = {}
    total = len(words[0])
    for f in files:
        held = len(words)
        index[f.name] = word_index_sql(np.asarray(f.rows), row, words, total)
        total += sum(len(w) for w in words[held:])

    def leaf(members: list[DeletedRows]) -> str:
        if len(members) == 1:  # the only file of its size: told by its size
            return f"IF({size} = {members[0].size}, {index[members[0].name]}, {fail})"
        branches = " ".join(f"WHEN {file} = {_string(m.name)} THEN {index[m.name]}" for m in members)
        return f"CASE {branches} ELSE {fail} END"

    def search(lo: int, hi: int) -> str:
        if hi - lo == 1:
            return leaf(by_size[sizes[lo]])
        mid = (lo + hi) // 2
        return f"IF({size} < {sizes[mid]}, {search(lo, mid)}, {search(mid, hi)})"

    word = f"get({_bitset_sql(np.concatenate(words))}, CAST({search(0, len(sizes))} AS INT))"
    return f"(shiftright({word}, CAST({row} & 63 AS INT)) & 1) = 0"


#: The most bitset words (8 bytes each, one bit per row of the files with deleted rows)
#: ``_hashed_keep`` puts in a query plan; beyond it the binary search is used.
HASHED_WORDS_MAX = 1 << 20
_NO_WORDS = -(1 << 30)  # a file without deleted rows: every word index negative (NULL: kept)


def _hashed_keep(files: Sequence[DeletedRows], row: str, file: str, guard: str) -> str | None:
    """The deletion test as a constant-size expression: the file is found by a perfect hash
    of Spark's ``xxhash64`` of its path (slot ``pmod(h, P)``, checked against the stored
    hash, so a row of another file raises), and its rows' bits sit in one bitset from
    the file's word offset on, one bit per row of the file. None when the bitset would be
    too large or two paths hash alike."""
    records = [int(f.records or 0) for f in files]
    dense = sum((n + 63) // 64 for f, n in zip(files, records) if len(f.rows))
    if dense > HASHED_WORDS_MAX:
        return None
    hashes = [spark_xxhash64(f.name) for f in files]
    if len(set(hashes)) != len(hashes):
        return None
    placed = _perfect_hash(hashes)
    if placed is None:
        return None
    slots, buckets, displacement = placed
    slot_hash: list[int] = [0] * slots
    slot_offset: list[int] = [_NO_WORDS] * slots
    words: list[np.ndarray] = []
    total = 0
    for f, count, h in zip(files, records, hashes):
        k = _slot(h, buckets, displacement, slots)
        slot_hash[k] = h
        rows = np.asarray(f.rows).astype(np.uint64)
        if len(rows) == 0:
            continue
        if int(rows[-1]) >= count:
            return None  # the caller's check names this; the search reads what it can
        own = np.zeros((count + 63) // 64, dtype=np.uint64)
        np.bitwise_or.at(own, (rows >> np.uint64(6)).astype(np.int64), np.left_shift(np.uint64(1), rows & np.uint64(63)))
        slot_offset[k] = total
        total += len(own)
        words.append(own)
    bits = _bitset_sql(np.concatenate(words)) if words else "array(CAST(0 AS BIGINT))"
    h = f"xxhash64({file})"
    d = "array(" + ", ".join(f"CAST({x} AS BIGINT)" for x in displacement) + ")"
    k = f"CAST(pmod({h} ^ get({d}, CAST(pmod({h}, {buckets}) AS INT)), {slots}) AS INT)"
    offsets = "array(" + ", ".join(f"CAST({o} AS BIGINT)" if o == _NO_WORDS else str(o) for o in slot_offset) + ")"
    hashes_sql = "array(" + ", ".join(f"CAST({x} AS BIGINT)" for x in slot_hash) + ")"
    word = f"coalesce(get({bits}, CAST(get({offsets}, {k}) + shiftright({row}, 6) AS INT)), 0)"
    test = f"(shiftright({word}, CAST({row} & 63 AS INT)) & 1) = 0"
    return f"CASE WHEN get({hashes_sql}, {k}) = {h} THEN {test} ELSE raise_error({_string(guard)}) END"


def _signed(x: int) -> int:
    x &= _M64
    return x - (1 << 64) if x >= 1 << 63 else x


def _slot(h: int, buckets: int, displacement: Sequence[int], slots: int) -> int:
    """Spark's ``pmod(h ^ displacement[pmod(h, buckets)], slots)``."""
    return _signed(h ^ displacement[h % buckets]) % slots


def _perfect_hash(hashes: Sequence[int]) -> tuple[int, int, list[int]] | None:
    """``(slots, buckets, displacement)`` placing each hash in its own slot (hash and
    displace: the hashes of a bucket ``pmod(h, buckets)`` are XORed with the bucket's
    displacement, the largest buckets placed first), or None if none found."""
    n = len(hashes)
    slots, buckets = 2 * n + 1, max(1, (n + 1) // 2)
    members: dict[int, list[int]] = {}
    for h in hashes:
        members.setdefault(h % buckets, []).append(h)
    displacement = [0] * buckets
    taken: set[int] = set()
    for b, group in sorted(members.items(), key=lambda kv: -len(kv[1])):
        for attempt in range(1, 4096):
            d = _signed(attempt * _P1)
            places = {_signed(h ^ d) % slots for h in group}
            if len(places) == len(group) and not places & taken:
                displacement[b] = d
                taken |= places
                break
        else:
            return None
    return slots, buckets, displacement


_M64 = (1 << 64) - 1
_P1, _P2, _P3, _P4, _P5 = (
    0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5,
)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _round(acc: int, lane: int) -> int:
    return (_rotl((acc + lane * _P2) & _M64, 31) * _P1) & _M64


def spark_xxhash64(text: str, seed: int = 42) -> int:
    """Spark's ``xxhash64(text)`` (XXH64 of the UTF-8 bytes, seed 42) as a signed long."""
    data = text.encode("utf-8")
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + _P1 + _P2) & _M64, (seed + _P2) & _M64, seed & _M64, (seed - _P1) & _M64]
        while i + 32 <= n:
            for j in range(4):
                v[j] = _round(v[j], int.from_bytes(data[i + 8 * j : i + 8 * j + 8], "little"))
            i += 32
        acc = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M64
        for lane in v:
            acc = (((acc ^ _round(0, lane)) * _P1) + _P4) & _M64
    else:
        acc = (seed + _P5) & _M64
    acc = (acc + n) & _M64
    while i + 8 <= n:
        acc = ((_rotl(acc ^ _round(0, int.from_bytes(data[i : i + 8], "little")), 27) * _P1) + _P4) & _M64
        i += 8
    if i + 4 <= n:
        acc = ((_rotl(acc ^ (int.from_bytes(data[i : i + 4], "little") * _P1 & _M64), 23) * _P2) + _P3) & _M64
        i += 4
    while i < n:
        acc = (_rotl(acc ^ (data[i] * _P5 & _M64), 11) * _P1) & _M64
        i += 1
    acc ^= acc >> 33
    acc = (acc * _P2) & _M64
    acc ^= acc >> 29
    acc = (acc * _P3) & _M64
    acc ^= acc >> 32
    return acc - (1 << 64) if acc >= 1 << 63 else acc


# --- Spark reads of files with deletion vectors ------------------------------------------------------


_DV_FILE, _DV_ROW, _DV_SIZE, _DV_KEEP = "__vl_dv_file", "__vl_dv_row", "__vl_dv_size", "__vl_dv_keep"


def without_deleted_rows(relation: Any, plan: TablePlan, tasks: Sequence[Any], read_schema: Any) -> Any:
    """The files of ``tasks`` (each with a deletion vector), read by ``relation`` (one
    Parquet relation reading ``read_schema``), without their deleted rows, which no
    expression of the query ever sees.

    A ``Filter`` right above the scan keeps the rows their deletion vectors keep
    (``deleted_rows.keep_sql`` of each row's ``_metadata`` ``file_path``, ``file_size``
    and ``row_index`` -- its index in the file, which Spark's Parquet scan keeps right
    while it prunes columns and row groups). Spark merges the query's filters after it
    (``And(keep, ...)``, evaluated left first) while still pushing their comparisons to
    the scan to skip row groups. Columns holding Variants are also read as ``IF(keep, v,
    NULL)``: otherwise Spark would evaluate a ``variant_get(v, '$.a', 'int')`` of the
    query inside the scan (``pushVariantIntoScan``), before any filter.

    The file names are those the relation's own file index lists (``inputFiles``, as
    ``spark_file_name`` spells them); should a row come from a file under another name,
    the read raises rather than return rows a deletion vector deletes."""
    from varlake.delta.deletion_vectors import keep_mask

    files = []
    for found, task in deleted_rows_by_name(relation, plan.table, tasks):
        if task.physical_records is not None:  # numRecords is required with a DV: check it bounds the DV
            keep_mask(found.rows, task.physical_records, f"{plan.table.path}: data file {task.relative_path!r} (rows counted by its numRecords)")
        files.append(found)
    guard = f"{plan.table.path}: a file with a deletion vector is named otherwise than varlake expects"
    keep = keep_sql(files, _DV_ROW, _DV_FILE, _DV_SIZE, guard)
    names = [backquote(f.name) for f in read_schema.fields]
    masked = variants_masked(read_schema.fields, names, _DV_KEEP)
    return (
        relation.selectExpr(
            *names, f"_metadata.file_path AS {_DV_FILE}", f"_metadata.row_index AS {_DV_ROW}", f"_metadata.file_size AS {_DV_SIZE}"
        )
        .selectExpr(*names, f"{keep} AS {_DV_KEEP}")
        .where(_DV_KEEP)
        .selectExpr(*masked)
    )


def file_size(table: Table, task: Any) -> int:
    """A data file's size as its storage lists it (what Spark's ``_metadata.file_size`` says)."""
    try:
        return int(table.storage.info(f"{table.path}/{task.relative_path}").size)
    except Exception:  # noqa: BLE001 -- the add's size is the file's size in a sound table
        return int(task.add.size)


def deleted_rows_by_name(relation: Any, table: Table, tasks: Sequence[Any]) -> list[tuple[DeletedRows, Any]]:
    """Each task's deleted rows (empty without a deletion vector) under the name Spark's
    ``_metadata.file_path`` gives its file in ``relation`` (its own file index,
    ``inputFiles``); a file listed under no name varlake recognises raises."""
    spelled = {table_path(uri): spark_file_name(uri) for uri in relation.inputFiles()}
    out = []
    for task in tasks:
        location = table.open_file(task.relative_path)
        name = spelled.get(table_location(location))
        if name is None:
            raise TableError(
                f"{table.path}: data file {task.relative_path!r}: Spark lists {location!r} under no name varlake recognises"
            )
        out.append((DeletedRows(name, file_size(table, task), table.deleted_rows(task), task.physical_records), task))
    return out


def variants_masked(fields: Sequence[Any], names: Sequence[str], keep: str) -> list[str]:
    """Select expressions reading each column, those holding Variants as ``IF(keep, v, NULL)``
    (so Spark never extracts from a deleted row inside the scan)."""
    return [f"IF({keep}, {n}, NULL) AS {n}" if holds_variant(f.dataType) else n for f, n in zip(fields, names)]
