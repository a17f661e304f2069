"""Properties of the codec over random values (hypothesis): round trips, equality and hash
laws, JSON round trips, every container width, and sorted dictionaries."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import varlake
from varlake import TimestampNanos, Variant, VariantPath
from varlake.variant import decoder as dec
from varlake.variant import encoder as enc
from varlake.variant.constants import PrimitiveType
from varlake.variant.temporal import Float32

EMPTY = b"\x01\x00\x00"
INT64 = st.integers(-(2**63), 2**63 - 1)
KEYS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)


@st.composite
def decimals(draw: st.DrawFn, max_digits: int = 38) -> Decimal:
    unscaled = draw(st.integers(-(10**max_digits) + 1, 10**max_digits - 1))
    scale = draw(st.integers(0, max_digits))
    return Decimal(f"{unscaled}E-{scale}")


SCALARS = st.one_of(
    st.none(), st.booleans(), INT64, st.integers(-(10**38) + 1, 10**38 - 1),
    st.floats(allow_nan=False), st.floats(width=32, allow_nan=False).map(Float32),
    decimals(), TEXT, st.binary(max_size=80), st.dates(),
    st.datetimes(), st.datetimes(timezones=st.just(dt.timezone.utc) | st.timezones()),
    st.times(), st.uuids(), st.builds(TimestampNanos, INT64, st.booleans()),
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=6) | st.dictionaries(KEYS, inner, max_size=6),
                      max_leaves=30)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | INT64 | decimals() | TEXT,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(KEYS, inner, max_size=6), max_leaves=30,
)


def same(a: Any, b: Any) -> bool:
    """Equal, and of the type varlake promises back (ints beyond int64 come back as Decimal)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, int) and not isinstance(a, bool) and not -(2**63) <= a < 2**63:
        return type(b) is Decimal and a == b
    if isinstance(a, dt.datetime) and a.tzinfo is not None:
        # the same instant (subtraction, as == is False for ambiguous wall times across zones)
        return isinstance(b, dt.datetime) and b.tzinfo == dt.timezone.utc and b - a == dt.timedelta(0)
    return type(a) is type(b) and a == b


@settings(max_examples=300)
@given(VALUES)
def test_python_round_trip(obj: Any) -> None:
    v = Variant.from_python(obj)
    assert same(obj, v.to_python())
    v.validate()
    assert Variant.from_python(v.to_python()) == v


@given(VALUES)
def test_equality_and_hash_laws(obj: Any) -> None:
    a = Variant.from_python(obj)
    b = Variant(a.metadata, a.value)
    assert a == a and a == b and b == a
    assert hash(a) == hash(b)
    assert Variant.from_bytes(a.to_bytes()) == a


@given(VALUES, VALUES)
def test_equality_is_symmetric_and_hash_consistent(x: Any, y: Any) -> None:
    a, b = Variant.from_python(x), Variant.from_python(y)
    assert (a == b) == (b == a)
    if a == b:
        assert hash(a) == hash(b)


@given(st.integers(-128, 127), st.integers(0, 6))
def test_exact_numerics_of_every_width_are_equal(n: int, scale: int) -> None:
    forms = [enc.encode_int_as(n, t) for t in (PrimitiveType.INT8, PrimitiveType.INT16, PrimitiveType.INT32, PrimitiveType.INT64)]
    forms += [enc.encode_decimal_as(n * 10**scale, scale, t) for t in (PrimitiveType.DECIMAL4, PrimitiveType.DECIMAL8, PrimitiveType.DECIMAL16)]
    variants = [Variant(EMPTY, f) for f in forms]
    assert all(v == variants[0] and hash(v) == hash(variants[0]) for v in variants)
    assert Variant(EMPTY, enc.encode_double(float(n))) != variants[0]  # double is another family
    assert Variant(EMPTY, enc.encode_int_as(1, PrimitiveType.INT8)) == Variant(EMPTY, enc.encode_decimal_as(100, 2, PrimitiveType.DECIMAL4))


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=15))
def test_short_and_long_strings_are_equal(text: str) -> None:
    data = text.encode()
    short, long_form = Variant(EMPTY, enc.encode_utf8(data)), Variant(EMPTY, b"\x40" + len(data).to_bytes(4, "little") + data)
    assert short.value != long_form.value
    assert short == long_form and hash(short) == hash(long_form)
    assert short.to_python() == long_form.to_python() == text


