"""``python -m varlake.cli``: the ``varlake`` command."""

from varlake.cli import app

app()
