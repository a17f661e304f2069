"""A MERGE source as Arrow: an Arrow table or batch as it is; a pandas frame or a list of
dicts column by column, with the columns named like the target's Variant columns encoded
as ``struct<metadata, value>`` (from ``Variant`` objects or plain Python values)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from varlake.errors import TableError
from varlake.shred.variant_arrays import variant_array

__all__ = ["source_table"]


def source_table(source: Any, variant_columns: Sequence[str], where: str, empty: pa.Schema | None = None) -> pa.Table:
    """``source`` (Arrow table/batch, pandas frame, list of dicts) as an Arrow table; an
    empty list is an empty table of schema ``empty`` (the target's)."""
    if isinstance(source, pa.RecordBatch):
        return pa.Table.from_batches([source])
    if isinstance(source, pa.Table):
        return source
    if isinstance(source, list) and not source and empty is not None:
        return empty.empty_table()
    if isinstance(source, list):
        names: dict[str, None] = {}
        for row in source:
            if not isinstance(row, Mapping):
                raise TableError(f"{where}: MERGE source rows must be mappings, got {type(row).__name__}")
            names.update(dict.fromkeys(row))
        columns = {str(n): [row.get(n) for row in source] for n in names}
    else:
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover
            pd = None
        if pd is None or not isinstance(source, pd.DataFrame):
            raise TableError(f"{where}: a MERGE source must be an Arrow table, a pandas frame or a list of dicts")
        columns = {str(n): source[n].tolist() for n in source.columns}
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
