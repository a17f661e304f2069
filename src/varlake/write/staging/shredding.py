"""The shredding policy of a table: one stored schema per Variant column, how it evolves,
which layout new files get, and the metadata change a write commits.

The table property ``varlake.shredding.<column>`` holds each Variant column's shredding
schema as Spark DDL ("" or absent: unshredded). It is inferred from a sample of the first
data written (the first ``SAMPLE_ROWS`` rows, whichever engine writes), evolved when
later data changes and kept at stable widths, so the files of one table share one layout.
Shredding is on only when ``delta.enableVariantShredding=true``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from varlake.delta.actions import Metadata
from varlake.delta.config import is_true
from varlake.delta.protocol import compatibility_properties
from varlake.delta.schema import StructType, VariantType
from varlake.errors import ShreddingSchemaError, TableError
from varlake.shred.infer import evolve
from varlake.shred.schema import ShreddingSchema

__all__ = [
    "ENABLE_SHREDDING",
    "SAMPLE_ROWS",
    "SHREDDING_PROPERTY",
    "ShreddingPlan",
    "evolve_metadata",
    "evolve_stable_ddl",
    "needs_samples",
    "new_table_properties",
    "plan_shredding",
    "stable_widths",
    "stored_schemas",
    "unshreddable_reason",
    "variant_columns",
]

SHREDDING_PROPERTY = "varlake.shredding."
ENABLE_SHREDDING = "delta.enableVariantShredding"
SAMPLE_ROWS = 10_000  # rows a write infers or evolves the shredding schema from


@dataclass(frozen=True)
class ShreddingPlan:
    """What a write does about shredding.

    ``layout``: the DDL each Variant column's new files are shredded with (None: unshredded);
    ``stored``: each column's stored DDL after the commit ("" = none) -- the files assume it;
    ``metadata``: the metaData change to commit (None: no change); ``note``: why a column
    is written unshredded although it has a stored schema.
    """

    layout: Mapping[str, str | None]
    stored: Mapping[str, str]
    metadata: Metadata | None = None
    note: str | None = None

    def stored_properties(self) -> dict[str, str]:
        """The table properties holding the non-empty stored schemas (for a table this write creates)."""
        return {SHREDDING_PROPERTY + c: d for c, d in self.stored.items() if d}

    def schemas(self) -> dict[str, ShreddingSchema | None]:
        """``layout`` as parsed shredding schemas (for varlake's Parquet writer)."""
        return {c: ShreddingSchema.parse(d) if d else None for c, d in self.layout.items()}


def variant_columns(schema: StructType, prefix: tuple[str, ...] = ()) -> list[str]:
    """Dotted names of the Variant columns reachable through structs (those with a stored
    schema; Variants inside arrays and maps are always unshredded)."""
    out: list[str] = []
    for f in schema.fields:
        path = (*prefix, f.name)
        if isinstance(f.type, VariantType):
            out.append(".".join(path))
        elif isinstance(f.type, StructType):
            out.extend(variant_columns(f.type, path))
    return out


def stored_schemas(properties: Mapping[str, str], columns: Sequence[str]) -> dict[str, str]:
    """Each column's stored shredding DDL ("" when none)."""
    return {c: properties.get(SHREDDING_PROPERTY + c, "") or "" for c in columns}


def stable_widths(t: pa.DataType) -> pa.DataType:
    """A shredding type with integers as int64 and decimals at precision 18 or 38.

    Inference picks the narrowest widths for one sample; a table wants widths that the
    next batch will also fit, so its files keep one layout.
    """
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, stable_widths(f.type), f.nullable) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(pa.field(t.value_field.name, stable_widths(t.value_type), t.value_field.nullable))
    if pa.types.is_integer(t):
        return pa.int64()
    if pa.types.is_decimal(t):
        precision = 18 if t.precision <= 18 and t.scale <= 18 else 38
        return pa.decimal128(precision, t.scale)
    return t


def evolve_stable_ddl(current: str | None, sample: Any) -> str:
    """The DDL a table stores for a Variant column after seeing ``sample`` ("" = unshredded):
    ``current`` evolved (or inferred when None), at stable widths."""
    new = evolve(current or None, sample)
    return ShreddingSchema(stable_widths(new.arrow_type)).ddl if new is not None else ""


