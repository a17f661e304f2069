"""Spark SQL type strings: parsing (``bigint``, ``decimal(10,2)``, ``array<struct<a: int>>``,
``map<string, int>``, DDL column lists), canonical text, and identifier quoting.

One grammar serves every caller (``variant_get`` targets, shredding DDL, table DDL, the
planner's cast targets): keywords are case-insensitive, field names are words or
back-quoted (a doubled backtick is one), struct fields take an optional ``:``, ``NOT NULL``
and ``COMMENT '...'``. Names follow Spark's ``DataTypeParser``: ``byte``/``tinyint``,
``short``/``smallint``, ``int``/``integer``, ``long``/``bigint``, ``real``/``float``,
``dec``/``numeric``/``decimal`` (default ``decimal(10,0)``), ``timestamp_ltz`` for
``timestamp``; ``char(n)``/``varchar(n)`` need a length. Callers with extra leaf names
(shredding's ``uuid``) pass them in ``extra``. Parsed types are ``SparkType`` trees whose
``name`` is the canonical lower-case Spark name; consumers map them to their own types.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from varlake.errors import InvalidTypeStringError

MAX_DECIMAL_PRECISION = 38

_ALIASES = {
    "boolean": "boolean", "bool": "boolean",
    "tinyint": "tinyint", "byte": "tinyint",
    "smallint": "smallint", "short": "smallint",
    "int": "int", "integer": "int",
    "bigint": "bigint", "long": "bigint",
    "float": "float", "real": "float",
    "double": "double",
    "string": "string",
    "binary": "binary",
    "date": "date",
    "timestamp": "timestamp", "timestamp_ltz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "variant": "variant",
}
_DECIMAL_NAMES = frozenset(("decimal", "dec", "numeric"))

# Spark's upper-case ``DataType.sql`` of the atomic types.
_SQL = {
    "boolean": "BOOLEAN", "tinyint": "TINYINT", "smallint": "SMALLINT", "int": "INT", "bigint": "BIGINT",
    "float": "FLOAT", "double": "DOUBLE", "string": "STRING", "binary": "BINARY", "date": "DATE",
    "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP_NTZ", "variant": "VARIANT",
}

# Delta's schema names of Spark's atomic types (PROTOCOL.md "Primitive Types").
DELTA_NAMES = {
    "boolean": "boolean", "tinyint": "byte", "smallint": "short", "int": "integer", "bigint": "long",
    "float": "float", "double": "double", "string": "string", "binary": "binary", "date": "date",
    "timestamp": "timestamp", "timestamp_ntz": "timestamp_ntz", "char": "string", "varchar": "string",
}

_PLAIN_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def quote_identifier(name: str) -> str:
    """Spark's ``QuotingUtils.quoteIfNeeded``: back-quote a name that is not a plain identifier."""
    return name if _PLAIN_IDENTIFIER.match(name) else backquote(name)


def backquote(name: str) -> str:
    """``name`` always in backticks, inner backticks doubled: an identifier in SQL text for Spark."""
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True, slots=True)
class Field:
    """A struct field or a DDL column."""

    name: str
    type: "SparkType"
    nullable: bool = True
    comment: str | None = None


@dataclass(frozen=True, slots=True)
class SparkType:
    """A parsed Spark type. ``element`` is an array's element or a map's value, ``key`` a map's
    key; ``precision``/``scale`` belong to decimals, ``precision`` alone to ``time(p)``,
    ``length`` to ``char(n)``/``varchar(n)``."""

    name: str
    precision: int = 0
    scale: int = 0
    element: "SparkType | None" = None
    key: "SparkType | None" = None
    fields: tuple[Field, ...] = ()
    length: int = 0

    @property
    def sql(self) -> str:
        """The type as Spark prints it in messages (``DECIMAL(5,2)``, ``ARRAY<INT>``, ``STRUCT<a: INT>``)."""
        if self.name == "decimal":
            return f"DECIMAL({self.precision},{self.scale})"
        if self.name == "array":
            return f"ARRAY<{self.element.sql}>"  # type: ignore[union-attr]
        if self.name == "map":
            return f"MAP<{self.key.sql}, {self.element.sql}>"  # type: ignore[union-attr]
        if self.name == "struct":
            return "STRUCT<" + ", ".join(f"{quote_identifier(f.name)}: {f.type.sql}" for f in self.fields) + ">"
        if self.name == "time":
            return f"TIME({self.precision})"
        if self.name in ("char", "varchar"):
            return f"{self.name.upper()}({self.length})"
        return _SQL.get(self.name, self.name.upper())

    @property
    def simple(self) -> str:
        """Spark's ``simpleString`` (``decimal(5,2)``, ``array<struct<a:int>>``)."""
        if self.name == "decimal":
            return f"decimal({self.precision},{self.scale})"
        if self.name == "array":
            return f"array<{self.element.simple}>"  # type: ignore[union-attr]
        if self.name == "map":
            return f"map<{self.key.simple},{self.element.simple}>"  # type: ignore[union-attr]
        if self.name == "struct":
            return "struct<" + ",".join(f"{quote_identifier(f.name)}:{f.type.simple}" for f in self.fields) + ">"
        if self.name == "time":
            return f"time({self.precision})"
        if self.name in ("char", "varchar"):
            return f"{self.name}({self.length})"
        return self.name

    def __str__(self) -> str:
        return self.sql


