"""Checks shared by the column-mapped write tests: a data file's footer and an ``add``'s
statistics and partition values follow PROTOCOL.md "Writer Requirements for Column
Mapping" for the table's schema -- physical names at every struct level, every id as the
Parquet ``field_id``, Variant groups unmapped inside."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from varlake.delta.schema import ArrayType, DataType, MapType, StructField, StructType, VariantType

PHYSICAL = "delta.columnMapping.physicalName"
ID = "delta.columnMapping.id"
FIELD_ID = b"PARQUET:field_id"


def _field_id(f: pa.Field) -> int | None:
    return None if f.metadata is None or FIELD_ID not in f.metadata else int(f.metadata[FIELD_ID])


def _no_ids(t: pa.DataType) -> None:
    for i in range(t.num_fields):
        child = t.field(i)
        assert _field_id(child) is None, f"field id inside a Variant group: {child}"
        _no_ids(child.type)


def _check_field(f: StructField, af: pa.Field) -> None:
    assert af.name == f.metadata[PHYSICAL], (f.name, af.name)
    assert _field_id(af) == f.metadata[ID], (f.name, af.metadata)
    _check_type(f.type, af.type)


def _check_type(dtype: DataType, at: pa.DataType) -> None:
    if isinstance(dtype, VariantType):
        names = {at.field(i).name for i in range(at.num_fields)}
        assert {"metadata"} <= names <= {"metadata", "value", "typed_value"}, names  # not mapped
        _no_ids(at)
    elif isinstance(dtype, StructType):
        assert at.num_fields == len(dtype.fields)
        for f, i in zip(dtype.fields, range(at.num_fields)):
            _check_field(f, at.field(i))
    elif isinstance(dtype, ArrayType):
        _check_type(dtype.element_type, at.value_type)
    elif isinstance(dtype, MapType):
        _check_type(dtype.key_type, at.key_type)
        _check_type(dtype.value_type, at.item_type)


def check_footer(path: str | Path, schema: StructType, partition_columns: tuple[str, ...] = ()) -> pa.Schema:
    """Assert the file at ``path`` holds ``schema``'s data columns under physical names with ids."""
    arrow = pq.read_schema(path)
    fields = [f for f in schema.fields if f.name not in partition_columns]
    assert arrow.names == [f.metadata[PHYSICAL] for f in fields]
    for f, af in zip(fields, arrow):
        _check_field(f, af)
    return arrow


def _stat_keys(stats: dict[str, Any]) -> set[tuple[str, ...]]:
    out: set[tuple[str, ...]] = set()

    def walk(d: dict[str, Any], prefix: tuple[str, ...]) -> None:
        for k, v in d.items():
            if isinstance(v, dict):
                walk(v, (*prefix, k))
            else:
                out.add((*prefix, k))

    for key in ("minValues", "maxValues", "nullCount"):
        walk(stats.get(key, {}), ())
    return out


def physical_paths(schema: StructType) -> set[tuple[str, ...]]:
    """Every physical path to a stats-bearing leaf (primitives and Variants through structs)."""
    out: set[tuple[str, ...]] = set()

    def walk(struct: StructType, prefix: tuple[str, ...]) -> None:
        for f in struct.fields:
            path = (*prefix, f.metadata[PHYSICAL])
            if isinstance(f.type, StructType):
                walk(f.type, path)
            elif not isinstance(f.type, (ArrayType, MapType)):
                out.add(path)

    walk(schema, ())
    return out


def check_add(add: Any, schema: StructType, partition_columns: tuple[str, ...] = ()) -> dict[str, Any]:
    """Assert an ``add``'s stats and partition values are keyed by physical names; its stats."""
    stats = json.loads(add.stats)
    keys = _stat_keys(stats)
    assert keys, "no statistics written"
    assert keys <= physical_paths(schema), keys - physical_paths(schema)
    assert set(add.partition_values) == {schema.field(c).metadata[PHYSICAL] for c in partition_columns}
    return stats


def _layout(t: pa.DataType) -> Any:
    if t.num_fields == 0:
        return None  # a leaf: encodings (INT96, millis) may differ between writers
    return [(t.field(i).name, _field_id(t.field(i)), _layout(t.field(i).type)) for i in range(t.num_fields)]


def same_layout(mine: pa.Schema, theirs: pa.Schema) -> bool:
    """Whether two files name and number their fields alike at every level (leaf types aside)."""
    return [(f.name, _field_id(f), _layout(f.type)) for f in mine] == [(f.name, _field_id(f), _layout(f.type)) for f in theirs]
