"""Variant -> JSON text, string-identical to Spark 4.3's ``to_json``.

Spark's rules, checked against Spark itself in tests/test_spark_oracle*.py:
object fields in sorted-key order, strings escaped as Jackson does (``\\u001F``
in upper case), doubles and floats as Java's ``Double.toString``/``Float.toString``,
non-finite numbers quoted (``"NaN"``), decimals without trailing zeros in plain
notation, dates ``yyyy-MM-dd`` (``+10000-01-01`` past year 9999), timestamps
``yyyy-MM-dd HH:mm:ss[.ffffff]+HH:MM`` in the given zone, binary as base64.
Spark 4.3 rejects TIME and nanosecond timestamps; varlake renders them in the
same style (fractions up to 9 digits) rather than failing.
"""

from __future__ import annotations

import base64
import datetime as _dt
import functools
import json
import re
import struct
from decimal import Decimal
from zoneinfo import ZoneInfo

from varlake.variant.decoder import (
    Budget,
    MetadataView,
    array_positions,
    guarded,
    object_entries,
    primitive_to_python,
)

_encode_basestring = json.encoder.encode_basestring  # type: ignore[attr-defined]
_LOWER_HEX_ESCAPE = re.compile(r"\\u00([0-9a-f]{2})")
_I64 = struct.Struct("<q")
_I32 = struct.Struct("<i")


def quote(text: str) -> str:
    """A JSON string literal escaped the way Jackson escapes it."""
    out = _encode_basestring(text)
    if "\\u00" in out:
        out = _LOWER_HEX_ESCAPE.sub(lambda m: "\\u00" + m.group(1).upper(), out)
    return out


# --- numbers -------------------------------------------------------------------------


def _java_digits(text: str) -> str:
    """Java's Double/Float.toString layout from a shortest round-trip decimal string."""
    sign, digits, exponent = Decimal(text).as_tuple()
    assert isinstance(exponent, int)
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    exponent += len(digits) - len(ds)
    sci = len(ds) + exponent - 1  # exponent of the first digit
    prefix = "-" if sign else ""
    if -3 <= sci < 7:
        if sci >= 0:
            whole = ds[: sci + 1].ljust(sci + 1, "0")
            frac = ds[sci + 1 :] or "0"
        else:
            whole, frac = "0", "0" * (-sci - 1) + ds
        return f"{prefix}{whole}.{frac}"
    return f"{prefix}{ds[0]}.{ds[1:] or '0'}E{sci}"


def java_double(value: float) -> str:
    """``Double.toString`` (non-finite values come back unquoted: ``NaN``, ``Infinity``)."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    return _java_digits(repr(value))


def java_float(value: float) -> str:
    """``Float.toString`` of a float32 value (shortest digits that round-trip in float32)."""
    import numpy as np

    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    return _java_digits(np.format_float_scientific(np.float32(value), unique=True))


def plain_decimal(value: Decimal) -> str:
    """``BigDecimal.stripTrailingZeros().toPlainString()``."""
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    unscaled = int("".join(map(str, digits)) or "0")
    scale = -exponent
    if unscaled == 0:
        return "0"
    while scale > 0 and unscaled % 10 == 0:
        unscaled //= 10
        scale -= 1
    text = str(unscaled)
    if scale <= 0:
        text += "0" * (-scale)
    elif len(text) > scale:
        text = text[:-scale] + "." + text[-scale:]
    else:
        text = "0." + "0" * (scale - len(text)) + text
    return ("-" if sign else "") + text


# --- dates and times -----------------------------------------------------------------------


def civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of an epoch day, for any year (no datetime limits)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + 1 if m <= 2 else y), m, d


def format_date(days: int) -> str:
    """ISO date as Java's LocalDate prints it (sign and 5+ digits outside 0000-9999)."""
    y, m, d = civil_from_days(days)
    if 0 <= y <= 9999:
        year = f"{y:04d}"
    elif y > 9999:
        year = f"+{y}"
    else:
        year = f"-{-y:04d}"
    return f"{year}-{m:02d}-{d:02d}"


def _fraction(nanos: int) -> str:
    return "" if nanos == 0 else "." + f"{nanos:09d}".rstrip("0")


@functools.lru_cache(maxsize=64)
def _zone(name: str) -> _dt.tzinfo:
    if name.upper() in ("UTC", "Z", "GMT", "+00:00"):
        return _dt.timezone.utc
    return ZoneInfo(name)


