"""What the skipping evaluator needs to know about one data file.

The table layer builds a ``FileStats`` per ``add`` action from Delta's stats JSON (or a
checkpoint's ``stats_parsed``) after mapping physical to logical column names.  Values
are Python natives in the column's type: int / Decimal / float / str / bool / bytes /
date, and datetime (tz-aware UTC for ``timestamp``, naive for ``timestamp_ntz``).
Variant per-path bounds are keyed by ``(variant column path, RFC 9535 normalized path)``
and carry the Variant primitive type family they were written with; ``variant_iso_dates``
names the paths (same keys) every value of which is a string of an ISO date, a fact the
writer proved from the values (the ``varlake.layout.dates`` tag), so that their casts to
a date or timestamp cannot fail and their string bounds are date bounds.  Anything absent
means "unknown", never "no rows".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from varlake.expr.types import ColumnPath, TypeFamily

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


def _empty() -> Mapping[Any, Any]:
    return _EMPTY

#: Delta's default prefix length for string min/max statistics.
STRING_PREFIX_LENGTH = 32


class VariantBound(NamedTuple):
    """One Variant path's min or max: the decoded value and its primitive type family."""

    value: Any
    family: TypeFamily


VariantStatsKey = tuple[ColumnPath, str]


@dataclass(frozen=True, slots=True)
class FileStats:
    """Per-file statistics (all optional).

    ``min_values`` / ``max_values`` / ``null_count`` are keyed by column path;
    ``partition_values`` by partition column name, as Delta serializes them (strings,
    ``None`` or ``""`` for NULL) or already typed.
    """

    num_records: int | None = None
    min_values: Mapping[ColumnPath, Any] = field(default_factory=_empty)
    max_values: Mapping[ColumnPath, Any] = field(default_factory=_empty)
    null_count: Mapping[ColumnPath, int] = field(default_factory=_empty)
    variant_min: Mapping[VariantStatsKey, VariantBound] = field(default_factory=_empty)
    variant_max: Mapping[VariantStatsKey, VariantBound] = field(default_factory=_empty)
    #: paths whose every value in the file is a string matching ``ISO_DATE_TEXT``
    variant_iso_dates: frozenset[VariantStatsKey] = frozenset()
    partition_values: Mapping[str, Any] = field(default_factory=_empty)