def walk_types(t: SparkType) -> Iterable[SparkType]:
    """``t`` and every type nested in it, outermost first."""
    yield t
    for child in (t.key, t.element):
        if child is not None:
            yield from walk_types(child)
    for f in t.fields:
        yield from walk_types(f.type)


# --- the parser ---------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"(?P<quoted>`(?:[^`]|``)*`)|(?P<string>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>[0-9]+)|(?P<punct>[<>(),:])",
    re.S,
)


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str
    text: str
    pos: int


#: Type strings nest at most this deep (``array<`` / ``map<`` / ``struct<`` levels). No table
#: can store more: a Parquet file holds at most 99 levels (``varlake.delta.schema``), so a
#: deeper text is refused here, before the recursive descent could exhaust the stack.
MAX_TYPE_DEPTH = 200


class _Parser:
    """Recursive descent over Spark's data type grammar."""

    def __init__(self, text: str, extra: frozenset[str]) -> None:
        self.text = text
        self.extra = extra
        self.toks: list[_Tok] = []
        self.i = 0
        self.depth = 0
        pos, n = 0, len(text)
        while True:
            while pos < n and text[pos].isspace():
                pos += 1
            if pos >= n:
                break
            m = _TOKEN.match(text, pos)
            if not m:
                raise InvalidTypeStringError(f"unexpected {text[pos]!r} at character {pos} of type {text!r}")
            kind = m.lastgroup or ""
            value = m.group(kind)
            if kind == "quoted":
                value = value[1:-1].replace("``", "`")
            self.toks.append(_Tok(kind, value, pos))
            pos = m.end()

    def fail(self, why: str) -> InvalidTypeStringError:
        at = self.toks[self.i].pos if self.i < len(self.toks) else len(self.text)
        return InvalidTypeStringError(f"{why} at character {at} of type {self.text!r}")

    def peek(self, k: int = 0) -> _Tok | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def accept(self, punct: str) -> bool:
        t = self.peek()
        if t is not None and t.kind == "punct" and t.text == punct:
            self.i += 1
            return True
        return False

    def expect(self, punct: str) -> None:
        if not self.accept(punct):
            t = self.peek()
            raise self.fail(f"expected {punct!r}, found {t.text if t else 'the end'!r}")

    def number(self) -> int:
        t = self.peek()
        if t is None or t.kind != "number":
            raise self.fail("expected a number")
        self.i += 1
        return int(t.text)

    def end(self) -> None:
        t = self.peek()
        if t is not None:
            raise self.fail(f"unexpected {t.text!r}")

    def type(self) -> SparkType:
        self.depth += 1
        try:
            return self._type()
        finally:
            self.depth -= 1

    def _type(self) -> SparkType:
        t = self.peek()
        if t is None or t.kind != "word":
            raise self.fail(f"expected a type name, found {t.text if t else 'the end'!r}")
        word = t.text.lower()
        if self.depth > MAX_TYPE_DEPTH and word in ("array", "map", "struct"):
            raise self.fail(f"the type nests deeper than {MAX_TYPE_DEPTH} levels")
        self.i += 1
        if word == "array":
            self.expect("<")
            element = self.type()
            self.expect(">")
            return SparkType("array", element=element)
        if word == "map":
            self.expect("<")
            key = self.type()
            self.expect(",")
            value = self.type()
            self.expect(">")
            return SparkType("map", key=key, element=value)
        if word == "struct":
            self.expect("<")
            if self.accept(">"):
                return SparkType("struct")
            fields = self.fields()
            self.expect(">")
            return SparkType("struct", fields=fields)
        if word in _DECIMAL_NAMES:
            precision, scale = 10, 0
            if self.accept("("):
                precision = self.number()
                if self.accept(","):
                    scale = self.number()
                self.expect(")")
            if not 1 <= precision <= MAX_DECIMAL_PRECISION or scale > precision:
                raise self.fail(f"decimal({precision},{scale}) is not a valid decimal type (precision 1..38, scale <= precision)")
            return SparkType("decimal", precision, scale)
        if word in ("char", "varchar"):
            if not self.accept("("):
                raise self.fail(f"{word} needs a length, as in {word}(10)")
            length = self.number()
            self.expect(")")
            return SparkType(word, length=length)
        if word == "time":
            precision = 6
            if self.accept("("):
                precision = self.number()
                self.expect(")")
            if precision > 6:
                raise self.fail(f"time({precision}) is not a valid type (precision 0..6)")
            return SparkType("time", precision)
        name = _ALIASES.get(word)
        if name is None and word in self.extra:
            name = word
        if name is None:
            raise self.fail(f"unknown type {t.text!r}")
        return SparkType(name)

    def field(self) -> Field:
        t = self.peek()
        if t is None or t.kind not in ("word", "quoted"):
            raise self.fail(f"expected a field name, found {t.text if t else 'the end'!r}")
        self.i += 1
        name = t.text
        self.accept(":")
        ftype = self.type()
        nullable, comment = True, None
        while (t := self.peek()) is not None and t.kind == "word":
            word = t.text.lower()
            if word == "not" and (n := self.peek(1)) is not None and n.text.lower() == "null":
                nullable = False
                self.i += 2
            elif word == "comment" and (n := self.peek(1)) is not None and n.kind == "string":
                comment = _unquote(n.text)
                self.i += 2
            else:
                break
        return Field(name, ftype, nullable, comment)

    def fields(self) -> tuple[Field, ...]:
        out = [self.field()]
        while self.accept(","):
            out.append(self.field())
        return tuple(out)


