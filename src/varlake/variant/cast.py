"""Spark 4.3's casts from Variant values to SQL types: the engine behind ``variant_get``.

Spark casts a Variant scalar by wrapping it in a typed literal (int8..int64 become BIGINT,
decimals lose trailing zeros) and running its ``Cast`` in TRY mode; a NULL result is an
invalid cast. So every rule here is one of Spark's ANSI cast rules, re-derived in Python
and checked cell by cell against Spark in ``tests/test_spark_oracle_functions.py``:
strings are trimmed and parsed with Spark's own grammars (``UTF8String.toLong``, Java's
``Double.parseDouble`` and ``BigDecimal``, ``DateTimeUtils.stringToTimestamp``), fractions
truncate towards zero into integers, decimals round half-up, overflow fails, and time
zones follow ``java.time.ZoneId``.

Everything works on integers (epoch days, epoch microseconds, unscaled decimals) so that
values outside Python's ``datetime`` range still convert; only the final Python value
(``date``/``datetime``) is limited to years 1-9999.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import re
import struct
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from fractions import Fraction
from zoneinfo import ZoneInfo

from varlake.errors import VariantCastError, VariantError
from varlake.variant import decoder as dec
from varlake.variant.constants import int_size
from varlake.variant.encoder import MetadataBuilder, encode_array
from varlake.variant.json_render import format_date, java_double, java_float, to_json
from varlake.variant.value import Variant

# --- Spark SQL types ---------------------------------------------------------------------

_ATOMIC_SQL = {
    "boolean": "BOOLEAN",
    "tinyint": "TINYINT",
    "smallint": "SMALLINT",
    "int": "INT",
    "bigint": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "string": "STRING",
    "binary": "BINARY",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
    "timestamp_ntz": "TIMESTAMP_NTZ",
    "time": "TIME(6)",
    "variant": "VARIANT",
}
_ALIASES = {
    "boolean": "boolean",
    "bool": "boolean",
    "tinyint": "tinyint",
    "byte": "tinyint",
    "smallint": "smallint",
    "short": "smallint",
    "int": "int",
    "integer": "int",
    "bigint": "bigint",
    "long": "bigint",
    "float": "float",
    "real": "float",
    "double": "double",
    "string": "string",
    "binary": "binary",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ltz": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "variant": "variant",
}
_DECIMAL_NAMES = ("decimal", "dec", "numeric")


class TypeParseError(VariantError):
    """A Spark type string does not parse or names a type Variant cannot be cast to."""


@dataclass(frozen=True, slots=True)
class SparkType:
    """A Spark SQL type that ``variant_get`` can produce.

    ``name`` is the canonical lower-case name (``int``, ``decimal``, ``array``, ``map``,
    ``struct``...); ``element`` is an array's element or a map's value type.
    """

    name: str
    precision: int = 0
    scale: int = 0
    element: "SparkType | None" = None
    fields: tuple[tuple[str, "SparkType"], ...] = ()

    @property
    def sql(self) -> str:
        """The type as Spark prints it in error messages (``DECIMAL(5,2)``, ``ARRAY<INT>``)."""
        if self.name == "decimal":
            return f"DECIMAL({self.precision},{self.scale})"
        if self.name == "array":
            assert self.element is not None
            return f"ARRAY<{self.element.sql}>"
        if self.name == "map":
            assert self.element is not None
            return f"MAP<STRING, {self.element.sql}>"
        if self.name == "struct":
            return "STRUCT<" + ", ".join(f"{quote_identifier(n)}: {t.sql}" for n, t in self.fields) + ">"
        return _ATOMIC_SQL[self.name]

    def __str__(self) -> str:
        return self.sql


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def quote_identifier(name: str) -> str:
    """Spark's ``QuotingUtils.quoteIfNeeded``: back-quote names that are not plain identifiers."""
    if _IDENTIFIER.match(name):
        return name
    return "`" + name.replace("`", "``") + "`"


_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|([A-Za-z_][A-Za-z0-9_]*)|(\d+)|('(?:[^'\\]|\\.)*')|(.))", re.S)


