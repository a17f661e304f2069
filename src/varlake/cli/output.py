"""How a command shows its result on stdout: one ``Output`` per ``--format``.

A command gathers plain data -- rows, a nested document, a ``describe`` summary, a doctor
report -- and hands it to the ``Output`` for the chosen form; it never prints a result
itself. Each form says what every kind of result looks like in it:

* ``TableOutput`` (rich): one line per row, long cells cut with an ellipsis so the table
  fits the terminal (as DuckDB's shell does; ``--format json`` gives every byte); a
  document is a key/value table then one table per section, and a section with no rows
  is left out.
* ``JsonOutput``: strict JSON (Variants as their JSON, bytes as base64, NaN and the
  infinities as Spark's JSON writer spells them); every key kept, empty ones too.
* ``CsvOutput``: a header and one record per row; a document as ``section,key,value``.

Progress and messages go to stderr (``varlake.cli.base.err``), so stdout holds only the result.
"""

from __future__ import annotations

import base64
import csv
import datetime as _dt
import json
import math
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from decimal import Decimal
from enum import Enum
from typing import TYPE_CHECKING, Any

import typer
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table as RichTable

from varlake.cli.base import Format

if TYPE_CHECKING:
    from varlake.write.diagnostics.report import DoctorReport

__all__ = ["CsvOutput", "JsonOutput", "Output", "TableOutput", "cell", "fitted_widths", "output_for", "plain"]

Row = Mapping[str, Any]


def plain(value: Any) -> Any:
    """A value as JSON can hold it (Variants as their JSON text, bytes as base64, a NaN or
    infinite float as the text Spark's JSON writer gives it: "NaN", "Infinity", "-Infinity")."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if hasattr(value, "asDict"):  # a Spark Row
        return plain(value.asDict(recursive=True))
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if type(value).__name__ == "VariantVal":
        return json.loads(str(value))
    return str(value)


def cell(value: Any) -> str:
    """A value as the text of one cell (nested values as compact JSON, NULL as nothing)."""
    value = plain(value)
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _is_section(value: Any) -> bool:
    return isinstance(value, Mapping) or (isinstance(value, list) and any(isinstance(i, Mapping) for i in value))


def _split(doc: Mapping[str, Any]) -> tuple[list[Row], dict[str, Any]]:
    """A document's scalar entries as key/value rows, and its sections (mappings, lists of rows)."""
    scalars = [{"key": k, "value": v} for k, v in doc.items() if not _is_section(v)]
    return scalars, {k: v for k, v in doc.items() if _is_section(v)}


class Output(ABC):
    """One output form: how each kind of result is written to stdout."""

    @abstractmethod
    def rows(self, rows: Sequence[Row], columns: Sequence[str], title: str | None = None) -> None:
        """Rows of a result (``columns`` in this order)."""

    @abstractmethod
    def document(self, doc: Mapping[str, Any]) -> None:
        """A summary: scalar entries, and sections (a mapping, or a list of rows)."""

    @abstractmethod
    def describe(self, info: Mapping[str, Any]) -> None:
        """``varlake describe``'s summary of a table (``varlake.cli.inspecting.describe_table``)."""

    @abstractmethod
    def doctor(self, report: DoctorReport) -> None:
        """``varlake doctor``'s report."""

    def text(self, line: str) -> None:
        """One line of plain text (the same in every form)."""
        typer.echo(line)


class JsonOutput(Output):
    """Strict JSON, indented: rows as an array of objects, documents as they are."""

    def _dump(self, value: Any) -> None:
        typer.echo(json.dumps(value, ensure_ascii=False, indent=2))

    def rows(self, rows: Sequence[Row], columns: Sequence[str], title: str | None = None) -> None:
        self._dump([{c: plain(r.get(c)) for c in columns} for r in rows])

    def document(self, doc: Mapping[str, Any]) -> None:
        self._dump(plain(doc))

    def describe(self, info: Mapping[str, Any]) -> None:
        self.document(info)

    def doctor(self, report: DoctorReport) -> None:
        self._dump(report.to_dict())  # keys: varlake.write.diagnostics.doctor


