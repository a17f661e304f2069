"""Hudi merge semantics of ``merge_file_slice`` on handmade log files: ordering, deletes,
delete markers, rollbacks, uncommitted and corrupt blocks, log file order, schemas."""

from __future__ import annotations

import pyarrow as pa
import pytest

from hudi_log_writer import ROW_SCHEMA, avro_block, block, delete_block, parquet_block, rollback_block, rows
from varlake.errors import HudiLogFormatError, HudiLogMergeError, HudiLogUnsupportedError
from varlake.hudi.log_format import BlockType, parse_log_file, parse_log_file_name
from varlake.hudi.log_merge import COMMIT_TIME_ORDERING, MergeSettings, infer_merge_mode, merge_file_slice, merge_settings, record_keys

FID = "abc-0"


def log(instant: str, *blocks: bytes, version: int = 1, token: str = "0-1-2"):
    return parse_log_file(b"".join(blocks), f".{FID}_{instant}.log.{version}_{token}")


def base(*items: tuple[str, int, str]) -> pa.Table:
    return pa.table(
        {
            "_hoodie_commit_time": ["001"] * len(items),
            "_hoodie_record_key": [k for k, _, _ in items],
            "id": [k for k, _, _ in items],
            "ts": pa.array([t for _, t, _ in items], pa.int64()),
            "v": [v for _, _, v in items],
        }
    )


def merged(base_table, logs, valid=("001", "002", "003", "004"), **kw) -> dict[str, tuple[int, str]]:
    kw.setdefault("key_fields", "_hoodie_record_key")
    kw.setdefault("ordering_field", "ts")
    out = merge_file_slice(base_table, logs, valid_instants=set(valid), **kw)
    got = {r["id"]: (r["ts"], r["v"]) for r in out.to_pylist()}
    assert len(got) == out.num_rows, "one row per key"
    return got


def test_log_updates_and_inserts_over_the_base() -> None:
    b = base(("a", 1, "a0"), ("b", 1, "b0"))
    logs = [log("002", avro_block("002", ROW_SCHEMA, rows("002", ("a", 2, "a2"), ("c", 2, "c2"))))]
    assert merged(b, logs) == {"a": (2, "a2"), "b": (1, "b0"), "c": (2, "c2")}
    out = merge_file_slice(b, logs, key_fields="_hoodie_record_key", ordering_field="ts", valid_instants={"002"})
    assert out.schema == b.schema
    assert out.column("id").to_pylist() == ["a", "b", "c"], "base order, then new keys"


def test_event_time_ordering_keeps_the_greater_ordering_value() -> None:
    b = base(("a", 5, "a0"), ("b", 5, "b0"))
    logs = [log("002", avro_block("002", ROW_SCHEMA, rows("002", ("a", 4, "old"), ("b", 5, "tie"))))]
    assert merged(b, logs) == {"a": (5, "a0"), "b": (5, "tie")}
    # inside the logs too: the later write with a smaller ordering value loses
    logs2 = logs + [log("003", avro_block("003", ROW_SCHEMA, rows("003", ("b", 3, "late"))))]
    assert merged(b, logs2) == {"a": (5, "a0"), "b": (5, "tie")}


def test_commit_time_ordering_takes_the_latest_write() -> None:
    b = base(("a", 5, "a0"))
    logs = [log("002", avro_block("002", ROW_SCHEMA, rows("002", ("a", 4, "old"))))]
    assert merged(b, logs, merge_mode=COMMIT_TIME_ORDERING) == {"a": (4, "old")}
    assert merged(b, logs, ordering_field=None) == {"a": (4, "old")}


def test_delete_blocks() -> None:
    b = base(("a", 5, "a0"), ("b", 5, "b0"), ("c", 5, "c0"))
    logs = [log("002", delete_block("002", [("a", "", 0), ("b", "", 4), ("c", "", 6), ("zz", "", None)]))]
    # natural (0) deletes win; ordered ones only against a smaller or equal ordering value
    assert merged(b, logs) == {"b": (5, "b0")}
    assert merged(b, logs, merge_mode=COMMIT_TIME_ORDERING) == {}
    # a later insert replaces a natural delete; as in Hudi the logs merge first, then with
    # the base, so the base's greater ordering value wins over the re-inserted record
    again = logs + [log("003", avro_block("003", ROW_SCHEMA, rows("003", ("a", 1, "back"), ("c", 7, "c7"))))]
    assert merged(b, again) == {"a": (5, "a0"), "b": (5, "b0"), "c": (7, "c7")}
    assert merged(None, again) == {"a": (1, "back"), "c": (7, "c7")}


