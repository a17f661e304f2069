"""Mutated log files give rows or a named error, never a raw exception or a hang.

Hypothesis flips, overwrites, inserts and cuts bytes of real log files from the MOR test
tables (Avro, Parquet and delete blocks) and of handmade ones (a rollback, a Variant
field), and rewrites block headers (instant, schema JSON, command type). Each mutant is
parsed, every block decoded and the file merged; the outcome must be a table or a
``VarlakeError``, within the per-example deadline. Where the right rows are known they
are checked: an unchanged file merges as before, a file cut inside its last block reads as
the file without it (a torn write), and a block of an uncommitted instant may hold any
bytes without changing the rows.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudi_log_tables import data_log_files, mor_zips, unzip_table
from hudi_log_writer import ROW_SCHEMA, avro_block, block, delete_block, rollback_block, rows
from varlake.errors import VarlakeError
from varlake.hudi.log_blocks import decode_data_block, decode_delete_block
from varlake.hudi.log_format import BlockType, parse_log_file
from varlake.hudi.log_merge import merge_file_slice
from varlake.variant import parse_json

# VARLAKE_HUDI_FUZZ=<n> runs n random examples instead of the fixed 150 (for exploring)
_FUZZ = int(os.environ.get("VARLAKE_HUDI_FUZZ", "0"))
SETTINGS = settings(
    max_examples=_FUZZ or 150, deadline=2000, derandomize=not _FUZZ, suppress_health_check=[HealthCheck.too_slow], database=None
)

_VARIANT_SCHEMA = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "_hoodie_record_key", "type": "string"},
        {"name": "ts", "type": "long"},
        {"name": "p", "type": ["null", {"type": "record", "name": "v", "logicalType": "variant", "fields": [
            {"name": "metadata", "type": "bytes"}, {"name": "value", "type": "bytes"}]}]},
        {"name": "tags", "type": {"type": "map", "values": {"type": "array", "items": "string"}}},
    ],
}


def _handmade() -> list[bytes]:
    v = parse_json('{"k": [1, "two", {"x": null}]}')
    variant = avro_block("002", _VARIANT_SCHEMA, [
        {"_hoodie_record_key": "a", "ts": 1, "p": {"metadata": v.metadata, "value": v.value}, "tags": {"t": ["x", "y"]}},
        {"_hoodie_record_key": "b", "ts": 2, "p": None, "tags": {}},
    ])
    mixed = (
        avro_block("002", ROW_SCHEMA, rows("002", ("a", 1, "a"), ("b", 2, "b")))
        + delete_block("003", [("a", "", None), ("b", "p", 5), ("c", "p", "s")])
        + rollback_block("004", "002")
    )
    return [variant, mixed]


def _sources() -> list[bytes]:
    out = _handmade()
    tmp = Path(__import__("tempfile").mkdtemp(prefix="hudi_mut_"))
    kinds: set[tuple[int, ...]] = set()
    for z in mor_zips():
        for p in data_log_files(unzip_table(z, tmp)):
            data = p.read_bytes()
            kind = tuple(b.block_type for b in parse_log_file(data, p.name).blocks)
            if kind not in kinds:  # one file per mix of block types keeps the run short
                kinds.add(kind)
                out.append(data)
    return out


SOURCES = _sources()


def _outcome(data: bytes) -> pa.Table | VarlakeError:
    """Parse, decode and merge; a ``VarlakeError`` is returned, anything else propagates."""
    try:
        log = parse_log_file(data, ".f-0_001.log.1_0-1-1")
        for b in log.blocks:
            if b.block_type == BlockType.DELETE:
                decode_delete_block(b)
            elif b.is_data:
                decode_data_block(b)
        instants = {b.instant_time for b in log.blocks if b.instant_time}
        return merge_file_slice(None, [log], key_fields="_hoodie_record_key", ordering_field="ts", valid_instants=instants)
    except VarlakeError as e:
        return e


def test_unchanged_sources_merge() -> None:
    assert len(SOURCES) >= 4
    kinds = {b.block_type for data in SOURCES for b in parse_log_file(data).blocks}
    assert {BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.DELETE, BlockType.COMMAND} <= kinds
    for data in SOURCES:
        first = _outcome(data)
        assert isinstance(first, pa.Table), first
        assert _outcome(bytes(data)).equals(first)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SOURCES)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "overwrite", "insert", "cut", "truncate", "int"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "overwrite":
            chunk = draw(st.binary(min_size=1, max_size=8))
            data[pos : pos + len(chunk)] = chunk
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "cut":
            del data[pos : pos + draw(st.integers(1, 16))]
        elif op == "truncate":
            del data[pos:]
        elif op == "int" and len(data) >= pos + 4:  # a length or count field set to an edge value
            value = draw(st.sampled_from([0, 1, -1, 2**31 - 1, -(2**31), len(data), 7]))
            data[pos : pos + 4] = struct.pack(">i", value)
    return bytes(data)


@SETTINGS
@given(mutated())
def test_mutated_bytes_give_rows_or_a_named_error(data: bytes) -> None:
    assert isinstance(_outcome(data), (pa.Table, VarlakeError))


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8)
    | st.sampled_from(["null", "int", "long", "string", "bytes", "record", "array", "map", "fixed", "enum", "variant", "decimal"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["type", "name", "fields", "items", "values", "logicalType", "size", "precision", "scale", "symbols"]),
        inner, max_size=5,
    ),
    max_leaves=20,
)


@st.composite
def header_mutated(draw: st.DrawFn) -> bytes:
    """A log file whose blocks are re-framed with mutated headers."""
    source = draw(st.sampled_from(SOURCES))
    out = b""
    for b in parse_log_file(source).blocks:
        header = dict(b.header)
        what = draw(st.sampled_from(["schema-field", "schema-any", "instant", "command", "key", "none"]))
        if what == "schema-field" and 2 in header and header[2].startswith("{"):
            schema = json.loads(header[2])
            if schema.get("fields"):
                i = draw(st.integers(0, len(schema["fields"]) - 1))
                schema["fields"][i]["type"] = draw(_JSONISH)
            header[2] = json.dumps(schema)
        elif what == "schema-any":
            header[2] = draw(st.one_of(st.text(max_size=30), _JSONISH.map(json.dumps)))
        elif what == "instant":
            header[0] = draw(st.text(max_size=20))
        elif what == "command":
            header[3] = draw(st.text(max_size=4))
            header[1] = draw(st.text(max_size=20))
        elif what == "key":
            header[draw(st.integers(-3, 40))] = draw(st.text(max_size=10))
        out += block(int(b.block_type), header, b.content, dict(b.footer))
    return out


@SETTINGS
@given(header_mutated())
def test_mutated_headers_give_rows_or_a_named_error(data: bytes) -> None:
    assert isinstance(_outcome(data), (pa.Table, VarlakeError))


@pytest.mark.parametrize("cut", [1, 7, 13, 21, 40])
def test_a_torn_last_block_keeps_the_earlier_blocks(cut: int) -> None:
    """A crashed writer leaves a torn last block: the blocks before it still count."""
    first = avro_block("002", ROW_SCHEMA, rows("002", ("a", 1, "a")))
    second = avro_block("003", ROW_SCHEMA, rows("003", ("b", 2, "b")))
    got = _outcome(first + second[:-cut])
    assert isinstance(got, pa.Table)
    assert got.column("_hoodie_record_key").to_pylist() == ["a"]


def _last_block_start(data: bytes) -> int:
    return parse_log_file(data).blocks[-1].offset


@SETTINGS
@given(st.sampled_from(SOURCES), st.data())
def test_a_torn_last_block_leaves_the_rows_of_the_blocks_before_it(source: bytes, data: st.DataObject) -> None:
    """Hudi's torn-write rule: a file cut anywhere inside its last block reads as the file
    without that block (the correct rows, not merely no crash)."""
    start = _last_block_start(source)
    if start == 0:  # one block: put a copy of it before, so something must remain
        source = source + source
        start = _last_block_start(source)
    cut = data.draw(st.integers(start, len(source) - 1))
    expected = _outcome(source[:start])
    got = _outcome(source[:cut])
    assert isinstance(got, pa.Table) and isinstance(expected, pa.Table)
    assert got.equals(expected)


@SETTINGS
@given(st.binary(max_size=300), st.sampled_from([1, 3, 5]))
def test_blocks_of_uncommitted_instants_are_never_decoded(content: bytes, block_type: int) -> None:
    """Whatever the content of a block written by a failed (uncommitted) instant, the rows are
    those of the committed blocks."""
    good = avro_block("002", ROW_SCHEMA, rows("002", ("a", 1, "a"), ("b", 2, "b")))
    failed = block(block_type, {0: "009", 2: "not even json"}, content)
    log = parse_log_file(good + failed + good, ".f-0_001.log.1_0-1-1")
    got = merge_file_slice(None, [log], key_fields="_hoodie_record_key", ordering_field="ts", valid_instants={"002"})
    assert got.column("v").to_pylist() == ["a", "b"]
