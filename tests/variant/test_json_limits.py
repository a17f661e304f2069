"""JSON parse limits (issue 11 item 10): Spark's verdicts at each bound, huge inputs parse in
linear memory, and over-limit input is refused early with a named error.

The bounds are the constants of ``varlake.variant.constants`` (Jackson's defaults, which
Spark 4.3's ``parse_json`` inherits, and Spark's 128 MiB Variant size limit).
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest

import varlake
from varlake.errors import JsonLimitError, JsonParseError, JsonSizeLimitError, VariantSizeLimitError
from varlake.variant import json_parse
from varlake.variant.constants import MAX_JSON_DEPTH, MAX_JSON_KEY_LENGTH, MAX_JSON_NUMBER_DIGITS, MAX_JSON_STRING_LENGTH


def _keys(n: int) -> str:
    return "{" + ",".join(f'"k{i}":{i}' for i in range(n)) + "}"


# name -> (the text, the same text built by Spark SQL): Spark builds the big ones itself.
LIMIT_CASES: dict[str, tuple[Callable[[], str], str]] = {
    "depth 1000": (lambda: "[" * 1000 + "]" * 1000, "concat(repeat('[', 1000), repeat(']', 1000))"),
    "depth 1001": (lambda: "[" * 1001 + "]" * 1001, "concat(repeat('[', 1001), repeat(']', 1001))"),
    "depth 1001 objects": (lambda: '{"a":' * 1001 + "1" + "}" * 1001,
                           "concat(repeat('{\"a\":', 1001), '1', repeat('}', 1001))"),
    "depth 10000": (lambda: "[" * 10_000 + "]" * 10_000, "concat(repeat('[', 10000), repeat(']', 10000))"),
    "depth 100000 unclosed": (lambda: "[" * 100_000, "repeat('[', 100000)"),
    "number 1000 digits": (lambda: "1" * 1000, "repeat('1', 1000)"),
    "number 1001 digits": (lambda: "1" * 1001, "repeat('1', 1001)"),
    "number 1001 digits in array": (lambda: "[" + "1" * 1001 + "]", "concat('[', repeat('1', 1001), ']')"),
    "key 50000": (lambda: '{"' + "k" * 50_000 + '":1}', "concat('{\"', repeat('k', 50000), '\":1}')"),
    "key 50001": (lambda: '{"' + "k" * 50_001 + '":1}', "concat('{\"', repeat('k', 50001), '\":1}')"),
    "string 20000000": (lambda: '["' + "s" * 20_000_000 + '"]', "concat('[\"', repeat('s', 20000000), '\"]')"),
    "string 20000001": (lambda: '["' + "s" * 20_000_001 + '"]', "concat('[\"', repeat('s', 20000001), '\"]')"),
    "string 25000000 top level": (lambda: '"' + "s" * 25_000_000 + '"', "concat('\"', repeat('s', 25000000), '\"')"),
    "object of 100000 keys": (lambda: _keys(100_000),
                              "concat('{', array_join(transform(sequence(0, 99999), i -> "
                              "concat('\"k', i, '\":', i)), ','), '}')"),
}


@pytest.mark.spark
def test_limit_verdicts_equal_spark(spark) -> None:  # noqa: ANN001
    """Accepted or refused exactly as Spark 4.3's ``try_parse_json``; accepted ones byte-identical."""
    sql = " UNION ALL ".join(f"SELECT '{name}' AS name, {expr} AS x" for name, (_, expr) in LIMIT_CASES.items())
    rows = spark.sql(
        f"SELECT name, try_parse_json(x) IS NULL AS refused, "
        f"IF(length(x) < 10000000, try_parse_json(x), NULL) AS v, length(x) AS n FROM ({sql})"
    ).collect()
    assert len(rows) == len(LIMIT_CASES)
    for row in rows:
        text = LIMIT_CASES[row.name][0]()
        assert len(text) == row.n, row.name  # both sides built the same text
        mine = varlake.try_parse_json(text)
        assert (mine is None) == row.refused, row.name
        if row.v is not None:
            assert (mine.metadata, mine.value) == (bytes(row.v.metadata), bytes(row.v.value)), row.name
    refused = {row.name for row in rows if row.refused}
    assert refused == {"depth 1001", "depth 1001 objects", "depth 10000", "depth 100000 unclosed",
                       "number 1001 digits", "number 1001 digits in array", "key 50001", "string 20000001",
                       "string 25000000 top level"}


def test_a_million_key_object_parses() -> None:
    v = varlake.parse_json(_keys(1_000_000))
    assert v["k0"].to_python() == 0 and v["k999999"].to_python() == 999_999
    key_bytes = sum(len(f"k{i}") for i in range(1_000_000))  # under 2**24: 3-byte offsets
    assert len(v.metadata) == 1 + 3 * (1_000_000 + 2) + key_bytes


@pytest.mark.parametrize("shape", ["object", "ints", "decimals", "empty arrays", "empty objects", "small objects",
                                   "short strings", "distinct keys", "nested arrays"])