def test_is_deleted_marker() -> None:
    b = base(("a", 5, "a0"), ("b", 5, "b0"))
    logs = [log("002", avro_block("002", ROW_SCHEMA, rows("002", ("a", 6, "x"), ("b", 4, "x"), ("n", 1, "x"), deleted=True)))]
    assert merged(b, logs) == {"b": (5, "b0")}


def test_uncommitted_blocks_are_ignored() -> None:
    b = base(("a", 1, "a0"))
    logs = [log("002", avro_block("002", ROW_SCHEMA, rows("002", ("a", 2, "failed"))))]
    assert merged(b, logs, valid={"001"}) == {"a": (1, "a0")}
    # instants archived before the active timeline starts count as completed
    assert merged(b, logs, valid={"001"}, timeline_start="003") == {"a": (2, "failed")}


def test_rollback_cancels_the_target_instant_in_earlier_files() -> None:
    b = base(("a", 1, "a0"))
    logs = [
        log("002", avro_block("002", ROW_SCHEMA, rows("002", ("a", 2, "rolled back"), ("x", 2, "x")))),
        log("002", avro_block("003", ROW_SCHEMA, rows("003", ("b", 3, "b3"))), rollback_block("004", "002"), version=2),
    ]
    assert merged(b, logs) == {"a": (1, "a0"), "b": (3, "b3")}
    # the rolled-back instant's later blocks (after the command) count again, as in Hudi
    late = logs + [log("002", avro_block("002", ROW_SCHEMA, rows("002", ("c", 2, "c"))), version=3)]
    assert merged(b, late) == {"a": (1, "a0"), "b": (3, "b3"), "c": (2, "c")}


def test_log_files_merge_in_name_order() -> None:
    first = log("002", avro_block("002", ROW_SCHEMA, rows("002", ("a", 2, "first"))), version=1)
    second = log("002", avro_block("003", ROW_SCHEMA, rows("003", ("a", 2, "second"))), version=2)
    assert merged(None, [second, first]) == {"a": (2, "second")}
    assert parse_log_file_name(second.name) > parse_log_file_name(first.name)
    assert parse_log_file_name("x.parquet") is None


def test_corrupt_blocks_are_skipped() -> None:
    good = avro_block("002", ROW_SCHEMA, rows("002", ("a", 2, "a2")))
    later = avro_block("003", ROW_SCHEMA, rows("003", ("b", 3, "b3")))
    torn = avro_block("003", ROW_SCHEMA, rows("003", ("c", 3, "c3")))[:-20]
    # a torn block in the middle (the next magic follows) and at the end
    f = log("002", good, torn, later, torn)
    assert [b.block_type for b in f.blocks] == [BlockType.AVRO_DATA, BlockType.CORRUPT, BlockType.AVRO_DATA, BlockType.CORRUPT]
    assert merged(None, [f]) == {"a": (2, "a2"), "b": (3, "b3")}
    # a block whose trailing length disagrees with its size
    bad_tail = good[:-8] + (len(good)).to_bytes(8, "big")
    assert [b.block_type for b in log("002", bad_tail, later).blocks] == [BlockType.CORRUPT, BlockType.AVRO_DATA]


def test_bad_bytes_raise_named_errors() -> None:
    with pytest.raises(HudiLogFormatError, match="magic"):
        parse_log_file(b"#HUDX#" + bytes(40), "f")
    body = bytearray(avro_block("002", ROW_SCHEMA, rows("002", ("a", 2, "a2"))))
    body[14:18] = (7).to_bytes(4, "big")  # log format version
    with pytest.raises(HudiLogFormatError, match="log format version 7"):
        parse_log_file(bytes(body), "f")
    with pytest.raises(HudiLogUnsupportedError, match="HFile"):
        merged(None, [log("002", block(4, {0: "002"}, b"hfile"))])
    with pytest.raises(HudiLogUnsupportedError, match="command block type"):
        merged(None, [log("002", block(0, {0: "002", 1: "001", 3: "5"}, b""))])
    with pytest.raises(HudiLogUnsupportedError, match="merge mode"):
        merged(None, [], merge_mode="CUSTOM")


