"""Test support for the shredded-Variant reader: a tiny reference shredder in plain Python.

It turns Python values into the physical shredded Arrow layout of VariantShredding.md,
one value at a time and as simply as possible, so that tests can write files of any
layout with pyarrow and check that ``read_parquet`` rebuilds the original values.
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from varlake.variant import TimestampNanos, Variant
from varlake.variant.encoder import MetadataBuilder, encode_python
from varlake.variant.temporal import Float32

MISSING = object()
SQL_NULL = object()


def _fits_decimal(v: Decimal, t: pa.Decimal128Type) -> bool:
    if not v.is_finite():
        return False
    exp = v.as_tuple().exponent
    if not isinstance(exp, int) or -exp > t.scale:
        return False
    unscaled = int(v.scaleb(t.scale))
    return len(str(abs(unscaled))) <= t.precision


def leaf_matches(v: Any, t: pa.DataType) -> bool:
    """Does Python value ``v`` belong in a typed column of Arrow type ``t``?"""
    if pa.types.is_boolean(t):
        return isinstance(v, bool)
    if pa.types.is_integer(t):
        if not isinstance(v, int) or isinstance(v, bool):
            return False
        bits = t.bit_width
        return -(1 << (bits - 1)) <= v < (1 << (bits - 1))
    if pa.types.is_float32(t):
        return isinstance(v, Float32)
    if pa.types.is_float64(t):
        return isinstance(v, float) and not isinstance(v, Float32)
    if pa.types.is_decimal(t):
        return isinstance(v, Decimal) and _fits_decimal(v, t)
    if pa.types.is_date32(t):
        return isinstance(v, dt.date) and not isinstance(v, dt.datetime)
    if pa.types.is_time64(t):
        return isinstance(v, dt.time)
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            return isinstance(v, TimestampNanos) and v.utc == (t.tz is not None)
        return isinstance(v, dt.datetime) and (v.tzinfo is not None) == (t.tz is not None)
    if pa.types.is_string(t):
        return isinstance(v, str)
    if pa.types.is_binary(t):
        return isinstance(v, bytes)
    if isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.uuid":
        return isinstance(v, uuid.UUID)
    raise AssertionError(f"no leaf rule for {t}")


def _leaf_python(v: Any, t: pa.DataType) -> Any:
    if isinstance(v, TimestampNanos):
        return v.nanos
    if isinstance(v, uuid.UUID):
        return v.bytes
    return v


def shred_value(v: Any, t: pa.DataType | None, meta: MetadataBuilder) -> dict[str, Any]:
    """``{"value": bytes|None, "typed_value": ...}`` for one value (MISSING = absent field)."""
    if v is MISSING:
        return {"value": None, "typed_value": None}
    if t is None:
        return {"value": encode_python(v, meta), "typed_value": None}
    if pa.types.is_struct(t):
        if not isinstance(v, dict):
            return {"value": encode_python(v, meta), "typed_value": None}
        names = [t.field(i).name for i in range(t.num_fields)]
        typed = {n: shred_value(v.get(n, MISSING), t.field(n).type, meta) for n in names}
        rest = {k: x for k, x in v.items() if k not in names}
        return {"value": encode_python(rest, meta) if rest else None, "typed_value": typed}
    if pa.types.is_list(t):
        if not isinstance(v, list):
            return {"value": encode_python(v, meta), "typed_value": None}
        return {"value": None, "typed_value": [shred_value(x, t.value_type, meta) for x in v]}
    if v is not None and leaf_matches(v, t):
        return {"value": None, "typed_value": _leaf_python(v, t)}
    return {"value": encode_python(v, meta), "typed_value": None}


def level_type(t: pa.DataType | None, typed_first: bool = False, with_value: bool = True) -> pa.StructType:
    """Arrow type of one ``value``/``typed_value`` level for logical shredding type ``t``."""
    fields = []
    if with_value:
        fields.append(pa.field("value", pa.binary()))
    if t is not None:
        fields.append(pa.field("typed_value", physical_type(t, typed_first)))
    if typed_first:
        fields.reverse()
    return pa.struct(fields)


def physical_type(t: pa.DataType, typed_first: bool = False) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct(
            [pa.field(t.field(i).name, level_type(t.field(i).type, typed_first), nullable=False) for i in range(t.num_fields)]
        )
    if pa.types.is_list(t):
        return pa.list_(pa.field("element", level_type(t.value_type, typed_first), nullable=False))
    return t


def variant_group_type(t: pa.DataType | None, typed_first: bool = False) -> pa.StructType:
    level = level_type(t, typed_first)
    return pa.struct([pa.field("metadata", pa.binary(), nullable=False), *level])


def _storage_type(t: pa.DataType) -> pa.DataType:
    """``t`` with extension types replaced by their storage (pyarrow cannot convert nested rows to them)."""
    if isinstance(t, pa.BaseExtensionType):
        return t.storage_type
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _storage_type(f.type), f.nullable) for f in t])
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, _storage_type(t.value_type), t.value_field.nullable))
    return t


def _restore_extensions(arr: pa.Array, t: pa.DataType) -> pa.Array:
    if isinstance(t, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(t, arr)
    mask = pa.compute.is_null(arr) if arr.null_count else None
    if pa.types.is_struct(t):
        children = [_restore_extensions(arr.field(i), t.field(i).type) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_list(t):
        values = _restore_extensions(arr.values, t.value_type)
        return pa.ListArray.from_arrays(arr.offsets, values, type=t, mask=mask)
    return arr


def shredded_column(values: list[Any], t: pa.DataType | None, typed_first: bool = False) -> pa.StructArray:
    """The shredded Variant group for ``values`` (``SQL_NULL`` marks a null row)."""
    rows = []
    for v in values:
        if v is SQL_NULL:
            rows.append(None)
            continue
        meta = MetadataBuilder()
        encode_python(v, meta)  # registers every key of the row, shredded or not
        row = shred_value(v, t, meta)
        row["metadata"] = meta.build()
        rows.append(row)
    target = variant_group_type(t, typed_first)
    storage = _storage_type(target)
    arr = pa.array(rows, type=storage)
    return arr if storage == target else _restore_extensions(arr, target)


def expected_variants(values: list[Any]) -> list[Variant | None]:
    return [None if v is SQL_NULL else Variant.from_python(v) for v in values]


def write_variant_file(path: Path, column: pa.Array, row_group_size: int | None = None, **write_options: Any) -> Path:
    """A file with columns ``id`` (row number) and ``v`` (the Variant group)."""
    table = pa.table({"id": pa.array(range(len(column)), pa.int64()), "v": column})
    pq.write_table(table, path, row_group_size=row_group_size, **write_options)
    return path


def as_variants(column: pa.ChunkedArray | pa.Array) -> list[Variant | None]:
    """Variant per row of an unshredded ``struct<metadata, value>`` column."""
    return [None if r is None else Variant(r["metadata"], r["value"]) for r in column.to_pylist()]
