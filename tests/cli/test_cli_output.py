"""The output forms of ``varlake.cli.output``: the table form prints one line per row, long
cells cut with an ellipsis to the terminal's width, and leaves out sections with no rows;
the JSON form keeps every key; the CSV form is unchanged."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from golden_expected import GOLDEN
from varlake.cli import app
from varlake.cli.ingesting import ingest_summary
from varlake.cli.output import CsvOutput, JsonOutput, Output, TableOutput, fitted_widths, output_for


def _table(width: int) -> tuple[TableOutput, io.StringIO]:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, emoji=False, markup=False, highlight=False, color_system=None)
    return TableOutput(console), buffer


def _variant_rows(n: int) -> list[dict[str, Any]]:
    return [{"id": i, "doc": {"kind": "post", "text": "lorem ipsum " * 30, "n": i}, "note": "two\nlines"} for i in range(n)]


def test_every_form_is_an_output() -> None:
    assert isinstance(output_for("table"), TableOutput) and isinstance(output_for("json"), JsonOutput)
    assert isinstance(output_for("csv"), CsvOutput)
    assert all(isinstance(output_for(f), Output) for f in ("table", "json", "csv"))
    with pytest.raises(TypeError):
        Output()  # type: ignore[abstract]


def test_rows_are_one_line_each_and_fit_the_width() -> None:
    out, buffer = _table(80)
    out.rows(_variant_rows(40), ["id", "doc", "note"])
    lines = buffer.getvalue().splitlines()
    assert len(lines) == 40 + 4  # top rule, header, header rule, 40 rows, bottom rule
    assert all(cell_len(line) <= 80 for line in lines)
    assert all("…" in line for line in lines[3:-1])  # every document cut
    assert lines[3].startswith("│ 0") and '{"kind":"post","text":"lorem ipsum' in lines[3]
    assert "two\\nlines" in lines[3]  # a line break in a cell is shown, not taken


def test_narrow_columns_keep_their_width() -> None:
    out, buffer = _table(60)
    out.rows([{"key": "varlake.shredding.doc", "value": "x" * 500}], ["key", "value"])
    row = buffer.getvalue().splitlines()[3]
    assert "varlake.shredding.doc" in row and row.endswith("… │") and cell_len(row) == 60


def test_fitted_widths() -> None:
    assert fitted_widths([3, 10, 4], 40) == [3, 10, 4]  # it fits: as they are
    assert fitted_widths([3, 100, 50], 40) == [3, 19, 18]  # the widest cut to one cap, the room used
    assert sum(fitted_widths([3, 100, 50], 40)) == 40
    assert fitted_widths([30, 30, 30, 30], 10) == [6, 6, 6, 6]  # no room: the floor (the table overflows)
    assert fitted_widths([0, 2], 10) == [1, 2]


def test_empty_sections_are_left_out_of_the_table_form_only() -> None:
    doc = {"table": "/t", "read": 3, "reasons": {}, "shredding": {"doc": "a bigint"}, "null_extractions": {}}
    out, buffer = _table(80)
    out.document(doc)
    text = buffer.getvalue()
    assert "shredding" in text and "a bigint" in text
    assert "reasons" not in text and "null_extractions" not in text
    assert text.count("┏") == 2  # the key/value table and the shredding section, no empty table


def test_ingest_summary_keeps_empty_sections_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    class Result:
        table, table_version, read, written, quarantined, quarantine = "/t", 0, 2, 2, 0, None
        files, input_bytes, seconds, ingest_id, batch, changed_files, note = 1, 20, 0.5, "i", None, (), None
        reasons: dict[str, int] = {}
        layout = {"doc": "a bigint"}
        extracted_nulls: dict[str, int] = {}

    summary = ingest_summary(Result())
    JsonOutput().document(summary)
    doc = json.loads(capsys.readouterr().out)
    assert doc["reasons"] == {} and doc["null_extractions"] == {} and doc["check"] == "read 2 = written 2 + quarantined 0"
    out, buffer = _table(100)
    out.document(summary)
    assert "reasons" not in buffer.getvalue() and "null_extractions" not in buffer.getvalue()


def test_describe_table_form_fits_and_json_is_the_document() -> None:
    path = str(GOLDEN / "dv-with-columnmapping")
    r = CliRunner().invoke(app, ["describe", path], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert all(cell_len(line) <= 80 for line in lines)
    for title in ("protocol", "schema", "properties", "column_stats"):
        assert title in r.stdout, title
    r = CliRunner().invoke(app, ["describe", path, "-f", "json"])
    assert "variant_path_stats" in json.loads(r.stdout)  # kept, empty or not


def test_doctor_has_no_csv_form() -> None:
    with pytest.raises(ValueError, match="no CSV form"):
        CsvOutput().doctor(None)  # type: ignore[arg-type]
