"""Ingest JSON Lines (or whole JSON files) into a varlake table with a quarantine.

Every input line becomes either a row of the target table -- one Variant column
(``doc``) plus any extracted columns -- or a row of the quarantine table, so
``read = written + quarantined`` always holds and is checked before anything is
committed.

How it runs on Spark -- one pass over the input when every line is good:

1. *Sample.* With ``shredding="auto"`` the driver reads a few thousand lines straight
   from the files, spread over files and byte ranges (``varlake.spark.sampling``), and
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
"""

from __future__ import annotations

import datetime as _dt
import glob as _glob
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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
from varlake.spark.sampling import sample_lines, spark_line_reader
from varlake.spark.uris import local_path
from varlake.spark.writer import StagedWrite, commit_write, stage_write
from varlake.write import SAMPLE_ROWS

__all__ = ["IngestError", "IngestResult", "bad_line_reason", "ingest_json", "quarantine_path_for", "resolve_inputs"]

DOC_COLUMN = "doc"
QUARANTINE_SUFFIX = "_quarantine"
_GLOB_CHARS = set("*?[")
_HADOOP_GLOB_CHARS = "\\*?[]{}"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class IngestResult:
    """What an ingest did; ``read == written + quarantined``."""

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


def _hadoop_path(path: str) -> str:
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
) -> IngestResult:
    """Ingest JSON Lines files (``multiline=True``: one JSON value per file) into ``table``.

    ``columns`` maps extra column names to ``$.path::type`` (``try_variant_get``) or a
    SQL expression over the ``doc_column``; ``partition_by`` names some of them.
    """
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    started = time.perf_counter()
    say = progress or (lambda _msg: None)
    columns = dict(columns or {})
    if doc_column in columns:
        raise IngestError(f"extracted column {doc_column!r} clashes with the document column")
    missing = [p for p in partition_by if p not in columns]
    if missing:
        raise IngestError(f"partition columns {missing} must be extracted columns (--column NAME=SPEC)")
    files = resolve_inputs(input)
    input_bytes = sum(os.path.getsize(f) for f in files)
    target_path = os.path.abspath(os.fspath(table))
    quarantine_path = os.path.abspath(os.fspath(quarantine)) if quarantine else quarantine_path_for(target_path)
    ingest_id = str(uuid.uuid4())
    target_existed = os.path.exists(target_path)

    sample = None
    if shredding == "auto":
        say(f"sampling {len(files)} file(s) for the shredding schema")
        sample = _sample_frame(spark, files, sample_rows, multiline, doc_column, columns)

    # The one pass: parse every line once, count read and bad lines on the way (an
    # Observation: its counters ride along with the write job), write the good ones.
    observation = Observation(f"varlake_ingest_{ingest_id.replace('-', '_')}")
    text = _read_text(spark, files, multiline)
    parsed = text.select(F.col("_metadata.file_path").alias("_file"), _parsed_doc().alias("_doc"))
    observed = parsed.observe(
        observation,
        F.count(F.lit(1)).alias("read"),
        F.count_if(F.col("_doc").isNull()).alias("bad"),
        F.collect_set(F.when(F.col("_doc").isNull(), F.col("_file"))).alias("bad_files"),
    )
    good = observed.where(F.col("_doc").isNotNull()).select(*_target_columns(doc_column, columns))
    say(f"parsing and writing {len(files)} file(s), {input_bytes:,} bytes, to {target_path}")
    try:
        staged = stage_write(good, target_path, mode, partition_by, shredding, sample=sample, sample_rows=sample_rows)
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
        lines = _line_frame(spark, local, multiline)
        blocks = lines.groupBy("_file", "_block").agg(F.count(F.lit(1)).alias("n"), F.min("_rid").alias("first")).collect()
        if sum(b["n"] for b in blocks) > read:
            raise IngestError(f"ingest {ingest_id}: the files with bad lines grew while ingesting; nothing was committed")
        staged_q = stage_write(_quarantine_rows(spark, lines, blocks, ingest_id), quarantine_path, "append", (), "off")

    quarantined = staged_q.num_rows if staged_q is not None else 0
    if read != staged.num_rows + quarantined or quarantined != bad_total:
        raise IngestError(
            f"ingest {ingest_id}: counts do not add up (read {read:,} lines, wrote {staged.num_rows:,} rows and "
            f"{quarantined:,} quarantined of {bad_total:,} bad); nothing was committed -- did the input change?"
        )
    reasons: dict[str, int] = {}
    q_version = None
    if staged_q is not None:
        reasons = _reason_counts(staged_q)
        say(f"committing {quarantined:,} quarantined lines")
        q_version = commit_write(staged_q).version
    say(f"committing {staged.num_rows:,} rows")
    try:
        result = commit_write(staged)
    except VarlakeError as exc:
        raise IngestError(
            f"ingest {ingest_id}: the table commit failed ({exc}); its quarantined lines are in "
            f"{quarantine_path} with ingest_id {ingest_id!r}"
        ) from exc
    return IngestResult(
        table=target_path,
        quarantine=quarantine_path if staged_q is not None else None,
        ingest_id=ingest_id,
        files=len(files),
        input_bytes=input_bytes,
        read=read,
        written=staged.num_rows,
        quarantined=quarantined,
        reasons=reasons,
        table_version=result.version,
        quarantine_version=q_version,
        layout=result.layout,
        extracted_nulls=_extracted_nulls(staged, list(columns)),
        note=result.note,
        seconds=time.perf_counter() - started,
    )


def _read_text(spark: Any, files: Sequence[str], multiline: bool) -> Any:
    reader = spark.read.format("text")
    if multiline:
        reader = reader.option("wholetext", "true")
    return reader.load([_hadoop_path(f) for f in files])


def _sample_frame(
    spark: Any, files: Sequence[str], rows: int, multiline: bool, doc_column: str, columns: Mapping[str, str]
) -> Any:
    """The target columns of about ``rows`` lines sampled on the driver (see ``sampling``)."""
    from pyspark.sql import functions as F

    reader = spark_line_reader(spark, multiline, _hadoop_path)
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
        future = observation._jo.future()
        while not future.isCompleted():
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
        column = pq.read_table(os.path.join(staged.path, unquote(add.path)), columns=["kind"]).column("kind")
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
    """Where the quarantine of ``table`` lives by default."""
    return os.path.abspath(os.fspath(table)).rstrip("/") + QUARANTINE_SUFFIX

