"""Data handed to a write or a MERGE: an Arrow table or batch, a pandas frame, a mapping of
column to values, or a list of dicts (rows). ``input_columns`` gives the rows column by column
(one rule for every entry point); ``source_table`` makes a MERGE source Arrow, with the
columns named like the target's Variant columns encoded as ``struct<metadata, value>`` (from
``Variant`` objects or plain Python values)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from varlake.errors import TableError
from varlake.shred.variant_arrays import variant_array
from varlake.shred.variant_columns import variant_nulls_filled, without_variant_extension

__all__ = ["input_columns", "source_table"]


def input_columns(data: Any, what: str) -> pa.Table | dict[str, Any]:
    """``data`` column by column: an Arrow table (a batch becomes one) as it is, else a dict of
    column name to Python values (a list of dicts gives every key any row has, None where a
    row lacks it); anything else is a ``TableError`` naming ``what``."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        # arrow.parquet.variant -> struct<metadata, value>; NULL Variants' children filled (Polars leaves them null)
        return variant_nulls_filled(without_variant_extension(data, unshred=True))
    if isinstance(data, list):
        names: dict[str, None] = {}
        for row in data:
            if not isinstance(row, Mapping):
                raise TableError(f"{what}: rows must be mappings of column name to value, got {type(row).__name__}")
            names.update(dict.fromkeys(row))
        return {str(n): [row.get(n) for row in data] for n in names}
    if isinstance(data, Mapping):
        return {
            str(n): variant_nulls_filled(without_variant_extension(values, unshred=True))
            if isinstance(values, (pa.Array, pa.ChunkedArray))
            else values
            for n, values in data.items()
        }
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover
        pd = None
    if pd is not None and isinstance(data, pd.DataFrame):
        return {str(n): data[n].tolist() for n in data.columns}
    raise TableError(f"{what}: cannot write {type(data).__name__}: pass an Arrow table, a pandas frame or a list of dicts")


def source_table(source: Any, variant_columns: Sequence[str], where: str, empty: pa.Schema | None = None) -> pa.Table:
    """``source`` (Arrow table/batch, pandas frame, list of dicts) as an Arrow table; an
    empty list is an empty table of schema ``empty`` (the target's)."""
    if isinstance(source, list) and not source and empty is not None:
        return empty.empty_table()
    columns = input_columns(source, f"{where}: MERGE source")
    if isinstance(columns, pa.Table):
        return columns
    variants = {c.lower() for c in variant_columns}
    arrays = {}
    for name, values in columns.items():
        try:
            if name.lower() in variants:
                arrays[name] = variant_array(values)
            else:
                arrays[name] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError) as exc:
            raise TableError(f"{where}: MERGE source column {name!r}: {exc}") from None
    if not arrays:
        raise TableError(f"{where}: the MERGE source has no columns")
    return pa.table(arrays)
