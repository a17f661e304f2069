"""Plan a scan: bind the filter, skip files by partition values and statistics."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from varlake.delta.actions import AddFile
from varlake.delta.paths import relative_data_path
from varlake.delta.schema import PrimitiveType, StructType
from varlake.delta.snapshot import Snapshot
from varlake.delta.stats import file_stats
from varlake.expr import FileStats, Predicate, SkippingEvaluator, bind, flatten_delta_schema, parse_predicate

ColumnPath = tuple[str, ...]


def schema_types(schema: StructType) -> dict[ColumnPath, str]:
    """Field path -> canonical type name, as the expression binder wants it."""
    return flatten_delta_schema(json.loads(schema.to_schema_string()))


def bind_filter(filter: str | Predicate | None, schema: StructType, session_tz: str = "UTC") -> Predicate | None:
    """Parse (if text) and bind a filter against a table schema."""
    if filter is None:
        return None
    predicate = parse_predicate(filter) if isinstance(filter, str) else filter
    return bind(predicate, schema_types(schema), session_tz=session_tz)


@dataclass(frozen=True)
class ScanTask:
    """One data file to read: where it is, its partition values, its statistics."""

    add: AddFile
    relative_path: str
    stats: FileStats = field(repr=False)

    @property
    def partition_values(self) -> Mapping[str, str | None]:
        return self.add.partition_values

    @property
    def num_records(self) -> int | None:
        return self.stats.num_records


@dataclass(frozen=True)
class ScanPlan:
    """Files to read and files skipped, for one snapshot and one bound filter."""

    version: int
    schema: StructType
    partition_columns: tuple[str, ...]
    filter: Predicate | None
    tasks: tuple[ScanTask, ...]
    skipped: tuple[ScanTask, ...]

    @property
    def total_files(self) -> int:
        return len(self.tasks) + len(self.skipped)


def partition_types(schema: StructType, partition_columns: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for name in partition_columns:
        t = schema.field(name).type
        if isinstance(t, PrimitiveType):
            out[name] = t.name
    return out


def plan_scan(
    snapshot: Snapshot, root_location: str, filter: str | Predicate | None = None, session_tz: str = "UTC"
) -> ScanPlan:
    """Every live file of ``snapshot`` as a task, minus those the filter proves empty.

    ``root_location`` is the absolute location of the table root (paths are checked to stay in it).
    """
    schema = snapshot.schema
    bound = bind_filter(filter, schema, session_tz)
    evaluator = (
        SkippingEvaluator(bound, partition_types(schema, snapshot.partition_columns), session_tz=session_tz)
        if bound is not None
        else None
    )
    keep: list[ScanTask] = []
    skip: list[ScanTask] = []
    for add in snapshot.files:
        rel = relative_data_path(add.path, root_location, f"add {add.path!r}")
        task = ScanTask(add, rel, file_stats(add.stats, schema, add.partition_values))
        if evaluator is None or evaluator.might_match(task.stats):
            keep.append(task)
        else:
            skip.append(task)
    return ScanPlan(snapshot.version, schema, tuple(snapshot.partition_columns), bound, tuple(keep), tuple(skip))
