"""The ``varlake`` command line (typer + rich).

Each command gathers plain data (dicts and rows, the *logic*) and hands it to the
``Output`` of its ``--format`` (``varlake.cli.output``: table, json, csv). Progress and
messages go to stderr, so stdout holds only the result. Commands that run Spark take
``--master`` (or ``--remote`` for a Spark Connect server) and ``--conf``.

The commands live by group: ``tools`` (version, json), ``ingesting``, ``querying``, ``inspecting``
(describe, history), ``maintaining`` (vacuum, checkpoint, optimize) and ``diagnosing`` (doctor); each
registers itself on ``app`` (``varlake.cli.base``) when imported, in this order.
"""

from __future__ import annotations

from varlake.cli.base import Format, app
from varlake.cli.output import Output, output_for, plain
from varlake.cli.session import stage_io_text
from varlake.cli.tools import json_cmd, version
from varlake.cli.ingesting import ingest
from varlake.cli.querying import explain_query, query, run_query
from varlake.cli.inspecting import describe, describe_table, history
from varlake.cli.maintaining import checkpoint, optimize, vacuum
from varlake.cli.diagnosing import doctor

__all__ = [
    "Format", "Output", "app", "checkpoint", "describe", "describe_table", "doctor", "explain_query", "history",
    "ingest", "json_cmd", "optimize", "output_for", "plain", "query", "run_query", "stage_io_text", "vacuum", "version",
]  # fmt: skip
