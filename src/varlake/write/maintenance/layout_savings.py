"""An estimate of the bytes OPTIMIZE saves by re-shredding drifted files into the table's layout.

For each file whose Variant layout differs from the table's stable shredding schema
(``write.layout_drift``: older schema, Spark's per-file layout, unshredded, other leaf
types), a bounded sample of its live rows (``SAMPLE_ROWS``, evenly spread) is written twice
to in-memory Parquet buffers the way the write path writes a file (``io.parquet_write.
physical_table`` shreds -- one rule, one home -- and the writer's settings: zstd, row groups
by ``rows_per_group``): once in the file's present layout and once in the table's. The
ratio of their data bytes (footers left out) applied to the file's live data bytes is the
estimate: ``data * (1 - new / present)`` (negative when the table's layout is larger).
Writing both layouts the same way cancels what the small sample does to compression;
what a different codec of the original writer (e.g. Spark's snappy) would change is not
counted.

Files that drift the same way (the same file and table layouts) are sampled together, as
OPTIMIZE merges them: up to ``MAX_FILES`` of them (spread over them, largest first) give
``SAMPLE_ROWS`` rows in all, and their group's ratio applies to every file of the group.
Nothing is written to storage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from varlake.errors import VarlakeError
from varlake.io.parquet_write import DEFAULT_ROW_GROUP_BYTES, physical_table, rows_per_group
from varlake.shred.schema import ShreddingSchema
from varlake.shred.variant_columns import without_variant_extension
from varlake.write.maintenance.layout_drift import FileLayoutStatus
from varlake.write.maintenance.optimize import read_files
from varlake.write.staging.handle import TableHandle

__all__ = ["MAX_FILES", "SAMPLE_ROWS", "LayoutSavings", "estimate_layout_savings"]

SAMPLE_ROWS = 20_000  # live rows of a group of drifted files written in both layouts, at most
MAX_FILES = 16  # drifted files sampled, at most
_UNKNOWN_KINDS = frozenset({"unrecognised"})


@dataclass(frozen=True)
class LayoutSavings:
    """The estimate over a table's drifted files: ``bytes_saved`` in total, per file path
    (``per_file``: None for a file whose group cannot be estimated), the rows sampled per
    group at most, and the files sampled out of those drifted."""

    bytes_saved: int = 0
    per_file: Mapping[str, int | None] = field(default_factory=dict)
    sample_rows: int = SAMPLE_ROWS
    files_sampled: int = 0
    files: int = 0
    notes: tuple[str, ...] = ()

    def summary(self) -> dict[str, Any]:
        return {
            "estimated_reshred_bytes_saved": self.bytes_saved,
            "reshred_files": self.files,
            "reshred_files_sampled": self.files_sampled,
            "reshred_sample_rows": self.sample_rows,
        }


def _data_bytes(table: pa.Table) -> int:
    """Bytes of ``table`` written as Parquet the way the write path does, footer left out."""
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, table.schema, compression="zstd", store_decimal_as_integer=True, version="2.6") as writer:
        writer.write_table(table, row_group_size=rows_per_group(table, None, DEFAULT_ROW_GROUP_BYTES))
    buf = sink.getvalue()
    footer = int.from_bytes(buf[len(buf) - 8 : len(buf) - 4].to_pybytes(), "little")
    return max(len(buf) - footer - 12, 1)  # "PAR1" + data + footer + length + "PAR1"


def _layouts(status: FileLayoutStatus, table_ddls: Mapping[str, str | None]) -> tuple[dict[tuple[str, ...], Any], dict[tuple[str, ...], Any]]:
    """(the file's layouts, the table's layouts) per Variant column path: the drifted
    columns as the drift says, the others alike on both sides."""

    def parse(ddl: str | None) -> ShreddingSchema | None:
        return ShreddingSchema.parse(ddl) if ddl else None

    present = {tuple(c.split(".")): parse(d) for c, d in table_ddls.items()}
    wanted = dict(present)
    for d in status.drift:
        present[tuple(d.column.split("."))] = parse(d.file_ddl)
        wanted[tuple(d.column.split("."))] = parse(d.table_ddl)
    return present, wanted


def _live_data_bytes(status: FileLayoutStatus) -> int:
    """The file's data bytes (without its footer) scaled to its live rows."""
    data = max(status.size - status.footer_bytes, 1)
    rows = status.num_records
    if not rows:
        return data
    return int(data * max(rows - status.deleted_rows, 0) / rows)


