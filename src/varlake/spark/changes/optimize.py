"""OPTIMIZE with Spark doing the reading, ordering, writing and checking; the driver commits once.

``optimize(spark, path, where=None, cluster_by=None, target_file_size=None, dry_run=False)``
plans exactly as ``Table.optimize`` does (``write.optimize.plan_optimize``; default target
file size 128 MiB, ``delta.targetFileSize`` honoured), then per clustered bin, and once
for all bin-packing bins:

1. Spark reads the bin's files with their deletion vectors applied (``spark.row_ids.target_frame``);
2. with clustering keys, rows are given a Z-value on the executors (``spark.zorder``: each
   key in Spark SQL, ranked against a sample of its values, bits interleaved), range-
   partitioned by it into target-size files and sorted within each, so each file is a
   contiguous Z range written by its own task; without keys all bins are written by one
   job with one partition per target-size file (``_packing_job``);
3. Spark writes them through ``spark.writer.stage_write`` with an empty sample, so the
   table's stored shredding schemas are kept and every file gets the stable layout.

Then the executors check the content (``spark.content_digest.check_rewrite``: an additive
multiset digest of the logical rows of the files read and of the files written, read by
varlake's reader; only a few numbers per task reach the driver), and the driver commits all
bins once (``write.optimize.commit_optimize``). A difference raises ``ContentCheckError``
and the new files are deleted.

Only DataFrame and SQL APIs are used (no JVM handles), so it runs on Spark Connect too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from functools import reduce
from typing import Any

from varlake.delta.actions import AddFile
from varlake.errors import OptimizeError, TableError, VarlakeError
from varlake.read import ScanPlan
from varlake.semantics.types import backquote
from varlake.spark.changes.content_digest import RewriteSides, check_rewrite
from varlake.spark.changes.row_ids import FILE_COLUMN, ROW_COLUMN, target_frame
from varlake.spark.session.local import spark_error_summary
from varlake.spark.session.object_store import open_table
from varlake.spark.changes.zorder import zordered
from varlake.table import Table
from varlake.write.maintenance.optimize import (
    SPARK_TARGET_FILE_SIZE,
    OptimizeBin,
    OptimizePlan,
    OptimizeResult,
    StagedOptimize,
    discard_files,
    tasks_for,
    commit_optimize,
    optimize_adds,
    plan_optimize,
)

__all__ = ["optimize"]

_PART = "__vl_part"


def _files_frame(spark: Any, table: Table, plan: OptimizePlan, files: Sequence[AddFile]) -> Any:
    """The live rows of ``files`` as Spark reads them (deletion vectors applied), in the
    table's columns, then each row's file and index (``FILE_COLUMN``, ``ROW_COLUMN``)."""
    snapshot = plan.snapshot
    tasks = tasks_for(snapshot, table.log.root_location, files)
    scan = ScanPlan(snapshot.version, snapshot.schema, tuple(snapshot.partition_columns), None, tuple(tasks))
    return target_frame(spark, table, snapshot, scan).frame


def _num_files(chosen: OptimizeBin, target_size: int) -> int:
    """How many files a bin becomes at the target size."""
    return max(1, -(-chosen.estimated_output_bytes // target_size))


def _clustered_job(spark: Any, table: Table, plan: OptimizePlan, chosen: OptimizeBin) -> Any:
    """A clustered bin's rows in Z-order, one partition per output file."""
    df = _files_frame(spark, table, plan, chosen.files).drop(FILE_COLUMN, ROW_COLUMN)
    assert plan.cluster_by is not None
    return zordered(df, plan.cluster_by, _num_files(chosen, plan.target_file_size), chosen.num_rows)


