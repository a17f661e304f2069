"""The ``varlake`` command line (typer + rich).

Each command gathers plain data (dicts and rows, the *logic*) and hands it to one of
three renderers (``--format table|json|csv``). Progress and messages go to stderr, so
stdout holds only the result. Commands that run Spark take ``--master`` (or ``--remote`` for a
Spark Connect server) and ``--conf``.
"""

from __future__ import annotations

import base64
import csv
import datetime as _dt
import json
import math
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from varlake import __version__, parse_json
from varlake.errors import VarlakeError
from varlake.write.diagnostics.doctor import DEFAULT_EMPTY_THRESHOLD, DEFAULT_SAMPLE
from varlake.write.doctor_chart import size_text

app = typer.Typer(no_args_is_help=True, help="Lakehouse tables for semi-structured data (Variant).")
err = Console(stderr=True, emoji=False, highlight=False)


class Format(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


FORMAT = typer.Option(Format.table, "--format", "-f", help="Output format.")
MASTER = typer.Option(None, "--master", help="Spark master URL: local[*] (default), local[N], spark://HOST:PORT, ...")
REMOTE = typer.Option(None, "--remote", help="Spark Connect server sc://HOST:PORT (instead of --master).")
CONF = typer.Option([], "--conf", help="Spark conf key=value (repeatable).")
VERBOSE = typer.Option(False, "--verbose", "-v", help="Show Spark's own warnings on stderr (quiet by default).")


# --- rendering ----------------------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """A value as JSON can hold it (Variants as their JSON text, bytes as base64, a NaN or
    infinite float as the text Spark's JSON writer gives it: "NaN", "Infinity", "-Infinity")."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if hasattr(value, "asDict"):  # a Spark Row
        return plain(value.asDict(recursive=True))
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if type(value).__name__ == "VariantVal":
        return json.loads(str(value))
    return str(value)


def _cell(value: Any) -> str:
    value = plain(value)
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def render_rows(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], fmt: Format, title: str | None = None) -> None:
    """Rows as a rich table, JSON lines-free array, or CSV on stdout."""
    if fmt is Format.json:
        typer.echo(json.dumps([{c: plain(r.get(c)) for c in columns} for r in rows], ensure_ascii=False, indent=2))
    elif fmt is Format.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        for r in rows:
            writer.writerow([_cell(r.get(c)) for c in columns])
    else:
        table = RichTable(title=title, show_lines=False)
        for c in columns:
            table.add_column(c, overflow="fold")
        for r in rows:
            table.add_row(*[_cell(r.get(c)) for c in columns])
        Console(emoji=False, markup=False, highlight=False).print(table)


def render_document(doc: Mapping[str, Any], fmt: Format) -> None:
    """A nested document: JSON as is; CSV as ``section,key,value``; tables per section."""
    if fmt is Format.json:
        typer.echo(json.dumps(plain(doc), ensure_ascii=False, indent=2))
        return
    def is_section(v: Any) -> bool:
        return isinstance(v, Mapping) or (isinstance(v, list) and any(isinstance(i, Mapping) for i in v))

    scalars = [{"key": k, "value": v} for k, v in doc.items() if not is_section(v)]
    sections = {k: v for k, v in doc.items() if is_section(v)}
    if fmt is Format.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["section", "key", "value"])
        for row in scalars:
            writer.writerow(["", row["key"], _cell(row["value"])])
        for name, value in sections.items():
            items = value.items() if isinstance(value, Mapping) else enumerate(value)
            for key, item in items:
                writer.writerow([name, key, _cell(item)])
        return
    render_rows(scalars, ["key", "value"], fmt)
    for name, value in sections.items():
        if isinstance(value, Mapping):
            render_rows([{"key": k, "value": v} for k, v in value.items()], ["key", "value"], fmt, title=name)
        elif value:
            render_rows(value, list(value[0].keys()), fmt, title=name)


@contextmanager
def _errors() -> Iterator[None]:
    """Known failures become one red line on stderr and exit code 1."""
    try:
        yield
    except (VarlakeError, ValueError, OSError) as exc:
        err.print(Text.assemble(("error: ", "red"), str(exc)), soft_wrap=True)  # one line at any width
        raise typer.Exit(code=1) from None
    except Exception as exc:  # Spark analysis errors and the like
        if type(exc).__module__.startswith(("pyspark", "py4j")):
            from varlake.spark.session.local import spark_error_summary

            err.print(Text.assemble(("Spark error: ", "red"), spark_error_summary(exc)), soft_wrap=True)
            raise typer.Exit(code=1) from None
        raise


