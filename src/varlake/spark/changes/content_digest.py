"""The content check of a Spark rewrite, run on the executors: only a few numbers reach the driver.

``files_digests`` reads data files with varlake's own reader (``read.read_tasks``, deletion
vectors applied, Variants reassembled as ``struct<metadata, value>``) inside a ``mapInArrow``
job over the file indexes, and digests each file's rows with
``write.content_check.multiset_digest`` (an additive, order-independent hash of the rows'
*logical* values, Variants canonical). The executors add up the digests of the files they
read per group; the driver adds the groups' few numbers. The files a rewrite read and the
files it wrote are digested alike, in one job, and compared per bin (``check_rewrite``).

The reader is varlake's, not Spark's: the check must not share the reader whose result it
checks (a Spark reader that misread a layout would write and read back the same wrong rows),
and it is the same oracle the Python path's check uses.

Only on a difference does a second job find how many rows differ (per-row hashes counted
per side in a Spark aggregate) and a third renders one example row on an executor.
Everything is DataFrame API, so it runs on Spark Connect as well as on classic sessions.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from varlake.delta.actions import AddFile
from varlake.delta.column_mapping import column_mapping
from varlake.delta.snapshot import Snapshot
from varlake.errors import ContentCheckError, TableError
from varlake.read import ScanPlan, read_tasks
from varlake.spark.session.local import spark_error_summary
from varlake.table import Table
from varlake.write.maintenance.content_check import MultisetDigest, logical_hashes, multiset_digest, row_text
from varlake.write.maintenance.optimize import tasks_for

__all__ = ["RewriteSides", "check_rewrite", "files_digests"]

#: most Spark tasks a content-check job is split into (files are dealt into them by size)
MAX_TASKS = 1024
_DIGEST_SCHEMA = "grp bigint, rows bigint, sum1 bigint, sum2 bigint, mix1 bigint, mix2 bigint"
_HASH_SCHEMA = "side int, h1 bigint, h2 bigint"
_READ, _WRITTEN = 1, -1


class _Reader:
    """What an executor needs to read the table's files with varlake's reader (picklable)."""

    def __init__(self, table: Table, snapshot: Snapshot) -> None:
        self.root, self.storage = table.path, table.storage
        self.version, self.schema = snapshot.version, snapshot.schema
        self.partition_columns = tuple(snapshot.partition_columns)
        self.mapping = column_mapping(snapshot.protocol, snapshot.metadata, snapshot.schema)
        self._table: Table | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_table": None}

    def read(self, task: Any) -> pa.Table:
        """The live rows of one file's scan task, in the table's logical Arrow schema."""
        if self._table is None:
            self._table = Table(self.root, storage=self.storage)
        plan = ScanPlan(self.version, self.schema, self.partition_columns, None, (task,), column_mapping=self.mapping)
        return read_tasks(plan, self._table.read_source, None, None, self._table.deleted_rows)


def _signed(values: Sequence[int]) -> list[int]:
    """Unsigned 64-bit values as the signed ones Spark's ``bigint`` carries."""
    return [v - (1 << 64) if v >= 1 << 63 else v for v in values]


def files_digests(
    spark: Any, table: Table, snapshot: Snapshot, groups: Sequence[Sequence[AddFile]], where: str
) -> list[MultisetDigest]:
    """The ``MultisetDigest`` of the live rows of each group of files, computed on the
    executors (one ``mapInArrow`` job over all groups' files, in tasks of similar bytes; the
    driver gets one row of six numbers per group and task)."""
    reader = _Reader(table, snapshot)
    items: list[tuple[int, Any]] = []
    for g, files in enumerate(groups):
        items.extend((g, task) for task in tasks_for(snapshot, table.log.root_location, files))
    out = [MultisetDigest() for _ in groups]
    if not items:
        return out
    chunks = _chunks(items)

    def digest(batches: Any) -> Any:
        for batch in batches:
            sums: dict[int, MultisetDigest] = {}
            for c in batch.column(0).to_pylist():
                for g, task in chunks[c]:
                    sums[g] = sums.get(g, MultisetDigest()) + multiset_digest(reader.read(task), f"{where}: {task.relative_path}")
            rows = [[g, *_signed(d.as_tuple())] for g, d in sums.items()]
            columns = list(zip(*rows)) if rows else [() for _ in range(6)]
            yield pa.RecordBatch.from_arrays(
                [pa.array(list(c), pa.int64()) for c in columns], ["grp", "rows", "sum1", "sum2", "mix1", "mix2"]
            )

    for row in _collect(spark.range(len(chunks), numPartitions=len(chunks)).mapInArrow(digest, _DIGEST_SCHEMA), where):
        out[row[0]] = out[row[0]] + MultisetDigest.from_signed(row[1:])
    return out


def _chunks(items: Sequence[tuple[int, Any]]) -> list[list[tuple[int, Any]]]:
    """``items`` dealt into at most ``MAX_TASKS`` chunks of similar bytes (largest file first
    into the lightest chunk): one Spark task each, scheduled as cores free up."""
    count = min(len(items), MAX_TASKS)
    chunks: list[list[tuple[int, Any]]] = [[] for _ in range(count)]
    heap = [(0, c) for c in range(count)]
    for item in sorted(items, key=lambda it: -(it[1].add.size or 0)):
        load, c = heapq.heappop(heap)
        chunks[c].append(item)
        heapq.heappush(heap, (load + (item[1].add.size or 0), c))
    return chunks


