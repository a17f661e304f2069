"""Structured Streaming into varlake tables, each micro-batch committed exactly once.

``write_stream(df, path, checkpoint_location, trigger=...)`` starts ``df.writeStream``
with ``foreachBatch``: every micro-batch is appended through the Spark writer
(``varlake.spark.write``) as ONE table version carrying ``txn(appId=<stream id>,
version=<batchId>)``. Spark re-runs a batch whose end it did not record in the checkpoint
(the query was killed or failed in between) with the same ``batchId`` and the same input;
a batch the table already holds is then skipped before anything is written (and, should
two runs race, the transaction turns the second commit into a no-op). So a restarted query
never duplicates nor loses a batch.

The stream id is ``varlake-stream-<uuid>``, kept in the file ``varlake-stream-id`` inside
the checkpoint directory: created by the first start, read by every restart, so it is
stable for one checkpoint (and moves with it). A new checkpoint location is a new stream
that reads its source from the start, as any Structured Streaming query does.

``ingest_stream(spark, source_dir, table, checkpoint_location, ...)`` (``varlake ingest
--stream``) is the streaming form of ``ingest_json``: Spark's file stream source reads the
JSON text lines of files as they appear in ``source_dir`` (the source remembers which files
it read, in the checkpoint); each micro-batch is parsed, written and quarantined exactly
as the batch ingest does, the quarantine first, then the table, both with the batch's
``txn`` -- a re-run batch stages again and both commits are skipped where already done, so
a bad line is quarantined once.

``compact_every=N`` runs ``Table.optimize`` (bin-packing the small files of the stream,
Python path) after every N-th batch; an optimize that fails is a warning, the stream goes on.

Only DataFrame and session APIs are used, so it runs on Spark Connect too, where
``foreachBatch`` runs in a Python worker of the server: the function handed to it is a
small picklable object holding paths and options.
"""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from varlake.errors import StreamError, VarlakeError
from varlake.spark.writing.ingest import (
    DOC_COLUMN,
    IngestError,
    IngestOptions,
    hadoop_path,
    latest_snapshot,
    quarantine_path_for,
    stage_lines,
    table_root,
)
from varlake.io.locations import is_object_store_uri, parse_uri
from varlake.spark.session.object_store import reach
from varlake.spark.uris import local_path
from varlake.spark.writing.writer import commit_write, write
from varlake.write import SAMPLE_ROWS

__all__ = ["STREAM_ID_FILE", "TRIGGERS", "ingest_stream", "run_to_end", "stream_id", "write_stream"]

STREAM_ID_FILE = "varlake-stream-id"
_PREFIX = "varlake-stream-"
TRIGGERS = ("once", "available-now")