def _spark(master: str | None, conf: list[str], verbose: bool = False, remote: str | None = None) -> Any:
    """The session for a command: a Spark Connect session on ``remote``, else a classic one on
    ``master`` (default ``local[*]``). An unreachable master or server, or a standalone master
    that gives no executor, fails in bounded time (``varlake.spark.session.endpoints``). Unless
    ``verbose``, a local JVM starts with its output sent to a log file (``varlake.spark.session.quiet``),
    so the terminal shows only varlake's own lines."""
    import logging
    import warnings

    from varlake.spark.session.endpoints import open_classic, open_connect
    from varlake.spark.session.quiet import driver_log_conf, quiet_launch
    from varlake.spark.session.local import local_session, parse_conf

    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)  # errors are reported once, below
    if remote is not None:
        if master is not None:
            raise ValueError("--master and --remote are mutually exclusive (--remote names a Spark Connect server)")
        return open_connect(remote, parse_conf(conf))
    master = master or "local[*]"
    settings = {**driver_log_conf(verbose), "spark.sql.warehouse.dir": str(Path(tempfile.gettempdir()) / "varlake-warehouse")}
    user = parse_conf(conf)
    if "spark.driver.extraJavaOptions" in user:
        user["spark.driver.extraJavaOptions"] = settings["spark.driver.extraJavaOptions"] + " " + user["spark.driver.extraJavaOptions"]

    def start(master: str, conf: Any) -> Any:
        with quiet_launch(enabled=not verbose):
            return local_session(master, conf)

    return open_classic(master, {**settings, **user}, start)


def stage_io_text(stage: Any) -> str:
    """``12,000 rows · 3.4 MB read · 1.2 MB written`` for a stage's finished tasks (what is known)."""
    parts = []
    if stage.rows:
        parts.append(f"{stage.rows:,} rows")
    for amount, verb in ((stage.bytes_read, "read"), (stage.bytes_written, "written")):
        if amount:
            parts.append(f"{size_text(amount)} {verb}")
    return " · ".join(parts)


@contextmanager
def _progress(spark: Any) -> Iterator[Any]:
    """A live bar per running Spark stage on stderr; yields a callback for phase messages."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from varlake.spark.session.local import StageProgress, track_progress

    bars = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[io]}"),
        TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
        console=err, transient=True,
    )
    tasks: dict[int, Any] = {}

    def update(stages: list[StageProgress]) -> None:
        for s in stages:
            if s.stage_id not in tasks:
                tasks[s.stage_id] = bars.add_task(f"stage {s.stage_id}", total=s.total, io="")
            bars.update(tasks[s.stage_id], completed=s.done, total=s.total, io=stage_io_text(s))
        live = {s.stage_id for s in stages}
        for stage_id, task in list(tasks.items()):
            if stage_id not in live:
                bars.update(task, visible=False)

    start = time.perf_counter()

    def phase(message: str) -> None:
        err.print(Text.assemble((f"{time.perf_counter() - start:7.1f}s ", "dim"), message))

    with bars, track_progress(spark, update):
        yield phase


# --- commands -----------------------------------------------------------------------------------------------


@app.command()
def version() -> None:
    """Print the varlake version."""
    typer.echo(__version__)


@app.command("json")
def json_cmd(path: Path = typer.Argument(..., help="JSON Lines file, '-' for stdin")) -> None:
    """Parse JSON Lines into Variants and print each back as Spark's to_json would."""
    stream = sys.stdin if str(path) == "-" else path.open(encoding="utf-8")
    bad = 0
    with stream:
        for lineno, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                typer.echo(parse_json(line).to_json())
            except VarlakeError as exc:
                bad += 1
                typer.echo(f"{path}:{lineno}: {exc}", err=True)
    if bad:
        raise typer.Exit(code=1)


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, spec = item.partition("=")
        if not sep or not name.strip() or not spec.strip():
            raise ValueError(f"{what} needs NAME=SPEC, got {item!r}")
        out[name.strip()] = spec.strip()
    return out


