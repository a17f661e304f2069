"""Variant paths: Spark's JSON path syntax, parsed once into a reusable object.

``VariantPath.parse`` follows Spark's ``variant_get`` grammar exactly: ``$`` then any of
``.key`` (a key runs to the next ``.`` or ``[``, so it may hold spaces or quotes),
``['key']`` / ``["key"]`` (no escapes) and ``[index]`` (ASCII digits that fit an int);
anything else raises ``InvalidPathError`` as Spark raises INVALID_VARIANT_GET_PATH.
The SQL shorthand ``col:a.b[0]::type`` goes through ``parse_shorthand``.
``normalized`` renders RFC 9535 normalized paths (``$['a']['b'][0]``), the keys Delta
uses for Variant statistics, and ``VariantPath.from_normalized`` reads them back.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from varlake.errors import InvalidPathError

Segment = str | int

_NAME = re.compile(r"[^.\[\]'\"\s:]+")


@dataclass(frozen=True, slots=True)
class VariantPath:
    """A parsed path: a tuple of object keys (str) and array indexes (int)."""

    segments: tuple[Segment, ...] = ()

    @staticmethod
    def parse(text: str) -> "VariantPath":
        """Parse ``variant_get`` path text with Spark's grammar; cached."""
        return _parse_spark(text)

    @staticmethod
    def from_normalized(text: str) -> "VariantPath":
        """Parse an RFC 9535 normalized path (escapes inside quotes), e.g. a Delta stats key."""
        return _parse_cached(text)

    @property
    def normalized(self) -> str:
        """RFC 9535 normalized path, e.g. ``$['a']['b'][0]``."""
        return "$" + "".join(f"[{s}]" if isinstance(s, int) else f"['{escape_name(s)}']" for s in self.segments)

    def child(self, segment: Segment) -> "VariantPath":
        return VariantPath(self.segments + (segment,))

    def __str__(self) -> str:
        return self.normalized

    def __len__(self) -> int:
        return len(self.segments)


def escape_name(name: str) -> str:
    """Escape a key for a normalized path (RFC 9535 section 2.7)."""
    out = []
    for ch in name:
        if ch == "'":
            out.append("\\'")
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


