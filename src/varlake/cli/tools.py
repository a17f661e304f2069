"""``varlake version`` and ``varlake json`` (JSON Lines through the Variant codec)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from varlake import __version__, parse_json
from varlake.cli.base import app
from varlake.cli.output import output_for
from varlake.errors import VarlakeError

__all__ = ["json_cmd", "version"]


@app.command()
def version() -> None:
    """Print the varlake version."""
    output_for("table").text(__version__)


@app.command("json")
def json_cmd(path: Path = typer.Argument(..., help="JSON Lines file, '-' for stdin")) -> None:
    """Parse JSON Lines into Variants and print each back as Spark's to_json would."""
    out = output_for("table")
    stream = sys.stdin if str(path) == "-" else path.open(encoding="utf-8")
    bad = 0
    with stream:
        for lineno, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                out.text(parse_json(line).to_json())
            except VarlakeError as exc:
                bad += 1
                typer.echo(f"{path}:{lineno}: {exc}", err=True)
    if bad:
        raise typer.Exit(code=1)