@app.command()
def ingest(
    paths: list[str] = typer.Argument(..., metavar="INPUT... TABLE", help="JSON Lines files, directories or globs, then the table path."),
    column: list[str] = typer.Option([], "--column", "-c", help="Extracted column NAME=$.path::type or NAME=<SQL over doc> (repeatable)."),
    partition_by: list[str] = typer.Option([], "--partition-by", "-p", help="Partition by these extracted columns."),
    shredding: str = typer.Option("auto", "--shredding", help="auto, off, or a shredding schema as Spark DDL."),
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
    fmt: Format = FORMAT,
) -> None:
    """Ingest JSON into a table with a Variant column; bad lines go to a quarantine table.

    Run again over a growing directory, it ingests only the files it has not taken yet
    (exactly once, even after a killed run); --stream runs it as a Structured Streaming query."""
    from varlake.spark.writing.ingest import ingest_json

    with _errors():
        if len(paths) < 2:
            raise ValueError("give at least one INPUT and the TABLE path")
        *inputs, table = paths
        columns = _pairs(column, "--column")
        if stream:
            from varlake.spark.writing.stream import ingest_stream, run_to_end

            if len(inputs) != 1 or not checkpoint:
                raise ValueError("--stream needs one INPUT directory and --checkpoint DIR")
            spark = _spark(master, conf, verbose, remote)
            query = ingest_stream(
                spark, inputs[0], table, checkpoint, columns, partition_by, shredding, quarantine, trigger=trigger,
                doc_column=doc_column, multiline=multiline, max_files_per_trigger=max_files_per_trigger, compact_every=compact_every,
            )
            render_document(run_to_end(query, table, checkpoint), fmt)
            return
        spark = _spark(master, conf, verbose, remote)
        with _progress(spark) as phase:
            result = ingest_json(
                spark, inputs, table, columns, partition_by, shredding, quarantine,
                doc_column=doc_column, multiline=multiline, mode=mode, progress=phase, incremental=incremental,
            )
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
        render_document(summary, fmt)
        if not result.consistent:
            raise typer.Exit(code=1)


def run_query(spark: Any, path: str, query: str) -> Any:
    """``query`` with ``{t}`` standing for the table at ``path``, as a Spark DataFrame
    (``varlake.spark.sql``: files skipped by statistics, shredded paths read as columns)."""
    from varlake.spark.reading import sql

    if "{t}" not in query:
        raise ValueError("the query must name the table as {t}, e.g. SELECT count(*) FROM {t}")
    return sql(spark, query, t=path)


def explain_query(spark: Any, path: str, query: str) -> str:
    """What ``run_query`` will read: files skipped, shredded and Variant read paths, final SQL."""
    from varlake.spark.reading import explain

    if "{t}" not in query:
        raise ValueError("the query must name the table as {t}, e.g. SELECT count(*) FROM {t}")
    return str(explain(spark, query, show=False, t=path))


class QueryFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    parquet = "parquet"


@app.command()
def query(
    table: str = typer.Argument(..., help="Table path."),
    sql: str = typer.Argument(..., help='Spark SQL with {t} for the table, e.g. "SELECT count(*) FROM {t}".'),
    limit: int = typer.Option(40, "--limit", min=0, help="Print at most this many rows (the rest are counted)."),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Write every row to this file instead (csv, json or parquet: --format or the suffix)."
    ),
    explain: bool = typer.Option(False, "--explain", help="Print the read plan (skipped files, read paths) to stderr first."),
    master: Optional[str] = MASTER,
    remote: Optional[str] = REMOTE,
    conf: list[str] = CONF,
    verbose: bool = VERBOSE,
    fmt: Optional[QueryFormat] = typer.Option(None, "--format", "-f", help="Output format (table when printing)."),
) -> None:
    """Run Spark SQL over a table (name it {t}); print the first rows or write all to a file."""
    with _errors():
        if output is None and fmt is QueryFormat.parquet:
            raise ValueError("--format parquet needs --output FILE")
        spark = _spark(master, conf, verbose, remote)
        if explain:
            typer.echo(explain_query(spark, table, sql), err=True)
        df = run_query(spark, table, sql)
        if output is not None:
            from varlake.spark.reading.export import export_rows, format_for

            kind = format_for(output, None if fmt in (None, QueryFormat.table) else fmt.value)
            with _progress(spark):
                written = export_rows(df, output, kind)
            err.print(f"wrote {written:,} row(s) to {output} ({kind})")
            return
        rows = [r.asDict(recursive=False) for r in df.limit(limit + 1).collect()]
        render_rows(rows[:limit], df.columns, Format((fmt or QueryFormat.table).value))
        if len(rows) > limit:
            total = df.count()
            err.print(
                Text(f"{limit:,} of {total:,} rows shown; --limit N prints more, --output FILE writes all", "dim"),
                soft_wrap=True,
            )


