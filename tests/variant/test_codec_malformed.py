"""Bad bytes never crash or hang the codec, and Delta's Z85 Variant statistics round trip.

Every operation on arbitrary (random, mutated or truncated) metadata/value bytes either
succeeds or raises a ``VarlakeError`` (mostly ``MalformedVariantError``): never IndexError,
struct.error, RecursionError or MemoryError, and never unbounded work.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import varlake
from varlake import Variant, decode_variant_stat, encode_variant_stat
from varlake.errors import MalformedVariantError, VarlakeError
from varlake.variant import encoder as enc
from varlake.variant.z85 import z85_decode, z85_encode

PATHS = ("$", "$.a", "$[0]", "$.a[1].b", "$['id']", "$[300]")
VALID_JSON = st.sampled_from([
    '{"a":[1,{"b":"text that is longer than sixty-three bytes, so it is a long string!"}],"id":7}',
    '[1,2.5,-3e10,"x",null,true,{"k":{"l":[]}}]', '"short"', "12345678901234567890", "1.25",
    json.dumps({f"k{i}": i * 1000 for i in range(300)}),
    '[' + ",".join(str(i) for i in range(300)) + ']', '{"a":{"a":{"a":{"a":[[[[1]]]]}}}}',
])


def exercise(metadata: bytes, value: bytes) -> None:
    """Every reading operation; each may only succeed or raise a VarlakeError."""
    try:
        v = Variant(metadata, value)
    except VarlakeError:
        return
    operations = [
        v.to_python, v.to_json, lambda: v.to_json("America/New_York"), v.validate, lambda: hash(v),
        lambda: v == Variant.from_python({"a": 1}), lambda: v == Variant(metadata, value + b"\x00"),
        v.keys, v.items, v.elements, lambda: v.type_family, lambda: v.primitive_type, lambda: repr(v),
        lambda: len(v) if v.is_object() or v.is_array() else 0,
    ]
    operations += [lambda p=p: v.get(p) for p in PATHS]
    for op in operations:
        try:
            op()
        except VarlakeError:
            pass


@settings(max_examples=400)
@given(st.binary(max_size=64), st.binary(min_size=1, max_size=200))
def test_random_bytes(metadata: bytes, value: bytes) -> None:
    exercise(metadata, value)
    exercise(b"\x01\x02\x00\x01\x02ab", value)  # a valid dictionary with random values
    exercise(metadata, b"\x02\x01\x00\x00\x02\x0c\x01")


@st.composite
def mutated(draw: st.DrawFn) -> tuple[bytes, bytes]:
    v = varlake.parse_json(draw(VALID_JSON))
    metadata, value = bytearray(v.metadata), bytearray(v.value)
    rnd = draw(st.randoms(use_true_random=False))
    for _ in range(draw(st.integers(1, 4))):
        target = value if rnd.random() < 0.8 else metadata
        kind = rnd.random()
        if kind < 0.5 and target:
            target[rnd.randrange(len(target))] = rnd.randrange(256)
        elif kind < 0.7 and target:
            target[rnd.randrange(len(target))] ^= 1 << rnd.randrange(8)
        elif kind < 0.85 and len(target) > 1:
            del target[rnd.randrange(1, len(target)):]
        else:
            target[rnd.randrange(len(target) + 1):rnd.randrange(len(target) + 1)] = bytes(rnd.randrange(256) for _ in range(3))
    return bytes(metadata), bytes(value)


@settings(max_examples=400)
@given(mutated())
def test_mutated_encodings(pair: tuple[bytes, bytes]) -> None:
    exercise(*pair)


@given(VALID_JSON, st.data())
def test_truncations(text: str, data: st.DataObject) -> None:
    v = varlake.parse_json(text)
    cut = data.draw(st.integers(1, len(v.value)))
    exercise(v.metadata, v.value[:cut])
    exercise(v.metadata[: data.draw(st.integers(0, len(v.metadata)))], v.value)


def test_every_single_byte_change_of_a_document() -> None:
    v = varlake.parse_json('{"a":[1,{"b":"x"}],"cc":-2.5,"d":"' + "y" * 70 + '","e":1e3}')
    rnd = random.Random(3)
    for i in range(len(v.value)):
        for b in {0, 0xFF, v.value[i] ^ 0x01, v.value[i] ^ 0x80, rnd.randrange(256)}:
            exercise(v.metadata, v.value[:i] + bytes((b,)) + v.value[i + 1:])


def _aliased(depth: int, fanout: int = 255) -> tuple[bytes, bytes]:
    """``depth`` nested objects whose ``fanout`` fields all point at one child, ending in an
    array whose elements all point at one long string: 255**6 visits if followed naively."""
    metadata = enc.metadata_from_keys([f"k{i:03d}" for i in range(fanout)])
    text = b"\x40" + (1000).to_bytes(4, "little") + b"s" * 1000
    child = enc.assemble_array([0] * fanout + [len(text)], text)
    for _ in range(depth):
        child = enc.assemble_object(list(range(fanout)), [0] * fanout + [len(child)], child)
    return metadata, child


@pytest.mark.timeout(60)
def test_aliased_offsets_are_rejected_quickly() -> None:
    metadata, value = _aliased(5)
    v = Variant(metadata, value)
    for op in (v.to_python, v.to_json, v.validate, lambda: hash(v), lambda: v == Variant.from_python(1), v.canonical):
        with pytest.raises(MalformedVariantError, match="overlap"):
            op()
    assert v.get("$.k007.k100.k000.k254.k001[3]").to_python() == "s" * 1000  # navigation reads one path


def test_truncated_and_oversized_numbers_of_elements() -> None:
    for value in (b"\x03\xff", b"\x13\xff\xff\xff\xff", b"\x02\x05\x00", b"\x42\xff\xff\xff\x7f\x00",
                  b"\x40\xff\xff\xff\xff", b"\x3c\x05\x00\x00\x00ab", b"\x20\x00", b"\xfc", b"\x29"):
        exercise(b"\x01\x00\x00", value)
        with pytest.raises(MalformedVariantError):
            Variant(b"\x01\x00\x00", value).validate()


@pytest.mark.parametrize("metadata", [b"", b"\x02\x00\x00", b"\x01", b"\x01\x05\x00", b"\x41\x01\x00", b"\x01\x01\x00\x05a",
                                      b"\x01\x02\x00\x02\x01ab", b"\x11\x02\x00\x01\x02ba", b"\x01\x01\x00\x01\xff"])
def test_bad_metadata(metadata: bytes) -> None:
    exercise(metadata, b"\x02\x01\x00\x00\x00\x00")
    with pytest.raises(MalformedVariantError):
        Variant(metadata, b"\x02\x01\x00\x00\x01\x00").validate()


def test_wide_decimals_are_malformed_like_in_spark() -> None:
    too_wide = b"\x20\x00" + (10**9).to_bytes(4, "little", signed=True)
    with pytest.raises(MalformedVariantError):
        Variant(b"\x01\x00\x00", too_wide).to_json()
    with pytest.raises(MalformedVariantError):
        Variant(b"\x01\x00\x00", b"\x28\x27" + (1).to_bytes(16, "little")).to_python()  # scale 39


# --- Z85 statistics ----------------------------------------------------------------------------------


def _stats_strings(testdata: Path) -> list[tuple[str, str]]:
    found = []
    for log in sorted((testdata / "delta" / "variant-stats-no-checkpoint" / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            if "add" not in action or not action["add"].get("stats"):
                continue
            stats = json.loads(action["add"]["stats"])
            for bound in ("minValues", "maxValues"):
                found.append((f"{log.name} {bound} v", stats[bound]["v"]))
                found.append((f"{log.name} {bound} nv.v", stats[bound]["nv"]["v"]))
    return found


def test_delta_variant_stats_round_trip(testdata: Path) -> None:
    found = _stats_strings(testdata)
    assert len(found) == 4
    for where, text in found:
        v = decode_variant_stat(text)
        assert v.is_object(), where
        assert v.keys() and all(k.startswith("$['") and k.endswith("']") for k in v.keys()), where
        assert set(v.keys()) == {"$['id']", "$['name']"}, where
        assert isinstance(v["$['id']"].to_python(), int) and isinstance(v["$['name']"].to_python(), str)
        assert encode_variant_stat(v) == text, where
    lows = {w.split()[-1]: decode_variant_stat(t).to_python() for w, t in found if "minValues" in w}
    highs = {w.split()[-1]: decode_variant_stat(t).to_python() for w, t in found if "maxValues" in w}
    for column in ("v", "nv.v"):
        assert lows[column]["$['id']"] <= highs[column]["$['id']"]


@given(st.binary(max_size=40).map(lambda b: b + b"\x00" * (-len(b) % 4)))
def test_z85_round_trip(data: bytes) -> None:
    assert z85_decode(z85_encode(data)) == data


@given(st.text(max_size=30) | st.binary(max_size=40).map(lambda b: z85_encode(b"\x01" + b + b"\x00" * (-(len(b) + 1) % 4))))
def test_bad_stats_strings_raise_varlake_errors(text: str) -> None:
    try:
        decode_variant_stat(text)
    except VarlakeError:
        pass


@given(st.recursive(st.none() | st.integers() | st.text(), lambda s: st.dictionaries(st.text(max_size=5), s, max_size=4), max_leaves=8))
def test_stats_of_any_variant_round_trip(obj: Any) -> None:
    try:
        v = Variant.from_python(obj)
    except VarlakeError:
        return
    assert decode_variant_stat(encode_variant_stat(v)) == v
