"""A Variant field in an Avro log block (a record of ``metadata``/``value`` bytes with
``"logicalType": "variant"``), written with fastavro, reads back as a Variant column."""

from __future__ import annotations

import pyarrow as pa
import pytest

from hudi_log_writer import avro_block
from varlake.errors import HudiLogFormatError, MalformedVariantError
from varlake.hudi.log_blocks import decode_data_block
from varlake.hudi.log_format import parse_log_file
from varlake.hudi.log_merge import merge_file_slice
from varlake.shred.arrow_extension import VariantExtensionType, variants_of
from varlake.variant import parse_json

VARIANT = {
    "type": "record",
    "name": "payload",
    "logicalType": "variant",
    "fields": [{"name": "metadata", "type": "bytes"}, {"name": "value", "type": "bytes"}],
}
SCHEMA = {
    "type": "record",
    "name": "event",
    "namespace": "hoodie.test",
    "fields": [
        {"name": "_hoodie_record_key", "type": "string"},
        {"name": "ts", "type": "long"},
        {"name": "payload", "type": ["null", VARIANT]},
        {"name": "history", "type": {"type": "array", "items": "payload"}},
        {"name": "when", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "amount", "type": {"type": "fixed", "name": "dec", "size": 5, "logicalType": "decimal", "precision": 10, "scale": 2}},
    ],
}
DOCS = ['{"a": 1, "b": [true, null, "x"]}', '"just a string"', '{"nested": {"deep": 1.5e10}}']


def _record(key: str, ts: int, doc: str | None) -> dict:
    v = parse_json(doc) if doc is not None else None
    hist = [parse_json(d) for d in DOCS[:ts]]
    return {
        "_hoodie_record_key": key,
        "ts": ts,
        "payload": None if v is None else {"metadata": v.metadata, "value": v.value},
        "history": [{"metadata": h.metadata, "value": h.value} for h in hist],
        "when": 1_700_000_000_000_000 + ts,
        "amount": (12345 + ts).to_bytes(5, "big", signed=True),
    }


def _log(records: list[dict], instant: str = "002", schema: dict = SCHEMA):
    return parse_log_file(avro_block(instant, schema, records), f".f-0_{instant}.log.1_0-1-1")


def test_variant_field_reads_as_a_variant_column() -> None:
    records = [_record("k1", 1, DOCS[0]), _record("k2", 2, DOCS[1]), _record("k3", 3, None)]
    table = decode_data_block(_log(records).blocks[0])
    col = table.column("payload")
    assert isinstance(col.type, VariantExtensionType)
    got = variants_of(col)
    assert [None if v is None else v.to_json() for v in got] == [parse_json(DOCS[0]).to_json(), parse_json(DOCS[1]).to_json(), None]
    assert [v.metadata for v in got[:2]] == [parse_json(d).metadata for d in DOCS[:2]]
    history = table.column("history")
    assert isinstance(history.type.value_type, VariantExtensionType)
    assert [len(h) for h in history.to_pylist()] == [1, 2, 3]
    assert table.column("when").type == pa.timestamp("us", tz="UTC")
    assert table.column("amount").type == pa.decimal128(10, 2)
    assert str(table.column("amount")[0]) == "123.46"


def test_variant_log_records_merge_over_a_base_with_a_variant_column() -> None:
    old = decode_data_block(_log([_record("k1", 1, '{"old": true}'), _record("k2", 1, "2")], "001").blocks[0])
    logs = [_log([_record("k1", 2, '{"new": [1, 2]}')], "002")]
    out = merge_file_slice(old, logs, key_fields="_hoodie_record_key", ordering_field="ts", valid_instants={"002"})
    assert isinstance(out.column("payload").type, VariantExtensionType)
    assert [v.to_json() for v in variants_of(out.column("payload"))] == ['{"new":[1,2]}', "2"]
    # a base read without the extension type (its storage struct) takes the log's Variants too
    plain = old.set_column(2, "payload", pa.chunked_array([c.storage for c in old.column("payload").chunks]))
    out = merge_file_slice(plain, logs, key_fields="_hoodie_record_key", ordering_field="ts", valid_instants={"002"})
    assert out.column("payload").type == plain.schema.field("payload").type
    assert out.column("payload").to_pylist()[0]["value"] == parse_json('{"new": [1, 2]}').value


def test_malformed_variant_bytes_raise_a_named_error() -> None:
    bad = _record("k1", 1, DOCS[0])
    bad["payload"] = {"metadata": b"\x01\x00", "value": b"\x07\xff"}
    with pytest.raises(MalformedVariantError):
        decode_data_block(_log([bad]).blocks[0])


def test_a_variant_record_needs_metadata_and_value() -> None:
    wrong = {**VARIANT, "fields": [{"name": "value", "type": "bytes"}]}
    schema = {**SCHEMA, "fields": [SCHEMA["fields"][0], {"name": "payload", "type": wrong}]}
    records = [{"_hoodie_record_key": "k", "payload": {"value": b"\x00"}}]
    with pytest.raises(HudiLogFormatError, match="metadata and value"):
        decode_data_block(_log(records, schema=schema).blocks[0])


def _group(name: str, typed: str) -> dict:
    return {"type": "record", "name": name, "fields": [
        {"name": "value", "type": ["null", "bytes"]}, {"name": "typed_value", "type": ["null", typed]}]}


SHREDDED = {
    "type": "record",
    "name": "shredded",
    "logicalType": "variant",
    "fields": [
        {"name": "metadata", "type": "bytes"},
        {"name": "value", "type": ["null", "bytes"]},
        {"name": "typed_value", "type": ["null", {"type": "record", "name": "tv", "fields": [
            {"name": "a", "type": _group("ga", "long")}, {"name": "b", "type": _group("gb", "string")}]}]},
    ],
}


def test_a_shredded_variant_record_reads_unshredded() -> None:
    from varlake.shred.shred import shred
    from varlake.shred.unshred import UNSHREDDED_TYPE

    docs = ['{"a": 1, "b": "x"}', '{"a": "s", "c": [1]}', "7", '{"b": null}']
    variants = [parse_json(d) for d in docs]
    storage = pa.array([{"metadata": v.metadata, "value": v.value} for v in variants] + [None], type=UNSHREDDED_TYPE)
    parts = shred(storage, pa.struct([("a", pa.int64()), ("b", pa.string())])).to_pylist()
    assert parts[0]["value"] is None and parts[0]["typed_value"]["a"]["typed_value"] == 1, "really shredded"
    schema = {"type": "record", "name": "e", "fields": [
        {"name": "_hoodie_record_key", "type": "string"}, {"name": "p", "type": ["null", SHREDDED]}]}
    records = [{"_hoodie_record_key": str(i), "p": p} for i, p in enumerate(parts)]
    table = decode_data_block(_log(records, schema=schema).blocks[0])
    assert isinstance(table.column("p").type, VariantExtensionType)
    assert table.column("p").type.storage_type == UNSHREDDED_TYPE
    got = variants_of(table.column("p"))
    assert [None if v is None else v.to_json() for v in got] == [v.to_json() for v in variants] + [None]
