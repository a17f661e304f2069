"""Partition values typed for the expression layer: every row of a file has the same
partition values, so a predicate over partition columns only is evaluated *exactly* on
them (including IS NULL and ``<=>``).

How stored text becomes a typed value is ``varlake.semantics.partition_values``' rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from varlake.semantics import partition_values


def parse_partition_value(raw: Any, dtype: str, tz: str = "UTC") -> Any:
    """Typed value of one serialized partition value (``None`` / ``""`` are NULL).

    Timestamps may be ``yyyy-mm-dd hh:mm:ss[.ffffff]`` (interpreted in ``tz``, the zone
    of the writer) or ISO 8601 with a zone, per the Delta protocol. A value that is not
    text is taken as already typed.
    """
    return partition_values.parse(raw, dtype, tz) if isinstance(raw, str) or raw is None else raw


def partition_row(values: Mapping[str, Any], columns: Mapping[str, str], tz: str = "UTC") -> dict[str, Any]:
    """Typed ``{column: value}`` for the given partition columns (name -> type).

    A column absent from ``values`` raises KeyError: unknown is not NULL.
    """
    return {name: parse_partition_value(values[name], dtype, tz) for name, dtype in columns.items()}
