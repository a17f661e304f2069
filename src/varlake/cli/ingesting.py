"""``varlake ingest``: JSON into a table with a Variant column, in one batch or as a stream."""

from __future__ import annotations

from typing import Any, Optional

import typer

from varlake.cli.base import CONF, FORMAT, MASTER, REMOTE, STORAGE_OPTION, VERBOSE, Format, app, errors, pairs, storage_options
from varlake.cli.output import output_for
from varlake.cli.session import progress, spark_session
from varlake.delta.constants import PROP_COMPATIBILITY

__all__ = ["ingest", "ingest_summary"]


@app.command()
def ingest(
    paths: list[str] = typer.Argument(..., metavar="INPUT... TABLE", help="JSON Lines files, directories or globs, then the table path."),
    column: list[str] = typer.Option([], "--column", "-c", help="Extracted column NAME=$.path::type or NAME=<SQL over doc> (repeatable)."),
    partition_by: list[str] = typer.Option([], "--partition-by", "-p", help="Partition by these extracted columns."),
    shredding: str = typer.Option("auto", "--shredding", help="auto, off, or a shredding schema as Spark DDL."),
    compatibility: Optional[str] = typer.Option(
        None, "--compatibility",
        help="A new table (and quarantine) other readers read: 'deltalake' (deltalake, Polars: no deletion vectors, no shredding).",
    ),
    quarantine: Optional[str] = typer.Option(None, "--quarantine", help="Quarantine table path (default TABLE_quarantine)."),
    doc_column: str = typer.Option("doc", "--doc-column", help="Name of the Variant column."),
    multiline: bool = typer.Option(False, "--multiline", help="Each file holds one JSON value (not JSON Lines)."),
    mode: str = typer.Option("append", "--mode", help="append, overwrite or error."),
    incremental: bool = typer.Option(True, "--incremental/--all", help="Only files this ingest has not taken yet (recorded in the table), or every input file."),
    stream: bool = typer.Option(False, "--stream", help="Structured Streaming over the INPUT directory (needs --checkpoint)."),
    checkpoint: Optional[str] = typer.Option(None, "--checkpoint", help="Streaming checkpoint directory (with --stream)."),
    trigger: str = typer.Option("available-now", "--trigger", help="With --stream: once, available-now, or an interval such as '10 seconds'."),
    max_files_per_trigger: Optional[int] = typer.Option(None, "--max-files-per-trigger", help="With --stream: at most this many files per micro-batch."),
    compact_every: Optional[int] = typer.Option(None, "--compact-every", help="With --stream: optimize the table after every N micro-batches."),
    master: Optional[str] = MASTER,
    remote: Optional[str] = REMOTE,
    conf: list[str] = CONF,
    verbose: bool = VERBOSE,
    storage_option: list[str] = STORAGE_OPTION,
    fmt: Format = FORMAT,
) -> None:
    """Ingest JSON into a table with a Variant column; bad lines go to a quarantine table.

    Run again over a growing directory, it ingests only the files it has not taken yet
    (exactly once, even after a killed run); --stream runs it as a Structured Streaming query."""
    from varlake.spark.writing.ingest import ingest_json

    out = output_for(fmt)
    with errors():
        if len(paths) < 2:
            raise ValueError("give at least one INPUT and the TABLE path")
        *inputs, table = paths
        columns = pairs(column, "--column")
        options = storage_options(storage_option)
        properties = {PROP_COMPATIBILITY: compatibility} if compatibility else None
        if properties and stream:
            raise ValueError("--compatibility creates a table in a batch ingest; not with --stream")
        if stream:
            from varlake.spark.writing.stream import ingest_stream, run_to_end

            if len(inputs) != 1 or not checkpoint:
                raise ValueError("--stream needs one INPUT directory and --checkpoint DIR")
            spark = spark_session(master, conf, verbose, remote, options)
            query = ingest_stream(
                spark, inputs[0], table, checkpoint, columns, partition_by, shredding, quarantine, trigger=trigger,
                doc_column=doc_column, multiline=multiline, max_files_per_trigger=max_files_per_trigger, compact_every=compact_every,
                storage_options=options,
            )
            out.document(run_to_end(query, table, checkpoint, options))
            return
        spark = spark_session(master, conf, verbose, remote, options)
        with progress(spark) as phase:
            result = ingest_json(
                spark, inputs, table, columns, partition_by, shredding, quarantine,
                doc_column=doc_column, multiline=multiline, mode=mode, progress=phase, incremental=incremental,
                storage_options=options, properties=properties,
            )
        out.document(ingest_summary(result))
        if not result.consistent:
            raise typer.Exit(code=1)


def ingest_summary(result: Any) -> dict[str, Any]:
    """What a batch ingest did (``IngestResult``), as the document the command prints."""
    summary = {
        "table": result.table,
        "version": result.table_version,
        "read": result.read,
        "written": result.written,
        "quarantined": result.quarantined,
        "check": f"read {result.read:,} = written {result.written:,} + quarantined {result.quarantined:,}",
        "quarantine": result.quarantine,
        "files": result.files,
        "input_bytes": result.input_bytes,
        "seconds": round(result.seconds, 2),
        "lines_per_second": round(result.read / result.seconds) if result.seconds else None,
        "ingest_id": result.ingest_id,
        "reasons": dict(result.reasons),
        "shredding": {k: v or "(unshredded)" for k, v in result.layout.items()},
        "null_extractions": dict(result.extracted_nulls),
    }
    if result.batch is not None:
        summary["batch"] = result.batch
    if result.changed_files:
        summary["changed_files_not_ingested"] = list(result.changed_files)
    if result.note:
        summary["note"] = result.note
    return summary
