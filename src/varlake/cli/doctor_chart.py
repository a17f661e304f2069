"""The terminal form of a ``DoctorReport`` (``varlake doctor``): a stacked bar per Variant
path -- typed (green), residual (yellow), missing (dim) -- then type conflicts, drifted
files, suggestions and what ``optimize`` would change, as rich renderables."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from varlake.write.diagnostics.report import ColumnReport, DoctorReport, PathCoverage

__all__ = ["BAR_WIDTH", "coverage_bar", "doctor_renderables", "size_text"]

BAR_WIDTH = 16
_TYPED, _RESIDUAL, _MISSING = "green", "yellow", "bright_black"


def _cells(parts: Sequence[int], width: int) -> list[int]:
    """``width`` cells split in proportion to ``parts`` (largest remainders); a part that is
    not zero gets at least one cell (taken from the largest), so a sliver stays visible."""
    total = sum(parts)
    if total == 0:
        return [0] * len(parts)
    exact = [p * width / total for p in parts]
    cells = [int(x) for x in exact]
    for i in sorted(range(len(parts)), key=lambda i: -(exact[i] - cells[i]))[: width - sum(cells)]:
        cells[i] += 1
    for i, p in enumerate(parts):
        if p and not cells[i]:
            cells[i] = 1
            cells[max(range(len(cells)), key=lambda j: cells[j])] -= 1
    return cells


def coverage_bar(p: PathCoverage, width: int = BAR_WIDTH) -> Text:
    """One path's stacked bar: typed, residual, missing cells in proportion to the counts."""
    typed, residual, missing = _cells([p.typed, p.residual, p.missing], width)
    bar = Text()
    bar.append("█" * typed, style=_TYPED)
    bar.append("▒" * residual, style=_RESIDUAL)
    bar.append("░" * missing, style=_MISSING)
    if not p.slots:
        bar.append("·" * width, style=_MISSING)
    return bar


def _types(types: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n:,}" for name, n in types.items()) or "-"


def _files_per_type(files: Sequence[tuple[str, Mapping[str, int]]]) -> str:
    """``integer in 2 files, string in 1 file``: how many files hold each type."""
    held: dict[str, int] = {}
    for _, types in files:
        for name in types:
            held[name] = held.get(name, 0) + 1
    return ", ".join(f"{name} in {n} file{'s' if n != 1 else ''}" for name, n in held.items()) or "-"


def size_text(n: Any) -> str:
    """A byte count as ``12.3 MiB`` (``-`` for no number)."""
    if not isinstance(n, (int, float)):
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} GiB"


def _header(report: DoctorReport) -> Text:
    analysed = f"{report.rows_analyzed:,} analysed" + (" (sample)" if report.sampled else "")
    return Text.assemble(
        ("shredding doctor ", "bold"), report.table, f" @ version {report.version}: ",
        f"{report.files:,} file(s), {report.rows:,} live row(s), {analysed}; ",
        f"{report.deleted_rows:,} row(s) deleted by deletion vectors not counted",
    )  # fmt: skip


def _coverage_table(column: ColumnReport) -> Table:
    title = (
        f"coverage of {column.column}: {column.typed_scalar_share:.1%} of {column.scalar_values:,} scalar values typed"
        f" (stored schema: {column.schema or 'unshredded'})"
    )
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_lines=False)
    table.add_column("path", overflow="fold", min_width=min(24, max((len(p.path) for p in column.paths), default=4)))
    table.add_column("schema", overflow="fold", min_width=6)
    table.add_column("coverage", no_wrap=True, min_width=BAR_WIDTH)
    for name in ("typed", "resid.", "miss.", "n"):
        table.add_column(name, justify="right", no_wrap=True)
    for p in column.paths:
        table.add_row(
            p.path, p.schema_type or "-", coverage_bar(p),
            f"{p.typed_share:.1%}", f"{p.residual_share:.1%}", f"{p.missing_share:.1%}", f"{p.slots:,}",
        )  # fmt: skip
    table.caption = Text.assemble(
        ("█ typed", _TYPED), "  ", ("▒ residual (value)", _RESIDUAL), "  ", ("░ missing", _MISSING),
        "  n = values at the path: rows, or array elements under [*]",
    )  # fmt: skip
    table.caption_justify = "left"
    return table