class _TypeParser:
    """Recursive descent over Spark's data type grammar (keywords are case-insensitive)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str]] = []
        for m in _TOKEN.finditer(text):
            quoted, word, number, literal, other = m.groups()
            if quoted is not None:
                self.tokens.append(("name", quoted[1:-1].replace("``", "`")))
            elif word is not None:
                self.tokens.append(("word", word))
            elif number is not None:
                self.tokens.append(("num", number))
            elif literal is not None:
                self.tokens.append(("str", literal))
            elif other is not None and not other.isspace():
                self.tokens.append(("sym", other))
        self.i = 0

    def fail(self, why: str) -> TypeParseError:
        return TypeParseError(f"cannot use type {self.text!r} with variant_get: {why}")

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise self.fail("unexpected end of type")
        self.i += 1
        return tok

    def expect(self, sym: str) -> None:
        kind, text = self.take()
        if kind != "sym" or text != sym:
            raise self.fail(f"expected {sym!r}, found {text!r}")

    def at(self, sym: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[0] == "sym" and tok[1] == sym

    def number(self) -> int:
        kind, text = self.take()
        if kind != "num":
            raise self.fail(f"expected a number, found {text!r}")
        return int(text)

    def parse(self) -> SparkType:
        t = self.type()
        if self.peek() is not None:
            raise self.fail(f"unexpected {self.peek()[1]!r}")  # type: ignore[index]
        return t

    def type(self) -> SparkType:
        kind, word = self.take()
        if kind != "word":
            raise self.fail(f"expected a type name, found {word!r}")
        low = word.lower()
        if low == "array":
            self.expect("<")
            element = self.type()
            self.expect(">")
            return SparkType("array", element=element)
        if low == "map":
            self.expect("<")
            key = self.type()
            self.expect(",")
            value = self.type()
            self.expect(">")
            if key.name != "string":
                raise self.fail(f"map keys must be STRING to cast from VARIANT, not {key.sql}")
            return SparkType("map", element=value)
        if low == "struct":
            return self.struct()
        if low in _DECIMAL_NAMES:
            precision, scale = 10, 0
            if self.at("("):
                self.take()
                precision = self.number()
                if self.at(","):
                    self.take()
                    scale = self.number()
                self.expect(")")
            if not 1 <= precision <= 38 or scale > precision:
                raise self.fail(f"DECIMAL({precision},{scale}) is not a valid decimal type")
            return SparkType("decimal", precision, scale)
        if low == "time":
            if self.at("("):
                self.take()
                p = self.number()
                self.expect(")")
                if p != 6:
                    raise self.fail("only TIME(6) is supported")
            return SparkType("time")
        if low in ("char", "varchar"):
            raise self.fail("CHAR/VARCHAR cannot be the target of a Variant cast; use STRING")
        name = _ALIASES.get(low)
        if name is None:
            raise self.fail(f"unknown or unsupported type {word!r}")
        return SparkType(name)

    def struct(self) -> SparkType:
        self.expect("<")
        fields: list[tuple[str, SparkType]] = []
        if self.at(">"):
            self.take()
            return SparkType("struct", fields=())
        while True:
            kind, name = self.take()
            if kind not in ("word", "name"):
                raise self.fail(f"expected a field name, found {name!r}")
            if self.at(":"):
                self.take()
            t = self.type()
            tok = self.peek()
            if tok is not None and tok[0] == "word" and tok[1].lower() == "not":
                self.take()
                kind2, null = self.take()
                if null.lower() != "null":
                    raise self.fail("expected NULL after NOT")
            tok = self.peek()
            if tok is not None and tok[0] == "word" and tok[1].lower() == "comment":
                self.take()
                if self.take()[0] != "str":
                    raise self.fail("expected a string after COMMENT")
            fields.append((name, t))
            if self.at(","):
                self.take()
                continue
            self.expect(">")
            return SparkType("struct", fields=tuple(fields))


@functools.lru_cache(maxsize=1024)
def parse_type(text: str) -> SparkType:
    """Parse a Spark type string (``'int'``, ``'decimal(10,2)'``, ``'array<struct<a: int>>'``)."""
    if not isinstance(text, str):
        raise TypeParseError(f"type must be a string, got {type(text).__name__}")
    return _TypeParser(text).parse()


# --- time zones (java.time.ZoneId as Spark calls it) ----------------------------------------

# java.time.ZoneId.SHORT_IDS, which Spark passes to ZoneId.of.
SHORT_IDS = {
    "ACT": "Australia/Darwin", "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires",
    "ART": "Africa/Cairo", "AST": "America/Anchorage", "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka",
    "CAT": "Africa/Harare", "CNT": "America/St_Johns", "CST": "America/Chicago", "CTT": "Asia/Shanghai",
    "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris", "IET": "America/Indiana/Indianapolis",
    "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia", "NET": "Asia/Yerevan",
    "NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix", "PRT": "America/Puerto_Rico",
    "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal", "VST": "Asia/Ho_Chi_Minh",
    "EST": "-05:00", "MST": "-07:00", "HST": "-10:00",
}
_SINGLE_HOUR = re.compile(r"([+\-])(\d):")
_SINGLE_MINUTE = re.compile(r"([+\-])(\d\d):(\d)$")
_OFFSET = re.compile(r"([+\-])(?:(\d{1,2})|(\d\d):?(\d\d)|(\d\d):(\d\d):(\d\d)|(\d\d)(\d\d)(\d\d))\Z")
_REGION = re.compile(r"[A-Za-z][A-Za-z0-9~/._+\-]+\Z")


def _offset_zone(text: str) -> _dt.tzinfo | None:
    """``java.time.ZoneOffset.of``: ``+h``, ``+hh``, ``+hh:mm``, ``+hhmm``, ``+hh:mm:ss``, ``+hhmmss``."""
    m = _OFFSET.match(text)
    if not m:
        return None
    sign = -1 if m.group(1) == "-" else 1
    if m.group(2) is not None:
        h, mi, s = int(m.group(2)), 0, 0
    elif m.group(3) is not None:
        h, mi, s = int(m.group(3)), int(m.group(4)), 0
    elif m.group(5) is not None:
        h, mi, s = int(m.group(5)), int(m.group(6)), int(m.group(7))
    else:
        h, mi, s = int(m.group(8)), int(m.group(9)), int(m.group(10))
    if h > 18 or mi > 59 or s > 59:
        return None
    total = sign * (h * 3600 + mi * 60 + s)
    if abs(total) > 18 * 3600:
        return None
    return _dt.timezone(_dt.timedelta(seconds=total)) if total else _dt.timezone.utc


@functools.lru_cache(maxsize=256)
def zone_of(name: str) -> _dt.tzinfo | None:
    """The time zone Spark's ``getZoneId`` resolves ``name`` to, or None if Java rejects it."""
    text = _SINGLE_HOUR.sub(r"\g<1>0\g<2>:", name, count=1)
    text = _SINGLE_MINUTE.sub(r"\g<1>\g<2>:0\g<3>", text, count=1)
    text = SHORT_IDS.get(text, text)
    if text == "Z":
        return _dt.timezone.utc
    if text.startswith(("+", "-")):
        return _offset_zone(text)
    for prefix in ("UTC", "GMT", "UT"):
        if text == prefix:
            return _dt.timezone.utc
        if text.startswith(prefix) and text[len(prefix)] in "+-":
            return _offset_zone(text[len(prefix) :])
    if not _REGION.match(text) or text in ("localtime", "posixrules", "Factory") or text.startswith(("posix/", "right/")):
        return None
    try:
        return ZoneInfo(text)
    except (ValueError, OSError, LookupError):
        return None


def json_zone_name(zone: _dt.tzinfo) -> str:
    """A name for ``zone`` that the JSON renderer understands (region key or ``+HH:MM``)."""
    if isinstance(zone, ZoneInfo):
        return zone.key
    off = zone.utcoffset(None)
    seconds = int(off.total_seconds()) if off is not None else 0
    if seconds == 0:
        return "UTC"
    sign = "-" if seconds < 0 else "+"
    h, rest = divmod(abs(seconds), 3600)
    return f"{sign}{h:02d}:{rest // 60:02d}" + (f":{rest % 60:02d}" if rest % 60 else "")


