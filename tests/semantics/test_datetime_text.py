"""Date and timestamp text as Spark writes and reads it."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.semantics.calendar import civil_from_days, days_from_civil, days_of_date, micros_of_datetime, valid_date
from varlake.semantics.datetime_text import (
    ISO_DATE_TARGETS,
    ISO_DATE_TEXT,
    is_iso_date_text,
    format_date,
    format_time,
    format_timestamp,
    format_timestamp_nanos,
    parse_timestamp_string,
    string_to_date,
    string_to_time,
    string_to_timestamp,
    string_to_timestamp_ntz,
    timestamp_text,
)
from varlake.semantics.zones import resolve_zone

UTC = dt.timezone.utc


def micros(*args: int) -> int:
    return micros_of_datetime(dt.datetime(*args, tzinfo=UTC))


def test_date_text_as_local_date_prints_it() -> None:
    assert format_date(0) == "1970-01-01"
    assert format_date(days_from_civil(10000, 1, 1)) == "+10000-01-01"
    assert format_date(days_from_civil(0, 12, 31)) == "0000-12-31"
    assert format_date(days_from_civil(-1, 12, 31)) == "-0001-12-31"
    assert format_date(days_of_date(dt.date(1, 1, 1))) == "0001-01-01"


def test_timestamp_text() -> None:
    assert format_timestamp(micros(2024, 1, 1, 10, 0, 0, 120000)) == "2024-01-01 10:00:00.12"
    assert format_timestamp(micros(2024, 1, 1)) == "2024-01-01 00:00:00"
    assert format_timestamp(-1) == "1969-12-31 23:59:59.999999"
    assert timestamp_text(micros(2024, 1, 1), resolve_zone("PST")) == "2023-12-31 16:00:00"
    assert timestamp_text(micros(2024, 1, 1), resolve_zone("GMT+8")) == "2024-01-01 08:00:00"
    assert format_timestamp_nanos(1_500, resolve_zone("+05:30")) == "1970-01-01 05:30:00.0000015+05:30"
    assert format_timestamp_nanos(0, None) == "1970-01-01 00:00:00"
    assert format_time(3_723_000_001) == "01:02:03.000001"


@pytest.mark.parametrize(
    ("text", "date"),
    [("2024-02-29", dt.date(2024, 2, 29)), ("2024-7", dt.date(2024, 7, 1)), ("2024", dt.date(2024, 1, 1)),
     (" 2024-01-02 10:00 ", dt.date(2024, 1, 2)), ("2024-01-02Txyz", dt.date(2024, 1, 2)), ("2023-02-29", None),
     ("2024-13-01", None), ("24-01-01", None), ("2024/01/01", None), ("", None), ("2024-01-02x", None)],
)
def test_string_to_date(text: str, date: dt.date | None) -> None:
    days = string_to_date(text)
    assert (None if days is None else dt.date(1970, 1, 1) + dt.timedelta(days=days)) == date


@pytest.mark.parametrize(
    ("text", "zone", "expected"),
    [
        ("2024-01-01 10:11:12.1234567", "UTC", (2024, 1, 1, 10, 11, 12, 123456)),
        ("2024-01-01T10:11:12Z", "PST", (2024, 1, 1, 10, 11, 12)),
        ("2024-01-01 10:11:12+02:00", "UTC", (2024, 1, 1, 8, 11, 12)),
        ("2024-01-01 10:11:12 PST", "UTC", (2024, 1, 1, 18, 11, 12)),
        ("2024-01-01 10:11:12GMT+8", "UTC", (2024, 1, 1, 2, 11, 12)),
        ("2024-06-01 12:00:00 Europe/Paris", "UTC", (2024, 6, 1, 10)),
        ("2024-06-01 12:00", "Europe/Paris", (2024, 6, 1, 10)),
        ("2024-03-10 02:30:00", "America/Los_Angeles", (2024, 3, 10, 10, 30)),
        ("2024-06-01 12:00 Europe/Paris", "UTC", None),  # a zone needs the seconds before it
        ("2024-01-01 10:00+02:00", "UTC", None),
        ("2024-01-01 10:00:00 ROC", "UTC", None),
        ("2024-01-01 25:00:00", "UTC", None),
    ],
)
def test_string_to_timestamp(text: str, zone: str, expected: tuple | None) -> None:
    got = string_to_timestamp(text, resolve_zone(zone))
    assert got == (None if expected is None else micros(*expected))


def test_timestamp_ntz_ignores_zones_and_times_need_no_date() -> None:
    assert string_to_timestamp_ntz("2024-01-01 10:11:12+02:00") == micros(2024, 1, 1, 10, 11, 12)
    assert string_to_timestamp_ntz("2024-01-01 10:11:12 Nowhere/Land") is None
    assert string_to_time("10:11:12.5") == (10 * 3600 + 11 * 60 + 12) * 1_000_000 + 500_000
    today = string_to_timestamp("10:11:12", UTC)
    assert today is not None and format_timestamp(today).endswith("10:11:12")
    parts = parse_timestamp_string("2024-01-01 10:11:12 Europe/Paris")
    assert parts is not None and parts.zone == " Europe/Paris"


@given(st.integers(-(10**9), 10**9))
@settings(max_examples=300, deadline=None)
def test_civil_days_round_trip(days: int) -> None:
    y, m, d = civil_from_days(days)
    assert valid_date(y, m, d) and days_from_civil(y, m, d) == days


@given(st.integers(-(2**62), 2**62))
@settings(max_examples=300, deadline=None)
def test_timestamp_text_parses_back(value: int) -> None:
    text = format_timestamp(value)
    if not text.startswith(("+", "-")):
        assert string_to_timestamp(text, UTC) == value and string_to_timestamp_ntz(text) == value


# --- ISO date text: every date and timestamp cast accepts it ----------------------------------------

_ZONES = ("UTC", "America/Los_Angeles", "Asia/Kathmandu", "Pacific/Kiritimati", "-18:00", "+18:00", "Europe/London")


def _strictly_iso(text: str) -> bool:
    """An independent reading of the rule: ``dddd-dd-dd`` naming a real day (``datetime``
    cannot hold year 0000, so that year is checked with the calendar module)."""
    if len(text) != 10 or text[4] != "-" or text[7] != "-" or not all(c in "0123456789" for i, c in enumerate(text) if i not in (4, 7)):
        return False
    return valid_date(int(text[:4]), int(text[5:7]), int(text[8:]))


_date_like = st.builds(
    lambda y, m, d, sep, pad: f"{y:0{pad}d}{sep}{m:02d}{sep}{d:02d}",
    st.integers(0, 10_000), st.integers(0, 13), st.integers(0, 32), st.sampled_from(["-", "-", "-", "/", ""]), st.sampled_from([4, 4, 3, 5]),
)
_texts = st.one_of(
    _date_like,
    _date_like.map(lambda t: t + "\n"),
    _date_like.map(lambda t: " " + t),
    _date_like.map(lambda t: t + "T00:00"),
    st.text(alphabet="0123456789-T :\n", max_size=14),
    st.text(max_size=12),
)


@settings(max_examples=2000, deadline=None)
@given(_texts, st.sampled_from(_ZONES))
def test_iso_date_text_is_exactly_real_days_and_every_date_cast_accepts_it(text: str, zone: str) -> None:
    assert is_iso_date_text(text) == _strictly_iso(text), text
    if is_iso_date_text(text):
        days = string_to_date(text)
        assert days is not None and civil_from_days(days) == (int(text[:4]), int(text[5:7]), int(text[8:]))
        assert string_to_timestamp(text, resolve_zone(zone)) is not None
        assert string_to_timestamp_ntz(text) == days * 86_400_000_000


@settings(max_examples=300, deadline=None)
@given(st.lists(_texts, max_size=40))
def test_arrow_reads_the_iso_date_pattern_as_python_does(texts: list[str]) -> None:
    """The pattern is applied by Arrow's RE2 (``io.date_leaves``) and by Python's ``re``: same answers."""
    import pyarrow as pa
    import pyarrow.compute as pc

    matched = pc.match_substring_regex(pa.array(texts, pa.string()), ISO_DATE_TEXT).to_pylist()
    assert matched == [is_iso_date_text(t) for t in texts]


def test_iso_date_text_edges() -> None:
    assert is_iso_date_text("0000-02-29") and is_iso_date_text("2000-02-29") and is_iso_date_text("9999-12-31")
    assert not is_iso_date_text("1900-02-29") and not is_iso_date_text("1995-04-31") and not is_iso_date_text("1995-02-29")
    assert not is_iso_date_text("1995-01-01\n") and not is_iso_date_text("1995-1-01") and not is_iso_date_text("+1995-01-01")
    assert ISO_DATE_TARGETS == {"date", "timestamp", "timestamp_ntz"}
