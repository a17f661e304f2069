"""Handing a scan's Arrow table to pandas, Polars and DuckDB, Variants in the form asked.

The table comes from ``read_tasks(..., arrow_extension=True)`` (``Scan.to_arrow``): its
Variants, at any depth, are typed ``arrow.parquet.variant``. Per engine:

- pandas (``to_pandas``), ``variant=``: ``"variant"`` (default) gives top-level Variant
  columns the ``"variant"`` dtype, cells ``Variant`` objects (None for SQL NULL), and
  ``pa.Table.from_pandas`` gives them back as ``arrow.parquet.variant``; Variants nested in
  structs, lists or maps stay ``{"metadata", "value"}`` dicts. ``"json"`` gives Spark's
  JSON text at every depth, ``"struct"`` the storage dicts.
- Polars (``to_polars``), ``variant=``: ``"struct"`` (default) gives
  ``Struct{metadata: Binary, value: Binary}`` (lossless; write it back to a varlake table
  as it is), ``"json"`` gives Spark's JSON text (``String``) at every depth.
- DuckDB (``to_duckdb``): the table is registered on the connection as a view; DuckDB
  reads every ``arrow.parquet.variant`` field as ``VARIANT``.
"""

from __future__ import annotations

from typing import Any, Literal

import pyarrow as pa

from varlake.errors import TableError
from varlake.shred.variant_columns import variants_as_json, without_variant_extension

__all__ = ["PandasVariants", "PolarsVariants", "to_duckdb", "to_pandas", "to_polars"]

PandasVariants = Literal["variant", "json", "struct"]
PolarsVariants = Literal["struct", "json"]


def _check(variant: str, allowed: tuple[str, ...], what: str) -> None:
    if variant not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        raise TableError(f"{what}: variant must be one of {choices}, not {variant!r}")


def to_pandas(table: pa.Table, variant: PandasVariants = "variant", zone: str = "UTC") -> Any:
    """``table`` as a pandas DataFrame, Variants as ``variant`` says (JSON timestamps in ``zone``)."""
    _check(variant, ("variant", "json", "struct"), "to_pandas")
    if variant == "json":
        table = variants_as_json(table, zone)
    elif variant == "struct":
        table = without_variant_extension(table)
    return table.to_pandas()


def to_polars(table: pa.Table, variant: PolarsVariants = "struct", zone: str = "UTC") -> Any:
    """``table`` as a Polars DataFrame, Variants as ``variant`` says (JSON timestamps in ``zone``)."""
    _check(variant, ("struct", "json"), "to_polars")
    try:
        import polars as pl
    except ImportError:
        raise TableError("to_polars needs the polars package (pip install 'varlake[polars]')") from None
    table = variants_as_json(table, zone) if variant == "json" else without_variant_extension(table)
    return pl.from_arrow(table, rechunk=False)


def to_duckdb(table: pa.Table, connection: Any, name: str) -> Any:
    """Register ``table`` on the DuckDB ``connection`` (a new in-memory database when None)
    as the view ``name``, replacing a view of that name; returns the view's relation."""
    try:
        import duckdb
    except ImportError:
        raise TableError("to_duckdb needs the duckdb package (pip install duckdb)") from None
    if connection is None:
        connection = duckdb.connect()
    if not isinstance(name, str) or not name:
        raise TableError(f"to_duckdb: the view needs a name, got {name!r}")
    try:
        connection.register(name, table)
        return connection.view(name)
    except duckdb.Error as exc:
        raise TableError(f"to_duckdb: cannot create the view {name!r}: {exc}") from None
