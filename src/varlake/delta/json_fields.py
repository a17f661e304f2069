"""Typed reads of JSON action fields: a wrong or missing field names the log file and line."""

from __future__ import annotations

from typing import Any, Mapping

from varlake.errors import CorruptCommitError

__all__ = ["compact", "get_field", "get_str_map"]

_MISSING = object()


def get_field(
    body: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str, default: Any = _MISSING
) -> Any:
    """``body[key]`` checked to be ``kind``; ``default`` when absent/null (required if no default)."""
    value = body.get(key, _MISSING)
    if value is _MISSING or value is None:
        if default is _MISSING:
            raise CorruptCommitError(f"action is missing required field {key!r}", where)
        return default
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise CorruptCommitError(f"field {key!r} has type {type(value).__name__}, expected {_kind_name(kind)}", where)
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def get_str_map(body: Mapping[str, Any], key: str, where: str, default: Any = _MISSING) -> dict[str, str | None]:
    """A ``Map[String, String]`` field; Parquet-read maps arrive as lists of pairs."""
    value = body.get(key, _MISSING)
    if value is _MISSING or value is None:
        if default is _MISSING:
            raise CorruptCommitError(f"action is missing required field {key!r}", where)
        return default
    if isinstance(value, list):
        try:
            value = dict(value)
        except (TypeError, ValueError) as exc:
            raise CorruptCommitError(f"field {key!r} must be a map of strings", where) from exc
    if not isinstance(value, dict):
        raise CorruptCommitError(f"field {key!r} must be a map of strings", where)
    for k, v in value.items():
        if not isinstance(k, str) or not (v is None or isinstance(v, str)):
            raise CorruptCommitError(f"field {key!r} must map strings to strings, found {k!r}: {v!r}", where)
    return value


def compact(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without ``None`` values (optional fields are left out of the JSON)."""
    return {k: v for k, v in body.items() if v is not None}
