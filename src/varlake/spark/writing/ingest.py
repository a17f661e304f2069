"""Ingest JSON Lines (or whole JSON files) into a varlake table with a quarantine.

Every input line becomes either a row of the target table -- one Variant column
(``doc``) plus any extracted columns -- or a row of the quarantine table, so
``read = written + quarantined`` always holds and is checked before anything is
committed.

How it runs on Spark -- one pass over the input when every line is good:

1. *Sample.* With ``shredding="auto"`` the driver reads a few thousand lines straight
   from the files, spread over files and byte ranges (``varlake.spark.writing.sampling``), and
   Spark parses them: that sample decides (or evolves) the table's shredding schema
   before anything is written. Sampling with Spark would scan the whole input again.
2. *Parse and write.* The inputs (files, directories, globs; ``.gz`` and other Hadoop
   codecs too) are read with ``spark.read.text`` -- each line keeps its exact bytes --
   and each line is parsed once with ``try_parse_json`` after ``is_valid_utf8`` (Spark's
   parser would silently replace invalid bytes). A line is bad when either says no:
   invalid JSON, invalid UTF-8, duplicate keys, nesting deeper than 1000, a value over
   Spark's 128 MiB limit, a blank line. Good lines are written with
   ``varlake.spark.stage_write`` (shredded with the table's stable schema). The same
   job counts the lines read and the bad ones, and names the files holding bad lines,
   through a Spark ``Observation`` (aggregates computed alongside the write).
3. *Quarantine* (only when there were bad lines, and only over the files that hold
   them). The lines of those files are read again with their file, the byte offset of
   their file split (``_metadata.file_block_start``) and ``monotonically_increasing_id``.
   One small aggregate per split (line count, first id; it reads the text without parsing
   it) gives an exact per-file line number: ``lines in earlier splits of the file
   + (id - first id of the split) + 1``. Bad lines go to the quarantine Delta table
   (``<table>_quarantine`` unless given) with file, line number, raw bytes, text and a
   specific reason, which a Python UDF computes on the executors -- for bad lines only
   -- with varlake's parser, whose errors say what is wrong and where. The two jobs of
   this pass scan the same files with the same plan, so Spark splits and numbers the
   rows identically in both (file splits and their packing into partitions are a
   deterministic function of the listing); a file that changed in between would change
   the counts, which are checked.
4. *Commit.* Both tables are staged first; ``read = written + quarantined`` is checked
   (read from the Observation, written from the files' footers, quarantined from the
   quarantine files); then the quarantine and the target are committed, one version
   each. If anything fails before that, nothing is committed.

*Incremental* (the default): the ingest of the same inputs into the same table is one
``txn`` appId (``varlake.write.staging.ingest_log``). A run lists the input files, drops those the
table's record says were taken, and ingests the rest as the next *batch*: the table commit
holds the rows, ``txn(appId, batch)`` and the updated record (files taken, and the batch's
staged quarantine files) in ONE version; the quarantine is committed after it with the
same ``txn``, and every run first completes the quarantine commit of the last batch. So a
run killed before the table commit leaves nothing recorded (the files are taken again),
one killed after it leaves the files taken and their bad lines still to be committed --
once -- by the next run. A taken file that changed later (size or mtime) is reported, not
ingested again. ``incremental=False`` ingests every input file as before.
"""

from __future__ import annotations

import datetime as _dt
import glob as _glob
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote

from varlake.errors import (
    DuplicateKeyError,
    IngestError,
    JsonLimitError,
    JsonParseError,
    StorageFileNotFoundError,
    VariantSizeLimitError,
    VarlakeError,
)
from varlake.semantics.types import backquote
from varlake.spark.writing.sampling import sample_lines, spark_line_reader
from varlake.spark.uris import local_path
from varlake.spark.writing.writer import StagedWrite, commit_write, stage_write
from varlake.write import SAMPLE_ROWS
from varlake.table import locate
from varlake.write.staging.ingest_log import IngestRecord, QuarantineBatch, ingest_app_id, plan, source_files
from varlake.write.staging.ingest_log import complete_quarantine as commit_quarantine

