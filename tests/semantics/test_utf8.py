"""Bytes decode to text as Java's UTF-8 decoder does (Spark's CAST(binary AS STRING))."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.semantics.utf8 import java_utf8_decode

TRICKY = [0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE2, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xF8, 0xFF,
          0x82, 0x90, 0x9F, 0xA0, 0xAC]
BYTES = st.lists(st.sampled_from(TRICKY), max_size=8).map(bytes)


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (b"abc", "abc"),
        ("é✓😀".encode(), "é✓😀"),
        (b"\xed\xa0\x80", "\ufffd"),  # an encoded surrogate: one malformed sequence
        (b"\xed\xa0z", "\ufffdz"),
        (b"\xe2\x82z", "\ufffdz"),
        (b"\xe0\x80\x80", "\ufffd" * 3),  # overlong: byte by byte
        (b"\xf0\x90\x80", "\ufffd"),  # cut off at the end
        (b"\xff\xc0\x80", "\ufffd" * 3),
    ],
)
def test_known_sequences(data, text):
    assert java_utf8_decode(data) == text


@given(BYTES)
@settings(max_examples=300, derandomize=True, database=None)
def test_valid_utf8_is_plain_decoding(data):
    text = java_utf8_decode(data)
    try:
        assert text == data.decode("utf-8")
    except UnicodeDecodeError:
        assert "\ufffd" in text


@pytest.mark.spark
def test_decoding_matches_spark(spark):
    samples = [bytes([a, b, c, d]) for a in (0xE0, 0xED, 0xF0, 0xF4, 0xC2) for b in (0x80, 0x9F, 0xA0, 0xBF, 0x41)
               for c in (0x80, 0xBF, 0x7A) for d in (0x80, 0x41)]
    samples += [s[:n] for s in samples[:40] for n in (1, 2, 3)] + [b"\xff\xfe", b"\x80abc", b"a\xf8b"]
    df = spark.createDataFrame([(i, s) for i, s in enumerate(samples)], "i int, b binary")
    got = {r[0]: r[1] for r in df.selectExpr("i", "CAST(b AS STRING)").collect()}
    bad = [(s, got[i], java_utf8_decode(s)) for i, s in enumerate(samples) if got[i] != java_utf8_decode(s)]
    assert not bad, bad[:5]