def stream_id(checkpoint_location: str | os.PathLike[str], storage_options: Mapping[str, str] | None = None) -> str:
    """The stream id of ``checkpoint_location``: read from its ``varlake-stream-id`` file,
    which is created (atomically, first writer wins) when missing. On an object store
    (``s3://bkt/ck``, reached with ``storage_options``) the file is put if absent."""
    if is_object_store_uri(os.fspath(checkpoint_location)):
        return _object_stream_id(os.fspath(checkpoint_location), storage_options)
    root = _checkpoint_dir(checkpoint_location)
    target = os.path.join(root, STREAM_ID_FILE)
    existing = _read_id(target)
    if existing is not None:
        return existing
    os.makedirs(root, exist_ok=True)
    new = _PREFIX + uuid.uuid4().hex
    tmp = os.path.join(root, f".{STREAM_ID_FILE}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "w", encoding="ascii") as f:
        f.write(new + "\n")
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(tmp, target)  # fails when another start created it first
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    found = _read_id(target)
    if found is None:
        raise StreamError(f"{target}: cannot read the stream id just written")
    return found


def _object_stream_id(location: str, storage_options: Mapping[str, str] | None) -> str:
    from varlake.table import locate

    where = locate(location, storage_options=storage_options)
    target = f"{where.root}/{STREAM_ID_FILE}"
    if not where.storage.exists(target):
        where.storage.write_if_absent(target, (_PREFIX + uuid.uuid4().hex + "\n").encode("ascii"))  # first writer wins
    text = where.storage.read(target).decode("ascii", errors="replace").strip()
    if not text.startswith(_PREFIX) or len(text) != len(_PREFIX) + 32:
        raise StreamError(f"{target}: not a varlake stream id: {text[:80]!r}")
    return text


def _read_id(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            text = f.read().strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StreamError(f"{path}: unreadable stream id file ({exc})") from None
    if not text.startswith(_PREFIX) or len(text) != len(_PREFIX) + 32:
        raise StreamError(f"{path}: not a varlake stream id: {text[:80]!r}")
    return text


def _checkpoint_dir(location: str | os.PathLike[str]) -> str:
    text = os.fspath(location)
    if is_object_store_uri(text):
        return parse_uri(text).location  # the canonical URI (s3a:// written s3://): Spark's S3A reads both
    path = local_path(text)
    if "://" in path or not path:
        raise StreamError(f"checkpoint location {text!r} must be a local directory or an object-store URI")
    return os.path.abspath(path)


def _trigger_kwargs(trigger: str | None) -> dict[str, Any] | None:
    """``DataStreamWriter.trigger`` arguments: ``once``, ``available-now`` (every input
    there now, in as many batches as it takes, then stop), None (the next batch as soon as
    the previous one ends) or a processing-time interval such as ``"10 seconds"``."""
    if trigger is None:
        return None
    if trigger == "once":
        return {"once": True}
    if trigger in ("available-now", "availableNow"):
        return {"availableNow": True}
    words = str(trigger).split()
    if len(words) == 2 and words[0].replace(".", "", 1).isdigit():
        return {"processingTime": trigger}
    raise StreamError(f"trigger must be one of {TRIGGERS} or an interval such as '10 seconds', not {trigger!r}")


@dataclass(frozen=True)
class _Compaction:
    path: str
    every: int | None
    storage_options: Mapping[str, str] = field(default_factory=dict)

    def after(self, batch_id: int) -> None:
        """Optimize after every ``every``-th batch; a failure is a warning (the batch stands)."""
        if not self.every or (batch_id + 1) % self.every:
            return
        try:
            from varlake.table import Table

            Table(self.path, storage_options=self.storage_options or None).optimize()
        except (VarlakeError, OSError) as exc:
            warnings.warn(f"{self.path}: auto-compaction after batch {batch_id} failed: {exc}", RuntimeWarning, stacklevel=2)


@dataclass(frozen=True)
class _AppendBatch:
    """``foreachBatch`` function of ``write_stream``: append one micro-batch, once."""

    path: str
    app_id: str
    partition_by: tuple[str, ...]
    shredding: str
    properties: Mapping[str, str] = field(default_factory=dict)
    compaction: _Compaction | None = None
    storage_options: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, batch_df: Any, batch_id: int) -> None:
        done = latest_snapshot(self.path, self.storage_options or None)
        if done is not None and (done.app_version(self.app_id) or -1) >= batch_id:
            return  # a re-run of a batch the table holds
        result = write(
            batch_df, self.path, "append", self.partition_by, self.shredding,
            app_id=self.app_id, app_version=int(batch_id), properties=dict(self.properties) or None,
            storage_options=self.storage_options or None,
        )
        if result.version is not None and self.compaction is not None:
            self.compaction.after(int(batch_id))


def write_stream(
    df: Any,
    path: str | os.PathLike[str],
    checkpoint_location: str | os.PathLike[str],
    trigger: str | None = None,
    partition_by: Sequence[str] = (),
    shredding: str = "auto",
    *,
    query_name: str | None = None,
    properties: Mapping[str, str] | None = None,
    compact_every: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> Any:
    """Start appending the streaming DataFrame ``df`` to the table at ``path``, each
    micro-batch exactly once (see the module doc); returns the ``StreamingQuery``.

    ``trigger``: None (continuous micro-batches), ``"once"``, ``"available-now"`` or an
    interval (``"10 seconds"``). ``shredding``/``partition_by``/``properties`` as for
    ``varlake.spark.write``. ``compact_every``: ``Table.optimize`` after every N-th batch.
    ``path`` and ``checkpoint_location`` may be object-store URIs reached with ``storage_options``.
    """
    if not getattr(df, "isStreaming", False):
        raise StreamError("write_stream needs a streaming DataFrame (spark.readStream...); use varlake.spark.write for a batch one")
    root = table_root(path, storage_options)
    _trigger_kwargs(trigger)
    _check_compaction(compact_every)
    options = dict(storage_options or {})
    sid = stream_id(checkpoint_location, storage_options)
    fn = _AppendBatch(
        root, sid, tuple(partition_by), shredding, dict(properties or {}),
        _Compaction(root, compact_every, options) if compact_every else None, options,
    )
    return _start(df, fn, checkpoint_location, trigger, query_name, storage_options)


def _check_compaction(every: int | None) -> None:
    if every is not None and (not isinstance(every, int) or every < 1):
        raise StreamError(f"compact_every must be a positive number of batches, not {every!r}")


def _start(
    df: Any, fn: Any, checkpoint_location: str | os.PathLike[str], trigger: str | None, name: str | None,
    storage_options: Mapping[str, str] | None = None,
) -> Any:
    checkpoint = _checkpoint_dir(checkpoint_location)
    reach(df.sparkSession, checkpoint, storage_options)  # Spark writes the offsets and commits there
    writer = df.writeStream.foreachBatch(fn).option("checkpointLocation", checkpoint)
    if name:
        writer = writer.queryName(name)
    kwargs = _trigger_kwargs(trigger)
    if kwargs is not None:
        writer = writer.trigger(**kwargs)
    return writer.start()


# --- JSON ingest as a stream ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _IngestBatch:
    """``foreachBatch`` function of ``ingest_stream``: one micro-batch of lines into the
    quarantine and the table, each commit with the batch's ``txn``."""

    options: IngestOptions
    app_id: str
    compaction: _Compaction | None = None

    def __call__(self, batch_df: Any, batch_id: int) -> None:
        batch = int(batch_id)
        done = latest_snapshot(self.options.target, self.options.storage_options or None)
        if done is not None and (done.app_version(self.app_id) or -1) >= batch:
            return  # a re-run of a batch the table holds (and so the quarantine too)
        ingest_id = f"{self.app_id}/{batch}"
        # The batch is read by two jobs (the shredding sample, then the write). Each would
        # read the source files again, and Spark counts the micro-batch's input rows
        # (``numInputRows``, ``run_to_end``'s ``rows_read``) once per read: kept, it is read once.
        lines = batch_df.persist()
        try:
            staged = stage_lines(batch_df.sparkSession, lines, self.options, ingest_id, lambda _m: None)
        finally:
            lines.unpersist()
        if staged.quarantine is not None:
            commit_write(staged.quarantine, app_id=self.app_id, app_version=batch)
        result = commit_write(staged.target, app_id=self.app_id, app_version=batch)
        if result.version is not None and self.compaction is not None:
            self.compaction.after(batch)


def ingest_stream(
    spark: Any,
    source_dir: str | os.PathLike[str],
    table: str | os.PathLike[str],
    checkpoint_location: str | os.PathLike[str],
    columns: Mapping[str, str] | None = None,
    partition_by: Sequence[str] = (),
    shredding: str = "auto",
    quarantine: str | os.PathLike[str] | None = None,
    *,
    trigger: str | None = "available-now",
    doc_column: str = DOC_COLUMN,
    multiline: bool = False,
    max_files_per_trigger: int | None = None,
    sample_rows: int = SAMPLE_ROWS,
    query_name: str | None = None,
    compact_every: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> Any:
    """Start ingesting the JSON Lines files that appear in ``source_dir`` into ``table``
    (bad lines into ``quarantine``, default ``<table>_quarantine``), each micro-batch
    exactly once; returns the ``StreamingQuery``. Arguments as for ``ingest_json``;
    ``max_files_per_trigger`` bounds a micro-batch. ``table``, ``quarantine`` and
    ``checkpoint_location`` may be object-store URIs reached with ``storage_options``."""
    from pyspark.sql import functions as F

    source = os.path.abspath(local_path(os.fspath(source_dir)))
    if not os.path.isdir(source):
        raise IngestError(f"stream source {source!r} is not a directory")
    columns = dict(columns or {})
    if doc_column in columns:
        raise IngestError(f"extracted column {doc_column!r} clashes with the document column")
    missing = [p for p in partition_by if p not in columns]
    if missing:
        raise IngestError(f"partition columns {missing} must be extracted columns (--column NAME=SPEC)")
    if max_files_per_trigger is not None and max_files_per_trigger < 1:
        raise IngestError(f"max_files_per_trigger must be positive, not {max_files_per_trigger!r}")
    _check_compaction(compact_every)
    _trigger_kwargs(trigger)
    target = table_root(table, storage_options)
    q_path = table_root(quarantine, storage_options) if quarantine else quarantine_path_for(target)
    options = IngestOptions(
        target, q_path, columns, tuple(partition_by), shredding, doc_column, multiline, "append", sample_rows,
        dict(storage_options or {}),
    )
    reader = spark.readStream.format("text")
    if multiline:
        reader = reader.option("wholetext", "true")
    if max_files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", str(max_files_per_trigger))
    lines = reader.load(hadoop_path(source)).select(F.col("_metadata.file_path").alias("_file"), F.col("value"))
    compaction = _Compaction(target, compact_every, dict(storage_options or {})) if compact_every else None
    fn = _IngestBatch(options, stream_id(checkpoint_location, storage_options), compaction)
    return _start(lines, fn, checkpoint_location, trigger, query_name, storage_options)


def run_to_end(
    query: Any, table: str | os.PathLike[str], checkpoint_location: str | os.PathLike[str],
    storage_options: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Wait for ``query`` to end (Ctrl-C stops it between batches' commits: each batch is
    committed once either way) and summarise it; a failed query raises ``StreamError``."""
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    except Exception as exc:  # the query failed: its cause is in the exception
        raise StreamError(f"the stream into {os.fspath(table)} failed: {_first_line(exc)}") from None
    progress = [_progress_row(p) for p in (query.recentProgress or [])]
    batches = [p for p in progress if p[1]]
    root = table_root(table, storage_options)
    snapshot = latest_snapshot(root, storage_options)
    sid = stream_id(checkpoint_location, storage_options)
    return {
        "table": root,
        "stream_id": sid,
        "checkpoint": _checkpoint_dir(checkpoint_location),
        "batches": len(batches),
        "rows_read": sum(p[1] for p in batches),
        "version": snapshot.version if snapshot is not None else None,
        "last_batch": snapshot.app_version(sid) if snapshot is not None else None,
    }


def _progress_row(p: Any) -> tuple[int, int]:
    """(batchId, numInputRows) of one progress report (an object or a dict)."""
    get = p.get if isinstance(p, Mapping) else (lambda k: getattr(p, k, None))
    return int(get("batchId") or 0), int(get("numInputRows") or 0)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:500] if text else type(exc).__name__
