"""Bytes to text as Java decodes UTF-8 (``new String(bytes, UTF_8)``, which Spark's
``UTF8String.toString`` and ``CAST(binary AS STRING)`` use).

Valid UTF-8 decodes as usual. Each malformed sequence becomes one U+FFFD, and Java's
idea of a sequence's length differs from Python's ``errors="replace"`` in one place: an
encoded surrogate (``ED A0..BF ..``) is one malformed sequence of three bytes (or two,
before a byte that does not continue it), where Python replaces every byte.
"""

from __future__ import annotations

_REPLACEMENT = "\ufffd"


def _continues(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _three(data: bytes, i: int) -> tuple[str, int]:
    """The text and length of a sequence led by E0..EF at ``i``."""
    b1, rest = data[i], len(data) - i
    b2 = data[i + 1] if rest > 1 else None
    if b2 is not None and ((b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _continues(b2)):
        return _REPLACEMENT, 1
    if rest < 3:
        return _REPLACEMENT, rest  # a cut-off sequence at the end: one replacement
    b3 = data[i + 2]
    if not _continues(b3):
        return _REPLACEMENT, 2
    code = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)  # type: ignore[operator]
    if 0xD800 <= code <= 0xDFFF:
        return _REPLACEMENT, 3
    return chr(code), 3


def _four(data: bytes, i: int) -> tuple[str, int]:
    """The text and length of a sequence led by F0..F7 at ``i``."""
    b1, rest = data[i], len(data) - i
    if b1 > 0xF4:
        return _REPLACEMENT, 1
    if rest > 1:
        b2 = data[i + 1]
        if (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and b2 & 0xF0 != 0x80) or not _continues(b2):
            return _REPLACEMENT, 1
    if rest > 2 and not _continues(data[i + 2]):
        return _REPLACEMENT, 2
    if rest < 4:
        return _REPLACEMENT, rest
    if not _continues(data[i + 3]):
        return _REPLACEMENT, 3
    code = ((b1 & 0x07) << 18) | ((data[i + 1] & 0x3F) << 12) | ((data[i + 2] & 0x3F) << 6) | (data[i + 3] & 0x3F)
    return chr(code), 4


def java_utf8_decode(data: bytes) -> str:
    """``new String(data, StandardCharsets.UTF_8)``: Python's decoder where the bytes are
    valid UTF-8 (the two agree there), else Java's replacement rules, byte by byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _java_replacing_decode(data)


def _java_replacing_decode(data: bytes) -> str:
    """Java's decoding of bytes that are not valid UTF-8 (its replacement rules differ from Python's)."""
    out: list[str] = []
    i, size = 0, len(data)
    while i < size:
        b1 = data[i]
        if b1 < 0x80:
            out.append(chr(b1))
            i += 1
        elif 0xC2 <= b1 <= 0xDF:
            if i + 1 < size and _continues(data[i + 1]):
                out.append(chr(((b1 & 0x1F) << 6) | (data[i + 1] & 0x3F)))
                i += 2
            else:
                out.append(_REPLACEMENT)
                i += 1
        elif 0xE0 <= b1 <= 0xEF:
            text, used = _three(data, i)
            out.append(text)
            i += used
        elif 0xF0 <= b1 <= 0xF7:
            text, used = _four(data, i)
            out.append(text)
            i += used
        else:
            out.append(_REPLACEMENT)
            i += 1
    return "".join(out)
