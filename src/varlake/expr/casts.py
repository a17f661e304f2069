"""Value-level Spark casts and literal typing, in plain Python values.

Used to coerce literals when binding (``ts >= '2024-01-01'``) and by the row evaluator
for ``CAST``.  Values are Python natives: int, Decimal, float, str, bool, bytes, date,
datetime (aware UTC for ``timestamp``, naive for ``timestamp_ntz``).  Semantics follow
Spark's ANSI mode; a value that does not convert raises ExpressionEvaluationError.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from varlake.errors import ExpressionEvaluationError, ExpressionTypeError
from varlake.expr.types import INTEGRAL_TYPES, decimal_params, is_integral, is_numeric

UTC = dt.timezone.utc
_EPOCH_DATE = dt.date(1970, 1, 1)
_TRUE_STRINGS = frozenset({"true", "t", "yes", "y", "1"})
_FALSE_STRINGS = frozenset({"false", "f", "no", "n", "0"})
_INTEGER_RE = re.compile(r"[+-]?[0-9]+(?:\.0*)?")
_DECIMAL_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DATE_RE = re.compile(r"^\s*([+-]?\d{4,6})(?:-(\d{1,2})(?:-(\d{1,2}))?)?(?:[ T].*)?\s*$")
_TS_RE = re.compile(
    r"^\s*([+-]?\d{4,6})(?:-(\d{1,2})(?:-(\d{1,2}))?)?"
    r"(?:[ T](\d{1,2})(?::(\d{1,2})(?::(\d{1,2})(?:\.(\d{0,9}))?)?)?)?"
    r"\s*(Z|UTC|GMT|[+-]\d{1,2}(?::?\d{2})?|[A-Za-z_]+/[A-Za-z_/+-]+)?\s*$"
)


@lru_cache(maxsize=64)
def zone(name: str) -> dt.tzinfo:
    """tzinfo for a session time zone id ('UTC', 'Europe/Paris', '+02:00')."""
    if name.upper() in ("UTC", "Z", "GMT"):
        return UTC
    offset = re.fullmatch(r"([+-])(\d{1,2})(?::?(\d{2}))?", name)
    if offset:
        sign = -1 if offset.group(1) == "-" else 1
        delta = dt.timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3) or 0))
        return dt.timezone(sign * delta)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ExpressionTypeError(f"unknown time zone {name!r}") from exc


def literal_type(value: Any) -> str:
    """SQL type Spark would give a Python literal (None -> ``void``)."""
    if value is None:
        return "void"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return "integer"
        if -(2**63) <= value < 2**63:
            return "long"
        digits = len(str(abs(value)))
        if digits > 38:
            raise ExpressionTypeError(f"integer literal {value} has more than 38 digits")
        return f"decimal({digits},0)"
    if isinstance(value, float):
        return "double"
    if isinstance(value, Decimal):
        return _decimal_type(value)
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bytes, bytearray)):
        return "binary"
    if isinstance(value, dt.datetime):
        return "timestamp" if value.tzinfo is not None else "timestamp_ntz"
    if isinstance(value, dt.date):
        return "date"
    raise ExpressionTypeError(f"no SQL literal for Python value {value!r} of type {type(value).__name__}")


def _decimal_type(value: Decimal) -> str:
    if not value.is_finite():
        raise ExpressionTypeError(f"decimal literal {value} is not finite")
    sign, digits, exponent = value.as_tuple()
    scale = max(0, -int(exponent))
    precision = max(len(digits) + max(0, int(exponent)), scale, 1)
    if precision > 38:
        raise ExpressionTypeError(f"decimal literal {value} needs more than 38 digits")
    return f"decimal({precision},{scale})"


def sql_number(text: str) -> tuple[Any, str]:
    """Value and type of an unsuffixed SQL numeric literal, as Spark types it."""
    if any(c in text for c in "eE"):
        return float(text), "double"
    if "." in text:
        value = Decimal(text)
        return value, _decimal_type(value)
    number = int(text)
    return number, literal_type(number)


def can_cast(source: str, target: str) -> bool:
    """Whether ``cast_value`` implements this cast (checked at bind time)."""
    if source == target or source == "void":
        return True
    simple = {"string", "boolean", "date", "timestamp", "timestamp_ntz", "binary"}
    if is_numeric(target):
        return is_numeric(source) or source in ("string", "boolean")
    if target == "string":
        return is_numeric(source) or source in simple
    if target == "boolean":
        return is_numeric(source) or source == "string"
    if target == "date":
        return source in ("string", "timestamp", "timestamp_ntz")
    if target in ("timestamp", "timestamp_ntz"):
        return source in ("string", "date", "timestamp", "timestamp_ntz")
    if target == "binary":
        return source == "string"
    return False


def cast_value(value: Any, source: str, target: str, tz: str = "UTC") -> Any:
    """Spark ANSI ``CAST(value AS target)``; None stays None; failures raise ExpressionEvaluationError."""
    if value is None:
        return None
    try:
        return _cast(value, source, target, tz)
    except (ValueError, ArithmeticError, InvalidOperation, TypeError) as exc:
        raise ExpressionEvaluationError(f"cannot cast {value!r} from {source} to {target}: {exc}") from exc


def _cast(value: Any, source: str, target: str, tz: str) -> Any:
    if source == target:
        return value
    if is_integral(target):
        return _to_integral(value, source, target)
    params = decimal_params(target)
    if params is not None:
        return _to_decimal(value, source, *params)
    if target in ("double", "float"):
        number = _to_double(value, source)
        return _round_float32(number) if target == "float" else number
    if target == "string":
        return _to_string(value, source, tz)
    if target == "boolean":
        return _to_boolean(value, source)
    if target == "date":
        return _to_date(value, source, tz)
    if target in ("timestamp", "timestamp_ntz"):
        return _to_timestamp(value, source, target, tz)
    if target == "binary" and source == "string":
        return str(value).encode("utf-8")
    raise ValueError("unsupported cast")


def _to_integral(value: Any, source: str, target: str) -> int:
    low, high = INTEGRAL_TYPES[target]
    if source == "boolean":
        number = int(bool(value))
    elif source == "string":
        text = str(value).strip()
        if not _INTEGER_RE.fullmatch(text):
            raise ValueError("not an integer")
        number = int(Decimal(text))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("not finite")
        number = math.trunc(value)
    else:
        number = math.trunc(value)
    if not low <= number <= high:
        raise OverflowError(f"{number} out of range for {target}")
    return number


def _to_decimal(value: Any, source: str, precision: int, scale: int) -> Decimal:
    if source == "boolean":
        number = Decimal(int(bool(value)))
    elif source == "string":
        text = str(value).strip()
        if not _DECIMAL_RE.fullmatch(text):
            raise ValueError("not a number")
        number = Decimal(text)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("not finite")
        number = Decimal(repr(value))
    else:
        number = Decimal(value)
    if not number.is_finite():
        raise ValueError("not finite")
    result = number.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    if abs(result) >= Decimal(10) ** (precision - scale):
        raise OverflowError(f"{number} does not fit decimal({precision},{scale})")
    return result


def _to_double(value: Any, source: str) -> float:
    if source == "boolean":
        return 1.0 if value else 0.0
    if source == "string":
        text = str(value).strip()
        special = {"nan": math.nan, "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf,
                   "inf": math.inf, "+inf": math.inf, "-inf": -math.inf}
        lowered = text.lower()
        if lowered in special:
            return special[lowered]
        if not _DECIMAL_RE.fullmatch(text.rstrip("dDfF")):
            raise ValueError("not a number")
        return float(text.rstrip("dDfF"))
    return float(value)


def _round_float32(number: float) -> float:
    try:
        return float(struct.unpack("<f", struct.pack("<f", number))[0])
    except OverflowError:
        return math.copysign(math.inf, number)


def _to_boolean(value: Any, source: str) -> bool:
    if source == "string":
        text = str(value).strip().lower()
        if text in _TRUE_STRINGS:
            return True
        if text in _FALSE_STRINGS:
            return False
        raise ValueError("not a boolean")
    return bool(value)


def _to_string(value: Any, source: str, tz: str) -> str:
    if source == "boolean":
        return "true" if value else "false"
    if source in ("double", "float"):
        return java_double_text(float(value))
    if isinstance(value, Decimal):
        return format(value, "f")
    if source == "binary":
        return bytes(value).decode("utf-8", errors="replace")
    if source == "timestamp":
        return _timestamp_text(value.astimezone(zone(tz)).replace(tzinfo=None))
    if source == "timestamp_ntz":
        return _timestamp_text(value)
    if source == "date":
        return value.isoformat()
    return str(value)


def _timestamp_text(value: dt.datetime) -> str:
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.microsecond:
        text += ("." + f"{value.microsecond:06d}").rstrip("0")
    return text


def java_double_text(number: float) -> str:
    """``Double.toString`` spelling, which Spark uses for double -> string casts."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "-0.0" if math.copysign(1.0, number) < 0 else "0.0"
    if 1e-3 <= abs(number) < 1e7:
        text = repr(number)
        return text if "." in text else text + ".0"
    sign, digits, exponent = Decimal(repr(number)).as_tuple()
    mantissa = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) + int(exponent) - 1
    body = mantissa[0] + "." + (mantissa[1:] or "0")
    return ("-" if sign else "") + f"{body}E{power}"


