"""``varlake describe`` reads statistics through the table layer's plan: column-mapped
tables show min/max by logical name, and row counts leave out deletion-vector-deleted rows."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from golden_expected import GOLDEN
from varlake.cli import app, describe_table


def _stats(doc: dict) -> dict:
    return {c["column"]: (c["min"], c["max"], c["nulls"]) for c in doc["column_stats"]}


def test_describe_column_mapped_table_by_logical_names() -> None:
    doc = describe_table(str(GOLDEN / "table-with-columnmapping-mode-name"))
    assert doc["rows"] == 6
    assert _stats(doc)["IntegerType"] == (0, 4, 1)  # the log keys these stats by physical name


def test_describe_counts_rows_without_deleted_ones() -> None:
    doc = describe_table(str(GOLDEN / "basic-dv-no-checkpoint"))
    assert doc["rows"] == 8  # 10 written, 2 deleted by the deletion vector


def test_describe_json_output() -> None:
    result = CliRunner().invoke(app, ["describe", str(GOLDEN / "dv-with-columnmapping"), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["rows"] == 35
