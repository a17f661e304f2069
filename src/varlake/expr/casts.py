"""Value-level Spark casts and literal typing, in plain Python values.

Used to coerce literals when binding (``ts >= '2024-01-01'``) and by the row evaluator
for ``CAST``.  Values are Python natives: int, Decimal, float, str, bool, bytes, date,
datetime (aware UTC for ``timestamp``, naive for ``timestamp_ntz``).  Semantics follow
Spark's ANSI mode, with every rule (string grammars, Java number text, date/timestamp
text, zones) from ``varlake.semantics``, the same code the Variant codec casts with; a
value that does not convert raises ExpressionEvaluationError.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from varlake.errors import ExpressionEvaluationError, ExpressionTimeZoneError, ExpressionTypeError, InvalidTimeZoneError
from varlake.expr.types import INTEGRAL_TYPES, decimal_params, is_integral, is_numeric
from varlake.semantics.calendar import MICROS_PER_DAY, days_of_date, micros_of_datetime
from varlake.semantics.datetime_text import (
    format_date,
    format_timestamp,
    parse_timestamp_string,
    string_to_date,
    string_to_timestamp,
    string_to_timestamp_ntz,
    timestamp_text,
)
from varlake.semantics.numbers import (
    decimal_parts,
    decimal_plain_text,
    decimal_to_integral,
    float32_of_fraction,
    fractional_to_integral,
    java_double,
    java_float,
    to_float32,
)
from varlake.semantics.string_casts import decimal_fit, parse_decimal, parse_double, parse_integer, string_to_boolean
from varlake.semantics.utf8 import java_utf8_decode
from varlake.semantics.zones import instant_to_local, local_to_instant, resolve_zone
from varlake.variant.cast import OutOfPythonRange, date_value, timestamp_value

UTC = dt.timezone.utc

# ``Double.toString``: the text Spark gives a DOUBLE cast to STRING (one implementation).
java_double_text = java_double


def zone(name: str) -> dt.tzinfo:
    """A session time zone resolved as Spark resolves it (``varlake.semantics.zones``);
    refused ids raise ``ExpressionTimeZoneError``."""
    try:
        return resolve_zone(name)
    except InvalidTimeZoneError as exc:
        raise ExpressionTimeZoneError(str(exc)) from None


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
    """Spark ANSI ``CAST(value AS target)``; None stays None; failures raise ExpressionEvaluationError
    (an unknown session zone ``tz`` raises InvalidTimeZoneError; a date or timestamp Spark gives
    outside the years 1-9999 raises ``OutOfPythonRange``)."""
    if value is None:
        return None
    tzinfo = zone(tz)
    try:
        return _cast(value, source, target, tzinfo)
    except OutOfPythonRange:
        raise  # Spark gives a value Python cannot hold: no failure (a try form's NULL would be wrong)
    except (ValueError, ArithmeticError, InvalidOperation, TypeError) as exc:
        raise ExpressionEvaluationError(f"cannot cast {value!r} from {source} to {target}: {exc}") from exc


def _cast(value: Any, source: str, target: str, tz: dt.tzinfo) -> Any:
    if source == target:
        return value
    if is_integral(target):
        return _to_integral(value, source, target)
    params = decimal_params(target)
    if params is not None:
        return _to_decimal(value, source, *params)
    if target == "double":
        return _to_double(value, source)
    if target == "float":
        return _to_float(value, source)
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
    number: int | None
    if source == "boolean":
        number = int(bool(value))
    elif source == "string":
        number = parse_integer(str(value))
        if number is None:
            raise ValueError("not an integer")
    elif isinstance(value, float):
        number = fractional_to_integral(value, low, high)
    elif isinstance(value, Decimal):
        number = decimal_to_integral(*decimal_parts(value), low, high)
    else:
        number = int(value)
    if number is None or not low <= number <= high:
        raise OverflowError(f"{value} out of range for {target}")
    return number


def _to_decimal(value: Any, source: str, precision: int, scale: int) -> Decimal:
    if source == "boolean":
        number: Decimal | None = Decimal(int(bool(value)))
    elif source == "string":
        number = parse_decimal(str(value))
        if number is None:
            raise ValueError("not a number")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("not finite")
        number = Decimal(java_double(value))
    else:
        number = Decimal(value)
    if not number.is_finite():
        raise ValueError("not finite")
    result = decimal_fit(number, precision, scale)
    if result is None:
        raise OverflowError(f"{number} does not fit decimal({precision},{scale})")
    return result


def _to_double(value: Any, source: str) -> float:
    if source == "boolean":
        return 1.0 if value else 0.0
    if source == "string":
        number = parse_double(str(value), False)
        if number is None:
            raise ValueError("not a number")
        return number
    return float(value)


def _to_float(value: Any, source: str) -> float:
    """A FLOAT value (a Python float holding a float32) rounded once from the exact source."""
    if source == "boolean":
        return 1.0 if value else 0.0
    if source == "string":
        number = parse_double(str(value), True)
        if number is None:
            raise ValueError("not a number")
        return number
    if isinstance(value, float):
        return to_float32(value)
    if isinstance(value, (int, Decimal)):
        return float32_of_fraction(Fraction(value))
    return to_float32(float(value))


def _to_boolean(value: Any, source: str) -> bool:
    if source == "string":
        result = string_to_boolean(str(value))
        if result is None:
            raise ValueError("not a boolean")
        return result
    return bool(value)


def _to_string(value: Any, source: str, tz: dt.tzinfo) -> str:
    if source == "boolean":
        return "true" if value else "false"
    if source == "double":
        return java_double(float(value))
    if source == "float":
        return java_float(float(value))
    if isinstance(value, Decimal):
        return decimal_plain_text(value)
    if source == "binary":
        return java_utf8_decode(bytes(value))
    if source == "timestamp":
        return timestamp_text(micros_of_datetime(_aware(value)), tz)
    if source == "timestamp_ntz":
        return format_timestamp(micros_of_datetime(value.replace(tzinfo=None)))
    if source == "date":
        return format_date(days_of_date(value))
    return str(value)


def _aware(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _instant(micros: int) -> dt.datetime:
    return timestamp_value(micros, aware=True)


def _wall(micros: int) -> dt.datetime:
    return timestamp_value(micros, aware=False)


def _to_date(value: Any, source: str, tz: dt.tzinfo) -> dt.date:
    if source == "string":
        return parse_date(str(value))
    if source == "timestamp":
        local = instant_to_local(micros_of_datetime(_aware(value)), tz)
        return date_value(local // MICROS_PER_DAY)
    return value.date()


def _to_timestamp(value: Any, source: str, target: str, tz: dt.tzinfo) -> dt.datetime:
    ntz = target == "timestamp_ntz"
    if source == "string":
        micros = string_to_timestamp_ntz(str(value)) if ntz else string_to_timestamp(str(value), tz)
        if micros is None:
            raise ValueError(f"{value!r} is not a timestamp")
        return _wall(micros) if ntz else _instant(micros)
    if source == "date":
        local = days_of_date(value) * MICROS_PER_DAY
        return _wall(local) if ntz else _instant(local_to_instant(local, tz))
    if ntz:  # from timestamp: wall clock in the session zone
        return _wall(instant_to_local(micros_of_datetime(_aware(value)), tz))
    return _instant(local_to_instant(micros_of_datetime(value.replace(tzinfo=None)), tz))  # from timestamp_ntz


def parse_date(text: str) -> dt.date:
    """Spark string -> date (``DateTimeUtils.stringToDate``); ValueError where Spark's cast
    fails, ``OutOfPythonRange`` where it gives a date of a year Python cannot hold."""
    days = string_to_date(text)
    if days is None:
        raise ValueError(f"{text!r} is not a date")
    return date_value(days)


def timestamp_has_zone(text: str) -> bool:
    """Whether timestamp text names its zone (then its instant does not depend on the session)."""
    parts = parse_timestamp_string(text)
    return parts is not None and parts.zone is not None


def parse_timestamp(text: str, tz: str = "UTC", ntz: bool = False) -> dt.datetime:
    """Spark string -> timestamp (aware, UTC) or timestamp_ntz (naive); zone-less text uses ``tz``.
    ValueError where Spark's cast fails."""
    micros = string_to_timestamp_ntz(text) if ntz else string_to_timestamp(text, zone(tz))
    if micros is None:
        raise ValueError(f"{text!r} is not a timestamp")
    return _wall(micros) if ntz else _instant(micros)