def _merge_bound(current: Any, new: Any, pick: Any) -> Any:
    if current is None:
        return new
    try:
        return pick(current, new)
    except TypeError:  # different type families in different files
        return current


def describe_table(path: str) -> dict[str, Any]:
    """Schema, protocol, properties (shredding schemas too), size and a stats summary."""
    from varlake import Table
    from varlake.delta.stats import leaf_columns
    from varlake.expr.partition import parse_partition_value

    table = Table(path)
    snap = table.snapshot()
    schema = snap.schema
    files = snap.files
    # The table layer's plan of a full scan: statistics and partition values by logical
    # column name (column mapping), row counts without deletion-vector-deleted rows.
    tasks = table.scan(version=snap.version).plan().tasks
    rows: int | None = 0
    columns: dict[str, dict[str, Any]] = {}
    for p, t in leaf_columns(schema):
        columns[".".join(p)] = {"column": ".".join(p), "type": _type_name(t), "nulls": 0, "min": None, "max": None}
    variant_paths: dict[tuple[str, str], dict[str, Any]] = {}
    for task in tasks:
        fs = task.stats
        live = task.num_records
        rows = None if rows is None or live is None else rows + live
        for p in leaf_columns(schema):
            name = ".".join(p[0])
            entry = columns[name]
            n = fs.null_count.get(p[0])
            if name in snap.partition_columns:
                raw = task.partition_values.get(name)
                n = (live or 0) if raw is None else 0
                value = None if raw is None else parse_partition_value(raw, _type_name(p[1]))
                if value is not None:
                    entry["min"] = _merge_bound(entry["min"], value, min)
                    entry["max"] = _merge_bound(entry["max"], value, max)
            entry["nulls"] = None if n is None or entry["nulls"] is None else entry["nulls"] + n
            if p[0] in fs.min_values:
                entry["min"] = _merge_bound(entry["min"], fs.min_values[p[0]], min)
            if p[0] in fs.max_values:
                entry["max"] = _merge_bound(entry["max"], fs.max_values[p[0]], max)
        for key, bound in fs.variant_min.items():
            e = variant_paths.setdefault((".".join(key[0]), key[1]), {"min": None, "max": None, "files": 0})
            e["min"] = _merge_bound(e["min"], bound.value, min)
            e["files"] += 1
        for key, bound in fs.variant_max.items():
            e = variant_paths.setdefault((".".join(key[0]), key[1]), {"min": None, "max": None, "files": 0})
            e["max"] = _merge_bound(e["max"], bound.value, max)
    protocol = snap.protocol
    return {
        "path": table.path,
        "version": snap.version,
        "files": len(files),
        "rows": rows,
        "size_bytes": sum(a.size for a in files),
        "partition_columns": list(snap.partition_columns),
        "protocol": {
            "minReaderVersion": protocol.min_reader_version,
            "minWriterVersion": protocol.min_writer_version,
            "readerFeatures": list(protocol.reader_features or []),
            "writerFeatures": list(protocol.writer_features or []),
        },
        "schema": [{"column": f.name, "type": _type_name(f.type), "nullable": f.nullable} for f in schema.fields],
        "properties": dict(snap.properties),
        "shredding": {name: s.ddl for name, s in table.shredding_schemas(snap).items()},
        "column_stats": list(columns.values()),
        "variant_path_stats": [
            {"column": c, "path": p, "files": e["files"], "min": e["min"], "max": e["max"]}
            for (c, p), e in sorted(variant_paths.items())
        ],
    }


def _type_name(t: Any) -> str:
    value = t.to_json()
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


