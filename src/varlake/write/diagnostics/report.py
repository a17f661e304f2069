"""The shredding doctor's report (``doctor.diagnose`` makes it): per Variant column and
path, where the values are held (``PathCoverage``), type conflicts, suggestions, drifted
files and the optimize summary; ``to_dict()`` gives the machine form described in
``doctor``, ``path_text`` how a path is spelled."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from varlake.variant.path import escape_name

__all__ = [
    "ColumnReport",
    "DoctorReport",
    "DriftedFile",
    "PathCoverage",
    "Segments",
    "Suggestion",
    "TypeConflict",
    "path_text",
    "share",
]


Segments = tuple[str | None, ...]  # object keys; None stands for "every element of an array"


def path_text(segments: Segments) -> str:
    """A path as the report spells it: ``$``, ``$.a.b``, ``$.tags[*]``, ``$['odd key']``."""
    out = ["$"]
    for s in segments:
        if s is None:
            out.append("[*]")
        elif s and (s[0].isalpha() or s[0] == "_") and all(ch.isalnum() or ch == "_" for ch in s):
            out.append(f".{s}")
        else:
            out.append(f"['{escape_name(s)}']")
    return "".join(out)


def share(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0


@dataclass(frozen=True)
class PathCoverage:
    """Where the values at one path of one Variant column are held (see the module)."""

    path: str
    in_schema: bool
    schema_type: str | None
    slots: int
    typed: int
    residual: int
    absent: int
    variant_null: int
    sql_null: int
    types: Mapping[str, int] = field(default_factory=dict)
    footer_typed: int | None = None

    @property
    def missing(self) -> int:
        return self.absent + self.variant_null + self.sql_null

    @property
    def typed_share(self) -> float:
        return share(self.typed, self.slots)

    @property
    def residual_share(self) -> float:
        return share(self.residual, self.slots)

    @property
    def missing_share(self) -> float:
        return share(self.missing, self.slots)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path, "in_schema": self.in_schema, "schema_type": self.schema_type,
            "slots": self.slots, "typed": self.typed, "residual": self.residual, "missing": self.missing,
            "absent": self.absent, "variant_null": self.variant_null, "sql_null": self.sql_null,
            "typed_share": self.typed_share, "residual_share": self.residual_share,
            "missing_share": self.missing_share, "types": dict(self.types), "footer_typed": self.footer_typed,
        }  # fmt: skip


@dataclass(frozen=True)
class TypeConflict:
    """A path holding values of several type families: counts per type, overall and per file."""

    path: str
    types: Mapping[str, int]
    files: tuple[tuple[str, Mapping[str, int]], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "types": dict(self.types),
            "files": [{"path": p, "types": dict(t)} for p, t in self.files],
        }


@dataclass(frozen=True)
class Suggestion:
    """A change to a column's shredding schema the data argues for (``kind``: ``add``,
    ``retype`` or ``drop``), with the type the data would shred the path as (``type``), the
    stored schema's (``current_type``), the path's typed share and why."""

    kind: str
    path: str
    type: str | None
    current_type: str | None
    typed_share: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "path": self.path, "type": self.type, "current_type": self.current_type,
            "typed_share": self.typed_share, "reason": self.reason,
        }  # fmt: skip


@dataclass(frozen=True)
class ColumnReport:
    """One Variant column: its stable schema, the schema the analysed data suggests (both
    DDL, None: unshredded), coverage per path (depth first), conflicts and suggestions."""

    column: str
    schema: str | None
    suggested_schema: str | None
    rows_analyzed: int
    footer_rows: int
    paths: tuple[PathCoverage, ...]
    conflicts: tuple[TypeConflict, ...]
    suggestions: tuple[Suggestion, ...]
    scalar_values: int = 0
    typed_scalars: int = 0

    @property
    def typed_scalar_share(self) -> float:
        """The headline: of every non-null scalar value at any path, the share held in a typed
        leaf column (objects and arrays are containers, not counted)."""
        return share(self.typed_scalars, self.scalar_values)

    def path(self, text: str) -> PathCoverage:
        """The coverage of the path spelled ``text`` (``KeyError`` naming it if not reported)."""
        for p in self.paths:
            if p.path == text:
                return p
        raise KeyError(f"{self.column}: no path {text!r} in the report")

    def to_dict(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "schema": self.schema,
            "suggested_schema": self.suggested_schema,
            "rows_analyzed": self.rows_analyzed,
            "footer_rows": self.footer_rows,
            "scalar_values": self.scalar_values,
            "typed_scalars": self.typed_scalars,
            "typed_scalar_share": self.typed_scalar_share,
            "paths": [p.to_dict() for p in self.paths],
            "conflicts": [c.to_dict() for c in self.conflicts],
            "suggestions": [s.to_dict() for s in self.suggestions],
        }


@dataclass(frozen=True)
class DriftedFile:
    """A live file whose Variant layout differs from the table's: per column the kind of
    drift (``write.layout_drift.DRIFT_KINDS``) and both shredding schemas (``(column, kind,
    file DDL, table DDL)``), and the typed leaves that differ, one line each."""

    path: str
    size: int
    rows: int | None
    reason: str
    columns: tuple[tuple[str, str, str | None, str | None], ...]
    differences: tuple[str, ...] = ()
    estimated_bytes_saved: int | None = None  # by re-shredding into the table's layout (sampled files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "size": self.size,
            "rows": self.rows,
            "reason": self.reason,
            "columns": [
                {"column": c, "kind": k, "file_schema": f, "table_schema": t} for c, k, f, t in self.columns
            ],
            "differences": list(self.differences),
            "estimated_bytes_saved": self.estimated_bytes_saved,
        }


@dataclass(frozen=True)
class DoctorReport:
    """The whole diagnosis of one table version (see the module for the keys of ``to_dict``)."""

    table: str
    version: int
    files: int
    rows: int
    deleted_rows: int
    rows_analyzed: int
    sampled: bool
    empty_threshold: float
    columns: tuple[ColumnReport, ...]
    drifted_files: tuple[DriftedFile, ...]
    optimize: Mapping[str, Any] | None
    notes: tuple[str, ...] = ()

    def column(self, name: str) -> ColumnReport:
        for c in self.columns:
            if c.column == name:
                return c
        raise KeyError(f"{self.table}: no Variant column {name!r} in the report")

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "version": self.version,
            "files": self.files,
            "rows": self.rows,
            "deleted_rows": self.deleted_rows,
            "rows_analyzed": self.rows_analyzed,
            "sampled": self.sampled,
            "empty_threshold": self.empty_threshold,
            "columns": [c.to_dict() for c in self.columns],
            "drifted_files": [f.to_dict() for f in self.drifted_files],
            "optimize": dict(self.optimize) if self.optimize is not None else None,
            "notes": list(self.notes),
        }
