"""Every Variant sample from apache/parquet-testing decodes to its documented value."""

from __future__ import annotations

import base64
import datetime as dt
import json
import uuid
from decimal import Decimal
from pathlib import Path

import pytest

from varlake import TimestampNanos, Variant
from varlake.variant.constants import PrimitiveType

SAMPLES = Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "parquet-testing" / "variant"
NAMES = sorted(p.stem for p in SAMPLES.glob("*.value"))


def load(name: str) -> Variant:
    return Variant((SAMPLES / f"{name}.metadata").read_bytes(), (SAMPLES / f"{name}.value").read_bytes())


def expected() -> dict:
    text = (SAMPLES / "data_dictionary.json").read_text()
    return json.loads(text.replace(",\n}", "\n}"))


def test_samples_exist() -> None:
    assert len(NAMES) == 29


def _matches(actual, want, ptype) -> bool:  # noqa: ANN001
    """Compare a decoded Python value with data_dictionary.json's loose rendering."""
    if isinstance(actual, dict):
        return set(actual) == set(want) and all(_matches(actual[k], want[k], None) for k in actual)
    if isinstance(actual, list):
        return len(actual) == len(want) and all(_matches(a, w, None) for a, w in zip(actual, want))
    if isinstance(actual, bytes):
        return base64.b64encode(actual).decode() == want
    if isinstance(actual, uuid.UUID):
        return str(actual) == want
    if isinstance(actual, Decimal):
        return actual == Decimal(str(want)) or float(actual) == want
    if isinstance(actual, float) and ptype == PrimitiveType.FLOAT:
        return abs(actual - want) / abs(want) < 1e-6
    if isinstance(actual, TimestampNanos):
        d = actual.to_datetime()
        text = d.strftime("%Y-%m-%dT%H:%M:%S") + f".{actual.nanos % 1_000_000_000:09d}"
        return want.startswith(text)
    if isinstance(actual, dt.datetime):
        if actual.tzinfo is not None:
            return actual == dt.datetime.fromisoformat(want)
        return actual == dt.datetime.fromisoformat(want) or actual.isoformat(" ").startswith(want)
    if isinstance(actual, dt.date):
        return actual.isoformat() == want
    if isinstance(actual, dt.time):
        h, m, s, us = want.split(":")
        return actual == dt.time(int(h), int(m), int(s), int(us))
    if isinstance(actual, str) and isinstance(want, str) and "T" in want and actual != want:
        return actual == want
    return actual == want


@pytest.mark.parametrize("name", NAMES)
def test_sample_decodes_to_documented_value(name: str) -> None:
    v = load(name).validate()
    if name == "long_string":  # the one sample data_dictionary.json leaves out
        assert v.primitive_type == PrimitiveType.STRING and v.value[0] & 0x03 == 0
        assert len(v.to_python().encode()) > 63
        return
    want = expected()[name]
    assert _matches(v.to_python(), want, v.primitive_type), (name, v.to_python(), want)


@pytest.mark.parametrize("name", NAMES)
def test_sample_reencodes_to_equal_variant(name: str) -> None:
    v = load(name)
    again = Variant.from_python(v.to_python())
    assert again == v
    assert hash(again) == hash(v)
    assert again.type_family == v.type_family


def test_sample_types_are_the_named_ones() -> None:
    assert load("primitive_int8").primitive_type == PrimitiveType.INT8
    assert load("primitive_uuid").primitive_type == PrimitiveType.UUID
    assert load("primitive_time").primitive_type == PrimitiveType.TIME
    assert load("primitive_timestamp_nanos").primitive_type == PrimitiveType.TIMESTAMP_NANOS
    assert load("primitive_decimal16").primitive_type == PrimitiveType.DECIMAL16
    assert load("short_string").value[0] & 0x03 == 1
