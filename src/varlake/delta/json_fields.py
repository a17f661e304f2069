"""Typed reads of JSON in the log: a wrong, missing or out-of-range field names the log file
and line; JSON nested deeper than ``MAX_JSON_DEPTH`` is refused before it is decoded."""

from __future__ import annotations

import json
import re
import sys
import threading
from typing import Any, Mapping

import numpy as np

from varlake.errors import CorruptCommitError, CorruptLogError, VarlakeError

__all__ = [
    "LONG_MAX",
    "LONG_MIN",
    "MAX_JSON_DEPTH",
    "compact",
    "get_field",
    "get_long",
    "get_str_map",
    "brief",
    "json_depth",
    "load_json",
]

MAX_JSON_DEPTH = 1000
"""Deepest nesting of JSON arrays and objects varlake decodes from a table's log (commit lines,
``schemaString``, ``stats``, ``commitInfo``). It is Jackson's default
``StreamReadConstraints.maxNestingDepth``, the parser Spark and Delta read these texts with: a
text Spark can read, varlake can read; a deeper one is refused with a named error by a scan of
the text that runs before (and instead of) any recursive decoding."""

LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1
"""Range of Delta's ``long`` (a Java signed 64-bit integer): every integer field of an action
(``protocol`` versions and deletion vector ``offset``/``sizeInBytes`` are ``int``s, 32 bits)."""

_MISSING = object()
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_STEPS = np.zeros(256, dtype=np.int64)
_STEPS[[ord("["), ord("{")]] = 1
_STEPS[[ord("]"), ord("}")]] = -1
# CPython's decoder recurses once per level and shares the interpreter's recursion limit with
# the caller's stack; texts nested deeper than this are decoded with the limit raised (below).
_NATIVE_SAFE_DEPTH = 200
_DEEP_DECODE = threading.Lock()


def json_depth(text: str) -> int:
    """How deeply JSON arrays/objects nest in ``text`` (brackets inside strings do not count).

    Linear and non-recursive: strings are blanked with one regex, then the depth is the
    maximum of a running sum of +1 per opening and -1 per closing bracket.
    """
    if text.count("[") + text.count("{") <= 1:
        return text.count("[") + text.count("{")
    stripped = _STRING.sub("", text) if '"' in text else text
    raw = np.frombuffer(stripped.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    levels = np.cumsum(_STEPS[raw])
    return max(int(levels.max()), 0) if len(levels) else 0


def load_json(
    text: str | bytes,
    where: str,
    what: str,
    error: type[VarlakeError] = CorruptCommitError,
    max_depth: int = MAX_JSON_DEPTH,
    **kwargs: Any,
) -> Any:
    """``json.loads(text)`` for untrusted log JSON; ``error`` names ``where`` and ``what`` when the
    text is not JSON or nests deeper than ``max_depth``. ``kwargs`` go to ``json.loads``."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _error(error, f"{what} is not UTF-8 text (byte {exc.start})", where) from None
    opens = text.count("[") + text.count("{")
    depth = json_depth(text) if opens > min(_NATIVE_SAFE_DEPTH, max_depth) else opens
    if depth > max_depth:
        raise _error(error, f"{what} nests JSON {depth} levels deep, deeper than the limit of {max_depth}", where)
    try:
        if depth <= _NATIVE_SAFE_DEPTH:
            return _decode(text, kwargs)
        with _DEEP_DECODE:  # one deep decode at a time, so the limit is always restored
            old = sys.getrecursionlimit()
            sys.setrecursionlimit(old + depth + 100)
            try:
                return _decode(text, kwargs)
            finally:
                sys.setrecursionlimit(old)
    except RecursionError:
        raise _error(error, f"{what} nests JSON too deeply ({depth} levels) to decode here", where) from None
    except UnicodeEncodeError as exc:
        raise _error(error, f"{what} holds a lone UTF-16 surrogate escape, which UTF-8 cannot store ({exc.reason})", where) from None
    except ValueError as exc:
        raise _error(error, f"truncated or invalid JSON ({what} is not valid JSON): {exc}", where) from None


def _decode(text: str, kwargs: dict[str, Any]) -> Any:
    value = json.loads(text, **kwargs)
    if _SURROGATE.search(text):  # only then can a decoded string hold a lone surrogate
        # (``default=str``: numbers decoded as ``Decimal`` hold no string to check)
        json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
    return value


def _error(cls: type[VarlakeError], message: str, where: str) -> VarlakeError:
    if issubclass(cls, CorruptLogError):
        return cls(message, where)
    return cls(f"{where}: {message}")


def get_field(
    body: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str, default: Any = _MISSING
) -> Any:
    """``body[key]`` checked to be ``kind``; ``default`` when absent/null (required if no default).

    An ``int`` must also fit Delta's ``long`` (signed 64 bits), so that nothing downstream
    (Arrow columns, checkpoints) can overflow on it.
    """
    value = body.get(key, _MISSING)
    if value is _MISSING or value is None:
        if default is _MISSING:
            raise CorruptCommitError(f"action is missing required field {key!r}", where)
        return default
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise CorruptCommitError(f"field {key!r} has type {type(value).__name__}, expected {_kind_name(kind)}", where)
    if type(value) is int and not LONG_MIN <= value <= LONG_MAX:
        raise CorruptCommitError(f"field {key!r} = {_short(value)} does not fit a long (signed 64-bit)", where)
    return value


def get_long(body: Mapping[str, Any], key: str, where: str, default: Any = _MISSING, *, bits: int = 64) -> Any:
    """An integer field that must fit a signed ``bits``-bit integer (64: ``long``, 32: ``int``)."""
    value = get_field(body, key, int, where, default)
    if value is not None and value is not default and bits < 64 and not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise CorruptCommitError(f"field {key!r} = {_short(value)} does not fit an int (signed {bits}-bit)", where)
    return value


def _short(value: int) -> str:
    text = str(value) if value.bit_length() < 256 else f"a {value.bit_length()}-bit integer"
    return text


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
            raise CorruptCommitError(f"field {key!r} must map strings to strings, found {brief(k)}: {brief(v)}", where)
    return value


def brief(value: Any) -> str:
    """A bounded, non-recursive description of a JSON value for an error message."""
    if isinstance(value, (dict, list)):
        return f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 256 else _short(value)
    return text if len(text) <= 80 else text[:77] + "..."


def compact(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without ``None`` values (optional fields are left out of the JSON)."""
    return {k: v for k, v in body.items() if v is not None}
