"""The one staging path of every engine: data -> data files -> a ``PendingWrite``.

``stage`` runs the same steps for every engine, in this order:

1. *check* -- the table's protocol must be writable (``delta.protocol.check_writable``),
   then the engine conforms the data to the table schema;
2. *constraints* -- the engine checks the rows against the table's NOT NULLs, CHECK
   constraints and invariants (``constraints``; eagerly, or as part of its job);
3. *shredding plan* -- the engine samples its Variants when the policy needs them and
   ``shredding.plan_shredding`` decides the layout and the stored schemas;
4. *column mapping* -- on a column-mapped table the files hold physical names and ids:
   the ``FilePlan`` says which directories, file schema and layout the files get;
5. *write files* -- the engine hook: varlake's Arrow/Parquet writer (``ArrowFiles``,
   below) or a Spark job (``varlake.spark.writing.writer``) writes the data files;
6. *file facts* -- size, time, rows, statistics and layout tags of each file
   (``files.file_facts``; an engine may compute them elsewhere, e.g. on executors), and
   its ``add`` action; files without rows are deleted, not added;
7. the ``PendingWrite`` (``commit.commit_write`` commits it).

Engines differ only in the hook (``FileEngine``): how data is conformed, guarded, sampled
and written, and where the facts are computed. Everything around it is here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from varlake.delta.column_mapping import ColumnMapping, column_mapping
from varlake.delta.protocol import annotates_variant, check_writable
from varlake.delta.schema import StructType, VariantType, to_arrow_schema
from varlake.delta.snapshot import Snapshot
from varlake.errors import TableError
from varlake.io.parquet_write import write_parquet
from varlake.io.storage import LocalStorage, Storage
from varlake.semantics import partition_values
from varlake.shred.variant_arrays import variant_array
from varlake.write.staging.commit import PendingWrite
from varlake.write.staging.conform import partition_types
from varlake.write.staging.constraints import check_arrow
from varlake.write.staging.files import FileFacts, add_action, file_facts, new_data_file, num_indexed_cols
from varlake.write.staging.inputs import input_columns
from varlake.write.staging.shredding import SAMPLE_ROWS, ShreddingPlan, plan_shredding, variant_columns

__all__ = [
    "ArrowFiles",
    "FileEngine",
    "FilePlan",
    "StageTarget",
    "Staged",
    "WrittenFile",
    "stage",
    "to_arrow_table",
]


@dataclass(frozen=True)
class StageTarget:
    """The table a write stages files for: its ``snapshot`` (None: the write creates the
    table, with ``create_properties``), schema, partitioning and properties, and for a new
    table its column mapping (an existing table's comes from its protocol and metadata)."""

    root: str
    mode: str
    snapshot: Snapshot | None
    schema: StructType
    partition_columns: tuple[str, ...]
    properties: Mapping[str, str]
    create_properties: Mapping[str, str] = field(default_factory=dict)
    new_mapping: ColumnMapping | None = None

    @classmethod
    def of(cls, root: str, mode: str, snapshot: Snapshot) -> "StageTarget":
        """A write to the existing table ``snapshot`` read."""
        return cls(root, mode, snapshot, snapshot.schema, tuple(snapshot.partition_columns), snapshot.properties)

    def column_mapping(self) -> ColumnMapping | None:
        if self.snapshot is None:
            return self.new_mapping
        return column_mapping(self.snapshot.protocol, self.snapshot.metadata, self.schema)


@dataclass(frozen=True)
class FilePlan:
    """What the files of one write look like: partition ``directories`` (physical names on
    a column-mapped table), the ``file_schema`` their statistics are keyed by, the
    ``shredding`` plan (by logical column) and ``mapping`` (None: names are physical);
    ``annotate_variant``: Variant groups carry Parquet's ``VARIANT`` logical type (not on a
    ``varlake.compatibility`` table: ``delta.protocol.annotates_variant``)."""

    root: str
    partition_columns: tuple[str, ...]
    directories: tuple[str, ...]
    types: Mapping[str, str]
    shredding: ShreddingPlan
    mapping: ColumnMapping | None
    file_schema: StructType
    indexed: int
    annotate_variant: bool = True

    def physical_layout(self) -> dict[str, str | None]:
        """The shredding DDL of each Variant column by its name in the files."""
        if self.mapping is None:
            return dict(self.shredding.layout)
        return {self.mapping.physical_dotted(c): ddl for c, ddl in self.shredding.layout.items()}


@dataclass(frozen=True)
class WrittenFile:
    """A data file an engine wrote: its path relative to the root, its partition values
    when the engine knows them (else ``FileEngine.partition_values`` finds them) and its
    Parquet footer, size and mtime (ms) when at hand (else they are read and looked up)."""

    relative: str
    values: Mapping[str, str | None] | None = None
    footer: Any = None
    size: int | None = None
    mtime_ms: int | None = None


class FileEngine(Protocol):
    """The engine's part of staging (see the module doc)."""

    storage: Storage

    def conform(self, data: Any, target: StageTarget) -> Any: ...

    def guard(self, data: Any, target: StageTarget) -> Any: ...

    def samples(self, data: Any, target: StageTarget, columns: Sequence[str], shredding: str) -> Mapping[str, Any] | None: ...

    def write_files(self, data: Any, files: FilePlan) -> list[WrittenFile]: ...

    def file_facts(
        self,
        items: Sequence[tuple[str, str]],
        files: FilePlan,
        footers: Mapping[str, Any],
        known: Mapping[str, tuple[int, int]] | None = None,
    ) -> list[FileFacts]: ...

    def partition_values(self, written: WrittenFile, files: FilePlan) -> Mapping[str, str | None]: ...


@dataclass(frozen=True)
class Staged:
    """A staged write and the shredding plan it followed (``plan.note`` says why a column
    was written unshredded)."""

    pending: PendingWrite
    plan: ShreddingPlan


def stage(engine: FileEngine, target: StageTarget, data: Any, shredding: str = "auto") -> Staged:
    """Write ``data``'s files for ``target`` through ``engine`` without committing them (module doc)."""
    snapshot, root = target.snapshot, target.root
    if snapshot is not None:
        check_writable(snapshot.protocol, snapshot.metadata, root)  # refused before any file is written
    data = engine.conform(data, target)
    checked = engine.guard(data, target)
    columns = variant_columns(target.schema)
    samples = engine.samples(data, target, columns, shredding)
    metadata = snapshot.metadata if snapshot is not None else None
    plan = plan_shredding(columns, target.properties, shredding, samples, metadata, root)
    files = _file_plan(target, plan)
    written = engine.write_files(checked, files)
    adds = _adds(engine, files, written)
    create_properties = {**target.create_properties, **plan.stored_properties()} if snapshot is None else {}
    pending = PendingWrite(
        root=root,
        mode=target.mode,
        schema=target.schema,
        partition_columns=target.partition_columns,
        adds=tuple(adds),
        snapshot=snapshot,
        create_properties=create_properties,
        metadata=plan.metadata,
        stored=plan.stored,
        layout=plan.layout,
    )
    return Staged(pending, plan)


def _file_plan(target: StageTarget, plan: ShreddingPlan) -> FilePlan:
    """Step 4: the files' names, directories and schema, physical on a column-mapped table."""
    mapping = target.column_mapping()
    columns = target.partition_columns
    directories = tuple(mapping.physical_name(c) for c in columns) if mapping is not None else columns
    return FilePlan(
        root=target.root,
        partition_columns=columns,
        directories=directories,
        types=partition_types(target.schema, columns),
        shredding=plan,
        mapping=mapping,
        file_schema=mapping.physical_schema if mapping is not None else target.schema,
        indexed=num_indexed_cols(target.properties),
        annotate_variant=annotates_variant(target.properties),
    )


def _adds(engine: FileEngine, files: FilePlan, written: Sequence[WrittenFile]) -> list[Any]:
    """Step 6: the ``add`` of each written file with rows; files without rows are deleted."""
    root = files.root
    by_relative = {w.relative: w for w in written}
    items = [(w.relative, f"{root}/{w.relative}") for w in written]
    footers = {w.relative: w.footer for w in written if w.footer is not None}
    known = {w.relative: (w.size, w.mtime_ms) for w in written if w.size is not None and w.mtime_ms is not None}
    adds, empty = [], []
    for facts in engine.file_facts(items, files, footers, known):
        if facts[3] == 0:
            empty.append(facts[0])
            continue
        adds.append(add_action(tuple(facts), engine.partition_values(by_relative[facts[0]], files)))  # type: ignore[arg-type]
    for relative in empty:  # Spark writes a header-only file for an empty DataFrame
        engine.storage.delete(f"{root}/{relative}")
    return adds


# --- the Arrow engine: varlake's own Parquet writer ---------------------------------------------------


class ArrowFiles:
    """Stages Arrow-convertible data (Arrow, pandas, dicts) with varlake's Parquet writer:
    one file per partition. ``evolve=False`` keeps the stored shredding schemas (no samples)."""

    def __init__(self, storage: Storage, *, evolve: bool = True) -> None:
        self.storage = storage
        self.evolve = evolve

    def conform(self, data: Any, target: StageTarget) -> pa.Table:
        return to_arrow_table(data, target.schema)

    def guard(self, data: pa.Table, target: StageTarget) -> pa.Table:
        check_arrow(data, target.schema, target.properties, target.root)  # before any file is written
        return data

    def samples(self, data: pa.Table, target: StageTarget, columns: Sequence[str], shredding: str) -> Mapping[str, Any]:
        if not (data.num_rows and self.evolve):
            return {}
        return {c: _column_at(data, tuple(c.split("."))).slice(0, SAMPLE_ROWS) for c in columns}

    def write_files(self, data: pa.Table, files: FilePlan) -> list[WrittenFile]:
        """One Parquet file per partition; on a column-mapped table under physical names with
        field ids, its directories and partition values keyed physically (``delta.column_mapping``)."""
        root, columns, mapping = files.root, list(files.partition_columns), files.mapping
        layouts = files.shredding.schemas()
        out = []
        for texts, part in _partition_groups(data, columns, files.types, root):
            rows = part.drop_columns(columns) if columns else part
            relative = new_data_file(root, list(files.directories), texts)
            location = self.storage.location_inside(root, f"{root}/{relative}")
            if isinstance(self.storage, LocalStorage):
                os.makedirs(os.path.dirname(location), exist_ok=True)
            present = [c for c in layouts if c.split(".")[0] in rows.column_names]
            shredding = {c: layouts[c] for c in present if layouts[c] is not None}
            values = dict(zip(columns, texts))
            if mapping is not None:
                rows = mapping.to_physical(rows, f"{root}: {relative}")
                shredding = {mapping.physical_dotted(c): s for c, s in shredding.items()}
                present = [mapping.physical_dotted(c) for c in present]
                values = mapping.physical_partition_values(values)
            result = write_parquet(
                rows, location, shredding=shredding or None, variant_columns=present, storage=self.storage,
                annotate_variant=files.annotate_variant,
            )
            # size from the bytes written, time from the clock: no request to look them up
            out.append(WrittenFile(relative, values, result.metadata, result.size, int(time.time() * 1000)))
        return out

    def file_facts(
        self,
        items: Sequence[tuple[str, str]],
        files: FilePlan,
        footers: Mapping[str, Any],
        known: Mapping[str, tuple[int, int]] | None = None,
    ) -> list[FileFacts]:
        schema_json = files.file_schema.to_schema_string()
        return list(file_facts(self.storage, items, schema_json, files.indexed, footers=footers, known=known))

    def partition_values(self, written: WrittenFile, files: FilePlan) -> Mapping[str, str | None]:
        return written.values or {}


def _column_at(table: pa.Table, path: tuple[str, ...]) -> pa.ChunkedArray:
    column = table.column(path[0])
    for name in path[1:]:
        column = pa.chunked_array([pc.struct_field(chunk, name) for chunk in column.chunks], type=column.type.field(name).type)
    return column


def _partition_groups(
    table: pa.Table, columns: Sequence[str], types: Mapping[str, str], where: str
) -> list[tuple[tuple[str | None, ...], pa.Table]]:
    """Rows grouped by their stored partition values (``partition_values.render``: values
    with one text -- NULL and "", every NaN -- share a file); empty groups are dropped."""
    if not columns:
        return [((), table)] if table.num_rows else []
    keys: dict[str, pa.Array] = {}
    texts_by_id: list[list[str | None]] = []
    for i, c in enumerate(columns):
        encoded = pc.dictionary_encode(table.column(c).combine_chunks())
        texts = [partition_values.render(v, types[c], f"{where}: partition column {c!r}") for v in encoded.dictionary.to_pylist()]
        distinct = list(dict.fromkeys([*texts, None]))
        ids = {t: k for k, t in enumerate(distinct)}
        mapping = pa.array([ids[t] for t in texts], pa.int32())
        key = pc.take(mapping, encoded.indices) if len(mapping) else pa.nulls(len(encoded), pa.int32())
        keys[f"k{i}"] = pc.fill_null(key, ids[None])
        texts_by_id.append(distinct)
    keyed = pa.table({**keys, "row": pa.array(range(table.num_rows), pa.int64())})
    groups = keyed.group_by(list(keys)).aggregate([("row", "list")]).to_pylist()
    out = []
    for g in groups:
        texts_of_group = tuple(texts_by_id[i][g[f"k{i}"]] for i in range(len(columns)))
        out.append((texts_of_group, table.take(pa.array(sorted(g["row_list"]), pa.int64()))))
    return out


def to_arrow_table(data: Any, schema: StructType) -> pa.Table:
    """``data`` (Arrow table/batch, pandas frame, or list of dicts) in the table's Arrow schema.

    Variant columns may hold ``struct<metadata, value>`` already, or ``Variant``
    objects / plain Python values, which are encoded.
    """
    target = to_arrow_schema(schema)
    data = input_columns(data, "write")
    names = data.column_names if isinstance(data, pa.Table) else list(data)
    extra = [n for n in names if n not in target.names]
    if extra:
        raise TableError(f"columns {extra} are not in the table schema {target.names}")
    arrays = []
    for field_ in target:
        if field_.name not in names:
            if not field_.nullable:
                raise TableError(f"non-nullable column {field_.name!r} is missing")
            arrays.append(pa.nulls(len(data) if isinstance(data, pa.Table) else len(next(iter(data.values()), [])), field_.type))
            continue
        column = data.column(field_.name) if isinstance(data, pa.Table) else data[field_.name]
        is_variant = isinstance(schema.field(field_.name).type, VariantType)
        if is_variant and not isinstance(column, (pa.Array, pa.ChunkedArray)):
            arrays.append(variant_array(list(column)))
            continue
        try:
            arr = column if isinstance(column, (pa.Array, pa.ChunkedArray)) else pa.array(column, type=field_.type)
            arrays.append(arr.cast(field_.type) if arr.type != field_.type else arr)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise TableError(f"column {field_.name!r} does not fit type {field_.type}: {exc}") from None
    return pa.Table.from_arrays(arrays, schema=target)
