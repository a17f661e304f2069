"""Time-zone ids resolved exactly as Spark 4.3 resolves them, and offsets at any instant.

Spark's ``DateTimeUtils.getZoneId`` first rewrites the pre-3.0 spellings ``+h:mm`` and
``+hh:m``, then calls ``java.time.ZoneId.of(id, ZoneId.SHORT_IDS)``:

- ``SHORT_IDS`` maps three-letter ids (``PST`` -> ``America/Los_Angeles``, ``EST`` -> ``-05:00``);
- ``Z`` and ids starting with ``+``/``-`` are ``ZoneOffset.of`` (``+h``, ``+hh``, ``+hh:mm``,
  ``+hhmm``, ``+hh:mm:ss``, ``+hhmmss``; at most 18 hours);
- ``UTC``, ``GMT`` and ``UT`` alone, or followed by such an offset (``GMT+8``, ``UTC+08:00``);
- anything else must be a region id of the JDK's tz database, spelled with its exact case.

The JDK's database holds the IANA ids minus ``ROC`` (and zones newer than the JDK's tzdb)
plus the ``SystemV/*`` zones IANA dropped; both differences are reproduced here. Zone
rules come from the ``tzdata`` package when installed (the same on every machine), else
from the system database. Every spelling refused raises ``InvalidTimeZoneError``.
"""

from __future__ import annotations

import datetime as _dt
import functools
import io
import re
import struct
from zoneinfo import ZoneInfo, available_timezones

from varlake.errors import InvalidTimeZoneError

UTC = _dt.timezone.utc

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

# Ids Python's tz database knows and the JDK 17 tzdb does not (ROC is left out by the JDK
# on purpose; America/Coyhaique is newer than its tzdb; EST, MST, HST and GMT+0/GMT-0 are
# reached through SHORT_IDS and offsets instead; the rest are not zones).
_NOT_IN_JDK = frozenset({"ROC", "America/Coyhaique", "Factory", "localtime", "posixrules", "EST", "MST", "HST",
                         "GMT+0", "GMT-0"})

_SINGLE_HOUR = re.compile(r"([+\-])([0-9]):")
_SINGLE_MINUTE = re.compile(r"([+\-])([0-9][0-9]):([0-9])$")
_OFFSET = re.compile(
    r"([+\-])(?:([0-9]{1,2})|([0-9]{2}):?([0-9]{2})|([0-9]{2}):([0-9]{2}):([0-9]{2})|([0-9]{2})([0-9]{2})([0-9]{2}))\Z"
)
_REGION = re.compile(r"[A-Za-z][A-Za-z0-9~/._+\-]+\Z")


# --- SystemV zones: in the JDK's tzdb, gone from IANA's ------------------------------------------

# name -> (standard offset hours, standard abbreviation, daylight abbreviation or None)
_SYSTEMV = {
    "AST4": (-4, "AST", None), "AST4ADT": (-4, "AST", "ADT"), "CST6": (-6, "CST", None),
    "CST6CDT": (-6, "CST", "CDT"), "EST5": (-5, "EST", None), "EST5EDT": (-5, "EST", "EDT"),
    "HST10": (-10, "HST", None), "MST7": (-7, "MST", None), "MST7MDT": (-7, "MST", "MDT"),
    "PST8": (-8, "PST", None), "PST8PDT": (-8, "PST", "PDT"), "YST9": (-9, "YST", None),
    "YST9YDT": (-9, "YST", "YDT"),
}


