"""Z-order clustering of a Spark rewrite, computed and sorted on the executors.

The keys are ``write.clustering.ClusterKey``s (parsed, bound and normalised there, as for
the Python path) turned into Spark SQL (``key_sql``: a column, or ``try_variant_get`` for a
Variant path, NULL when a value does not convert -- as the Python path's ``key_values``).

Each key's rank replaces the Python path's exact dense rank (``clustering.zorder_indices``)
by its rank among the *distinct values of a sample* of the rows (at most ``SAMPLE_ROWS``,
collected to the driver once per bin): NULLs first, then by value (strings and binaries by
their bytes, numbers by value as float64 -- integers past 2**53 may tie --, NaN last).
When the sample holds every distinct value -- a low-cardinality key such as a collection
name -- the ranks are exactly the dense ranks; otherwise values between two sampled values
share a rank. Ranks are scaled to ``min(31, 62 // len(keys))`` bits and their bits
interleaved (the first key holds the high bit of each group) into a non-negative ``bigint``
Z-value, by a scalar Arrow UDF that sees only the key columns. Rows are then
range-partitioned by the Z-value into the bin's number of files and sorted within each
partition (by the Z-value, then the keys: rows whose values share a sampled rank are still
in key order), so every output file is a contiguous Z range written by its own task. The
Z-values may differ from the Python path's (sampled ranks, 62 rather than 64 bits): only
the order of rows across and within files can differ, never the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from varlake.expr.tree import Column, VariantGet
from varlake.semantics.types import backquote
from varlake.write.maintenance.clustering import ClusterKey

__all__ = ["SAMPLE_ROWS", "key_sql", "z_values", "zordered"]

#: rows sampled per bin to rank the keys' values
SAMPLE_ROWS = 50_000
_Z, _KEY = "__vl_z", "__vl_k"


def key_sql(key: ClusterKey) -> str:
    """A clustering key as a Spark SQL expression (NULL when a Variant value does not convert)."""
    term = key.term
    if isinstance(term, Column):
        return ".".join(backquote(p) for p in term.path)
    assert isinstance(term, VariantGet)
    column = ".".join(backquote(p) for p in term.column.path)
    return f"try_variant_get({column}, '{_dollar(term.path)}', '{key.type}')"


def _dollar(normalized: str) -> str:
    """A normalized path (``$['a']['b'][0]``) as Spark's ``variant_get`` path text, quoted for SQL."""
    return normalized.replace("\\", "\\\\").replace("'", "\\'")


def _orderable(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A key column as (values numpy compares in the key's order, validity): text and bytes
    as Python objects (code points order UTF-8 text as its bytes do), everything else as
    float64 (monotone: numbers, decimals, booleans, days, microseconds)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    t = array.type
    if pa.types.is_null(t):
        return np.zeros(len(array), dtype=np.float64), valid
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        values = np.asarray(array.to_numpy(zero_copy_only=False), dtype=object)
        values[~valid] = "" if pa.types.is_string(t) or pa.types.is_large_string(t) else b""
        return values, valid
    if pa.types.is_boolean(t):
        array = array.cast(pa.int8())
    elif pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        array = array.cast(pa.int64()) if not pa.types.is_date32(t) else array.cast(pa.int32())
    numbers = array.cast(pa.float64(), safe=False).fill_null(0.0)  # rounding keeps the order
    return np.asarray(numbers.to_numpy(zero_copy_only=False), dtype=np.float64), valid


def _bounds(array: pa.Array | pa.ChunkedArray, limit: int) -> np.ndarray:
    """The sorted distinct non-NULL values of a sampled key column, thinned to ``limit``."""
    values, valid = _orderable(array)
    distinct = np.unique(values[valid]) if valid.any() else values[:0]
    if len(distinct) > limit:
        distinct = distinct[np.linspace(0, len(distinct) - 1, limit).astype(np.int64)]
    return distinct


def _scaled_ranks(array: pa.Array | pa.ChunkedArray, bounds: np.ndarray, bits: int) -> np.ndarray:
    """Ranks of a key column among ``bounds`` (NULL 0, a value its position + 1) scaled to ``bits``."""
    values, valid = _orderable(array)
    ranks = np.zeros(len(values), dtype=np.uint64)
    if valid.any():
        ranks[valid] = np.searchsorted(bounds, values[valid], side="left").astype(np.uint64) + np.uint64(1)
    scale = float(1 << bits) / (len(bounds) + 1)
    return np.minimum((ranks.astype(np.float64) * scale).astype(np.uint64), np.uint64((1 << bits) - 1))


def _bits(width: int) -> int:
    return max(1, min(31, 62 // width))


def z_values(columns: Sequence[pa.Array | pa.ChunkedArray], bounds: Sequence[np.ndarray]) -> np.ndarray:
    """The Z-values (non-negative int64) of rows given each key's column and sampled bounds."""
    width = len(columns)
    bits = _bits(width)
    ranks = [_scaled_ranks(c, b, bits) for c, b in zip(columns, bounds)]
    if width == 1:
        return ranks[0].astype(np.int64)
    z = np.zeros(len(ranks[0]), dtype=np.uint64)
    for b in range(bits):
        for i, r in enumerate(ranks):
            z |= ((r >> np.uint64(b)) & np.uint64(1)) << np.uint64(b * width + (width - 1 - i))
    return z.astype(np.int64)


def _sample_bounds(keyed: Any, names: Sequence[str], num_rows: int | None, bits: int) -> list[np.ndarray]:
    """Each key's bounds from a sample of at most about ``SAMPLE_ROWS`` rows (one job)."""
    keys = keyed.select(*names)
    if num_rows is None:
        num_rows = keys.count()
    if num_rows > SAMPLE_ROWS:
        keys = keys.sample(withReplacement=False, fraction=SAMPLE_ROWS / num_rows, seed=20261124)
    sample = keys.toArrow()
    limit = max(1, (1 << bits) - 2)
    return [_bounds(sample.column(n), limit) for n in names]


def zordered(df: Any, keys: Sequence[ClusterKey], files: int, num_rows: int | None = None) -> Any:
    """``df`` range-partitioned into ``files`` partitions by the Z-value of ``keys`` and sorted
    within each (module doc); the columns stay ``df``'s."""
    import warnings

    from pyspark.sql.functions import ArrowUDFType, arrow_udf, col

    names = [f"{_KEY}{i}" for i in range(len(keys))]
    columns = [backquote(c) for c in df.columns]
    keyed = df.selectExpr(*columns, *[f"{key_sql(k)} AS {n}" for k, n in zip(keys, names)])
    bounds = _sample_bounds(keyed, names, num_rows, _bits(len(keys)))

    def z(*arrays: pa.Array) -> pa.Array:
        return pa.array(z_values(arrays, bounds), pa.int64())

    with warnings.catch_warnings():  # PySpark prefers type hints, which cannot say "any number of arrays"
        warnings.simplefilter("ignore", UserWarning)
        zudf = arrow_udf(z, "bigint", ArrowUDFType.SCALAR)
    zcol = zudf(*[col(n) for n in names])
    zdf = keyed.withColumn(_Z, zcol)
    ordered = zdf.repartitionByRange(max(files, 1), col(_Z)).sortWithinPartitions(_Z, *names)  # keys break Z ties
    return ordered.drop(_Z, *names)
