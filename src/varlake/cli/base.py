"""What every command shares: the typer ``app``, the stderr console, the common options,
and how a known failure becomes one red line and exit code 1."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from varlake.errors import VarlakeError

__all__ = [
    "CONF", "FORMAT", "MASTER", "REMOTE", "STORAGE_OPTION", "VERBOSE", "Format", "app", "err", "errors", "open_table", "pairs",
    "storage_options",
]

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
STORAGE_OPTION = typer.Option(
    [], "--storage-option", "-s",
    help="Object-store setting KEY=VALUE for an s3://, gs://, az:// table (repeatable; overrides the environment's AWS_* etc.).",
)


@contextmanager
def errors() -> Iterator[None]:
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


def open_table(path: str, storage_option: list[str]) -> Any:
    """The ``varlake.Table`` at ``path`` (a local path or an object-store URI), with the
    ``--storage-option`` settings over the environment's."""
    from varlake import Table

    return Table(path, storage_options=storage_options(storage_option))


def storage_options(items: list[str]) -> dict[str, str] | None:
    """``--storage-option KEY=VALUE`` settings as ``storage_options`` (None when there are none)."""
    return pairs(items, "--storage-option") or None


def pairs(items: list[str], what: str) -> dict[str, str]:
    """``NAME=SPEC`` options as a dict (a malformed one is a ``ValueError``)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, spec = item.partition("=")
        if not sep or not name.strip() or not spec.strip():
            raise ValueError(f"{what} needs NAME=SPEC, got {item!r}")
        out[name.strip()] = spec.strip()
    return out
