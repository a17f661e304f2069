"""What planning decodes once per snapshot, and a vectorised pre-filter on integer bounds.

``plan_scan`` used to do Python work for every live file of every plan (check its path,
decode its statistics, fold its partition values, build a task) before looking at whether
the file could match. A ``FileIndex`` holds, per snapshot and table root (``file_index``):

* each file's checked relative path and parsed deletion vector, computed once when the
  index is built (so a bad path or a deletion vector the protocol does not allow still
  fails every plan, as before, in the same file order);
* its partition values (logical names) and the files grouped by them, so that a plan
  folds the filter once per group: a group whose residual is FALSE is skipped whole;
* its statistics (``FileStats`` with partition values), decoded when first needed;
* per integral column, the files' min and max as numpy arrays (``IntBounds``), built when
  a filter first compares that column with a literal.

``excluded`` is the pre-filter: a file whose bounds show that a top-level conjunct
``column op literal`` (an integral plain column; ``< <= > >= =``) holds for none of its
rows. Such a file is one the exact per-file check (``SkippingEvaluator``, then the
residual's cast proofs or its row-group guards) skips by statistics: ``plan_scan`` only
applies it to conjuncts that are guards of the residual, or to residuals without casts.
Files it does not exclude are checked one by one as before; it never keeps fewer files.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from varlake.delta import constants as C
from varlake.delta.actions import AddFile
from varlake.delta.column_mapping import ColumnMapping, column_mapping
from varlake.delta.deletion_vectors import DeletionVector
from varlake.delta.json_fields import LONG_MAX, LONG_MIN
from varlake.delta.paths import relative_data_path
from varlake.delta.snapshot import Snapshot
from varlake.delta.stats import file_stats
from varlake.errors import CorruptLogError
from varlake.read.file_columns import LazyAdds, partition_groups, relative_paths
from varlake.read.stats_columns import ColumnBounds, integral_bounds
from varlake.expr import And, Column, Comparison, FileStats, Literal, Predicate

ColumnPath = tuple[str, ...]
ABSENT = object()  # a partition value missing from an add (not NULL)
INTEGRAL = frozenset(("byte", "short", "integer", "long"))
BOUND_OPS = frozenset(("<", "<=", ">", ">=", "="))


#: ``IntBounds`` with no file's bounds set yet (``fill`` sets them as plans ask)
_EMPTY = np.zeros(0, dtype=np.int64)
_UNDECODED: ColumnBounds = (_EMPTY, _EMPTY, _EMPTY.astype(bool), _EMPTY.astype(bool), _EMPTY.astype(bool))


class IntBounds:
    """One integral column's min and max over the files of a snapshot (``has_*``: known)."""

    __slots__ = ("lo", "hi", "has_lo", "has_hi", "decoded")

    def __init__(self, values: Sequence[tuple[Any, Any]], columns: ColumnBounds | None = None) -> None:
        """The bounds of ``columns`` (``stats_columns.integral_bounds``) with those of its odd
        files taken from ``values`` (pairs by file index), or all from ``values``."""
        n = len(values)
        self.lo = np.zeros(n, dtype=np.int64)
        self.hi = np.zeros(n, dtype=np.int64)
        self.has_lo = np.zeros(n, dtype=bool)
        self.has_hi = np.zeros(n, dtype=bool)
        #: files whose bounds are set (``fill``)
        self.decoded = np.zeros(n, dtype=bool)
        if columns is not _UNDECODED:
            self.fill(np.arange(n, dtype=np.int64), values, columns)

    def fill(self, idx: np.ndarray, values: Sequence[tuple[Any, Any]], columns: ColumnBounds | None) -> None:
        """Set the bounds of files ``idx`` from ``columns`` (decoded for exactly those files, in
        that order) with the odd ones' taken from ``values`` (by file index), or all from ``values``."""
        if columns is None:
            indexes: Sequence[int] = idx.tolist()
        else:
            lo, hi, has_lo, has_hi, odd = columns
            self.lo[idx], self.hi[idx], self.has_lo[idx], self.has_hi[idx] = lo, hi, has_lo, has_hi
            indexes = idx[odd].tolist()
        self.decoded[idx] = True
        for i in indexes:
            lo, hi = values[i]
            if type(lo) is int and LONG_MIN <= lo <= LONG_MAX:
                self.lo[i] = lo
                self.has_lo[i] = True
            if type(hi) is int and LONG_MIN <= hi <= LONG_MAX:
                self.hi[i] = hi
                self.has_hi[i] = True

    def excluded(self, op: str, value: int, idx: np.ndarray) -> np.ndarray:
        """Of the files ``idx``, those whose bounds prove ``column op value`` false on every row."""
        lo, hi, has_lo, has_hi = self.lo[idx], self.hi[idx], self.has_lo[idx], self.has_hi[idx]
        if op == "<":
            return has_lo & (lo >= value)
        if op == "<=":
            return has_lo & (lo > value)
        if op == ">":
            return has_hi & (hi <= value)
        if op == ">=":
            return has_hi & (hi < value)
        return (has_lo & (lo > value)) | (has_hi & (hi < value))  # "="


