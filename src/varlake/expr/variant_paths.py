"""Variant path text (``$.a.b``, ``$['a b'][0]``) -> Delta's stats key form.

Delta keys per-path Variant statistics by RFC 9535 *normalized paths*
(``$['a']['b']``, ``$['a b'][0]``), so a predicate's path must be normalized the same way
before it can find its statistics.  ``_normalize_variant_path`` is the single entry point
the rest of the package uses, so switching to ``varlake.variant.path`` is a one-line change.
"""

from __future__ import annotations

from varlake.errors import InvalidPathError

PathSegment = str | int

_MAX_INDEX = 2**31 - 1
_SHORT_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "'": "\\'", "\\": "\\\\"}


def _normalize_variant_path(text: str) -> str:
    """RFC 9535 normalized form of a Spark ``variant_get`` path; raises InvalidPathError."""
    return normalized_path_text(_parse_path(text))


def normalized_path_text(segments: tuple[PathSegment, ...]) -> str:
    """Render segments as an RFC 9535 normalized path (section 2.7)."""
    parts = ["$"]
    for segment in segments:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
        else:
            parts.append("['" + "".join(_escape_char(ch) for ch in segment) + "']")
    return "".join(parts)


def _escape_char(ch: str) -> str:
    if ch in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[ch]
    if ord(ch) < 0x20:
        return f"\\u{ord(ch):04x}"
    return ch


def _parse_path(text: str) -> tuple[PathSegment, ...]:
    """Segments of a Spark JSON path: ``$`` then ``.key``, ``['key']``, ``["key"]`` or ``[index]``."""
    if not text.startswith("$"):
        raise InvalidPathError(f"variant path {text!r} must start with '$' (offset 0)")
    segments: list[PathSegment] = []
    pos, end = 1, len(text)
    while pos < end:
        ch = text[pos]
        if ch == ".":
            stop = pos + 1
            while stop < end and text[stop] not in ".[":
                stop += 1
            if stop == pos + 1:
                raise InvalidPathError(f"variant path {text!r}: empty key after '.' at offset {pos}")
            segments.append(text[pos + 1 : stop])
            pos = stop
        elif ch == "[" and pos + 1 < end and text[pos + 1] in "'\"":
            quote = text[pos + 1]
            close = text.find(quote + "]", pos + 2)
            if close < 0 or close == pos + 2:
                raise InvalidPathError(f"variant path {text!r}: bad quoted key at offset {pos}")
            segments.append(text[pos + 2 : close])
            pos = close + 2
        elif ch == "[":
            close = text.find("]", pos + 1)
            digits = text[pos + 1 : close] if close > 0 else ""
            if not digits.isascii() or not digits.isdigit() or int(digits) > _MAX_INDEX:
                raise InvalidPathError(f"variant path {text!r}: bad array index at offset {pos}")
            segments.append(int(digits))
            pos = close + 1
        else:
            raise InvalidPathError(f"variant path {text!r}: unexpected {ch!r} at offset {pos}")
    return tuple(segments)
