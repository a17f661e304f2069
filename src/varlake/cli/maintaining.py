"""``varlake vacuum``, ``checkpoint`` and ``optimize``: keeping a table lean."""

from __future__ import annotations

from typing import Optional

import typer
from rich.text import Text

from varlake.cli.base import CONF, FORMAT, MASTER, REMOTE, STORAGE_OPTION, Format, app, err, errors, open_table
from varlake.cli.output import output_for
from varlake.cli.session import spark_session

__all__ = ["checkpoint", "optimize", "vacuum"]


@app.command()
def vacuum(
    table: str = typer.Argument(..., help="Table path or URI (s3://, gs://, az://, ...)."),
    retention_hours: float = typer.Option(168.0, "--retention-hours", help="Keep files needed by versions this recent."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be deleted."),
    unsafe: bool = typer.Option(False, "--unsafe", help="Allow a retention below the safe minimum (168 h)."),
    storage_option: list[str] = STORAGE_OPTION,
    fmt: Format = FORMAT,
) -> None:
    """Delete data files no retained version references (stray files of failed writes too)."""
    out = output_for(fmt)
    with errors():
        paths = open_table(table, storage_option).vacuum(retention_hours, dry_run=dry_run, unsafe_retention=unsafe)
        err.print(Text(f"{'would delete' if dry_run else 'deleted'} {len(paths)} file(s)"))
        out.rows([{"path": p} for p in paths], ["path"])


@app.command()
def checkpoint(
    table: str = typer.Argument(..., help="Table path or URI (s3://, gs://, az://, ...)."),
    storage_option: list[str] = STORAGE_OPTION,
    fmt: Format = FORMAT,
) -> None:
    """Write a checkpoint of the latest version."""
    out = output_for(fmt)
    with errors():
        t = open_table(table, storage_option)
        written = t.checkpoint()
        out.document({"version": t.version, "checkpoint": written})


@app.command()
def optimize(
    table: str = typer.Argument(..., help="Table path or URI (s3://, gs://, az://, ...)."),
    where: Optional[str] = typer.Option(None, "--where", help="Partition predicate: optimize only these partitions."),
    cluster_by: list[str] = typer.Option([], "--cluster-by", help="Clustering key (repeatable): a column or v:path::type."),
    target_size: Optional[str] = typer.Option(None, "--target-size", help="Target file size: bytes or 64mb, 1gb ..."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only show what would be rewritten."),
    spark_engine: bool = typer.Option(False, "--spark", help="Rewrite with Spark (default: the Python engine)."),
    master: Optional[str] = MASTER,
    remote: Optional[str] = REMOTE,
    conf: list[str] = CONF,
    storage_option: list[str] = STORAGE_OPTION,
    fmt: Format = FORMAT,
) -> None:
    """Compact small files, rewrite files of another Variant layout, purge deletion vectors,
    cluster rows by columns and Variant paths (``varlake.write.maintenance.optimize``)."""
    out = output_for(fmt)
    with errors():
        if spark_engine or master or remote:
            from varlake.spark.changes.optimize import optimize as spark_optimize

            spark = spark_session(master, conf, remote=remote)
            result = spark_optimize(spark, table, where, cluster_by or None, target_size, dry_run=dry_run)
        else:
            result = open_table(table, storage_option).optimize(where, target_size, cluster_by or None, dry_run)
        out.document(result.summary(reasons=False))
