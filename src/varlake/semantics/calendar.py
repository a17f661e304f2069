"""Proleptic Gregorian calendar arithmetic on epoch days and epoch microseconds.

Spark's dates are epoch days and its timestamps epoch microseconds, over years
-290308..294247; Python's ``datetime`` stops at years 1-9999, so the rules work on
integers and only the final conversion to Python values is limited.
"""

from __future__ import annotations

import datetime as _dt

MICROS_PER_SECOND = 1_000_000
MICROS_PER_DAY = 86_400_000_000
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_DAYS_400Y = 146_097
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_NTZ = _dt.datetime(1970, 1, 1)


def days_from_civil(year: int, month: int, day: int) -> int:
    """Epoch day of a proleptic Gregorian date (any year)."""
    y = year - 1 if month <= 2 else year
    era = y // 400
    yoe = y - era * 400
    mp = month - 3 if month > 2 else month + 9
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * _DAYS_400Y + doe - 719_468


def valid_date(year: int, month: int, day: int) -> bool:
    """``java.time.LocalDate.of`` validity."""
    if not (-999_999_999 <= year <= 999_999_999 and 1 <= month <= 12 and day >= 1):
        return False
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return day <= (29 if leap else 28)
    return day <= (30 if month in (4, 6, 9, 11) else 31)


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



def days_of_date(value: _dt.date) -> int:
    """Epoch day of a Python date."""
    return value.toordinal() - EPOCH_ORDINAL


def micros_of_datetime(value: _dt.datetime) -> int:
    """Epoch micros of an aware datetime (an instant), or wall-clock micros of a naive one."""
    if value.tzinfo is not None:
        delta = value - _EPOCH_UTC
    else:
        delta = value - _EPOCH_NTZ
    return (delta.days * 86_400 + delta.seconds) * MICROS_PER_SECOND + delta.microseconds