def unshreddable_reason(ddl: str) -> str | None:
    """Why files cannot be shredded with ``ddl`` by every engine (None if they can): leaves
    Spark cannot shred (time, uuid, nanosecond timestamps) or fields differing only in case."""
    schema = ShreddingSchema.parse(ddl)
    for path, t in schema.leaves():
        if pa.types.is_time(t) or isinstance(t, pa.ExtensionType) or (pa.types.is_timestamp(t) and t.unit != "us"):
            where = ".".join("[]" if p is None else p for p in path) or "$"
            return f"leaf {where} has type {t}, which Spark cannot shred"

    def clash(t: pa.DataType) -> str | None:
        if pa.types.is_struct(t):
            seen: set[str] = set()
            for f in t:
                if f.name.lower() in seen:
                    return f"fields that differ only in case ({f.name!r}) cannot be shredded by Spark"
                seen.add(f.name.lower())
                found = clash(f.type)
                if found:
                    return found
        elif pa.types.is_list(t):
            return clash(t.value_type)
        return None

    return clash(schema.arrow_type)


def needs_samples(columns: Sequence[str], properties: Mapping[str, str], shredding: str) -> bool:
    """Whether ``plan_shredding`` will read samples of the data (so an engine collects them)."""
    return bool(columns) and shredding == "auto" and is_true(properties, ENABLE_SHREDDING)


def new_table_properties(properties: Mapping[str, str], columns: Sequence[str], shredding: str) -> dict[str, str]:
    """Properties of a table a write creates: shredding is on by default when it has Variant
    columns, unless the write asks for ``shredding="off"`` (or the properties say otherwise);
    deletion vectors are on unless the properties say otherwise (``Table.create`` too).
    A ``varlake.compatibility`` table gets its compatibility's defaults first (neither:
    ``delta.protocol.compatibility_properties``)."""
    out = compatibility_properties(properties)
    out.setdefault("delta.enableDeletionVectors", "true")  # DELETE/UPDATE/MERGE: write.row_changes
    if shredding != "off" and columns:
        out.setdefault(ENABLE_SHREDDING, "true")
    return out


def evolve_metadata(metadata: Metadata, samples: Mapping[str, Any]) -> Metadata:
    """``metadata`` with each sampled Variant column's stored schema inferred or evolved
    (dotted column name -> Arrow Variant array or Variants). The same object when nothing
    changes or shredding is off, so callers commit a metaData action only when needed."""
    if not is_true(metadata.configuration, ENABLE_SHREDDING):
        return metadata
    cfg = dict(metadata.configuration)
    changed = False
    for name, sample in samples.items():
        current = cfg.get(SHREDDING_PROPERTY + name) or None
        text = evolve_stable_ddl(current, sample)
        if text != (current or ""):
            cfg[SHREDDING_PROPERTY + name] = text
            changed = True
    return replace(metadata, configuration=cfg) if changed else metadata


def plan_shredding(
    columns: Sequence[str],
    properties: Mapping[str, str],
    shredding: str = "auto",
    samples: Mapping[str, Any] | None = None,
    metadata: Metadata | None = None,
    where: str = "write",
) -> ShreddingPlan:
    """The shredding of one write to a table with ``properties`` (or about to be created with them).

    ``shredding``: ``auto`` (infer/evolve the stored schemas from ``samples``), ``off``
    (unshredded files, stored schemas kept), or one DDL for every Variant column.
    ``metadata`` is the table's current metaData (None for a table created by this write:
    the stored schemas then go into its creation properties).
    """
    if not columns:
        return ShreddingPlan({}, {})
    current = stored_schemas(properties, columns)
    if shredding == "off" or not is_true(properties, ENABLE_SHREDDING):
        if shredding not in ("off", "auto"):
            raise TableError(f"{where}: a shredding schema was given but the table does not set {ENABLE_SHREDDING}=true")
        return ShreddingPlan({c: None for c in columns}, current)
    if shredding == "auto":
        samples = samples or {}
        stored = {c: evolve_stable_ddl(current[c] or None, samples[c]) if c in samples else current[c] for c in columns}
    else:
        try:
            ddl = ShreddingSchema.parse(shredding).ddl
        except ShreddingSchemaError as exc:
            raise ShreddingSchemaError(f"{where}: shredding schema {shredding!r}: {exc}") from None
        blocked = unshreddable_reason(ddl)
        if blocked:
            raise TableError(f"{where}: cannot write shredding schema {shredding!r}: {blocked}")
        stored = {c: ddl for c in columns}
    change = None
    if metadata is not None and stored != current:
        cfg = dict(metadata.configuration)
        cfg.update({SHREDDING_PROPERTY + c: d for c, d in stored.items() if d != current[c]})
        change = replace(metadata, configuration=cfg)
    layout: dict[str, str | None] = {}
    notes = []
    for c, ddl in stored.items():
        blocked = unshreddable_reason(ddl) if ddl else None
        layout[c] = ddl if ddl and not blocked else None
        if blocked:
            notes.append(f"{c} written unshredded: {blocked}")
    return ShreddingPlan(layout, stored, change, "; ".join(notes) or None)
