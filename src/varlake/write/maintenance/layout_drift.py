"""Which data files' physical Variant layout differs from the table's stable shredding
schema, and why -- the facts ``optimize`` (``write.optimize``) and the shredding doctor act on.

The layout a file *should* have is the one a write would give it now without evolving the
stored schema: ``plan_shredding`` of the table's properties with no samples (the stored
``varlake.shredding.<column>`` DDL, or unshredded when shredding is off or a leaf cannot be
shredded by every engine). A file's actual layout is read from its footer
(``read.layout.file_layout``) and compared per Variant column, as shredding DDL. The reason
a column differs is one of ``DRIFT_KINDS``:

* ``unshredded``: the file holds the column unshredded, the table shreds it;
* ``shredded``: the file shreds a column the table stores unshredded;
* ``older-schema``: every typed leaf of the file is in the stored schema with the same type
  (a file written before the schema evolved);
* ``leaf-types``: the same typed paths as the stored schema but some leaf types differ;
* ``spark-layout``: another set of typed paths in a file Spark's Parquet writer made (Spark
  shreds each file by its own guess unless told the table's schema);
* ``other-layout``: another set of typed paths, another writer;
* ``unrecognised``: the column's group is not a Variant layout varlake knows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from varlake.delta.actions import AddFile
from varlake.delta.column_mapping import column_mapping
from varlake.delta.snapshot import Snapshot
from varlake.errors import ShreddingError, ShreddingSchemaError
from varlake.read.layout import FileLayout, file_layout
from varlake.shred.schema import ShreddingSchema
from varlake.write.staging.shredding import plan_shredding, variant_columns
from varlake.write.staging.handle import TableHandle

__all__ = [
    "DRIFT_KINDS",
    "ColumnDrift",
    "FileLayoutStatus",
    "expected_layouts",
    "file_status",
    "layout_status",
]

DRIFT_KINDS = ("unshredded", "shredded", "older-schema", "leaf-types", "spark-layout", "other-layout", "unrecognised")


@dataclass(frozen=True)
class ColumnDrift:
    """How one Variant column of one file differs: ``kind`` (one of ``DRIFT_KINDS``), the
    file's shredding DDL (None: unshredded) and the table's (None: unshredded)."""

    column: str
    kind: str
    file_ddl: str | None
    table_ddl: str | None

    def describe(self) -> str:
        have = self.file_ddl or "unshredded"
        want = self.table_ddl or "unshredded"
        return f"{self.column}: {self.kind} (file {have}, table {want})"


@dataclass(frozen=True)
class FileLayoutStatus:
    """One live file of a snapshot: its ``add``, where the layout differs (``drift``, empty
    when it has the table's layout), the writer (footer ``created_by``), its footer's size,
    its deleted rows."""

    add: AddFile
    drift: tuple[ColumnDrift, ...]
    created_by: str | None = None
    footer_bytes: int = 0

    @property
    def path(self) -> str:
        return self.add.path

    @property
    def size(self) -> int:
        return self.add.size

    @property
    def num_records(self) -> int | None:
        return self.add.num_records

    @property
    def partition_values(self) -> Mapping[str, str | None]:
        return self.add.partition_values

    @property
    def has_deletion_vector(self) -> bool:
        return self.add.deletion_vector is not None

    @property
    def deleted_rows(self) -> int:
        dv = self.add.deletion_vector
        value = dv.get("cardinality") if dv is not None else 0
        return value if isinstance(value, int) else 0

    @property
    def drifted(self) -> bool:
        return bool(self.drift)

    @property
    def reason(self) -> str | None:
        """Why the file's layout differs from the table's (None: it does not)."""
        return "; ".join(d.describe() for d in self.drift) or None


def expected_layouts(snapshot: Snapshot) -> dict[str, str | None]:
    """The shredding DDL each Variant column's files should have (None: unshredded)."""
    columns = variant_columns(snapshot.schema)
    plan = plan_shredding(columns, snapshot.properties, "auto", {}, None, snapshot.root)
    return {c: _canonical_ddl(plan.layout.get(c)) for c in columns}


def _canonical_ddl(ddl: str | None) -> str | None:
    if not ddl:
        return None
    try:
        return ShreddingSchema.parse(ddl).ddl
    except ShreddingSchemaError:
        return ddl


def _group(schema: pa.Schema, path: Sequence[str]) -> pa.DataType | None:
    t: pa.DataType | None = None
    for i, name in enumerate(path):
        if i == 0:
            index = schema.get_field_index(name)
            t = schema.field(index).type if index >= 0 else None
        elif t is not None and pa.types.is_struct(t) and t.get_field_index(name) >= 0:
            t = t.field(name).type
        else:
            return None
        if isinstance(t, pa.ExtensionType):  # e.g. pyarrow's arrow.parquet.variant: its storage is the group
            t = t.storage_type
    return t


def _is_spark(created_by: str | None) -> bool:
    text = (created_by or "").lower()
    return "parquet-mr" in text or "parquet-java" in text or "spark" in text


def _kind(file_schema: ShreddingSchema, table_ddl: str, spark: bool) -> str:
    want = dict(ShreddingSchema.parse(table_ddl).leaves())
    have = dict(file_schema.leaves())
    if set(have) == set(want):
        return "leaf-types"
    if all(p in want and want[p] == t for p, t in have.items()):
        return "older-schema"
    return "spark-layout" if spark else "other-layout"


def column_drift(layout: FileLayout, physical: str, column: str, table_ddl: str | None) -> ColumnDrift | None:
    """How column ``column`` (at dotted ``physical`` in the file) differs from ``table_ddl``."""
    group = _group(layout.schema, physical.split("."))
    if group is None:
        return None  # a column missing from the file is read as NULL: no layout to fix
    try:
        schema = ShreddingSchema.from_physical(group)
    except (ShreddingError, ShreddingSchemaError):
        return ColumnDrift(column, "unrecognised", None, table_ddl)
    file_ddl = schema.ddl if schema is not None else None
    if file_ddl == table_ddl:
        return None
    if schema is None:
        return ColumnDrift(column, "unshredded", None, table_ddl)
    if table_ddl is None:
        return ColumnDrift(column, "shredded", file_ddl, None)
    return ColumnDrift(column, _kind(schema, table_ddl, _is_spark(layout.metadata.created_by)), file_ddl, table_ddl)


def file_status(
    target: TableHandle, snapshot: Snapshot, add: AddFile, expected: Mapping[str, str | None] | None = None
) -> FileLayoutStatus:
    """The layout status of one live file of ``snapshot``."""
    expected = expected_layouts(snapshot) if expected is None else expected
    layout = file_layout(target.storage, target.data_file(add))
    mapping = column_mapping(snapshot.protocol, snapshot.metadata, snapshot.schema)
    drift = []
    for column, ddl in expected.items():
        physical = mapping.physical_dotted(column) if mapping is not None else column
        found = column_drift(layout, physical, column, ddl)
        if found is not None:
            drift.append(found)
    return FileLayoutStatus(add, tuple(drift), layout.metadata.created_by, layout.metadata.serialized_size)


def layout_status(target: TableHandle, snapshot: Snapshot | None = None, files: Sequence[AddFile] | None = None) -> list[FileLayoutStatus]:
    """For each live file of ``snapshot`` (the target's latest by default; or only ``files``),
    whether and why its Variant layout differs from the table's stable shredding schema.
    Footers are read once per file and cached (``read.layout``)."""
    snapshot = snapshot or target.snapshot()
    expected = expected_layouts(snapshot)
    chosen = list(snapshot.files) if files is None else list(files)
    return [file_status(target, snapshot, add, expected) for add in chosen]
