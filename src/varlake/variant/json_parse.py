"""JSON text -> Variant, byte-identical to Spark 4.3's ``parse_json``.

The C JSON scanner of the standard library does the tokenising; hooks keep the
exact number text and key order, and a top-down pass encodes in document order
(keys enter the dictionary as Spark's Jackson-driven builder meets them).

Spark's rules reproduced here (verified against Spark in the oracle tests):
- integers take the narrowest of int8..int64; beyond int64 a decimal when the
  digits fit 38, else a double;
- numbers with a fraction and no exponent become the narrowest decimal when
  precision and scale fit 38, else a double; any exponent makes a double;
- only the first JSON value is read; after it, a number must be followed by
  whitespace (or the end), ``true``/``false``/``null`` by a non-identifier
  character, while strings, arrays and objects may be followed by anything;
- nesting deeper than 1000 levels, numbers longer than 1000 characters, lone
  surrogates, NaN/Infinity literals and duplicate keys (unless allowed; then
  the last value wins) are errors.
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from typing import Any

from varlake.errors import JsonParseError, UnsupportedValueError, VariantError, VariantSizeLimitError
from varlake.variant.constants import MAX_JSON_DEPTH, SIZE_LIMIT
from varlake.variant.encoder import (
    FALSE,
    NULL,
    TRUE,
    MetadataBuilder,
    encode_array,
    encode_decimal,
    encode_double,
    encode_int,
    encode_object,
    encode_utf8,
)

_MAX_NUMBER_LENGTH = 1000
_WHITESPACE = " \t\n\r"


class _Pairs(list):  # type: ignore[type-arg]
    """A JSON object as its ``(key, value)`` pairs, in document order, duplicates kept."""

    __slots__ = ()


class _BigInt:
    """An integer literal outside int64: its text decides decimal vs double later."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _parse_int(text: str) -> Any:
    if len(text) > 18:
        if len(text) > _MAX_NUMBER_LENGTH:
            raise JsonParseError(f"number of {len(text)} characters exceeds the 1000-character limit")
        value = int(text)
        if not -(1 << 63) <= value < (1 << 63):
            return _BigInt(text)
        return value
    return int(text)


def _parse_float(text: str) -> Any:
    if len(text) > _MAX_NUMBER_LENGTH:
        raise JsonParseError(f"number of {len(text)} characters exceeds the 1000-character limit")
    if "e" in text or "E" in text:
        return float(text)
    d = Decimal(text)
    exponent = d.as_tuple().exponent
    assert isinstance(exponent, int)
    digits = len(d.as_tuple().digits)
    if -exponent <= 38 and digits <= 38:
        return d
    return float(text)


def _reject_constant(name: str) -> Any:
    raise JsonParseError(f"invalid JSON literal {name}")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_Pairs,
    parse_int=_parse_int,
    parse_float=_parse_float,
    parse_constant=_reject_constant,
    strict=True,
)


def _encode(obj: Any, meta: MetadataBuilder, allow_duplicates: bool, depth: int) -> bytes:
    t = type(obj)
    if t is str:
        try:
            return encode_utf8(obj.encode("utf-8"))
        except UnicodeEncodeError:
            raise JsonParseError("string holds a lone surrogate (invalid \\u escape)") from None
    if t is int:
        return encode_int(obj)
    if t is _Pairs:
        if depth >= MAX_JSON_DEPTH:
            raise JsonParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        fields = []
        for key, val in obj:
            try:
                fid = meta.add(key)
                key.encode("utf-8")
            except UnicodeEncodeError:
                raise JsonParseError("object key holds a lone surrogate (invalid \\u escape)") from None
            fields.append((key, fid, _encode(val, meta, allow_duplicates, depth + 1)))
        return encode_object(fields, allow_duplicates)
    if t is list:
        if depth >= MAX_JSON_DEPTH:
            raise JsonParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        return encode_array([_encode(v, meta, allow_duplicates, depth + 1) for v in obj])
    if obj is None:
        return NULL
    if obj is True:
        return TRUE
    if obj is False:
        return FALSE
    if t is Decimal:
        return encode_decimal(obj)
    if t is float:
        return encode_double(obj)
    if t is _BigInt:
        if len(obj.text.lstrip("-")) <= 38:
            return encode_decimal(Decimal(obj.text))
        return encode_double(float(obj.text))
    raise UnsupportedValueError(f"unexpected JSON value {obj!r}")  # pragma: no cover


def _is_identifier_part(ch: str) -> bool:
    """Java's Character.isJavaIdentifierPart, which Jackson checks after true/false/null."""
    return ch.isalnum() or ch in "_$" or ord(ch) in range(0, 9) or 0x0E <= ord(ch) <= 0x1B or 0x7F <= ord(ch) <= 0x9F


def _check_tail(text: str, start: int, end: int) -> None:
    """Jackson reads only the first value but checks the character right after a scalar."""
    if end >= len(text):
        return
    first = text[start]
    nxt = text[end]
    if first in "-0123456789":
        if nxt not in _WHITESPACE:
            raise JsonParseError(f"unexpected character {nxt!r} after a number", end)
    elif first in "tfn" and _is_identifier_part(nxt):
        raise JsonParseError(f"unrecognized token starting {text[start:end + 1]!r}", start)


def _decode(text: str) -> Any:
    start = 0
    n = len(text)
    while start < n and text[start] in _WHITESPACE:
        start += 1
    if start == n:
        raise JsonParseError("no JSON value (empty input)", start)
    try:
        obj, end = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise JsonParseError(f"invalid JSON: {exc.msg}", exc.pos) from None
    except RecursionError:
        obj, end = _decode_deep(text, start)
    _check_tail(text, start, end)
    return obj


def _decode_deep(text: str, start: int) -> tuple[Any, int]:
    """Retry a deeply nested document with room on the stack (up to Spark's 1000 levels)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 4 * MAX_JSON_DEPTH + 500))
    try:
        return _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise JsonParseError(f"invalid JSON: {exc.msg}", exc.pos) from None
    except RecursionError:
        raise JsonParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    finally:
        sys.setrecursionlimit(old)


def parse_json_parts(text: str | bytes, allow_duplicate_keys: bool = False) -> tuple[bytes, bytes]:
    """``(metadata, value)`` for JSON ``text``; raises JsonParseError on bad input."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonParseError(f"input is not valid UTF-8 ({exc.reason})", exc.start) from None
    obj = _decode(text)
    meta = MetadataBuilder()
    try:
        value = _encode(obj, meta, allow_duplicate_keys, 0)
    except RecursionError:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 4 * MAX_JSON_DEPTH + 500))
        try:
            meta = MetadataBuilder()
            value = _encode(obj, meta, allow_duplicate_keys, 0)
        finally:
            sys.setrecursionlimit(old)
    except UnsupportedValueError as exc:
        raise JsonParseError(str(exc)) from None
    if len(value) > SIZE_LIMIT:
        raise VariantSizeLimitError(f"parsed Variant value of {len(value)} bytes exceeds the 128 MiB size limit")
    return meta.build(), value


def is_parse_error(exc: BaseException) -> bool:
    """Errors that ``try_parse_json`` turns into None."""
    return isinstance(exc, VariantError)
