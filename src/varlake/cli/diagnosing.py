"""``varlake doctor``: how well a table's Variant data is shredded (the chart is ``doctor_chart``)."""

from __future__ import annotations

import typer

from varlake.cli.base import STORAGE_OPTION, app, errors, open_table
from varlake.cli.output import output_for
from varlake.write.diagnostics.doctor import DEFAULT_EMPTY_THRESHOLD, DEFAULT_SAMPLE

__all__ = ["doctor"]


@app.command()
def doctor(
    table: str = typer.Argument(..., help="Table path or URI (s3://, gs://, az://, ...)."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole report as JSON (keys: varlake.write.diagnostics.doctor)."),
    sample: int = typer.Option(DEFAULT_SAMPLE, "--sample", min=1, help="Analyse at most this many live rows, spread over every file."),
    empty_threshold: float = typer.Option(DEFAULT_EMPTY_THRESHOLD, "--empty-threshold", min=0.0, max=1.0, help="Flag stored leaves typed in fewer rows than this share."),
    storage_option: list[str] = STORAGE_OPTION,
) -> None:
    """How well the Variant data is shredded: typed / residual / missing per path, type
    conflicts, files off the table's layout, schema suggestions, what optimize would save."""
    out = output_for("json" if as_json else "table")
    with errors():
        out.doctor(open_table(table, storage_option).doctor(sample=sample, empty_threshold=empty_threshold))
