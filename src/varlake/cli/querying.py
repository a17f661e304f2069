"""``varlake query``: Spark SQL over a table, the first rows printed or every row written to a file."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from rich.text import Text

from varlake.cli.base import CONF, MASTER, REMOTE, STORAGE_OPTION, VERBOSE, app, err, errors, storage_options
from varlake.cli.output import output_for
from varlake.cli.session import progress, spark_session

__all__ = ["QueryFormat", "explain_query", "query", "run_query"]


def run_query(spark: Any, path: str, query: str, options: Mapping[str, str] | None = None) -> Any:
    """``query`` with ``{t}`` standing for the table at ``path``, as a Spark DataFrame
    (``varlake.spark.sql``: files skipped by statistics, shredded paths read as columns)."""
    from varlake.spark import sql

    if "{t}" not in query:
        raise ValueError("the query must name the table as {t}, e.g. SELECT count(*) FROM {t}")
    return sql(spark, query, t=path, storage_options=options)


def explain_query(spark: Any, path: str, query: str, options: Mapping[str, str] | None = None) -> str:
    """What ``run_query`` will read: files skipped, shredded and Variant read paths, final SQL."""
    from varlake.spark import explain

    if "{t}" not in query:
        raise ValueError("the query must name the table as {t}, e.g. SELECT count(*) FROM {t}")
    return str(explain(spark, query, show=False, t=path, storage_options=options))


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
    storage_option: list[str] = STORAGE_OPTION,
    fmt: Optional[QueryFormat] = typer.Option(None, "--format", "-f", help="Output format (table when printing)."),
) -> None:
    """Run Spark SQL over a table (name it {t}); print the first rows or write all to a file."""
    with errors():
        if output is None and fmt is QueryFormat.parquet:
            raise ValueError("--format parquet needs --output FILE")
        options = storage_options(storage_option)
        spark = spark_session(master, conf, verbose, remote, options)
        if explain:
            typer.echo(explain_query(spark, table, sql, options), err=True)
        df = run_query(spark, table, sql, options)
        if output is not None:
            from varlake.spark.reading.export import export_rows, format_for

            kind = format_for(output, None if fmt in (None, QueryFormat.table) else fmt.value)
            with progress(spark):
                written = export_rows(df, output, kind)
            err.print(f"wrote {written:,} row(s) to {output} ({kind})")
            return
        rows = [r.asDict(recursive=False) for r in df.limit(limit + 1).collect()]
        output_for((fmt or QueryFormat.table).value).rows(rows[:limit], df.columns)
        if len(rows) > limit:
            total = df.count()
            err.print(
                Text(f"{limit:,} of {total:,} rows shown; --limit N prints more, --output FILE writes all", "dim"),
                soft_wrap=True,
            )