def _unquote(literal: str) -> str:
    body = literal[1:-1]
    return re.sub(r"\\(.)", r"\1", body, flags=re.S)


@functools.lru_cache(maxsize=1024)
def _parse_type(text: str, extra: frozenset[str]) -> SparkType:
    p = _Parser(text, extra)
    t = p.type()
    p.end()
    return t


def parse_type(text: str, extra: Iterable[str] = ()) -> SparkType:
    """Parse one Spark type (``'int'``, ``'decimal(10,2)'``, ``'array<struct<a: int>>'``)."""
    if not isinstance(text, str):
        raise InvalidTypeStringError(f"a type must be a string, got {type(text).__name__}")
    return _parse_type(text, frozenset(extra))


@functools.lru_cache(maxsize=256)
def _parse_columns(text: str, extra: frozenset[str]) -> tuple[Field, ...]:
    p = _Parser(text, extra)
    if not p.toks:
        raise p.fail("no columns")
    cols = p.fields()
    p.end()
    return cols


def parse_columns(text: str, extra: Iterable[str] = ()) -> tuple[Field, ...]:
    """Parse DDL column definitions (``"id bigint NOT NULL, v variant COMMENT 'doc'"``)."""
    if not isinstance(text, str):
        raise InvalidTypeStringError(f"a schema must be a string, got {type(text).__name__}")
    return _parse_columns(text, frozenset(extra))


def parse_ddl(text: str, extra: Iterable[str] = ()) -> SparkType:
    """One type (``struct<a: int>``, ``array<string>``) or else a column list, as a struct."""
    try:
        return parse_type(text, extra)
    except InvalidTypeStringError as as_type:
        toks = _Parser(text, frozenset(extra)).toks
        if len(toks) > 1 and toks[0].kind == "word" and toks[1].kind == "punct" and toks[1].text != ":":
            raise as_type from None  # a type name then ``(`` or ``<``: a malformed single type
        return SparkType("struct", fields=parse_columns(text, extra))