def _offset_seconds(zone: _dt.tzinfo, epoch_seconds: int) -> int:
    if zone is _dt.timezone.utc:
        return 0
    clamped = min(max(epoch_seconds, -62135596800 + 86400), 253402300799 - 86400)
    instant = _dt.datetime.fromtimestamp(clamped, _dt.timezone.utc)
    offset = instant.astimezone(zone).utcoffset()
    return int(offset.total_seconds()) if offset is not None else 0


def format_offset(seconds: int) -> str:
    """``+HH:MM`` (seconds of historical offsets dropped, as Spark's formatter does)."""
    sign = "-" if seconds < 0 else "+"
    minutes = abs(seconds) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def format_timestamp_nanos(nanos: int, zone: str | None) -> str:
    """``yyyy-MM-dd HH:mm:ss[.fff]`` plus ``+HH:MM`` when ``zone`` is given (an instant)."""
    seconds, frac = divmod(nanos, 1_000_000_000)
    offset = 0
    if zone is not None:
        offset = _offset_seconds(_zone(zone), seconds)
    local = seconds + offset
    days, sod = divmod(local, 86400)
    text = f"{format_date(days)} {sod // 3600:02d}:{sod // 60 % 60:02d}:{sod % 60:02d}{_fraction(frac)}"
    return text + format_offset(offset) if zone is not None else text


def format_time(micros: int) -> str:
    sod, frac = divmod(micros, 1_000_000)
    return f"{sod // 3600:02d}:{sod // 60 % 60:02d}:{sod % 60:02d}{_fraction(frac * 1000)}"


# --- the walk ------------------------------------------------------------------------------


def _primitive_json(value: bytes, pos: int, zone: str) -> str:
    header = value[pos]
    if header & 0x03 == 1:
        return quote(primitive_to_python(value, pos))
    t = header >> 2
    if t == 0:
        return "null"
    if t == 1:
        return "true"
    if t == 2:
        return "false"
    if 3 <= t <= 6:
        return str(primitive_to_python(value, pos))
    if t == 16:
        return quote(primitive_to_python(value, pos))
    if t == 7 or t == 14:
        num = primitive_to_python(value, pos)
        text = java_double(num) if t == 7 else java_float(num)
        return text if num == num and num not in (float("inf"), float("-inf")) else f'"{text}"'
    if 8 <= t <= 10:
        return plain_decimal(primitive_to_python(value, pos))
    if t == 11:
        return f'"{format_date(_I32.unpack_from(value, pos + 1)[0])}"'
    if t == 12 or t == 13:
        micros = _I64.unpack_from(value, pos + 1)[0]
        return f'"{format_timestamp_nanos(micros * 1000, zone if t == 12 else None)}"'
    if t == 18 or t == 19:
        nanos = _I64.unpack_from(value, pos + 1)[0]
        return f'"{format_timestamp_nanos(nanos, zone if t == 18 else None)}"'
    if t == 15:
        return '"' + base64.b64encode(primitive_to_python(value, pos)).decode("ascii") + '"'
    if t == 17:
        primitive_to_python(value, pos)  # validates the range
        return f'"{format_time(_I64.unpack_from(value, pos + 1)[0])}"'
    return f'"{primitive_to_python(value, pos)}"'  # uuid


def _walk(meta: MetadataView, value: bytes, pos: int, zone: str, out: list[str], budget: Budget) -> None:
    basic = value[pos] & 0x03
    if basic == 2:
        entries = object_entries(meta, value, pos)
        budget.spend(len(entries), pos)
        out.append("{")
        first = True
        for key, child in entries:
            if not first:
                out.append(",")
            first = False
            out.append(quote(key))
            out.append(":")
            _walk(meta, value, child, zone, out, budget)
        out.append("}")
    elif basic == 3:
        positions = array_positions(value, pos)
        budget.spend(len(positions), pos)
        out.append("[")
        first = True
        for child in positions:
            if not first:
                out.append(",")
            first = False
            _walk(meta, value, child, zone, out, budget)
        out.append("]")
    else:
        out.append(_primitive_json(value, pos, zone))


@guarded
def to_json(meta: MetadataView, value: bytes, pos: int = 0, zone: str = "UTC") -> str:
    """JSON text of the value at ``pos``; timestamps are shown in ``zone``."""
    out: list[str] = []
    _walk(meta, value, pos, zone, out, Budget(value))
    return "".join(out)