def _last_sunday(year: int, month: int) -> int:
    first_next = _dt.date(year + month // 12, month % 12 + 1, 1)
    last = first_next - _dt.timedelta(days=1)
    return last.day - (last.weekday() + 1) % 7


def _systemv_zone(name: str) -> ZoneInfo:
    """The JDK's ``SystemV`` rule: daylight time from the last Sunday of April to the last
    Sunday of October at 02:00 (1974: Jan 6 - Nov, 1975: Feb 23 - Oct), as a TZif file."""
    hours, std, dst = _SYSTEMV[name]
    std_off = hours * 3600
    types = [(std_off, 0, 0)]
    chars = std.encode() + b"\0"
    times: list[int] = []
    idx: list[int] = []
    footer = f"{std}{-hours}"
    if dst is not None:
        types.append((std_off + 3600, 1, len(chars)))
        chars += dst.encode() + b"\0"
        footer += f"{dst},M4.5.0,M10.5.0"
        epoch = _dt.datetime(1970, 1, 1)
        for year in range(1900, 2038):
            if year == 1974:
                start, end = _dt.datetime(year, 1, 6, 2), _dt.datetime(year, 11, _last_sunday(year, 11), 2)
            elif year == 1975:
                start, end = _dt.datetime(year, 2, 23, 2), _dt.datetime(year, 10, _last_sunday(year, 10), 2)
            else:
                start, end = _dt.datetime(year, 4, _last_sunday(year, 4), 2), _dt.datetime(year, 10, _last_sunday(year, 10), 2)
            times.append(int((start - epoch).total_seconds()) - std_off)
            idx.append(1)
            times.append(int((end - epoch).total_seconds()) - std_off - 3600)
            idx.append(0)

    def block(width: str, n: int) -> bytes:  # version 1 (32-bit) without transitions, then version 2
        head = b"TZif2" + b"\0" * 15 + struct.pack(">6l", 0, 0, 0, n, len(types), len(chars))
        body = struct.pack(f">{n}{width}", *times[:n]) + bytes(idx[:n])
        body += b"".join(struct.pack(">lBB", *t) for t in types) + chars
        return head + body

    data = block("l", 0) + block("q", len(times)) + b"\n" + footer.encode() + b"\n"
    return ZoneInfo.from_file(io.BytesIO(data), key=f"SystemV/{name}")


# --- region ids ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def region_ids() -> frozenset[str]:
    """The region ids ``java.time.ZoneId.getAvailableZoneIds()`` lists on Java 17."""
    ids = {i for i in available_timezones() if not i.startswith(("posix/", "right/"))}
    return frozenset((ids - _NOT_IN_JDK) | {f"SystemV/{n}" for n in _SYSTEMV})


def _load_region(name: str) -> _dt.tzinfo:
    if name.startswith("SystemV/"):
        return _systemv_zone(name[8:])
    try:
        from importlib import resources

        ref = resources.files("tzdata.zoneinfo").joinpath(*name.split("/"))
        with ref.open("rb") as f:
            return ZoneInfo.from_file(f, key=name)
    except (ImportError, OSError, ValueError):
        return ZoneInfo(name)


# --- ZoneOffset.of and ZoneId.of ----------------------------------------------------------------------


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
    return _dt.timezone(_dt.timedelta(seconds=total)) if total else UTC


@functools.lru_cache(maxsize=1024)
def zone_of(name: str) -> _dt.tzinfo | None:
    """The zone Spark's ``getZoneId`` resolves ``name`` to, or None where Java refuses it."""
    if not isinstance(name, str):
        return None
    text = _SINGLE_HOUR.sub(r"\g<1>0\g<2>:", name, count=1)
    text = _SINGLE_MINUTE.sub(r"\g<1>\g<2>:0\g<3>", text, count=1)
    text = SHORT_IDS.get(text, text)
    if text == "Z":
        return UTC
    if len(text) <= 1 or text.startswith(("+", "-")):
        return _offset_zone(text)
    for prefix in ("UTC", "GMT", "UT"):
        if text == prefix:
            return UTC
        if text.startswith(prefix) and text[len(prefix)] in "+-":
            return _offset_zone(text[len(prefix) :])
    if not _REGION.match(text) or text not in region_ids():
        return None
    try:
        return _load_region(text)
    except (ValueError, OSError, LookupError):
        return None


def resolve_zone(name: str) -> _dt.tzinfo:
    """``zone_of`` that raises ``InvalidTimeZoneError`` for ids Spark refuses."""
    zone = zone_of(name)
    if zone is None:
        raise InvalidTimeZoneError(f"unknown time zone {name!r}: Spark accepts region ids such as "
                                   "'America/Los_Angeles', short ids such as 'PST', and offsets such as "
                                   "'+08:00', 'GMT+8', 'UTC+08:00' or 'Z'")
    return zone


# --- offsets at an instant ------------------------------------------------------------------------------

MICROS_PER_SECOND = 1_000_000
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_NTZ = _dt.datetime(1970, 1, 1)
_CYCLE_SECONDS = 146_097 * 86_400  # 400 Gregorian years: the calendar, and so DST rules, repeat
_LOW_SECOND = -62_135_596_800 + 86_400 * 2  # two days inside year 1
_HIGH_SECOND = 253_402_300_799 - 86_400 * 2  # two days inside year 9999


def _clamp_seconds(epoch_seconds: int) -> tuple[int, int]:
    """Shift an instant by whole 400-year cycles into datetime's range; ``(seconds, shift)``."""
    shift = 0
    if epoch_seconds < _LOW_SECOND:
        shift = -((_LOW_SECOND - epoch_seconds) // _CYCLE_SECONDS + 1) * _CYCLE_SECONDS
    elif epoch_seconds > _HIGH_SECOND:
        shift = ((epoch_seconds - _HIGH_SECOND) // _CYCLE_SECONDS + 1) * _CYCLE_SECONDS
    return epoch_seconds - shift, shift


def utc_offset_at(zone: _dt.tzinfo, epoch_seconds: int) -> int:
    """Offset in seconds of ``zone`` at an instant (any year, not only datetime's 1-9999)."""
    if isinstance(zone, _dt.timezone):
        off = zone.utcoffset(None)
        return int(off.total_seconds()) if off is not None else 0
    seconds, _ = _clamp_seconds(epoch_seconds)
    off = (_EPOCH_UTC + _dt.timedelta(seconds=seconds)).astimezone(zone).utcoffset()
    return int(off.total_seconds()) if off is not None else 0


def local_to_instant(local_micros: int, zone: _dt.tzinfo) -> int:
    """Epoch micros of a wall-clock time in ``zone`` (``ZonedDateTime.ofLocal``: a time in a
    gap moves forward by the gap, an overlap takes the earlier offset)."""
    if isinstance(zone, _dt.timezone):
        off = zone.utcoffset(None)
        return local_micros - (int(off.total_seconds()) * MICROS_PER_SECOND if off is not None else 0)
    seconds, _ = _clamp_seconds(local_micros // MICROS_PER_SECOND)
    wall = (_EPOCH_NTZ + _dt.timedelta(seconds=seconds)).replace(tzinfo=zone, fold=0)
    off = wall.utcoffset()
    return local_micros - (int(off.total_seconds()) if off is not None else 0) * MICROS_PER_SECOND


def instant_to_local(micros: int, zone: _dt.tzinfo) -> int:
    """Wall-clock micros in ``zone`` of an instant (epoch micros)."""
    return micros + utc_offset_at(zone, micros // MICROS_PER_SECOND) * MICROS_PER_SECOND