def _ratio(sample: pa.Table, present: Mapping[tuple[str, ...], Any], wanted: Mapping[tuple[str, ...], Any]) -> float:
    sample = without_variant_extension(sample)
    now = _data_bytes(physical_table(sample, present))
    new = _data_bytes(physical_table(sample, wanted))
    return new / now


def _chosen(statuses: Sequence[FileLayoutStatus], limit: int) -> list[FileLayoutStatus]:
    """Up to ``limit`` files, spread over ``statuses`` ordered largest first."""
    ordered = sorted(statuses, key=lambda s: (-s.size, s.path))
    if len(ordered) <= limit:
        return ordered
    picks = np.unique(np.linspace(0, len(ordered) - 1, limit).round().astype(int))
    return [ordered[i] for i in picks]


def _sample(target: TableHandle, snapshot: Any, files: Sequence[FileLayoutStatus], rows: int) -> pa.Table | None:
    """About ``rows`` live rows spread evenly over ``files`` (each file's share evenly spread)."""
    quota = max(1, rows // max(len(files), 1))
    parts = []
    for status in files:
        part = read_files(target, snapshot, [status.add])
        if part.num_rows > quota:
            part = part.take(pa.array(np.linspace(0, part.num_rows - 1, quota).astype(np.int64)))
        if part.num_rows:
            parts.append(part)
    return pa.concat_tables(parts) if parts else None


def estimate_layout_savings(
    target: TableHandle,
    snapshot: Any,
    statuses: Sequence[FileLayoutStatus],
    table_ddls: Mapping[str, str | None],
    *,
    sample_rows: int = SAMPLE_ROWS,
    max_files: int = MAX_FILES,
) -> LayoutSavings:
    """The bytes re-shredding the drifted files of ``statuses`` into the table's layout would
    save (module doc); ``table_ddls``: the stored shredding DDL per Variant column (None:
    unshredded), the layout of the columns a file does not drift in."""
    drifted = [s for s in statuses if s.drifted and not any(d.kind in _UNKNOWN_KINDS for d in s.drift)]
    if not drifted:
        return LayoutSavings(sample_rows=sample_rows)
    groups: dict[tuple[Any, ...], list[FileLayoutStatus]] = {}
    for s in drifted:  # files drifting the same way are sampled together, as optimize merges them
        groups.setdefault(tuple(sorted((d.column, d.file_ddl or "", d.table_ddl or "") for d in s.drift)), []).append(s)
    per_group = max(1, max_files // len(groups))
    ratios: dict[str, float] = {}
    notes: list[str] = []
    sampled = 0
    for files in groups.values():
        chosen = _chosen(files, per_group)
        try:
            rows = _sample(target, snapshot, chosen, sample_rows)
            if rows is None:
                continue
            present, wanted = _layouts(chosen[0], table_ddls)
            ratio = _ratio(rows, present, wanted)
        except (VarlakeError, pa.ArrowException, OSError) as exc:
            notes.append(f"{chosen[0].path}: the re-shredding saving cannot be estimated ({exc})")
            continue
        sampled += len(chosen)
        ratios.update({s.path: ratio for s in files})
    per_file: dict[str, int | None] = {}
    for s in drifted:
        ratio = ratios.get(s.path)
        per_file[s.path] = None if ratio is None else int(round(_live_data_bytes(s) * (1 - ratio)))
    total = sum(v for v in per_file.values() if v is not None)
    return LayoutSavings(total, per_file, sample_rows, sampled, len(drifted), tuple(notes))