def test_peak_memory_is_linear_in_the_text(shape: str) -> None:
    """Peak Python memory of a parse stays under the stated bound per byte of text, for the
    shapes that cost most per byte (many tiny values)."""
    n = 10_000
    text = {
        "object": lambda: _keys(n),
        "ints": lambda: "[" + ",".join(map(str, range(n))) + "]",
        "decimals": lambda: "[" + ",".join(f"{i}.5" for i in range(n)) + "]",
        "empty arrays": lambda: "[" + ",".join(["[]"] * n) + "]",
        "empty objects": lambda: "[" + ",".join(["{}"] * n) + "]",
        "small objects": lambda: "[" + ",".join(f'{{"a":{i},"b":[{i}]}}' for i in range(n)) + "]",
        "short strings": lambda: "[" + ",".join(f'"s{i}"' for i in range(n)) + "]",
        "distinct keys": lambda: "[" + ",".join(f'{{"key{i}":null}}' for i in range(n)) + "]",
        "nested arrays": lambda: "[" + ",".join(["[[1]]"] * n) + "]",
    }[shape]()
    tracemalloc.start()
    try:
        json_parse.parse_json_parts(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    print(f"{shape}: {peak / len(text):.1f} bytes per byte of text")
    assert peak <= json_parse.PEAK_BYTES_PER_INPUT_BYTE * len(text), (shape, peak / len(text))


# --- early refusal --------------------------------------------------------------------------------------------


@pytest.fixture
def no_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the JSON scanner unusable: a refusal that happens anyway never scanned the text."""

    def scan(text: str, start: int) -> None:
        raise AssertionError("the text was scanned")

    monkeypatch.setattr(json_parse, "_SCAN", scan)


def test_a_huge_top_level_string_is_refused_without_scanning(no_scan: None) -> None:
    text = '  "' + "x" * 50_000_000 + '" trailing'
    with pytest.raises(JsonLimitError) as info:
        varlake.parse_json(text)
    assert info.value.limit == "string" and info.value.early and info.value.position == 2
    assert "exceeds Jackson's limit of 20000000" in str(info.value)
    escaped = '"' + "\\u0041" * 4_000_001 + '"'  # 24,000,006 characters but 4,000,001 code units: scanned
    with pytest.raises(AssertionError, match="scanned"):
        varlake.parse_json(escaped)


def test_deep_nesting_stops_the_scanner() -> None:
    with pytest.raises(JsonLimitError) as info:
        varlake.parse_json("[" * 1_000_000 + "]" * 1_000_000)
    assert info.value.limit == "depth" and info.value.early
    with pytest.raises(JsonLimitError) as info:  # deep enough to fail only in the encoding pass
        varlake.parse_json("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1))
    assert info.value.limit == "depth" and not info.value.early
    assert "deeper than 1000" in str(info.value)


def test_a_long_number_stops_the_scanner() -> None:
    # Had the scanner gone on past the number, the 100,000 open brackets would fail first.
    for text in ("[" + "7" * 10_000_000 + ", " + "[" * 100_000, "9" * (MAX_JSON_NUMBER_DIGITS + 1)):
        with pytest.raises(JsonLimitError) as info:
            json_parse.parse_json_parts(text)
        assert info.value.limit == "number" and info.value.early
    with pytest.raises(JsonLimitError) as info:
        varlake.parse_json("[1." + "5" * 1001 + "]")
    assert info.value.limit == "number" and info.value.early


def test_strings_and_keys_count_utf16_units() -> None:
    astral = "\U0001F600"  # two UTF-16 units
    with pytest.raises(JsonLimitError) as info:
        varlake.parse_json('["' + astral * (MAX_JSON_STRING_LENGTH // 2 + 1) + '"]')
    assert info.value.limit == "string" and "20000002 UTF-16 units" in str(info.value)
    with pytest.raises(JsonLimitError) as info:
        varlake.parse_json('{"' + astral * (MAX_JSON_KEY_LENGTH // 2 + 1) + '":1}')
    assert info.value.limit == "key" and "50002 UTF-16 units" in str(info.value)
    assert varlake.parse_json('{"' + astral * (MAX_JSON_KEY_LENGTH // 2) + '":1}') is not None


def test_the_size_limit_is_checked_while_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark's limit is 128 MiB; a small stand-in shows where the checks sit."""
    monkeypatch.setattr(json_parse, "SIZE_LIMIT", 10_000)
    seen = []
    real_string = json_parse._Encoder.string

    def string(self: json_parse._Encoder, text: str) -> bytes:
        seen.append(text)
        return real_string(self, text)

    monkeypatch.setattr(json_parse._Encoder, "string", string)
    many = "[" + ",".join(['"' + "x" * 1000 + '"'] * 100) + "]"
    with pytest.raises(JsonSizeLimitError) as info:
        json_parse.parse_json_parts(many)
    assert info.value.part == "value" and info.value.early and isinstance(info.value, VariantSizeLimitError)
    assert len(seen) == 10  # refused at the tenth string: the other 90 were never encoded
    keys = "{" + ",".join(f'"{"k" * 1000}{i}":1' for i in range(100)) + "}"
    with pytest.raises(JsonSizeLimitError) as info:
        json_parse.parse_json_parts(keys)
    assert info.value.part == "metadata" and info.value.early
    assert "size limit" in str(info.value)
    # With duplicate keys allowed the dropped values do not count towards the final value.
    duplicated = '{"a":"' + "x" * 9_000 + '","a":"' + "y" * 9_000 + '"}'
    assert json_parse.parse_json_parts(duplicated, allow_duplicate_keys=True)[1][-1:] == b"y"


def test_limit_errors_are_parse_errors() -> None:
    assert issubclass(JsonLimitError, JsonParseError)
    assert varlake.try_parse_json("[" * 5000) is None
    assert varlake.try_parse_json('"' + "x" * 30_000_000 + '"') is None