def conjuncts(predicate: Predicate) -> list[Predicate]:
    """The top-level conjuncts of ``predicate`` (its ``And`` tree flattened)."""
    out: list[Predicate] = []
    stack = [predicate]
    while stack:
        p = stack.pop()
        if isinstance(p, And):
            stack.append(p.right)
            stack.append(p.left)
        else:
            out.append(p)
    return out


def bound_conjunct(predicate: Predicate, partition_columns: Sequence[str]) -> tuple[ColumnPath, str, int] | None:
    """``(column path, op, literal)`` when ``predicate`` is ``column op literal`` the pre-filter
    evaluates (an integral non-partition column, an int literal in the long range)."""
    if not isinstance(predicate, Comparison) or predicate.op not in BOUND_OPS:
        return None
    left, right = predicate.left, predicate.right
    if not isinstance(left, Column) or left.dtype not in INTEGRAL or not isinstance(right, Literal):
        return None
    value = right.value
    if type(value) is not int or not LONG_MIN <= value <= LONG_MAX:
        return None
    if len(left.path) == 1 and left.path[0] in partition_columns:
        return None
    return left.path, predicate.op, value


class FileIndex:
    """The planning state of one snapshot at one table root (see the module)."""

    def __init__(self, snapshot: Snapshot, root_location: str) -> None:
        schema = self.schema = snapshot.schema
        protocol = snapshot.protocol
        self.mapping: ColumnMapping | None = column_mapping(protocol, snapshot.metadata, schema)
        self.partition_columns = tuple(snapshot.partition_columns)
        dv_feature = protocol.min_reader_version >= 3 and C.DELETION_VECTORS in protocol.reader_feature_set
        table = snapshot.files_table
        #: the adds' stats texts as Arrow (in ``adds`` order)
        self.stats_column = table.column("stats")
        names, mapping = self.partition_columns, self.mapping
        self.values: Sequence[Mapping[str, str | None]]
        self.logical: Sequence[Mapping[str, str | None] | None]
        if table.column("deletionVector").null_count == table.num_rows:
            # no deletion vector: paths and partition groups column-wise, adds built when asked
            self.adds: Sequence[AddFile] = LazyAdds(snapshot)
            self.relative = relative_paths(table.column("path"), root_location)
            self.dvs: Sequence[DeletionVector | None] = [None] * table.num_rows
            keys = names if mapping is None else [mapping.physical_name(n) for n in names]
            #: file indexes (ascending) per distinct set of partition values
            self.groups: list[np.ndarray] = partition_groups(table.column("partitionValues"), keys)
            self.values = _Values(self.adds, names, mapping)
            self.logical = self.values if mapping is not None else [None] * table.num_rows
        else:
            self._per_file(snapshot, root_location, dv_feature)
        adds = self.adds
        self._stats: list[FileStats | None] = [None] * len(adds)
        self._bounds: dict[ColumnPath, IntBounds] = {}
        self.plain_tasks: tuple[Any, ...] | None = None  # ``plan_scan``'s tasks without a filter

    def _per_file(self, snapshot: Snapshot, root_location: str, dv_feature: bool) -> None:
        adds: tuple[AddFile, ...] = snapshot.files
        self.adds = adds
        self.relative = []
        dvs: list[DeletionVector | None] = []
        values_of: list[Mapping[str, str | None]] = []
        logical_of: list[Mapping[str, str | None] | None] = []
        groups: dict[tuple[object, ...], list[int]] = {}
        names, mapping = self.partition_columns, self.mapping
        for i, add in enumerate(adds):
            self.relative.append(relative_data_path(add.path, root_location, f"add {add.path!r}"))
            dv = None
            if add.deletion_vector is not None:
                if not dv_feature:
                    # an add carrying a DV in a table that does not declare the feature: its
                    # deleted rows cannot be trusted to be told apart
                    raise CorruptLogError(
                        f"{root_location}: add {add.path!r} carries a deletionVector, but the table's protocol "
                        "does not declare the deletionVectors feature; its deleted rows cannot be told apart, "
                        "nothing was read"
                    )
                dv = DeletionVector.parse(add.deletion_vector, f"{root_location}: add {add.path!r}")
            dvs.append(dv)
            if mapping is None:
                values, logical = add.partition_values, None
            else:  # the log keys partition values and statistics by physical names
                values = logical = mapping.partition_values(add.partition_values, names)
            values_of.append(values)
            logical_of.append(logical)
            groups.setdefault(tuple(values.get(n, ABSENT) for n in names), []).append(i)
        self.dvs, self.values, self.logical = dvs, values_of, logical_of
        self.groups = [np.array(g, dtype=np.int64) for g in groups.values()]

    def __len__(self) -> int:
        return len(self.adds)

    def prefetch(self, indexes: Sequence[int]) -> None:
        """Build the ``AddFile``s of files ``indexes`` at once (when they are built lazily)."""
        if isinstance(self.adds, LazyAdds):
            self.adds.prefetch(indexes)

    def stats(self, i: int) -> FileStats:
        """File ``i``'s statistics, its partition values in them (decoded once)."""
        stats = self._stats[i]
        if stats is None:
            text = self.stats_column[i].as_py()
            if self.mapping is None:
                stats = file_stats(text, self.schema, self.values[i])
            else:
                stats = self.mapping.file_stats(text, self.values[i])
            self._stats[i] = stats
        return stats

    def bounds(self, path: ColumnPath, idx: np.ndarray | None = None) -> IntBounds:
        """The min and max of column ``path``, set at least for files ``idx`` (default: all):
        decoded column-wise by Arrow (``stats_columns``), else file by file (``stats``), each
        file's once per column (a plan decodes only the files its partition values keep)."""
        found = self._bounds.get(path)
        if found is None:
            found = self._bounds[path] = IntBounds(_Pairs(self, path), _UNDECODED)
        wanted = np.arange(len(self), dtype=np.int64) if idx is None else idx
        missing = wanted[~found.decoded[wanted]]
        if len(missing):
            key = path if self.mapping is None else self.mapping.physical_path(path)
            stats = self.stats_column if len(missing) == len(self) else self.stats_column.take(pa.array(missing))
            found.fill(missing, _Pairs(self, path), integral_bounds(stats, key))
        return found

    def excluded(self, tests: Sequence[tuple[ColumnPath, str, int]], idx: np.ndarray) -> np.ndarray:
        """Of the files ``idx``, those whose bounds prove one of ``tests`` false on every row."""
        out = np.zeros(len(idx), dtype=bool)
        for path, op, value in tests:
            out |= self.bounds(path, idx).excluded(op, value, idx)
        return out


