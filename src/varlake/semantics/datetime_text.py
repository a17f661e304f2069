"""Dates and timestamps as Spark writes them as text and reads them from text.

Out: ``CAST(x AS STRING)`` of a DATE is ``LocalDate``'s ISO text (``0000``, ``-0001``,
``+10000`` outside 0000-9999); of a TIMESTAMP ``yyyy-MM-dd HH:mm:ss[.ffffff]`` of the
wall-clock time in the session zone (trailing fraction zeros dropped), of a
TIMESTAMP_NTZ the same without a zone; ``to_json`` adds ``+HH:MM`` for instants.

In: ``DateTimeUtils.stringToDate`` / ``stringToTimestamp`` / ``stringToTime``, byte for
byte: ``[+-]yyyy[-m[m][-d[d]]]``, then ``T`` or a space and ``h[h]:m[m]:s[s].ffffff``
(digits past six are dropped) and an optional zone (``Z``, ``+08:00``, ``UTC``,
``America/Los_Angeles``...); a zone in the text wins over the session zone, a time
without date takes today's date. Results are epoch days / micros, or None where Spark's
cast fails.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

from varlake.semantics.calendar import (
    EPOCH_ORDINAL,
    INT64_MAX,
    INT64_MIN,
    MICROS_PER_DAY,
    MICROS_PER_SECOND,
    civil_from_days,
    days_from_civil,
    valid_date,
)
from varlake.semantics.string_casts import trim_java
from varlake.semantics.zones import instant_to_local, local_to_instant, utc_offset_at, zone_of

# --- text out -------------------------------------------------------------------------------------


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


def format_timestamp(local_micros: int) -> str:
    """``yyyy-MM-dd HH:mm:ss[.ffffff]`` of wall-clock micros (trailing fraction zeros dropped)."""
    days, rest = divmod(local_micros, MICROS_PER_DAY)
    seconds, frac = divmod(rest, MICROS_PER_SECOND)
    text = f"{format_date(days)} {seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if frac:
        text += "." + f"{frac:06d}".rstrip("0")
    return text



def timestamp_text(micros: int, zone: _dt.tzinfo) -> str:
    """``CAST(ts AS STRING)`` of an instant (epoch micros) in the session ``zone``."""
    return format_timestamp(instant_to_local(micros, zone))


def _fraction(nanos: int) -> str:
    return "" if nanos == 0 else "." + f"{nanos:09d}".rstrip("0")


def format_offset(seconds: int) -> str:
    """``+HH:MM`` (seconds of historical offsets dropped, as Spark's formatter does)."""
    sign = "-" if seconds < 0 else "+"
    minutes = abs(seconds) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"



def format_timestamp_nanos(nanos: int, zone: _dt.tzinfo | None) -> str:
    """``yyyy-MM-dd HH:mm:ss[.fffffffff]`` plus ``+HH:MM`` when ``zone`` is given (an instant)."""
    seconds, frac = divmod(nanos, 1_000_000_000)
    offset = utc_offset_at(zone, seconds) if zone is not None else 0
    local = seconds + offset
    days, sod = divmod(local, 86400)
    text = f"{format_date(days)} {sod // 3600:02d}:{sod // 60 % 60:02d}:{sod % 60:02d}{_fraction(frac)}"
    return text + format_offset(offset) if zone is not None else text


def format_time(micros: int) -> str:
    sod, frac = divmod(micros, 1_000_000)
    return f"{sod // 3600:02d}:{sod // 60 % 60:02d}:{sod % 60:02d}{_fraction(frac * 1000)}"



# --- text in ----------------------------------------------------------------------------------------------


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
    if not valid_date(year, month, day):
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
        parsed = zone_of(trim_java(p.zone))
        if parsed is None:
            return None
        zone = parsed
    tod = _time_of_day_micros(p)
    if tod is None:
        return None
    if p.just_time:
        today = _dt.datetime.now(zone).date()
        days = today.toordinal() - EPOCH_ORDINAL
    else:
        if not valid_date(p.year, p.month, p.day):
            return None
        days = days_from_civil(p.year, p.month, p.day)
    micros = local_to_instant(days * MICROS_PER_DAY + tod, zone)
    return micros if INT64_MIN <= micros <= INT64_MAX else None


def string_to_timestamp_ntz(text: str) -> int | None:
    """``stringToTimestampWithoutTimeZone(allowTimeZone = true)``: any zone is ignored."""
    p = parse_timestamp_string(text)
    if p is None or p.just_time:
        return None
    if p.zone is not None and zone_of(trim_java(p.zone)) is None:
        return None
    tod = _time_of_day_micros(p)
    if tod is None or not valid_date(p.year, p.month, p.day):
        return None
    micros = days_from_civil(p.year, p.month, p.day) * MICROS_PER_DAY + tod
    return micros if INT64_MIN <= micros <= INT64_MAX else None


def string_to_time(text: str) -> int | None:
    """``DateTimeUtils.stringToTime``: a time of day without date or zone, as micros."""
    p = parse_timestamp_string(text)
    if p is None or not p.just_time or p.zone is not None:
        return None
    return _time_of_day_micros(p)


# --- text every date cast accepts --------------------------------------------------------------------

_DAY_OF_ANY_MONTH = r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])"
_DAY_29_30 = r"\d{4}-(?:0[13-9]|1[0-2])-(?:29|30)"
_DAY_31 = r"\d{4}-(?:0[13578]|1[02])-31"
_LEAP_DAY = r"(?:\d\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29"

#: ``yyyy-MM-dd`` naming a real day of years 0000-9999 (leap days of the proleptic Gregorian
#: calendar, as ``LocalDate``): a whole-text pattern in the syntax both Python's ``re`` and
#: RE2 (Arrow's ``match_substring_regex``) read the same way. Spark's string -> DATE cast
#: accepts every such text, and so do its casts to TIMESTAMP (midnight in any zone: a day
#: of these years is never outside the microsecond range) and TIMESTAMP_NTZ.
ISO_DATE_TEXT = f"^(?:{_DAY_OF_ANY_MONTH}|{_DAY_29_30}|{_DAY_31}|{_LEAP_DAY})$"
#: The cast targets (canonical names) that never fail on an ``ISO_DATE_TEXT`` string.
ISO_DATE_TARGETS = frozenset({"date", "timestamp", "timestamp_ntz"})
#: The DATE values whose text (``format_date``; Spark's ``CAST(d AS STRING)``) is
#: ``ISO_DATE_TEXT``'s ``yyyy-MM-dd``, first and last. Such texts have one width and their
#: fields run from the most significant, so comparing two of them byte by byte orders them
#: as the days they name: a string of ISO dates compares with a DATE in this span as its
#: text compares with the DATE's text.
ISO_DATE_SPAN = ("0000-01-01", "9999-12-31")
_ISO_DATE = re.compile(ISO_DATE_TEXT)


def is_iso_date_text(text: str) -> bool:
    """Whether ``text`` matches ``ISO_DATE_TEXT`` (so every ``ISO_DATE_TARGETS`` cast of it succeeds)."""
    return _ISO_DATE.fullmatch(text) is not None  # not ``match``: ``$`` also matches before a final newline
