"""The ``varlake`` command line (typer). Rendering stays apart from logic."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from varlake import __version__, parse_json
from varlake.errors import VarlakeError

app = typer.Typer(no_args_is_help=True, help="Lakehouse tables for semi-structured data (Variant).")


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


if __name__ == "__main__":
    app()
