"""JSON in and out of the codec, without Spark: the rules test_spark_oracle_codec.py confirmed
against Spark, pinned here as fast unit tests, plus what Spark 4.3 cannot render (TIME and
nanosecond timestamps), which varlake renders in Spark's style on its own."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import varlake
from varlake import TimestampNanos, Variant
from varlake.errors import DuplicateKeyError, JsonParseError, VariantError
from varlake.variant import encoder as enc
from varlake.variant.constants import PrimitiveType
from varlake.semantics.json_text import quote
from varlake.semantics.numbers import decimal_text, java_double, java_float
from varlake.variant.json_render import session_zone as zone_info
from varlake.variant.temporal import Float32

EMPTY = b"\x01\x00\x00"


def render(value: bytes, zone: str = "UTC") -> str:
    return Variant(EMPTY, value).to_json(zone)


# --- numbers --------------------------------------------------------------------------------

# Outputs of Java 17's Double.toString / Float.toString (FloatingDecimal), which is not the
# shortest round-trip form: exact digits for integral values, two digits in E-notation.
JAVA_DOUBLES = [
    (1e23, "9.999999999999999E22"), (2e-3, "0.002"), (5e-324, "4.9E-324"),
    (1.9980225383584097e18, "1.99802253835840973E18"), (1e7, "1.0E7"), (9999999.0, "9999999.0"),
    (0.001, "0.001"), (0.0001, "1.0E-4"), (1.0, "1.0"), (-0.0, "-0.0"), (0.0, "0.0"),
    (2.0**62, "4.6116860184273879E18"), (2.0**63, "9.223372036854776E18"),
    (1.7976931348623157e308, "1.7976931348623157E308"), (0.1 + 0.2, "0.30000000000000004"),
    (100.0, "100.0"), (1e-5, "1.0E-5"), (3.0e10, "3.0E10"), (-1.5, "-1.5"),
    (float("nan"), "NaN"), (float("inf"), "Infinity"), (float("-inf"), "-Infinity"),
]
JAVA_FLOATS = [
    (1e10, "1.0E10"), (1.6016761e11, "1.60167608E11"), (0.1, "0.1"), (1e-45, "1.4E-45"),
    (3.4028235e38, "3.4028235E38"), (16777216.0, "1.6777216E7"), (1e7, "1.0E7"), (123456.7, "123456.7"),
]


@pytest.mark.parametrize(("number", "text"), JAVA_DOUBLES)
def test_java_double(number: float, text: str) -> None:
    assert java_double(number) == text


@pytest.mark.parametrize(("number", "text"), JAVA_FLOATS)
def test_java_float(number: float, text: str) -> None:
    assert java_float(number) == text


def test_non_finite_numbers_are_quoted() -> None:
    assert render(enc.encode_double(float("nan"))) == '"NaN"'
    assert render(enc.encode_double(float("-inf"))) == '"-Infinity"'
    assert render(enc.encode_float(float("inf"))) == '"Infinity"'
    assert render(enc.encode_float(1.5)) == "1.5"


def test_nan_is_written_with_java_canonical_bits() -> None:
    assert enc.encode_double(float.fromhex("nan")) == b"\x1c" + bytes.fromhex("000000000000f87f")
    assert enc.encode_float(float("nan")) == b"\x38" + bytes.fromhex("0000c07f")


@pytest.mark.parametrize(("unscaled", "scale", "text"), [
    (0, 0, "0"), (0, 5, "0"), (100, 0, "100"), (100, 2, "1"), (-100, 2, "-1"), (150, 2, "1.5"),
    (-5, 3, "-0.005"), (1, 38, "0." + "0" * 37 + "1"), (10**38 - 1, 0, "9" * 38), (-(10**37), 38, "-0.1"),
])
def test_decimal_text(unscaled: int, scale: int, text: str) -> None:
    assert decimal_text(unscaled, scale) == text


def test_decimals_render_plain_without_trailing_zeros() -> None:
    assert render(enc.encode_decimal_as(12300, 4, PrimitiveType.DECIMAL8)) == "1.23"
    assert varlake.parse_json("[1.50, -0.000, 1e0, 10]").to_json() == "[1.5,0,1.0,10]"


# --- strings --------------------------------------------------------------------------------


def test_strings_escape_like_jackson() -> None:
    # short escapes for \b \t \n \f \r, upper-case \u00XX for other controls; DEL, U+2028 and "/" raw
    assert quote("\b\t\n\f\r\x00\x1f\x7f\u2028/\"\\é😀") == '"\\b\\t\\n\\f\\r\\u0000\\u001F\x7f\u2028/\\"\\\\é😀"'


def test_short_and_long_strings_render_alike() -> None:
    data = "héllo".encode()
    long_form = b"\x40" + len(data).to_bytes(4, "little") + data
    assert render(long_form) == render(enc.encode_utf8(data)) == '"héllo"'


# --- parsing rules ----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "type_id"), [
    ("127", PrimitiveType.INT8), ("128", PrimitiveType.INT16), ("-32769", PrimitiveType.INT32),
    (str(2**31), PrimitiveType.INT64), (str(2**63), PrimitiveType.DECIMAL16), ("1" * 39, PrimitiveType.DOUBLE),
    ("1.5", PrimitiveType.DECIMAL4), ("1234567890.5", PrimitiveType.DECIMAL8), ("0." + "1" * 19, PrimitiveType.DECIMAL16),
    ("0." + "0" * 38 + "1", PrimitiveType.DOUBLE), ("1e2", PrimitiveType.DOUBLE), ("1E-2", PrimitiveType.DOUBLE),
])
def test_numbers_take_spark_types(text: str, type_id: PrimitiveType) -> None:
    assert varlake.parse_json(text).primitive_type == type_id


def test_out_of_range_exponents_give_infinity_and_zero() -> None:
    assert varlake.parse_json("1e400").to_json() == '"Infinity"'
    assert varlake.parse_json("-1e400").to_json() == '"-Infinity"'
    assert varlake.parse_json("1e-400").to_json() == "0.0"


@pytest.mark.parametrize(("text", "ok"), [
    ("1" * 1000, True), ("1" * 1001, False), ("-" + "1" * 1000, True),
    ("0." + "1" * 1000, True), ("0." + "1" * 1001, False),            # part by part: starts with 0
    ("1" * 500 + "." + "1" * 501, True),                              # ends the input: part by part
    ("[" + "1" * 500 + "." + "1" * 501 + "]", False),                 # inside an array: 1000 in all
    ("1" * 500 + "." + "1" * 501 + " ", False),                       # followed by a space: 1000 in all
    ("1." + "1" * 997 + "e11", True), ("1." + "1" * 998 + "e11", False),  # fraction and exponent
    ("1e" + "1" * 1000, True), ("1e" + "1" * 1001, False),
])
def test_number_length_limit(text: str, ok: bool) -> None:
    assert (varlake.try_parse_json(text) is not None) == ok


@pytest.mark.parametrize(("text", "ok"), [
    ("null$", True), ("null\u00bd", True), ("true]", True), ("false}", True), ("null ", True),
    ("null\u20ac", False), ("truex", False), ("true\u00e9", False), ("null_", False), ("false1", False),
    ("true\U0001d400", True),  # a supplementary letter reaches Jackson as a surrogate
    ("1 x", True), ("1x", False), ("1,", False), ("{} x", True), ('"a"b', True), ("[]]", True),
])
def test_what_may_follow_the_first_value(text: str, ok: bool) -> None:
    assert (varlake.try_parse_json(text) is not None) == ok


@pytest.mark.parametrize("text", [
    "", " ", "NaN", "Infinity", "+1", ".5", "1.", "01", "[1,]", "{'a':1}", "/*c*/1", "\ufeff{}", '"\\ud800"',
    '{"\\udc00":1}', '"a\x01b"', '"\\x41"', "[" * 1001 + "]" * 1001, '{"a":1,"a":2}',
])
def test_invalid_json_is_rejected(text: str) -> None:
    with pytest.raises(JsonParseError):
        varlake.parse_json(text)
    assert varlake.try_parse_json(text) is None


def test_nesting_limit_is_1000() -> None:
    assert varlake.parse_json("[" * 1000 + "]" * 1000).to_json() == "[" * 1000 + "]" * 1000
    deep = '{"a":' * 1000 + "1" + "}" * 1000
    assert varlake.parse_json(deep).to_json() == deep
    with pytest.raises(JsonParseError):
        varlake.parse_json('{"a":' * 1001 + "1" + "}" * 1001)


def test_key_and_string_length_limits() -> None:
    assert varlake.try_parse_json('{"' + "k" * 50_000 + '":1}') is not None
    assert varlake.try_parse_json('{"' + "k" * 50_001 + '":1}') is None
    assert varlake.try_parse_json('{"' + "😀" * 25_001 + '":1}') is None  # 50,002 UTF-16 units
    assert varlake.try_parse_json('"' + "x" * 20_000_000 + '"') is not None
    assert varlake.try_parse_json('"' + "x" * 20_000_001 + '"') is None


def test_duplicate_keys() -> None:
    with pytest.raises(DuplicateKeyError):
        varlake.parse_json('{"a":1,"b":2,"a":3}')
    v = varlake.parse_json('{"a":{"x":1},"b":2,"a":3}', allow_duplicate_keys=True)
    assert v.to_python() == {"a": 3, "b": 2}
    assert v.metadata == b"\x01\x03\x00\x01\x02\x03axb"  # the dropped value's key stays


def test_bytes_input_must_be_utf8() -> None:
    assert varlake.parse_json('{"é":1}'.encode()).to_python() == {"é": 1}
    with pytest.raises(JsonParseError):
        varlake.parse_json(b'"\xff"')


# --- dates, times and zones ---------------------------------------------------------------------------


def test_timestamps_in_zones() -> None:
    ts = enc.encode_timestamp_micros(1_593_000_000_123_400, True)
    assert render(ts) == '"2020-06-24 12:00:00.1234+00:00"'
    assert render(ts, "America/Los_Angeles") == '"2020-06-24 05:00:00.1234-07:00"'
    assert render(ts, "+05:30") == '"2020-06-24 17:30:00.1234+05:30"'
    assert render(ts, "UTC+01:00") == '"2020-06-24 13:00:00.1234+01:00"'
    ntz = enc.encode_timestamp_micros(1_593_000_000_000_000, False)
    assert render(ntz, "Asia/Tokyo") == '"2020-06-24 12:00:00"'


def test_timestamps_beyond_datetime_range() -> None:
    assert render(enc.encode_timestamp_micros(2**63 - 1, False)) == '"+294247-01-10 04:00:54.775807"'
    assert render(enc.encode_timestamp_micros(-(2**63), True)) == '"-290308-12-21 19:59:05.224192+00:00"'
    # DST still applies in year 12000 (the rules repeat every 400 years)
    summer = (dt.datetime(2020, 7, 1, tzinfo=dt.timezone.utc) - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc))
    micros = (summer.days + 146097 * 25) * 86_400_000_000
    assert render(enc.encode_timestamp_micros(micros, True), "Europe/Paris").endswith('+02:00"')


def test_dates() -> None:
    assert render(enc.encode_date(dt.date(2024, 2, 29))) == '"2024-02-29"'
    assert render(enc.encode_date_days(2_932_897)) == '"+10000-01-01"'
    assert render(enc.encode_date_days(-719_163)) == '"0000-12-31"'  # ISO year 0
    assert render(enc.encode_date_days(-719_163 - 366)) == '"-0001-12-31"'


def test_unknown_zone_is_an_error() -> None:
    with pytest.raises(VariantError):
        zone_info("Mars/Olympus_Mons")
    with pytest.raises(VariantError):
        zone_info("+19:00")


def test_time_and_nanosecond_timestamps_which_spark_cannot_render() -> None:
    """Spark 4.3 fails with UNKNOWN_PRIMITIVE_TYPE_IN_VARIANT; varlake uses Spark's layout,
    with fractions of up to 9 digits."""
    assert render(enc.encode_time(dt.time(12, 34, 56, 120000))) == '"12:34:56.12"'
    assert render(enc.encode_time(dt.time(0, 0))) == '"00:00:00"'
    assert render(enc.encode_time_micros(86_399_999_999)) == '"23:59:59.999999"'
    nanos = 1_593_000_000_123_456_789
    assert render(enc.encode_timestamp_nanos(nanos, True)) == '"2020-06-24 12:00:00.123456789+00:00"'
    assert render(enc.encode_timestamp_nanos(nanos, True), "Asia/Kolkata") == '"2020-06-24 17:30:00.123456789+05:30"'
    assert render(enc.encode_timestamp_nanos(nanos - 789, False)) == '"2020-06-24 12:00:00.123456"'
    assert render(enc.encode_timestamp_nanos(-1, False)) == '"1969-12-31 23:59:59.999999999"'


def test_other_types_render() -> None:
    assert render(enc.encode_binary(b"\x00\xffab")) == '"AP9hYg=="'
    assert render(enc.encode_uuid(uuid.UUID("12345678-1234-5678-1234-567812345678"))) == '"12345678-1234-5678-1234-567812345678"'
    v = Variant.from_python({"b": [True, None, Decimal("1.10"), Float32(0.5), TimestampNanos(0, False)], "a": "x"})
    assert v.to_json() == '{"a":"x","b":[true,null,1.1,0.5,"1970-01-01 00:00:00"]}'


# --- robustness --------------------------------------------------------------------------------------

JSONISH = st.text(alphabet='{}[]":,0123456789.eE+-truefalsn \\/u\n\t\x00é😀\ud800', max_size=60)


def _parse_or_reject(text: str | bytes) -> None:
    """parse_json either gives a valid Variant whose JSON text parses again, or a VariantError.
    (Doubles written without an exponent come back as decimals, so the second round is the stable one.)"""
    try:
        v = varlake.parse_json(text)
    except VariantError:
        return
    v.validate()
    again = varlake.parse_json(v.to_json())  # valid JSON, within Spark's limits
    third = varlake.parse_json(again.to_json())  # stable from the first round trip on
    assert third == again and third.to_json() == again.to_json()


@settings(max_examples=400)
@given(st.one_of(st.text(max_size=60), JSONISH, st.binary(max_size=60)))
def test_any_input_parses_or_is_rejected(text: str | bytes) -> None:
    _parse_or_reject(text)


@given(st.sampled_from(['{"a":[1,2.5,{"b":null}],"c":"x\\u00e9"}', "[1e5,-0.0,true]", '"\\ud83d\\ude00"']),
       st.integers(0, 40), st.text(alphabet='{}[]":,0.e-\\u', min_size=1, max_size=3))
def test_edited_documents_parse_or_are_rejected(doc: str, at: int, insert: str) -> None:
    at = min(at, len(doc))
    _parse_or_reject(doc[:at] + insert + doc[at:])
    _parse_or_reject(doc[:at] + doc[at + 1:])
    _parse_or_reject(doc[:at] + insert * 600 + doc[at:])