__all__ = ["IngestError", "IngestResult", "bad_line_reason", "hadoop_path", "ingest_json", "quarantine_path_for", "resolve_inputs"]

DOC_COLUMN = "doc"
QUARANTINE_SUFFIX = "_quarantine"
_GLOB_CHARS = set("*?[")
_HADOOP_GLOB_CHARS = "\\*?[]{}"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class IngestResult:
    """What an ingest did; ``read == written + quarantined``. An incremental ingest also
    gives the ``batch`` it recorded (its ``txn`` version) and the taken files that changed
    since they were taken (not ingested again)."""

    table: str
    quarantine: str | None
    ingest_id: str
    files: int
    input_bytes: int
    read: int
    written: int
    quarantined: int
    reasons: Mapping[str, int]
    table_version: int | None
    quarantine_version: int | None
    layout: Mapping[str, str | None]
    extracted_nulls: Mapping[str, int | None] = field(default_factory=dict)
    note: str | None = None
    seconds: float = 0.0
    batch: int | None = None
    changed_files: tuple[str, ...] = ()

    @property
    def consistent(self) -> bool:
        return self.read == self.written + self.quarantined


# --- inputs ----------------------------------------------------------------------------------------------


def _walk(directory: str) -> list[str]:
    out = []
    for base, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        out.extend(os.path.join(base, n) for n in sorted(names) if not n.startswith(("_", ".")))
    return out


def resolve_inputs(inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str]:
    """Absolute paths of the input files: files as given, directories walked (hidden
    names skipped, as Spark does), globs expanded. Anything that matches nothing fails."""
    items = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    if not items:
        raise IngestError("no input given")
    files: list[str] = []
    for item in items:
        text = os.fspath(item)
        if _GLOB_CHARS & set(text) and not os.path.exists(text):
            matches = sorted(_glob.glob(text, recursive=True))
            if not matches:
                raise StorageFileNotFoundError(f"no input file matches {text!r}")
        else:
            matches = [text]
        for m in matches:
            if os.path.isdir(m):
                files.extend(_walk(m))
            elif os.path.isfile(m):
                files.append(m)
            else:
                raise StorageFileNotFoundError(f"input {m!r} does not exist")
    unique = list(dict.fromkeys(os.path.abspath(f) for f in files))
    if not unique:
        raise StorageFileNotFoundError(f"no input files in {[os.fspath(i) for i in items]}")
    return unique


def hadoop_path(path: str) -> str:
    """A local path with Hadoop's glob characters escaped (Spark globs every path)."""
    return "".join("\\" + c if c in _HADOOP_GLOB_CHARS else c for c in path)


# --- reasons (runs on executors, bad lines only) ------------------------------------------------------------


def bad_line_reason(raw: bytes | None, spark_utf8_ok: bool | None = True) -> tuple[str, str]:
    """``(kind, reason)`` for a line Spark would not parse, from varlake's parser."""
    from varlake.variant import parse_json

    data = bytes(raw or b"")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return "invalid UTF-8", f"invalid UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start} ({exc.reason})"
    if spark_utf8_ok is False:
        return "invalid UTF-8", "invalid UTF-8 (rejected by Spark's is_valid_utf8)"
    if not text.strip():
        return "blank line", "blank line (no JSON value)"
    try:
        parse_json(text)
    except DuplicateKeyError as exc:
        return "duplicate key", str(exc)
    except VariantSizeLimitError as exc:
        return "too large", str(exc)
    except JsonLimitError as exc:
        return ("too deep" if exc.limit == "depth" else "too large"), str(exc)
    except JsonParseError as exc:
        return "invalid JSON", str(exc)
    except VarlakeError as exc:
        return "invalid JSON", str(exc)
    except RecursionError:
        return "too deep", "JSON nested too deeply for the parser"
    return "rejected by Spark", "Spark's parse_json rejected this line (varlake's parser accepts it)"


# --- the ingest -------------------------------------------------------------------------------------------------