def _sections(report: DoctorReport) -> Iterator[RenderableType]:
    conflicts = [(c.column, k) for c in report.columns for k in c.conflicts]
    if conflicts:
        t = Table(title="type conflicts", title_justify="left")
        for name in ("column", "path", "types", "files"):
            t.add_column(name, overflow="fold")
        for column, k in conflicts:
            t.add_row(column, k.path, _types(k.types), _files_per_type(k.files))
        yield t
    else:
        yield Text("no type conflicts", style="green")
    if report.drifted_files:
        t = Table(title=f"files whose layout differs from the table's ({len(report.drifted_files)})", title_justify="left")
        for name in ("file", "rows", "size", "est. saved", "kind", "differences"):
            t.add_column(name, overflow="fold")
        for f in report.drifted_files:
            kinds = ", ".join(dict.fromkeys(f"{c}: {k}" for c, k, _, _ in f.columns))
            saved = "-" if f.estimated_bytes_saved is None else _signed_size(f.estimated_bytes_saved)
            t.add_row(f.path, "-" if f.rows is None else f"{f.rows:,}", size_text(f.size), saved, kinds, "\n".join(f.differences))
        yield t
    else:
        yield Text("every file has the table's layout", style="green")
    suggestions = [(c.column, s) for c in report.columns for s in c.suggestions]
    if suggestions:
        t = Table(title="suggestions", title_justify="left")
        for name in ("column", "kind", "path", "type", "reason"):
            t.add_column(name, overflow="fold")
        for column, s in suggestions:
            t.add_row(column, s.kind, s.path, s.type or s.current_type or "-", s.reason)
        yield t
    else:
        yield Text("no schema suggestions", style="green")
    for c in report.columns:
        if c.suggested_schema != c.schema:
            yield Text.assemble(
                f"{c.column}: stored schema ", (c.schema or "(unshredded)", "bold"),
                "; the analysed data would shred ", (c.suggested_schema or "(nothing)", "bold"),
            )  # fmt: skip
    if report.optimize is not None:
        o = report.optimize
        if o.get("files_to_rewrite"):
            why: dict[str, int] = {}
            for reasons in (o.get("reasons") or {}).values():
                for r in reasons:
                    why[r] = why.get(r, 0) + 1
            yield Text.assemble(
                ("optimize would rewrite ", "bold"),
                f"{o['files_to_rewrite']:,} of {o.get('files_considered', 0):,} file(s) ({size_text(o.get('bytes_to_rewrite'))})",
                f" into about {o.get('estimated_output_files', 0):,} file(s) of {size_text(o.get('estimated_output_bytes'))},",
                f" saving about {size_text(o.get('estimated_bytes_saved'))} in footers and deleted rows",
                f" ({', '.join(f'{r}: {n}' for r, n in sorted(why.items()))})" if why else "",
            )  # fmt: skip
            if o.get("reshred_files"):
                yield Text.assemble(
                    "  re-shredding ", f"{o['reshred_files']:,} drifted file(s) into the table's layout: about ",
                    (_signed_size(int(o.get("estimated_reshred_bytes_saved") or 0)), "bold"),
                    f" (estimated from {o.get('reshred_files_sampled', 0):,} file(s), up to"
                    f" {o.get('reshred_sample_rows', 0):,} rows); in total about ",
                    (_signed_size(int(o.get("estimated_total_bytes_saved") or 0)), "bold"),
                )  # fmt: skip
        else:
            yield Text("optimize would change nothing", style="green")
    for note in report.notes:
        yield Text(f"note: {note}", style="dim")


def _signed_size(n: int) -> str:
    """A saving as text; a negative one (the layout costs bytes) as ``+size more``."""
    return size_text(n) if n >= 0 else f"-{size_text(-n)} (grows)"


def doctor_renderables(report: DoctorReport) -> Group:
    """The whole report for a rich console: header, coverage chart, then the other sections."""
    parts: list[RenderableType] = [_header(report)]
    if not report.columns:
        parts.append(Text("the table has no Variant column", style="yellow"))
    for column in report.columns:
        if column.paths:
            parts.append(_coverage_table(column))
        else:
            parts.append(Text(f"{column.column}: no rows to analyse", style="yellow"))
    parts.extend(_sections(report))
    return Group(*parts)