def session_zone(name: str) -> _dt.tzinfo:
    """Resolve the ``zone`` argument of the public functions; unknown zones raise."""
    zone = zone_of(name)
    if zone is None:
        raise VariantError(f"unknown time zone {name!r}")
    return zone


# --- calendar arithmetic -------------------------------------------------------------------------

MICROS_PER_SECOND = 1_000_000
MICROS_PER_DAY = 86_400_000_000
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_NTZ = _dt.datetime(1970, 1, 1)
_DAYS_400Y = 146_097
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


def days_from_civil(year: int, month: int, day: int) -> int:
    """Epoch day of a proleptic Gregorian date (any year)."""
    y = year - 1 if month <= 2 else year
    era = y // 400
    yoe = y - era * 400
    mp = month - 3 if month > 2 else month + 9
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * _DAYS_400Y + doe - 719_468


def _valid_date(year: int, month: int, day: int) -> bool:
    """``java.time.LocalDate.of`` validity."""
    if not (-999_999_999 <= year <= 999_999_999 and 1 <= month <= 12 and day >= 1):
        return False
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return day <= (29 if leap else 28)
    return day <= (30 if month in (4, 6, 9, 11) else 31)


def _clamp_seconds(epoch_seconds: int) -> tuple[int, int]:
    """Shift an instant by whole 400-year cycles into Python's datetime range; returns (seconds, shift)."""
    low, high = -62_135_596_800 + 86_400 * 2, 253_402_300_799 - 86_400 * 2
    shift = 0
    cycle = _DAYS_400Y * 86_400
    if epoch_seconds < low:
        shift = -((low - epoch_seconds) // cycle + 1) * cycle
    elif epoch_seconds > high:
        shift = ((epoch_seconds - high) // cycle + 1) * cycle
    return epoch_seconds - shift, shift


def utc_offset_at(zone: _dt.tzinfo, epoch_seconds: int) -> int:
    """Offset in seconds of ``zone`` at an instant."""
    if isinstance(zone, _dt.timezone):
        off = zone.utcoffset(None)
        return int(off.total_seconds()) if off is not None else 0
    seconds, _ = _clamp_seconds(epoch_seconds)
    instant = _EPOCH_UTC + _dt.timedelta(seconds=seconds)
    off = instant.astimezone(zone).utcoffset()
    return int(off.total_seconds()) if off is not None else 0


def local_to_instant(local_micros: int, zone: _dt.tzinfo) -> int:
    """Epoch micros of a wall-clock time in ``zone`` (``ZonedDateTime.of``: gaps move forward,
    overlaps take the earlier offset)."""
    if isinstance(zone, _dt.timezone):
        off = zone.utcoffset(None)
        return local_micros - (int(off.total_seconds()) * MICROS_PER_SECOND if off is not None else 0)
    seconds, shift = _clamp_seconds(local_micros // MICROS_PER_SECOND)
    wall = (_EPOCH_NTZ + _dt.timedelta(seconds=seconds)).replace(tzinfo=zone, fold=0)
    off = wall.utcoffset()
    offset = int(off.total_seconds()) if off is not None else 0
    return local_micros - offset * MICROS_PER_SECOND


def instant_to_local(micros: int, zone: _dt.tzinfo) -> int:
    """Wall-clock micros in ``zone`` of an instant."""
    return micros + utc_offset_at(zone, micros // MICROS_PER_SECOND) * MICROS_PER_SECOND


class OutOfPythonRange(VariantError):
    """A Spark date/timestamp outside the years 1-9999 that Python's datetime can hold."""


def date_value(days: int) -> _dt.date:
    ordinal = days + _EPOCH_ORDINAL
    if not 1 <= ordinal <= 3_652_059:
        raise OutOfPythonRange(f"date {format_date(days)} is outside the years 1-9999 Python can represent")
    return _dt.date.fromordinal(ordinal)


def timestamp_value(micros: int, aware: bool) -> _dt.datetime:
    try:
        return (_EPOCH_UTC if aware else _EPOCH_NTZ) + _dt.timedelta(microseconds=micros)
    except OverflowError:
        raise OutOfPythonRange(
            f"timestamp {format_timestamp(micros)} is outside the years 1-9999 Python can represent"
        ) from None


def datetime_micros(value: _dt.datetime, zone: _dt.tzinfo, instant: bool) -> int:
    """Epoch micros of a Python datetime as TIMESTAMP (``instant``; a naive value is wall-clock
    time in ``zone``) or as TIMESTAMP_NTZ (must be naive)."""
    wall = value.replace(tzinfo=None)
    delta = wall - _EPOCH_NTZ
    local = (delta.days * 86_400 + delta.seconds) * MICROS_PER_SECOND + delta.microseconds
    if value.tzinfo is not None:
        if not instant:
            raise VariantError(f"TIMESTAMP_NTZ needs a naive datetime, got {value.isoformat()}")
        off = value.utcoffset()
        return local - (int(off.total_seconds() * MICROS_PER_SECOND) if off is not None else 0)
    return local_to_instant(local, zone) if instant else local


# --- formatting ------------------------------------------------------------------------------------


def format_timestamp(local_micros: int) -> str:
    """``yyyy-MM-dd HH:mm:ss[.ffffff]`` of wall-clock micros (trailing fraction zeros dropped)."""
    days, rest = divmod(local_micros, MICROS_PER_DAY)
    seconds, frac = divmod(rest, MICROS_PER_SECOND)
    text = f"{format_date(days)} {seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if frac:
        text += "." + f"{frac:06d}".rstrip("0")
    return text


def plain_decimal(unscaled: int, scale: int) -> str:
    """``BigDecimal.toPlainString`` of ``unscaled * 10**-scale`` (scale >= 0)."""
    text = str(abs(unscaled))
    if scale > 0:
        text = text.rjust(scale + 1, "0")
        text = text[:-scale] + "." + text[-scale:]
    return "-" + text if unscaled < 0 else text


# --- float32 -----------------------------------------------------------------------------------------

_F32 = struct.Struct("<f")


def to_float32(x: float) -> float:
    """Round a double to the nearest float32 (Java's ``(float) d``; overflow gives infinity)."""
    try:
        return _F32.unpack(_F32.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def float32_of_fraction(value: Fraction) -> float:
    """The float32 nearest to an exact rational (round half to even), as ``Float.parseFloat`` does."""
    if value == 0:
        return 0.0
    sign = -1.0 if value < 0 else 1.0
    a = abs(value)
    exp = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** exp > a:
        exp -= 1
    if exp > 128:
        return sign * math.inf
    scale = 23 - exp if exp >= -126 else 149
    scaled = a * (Fraction(2) ** scale)
    m = scaled.numerator // scaled.denominator
    rem = scaled - m
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and m & 1):
        m += 1
    result = math.ldexp(m, -scale)
    if result >= 2.0**128:
        return sign * math.inf
    return sign * result


# --- string parsing ------------------------------------------------------------------------------------


_JAVA_BLANKS = "".join(map(chr, range(0x21)))
_CONTROL_BLANKS = _JAVA_BLANKS + "\x7f"


def _trim_control(text: str) -> str:
    """``UTF8String.trimAll``: strip ASCII whitespace/control bytes (0x00-0x20 and 0x7F)."""
    return text.strip(_CONTROL_BLANKS)


def _trim_java(text: str) -> str:
    """``String.trim``: strip characters <= U+0020."""
    return text.strip(_JAVA_BLANKS)


_INTEGER = re.compile(r"[+\-]?[0-9]+\Z")


def parse_integer(text: str) -> int | None:
    """``UTF8String.toLongExact`` without the range check: ``[+-]digits`` after trimming."""
    t = _trim_control(text)
    if not _INTEGER.match(t):
        return None
    return int(t)


_JAVA_DECIMAL_FLOAT = re.compile(r"[+\-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+\-]?\d+)?)[fFdD]?)\Z", re.ASCII)
_JAVA_HEX_FLOAT = re.compile(
    r"([+\-]?)0[xX]([0-9a-fA-F]*)\.?([0-9a-fA-F]*)[pP]([+\-]?\d+)[fFdD]?\Z", re.ASCII
)
_SPECIAL_FLOATS = {
    "inf": math.inf, "+inf": math.inf, "infinity": math.inf, "+infinity": math.inf,
    "-inf": -math.inf, "-infinity": -math.inf, "nan": math.nan,
}


def _exact_of_java_float(text: str) -> Fraction | float | None:
    """The exact value of Java floating-point literal text (a float for NaN/Infinity)."""
    m = _JAVA_DECIMAL_FLOAT.match(text)
    if m:
        body = m.group(1)
        negative = text.startswith("-")
        if body == "NaN":
            return math.nan
        if body == "Infinity":
            return -math.inf if negative else math.inf
        number = m.group(2)
        d = Decimal(("-" if negative else "") + number)
        if d.is_zero():
            return -0.0 if negative else 0.0
        if d.adjusted() > 400:
            return -math.inf if negative else math.inf
        if d.adjusted() < -400:
            return -0.0 if negative else 0.0
        return Fraction(d)
    m = _JAVA_HEX_FLOAT.match(text)
    if m and (m.group(2) or m.group(3)):
        mant = int((m.group(2) + m.group(3)) or "0", 16)
        exp = int(m.group(4)) - 4 * len(m.group(3))
        negative = m.group(1) == "-"
        if mant == 0:
            return -0.0 if negative else 0.0
        if exp + mant.bit_length() > 1100:
            return -math.inf if negative else math.inf
        if exp + mant.bit_length() < -1200:
            return -0.0 if negative else 0.0
        value = Fraction(mant) * Fraction(2) ** exp
        return -value if negative else value
    return None


def parse_double(text: str, float32: bool) -> float | None:
    """Spark's string -> DOUBLE/FLOAT: ``Double.parseDouble`` (or ``Float.parseFloat``),
    then the case-insensitive ``inf``/``infinity``/``nan`` literals."""
    t = _trim_java(text)
    exact = _exact_of_java_float(t)
    if exact is None:
        return _SPECIAL_FLOATS.get(t.lower())
    if isinstance(exact, float):
        return exact
    if float32:
        return float32_of_fraction(exact)
    try:
        return exact.numerator / exact.denominator
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


_BIG_DECIMAL = re.compile(r"[+\-]?(\d+\.?\d*|\.\d+)([eE][+\-]?\d+)?\Z")
_WIDE = Context(prec=1000, Emax=999_999_999_999, Emin=-999_999_999_999)


def parse_decimal(text: str) -> Decimal | None:
    """``new java.math.BigDecimal(s.trim())``: digits, optional fraction and exponent."""
    t = _trim_java(text)
    if not _BIG_DECIMAL.match(t):
        return None
    try:
        d = Decimal(t)
    except InvalidOperation:
        return None
    exp = d.as_tuple().exponent
    if not isinstance(exp, int) or not -(2**31) < exp <= 2**31:
        return None
    return d


def decimal_fit(d: Decimal, precision: int, scale: int) -> Decimal | None:
    """Spark's ``changePrecision`` with ROUND_HALF_UP: None if the value needs more digits."""
    if d.adjusted() >= precision - scale + 1 and not d.is_zero():
        return None
    q = d.quantize(Decimal((0, (1,), -scale)), rounding=ROUND_HALF_UP, context=_WIDE)
    digits = len(q.as_tuple().digits)
    if not q.is_zero() and digits > precision:
        return None
    return q


def _check_segment(segment: int, digits: int, date_only: bool) -> bool:
    if segment == 0:
        return 4 <= digits <= (7 if date_only else 6)
    if not date_only and segment == 6:
        return True
    if not date_only and segment == 7:
        return digits <= 2
    return 0 < digits <= 2


_TRIM_BYTES = frozenset(range(0x21)) | {0x7F}


def _trim_bounds(data: bytes) -> tuple[int, int]:
    start, end = 0, len(data)
    while start < end and data[start] in _TRIM_BYTES:
        start += 1
    while end - 1 > start and data[end - 1] in _TRIM_BYTES:
        end -= 1
    return start, end


def string_to_date(text: str) -> int | None:
    """``DateTimeUtils.stringToDate``: ``[+-]yyyy[-m[m][-d[d]]]`` optionally followed by a space
    or ``T`` and anything; returns the epoch day or None."""
    data = text.encode("utf-8")
    j, end = _trim_bounds(data)
    if j >= end:
        return None
    sign = 1
    if data[j] in b"+-":
        sign = -1 if data[j] == 0x2D else 1
        j += 1
    segments = [1, 1, 1]
    i = value = digits = 0
    while j < end and data[j] not in b" T":
        c = data[j]
        if i < 2 and c == 0x2D:
            if not _check_segment(i, digits, True):
                return None
            segments[i] = value
            value = digits = 0
            i += 1
        elif 0x30 <= c <= 0x39:
            value = value * 10 + c - 0x30
            digits += 1
        else:
            return None
        j += 1
    if not _check_segment(i, digits, True):
        return None
    if i < 2 and j < end:
        return None
    segments[i] = value
    year, month, day = sign * segments[0], segments[1], segments[2]
    if not _valid_date(year, month, day):
        return None
    return days_from_civil(year, month, day)


@dataclass(frozen=True, slots=True)
class TimestampParts:
    """What ``DateTimeUtils.parseTimestampString`` extracts from a timestamp string."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    micros: int
    zone: str | None
    just_time: bool


def parse_timestamp_string(text: str) -> TimestampParts | None:
    """Split a timestamp string into its fields (Spark's accepted layouts, see module docs)."""
    data = text.encode("utf-8")
    j, end = _trim_bounds(data)
    if j >= end:
        return None
    seg = [1, 1, 1, 0, 0, 0, 0, 0, 0]
    i = value = digits = frac_digits = 0
    just_time = False
    year_sign: int | None = None
    zone: str | None = None
    if data[j] in b"+-":
        year_sign = -1 if data[j] == 0x2D else 1
        j += 1
    while j < end:
        c = data[j]
        if 0x30 <= c <= 0x39:
            if i == 6:
                frac_digits += 1
            if i != 6 or digits < 6:
                value = value * 10 + c - 0x30
            digits += 1
        elif j == 0 and c == 0x54:  # a leading 'T': time only
            just_time = True
            i += 3
        elif i < 2:
            if c == 0x2D:
                if not _check_segment(i, digits, False):
                    return None
                seg[i] = value
                value = digits = 0
                i += 1
            elif i == 0 and c == 0x3A and year_sign is None:
                just_time = True
                if not _check_segment(3, digits, False):
                    return None
                seg[3] = value
                value = digits = 0
                i = 4
            else:
                return None
        elif i == 2:
            if c not in b" T" or not _check_segment(i, digits, False):
                return None
            seg[i] = value
            value = digits = 0
            i += 1
        elif i in (3, 4):
            if c != 0x3A or not _check_segment(i, digits, False):
                return None
            seg[i] = value
            value = digits = 0
            i += 1
        elif i in (5, 6):
            if not _check_segment(i, digits, False):
                return None
            seg[i] = value
            value = digits = 0
            i += 1
            if not (c == 0x2E and i == 6):
                zone = data[j:end].decode("utf-8", "replace")
                j = end - 1
                if i == 6:
                    i += 1
        else:
            if i < len(seg) and c in b": ":
                if not _check_segment(i, digits, False):
                    return None
                seg[i] = value
                value = digits = 0
                i += 1
            else:
                return None
        j += 1
    if not _check_segment(i, digits, False) or i >= len(seg):
        return None
    seg[i] = value
    while frac_digits < 6:
        seg[6] *= 10
        frac_digits += 1
    if year_sign is not None:
        seg[0] *= year_sign
    return TimestampParts(seg[0], seg[1], seg[2], seg[3], seg[4], seg[5], seg[6], zone, just_time)


def _time_of_day_micros(p: TimestampParts) -> int | None:
    if p.hour > 23 or p.minute > 59 or p.second > 59:
        return None
    return ((p.hour * 60 + p.minute) * 60 + p.second) * MICROS_PER_SECOND + p.micros


def string_to_timestamp(text: str, zone: _dt.tzinfo) -> int | None:
    """``DateTimeUtils.stringToTimestamp``: epoch micros; the string's own zone wins over ``zone``;
    a time without a date takes today's date in that zone."""
    p = parse_timestamp_string(text)
    if p is None:
        return None
    if p.zone is not None:
        parsed = zone_of(_trim_java(p.zone))
        if parsed is None:
            return None
        zone = parsed
    tod = _time_of_day_micros(p)
    if tod is None:
        return None
    if p.just_time:
        today = _dt.datetime.now(zone).date()
        days = today.toordinal() - _EPOCH_ORDINAL
    else:
        if not _valid_date(p.year, p.month, p.day):
            return None
        days = days_from_civil(p.year, p.month, p.day)
    micros = local_to_instant(days * MICROS_PER_DAY + tod, zone)
    return micros if INT64_MIN <= micros <= INT64_MAX else None


def string_to_timestamp_ntz(text: str) -> int | None:
    """``stringToTimestampWithoutTimeZone(allowTimeZone = true)``: any zone is ignored."""
    p = parse_timestamp_string(text)
    if p is None or p.just_time:
        return None
    if p.zone is not None and zone_of(_trim_java(p.zone)) is None:
        return None
    tod = _time_of_day_micros(p)
    if tod is None or not _valid_date(p.year, p.month, p.day):
        return None
    micros = days_from_civil(p.year, p.month, p.day) * MICROS_PER_DAY + tod
    return micros if INT64_MIN <= micros <= INT64_MAX else None


def string_to_time(text: str) -> int | None:
    """``DateTimeUtils.stringToTime``: a time of day without date or zone, as micros."""
    p = parse_timestamp_string(text)
    if p is None or not p.just_time or p.zone is not None:
        return None
    return _time_of_day_micros(p)


_TRUE_STRINGS = frozenset(("t", "true", "y", "yes", "1"))
_FALSE_STRINGS = frozenset(("f", "false", "n", "no", "0"))


def string_to_boolean(text: str) -> bool | None:
    low = _trim_control(text).lower()
    if low in _TRUE_STRINGS:
        return True
    if low in _FALSE_STRINGS:
        return False
    return None


# --- the cast ------------------------------------------------------------------------------------------

_I8 = struct.Struct("<b")
_I16 = struct.Struct("<h")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_EMPTY_METADATA = b"\x01\x00\x00"

# Source kinds: the Spark literal type a Variant scalar becomes before the cast.
K_BOOLEAN, K_LONG, K_STRING, K_DOUBLE, K_DECIMAL, K_DATE, K_TIMESTAMP, K_NTZ, K_FLOAT, K_BINARY = range(10)
K_UUID, K_NULL, K_UNSUPPORTED = 10, 11, 12


class _Failed:
    """Marks a cast Spark rejects (TRY mode would give NULL)."""

    __slots__ = ()


FAIL = _Failed()


@dataclass(frozen=True, slots=True)
class CastContext:
    """How to cast: fail (``variant_get``) or give None (``try_variant_get``), and the session zone."""

    strict: bool
    zone: _dt.tzinfo
    zone_name: str


def stripped_decimal(unscaled: int, scale: int) -> tuple[int, int]:
    """``Variant.getDecimal``: trailing zeros removed, but never a negative scale."""
    while scale > 0 and unscaled % 10 == 0:
        unscaled //= 10
        scale -= 1
    if unscaled == 0:
        scale = 0
    return unscaled, scale


def source_of(value: bytes, pos: int) -> tuple[int, object]:
    """``(kind, python value)`` of the scalar at ``pos`` as Spark's cast sees it."""
    header = value[pos]
    basic = header & 0x03
    if basic == 1:
        n = header >> 2
        end = pos + 1 + n
        if end > len(value):
            raise IndexError("short string runs past the end")
        return K_STRING, value[pos + 1 : end].decode("utf-8")
    t = header >> 2
    if t == 0:
        return K_NULL, None
    if t == 1 or t == 2:
        return K_BOOLEAN, t == 1
    if t == 3:
        return K_LONG, _I8.unpack_from(value, pos + 1)[0]
    if t == 4:
        return K_LONG, _I16.unpack_from(value, pos + 1)[0]
    if t == 5:
        return K_LONG, _I32.unpack_from(value, pos + 1)[0]
    if t == 6:
        return K_LONG, _I64.unpack_from(value, pos + 1)[0]
    if t == 7:
        return K_DOUBLE, _F64.unpack_from(value, pos + 1)[0]
    if t == 16:
        n = _U32.unpack_from(value, pos + 1)[0]
        end = pos + 5 + n
        if end > len(value):
            raise IndexError("string runs past the end")
        return K_STRING, value[pos + 5 : end].decode("utf-8")
    if 8 <= t <= 10:
        width = 4 << (t - 8) if t < 10 else 16
        scale = value[pos + 1]
        end = pos + 2 + width
        if scale > 38 or end > len(value):
            raise dec.MalformedVariantError(f"invalid decimal (scale {scale})", pos)
        return K_DECIMAL, stripped_decimal(int.from_bytes(value[pos + 2 : end], "little", signed=True), scale)
    if t == 11:
        return K_DATE, _I32.unpack_from(value, pos + 1)[0]
    if t == 12:
        return K_TIMESTAMP, _I64.unpack_from(value, pos + 1)[0]
    if t == 13:
        return K_NTZ, _I64.unpack_from(value, pos + 1)[0]
    if t == 14:
        return K_FLOAT, _F32.unpack_from(value, pos + 1)[0]
    if t == 15:
        n = _U32.unpack_from(value, pos + 1)[0]
        end = pos + 5 + n
        if end > len(value):
            raise IndexError("binary runs past the end")
        return K_BINARY, bytes(value[pos + 5 : end])
    if t == 20:
        return K_UUID, dec.primitive_to_python(value, pos)
    if t in (17, 18, 19):
        return K_UNSUPPORTED, t
    raise dec.MalformedVariantError(f"unknown primitive type id {t}", pos)


_INT_BOUNDS = {
    "tinyint": (-(1 << 7), (1 << 7) - 1),
    "smallint": (-(1 << 15), (1 << 15) - 1),
    "int": (-(1 << 31), (1 << 31) - 1),
    "bigint": (INT64_MIN, INT64_MAX),
}
_TWO_63 = float(1 << 63)


def _fractional_to_long(x: float, lo: int, hi: int) -> int | _Failed:
    """ANSI double -> integral: NaN/infinity and values whose floor/ceil leave the range fail;
    the comparison is made in double arithmetic, so 2**63 still saturates to Long.MaxValue."""
    if x != x or x in (math.inf, -math.inf):
        return FAIL
    if math.floor(x) <= float(hi) and math.ceil(x) >= float(lo):
        return min(max(int(x), lo), hi)
    return FAIL


def _to_boolean(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_BOOLEAN:
        return v
    if kind in (K_LONG, K_DOUBLE, K_FLOAT):
        return v != 0
    if kind == K_DECIMAL:
        return v[0] != 0  # type: ignore[index]
    if kind == K_STRING:
        b = string_to_boolean(v)  # type: ignore[arg-type]
        return FAIL if b is None else b
    return FAIL


def _to_integral(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    lo, hi = _INT_BOUNDS[t.name]
    if kind == K_LONG:
        n = v
    elif kind == K_BOOLEAN:
        n = 1 if v else 0
    elif kind in (K_DOUBLE, K_FLOAT):
        return _fractional_to_long(v, lo, hi)  # type: ignore[arg-type]
    elif kind == K_DECIMAL:
        unscaled, scale = v  # type: ignore[misc]
        if t.name != "bigint":  # Spark's Decimal.roundToInt/Short/Byte go through a double
            return _fractional_to_long(unscaled / 10**scale, lo, hi)
        n = abs(unscaled) // 10**scale
        if unscaled < 0:
            n = -n
    elif kind == K_STRING:
        n = parse_integer(v)  # type: ignore[arg-type]
        if n is None:
            return FAIL
    elif kind == K_TIMESTAMP:
        n = v // MICROS_PER_SECOND  # type: ignore[operator]
    else:
        return FAIL
    return n if lo <= n <= hi else FAIL  # type: ignore[operator]


def _to_double(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_DOUBLE or kind == K_FLOAT:
        return v
    if kind == K_LONG:
        return float(v)  # type: ignore[arg-type]
    if kind == K_DECIMAL:
        unscaled, scale = v  # type: ignore[misc]
        return unscaled / 10**scale
    if kind == K_BOOLEAN:
        return 1.0 if v else 0.0
    if kind == K_STRING:
        d = parse_double(v, False)  # type: ignore[arg-type]
        return FAIL if d is None else d
    if kind == K_TIMESTAMP:
        return float(v) / 1e6  # type: ignore[arg-type]
    return FAIL


def _to_float(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_FLOAT:
        return v
    if kind == K_DOUBLE:
        return to_float32(v)  # type: ignore[arg-type]
    if kind == K_LONG:
        return float(v) if -(1 << 24) <= v <= (1 << 24) else float32_of_fraction(Fraction(v))  # type: ignore[operator, arg-type]
    if kind == K_DECIMAL:
        unscaled, scale = v  # type: ignore[misc]
        return float32_of_fraction(Fraction(unscaled, 10**scale))
    if kind == K_BOOLEAN:
        return 1.0 if v else 0.0
    if kind == K_STRING:
        d = parse_double(v, True)  # type: ignore[arg-type]
        return FAIL if d is None else d
    if kind == K_TIMESTAMP:
        return to_float32(float(v) / 1e6)  # type: ignore[arg-type]
    return FAIL


def _to_decimal(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_DECIMAL:
        unscaled, scale = v  # type: ignore[misc]
        d = Decimal((0 if unscaled >= 0 else 1, tuple(map(int, str(abs(unscaled)))), -scale))
    elif kind == K_LONG:
        d = Decimal(v)  # type: ignore[arg-type]
    elif kind == K_BOOLEAN:
        d = Decimal(1 if v else 0)
    elif kind in (K_DOUBLE, K_FLOAT):
        if v != v or v in (math.inf, -math.inf):
            return FAIL
        d = Decimal(java_double(v))  # type: ignore[arg-type]
    elif kind == K_STRING:
        parsed = parse_decimal(v)  # type: ignore[arg-type]
        if parsed is None:
            return FAIL
        d = parsed
    elif kind == K_TIMESTAMP:
        d = Decimal(java_double(float(v) / 1e6))  # type: ignore[arg-type]
    else:
        return FAIL
    fitted = decimal_fit(d, t.precision, t.scale)
    return FAIL if fitted is None else fitted


def _to_string(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_STRING:
        return v
    if kind == K_LONG:
        return str(v)
    if kind == K_BOOLEAN:
        return "true" if v else "false"
    if kind == K_DOUBLE:
        return java_double(v)  # type: ignore[arg-type]
    if kind == K_FLOAT:
        return java_float(v)  # type: ignore[arg-type]
    if kind == K_DECIMAL:
        return plain_decimal(*v)  # type: ignore[misc]
    if kind == K_DATE:
        return format_date(v)  # type: ignore[arg-type]
    if kind == K_TIMESTAMP:
        return format_timestamp(instant_to_local(v, ctx.zone))  # type: ignore[arg-type]
    if kind == K_NTZ:
        return format_timestamp(v)  # type: ignore[arg-type]
    if kind == K_BINARY:
        return v.decode("utf-8", "replace")  # type: ignore[union-attr]
    if kind == K_UUID:
        return str(v)
    return FAIL


def _to_binary(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_BINARY:
        return v
    if kind == K_STRING:
        return v.encode("utf-8")  # type: ignore[union-attr]
    return FAIL


def _to_date(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_DATE:
        days = v
    elif kind == K_STRING:
        days = string_to_date(v)  # type: ignore[arg-type]
        if days is None:
            return FAIL
    elif kind == K_TIMESTAMP:
        days = instant_to_local(v, ctx.zone) // MICROS_PER_DAY  # type: ignore[arg-type]
    elif kind == K_NTZ:
        days = v // MICROS_PER_DAY  # type: ignore[operator]
    else:
        return FAIL
    return date_value(days)  # type: ignore[arg-type]


def _to_timestamp(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_TIMESTAMP:
        micros = v
    elif kind == K_STRING:
        micros = string_to_timestamp(v, ctx.zone)  # type: ignore[arg-type]
        if micros is None:
            return FAIL
    elif kind == K_LONG:
        micros = v * MICROS_PER_SECOND  # type: ignore[operator]
    elif kind == K_DECIMAL:
        unscaled, scale = v  # type: ignore[misc]
        micros = abs(unscaled) * MICROS_PER_SECOND // 10**scale
        if unscaled < 0:
            micros = -micros
    elif kind in (K_DOUBLE, K_FLOAT):
        micros = _fractional_to_long(v * 1e6, INT64_MIN, INT64_MAX)  # type: ignore[operator]
        if micros is FAIL:
            return FAIL
    elif kind == K_DATE:
        micros = local_to_instant(v * MICROS_PER_DAY, ctx.zone)  # type: ignore[operator]
    elif kind == K_NTZ:
        micros = local_to_instant(v, ctx.zone)  # type: ignore[arg-type]
    else:
        return FAIL
    if not INT64_MIN <= micros <= INT64_MAX:  # type: ignore[operator]
        return FAIL
    return timestamp_value(micros, True)  # type: ignore[arg-type]


def _to_timestamp_ntz(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_NTZ:
        micros = v
    elif kind == K_STRING:
        micros = string_to_timestamp_ntz(v)  # type: ignore[arg-type]
        if micros is None:
            return FAIL
    elif kind == K_DATE:
        micros = v * MICROS_PER_DAY  # type: ignore[operator]
    elif kind == K_TIMESTAMP:
        micros = instant_to_local(v, ctx.zone)  # type: ignore[arg-type]
    else:
        return FAIL
    return timestamp_value(micros, False)  # type: ignore[arg-type]


def _to_time(kind: int, v: object, t: SparkType, ctx: CastContext) -> object:
    if kind == K_STRING:
        micros = string_to_time(v)  # type: ignore[arg-type]
        if micros is None:
            return FAIL
    elif kind == K_TIMESTAMP:
        micros = instant_to_local(v, ctx.zone) % MICROS_PER_DAY  # type: ignore[arg-type]
    elif kind == K_NTZ:
        micros = v % MICROS_PER_DAY  # type: ignore[operator]
    else:
        return FAIL
    seconds, frac = divmod(micros, MICROS_PER_SECOND)
    return _dt.time(seconds // 3600, seconds // 60 % 60, seconds % 60, frac)


_SCALAR_CASTS = {
    "boolean": _to_boolean,
    "tinyint": _to_integral,
    "smallint": _to_integral,
    "int": _to_integral,
    "bigint": _to_integral,
    "float": _to_float,
    "double": _to_double,
    "decimal": _to_decimal,
    "string": _to_string,
    "binary": _to_binary,
    "date": _to_date,
    "timestamp": _to_timestamp,
    "timestamp_ntz": _to_timestamp_ntz,
    "time": _to_time,
}


def copy_value(meta: dec.MetadataView, value: bytes, pos: int, keys: MetadataBuilder) -> bytes:
    """Re-encode the value at ``pos`` against the dictionary ``keys`` (Spark's ``appendVariant``:
    fields in id order, each key added before its value, primitives copied byte for byte)."""
    basic = value[pos] & 0x03
    if basic == 2:
        n, id_size, osz, ids, offs, data = dec.object_layout(value, pos)
        names = meta.keys()
        new_ids = []
        parts = []
        for i in range(n):
            fid = dec.read_uint(value, ids + i * id_size, id_size)
            if fid >= len(names):
                raise dec.MalformedVariantError(f"field id {fid} outside a dictionary of {len(names)}", ids + i * id_size)
            new_ids.append(keys.add(names[fid]))
            parts.append(copy_value(meta, value, data + dec.read_uint(value, offs + i * osz, osz), keys))
        return _object_bytes(new_ids, parts)
    if basic == 3:
        return encode_array([copy_value(meta, value, p, keys) for p in dec.array_positions(value, pos)])
    size = dec.value_size(value, pos)
    if pos + size > len(value):
        raise dec.MalformedVariantError("value runs past the end", pos)
    return value[pos : pos + size]


def _object_bytes(ids: list[int], parts: list[bytes]) -> bytes:
    """An object whose fields are already in key order, values laid out in that order."""
    n = len(ids)
    body = b"".join(parts)
    osz = int_size(len(body))
    isz = int_size(max(ids)) if ids else 1
    large = n > 0xFF
    out = bytearray((0x02 | ((osz - 1) << 2) | ((isz - 1) << 4) | (0x40 if large else 0),))
    out += n.to_bytes(4 if large else 1, "little")
    for fid in ids:
        out += fid.to_bytes(isz, "little")
    offset = 0
    for part in parts:
        out += offset.to_bytes(osz, "little")
        offset += len(part)
    out += offset.to_bytes(osz, "little")
    out += body
    return bytes(out)


def extract_variant(meta: dec.MetadataView, value: bytes, pos: int) -> tuple[bytes, bytes]:
    """``(metadata, value)`` of a self-contained copy of the value at ``pos`` with only its own keys."""
    if value[pos] & 0x03 < 2:
        size = dec.value_size(value, pos)
        if pos + size > len(value):
            raise dec.MalformedVariantError("value runs past the end", pos)
        return _EMPTY_METADATA, value[pos : pos + size]
    keys = MetadataBuilder()
    body = copy_value(meta, value, pos, keys)
    return keys.build(), body


def invalid_cast_message(meta: dec.MetadataView, value: bytes, pos: int, t: SparkType, zone_name: str) -> str:
    """Spark's INVALID_VARIANT_CAST text, naming the value (as JSON) and the target type."""
    return (
        f"[INVALID_VARIANT_CAST] The variant value `{to_json(meta, value, pos, zone_name)}` "
        f'cannot be cast into `"{t.sql}"`. Please use `try_variant_get` instead.'
    )


def cast_variant(meta: dec.MetadataView, value: bytes, pos: int, t: SparkType, ctx: CastContext) -> object:
    """Cast the value at ``pos`` to ``t`` (Spark's ``VariantGet.cast``).

    Returns the Python value, None for a Variant null, or for a failed cast None
    (``ctx.strict`` False) / ``VariantCastError`` (``ctx.strict`` True). Inside arrays, maps
    and structs a failed element becomes None in TRY mode, as in Spark.
    """
    name = t.name
    if name == "variant":
        metadata, body = extract_variant(meta, value, pos)
        return Variant(metadata, body)
    header = value[pos]
    basic = header & 0x03
    if basic >= 2:
        if name == "string":
            return to_json(meta, value, pos, ctx.zone_name)
        if name == "array" and basic == 3:
            elem = t.element
            return [cast_variant(meta, value, p, elem, ctx) for p in dec.array_positions(value, pos)]  # type: ignore[arg-type]
        if name == "map" and basic == 2:
            elem = t.element
            return {k: cast_variant(meta, value, p, elem, ctx) for k, p in dec.object_entries(meta, value, pos)}  # type: ignore[arg-type]
        if name == "struct" and basic == 2:
            out: dict[str, object] = {n: None for n, _ in t.fields}
            types = dict(t.fields)
            for k, p in dec.object_entries(meta, value, pos):
                ft = types.get(k)
                if ft is not None:
                    out[k] = cast_variant(meta, value, p, ft, ctx)
            return out
        return _failed(meta, value, pos, t, ctx)
    if header == 0:
        return None
    kind, v = source_of(value, pos)
    if kind == K_UNSUPPORTED:
        raise VariantError(
            f"Variant primitive type {v} (TIME or nanosecond timestamp) has no Spark 4.3 SQL type to cast from"
        )
    if kind == K_UUID and name != "string":
        return _failed(meta, value, pos, t, ctx)
    fn = _SCALAR_CASTS.get(name)
    result = fn(kind, v, t, ctx) if fn is not None else FAIL
    if result is FAIL:
        return _failed(meta, value, pos, t, ctx)
    return result


def _failed(meta: dec.MetadataView, value: bytes, pos: int, t: SparkType, ctx: CastContext) -> None:
    if ctx.strict:
        raise VariantCastError(invalid_cast_message(meta, value, pos, t, ctx.zone_name))
    return None