def _column_expr(name: str, spec: str, doc: str) -> Any:
    """``$.path::type`` -> ``try_variant_get(doc, path, type)``; anything else is SQL over ``doc``."""
    from pyspark.sql import functions as F

    spec = spec.strip()
    if spec.startswith("$"):
        path, sep, type_name = spec.rpartition("::")
        if not sep:
            path, type_name = spec, "variant"
        return F.try_variant_get(F.col(backquote(doc)), path.strip(), type_name.strip()).alias(name)
    return F.expr(spec).alias(name)


def _parsed_doc() -> Any:
    """The document of a line (column ``value``) as a Variant, NULL for every bad line:
    invalid UTF-8 (Spark's parser would silently replace those bytes) or anything
    ``try_parse_json`` rejects. The write and the quarantine pass must agree on it."""
    from pyspark.sql import functions as F

    return F.when(F.is_valid_utf8(F.col("value")), F.try_parse_json(F.col("value")))


def _target_columns(doc_column: str, columns: Mapping[str, str]) -> list[Any]:
    """The target table's columns from a parsed ``_doc``: the document and the extracted ones."""
    from pyspark.sql import functions as F

    return [F.col("_doc").alias(doc_column), *[_column_expr(n, s, doc_column) for n, s in columns.items()]]


def ingest_json(
    spark: Any,
    input: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    table: str | os.PathLike[str],
    columns: Mapping[str, str] | None = None,
    partition_by: Sequence[str] = (),
    shredding: str = "auto",
    quarantine: str | os.PathLike[str] | None = None,
    *,
    doc_column: str = DOC_COLUMN,
    multiline: bool = False,
    mode: str = "append",
    sample_rows: int = SAMPLE_ROWS,
    progress: Progress | None = None,
    incremental: bool = True,
    storage_options: Mapping[str, str] | None = None,
    properties: Mapping[str, str] | None = None,
) -> IngestResult:
    """Ingest JSON Lines files (``multiline=True``: one JSON value per file) into ``table``.

    ``columns`` maps extra column names to ``$.path::type`` (``try_variant_get``) or a
    SQL expression over the ``doc_column``; ``partition_by`` names some of them.

    ``incremental`` (the default): only files this ingest of the same inputs into the same
    table has not taken yet are read, and the files taken are recorded in the table's
    commit (``varlake.write.staging.ingest_log``), so running it again over a growing directory
    ingests every file exactly once, even after a run was killed. A taken file that changed
    since (other size or mtime) is not ingested again (``IngestResult.changed_files``).
    ``mode="overwrite"`` takes every input file again and records only those.
    ``incremental=False`` reads every input file and records nothing.
    ``table`` (and ``quarantine``) may be object-store URIs (``s3://bkt/t``) reached with
    ``storage_options``; the inputs are local files. ``properties`` are the table
    properties of the table and the quarantine table when this ingest creates them (e.g.
    ``{"varlake.compatibility": "deltalake"}``, ``delta.protocol.compatibility``).
    """
    started = time.perf_counter()
    say = progress or (lambda _msg: None)
    columns = dict(columns or {})
    if doc_column in columns:
        raise IngestError(f"extracted column {doc_column!r} clashes with the document column")
    missing = [p for p in partition_by if p not in columns]
    if missing:
        raise IngestError(f"partition columns {missing} must be extracted columns (--column NAME=SPEC)")
    files = resolve_inputs(input)
    target_path = table_root(table, storage_options)
    quarantine_path = table_root(quarantine, storage_options) if quarantine else quarantine_path_for(target_path)
    options = IngestOptions(
        target_path, quarantine_path, columns, tuple(partition_by), shredding, doc_column, multiline, mode, sample_rows,
        dict(storage_options or {}), dict(properties or {}),
    )
    if not incremental:
        ingest_id = str(uuid.uuid4())
        staged = _stage_files(spark, files, options, ingest_id, say)
        q_version = commit_write(staged.quarantine).version if staged.quarantine is not None else None
        return _commit_and_report(staged, options, ingest_id, files, started, say, q_version=q_version)

    sources = [os.fspath(i) for i in ([input] if isinstance(input, (str, os.PathLike)) else list(input))]
    app_id = ingest_app_id(sources, target_path)
    record = IngestRecord.from_snapshot(latest_snapshot(target_path, storage_options), app_id, sources)
    recovered = None
    if record.quarantine is not None:  # a killed run's table commit stands; finish its quarantine
        recovered = complete_quarantine(record, storage_options)
        if recovered is not None:
            say(f"committed the quarantine of batch {record.batch}, left by an interrupted run")
    candidates = source_files(files)
    new, changed = (candidates, []) if mode == "overwrite" else plan(record, candidates)
    if changed:
        say(f"{len(changed)} file(s) changed since they were ingested; they are not ingested again")
    if not new:
        return IngestResult(
            table=target_path, quarantine=None, ingest_id=app_id, files=0, input_bytes=0, read=0, written=0,
            quarantined=0, reasons={}, table_version=None, quarantine_version=None, layout={},
            note=f"no new input files ({len(record.files):,} taken before)"
            + (f"; committed the quarantine of batch {record.batch} left by an interrupted run" if recovered is not None else ""),
            seconds=time.perf_counter() - started,
            batch=record.batch, changed_files=tuple(f.path for f in changed),
        )
    paths = [f.path for f in new]
    ingest_id = f"{app_id}/{record.batch + 1}"
    staged = _stage_files(spark, paths, options, ingest_id, say)
    q_batch = None
    if staged.quarantine is not None:
        q = staged.quarantine
        q_batch = QuarantineBatch(q.root, q.adds, q.schema.to_schema_string(), dict(q.create_properties))
        if q.metadata is not None or q.snapshot is not None and q.snapshot.metadata.partition_columns:
            raise IngestError(f"{quarantine_path}: the quarantine table must be unpartitioned and unshredded")
    after = record.taking(new, q_batch, replace=mode == "overwrite")
    target = replace(staged.target, domains=after.to_domains())
    result = _commit_and_report(
        replace(staged, target=target), options, ingest_id, paths, started, say,
        app_id=app_id, app_version=after.batch,
    )
    note = result.note
    q_version = None
    if result.table_version is None:
        note = f"a concurrent run of this ingest committed batch {after.batch} first; nothing was committed"
        return replace(result, note=note, read=0, written=0, quarantined=0, quarantine=None, reasons={}, batch=record.batch)
    try:  # after the commit point: a failure is reported, and the next run completes it
        q_version = complete_quarantine(after, storage_options)
    except (VarlakeError, OSError) as exc:
        note = f"{note + '; ' if note else ''}the quarantine commit is pending ({exc}); the next ingest completes it"
    return replace(
        result, quarantine_version=q_version, note=note, batch=after.batch,
        changed_files=tuple(f.path for f in changed),
    )