@given(st.dictionaries(KEYS, SCALARS, min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_field_and_dictionary_order_do_not_matter(obj: dict[str, Any], rnd: random.Random) -> None:
    keys = list(obj)
    reordered = keys[:]
    rnd.shuffle(reordered)
    extra = ["unused-" + str(i) for i in range(rnd.randint(0, 3))]
    dictionary = extra + reordered
    ids = {k: i for i, k in enumerate(dictionary)}
    insertion = keys[:]
    rnd.shuffle(insertion)
    value = enc.encode_object([(k, ids[k], enc.encode_scalar(obj[k])) for k in insertion])
    other = Variant(enc.metadata_from_keys(dictionary), value)
    plain = Variant.from_python(obj)
    assert other == plain and hash(other) == hash(plain)
    assert other.to_json() == plain.to_json()


@settings(max_examples=300)
@given(JSON_VALUES)
def test_json_round_trip(obj: Any) -> None:
    v = Variant.from_python(obj)
    again = varlake.parse_json(v.to_json())
    assert again == v
    assert again.to_json() == v.to_json()


# --- forced widths ------------------------------------------------------------------------------------


def reencode(meta: dec.MetadataView, value: bytes, pos: int, rnd: random.Random) -> bytes:
    """The value at ``pos`` with every container rebuilt at random (legal) widths."""
    basic = value[pos] & 3
    if basic == 2:
        ids, offs, data = dec.object_ids_offsets(meta, value, pos)
        children = [reencode(meta, value, data + o, rnd) for o in offs]
        offsets, total = [], 0
        for c in children:
            offsets.append(total)
            total += len(c)
        offsets.append(total)
        return enc.assemble_object(list(ids), offsets, b"".join(children),
                                   id_size=rnd.randint(enc.int_size(max(ids, default=0)), 4),
                                   offset_size=rnd.randint(enc.int_size(total), 4),
                                   large=len(ids) > 255 or rnd.random() < 0.5)
    if basic == 3:
        children = [reencode(meta, value, p, rnd) for p in dec.array_positions(value, pos)]
        return enc.encode_array(children, offset_size=rnd.randint(enc.int_size(sum(map(len, children))), 4),
                                large=len(children) > 255 or rnd.random() < 0.5)
    return value[pos : pos + dec.value_size(value, pos)]


def paths(obj: Any, prefix: str = "$") -> list[tuple[str, Any]]:
    out = [(prefix, obj)]
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k.isidentifier():
                out += paths(v, f"{prefix}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += paths(v, f"{prefix}[{i}]")
    return out


@settings(max_examples=200)
@given(VALUES, st.randoms(use_true_random=False))
def test_every_offset_and_id_width_round_trips(obj: Any, rnd: random.Random) -> None:
    plain = Variant.from_python(obj)
    meta = dec.metadata_view(plain.metadata)
    wide = Variant(plain.metadata, reencode(meta, plain.value, 0, rnd))
    wide.validate()
    assert wide == plain and hash(wide) == hash(plain)
    assert same(wide.to_python(), plain.to_python())
    assert wide.to_json() == plain.to_json()
    for path, sub in paths(plain.to_python()):
        assert wide.get(path) == plain.get(path)


def test_each_width_and_the_large_flag_are_written() -> None:
    for size in (1, 2, 3, 4):
        arr = Variant(EMPTY, enc.encode_array([b"\x0c\x01"], offset_size=size, large=size % 2 == 0))
        n, osz, offs, _ = dec.array_layout(arr.value, 0)
        assert (n, osz, offs) == (1, size, 5 if size % 2 == 0 else 2)
        assert arr.to_python() == [1]
        obj = Variant(enc.metadata_from_keys(["k"]), enc.encode_object([("k", 0, b"\x0c\x01")], id_size=size,
                                                                     offset_size=5 - size, large=size > 2))
        n, isz, osz, ids, _, _ = dec.object_layout(obj.value, 0)
        assert (n, isz, osz, ids) == (1, size, 5 - size, 5 if size > 2 else 2)
        assert obj.to_python() == {"k": 1} and obj["k"].to_python() == 1


# --- sorted dictionaries -------------------------------------------------------------------------------


@given(st.lists(KEYS, min_size=1, max_size=60, unique=True), st.lists(KEYS, max_size=5), st.randoms(use_true_random=False))
def test_sorted_metadata_lookups(keys: list[str], probes: list[str], rnd: random.Random) -> None:
    builder = enc.MetadataBuilder(sorted(keys))
    metadata = builder.build(sort=True)
    view = dec.MetadataView(metadata)
    assert view.is_sorted and view.keys() == sorted(keys)
    insertion = keys[:]
    rnd.shuffle(insertion)
    value = enc.encode_object([(k, builder.ids[k], enc.encode_int(i)) for i, k in enumerate(insertion)])
    v = Variant(metadata, value).validate()
    for i, k in enumerate(insertion):
        assert view.field_ids(k.encode()) == (builder.ids[k],)
        assert v[k].to_python() == i
        assert v.get(VariantPath.from_normalized("$['" + k.replace("\\", "\\\\").replace("'", "\\'") + "']")) == v[k]
    for p in probes:
        if p not in keys:
            assert view.field_ids(p.encode()) == ()
            assert v.get(VariantPath((p,))) is None


def test_values_without_a_variant_form_are_rejected() -> None:
    import pytest

    from varlake.errors import UnsupportedValueError

    for obj in ("\ud800", {"\udc00": 1}, [1, "a\ud800"], {1: 2}, object(), {1.5}, 10**38, Decimal("1E+38"),
                Decimal("NaN"), dt.time(1, tzinfo=dt.timezone.utc), Float32(1e39)):
        with pytest.raises(UnsupportedValueError):
            Variant.from_python(obj)
    deep: Any = 1
    for _ in range(10_001):
        deep = [deep]
    with pytest.raises(UnsupportedValueError):
        Variant.from_python(deep)