def _collect(frame: Any, where: str) -> list[Any]:
    try:
        return frame.collect()
    except Exception as exc:  # a file that cannot be read or decoded: nothing is committed
        message = spark_error_summary(exc)
        if "ContentCheckError" in message:
            raise ContentCheckError(f"{where}: {message}; nothing was committed") from exc
        raise TableError(f"{where}: the Spark job checking the content failed, nothing was committed: {message}") from exc


class RewriteSides:
    """One bin of a rewrite: the files it read and the files it wrote."""

    def __init__(self, read: Sequence[AddFile], written: Sequence[AddFile], where: str) -> None:
        self.read, self.written, self.where = tuple(read), tuple(written), where


def check_rewrite(spark: Any, table: Table, snapshot: Snapshot, bins: Sequence[RewriteSides]) -> int:
    """Raise ``ContentCheckError`` unless, for every bin, the files written hold the same
    multiset of logical rows as the files read (deletion vectors applied); the number of rows
    checked. One digest job on the executors for both sides; on a difference, more jobs name
    how many rows differ and show one."""
    where = f"{table.path}: OPTIMIZE (Spark)"
    digests = files_digests(spark, table, snapshot, [b.read for b in bins] + [b.written for b in bins], where)
    read, written = digests[: len(bins)], digests[len(bins) :]
    for sides, before, after in zip(bins, read, written):
        if before != after:
            _explain(spark, table, snapshot, sides, before, after)
    return sum(d.rows for d in read)


def _row_hashes(spark: Any, reader: _Reader, items: Sequence[tuple[int, Any]], where: str) -> Any:
    """A DataFrame of every row's logical hash (two signed lanes) and side (+1 read, -1 written)."""

    def hashes(batches: Any) -> Any:
        for batch in batches:
            for i in batch.column(0).to_pylist():
                side, task = items[i]
                lanes = logical_hashes(reader.read(task), f"{where}: {task.relative_path}").view(np.int64).reshape(-1, 2)
                yield pa.RecordBatch.from_arrays(
                    [pa.array(np.full(len(lanes), side, np.int32)), pa.array(lanes[:, 0]), pa.array(lanes[:, 1])],
                    ["side", "h1", "h2"],
                )

    return spark.range(len(items)).mapInArrow(hashes, _HASH_SCHEMA)


def _explain(spark: Any, table: Table, snapshot: Snapshot, sides: RewriteSides, before: MultisetDigest, after: MultisetDigest) -> None:
    """Raise the ``ContentCheckError`` of a bin whose digests differ, naming how many rows differ
    and one of them (found by more executor jobs; only the counts and one row reach the driver)."""
    reader = _Reader(table, snapshot)
    root = table.log.root_location
    items = [(_READ, t) for t in tasks_for(snapshot, root, sides.read)]
    items += [(_WRITTEN, t) for t in tasks_for(snapshot, root, sides.written)]
    head = f"{sides.where}: the rewrite read {before.rows} rows and wrote {after.rows}"
    try:
        counted = (
            _row_hashes(spark, reader, items, sides.where)
            .groupBy("h1", "h2")
            .agg({"side": "sum"})
            .withColumnRenamed("sum(side)", "d")
            .where("d <> 0")
            .selectExpr("sum(CASE WHEN d > 0 THEN d ELSE 0 END) AS missing", "sum(CASE WHEN d < 0 THEN -d ELSE 0 END) AS extra",
                        "max_by(struct(h1, h2, d > 0 AS lost), abs(d)) AS example")
            .collect()[0]
        )  # fmt: skip
    except ContentCheckError:
        raise
    except Exception as exc:  # noqa: BLE001 - the digests already differ: say so without the detail
        raise ContentCheckError(f"{head}; they differ ({spark_error_summary(exc)}); nothing was committed") from None
    missing, extra, example = int(counted["missing"] or 0), int(counted["extra"] or 0), counted["example"]
    shown = ""
    if example is not None:
        side = _READ if example["lost"] else _WRITTEN
        row = _find_row(spark, reader, [it for it in items if it[0] == side], (example["h1"], example["h2"]), sides.where)
        if row is not None:
            shown = f", e.g. {'read' if side == _READ else 'written'} {row}"
    raise ContentCheckError(
        f"{head}; {missing} of {before.rows} rows read were not written as they were "
        f"({extra} rows written differ){shown}; nothing was committed"
    )


def _find_row(spark: Any, reader: _Reader, items: Sequence[tuple[int, Any]], wanted: tuple[int, int], where: str) -> str | None:
    """One row whose logical hash is ``wanted``, rendered on the executor that reads it."""
    target = np.array([wanted], dtype=np.int64)

    def find(batches: Any) -> Any:
        done = False
        for batch in batches:  # consumed to the end, read only until a row is found
            for i in batch.column(0).to_pylist():
                if done:
                    break
                rows = reader.read(items[i][1])
                lanes = logical_hashes(rows, where).view(np.int64).reshape(-1, 2)
                hit = np.flatnonzero((lanes == target).all(axis=1))
                if len(hit):
                    done = True
                    yield pa.RecordBatch.from_arrays([pa.array([row_text(rows.slice(int(hit[0]), 1).to_pylist()[0])])], ["row"])

    try:
        found = spark.range(len(items)).mapInArrow(find, "row string").limit(1).collect()
    except Exception:  # noqa: BLE001 - the example is a courtesy; the counts are already known
        return None
    return found[0]["row"] if found else None