@dataclass(frozen=True)
class IngestOptions:
    """Where and how an ingest writes (one batch ingest, or every micro-batch of a stream)."""

    target: str
    quarantine: str
    columns: Mapping[str, str]
    partition_by: tuple[str, ...]
    shredding: str
    doc_column: str
    multiline: bool
    mode: str
    sample_rows: int
    storage_options: Mapping[str, str] = field(default_factory=dict)  # both tables' (object stores)
    properties: Mapping[str, str] = field(default_factory=dict)  # both tables', when this ingest creates them


@dataclass(frozen=True)
class StagedIngest:
    """Both tables' files of one ingest, staged and counted (``read = written + quarantined``)."""

    target: StagedWrite
    quarantine: StagedWrite | None
    read: int
    input_bytes: int


def table_root(path: str | os.PathLike[str], storage_options: Mapping[str, str] | None = None) -> str:
    """The root of the table at ``path`` as varlake names it: an absolute local path, or the
    canonical URI of an object store (``s3a://`` written ``s3://``)."""
    return locate(path, storage_options=storage_options).root


def latest_snapshot(path: str, storage_options: Mapping[str, str] | None = None) -> Any:
    """The latest snapshot of the table at ``path``, None when there is no table yet."""
    return locate(path, storage_options=storage_options).latest_snapshot()