_NORMALIZED_ESCAPES = {"'": "'", "\\": "\\", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", '"': '"', "/": "/"}


def _read_quoted(text: str, i: int, where: str) -> tuple[str, int]:
    """Read a quoted name starting at the quote ``text[i]``; return (name, index after quote)."""
    quote = text[i]
    i += 1
    out = []
    while i < len(text):
        ch = text[i]
        if ch == quote:
            return "".join(out), i + 1
        if ch == "\\":
            if i + 1 >= len(text):
                break
            esc = text[i + 1]
            if esc == "u" and i + 5 < len(text):
                try:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                except ValueError:
                    raise InvalidPathError(f"invalid \\u escape in path {where!r} at {i}") from None
                i += 6
                continue
            if esc not in _NORMALIZED_ESCAPES:
                raise InvalidPathError(f"invalid escape \\{esc} in path {where!r} at {i}")
            out.append(_NORMALIZED_ESCAPES[esc])
            i += 2
            continue
        out.append(ch)
        i += 1
    raise InvalidPathError(f"unterminated quoted name in path {where!r}")


def _parse_segments(text: str, i: int, where: str, dotted_first: bool = False) -> tuple[tuple[Segment, ...], int]:
    """Segments from ``text[i:]`` until the end or ``::``; returns (segments, stop index)."""
    segs: list[Segment] = []
    first = dotted_first
    n = len(text)
    while i < n:
        if text.startswith("::", i):
            break
        ch = text[i]
        if ch == "." or first:
            if ch == ".":
                i += 1
            first = False
            m = _NAME.match(text, i)
            if not m:
                raise InvalidPathError(f"expected a field name at position {i} of path {where!r}")
            segs.append(m.group(0))
            i = m.end()
        elif ch == "[":
            j = i + 1
            if j < n and text[j] in "'\"":
                name, j = _read_quoted(text, j, where)
                segs.append(name)
            else:
                k = text.find("]", j)
                if k < 0:
                    raise InvalidPathError(f"unclosed '[' at position {i} of path {where!r}")
                body = text[j:k].strip()
                if not body.isdigit():
                    raise InvalidPathError(f"array index {body!r} is not a non-negative integer in path {where!r}")
                segs.append(int(body))
                j = k
            if j >= n or text[j] != "]":
                raise InvalidPathError(f"expected ']' at position {j} of path {where!r}")
            i = j + 1
        else:
            raise InvalidPathError(f"unexpected {ch!r} at position {i} of path {where!r}")
    return tuple(segs), i


_INT32_MAX = (1 << 31) - 1


def _bad_path(text: str, at: int) -> InvalidPathError:
    return InvalidPathError(f"The path `{text}` is not a valid variant extraction path (at character {at})")


@functools.lru_cache(maxsize=4096)
def _parse_spark(text: str) -> VariantPath:
    if not isinstance(text, str):
        raise InvalidPathError(f"variant_get path must be a string, got {type(text).__name__}")
    if not text.startswith("$"):
        raise InvalidPathError(f"The path `{text}` is not a valid variant extraction path: it must start with '$'")
    segments: list[Segment] = []
    i, n = 1, len(text)
    while i < n:
        ch = text[i]
        if ch == ".":
            j = i + 1
            while j < n and text[j] not in ".[":
                j += 1
            if j == i + 1:
                raise _bad_path(text, i)
            segments.append(text[i + 1 : j])
            i = j
        elif ch == "[" and i + 1 < n and text[i + 1] in "'\"":
            quote = text[i + 1]
            close = text.find(quote, i + 2)
            if close < 0 or close + 1 >= n or text[close + 1] != "]":
                raise _bad_path(text, i)
            segments.append(text[i + 2 : close])
            i = close + 2
        elif ch == "[":
            close = text.find("]", i + 1)
            digits = text[i + 1 : close] if close > 0 else ""
            if not digits or not all("0" <= c <= "9" for c in digits) or int(digits) > _INT32_MAX:
                raise _bad_path(text, i)
            segments.append(int(digits))
            i = close + 1
        else:
            raise _bad_path(text, i)
    return VariantPath(tuple(segments))


@functools.lru_cache(maxsize=4096)
def _parse_cached(text: str) -> VariantPath:
    if not isinstance(text, str):
        raise InvalidPathError(f"path must be a string, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped.startswith("$"):
        raise InvalidPathError(f"path {text!r} must start with '$'")
    segs, stop = _parse_segments(stripped, 1, text)
    if stop != len(stripped):
        raise InvalidPathError(f"unexpected '::' in path {text!r}")
    return VariantPath(segs)


@dataclass(frozen=True, slots=True)
class Shorthand:
    """``col:a.b[0]::type`` split into its column, path and optional cast type."""

    column: str
    path: VariantPath
    type: str | None


def parse_shorthand(text: str) -> Shorthand:
    """Parse Spark's ``col:path[::type]`` shorthand (the path has no leading ``$``)."""
    colon = text.find(":")
    if colon <= 0 or text.startswith("::", colon):
        raise InvalidPathError(f"expected 'column:path' in {text!r}")
    column = text[:colon].strip()
    rest = text[colon + 1 :].lstrip()
    if not rest:
        raise InvalidPathError(f"empty path after ':' in {text!r}")
    segs, stop = _parse_segments(rest, 0, text, dotted_first=not rest.startswith("["))
    type_name = None
    if stop < len(rest):
        type_name = rest[stop + 2 :].strip()
        if not type_name:
            raise InvalidPathError(f"missing type after '::' in {text!r}")
    return Shorthand(column, VariantPath(segs), type_name)