class _Values(Sequence[Mapping[str, "str | None"]]):
    """File ``i``'s partition values by logical name (built when asked)."""

    def __init__(self, adds: Sequence[AddFile], names: Sequence[str], mapping: ColumnMapping | None) -> None:
        self.adds, self.names, self.mapping = adds, names, mapping

    def __len__(self) -> int:
        return len(self.adds)

    def __getitem__(self, i: int) -> Mapping[str, str | None]:  # type: ignore[override]
        values = self.adds[i].partition_values
        return values if self.mapping is None else self.mapping.partition_values(values, self.names)


class _Pairs(Sequence[tuple[Any, Any]]):
    """File ``i``'s (min, max) of one column, decoded in Python when asked."""

    def __init__(self, index: FileIndex, path: ColumnPath) -> None:
        self.index, self.path = index, path

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> tuple[Any, Any]:  # type: ignore[override]
        s = self.index.stats(i)
        return s.min_values.get(self.path), s.max_values.get(self.path)


_INDEXES: "weakref.WeakKeyDictionary[Snapshot, dict[str, FileIndex]]" = weakref.WeakKeyDictionary()


def file_index(snapshot: Snapshot, root_location: str) -> FileIndex:
    """The ``FileIndex`` of ``snapshot`` at ``root_location`` (built once, kept while the
    snapshot lives)."""
    by_root = _INDEXES.get(snapshot)
    if by_root is None:
        by_root = _INDEXES[snapshot] = {}
    index = by_root.get(root_location)
    if index is None:
        index = by_root[root_location] = FileIndex(snapshot, root_location)
    return index