def test_parquet_blocks_and_schema_conformance() -> None:
    b = base(("a", 1, "a0"))
    extra = pa.table({"_hoodie_record_key": ["a", "d"], "id": ["a", "d"], "ts": pa.array([2, 2], pa.int32()), "w": [1, 2]})
    out = merge_file_slice(
        b, [log("002", parquet_block("002", extra))], key_fields="_hoodie_record_key", ordering_field="ts", valid_instants={"002"}
    )
    assert out.schema == b.schema
    assert out.to_pylist() == [
        {"_hoodie_commit_time": None, "_hoodie_record_key": "a", "id": "a", "ts": 2, "v": None},
        {"_hoodie_commit_time": None, "_hoodie_record_key": "d", "id": "d", "ts": 2, "v": None},
    ]
    bad = pa.table({"_hoodie_record_key": ["a"], "id": ["a"], "ts": ["not a number"]})
    with pytest.raises(HudiLogMergeError, match="'ts'"):
        merge_file_slice(b, [log("002", parquet_block("002", bad))], key_fields="_hoodie_record_key", ordering_field=None, valid_instants={"002"})
    with pytest.raises(HudiLogMergeError, match="missing"):
        merged(b, [], key_fields="nope")


def test_complex_record_keys_match_delete_records() -> None:
    t = pa.table({"k1": ["x", None, ""], "k2": pa.array([1, 2, 3], pa.int32())})
    assert record_keys(t, ["k1", "k2"]) == ["k1:x,k2:1", "k1:__null__,k2:2", "k1:__empty__,k2:3"]
    assert record_keys(t, "k2") == ["1", "2", "3"]
    b = base(("a", 1, "a0"), ("b", 1, "b0"))
    logs = [log("002", delete_block("002", [("id:a,v:a0", "", None)]))]
    assert merged(b, logs, key_fields=["id", "v"]) == {"b": (1, "b0")}


def test_infer_merge_mode() -> None:
    assert infer_merge_mode({"hoodie.record.merge.mode": "EVENT_TIME_ORDERING", "hoodie.table.ordering.fields": "ts,x"}) == (
        "EVENT_TIME_ORDERING",
        "ts",
    )
    v6 = {"hoodie.compaction.payload.class": "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload", "hoodie.table.precombine.field": "ts"}
    assert infer_merge_mode(v6) == ("COMMIT_TIME_ORDERING", "ts")
    with pytest.raises(HudiLogUnsupportedError, match="payload"):
        infer_merge_mode({"hoodie.compaction.payload.class": "com.example.Mine"})


def test_older_records_fit_an_evolved_schema() -> None:
    """Nested fields added later read as null in older log records; dropped ones go."""
    old = pa.table({
        "_hoodie_record_key": ["a"],
        "s": pa.array([{"x": 1, "gone": "g"}], pa.struct([("x", pa.int32()), ("gone", pa.string())])),
        "l": pa.array([[{"y": 1}]], pa.list_(pa.struct([("y", pa.int32())]))),
    })
    new_type_s = pa.struct([("x", pa.int64()), ("added", pa.string())])
    new_type_l = pa.list_(pa.field("element", pa.struct([("y", pa.int64()), ("z", pa.bool_())])))
    base_t = pa.table({
        "_hoodie_record_key": ["b"],
        "s": pa.array([{"x": 2, "added": "new"}], new_type_s),
        "l": pa.array([[{"y": 2, "z": True}]], new_type_l),
    })
    out = merge_file_slice(
        base_t, [log("002", parquet_block("002", old))], key_fields="_hoodie_record_key", ordering_field=None, valid_instants={"002"}
    )
    assert out.schema == base_t.schema
    assert out.to_pylist()[1] == {"_hoodie_record_key": "a", "s": {"x": 1, "added": None}, "l": [{"y": 1, "z": None}]}


def test_as_of_ends_the_scan_at_a_later_block() -> None:
    logs = [
        log("002", avro_block("002", ROW_SCHEMA, rows("002", ("a", 1, "a2")))),
        log("003", avro_block("004", ROW_SCHEMA, rows("004", ("b", 1, "b4"))), rollback_block("005", "002")),
    ]
    assert merged(None, logs, valid={"002", "004"}) == {"b": (1, "b4")}
    # as of 003 the scan stops at the block of 004, before the rollback
    assert merged(None, logs, valid={"002", "004"}, as_of="003") == {"a": (1, "a2")}