class CsvOutput(Output):
    """CSV with a header; a document as ``section,key,value`` records."""

    def rows(self, rows: Sequence[Row], columns: Sequence[str], title: str | None = None) -> None:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        for r in rows:
            writer.writerow([cell(r.get(c)) for c in columns])

    def document(self, doc: Mapping[str, Any]) -> None:
        scalars, sections = _split(doc)
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["section", "key", "value"])
        for row in scalars:
            writer.writerow(["", row["key"], cell(row["value"])])
        for name, value in sections.items():
            items = value.items() if isinstance(value, Mapping) else enumerate(value)
            for key, item in items:
                writer.writerow([name, key, cell(item)])

    def describe(self, info: Mapping[str, Any]) -> None:
        self.document(info)

    def doctor(self, report: DoctorReport) -> None:
        raise ValueError("varlake doctor has no CSV form (--json gives the whole report)")


def fitted_widths(natural: Sequence[int], budget: int, floor: int = 6) -> list[int]:
    """Column widths that fit ``budget`` cells: as ``natural`` when they fit, else the widest
    columns cut to one common cap (never below ``floor``, nor a column's own width), then
    the room left given back to the cut columns, left to right."""
    widths = [max(1, w) for w in natural]
    if sum(widths) <= budget:
        return widths
    low, high = floor, max(widths)  # the largest cap that fits, by bisection
    if sum(min(w, low) for w in widths) > budget:
        return [min(w, low) for w in widths]  # too many columns: the table overflows, cut to the floor
    while low < high:
        cap = (low + high + 1) // 2
        if sum(min(w, cap) for w in widths) <= budget:
            low = cap
        else:
            high = cap - 1
    fitted = [min(w, low) for w in widths]
    room = budget - sum(fitted)
    for i, w in enumerate(widths):
        if room <= 0:
            break
        if w > fitted[i]:
            fitted[i] += 1
            room -= 1
    return fitted


def _one_line(text: str) -> str:
    """A cell's text on one line: line breaks shown escaped, tabs as spaces."""
    return text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r").replace("\t", " ")


class TableOutput(Output):
    """rich tables on a console (the terminal, ``COLUMNS`` wide when not a terminal)."""

    def __init__(self, console: Console | None = None) -> None:
        self._console = console

    @property
    def console(self) -> Console:
        if self._console is None:
            self._console = Console(emoji=False, markup=False, highlight=False)
        return self._console

    def rows(self, rows: Sequence[Row], columns: Sequence[str], title: str | None = None) -> None:
        texts = [[_one_line(cell(r.get(c))) for c in columns] for r in rows]
        natural = [max([cell_len(c)] + [cell_len(t[i]) for t in texts]) for i, c in enumerate(columns)]
        # the default box: a padding cell either side of each column, and a rule between and around them
        budget = self.console.width - 3 * len(columns) - 1
        table = RichTable(title=title, show_lines=False)
        for c, width in zip(columns, fitted_widths(natural, budget)):
            table.add_column(_one_line(c), width=width, no_wrap=True, overflow="ellipsis")
        for t in texts:
            table.add_row(*t)
        self.console.print(table)

    def document(self, doc: Mapping[str, Any]) -> None:
        scalars, sections = _split(doc)
        if scalars:
            self.rows(scalars, ["key", "value"])
        for name, value in sections.items():
            self._section(name, value)

    def _section(self, name: str, value: Any) -> None:
        """A mapping as a key/value table, a list as a table of its rows; nothing when empty."""
        if isinstance(value, Mapping):
            if value:
                self.rows([{"key": k, "value": v} for k, v in value.items()], ["key", "value"], title=name)
        elif value:
            self.rows(value, list(value[0].keys()), title=name)

    def describe(self, info: Mapping[str, Any]) -> None:
        """The overview (path, version, size ...) first, then protocol, schema, properties,
        shredding, column and Variant path statistics, each section only when it has rows."""
        sections = ("protocol", "schema", "properties", "shredding", "column_stats", "variant_path_stats")
        overview = [{"key": k, "value": v} for k, v in info.items() if k not in sections]
        self.rows(overview, ["key", "value"])
        for name in sections:
            self._section(name, info.get(name))

    def doctor(self, report: DoctorReport) -> None:
        from varlake.cli.doctor_chart import doctor_renderables

        console = self._console or Console(emoji=False, highlight=False)
        console.print(doctor_renderables(report))


def output_for(fmt: Format | str, console: Console | None = None) -> Output:
    """The ``Output`` of a ``--format`` value (``console``: the table form's, for tests)."""
    form = Format(fmt.value if isinstance(fmt, Enum) else fmt)
    if form is Format.json:
        return JsonOutput()
    if form is Format.csv:
        return CsvOutput()
    return TableOutput(console)
