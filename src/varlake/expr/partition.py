"""Partition values: Delta stores them as strings; typed by the schema they are exact.

Every row of a file has the same partition values, so a predicate over partition
columns only is evaluated *exactly* on them (including IS NULL and ``<=>``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from varlake.errors import ExpressionTypeError
from varlake.expr.casts import cast_value, parse_timestamp
from varlake.expr.types import decimal_params, is_integral


def parse_partition_value(raw: Any, dtype: str, tz: str = "UTC") -> Any:
    """Typed value of one serialized partition value (``None`` / ``""`` are NULL).

    Timestamps may be ``yyyy-mm-dd hh:mm:ss[.ffffff]`` (interpreted in ``tz``, the zone
    of the writer) or ISO 8601 with a zone, per the Delta protocol.
    """
    if raw is None or (isinstance(raw, str) and raw == ""):
        return None
    if not isinstance(raw, str) or dtype == "string":
        return raw
    if is_integral(dtype):
        return int(raw)
    if decimal_params(dtype) is not None:
        return Decimal(raw)
    if dtype in ("double", "float"):
        return float(raw)
    if dtype == "boolean":
        if raw.lower() not in ("true", "false"):
            raise ExpressionTypeError(f"partition value {raw!r} is not a boolean")
        return raw.lower() == "true"
    if dtype == "date":
        return dt.date.fromisoformat(raw)
    if dtype == "timestamp":
        return parse_timestamp(raw, tz)
    if dtype == "timestamp_ntz":
        return parse_timestamp(raw, tz, ntz=True)
    if dtype == "binary":
        return raw.encode("latin-1")
    return cast_value(raw, "string", dtype, tz)


def partition_row(partition_values: Mapping[str, Any], columns: Mapping[str, str], tz: str = "UTC") -> dict[str, Any]:
    """Typed ``{column: value}`` for the given partition columns (name -> type).

    A column absent from ``partition_values`` raises KeyError: unknown is not NULL.
    """
    return {name: parse_partition_value(partition_values[name], dtype, tz) for name, dtype in columns.items()}