def complete_quarantine(record: IngestRecord, storage_options: Mapping[str, str] | None = None) -> int | None:
    """Commit the quarantine files ``record`` holds, once, into the quarantine table on its
    storage (``varlake.table.locate``; see ``write.staging.ingest_log.complete_quarantine``)."""
    q = record.quarantine
    return commit_quarantine(record, locate(q.root, storage_options=storage_options).storage) if q is not None else None


def _stage_files(spark: Any, files: Sequence[str], options: IngestOptions, ingest_id: str, say: Progress) -> StagedIngest:
    """Sample, read and stage the lines of ``files`` into both tables (nothing committed)."""
    from pyspark.sql import functions as F

    sample = None
    if options.shredding == "auto":
        say(f"sampling {len(files)} file(s) for the shredding schema")
        sample = _sample_frame(spark, files, options.sample_rows, options.multiline, options.doc_column, options.columns)
    input_bytes = sum(os.path.getsize(f) for f in files)
    say(f"parsing and writing {len(files)} file(s), {input_bytes:,} bytes, to {options.target}")
    text = _read_text(spark, files, options.multiline).select(F.col("_metadata.file_path").alias("_file"), F.col("value"))
    return stage_lines(spark, text, options, ingest_id, say, sample=sample, input_bytes=input_bytes)