@app.command()
def describe(table: str = typer.Argument(..., help="Table path."), fmt: Format = FORMAT) -> None:
    """Schema, protocol and features, properties, shredding schemas, size and statistics."""
    with _errors():
        render_document(describe_table(table), fmt)


@app.command()
def history(
    table: str = typer.Argument(..., help="Table path."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Newest N versions."),
    fmt: Format = FORMAT,
) -> None:
    """The table's commits, newest first."""
    from varlake import Table

    with _errors():
        entries = Table(table).history(limit)
        rows = [
            {
                "version": e.version,
                "timestamp": e.datetime.isoformat(),
                "operation": e.operation,
                "parameters": dict(e.operation_parameters),
                "metrics": dict(e.commit_info.get("operationMetrics") or {}),
            }
            for e in entries
        ]
        render_rows(rows, ["version", "timestamp", "operation", "parameters", "metrics"], fmt)


@app.command()
def vacuum(
    table: str = typer.Argument(..., help="Table path."),
    retention_hours: float = typer.Option(168.0, "--retention-hours", help="Keep files needed by versions this recent."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be deleted."),
    unsafe: bool = typer.Option(False, "--unsafe", help="Allow a retention below the safe minimum (168 h)."),
    fmt: Format = FORMAT,
) -> None:
    """Delete data files no retained version references (stray files of failed writes too)."""
    from varlake import Table

    with _errors():
        paths = Table(table).vacuum(retention_hours, dry_run=dry_run, unsafe_retention=unsafe)
        err.print(Text(f"{'would delete' if dry_run else 'deleted'} {len(paths)} file(s)"))
        render_rows([{"path": p} for p in paths], ["path"], fmt)


@app.command()
def checkpoint(table: str = typer.Argument(..., help="Table path."), fmt: Format = FORMAT) -> None:
    """Write a checkpoint of the latest version."""
    from varlake import Table

    with _errors():
        t = Table(table)
        written = t.checkpoint()
        render_document({"version": t.version, "checkpoint": written}, fmt)


@app.command()
def optimize(
    table: str = typer.Argument(..., help="Table path."),
    where: Optional[str] = typer.Option(None, "--where", help="Partition predicate: optimize only these partitions."),
    cluster_by: list[str] = typer.Option([], "--cluster-by", help="Clustering key (repeatable): a column or v:path::type."),
    target_size: Optional[str] = typer.Option(None, "--target-size", help="Target file size: bytes or 64mb, 1gb ..."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only show what would be rewritten."),
    spark_engine: bool = typer.Option(False, "--spark", help="Rewrite with Spark (default: the Python engine)."),
    master: Optional[str] = MASTER,
    remote: Optional[str] = REMOTE,
    conf: list[str] = CONF,
    fmt: Format = FORMAT,
) -> None:
    """Compact small files, rewrite files of another Variant layout, purge deletion vectors,
    cluster rows by columns and Variant paths (``varlake.write.maintenance.optimize``)."""
    from varlake import Table

    with _errors():
        if spark_engine or master or remote:
            from varlake.spark.changes.optimize import optimize as spark_optimize

            spark = _spark(master, conf, remote=remote)
            result = spark_optimize(spark, table, where, cluster_by or None, target_size, dry_run=dry_run)
        else:
            result = Table(table).optimize(where, target_size, cluster_by or None, dry_run)
        render_document(result.summary(reasons=False), fmt)


@app.command()
def doctor(
    table: str = typer.Argument(..., help="Table path."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole report as JSON (keys: varlake.write.diagnostics.doctor)."),
    sample: int = typer.Option(DEFAULT_SAMPLE, "--sample", min=1, help="Analyse at most this many live rows, spread over every file."),
    empty_threshold: float = typer.Option(DEFAULT_EMPTY_THRESHOLD, "--empty-threshold", min=0.0, max=1.0, help="Flag stored leaves typed in fewer rows than this share."),
) -> None:
    """How well the Variant data is shredded: typed / residual / missing per path, type
    conflicts, files off the table's layout, schema suggestions, what optimize would save."""
    from varlake import Table
    from varlake.write.doctor_chart import doctor_renderables

    with _errors():
        report = Table(table).doctor(sample=sample, empty_threshold=empty_threshold)
        if as_json:
            typer.echo(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
        else:
            Console(emoji=False, highlight=False).print(doctor_renderables(report))


if __name__ == "__main__":
    app()
