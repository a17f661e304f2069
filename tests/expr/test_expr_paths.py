"""Variant path text -> RFC 9535 normalized path (Delta's per-path stats key)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from varlake.errors import InvalidPathError
from varlake.expr import parse_term
from varlake.expr.variant_paths import normalize_variant_path, normalized_from_segments


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("$", "$"),
        ("$.a", "$['a']"),
        ("$.a.b", "$['a']['b']"),
        ("$['a']['b']", "$['a']['b']"),
        ('$["a"].b', "$['a']['b']"),
        ("$['a b'][0]", "$['a b'][0]"),
        ("$.a[10].c", "$['a'][10]['c']"),
        ('$["it\'s"]', "$['it\\'s']"),
        ("$['tab\there']", "$['tab\\there']"),
        ("$['nl\nx']", "$['nl\\nx']"),
        ("$['\x01']", "$['\\u0001']"),
        ("$['\x1f']", "$['\\u001f']"),
        ("$['ünï😀']", "$['ünï😀']"),
        ("$.Abc", "$['Abc']"),
        ('$["a.b"]', "$['a.b']"),
    ],
)
def test_normalization(text, normalized):
    assert normalize_variant_path(text) == normalized


def test_delta_example_keys():
    # the keys in the Delta protocol's Variant stats example
    assert normalize_variant_path("$.a") == "$['a']"
    assert normalize_variant_path("$.b.c") == "$['b']['c']"


def test_shorthand_keys_with_quotes_and_backslashes_are_escaped():
    assert parse_term("""v:["it's"]::int""").path == "$['it\\'s']"
    assert parse_term("v:['back\\\\slash']::int").path == normalized_from_segments(("back\\slash",))
    assert normalized_from_segments(("back\\slash",)) == "$['back\\\\slash']"


@pytest.mark.parametrize("text", ["", "a.b", "$.", "$..a", "$[", "$['a'", "$[\"a']", "$[x]", "$[-1]", "$a", "$[1.5]"])
def test_invalid_paths_raise(text):
    with pytest.raises(InvalidPathError):
        normalize_variant_path(text)


keys = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)
segments = st.lists(st.one_of(keys, st.integers(0, 2**31 - 1)), max_size=5)


plain_keys = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="'\\\"\x00"), min_size=1, max_size=8)


@given(st.lists(st.one_of(plain_keys, st.integers(0, 2**31 - 1)), max_size=5))
def test_normalized_form_parses_back_to_the_same_path(parts):
    # Spark's path grammar has no escapes: only keys without quotes, backslashes and control characters round-trip.
    normalized = normalized_from_segments(tuple(parts))
    assert normalize_variant_path(normalized) == normalized


@given(st.lists(keys, min_size=1, max_size=5))
def test_normalized_form_escapes_quotes_backslashes_and_controls(parts):
    normalized = normalized_from_segments(tuple(parts))
    body = normalized[1:]
    i = 0
    decoded = []
    while i < len(body):
        assert body.startswith("['", i)
        i += 2
        chars = []
        while body[i] != "'":
            if body[i] == "\\":
                esc = body[i + 1]
                if esc == "u":
                    chars.append(chr(int(body[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                chars.append({"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}.get(esc, esc))
                i += 2
                continue
            assert ord(body[i]) >= 0x20
            chars.append(body[i])
            i += 1
        decoded.append("".join(chars))
        assert body[i : i + 2] == "']"
        i += 2
    assert decoded == parts