def _packing_job(spark: Any, table: Table, plan: OptimizePlan, bins: Sequence[OptimizeBin]) -> Any:
    """The rows of every bin-packing bin as one DataFrame with one partition per output file,
    so the files are written by parallel tasks of one job. One bin: its files coalesced.
    More: per table partition, the rows of its bins are spread over its files by a hash of
    their file and row index, ranges of which the rows are then partitioned by (``_PART``
    numbers a partition's files consecutively, so a task never mixes partitions)."""
    if len(bins) == 1:
        files = _num_files(bins[0], plan.target_file_size)
        df = _files_frame(spark, table, plan, bins[0].files).drop(FILE_COLUMN, ROW_COLUMN)
        return df.coalesce(1) if files == 1 else df.repartition(files)
    groups: dict[tuple[tuple[str, str | None], ...], list[OptimizeBin]] = {}
    for chosen in bins:
        groups.setdefault(tuple(sorted(chosen.partition_values.items())), []).append(chosen)
    frames, offset = [], 0
    for grouped in groups.values():
        count = sum(_num_files(b, plan.target_file_size) for b in grouped)
        frame = _files_frame(spark, table, plan, [f for b in grouped for f in b.files])
        part = f"{offset} + pmod(xxhash64({FILE_COLUMN}, {ROW_COLUMN}), {count})"
        frames.append(frame.selectExpr(*[backquote(c) for c in frame.columns if c not in (FILE_COLUMN, ROW_COLUMN)], f"{part} AS {_PART}"))
        offset += count
    df = reduce(lambda a, b: a.unionByName(b), frames)
    return df.repartitionByRange(offset, _PART).drop(_PART)


def optimize(
    spark: Any,
    path: Any,
    where: str | None = None,
    cluster_by: Sequence[str] | None = None,
    target_file_size: Any = None,
    *,
    dry_run: bool = False,
    storage_options: Mapping[str, str] | None = None,
) -> OptimizeResult:
    """OPTIMIZE the table at ``path`` (a local path or an object-store URI reached with
    ``storage_options``) with Spark (see the module doc); an ``OptimizeResult``."""
    from varlake.spark.writing.writer import stage_write

    started = time.perf_counter()
    table = open_table(spark, path if isinstance(path, Table) else os.fspath(path), storage_options)
    plan = plan_optimize(table, where, target_file_size, cluster_by, default_target=SPARK_TARGET_FILE_SIZE)
    if dry_run or not plan.bins:
        staged = StagedOptimize(plan, (), sum(b.num_rows or 0 for b in plan.bins), started, engine="spark")
        return commit_optimize(table, staged, dry_run=dry_run)
    written = []
    sides: list[RewriteSides] = []
    packing = [b for b in plan.bins if not (b.clustered and plan.cluster_by)]
    clustered = [b for b in plan.bins if b.clustered and plan.cluster_by]
    jobs = [([b], lambda b=b: _clustered_job(spark, table, plan, b)) for b in clustered]
    if packing:
        jobs.append((packing, lambda: _packing_job(spark, table, plan, packing)))
    try:
        for chosen, build in jobs:
            try:
                df = build()  # a clustered bin samples its keys here
                pending = stage_write(df, table.path, "append", sample=df.limit(0), storage=table.storage)
            except VarlakeError:
                raise
            except Exception as exc:  # a Spark failure: nothing is committed
                raise TableError(f"{table.path}: OPTIMIZE: Spark failed, nothing was committed: {spark_error_summary(exc)}") from exc
            written.extend(pending.adds)
            if pending.metadata is not None:
                raise OptimizeError(f"{table.path}: OPTIMIZE would change the stored shredding schemas; nothing was committed")
            read = [f for b in chosen for f in b.files]
            sides.append(RewriteSides(read, pending.adds, f"{table.path}: OPTIMIZE (Spark) of {len(read)} files"))
        rows_total = check_rewrite(spark, table, plan.snapshot, sides)
    except BaseException:
        discard_files(table, written)
        raise
    adds = tuple(optimize_adds(written, plan.cluster_by))
    staged = StagedOptimize(plan, adds, rows_total, started, engine="spark")
    return commit_optimize(table, staged)