def stage_lines(
    spark: Any, text: Any, options: IngestOptions, ingest_id: str, say: Progress, *, sample: Any = None, input_bytes: int = 0,
) -> StagedIngest:
    """Stage ``text`` (columns ``_file``, the file's URI, and ``value``, one line) into both tables.

    The one pass: parse every line once, count read and bad lines on the way (an
    Observation: its counters ride along with the write job), write the good ones; then
    quarantine the bad lines of the files that hold them (read again, with line numbers)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    target_path, quarantine_path = options.target, options.quarantine
    target_existed = os.path.exists(target_path) if "://" not in target_path else True  # objects: nothing to tidy
    observation = Observation(f"varlake_ingest_{uuid.uuid4().hex}")
    parsed = text.select(F.col("_file"), _parsed_doc().alias("_doc"))
    observed = parsed.observe(
        observation,
        F.count(F.lit(1)).alias("read"),
        F.count_if(F.col("_doc").isNull()).alias("bad"),
        F.collect_set(F.when(F.col("_doc").isNull(), F.col("_file"))).alias("bad_files"),
    )
    good = observed.where(F.col("_doc").isNotNull()).select(*_target_columns(options.doc_column, options.columns))
    try:
        staged = stage_write(
            good, target_path, options.mode, options.partition_by, options.shredding, sample=sample, sample_rows=options.sample_rows,
            storage_options=options.storage_options or None, properties=options.properties or None,
        )
    except VarlakeError as exc:
        if not target_existed:
            _remove_new_table_dir(target_path)
        raise IngestError(f"ingest {ingest_id}: reading or writing the input failed, nothing was written: {exc}") from exc
    metrics = _observed(observation, ingest_id)
    read, bad_total = int(metrics["read"]), int(metrics["bad"])
    bad_files = sorted(metrics["bad_files"] or [])

    staged_q: StagedWrite | None = None
    if bad_total:
        say(f"quarantining {bad_total:,} bad lines from {len(bad_files)} file(s) to {quarantine_path}")
        local = [local_path(f) for f in bad_files]
        lines = _line_frame(spark, local, options.multiline)
        blocks = lines.groupBy("_file", "_block").agg(F.count(F.lit(1)).alias("n"), F.min("_rid").alias("first")).collect()
        if sum(b["n"] for b in blocks) > read:
            raise IngestError(f"ingest {ingest_id}: the files with bad lines grew while ingesting; nothing was committed")
        staged_q = stage_write(
            _quarantine_rows(spark, lines, blocks, ingest_id), quarantine_path, "append", (), "off",
            storage_options=options.storage_options or None, properties=options.properties or None,
        )

    quarantined = staged_q.num_rows if staged_q is not None else 0
    if read != staged.num_rows + quarantined or quarantined != bad_total:
        raise IngestError(
            f"ingest {ingest_id}: counts do not add up (read {read:,} lines, wrote {staged.num_rows:,} rows and "
            f"{quarantined:,} quarantined of {bad_total:,} bad); nothing was committed -- did the input change?"
        )
    return StagedIngest(staged, staged_q, read, input_bytes)


def _commit_and_report(
    staged: StagedIngest, options: IngestOptions, ingest_id: str, files: Sequence[str], started: float, say: Progress,
    *, q_version: int | None = None, app_id: str | None = None, app_version: int | None = None,
) -> IngestResult:
    """Commit the target table (its quarantine, if any, is the caller's) and describe the ingest."""
    target, quarantined = staged.target, (staged.quarantine.num_rows if staged.quarantine is not None else 0)
    reasons = _reason_counts(staged.quarantine) if staged.quarantine is not None else {}
    say(f"committing {target.num_rows:,} rows")
    try:
        result = commit_write(target, app_id=app_id, app_version=app_version)
    except VarlakeError as exc:
        where = (
            f"; its quarantined lines are in {options.quarantine} with ingest_id {ingest_id!r}" if q_version is not None else ""
        )
        raise IngestError(f"ingest {ingest_id}: the table commit failed ({exc}){where}") from exc
    return IngestResult(
        table=options.target,
        quarantine=options.quarantine if staged.quarantine is not None else None,
        ingest_id=ingest_id,
        files=len(files),
        input_bytes=staged.input_bytes,
        read=staged.read,
        written=target.num_rows,
        quarantined=quarantined,
        reasons=reasons,
        table_version=result.version,
        quarantine_version=q_version,
        layout=result.layout,
        extracted_nulls=_extracted_nulls(target, list(options.columns)),
        note=result.note,
        seconds=time.perf_counter() - started,
    )


def _read_text(spark: Any, files: Sequence[str], multiline: bool) -> Any:
    reader = spark.read.format("text")
    if multiline:
        reader = reader.option("wholetext", "true")
    return reader.load([hadoop_path(f) for f in files])


def _sample_frame(
    spark: Any, files: Sequence[str], rows: int, multiline: bool, doc_column: str, columns: Mapping[str, str]
) -> Any:
    """The target columns of about ``rows`` lines sampled on the driver (see ``sampling``)."""
    from pyspark.sql import functions as F

    reader = spark_line_reader(spark, multiline, hadoop_path)
    lines = sample_lines(files, rows, whole_files=multiline, spark_reader=reader)
    raw = spark.createDataFrame([(line,) for line in lines], "raw binary").select(F.col("raw").cast("string").alias("value"))
    return raw.select(_parsed_doc().alias("_doc")).where(F.col("_doc").isNotNull()).select(
        *_target_columns(doc_column, columns)
    )


def _observed(observation: Any, ingest_id: str, timeout: float = 120.0) -> dict[str, Any]:
    """The counters the write job gathered. Spark fills them in when the job's query
    finishes; should they never come (no proof of the counts), nothing is committed --
    and the ingest does not wait forever, as ``Observation.get`` alone would."""
    deadline = time.monotonic() + timeout
    try:
        jo = getattr(observation, "_jo", None)  # None on Spark Connect: the metrics came with the job's answer
        future = jo.future() if jo is not None else None
        while future is not None and not future.isCompleted():
            if time.monotonic() > deadline:
                raise TimeoutError(f"no line counts after {timeout:.0f}s")
            time.sleep(0.01)
        metrics = dict(observation.get)
    except Exception as exc:  # no metrics means no proof of the counts: commit nothing
        raise IngestError(f"ingest {ingest_id}: the line counters of the Spark job are missing ({exc}); nothing was committed") from exc
    if not {"read", "bad", "bad_files"} <= set(metrics):
        raise IngestError(f"ingest {ingest_id}: the Spark job returned no line counts; nothing was committed")
    return metrics


def _line_frame(spark: Any, files: Sequence[str], multiline: bool) -> Any:
    """Lines of ``files`` with what locates them: file, split start, a row id, and the raw
    text of bad lines (NULL for good ones, decided exactly as in the write)."""
    from pyspark.sql import functions as F

    text = _read_text(spark, files, multiline)
    doc = _parsed_doc()
    return text.select(
        F.col("_metadata.file_path").alias("_file"),
        F.col("_metadata.file_block_start").alias("_block"),
        F.monotonically_increasing_id().alias("_rid"),
        F.when(doc.isNull(), F.col("value")).alias("_bad"),
    )


def _remove_new_table_dir(path: str) -> None:
    """After a failed first write: the directory this ingest created, unless a table appeared."""
    import shutil

    if not os.path.isdir(os.path.join(path, "_delta_log")):
        shutil.rmtree(path, ignore_errors=True)


def _quarantine_rows(spark: Any, lines: Any, blocks: list[Any], ingest_id: str) -> Any:
    """Bad lines with file, exact line number, reason, text and raw bytes."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    offsets = []
    by_file: dict[str, list[Any]] = {}
    for b in blocks:
        by_file.setdefault(b["_file"], []).append(b)
    for file, parts in by_file.items():
        before = 0
        for b in sorted(parts, key=lambda r: r["_block"]):
            offsets.append((file, b["_block"], b["first"], before, local_path(file)))
            before += b["n"]
    offsets_df = spark.createDataFrame(
        offsets, "_file string, _block bigint, _first bigint, _before bigint, _path string"
    )
    reason_type = StructType([StructField("kind", StringType()), StructField("reason", StringType())])
    reason = F.udf(lambda raw, ok: bad_line_reason(raw, ok), reason_type)
    raw = F.col("_bad").cast("binary")
    bad = lines.where(F.col("_bad").isNotNull()).join(F.broadcast(offsets_df), ["_file", "_block"])
    why = reason(raw, F.is_valid_utf8(F.col("_bad")))
    now = _dt.datetime.now(_dt.timezone.utc)
    return bad.select(
        F.col("_path").alias("file"),
        (F.col("_before") + F.col("_rid") - F.col("_first") + F.lit(1)).alias("line"),
        why.getField("kind").alias("kind"),
        why.getField("reason").alias("reason"),
        F.make_valid_utf8(F.col("_bad")).alias("text"),
        raw.alias("raw"),
        F.lit(ingest_id).alias("ingest_id"),
        F.lit(now).cast("timestamp").alias("ingested_at"),
    )


def _reason_counts(staged: StagedWrite) -> dict[str, int]:
    """Bad lines per kind, read back from the staged quarantine files (small)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    counts: dict[str, int] = {}
    for add in staged.adds:
        source = locate(staged.path, staged.storage).storage.open_read(f"{staged.path}/{unquote(add.path)}")
        with source:
            column = pq.read_table(source, columns=["kind"]).column("kind")
        for row in pc.value_counts(column).to_pylist():
            counts[row["values"]] = counts.get(row["values"], 0) + row["counts"]
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _extracted_nulls(staged: StagedWrite, names: list[str]) -> dict[str, int | None]:
    """Rows whose extracted column came out NULL (path missing or cast failed), from the stats."""
    out: dict[str, int | None] = {}
    for name in names:
        total: int | None = 0
        for add in staged.adds:
            if name in add.partition_values:
                nulls = (add.num_records or 0) if add.partition_values[name] is None else 0
            else:
                nulls = add.parsed_stats.get("nullCount", {}).get(name)
            if not isinstance(nulls, int) or total is None:
                total = None
                continue
            total += nulls
        out[name] = total
    return out


def quarantine_path_for(table: str | os.PathLike[str]) -> str:
    """Where the quarantine of ``table`` lives by default: beside it (``<table>_quarantine``)."""
    text = os.fspath(table)
    return (text if "://" in text else os.path.abspath(text)).rstrip("/") + QUARANTINE_SUFFIX

