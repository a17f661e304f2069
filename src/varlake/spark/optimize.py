"""OPTIMIZE with Spark doing the reading, ordering and writing; the driver commits once.

``optimize(spark, path, where=None, cluster_by=None, target_file_size=None, dry_run=False)``
plans exactly as ``Table.optimize`` does (``write.optimize.plan_optimize``; default target
file size 128 MiB, ``delta.targetFileSize`` honoured), then per bin:

1. Spark reads the bin's files with their deletion vectors applied (``spark.row_ids.target_frame``);
2. with clustering keys, each key is computed in Spark SQL (``try_variant_get`` for a Variant
   path: a value that does not convert is NULL, as in the Python path), dense-ranked, scaled
   and bit-interleaved into a Z-value (SQL arithmetic); rows are range-partitioned by it into
   target-size files and sorted within each; without keys the bin is cut into target-size files;
3. Spark writes them through ``spark.writer.stage_write`` with an empty sample, so the
   table's stored shredding schemas are kept and every file gets the stable layout;
4. the driver checks the content (``write.content_check``: the files read against the files
   written, read back) and commits all bins once (``write.optimize.commit_optimize``).

Only DataFrame and SQL APIs are used (no JVM handles), so it runs on Spark Connect too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from varlake.errors import OptimizeError, TableError, VarlakeError
from varlake.expr.tree import Column, VariantGet
from varlake.read import ScanPlan
from varlake.semantics.types import backquote
from varlake.spark.row_ids import FILE_COLUMN, ROW_COLUMN, target_frame
from varlake.spark.session import spark_error_summary
from varlake.table import Table
from varlake.write.clustering import ClusterKey
from varlake.write.content_check import check_same_rows
from varlake.write.optimize import (
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
    read_files,
)

__all__ = ["optimize"]

_Z, _KEY = "__vl_z", "__vl_k"


def _key_sql(key: ClusterKey) -> str:
    """A clustering key as a Spark SQL expression (NULL when a Variant value does not convert)."""
    term = key.term
    if isinstance(term, Column):
        return ".".join(backquote(p) for p in term.path)
    assert isinstance(term, VariantGet)
    column = ".".join(backquote(p) for p in term.column.path)
    return f"try_variant_get({column}, '{_dollar(term.path)}', '{key.type}')"


def _dollar(normalized: str) -> str:
    """A normalized path (``$['a']['b'][0]``) as Spark's ``variant_get`` path text, quoted for SQL."""
    return normalized.replace("\\", "\\\\").replace("'", "\\'")


def _zordered(df: Any, keys: Sequence[ClusterKey], files: int) -> Any:
    """``df`` range-partitioned into ``files`` partitions by the Z-value of ``keys`` and
    sorted within each (ranks scaled to ``62 // len(keys)`` bits, bits interleaved)."""
    width = len(keys)
    bits = max(1, min(31, 62 // width))
    names = [f"{_KEY}{i}" for i in range(width)]
    columns = [backquote(c) for c in df.columns]
    df = df.selectExpr(*columns, *[f"{_key_sql(k)} AS {n}" for k, n in zip(keys, names)])
    ranked = df.selectExpr(
        *columns,
        *[f"dense_rank() OVER (ORDER BY {n} ASC NULLS FIRST) AS {n}" for n in names],
    )
    scaled = ranked.selectExpr(
        *columns,
        *[f"CAST(floor(({n} - 1) * {float(1 << bits)} / (max({n}) OVER ())) AS BIGINT) AS {n}" for n in names],
    )
    if width == 1:
        z = names[0]
    else:
        terms = [
            f"shiftleft(shiftright({n}, {b}) & 1, {b * width + (width - 1 - i)})"
            for b in range(bits)
            for i, n in enumerate(names)
        ]
        z = " | ".join(terms)
    zdf = scaled.selectExpr(*columns, f"CAST({z} AS BIGINT) AS {_Z}")
    return zdf.repartitionByRange(max(files, 1), _Z).sortWithinPartitions(_Z).selectExpr(*columns)


def _bin_frame(spark: Any, table: Table, plan: OptimizePlan, chosen: OptimizeBin) -> Any:
    """The live rows of a bin's files as Spark reads them (deletion vectors applied), in the
    table's columns."""
    snapshot = plan.snapshot
    tasks = tasks_for(snapshot, table.log.root_location, chosen.files)
    scan = ScanPlan(snapshot.version, snapshot.schema, tuple(snapshot.partition_columns), None, tuple(tasks))
    frame = target_frame(spark, table, snapshot, scan).frame
    return frame.drop(FILE_COLUMN, ROW_COLUMN)


def _num_files(chosen: OptimizeBin, target_size: int) -> int:
    """How many files a bin becomes at the target size."""
    return max(1, -(-chosen.estimated_output_bytes // target_size))


def optimize(
    spark: Any,
    path: Any,
    where: str | None = None,
    cluster_by: Sequence[str] | None = None,
    target_file_size: Any = None,
    *,
    dry_run: bool = False,
) -> OptimizeResult:
    """OPTIMIZE the table at ``path`` with Spark (see the module doc); an ``OptimizeResult``."""
    from varlake.spark.writer import stage_write

    started = time.perf_counter()
    table = path if isinstance(path, Table) else Table(os.fspath(path))
    plan = plan_optimize(table, where, target_file_size, cluster_by, default_target=SPARK_TARGET_FILE_SIZE)
    if dry_run or not plan.bins:
        staged = StagedOptimize(plan, (), sum(b.num_rows or 0 for b in plan.bins), started, engine="spark")
        return commit_optimize(table, staged, dry_run=dry_run)
    written = []
    rows_total = 0
    try:
        for chosen in plan.bins:
            df = _bin_frame(spark, table, plan, chosen)
            files = _num_files(chosen, plan.target_file_size)
            if chosen.clustered and plan.cluster_by:
                df = _zordered(df, plan.cluster_by, files)
            else:
                df = df.coalesce(1) if files == 1 else df.repartition(files)
            try:
                pending = stage_write(df, table.path, "append", sample=df.limit(0))
            except VarlakeError:
                raise
            except Exception as exc:  # a Spark failure: nothing is committed
                raise TableError(f"{table.path}: OPTIMIZE: Spark failed, nothing was committed: {spark_error_summary(exc)}") from exc
            written.extend(pending.adds)
            if pending.metadata is not None:
                raise OptimizeError(f"{table.path}: OPTIMIZE would change the stored shredding schemas; nothing was committed")
            read = read_files(table, plan.snapshot, chosen.files)
            back = read_files(table, plan.snapshot, pending.adds)
            check_same_rows(read, back, f"{table.path}: OPTIMIZE (Spark) of {len(chosen.files)} files")
            rows_total += read.num_rows
    except BaseException:
        discard_files(table, written)
        raise
    adds = tuple(optimize_adds(written, plan.cluster_by))
    staged = StagedOptimize(plan, adds, rows_total, started, engine="spark")
    return commit_optimize(table, staged)