def test_partial_updates_fill_nulls_from_the_losing_version() -> None:
    b = base(("a", 5, "a0"), ("b", 5, "b0"), ("c", 5, "c0"))
    logs = [
        log("002", avro_block("002", ROW_SCHEMA, [
            {"_hoodie_record_key": "a", "id": "a", "ts": 6, "v": None},   # wins, keeps v from the base
            {"_hoodie_record_key": "b", "id": "b", "ts": 4, "v": None},   # loses; nothing to fill
            {"_hoodie_record_key": "d", "id": "d", "ts": 1, "v": None},
        ])),
        log("003", avro_block("003", ROW_SCHEMA, [
            {"_hoodie_record_key": "d", "id": "d", "ts": None, "v": "d3"},  # loses to ts 1, fills v
            {"_hoodie_record_key": "c", "id": "c", "ts": 9, "v": None, "_hoodie_is_deleted": True},
        ])),
    ]
    assert merged(b, logs, partial_update=True) == {"a": (6, "a0"), "b": (5, "b0"), "d": (1, "d3")}
    assert merged(b, logs) == {"a": (6, None), "b": (5, "b0"), "d": (1, None)}
    # commit-time ordering: the latest write wins and keeps older values where it has nulls
    assert merged(b, logs, partial_update=True, merge_mode=COMMIT_TIME_ORDERING) == {
        "a": (6, "a0"), "b": (4, "b0"), "d": (1, "d3"),
    }


def test_merge_settings_follow_rfc_97() -> None:
    pkg = "org.apache.hudi.common.model."
    partial = merge_settings({"hoodie.compaction.payload.class": pkg + "PartialUpdateAvroPayload", "hoodie.table.precombine.field": "ts"})
    assert partial == MergeSettings("EVENT_TIME_ORDERING", "ts", partial_update=True)
    assert merge_settings({"hoodie.compaction.payload.class": pkg + "OverwriteNonDefaultsWithLatestAvroPayload"}) == MergeSettings(
        "COMMIT_TIME_ORDERING", None, partial_update=True
    )
    dms = merge_settings({"hoodie.compaction.payload.class": pkg + "AWSDmsAvroPayload"})
    assert dms == MergeSettings("COMMIT_TIME_ORDERING", None, delete_marker=("Op", "D"))
    v9 = merge_settings({
        "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING",
        "hoodie.legacy.payload.class": pkg + "AWSDmsAvroPayload",
        "hoodie.table.partial.update.mode": "IGNORE_DEFAULTS",
        "hoodie.record.merge.property.hoodie.payload.delete.field": "op_type",
        "hoodie.record.merge.property.hoodie.payload.delete.marker": "X",
    })
    assert v9 == MergeSettings("COMMIT_TIME_ORDERING", None, partial_update=True, delete_marker=("op_type", "X"))
    with pytest.raises(HudiLogUnsupportedError, match="IGNORE_MARKERS"):
        merge_settings({"hoodie.record.merge.mode": "EVENT_TIME_ORDERING", "hoodie.table.partial.update.mode": "IGNORE_MARKERS"})
    with pytest.raises(HudiLogUnsupportedError, match="CUSTOM"):
        merge_settings({"hoodie.record.merge.mode": "CUSTOM", "hoodie.table.payload.class": "com.example.Mine"})
    # a delete marker column as the settings give it
    b = base(("a", 1, "a0"), ("b", 1, "b0"))
    logs = [log("002", avro_block("002", ROW_SCHEMA, rows("002", ("a", 2, "D"), ("b", 2, "b2"))))]
    assert merged(b, logs, **MergeSettings("COMMIT_TIME_ORDERING", "ts", delete_marker=("v", "D")).as_kwargs()) == {"b": (2, "b2")}


def test_partial_rows_after_a_dropped_base_row_keep_their_fill() -> None:
    b = base(("x", 1, "x0"), ("y", 1, "y0"), ("z", 1, "z0"))
    logs = [log("002", delete_block("002", [("x", "", None)]), avro_block("002", ROW_SCHEMA, [
        {"_hoodie_record_key": "z", "id": "z", "ts": 2, "v": None},
        {"_hoodie_record_key": "n", "id": "n", "ts": 2, "v": None},
        {"_hoodie_record_key": "n", "id": "n", "ts": 1, "v": "n1"},
    ]))]
    out = merge_file_slice(b, logs, key_fields="_hoodie_record_key", ordering_field="ts", valid_instants={"002"}, partial_update=True)
    assert [(r["id"], r["ts"], r["v"]) for r in out.to_pylist()] == [("y", 1, "y0"), ("z", 2, "z0"), ("n", 2, "n1")]
