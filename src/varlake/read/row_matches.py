"""Which rows of a data file a condition matches, by their index in the file -- the read
side of DELETE and UPDATE.

``match_rows`` reads one planned file (``read.plan_scan``) and evaluates the task's residual
filter on its rows exactly as ``read.arrow_reader.read_tasks`` does for a scan (rows the
file's deletion vector deletes are never evaluated, row groups a plain-column conjunct
excludes are dropped unevaluated, typed ``variant_get`` extractions run on every row
evaluated, each row's checks in Spark's order), but keeps every row with its index:
the result says which rows are live (not deleted already) and which of them the
condition makes TRUE (NULL and FALSE do not match). A condition in which nothing can
raise is evaluated vectorised on the columns it reads (``read.arrow_filter``), else
row by row on those columns of the rows evaluated.

``added_file_matcher`` answers, for a file committed concurrently, whether the same
condition might match rows in it (partition values and statistics, as the planner
skips): the conflict check of ``delta.transaction.ReadSet``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from varlake.delta.actions import AddFile
from varlake.delta.column_mapping import column_mapping
from varlake.delta.deletion_vectors import keep_mask
from varlake.delta.snapshot import Snapshot
from varlake.delta.stats import file_stats
from varlake.expr import AlwaysFalse, AlwaysTrue, IsNotNull, Predicate, RowEvaluator, referenced_columns
from varlake.expr.rows import row_variant_get
from varlake.read.arrow_reader import DeletedRows, FileOpener, RowFilter, evaluated_row_groups, open_task, read_opened
from varlake.read.planner import PLACE_PARTITION_SKIPPED, PLACE_STATS_SKIPPED, Residuals, ScanPlan, ScanTask, partition_types
from varlake.read.residual import eager_terms, row_group_guards

__all__ = ["FileRows", "RowMatcher", "added_file_matcher", "match_rows"]

_EMPTY = np.empty(0, dtype=np.uint64)


@dataclass(frozen=True)
class FileRows:
    """One data file's rows (every physical row, in file order), which are ``live`` (not
    deleted by its current DV), the indexes its DV deletes, and which live rows ``matched``."""

    task: ScanTask
    rows: pa.Table
    deleted: np.ndarray
    live: np.ndarray
    matched: np.ndarray

    @property
    def num_rows(self) -> int:
        return len(self.live)

    @property
    def num_matched(self) -> int:
        return int(self.matched.sum())

    @property
    def num_live(self) -> int:
        return int(self.live.sum())


class RowMatcher:
    """Evaluates a plan's residual filters on files' rows (compiled once per residual)."""

    def __init__(self, plan: ScanPlan, open_file: FileOpener, deleted_rows: DeletedRows) -> None:
        self.plan = plan
        self.open_file = open_file
        self.deleted_rows = deleted_rows
        self._filters: dict[Predicate, tuple[RowFilter, list[RowEvaluator], list[RowEvaluator]]] = {}

    def _compiled(self, residual: Predicate) -> tuple[RowFilter, list[RowEvaluator], list[RowEvaluator]]:
        found = self._filters.get(residual)
        if found is None:
            guards = [RowEvaluator(g) for g in row_group_guards(residual)]
            eager = [RowEvaluator(IsNotNull(t), variant_get=row_variant_get) for t in eager_terms(residual)]
            found = self._filters[residual] = (RowFilter(residual), guards, eager)
        return found

    def columns_for(self, task: ScanTask, all_columns: bool) -> list[str] | None:
        """The columns to read for ``task``: all (None), or those its residual names."""
        if all_columns:
            return None
        residual = task.residual if task.residual is not None else self.plan.filter
        names = {c.path[0] for c in referenced_columns(residual)} if residual is not None else set()
        data = [f.name for f in self.plan.schema.fields if f.name not in self.plan.partition_columns]
        wanted = [f.name for f in self.plan.schema.fields if f.name in names]
        if not any(c in data for c in wanted):  # one data column at least: the rows are counted
            wanted += data[:1]
        return wanted

    def match(self, task: ScanTask, all_columns: bool = True) -> FileRows:
        """The rows of ``task``'s file and which of them its residual filter matches."""
        plan = self.plan
        columns = self.columns_for(task, all_columns)
        source = open_task(self.open_file, task)
        rows = read_opened(task, plan.schema, plan.partition_columns, source, columns, None, plan.column_mapping)
        n = rows.num_rows
        if task.deletion_vector is not None:
            deleted = np.asarray(self.deleted_rows(task), dtype=np.uint64)
            live = keep_mask(deleted, n, f"data file {task.relative_path!r}")
        else:
            deleted, live = _EMPTY, np.ones(n, dtype=bool)
        residual = task.residual if task.residual is not None else plan.filter
        if residual is None or isinstance(residual, AlwaysTrue):
            return FileRows(task, rows, deleted, live, live.copy())
        if isinstance(residual, AlwaysFalse) or not n:
            return FileRows(task, rows, deleted, live, np.zeros(n, dtype=bool))
        row_filter, guards, eager = self._compiled(residual)
        evaluated = live.copy()
        if guards:
            groups = evaluated_row_groups(n, guards, source, rows)
            if groups is not None:
                evaluated &= groups
        names = {c.path[0] for c in referenced_columns(residual)}
        needed = rows.select([c for c in rows.column_names if c in names] or rows.column_names[:1])
        if row_filter.vector(needed.schema) is not None:  # nothing can raise: every row evaluated at once
            return FileRows(task, rows, deleted, live, row_filter.mask(needed) & evaluated)
        positions = np.flatnonzero(evaluated)
        matched = np.zeros(n, dtype=bool)
        if len(positions):
            part = needed if len(positions) == n else needed.take(pa.array(positions, pa.int64()))
            for extraction in eager:
                extraction.evaluate_table(part)  # a value that does not convert raises, on any row
            mask = np.asarray(row_filter.mask(part), dtype=bool)
            matched[positions[mask]] = True
        return FileRows(task, rows, deleted, live, matched)


def match_rows(
    plan: ScanPlan, task: ScanTask, open_file: FileOpener, deleted_rows: DeletedRows, all_columns: bool = True
) -> FileRows:
    """The rows of one planned file and which of them the plan's condition matches."""
    return RowMatcher(plan, open_file, deleted_rows).match(task, all_columns)


def added_file_matcher(snapshot: Snapshot, plan: ScanPlan, session_tz: str = "UTC") -> Callable[[AddFile], bool] | None:
    """Whether the condition of ``plan`` might match rows of an ``add`` committed after
    ``snapshot`` (None: the plan has no condition, every file matches). A file whose
    statistics or partition values cannot be read counts as matching."""
    if plan.filter is None:
        return None
    schema = snapshot.schema
    columns: Sequence[str] = tuple(snapshot.partition_columns)
    residuals = Residuals(plan.filter, partition_types(schema, tuple(columns)), session_tz)
    mapping = column_mapping(snapshot.protocol, snapshot.metadata, schema)

    def might_match(add: AddFile) -> bool:
        try:
            if mapping is None:
                values = add.partition_values
                stats = file_stats(add.stats, schema, values)
            else:
                values = mapping.partition_values(add.partition_values, columns)
                stats = mapping.file_stats(add.stats, values)
            where, _terms = residuals.of(values).place(stats)
        except Exception:  # noqa: BLE001 -- a file this check cannot read conflicts
            return True
        return where not in (PLACE_PARTITION_SKIPPED, PLACE_STATS_SKIPPED)

    return might_match
