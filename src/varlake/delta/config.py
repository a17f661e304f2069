"""Typed access to ``delta.*`` table properties (``metaData.configuration``)."""

from __future__ import annotations

import re
from typing import Mapping

from varlake.delta import constants as C
from varlake.errors import InvalidTablePropertyError

__all__ = [
    "checkpoint_interval",
    "deleted_file_retention_hours",
    "is_true",
    "num_indexed_cols",
    "parse_interval_hours",
    "validate",
    "write_stats_as_json",
]

PROP_NUM_INDEXED_COLS = "delta.dataSkippingNumIndexedCols"
DEFAULT_NUM_INDEXED_COLS = 32

_INTERVAL = re.compile(r"^\s*(?:interval\s+)?(\d+(?:\.\d+)?)\s*([a-z]+?)s?\s*$", re.IGNORECASE)
_UNIT_HOURS = {
    "nanosecond": 1 / 3.6e12,
    "microsecond": 1 / 3.6e9,
    "millisecond": 1 / 3.6e6,
    "second": 1 / 3600,
    "minute": 1 / 60,
    "hour": 1.0,
    "day": 24.0,
    "week": 168.0,
}


def is_true(config: Mapping[str, str], key: str) -> bool:
    """Whether property ``key`` is set to ``true`` (case-insensitive, as Spark reads it)."""
    value = config.get(key)
    return value is not None and value.strip().lower() == "true"


def parse_interval_hours(key: str, text: str) -> float:
    """Hours in a Spark calendar-interval string such as ``interval 7 days``."""
    m = _INTERVAL.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _UNIT_HOURS:
        raise InvalidTablePropertyError(f"table property {key}={text!r} is not an interval like 'interval 7 days'")
    return float(m.group(1)) * _UNIT_HOURS[unit]


def checkpoint_interval(config: Mapping[str, str]) -> int:
    """``delta.checkpointInterval`` (default 10): checkpoint every N commits."""
    text = config.get(C.PROP_CHECKPOINT_INTERVAL)
    if text is None:
        return C.DEFAULT_CHECKPOINT_INTERVAL
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidTablePropertyError(
            f"table property {C.PROP_CHECKPOINT_INTERVAL}={text!r} must be a positive integer"
        )
    return value


def deleted_file_retention_hours(config: Mapping[str, str]) -> float:
    """``delta.deletedFileRetentionDuration`` in hours (default one week)."""
    text = config.get(C.PROP_DELETED_FILE_RETENTION)
    if text is None:
        return C.DEFAULT_DELETED_FILE_RETENTION_HOURS
    return parse_interval_hours(C.PROP_DELETED_FILE_RETENTION, text)


def write_stats_as_json(config: Mapping[str, str]) -> bool:
    """``delta.checkpoint.writeStatsAsJson`` (default true)."""
    text = config.get(C.PROP_WRITE_STATS_AS_JSON)
    return text is None or text.strip().lower() != "false"


def in_commit_timestamps_enabled(config: Mapping[str, str]) -> bool:
    """``delta.enableInCommitTimestamps``."""
    return is_true(config, C.PROP_ENABLE_ICT)


def ict_enablement_version(config: Mapping[str, str]) -> int | None:
    """First version whose commit carries ``inCommitTimestamp`` (``None`` = from version 0)."""
    text = config.get(C.PROP_ICT_ENABLEMENT_VERSION)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError as exc:
        raise InvalidTablePropertyError(
            f"table property {C.PROP_ICT_ENABLEMENT_VERSION}={text!r} is not an integer"
        ) from exc


def num_indexed_cols(config: Mapping[str, str]) -> int:
    """``delta.dataSkippingNumIndexedCols`` (default 32; -1 means every column)."""
    text = config.get(PROP_NUM_INDEXED_COLS)
    if text is None:
        return DEFAULT_NUM_INDEXED_COLS
    try:
        value = int(text)
    except ValueError:
        value = -2
    if value < -1:
        raise InvalidTablePropertyError(f"table property {PROP_NUM_INDEXED_COLS}={text!r} must be an integer >= -1")
    return value


_BOOLEAN_PROPERTIES = (
    C.PROP_APPEND_ONLY,
    C.PROP_ENABLE_VARIANT_SHREDDING,
    C.PROP_ENABLE_CDF,
    C.PROP_ENABLE_DELETION_VECTORS,
    C.PROP_ENABLE_ROW_TRACKING,
    C.PROP_ENABLE_ICT,
    C.PROP_WRITE_STATS_AS_JSON,
    C.PROP_WRITE_STATS_AS_STRUCT,
)


def validate(config: Mapping[str, str]) -> None:
    """Every ``delta.*`` property varlake interprets has a value it can use; raised when the
    properties are set (table creation or a metadata change), never after a commit lands."""
    checkpoint_interval(config)
    deleted_file_retention_hours(config)
    if C.PROP_LOG_RETENTION in config:
        parse_interval_hours(C.PROP_LOG_RETENTION, config[C.PROP_LOG_RETENTION])
    ict_enablement_version(config)
    num_indexed_cols(config)
    for key in _BOOLEAN_PROPERTIES:
        text = config.get(key)
        if text is not None and text.strip().lower() not in ("true", "false"):
            raise InvalidTablePropertyError(f"table property {key}={text!r} must be 'true' or 'false'")
