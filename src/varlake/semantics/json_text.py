"""JSON string literals escaped as Spark's Jackson generator escapes them.

``\\"``, ``\\\\``, ``\\b \\t \\n \\f \\r``, other control characters as upper-case ``\\u001F``;
DEL, U+2028/2029, ``/`` and all non-ASCII characters stay raw.
"""

from __future__ import annotations

import json
import re

_encode_basestring = json.encoder.encode_basestring  # type: ignore[attr-defined]
_LOWER_HEX_ESCAPE = re.compile(r"\\u00([0-9a-f]{2})")


def quote(text: str) -> str:
    """A JSON string literal escaped the way Jackson escapes it."""
    out = _encode_basestring(text)
    if "\\u00" in out:
        out = _LOWER_HEX_ESCAPE.sub(lambda m: "\\u00" + m.group(1).upper(), out)
    return out
