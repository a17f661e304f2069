"""Ingest JSON Lines (or whole JSON files) into a varlake table with a quarantine.

Every input line becomes either a row of the target table -- one Variant column
(``doc``) plus any extracted columns -- or a row of the quarantine table, so
``read = written + quarantined`` always holds and is checked before anything is
committed.

How it runs on Spark:

1. The inputs (files, directories, globs; ``.gz`` and other Hadoop codecs too) are
   read with ``spark.read.text``: each line is kept as its exact bytes (Spark does not
   validate UTF-8 when reading text). Each row carries its file, the byte offset of
   its file split (``_metadata.file_block_start``) and ``monotonically_increasing_id``,
   which counts rows within a Spark partition. One small aggregate per split (line
   count, first id) turns that into an exact per-file line number:
   ``lines in earlier splits of the file + (id - first id of the split) + 1``.
2. Each line is parsed with ``try_parse_json`` after ``is_valid_utf8`` (Spark's
   parser would silently replace invalid bytes). A line is bad when either says no:
   invalid JSON, invalid UTF-8, duplicate keys, nesting deeper than 1000, a value
   over Spark's 128 MiB limit, a blank line.
3. Good lines are written with ``varlake.spark.write`` (shredded, with the table's
   stable shredding schema inferred from a sample spread over all inputs). Bad lines
   go to the quarantine Delta table (``<table>_quarantine`` unless given) with their
   file, line number, raw bytes, text and a specific reason, which a Python UDF
   computes on the executors -- for bad lines only -- with varlake's parser, whose
   errors say what is wrong and where.
4. Both tables are staged first; the counts are checked; then the quarantine and the
   target are committed, one version each.

The parsed lines are cached (memory and disk) by default so the input is read and
parsed once for the counts, the sample, the table and the quarantine.
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
from urllib.parse import unquote, urlsplit

from varlake.errors import (
    DuplicateKeyError,
    IngestError,
    JsonParseError,
    StorageFileNotFoundError,
    VariantSizeLimitError,
    VarlakeError,
)
from varlake.spark.session import spark_error_summary
from varlake.spark.writer import SAMPLE_ROWS, StagedWrite, commit_write, stage_write

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


def _local_path(uri: str) -> str:
    parts = urlsplit(uri)
    return unquote(parts.path) if parts.scheme in ("file", "") else uri


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
    except JsonParseError as exc:
        message = str(exc)
        kind = "too deep" if "deeper than" in message else "too large" if "exceeds" in message else "invalid JSON"
        return kind, message
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
        return F.try_variant_get(F.col(f"`{doc}`"), path.strip(), type_name.strip()).alias(name)
    return F.expr(spec).alias(name)


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
    cache: bool = True,
    progress: Progress | None = None,
) -> IngestResult:
    """Ingest JSON Lines files (``multiline=True``: one JSON value per file) into ``table``.

    ``columns`` maps extra column names to ``$.path::type`` (``try_variant_get``) or a
    SQL expression over the ``doc_column``; ``partition_by`` names some of them.
    """
    from pyspark import StorageLevel
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

    reader = spark.read.format("text")
    if multiline:
        reader = reader.option("wholetext", "true")
    text = reader.load([_hadoop_path(f) for f in files])
    raw = text.select(
        F.col("_metadata.file_path").alias("_file"),
        F.col("_metadata.file_block_start").alias("_block"),
        F.monotonically_increasing_id().alias("_rid"),
        F.col("value"),
    )
    utf8 = F.is_valid_utf8(F.col("value"))
    parsed = raw.select(
        "_file", "_block", "_rid", F.when(utf8, F.try_parse_json(F.col("value"))).alias("_doc"), F.col("value")
    )
    lines = parsed.select(
        "_file", "_block", "_rid", "_doc", F.when(F.col("_doc").isNull(), F.col("value")).alias("_bad")
    )
    if cache:
        lines = lines.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        say(f"reading {len(files)} file(s), {input_bytes:,} bytes")
        try:
            blocks = lines.groupBy("_file", "_block").agg(
                F.count(F.lit(1)).alias("n"), F.min("_rid").alias("first"), F.count("_bad").alias("bad")
            ).collect()
        except Exception as exc:  # unreadable input (a corrupt .gz, a vanished file): nothing written
            raise IngestError(
                f"ingest {ingest_id}: reading the input failed, nothing was written: {spark_error_summary(exc)}"
            ) from exc
        read = sum(b["n"] for b in blocks)
        bad_total = sum(b["bad"] for b in blocks)

        good = lines.where(F.col("_doc").isNotNull())
        fraction = min(1.0, 2.0 * sample_rows / max(read - bad_total, 1))
        sample = good.sample(fraction=fraction, seed=17).select(F.col("_doc").alias(doc_column))
        target_df = good.select(
            F.col("_doc").alias(doc_column), *[_column_expr(n, s, doc_column) for n, s in columns.items()]
        )
        say(f"writing {read - bad_total:,} rows to {target_path}")
        staged = stage_write(
            target_df, target_path, mode, partition_by, shredding, sample=sample, sample_rows=sample_rows
        )
        staged_q: StagedWrite | None = None
        if bad_total:
            say(f"writing {bad_total:,} bad lines to {quarantine_path}")
            bad_df = _quarantine_rows(spark, lines, blocks, ingest_id)
            staged_q = stage_write(bad_df, quarantine_path, "append", (), "off")
    finally:
        if cache:
            lines.unpersist()

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
            offsets.append((file, b["_block"], b["first"], before, _local_path(file)))
            before += b["n"]
    offsets_df = spark.createDataFrame(
        offsets, "_file string, _block bigint, _first bigint, _before bigint, _path string"
    )
    reason_type = StructType([StructField("kind", StringType()), StructField("reason", StringType())])
    reason = F.udf(lambda raw, ok: bad_line_reason(raw, ok), reason_type)
    raw = F.col("_bad").cast("binary")
    bad = lines.where(F.col("_doc").isNull()).join(F.broadcast(offsets_df), ["_file", "_block"])
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