def _to_date(value: Any, source: str, tz: str) -> dt.date:
    if source == "string":
        return parse_date(str(value))
    if source == "timestamp":
        return value.astimezone(zone(tz)).date()
    return value.date()


def _to_timestamp(value: Any, source: str, target: str, tz: str) -> dt.datetime:
    if source == "string":
        return parse_timestamp(str(value), tz, ntz=target == "timestamp_ntz")
    if source == "date":
        naive = dt.datetime(value.year, value.month, value.day)
        return naive if target == "timestamp_ntz" else naive.replace(tzinfo=zone(tz)).astimezone(UTC)
    if target == "timestamp_ntz":  # from timestamp: wall clock in the session zone
        return value.astimezone(zone(tz)).replace(tzinfo=None)
    return value.replace(tzinfo=zone(tz)).astimezone(UTC)  # from timestamp_ntz


def parse_date(text: str) -> dt.date:
    """Spark string -> date: ``yyyy``, ``yyyy-[m]m``, ``yyyy-[m]m-[d]d``, optional trailing time."""
    match = _DATE_RE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a date")
    year, month, day = match.group(1), match.group(2) or 1, match.group(3) or 1
    return dt.date(int(year), int(month), int(day))


def timestamp_has_zone(text: str) -> bool:
    """Whether timestamp text names its zone (then its instant does not depend on the session)."""
    match = _TS_RE.match(text)
    return bool(match and match.group(8))


def parse_timestamp(text: str, tz: str = "UTC", ntz: bool = False) -> dt.datetime:
    """Spark string -> timestamp (aware, UTC) or timestamp_ntz (naive); zone-less text uses ``tz``."""
    match = _TS_RE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a timestamp")
    year, month, day, hour, minute, second, fraction, zone_text = match.groups()
    micros = int((fraction or "").ljust(6, "0")[:6] or 0)
    naive = dt.datetime(int(year), int(month or 1), int(day or 1), int(hour or 0), int(minute or 0),
                        int(second or 0), micros)
    if ntz:
        return naive
    return naive.replace(tzinfo=zone(zone_text or tz)).astimezone(UTC)
