"""Zone ids resolved as Spark 4.3's ``DateTimeUtils.getZoneId`` (``java.time.ZoneId.of``) does."""

from __future__ import annotations

import datetime as dt

import pytest

from varlake.errors import InvalidTimeZoneError, VarlakeError
from varlake.semantics.zones import (
    SHORT_IDS,
    instant_to_local,
    local_to_instant,
    region_ids,
    resolve_zone,
    utc_offset_at,
    zone_of,
)

UTC = dt.timezone.utc
JAN = int(dt.datetime(2024, 1, 15, tzinfo=UTC).timestamp())
JUL = int(dt.datetime(2024, 7, 15, tzinfo=UTC).timestamp())


@pytest.mark.parametrize(
    ("name", "winter", "summer"),
    [
        ("PST", -8 * 3600, -7 * 3600), ("EST", -5 * 3600, -5 * 3600), ("CTT", 8 * 3600, 8 * 3600),
        ("GMT+8", 8 * 3600, 8 * 3600), ("UTC+08:00", 8 * 3600, 8 * 3600), ("+08:00", 8 * 3600, 8 * 3600),
        ("+8", 8 * 3600, 8 * 3600), ("-08", -8 * 3600, -8 * 3600), ("+0830", 30600, 30600), ("+08:30:15", 30615, 30615),
        ("+083015", 30615, 30615), ("+5:30", 19800, 19800), ("+05:3", 18180, 18180), ("GMT+8:00", 28800, 28800),
        ("UT-0130", -5400, -5400), ("Z", 0, 0), ("UTC", 0, 0), ("GMT", 0, 0), ("UT", 0, 0), ("GMT0", 0, 0),
        ("+18:00", 64800, 64800), ("-18:00", -64800, -64800),
        ("America/Los_Angeles", -8 * 3600, -7 * 3600), ("Europe/Paris", 3600, 7200), ("Asia/Kolkata", 19800, 19800),
        ("Etc/GMT+8", -8 * 3600, -8 * 3600), ("SystemV/AST4", -4 * 3600, -4 * 3600),
        ("SystemV/PST8PDT", -8 * 3600, -7 * 3600), ("US/Pacific", -8 * 3600, -7 * 3600),
    ],
)
def test_accepted_spellings(name: str, winter: int, summer: int) -> None:
    zone = resolve_zone(name)
    assert (utc_offset_at(zone, JAN), utc_offset_at(zone, JUL)) == (winter, summer)


@pytest.mark.parametrize(
    "name",
    ["utc", "gmt+8", "pst", "Pst", "UTC+25", "+19:00", "+18:01", "-18:00:01", "Mars/Olympus", "ROC", "x", "", " UTC",
     "UTC ", "GMT+", "+", "+8:3:0", "UTC+8:0:0", "america/los_angeles", "+0830:15", "+08:3015", "+٨", "Factory",
     "localtime", "posix/Europe/Paris", "../etc/passwd", "/UTC"],
)
def test_refused_spellings_raise_a_named_error(name: str) -> None:
    assert zone_of(name) is None
    with pytest.raises(InvalidTimeZoneError) as info:
        resolve_zone(name)
    assert isinstance(info.value, VarlakeError) and repr(name) in str(info.value)


def test_short_ids_are_javas() -> None:
    assert len(SHORT_IDS) == 28 and SHORT_IDS["PST"] == "America/Los_Angeles" and SHORT_IDS["EST"] == "-05:00"
    for short in SHORT_IDS:
        assert zone_of(short) is not None, short


def test_region_ids_follow_the_jdk_tzdb() -> None:
    ids = region_ids()
    assert "SystemV/PST8PDT" in ids and "Europe/Paris" in ids
    assert not {"ROC", "Factory", "localtime", "EST", "GMT+0"} & ids
    assert all(zone_of(i) is not None for i in ids)


def test_systemv_daylight_rule() -> None:
    zone = resolve_zone("SystemV/EST5EDT")
    offset = lambda *when: utc_offset_at(zone, int(dt.datetime(*when, tzinfo=UTC).timestamp()))  # noqa: E731
    assert offset(2024, 4, 1) == -5 * 3600  # April rule, not the US 2007 March rule
    assert offset(2024, 5, 1) == -4 * 3600
    assert offset(2024, 11, 1) == -5 * 3600
    assert offset(1974, 2, 1) == -4 * 3600  # 1974: from January 6
    assert offset(2100, 7, 1) == -4 * 3600  # past the explicit transitions: the rule string


def test_local_time_in_gaps_moves_forward_and_overlaps_take_the_earlier_offset() -> None:
    la = resolve_zone("America/Los_Angeles")
    gap = int((dt.datetime(2024, 3, 10, 2, 30) - dt.datetime(1970, 1, 1)).total_seconds()) * 1_000_000
    assert local_to_instant(gap, la) == int(dt.datetime(2024, 3, 10, 10, 30, tzinfo=UTC).timestamp()) * 1_000_000
    overlap = int((dt.datetime(2024, 11, 3, 1, 30) - dt.datetime(1970, 1, 1)).total_seconds()) * 1_000_000
    assert local_to_instant(overlap, la) == int(dt.datetime(2024, 11, 3, 8, 30, tzinfo=UTC).timestamp()) * 1_000_000
    assert instant_to_local(local_to_instant(overlap, la), la) == overlap


def test_offsets_far_outside_pythons_years() -> None:
    paris = resolve_zone("Europe/Paris")
    far_future = 400 * 146_097 * 86_400 + JUL  # 160,000 years on: the rules repeat every 400 years
    assert utc_offset_at(paris, far_future) == 7200
    assert utc_offset_at(paris, -10**12) == utc_offset_at(paris, -62_135_596_800 + 10 * 86_400)  # LMT


@pytest.mark.parametrize("name", ["PST", "GMT+8", "UTC+08:00", "+08:00", "Z", "Asia/Tokyo", "SystemV/YST9"])
def test_codec_json_and_expression_paths_resolve_zones_alike(name: str) -> None:
    """The three resolvers of issue 10 (codec casts, JSON rendering, expr) are now one."""
    from varlake.expr.casts import cast_value
    from varlake.variant.functions import cast_to_variant, variant_get

    instant = dt.datetime(2024, 7, 1, 12, 30, tzinfo=UTC)
    variant = cast_to_variant(instant, "timestamp")
    text = cast_value(instant, "timestamp", "string", tz=name)
    assert variant_get(variant, "$", "string", zone=name) == text
    assert variant.to_json(name) == f'"{text}{variant.to_json(name)[-7:-1]}"'


def test_every_path_refuses_with_the_named_error() -> None:
    from varlake.errors import ExpressionTypeError, VariantError
    from varlake.expr import bind, parse_predicate
    from varlake.variant.functions import cast_to_variant, variant_get

    variant = cast_to_variant(dt.datetime(2024, 7, 1, tzinfo=UTC), "timestamp")
    for call, family in [
        (lambda: variant_get(variant, "$", "string", zone="pst"), VariantError),
        (lambda: variant.to_json("gmt+8"), VariantError),
        (lambda: bind(parse_predicate("t IS NULL"), {("t",): "timestamp"}, session_tz="UTC+19"), ExpressionTypeError),
    ]:
        with pytest.raises(InvalidTimeZoneError) as info:
            call()
        assert isinstance(info.value, family)
