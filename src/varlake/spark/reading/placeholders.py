"""Names in the SQL the Spark reader runs: the view each ``{name}`` placeholder becomes
(``substitute``, which leaves string literals, quoted identifiers and comments alone), the
derived columns ``__vl_<n>`` of a table's view, and its flag column."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from varlake.errors import TableError
from varlake.semantics.types import backquote

__all__ = ["FLAG_COLUMN", "derived_name", "next_derived_name", "substitute", "view_name"]


FLAG_COLUMN = "__vl_shredded"


_VIEW_PREFIX = "__varlake_"


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def view_name(name: str) -> str:
    """The temporary view a ``{name}`` placeholder becomes."""
    return f"{_VIEW_PREFIX}{name}"


def derived_name(index: int) -> str:
    """Name of the ``index``-th derived path column of a table's view."""
    return f"__vl_{index}"


def next_derived_name(derived: Mapping[Any, str]) -> str:
    """A derived column name no column of ``derived`` has (one past the highest index)."""
    taken = [int(name.removeprefix("__vl_")) for name in derived.values() if name.removeprefix("__vl_").isdigit()]
    return derived_name(max(taken, default=-1) + 1)


def substitute(query: str, names: Mapping[str, object], tables: Mapping[str, tuple[str, str]] | None = None) -> str:
    """Replace every ``{name}`` placeholder by its view name, or by the qualified table
    ``tables`` gives for it (``db.t`` works as a column qualifier too); unknown names are an error.

    Text inside string literals, quoted identifiers and comments is left as it is: there a
    ``{name}`` is not a table (and no substitution may change a literal's value).
    """

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in names:
            raise TableError(f"the query names {{{name}}} but no table {name!r} was given (tables: {', '.join(sorted(names)) or 'none'})")
        if tables is not None and name in tables:
            return ".".join(backquote(part) for part in tables[name])
        return view_name(name)

    out, start = [], 0
    for begin, end in _code_spans(query):
        out.append(query[start:begin])
        out.append(_PLACEHOLDER.sub(replace, query[begin:end]))
        start = end
    out.append(query[start:])
    return "".join(out)


def _code_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the parts of ``text`` outside string literals (``'...'``,
    ``"..."``, backslash escapes, raw ``r'...'``), quoted identifiers (`````...`````) and
    comments (``--``, nested ``/* */``), as Spark's lexer delimits them; an unterminated
    one runs to the end."""
    spans, i, start, n = [], 0, 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`" or (c == "-" and text.startswith("--", i)) or (c == "/" and text.startswith("/*", i)):
            if start < i:
                spans.append((start, i))
            if c == "-":
                newline = text.find("\n", i)
                i = n if newline < 0 else newline
            elif c == "/":
                depth, i = 1, i + 2
                while i < n and depth:
                    if text.startswith("/*", i):
                        depth, i = depth + 1, i + 2
                    elif text.startswith("*/", i):
                        depth, i = depth - 1, i + 2
                    else:
                        i += 1
            else:
                raw = c != "`" and i > 0 and text[i - 1] in "rR" and (i == 1 or not (text[i - 2].isalnum() or text[i - 2] == "_"))
                i += 1
                while i < n and text[i] != c:
                    i += 2 if text[i] == "\\" and c != "`" and not raw else 1
                i += 1
            start = i
        else:
            i += 1
    if start < n:
        spans.append((start, n))
    return spans
