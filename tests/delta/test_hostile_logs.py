"""Hostile ``_delta_log`` files written by hand (issue 11, item 5 and the reliability suite).

Every case opens, scans, appends to and checkpoints the table and expects the named
``VarlakeError`` subclass whose message names the file, the line (for commits) and the
field -- never a raw ``RecursionError``, ``OverflowError``, ``KeyError``, ``ValueError``...
-- and nothing written outside the table root. Nesting limits are the module constants
``json_fields.MAX_JSON_DEPTH`` (commit lines and other log JSON, Jackson's default 1000),
``schema.MAX_SCHEMA_JSON_DEPTH`` and ``schema.MAX_NESTING_DEPTH`` (Arrow's Parquet schema depth).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pytest

import varlake
from hostile import PROTOCOL, add, metadata, nothing_outside, write_commit
from varlake.delta.actions import AddFile
from varlake.delta.json_fields import MAX_JSON_DEPTH, json_depth, load_json
from varlake.delta.schema import (
    MAX_NESTING_DEPTH,
    MAX_SCHEMA_JSON_DEPTH,
    ArrayType,
    PrimitiveType,
    StructField,
    StructType,
    from_arrow_schema,
    parse_schema,
)
from varlake.errors import (
    CorruptCheckpointError,
    CorruptCommitError,
    CorruptLogError,
    MissingCommitError,
    PartitionValueError,
    SchemaParseError,
    UnsafePathError,
    VarlakeError,
)

OPS: dict[str, Callable[[Path], Any]] = {
    "open": lambda root: varlake.Table(root).snapshot(),
    "scan": lambda root: varlake.Table(root).scan().to_arrow(),
    "append": lambda root: varlake.Table(root).append([{"id": 1}]),
    "checkpoint": lambda root: varlake.Table(root).checkpoint(),
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A table root two levels below ``tmp_path``, so an escape by ``../..`` would be seen."""
    return tmp_path / "a" / "b" / "t"


def _refused(root: Path, around: Path, error: type[VarlakeError], match: str) -> None:
    for name, op in OPS.items():
        with nothing_outside(root, around):
            with pytest.raises(error, match=match):
                op(root)


def _nested_structs(levels: int) -> str:
    t = '"long"'
    for _ in range(levels):
        t = '{"type":"struct","fields":[{"name":"a","type":' + t + ',"nullable":true,"metadata":{}}]}'
    return '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},' \
        '{"name":"x","type":' + t + ',"nullable":true,"metadata":{}}]}'


def _nested_arrays(levels: int) -> str:
    t = '"long"'
    for _ in range(levels):
        t = '{"type":"array","elementType":' + t + ',"containsNull":true}'
    return '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},' \
        '{"name":"x","type":' + t + ',"nullable":true,"metadata":{}}]}'


# --- RecursionError cases ------------------------------------------------------------------------


def test_a_line_of_100000_brackets_is_refused_before_decoding(root: Path, tmp_path: Path) -> None:
    path = write_commit(root, 0, PROTOCOL, metadata(), "[" * 100_000)
    _refused(root, tmp_path, CorruptCommitError, f"{path} line 3: the log line nests JSON 100000 levels deep.*{MAX_JSON_DEPTH}")


@pytest.mark.parametrize(
    "schema, what",
    [
        (_nested_structs(330), "nests JSON 994 levels"),
        (_nested_arrays(5000), "nests JSON 5003 levels"),
        (_nested_structs(200), "nests JSON 604 levels"),
        (_nested_structs(MAX_NESTING_DEPTH), "deeper than 99 Parquet levels"),  # JSON fits, Parquet would not
        (_nested_arrays(50), "deeper than 99 Parquet levels"),
    ],
    ids=["330-structs", "5000-arrays", "200-structs", "99-structs", "50-arrays"],
)
def test_a_schema_nested_too_deeply_is_a_schema_parse_error(root: Path, tmp_path: Path, schema: str, what: str) -> None:
    write_commit(root, 0, PROTOCOL, metadata(schema))
    _refused(root, tmp_path, SchemaParseError, f"{root} metaData.schemaString.*{what}")


def test_the_deepest_schema_arrow_can_store_round_trips(root: Path) -> None:
    """98 nested structs in a column (Parquet depth 99) is the limit: it reads and writes."""
    t: pa.DataType = pa.int64()
    for _ in range(MAX_NESTING_DEPTH - 1):
        t = pa.struct([("a", t)])
    table = varlake.Table.create(root, pa.schema([("id", pa.int64()), ("x", t)]))
    table.append([{"id": 1, "x": None}])
    assert table.scan().to_arrow().column("id").to_pylist() == [1]
    schema = varlake.Table(root).schema
    assert str(schema) and repr(schema)  # printing the deepest schema does not recurse without bound
    deeper = pa.schema([("id", pa.int64()), ("x", pa.struct([("a", t)]))])
    with pytest.raises(SchemaParseError, match="deeper than 99"):
        from_arrow_schema(deeper)


def test_a_schema_deeper_than_the_limit_cannot_be_built_or_printed() -> None:
    t: Any = PrimitiveType("long")
    with pytest.raises(SchemaParseError, match="exceeds the limit of 99"):
        for _ in range(200):
            t = StructType((StructField("a", t),))
    arrays: Any = PrimitiveType("long")
    with pytest.raises(SchemaParseError, match="exceeds the limit of 99"):
        for _ in range(60):
            arrays = ArrayType(arrays)
    deep: Any = pa.int64()
    for _ in range(2000):
        deep = pa.list_(deep)
    with pytest.raises(SchemaParseError, match="deeper than 99"):
        from_arrow_schema(pa.schema([("x", deep)]))


def test_schema_json_limit_is_what_the_deepest_schema_needs() -> None:
    text = _nested_structs(MAX_NESTING_DEPTH - 1)
    assert json_depth(text) <= MAX_SCHEMA_JSON_DEPTH
    assert len(list(parse_schema(text).fields)) == 2


def test_deeply_nested_stats_are_ignored_by_scans_and_named_when_asked_for(root: Path, tmp_path: Path) -> None:
    """Like Delta (unparsable stats read as null), a file whose stats nest too deeply is never
    skipped; asking for its parsed stats is a named error naming the file and the field."""
    table = varlake.Table.create(root, "id bigint")
    table.append([{"id": 1}, {"id": 2}])
    deep = '{"numRecords":2,"minValues":' + '{"a":' * 100_000 + "1" + "}" * 100_000 + "}"
    log = root / "_delta_log" / f"{1:020d}.json"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    for obj in lines:
        if "add" in obj:
            obj["add"]["stats"] = deep
    log.write_text("\n".join(json.dumps(x) for x in lines))
    with nothing_outside(root, tmp_path):
        t = varlake.Table(root)
        assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2]
        assert sorted(t.scan().where("id = 2").to_arrow().column("id").to_pylist()) == [2]
        (f,) = t.files()
        with pytest.raises(CorruptLogError, match=f"stats of file '{f.path}'.*add.stats nests JSON 100001 levels"):
            f.parsed_stats
        t.append([{"id": 3}])
        t.checkpoint()
        assert sorted(varlake.Table(root).scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]


def test_json_nested_up_to_the_limit_decodes_even_from_a_deep_stack() -> None:
    text = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    limit = sys.getrecursionlimit()

    def at_depth(n: int) -> Any:
        return at_depth(n - 1) if n else load_json(text, "w", "x")

    value = at_depth(300)
    for _ in range(MAX_JSON_DEPTH - 1):
        (value,) = value
    assert value == [] and sys.getrecursionlimit() == limit
    with pytest.raises(CorruptCommitError, match="w: x nests JSON 1001 levels deep"):
        load_json("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), "w", "x")


def test_json_depth_ignores_brackets_in_strings() -> None:
    assert json_depth('{"a":"[[[[{{{{","b":[1,{"c":"]]]}}}"}]}') == 3
    assert json_depth('"\\"[[[["') == 0
    assert json_depth("[" * 5000) == 5000


# --- OverflowError cases: integers must fit Delta's long ------------------------------------------


@pytest.mark.parametrize(
    "line, name",
    [
        (add(size=2**100), "size"),
        (add(modificationTime=10**30), "modificationTime"),
        (add(baseRowId=-(2**63) - 1), "baseRowId"),
        ({"remove": {"path": "a.parquet", "deletionTimestamp": -(10**30), "dataChange": True}}, "deletionTimestamp"),
        ({"txn": {"appId": "app", "version": 10**30}}, "version"),
        ({"txn": {"appId": "app", "version": 1, "lastUpdated": 2**64}}, "lastUpdated"),
        (metadata(createdTime=10**30), "createdTime"),
        ({"protocol": {"minReaderVersion": 2**40, "minWriterVersion": 2}}, "minReaderVersion"),
        (add(deletionVector={"storageType": "u", "pathOrInlineDv": "x", "offset": 2**31, "sizeInBytes": 1, "cardinality": 1}), "offset"),
        (add(deletionVector={"storageType": "u", "pathOrInlineDv": "x", "sizeInBytes": 1, "cardinality": 2**63}), "cardinality"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_integers_that_do_not_fit_a_long_are_refused_at_parse_time(root: Path, tmp_path: Path, line: dict, name: str) -> None:
    write_commit(root, 0, PROTOCOL, metadata())
    path = write_commit(root, 1, line)
    _refused(root, tmp_path, CorruptCommitError, f"{path} line 1: .*field '{name}' = .* does not fit")


def test_the_largest_long_is_accepted_and_checkpointed(root: Path, tmp_path: Path) -> None:
    write_commit(root, 0, PROTOCOL, metadata())
    write_commit(root, 1, {"txn": {"appId": "app", "version": 2**63 - 1, "lastUpdated": -(2**63)}})
    with nothing_outside(root, tmp_path):
        varlake.Table(root).checkpoint()
        assert varlake.Table(root).snapshot().app_version("app") == 2**63 - 1


def test_an_integer_literal_too_long_to_decode_is_named(root: Path, tmp_path: Path) -> None:
    write_commit(root, 0, PROTOCOL, metadata())
    path = write_commit(root, 1, '{"add":{"path":"a.parquet","size":' + "9" * 5000 + ',"modificationTime":1,"dataChange":true}}')
    _refused(root, tmp_path, CorruptCommitError, f"{path} line 1: truncated or invalid JSON")


# --- KeyError: partition columns the schema does not have ----------------------------------------


def test_partition_columns_naming_a_missing_column(root: Path, tmp_path: Path) -> None:
    write_commit(root, 0, PROTOCOL, metadata(partition_columns=["nope"]))
    _refused(root, tmp_path, PartitionValueError, "metaData.partitionColumns: partition column 'nope' is not a top-level column")


# --- paths that leave the root ------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "%2e%2e/%2e%2e/evil.parquet",
        "%2E%2E%2Fevil.parquet",
        "file:///etc/passwd",
        "file://localhost/etc/passwd",
        "s3://other-bucket/x.parquet",
        "a/../../evil.parquet",
        "..%5cevil.parquet",
        "_delta_log/00000000000000000000.json",
        "%00",
    ],
)
def test_file_paths_that_leave_the_root_are_refused(root: Path, tmp_path: Path, path: str) -> None:
    write_commit(root, 0, PROTOCOL, metadata())
    log = write_commit(root, 1, add(path))
    _refused(root, tmp_path, UnsafePathError, f"{log} line 1")


# --- damaged logs -------------------------------------------------------------------------------


def test_a_version_gap_names_the_missing_commit(root: Path, tmp_path: Path) -> None:
    write_commit(root, 0, PROTOCOL, metadata())
    write_commit(root, 2, add("b.parquet"))
    _refused(root, tmp_path, MissingCommitError, f"{root / '_delta_log' / (f'{1:020d}.json')}: commit for version 1 is missing")


def test_a_truncated_last_line_names_file_and_line(root: Path, tmp_path: Path) -> None:
    write_commit(root, 0, PROTOCOL, metadata())
    path = write_commit(root, 1, add("a.parquet"), json.dumps(add("b.parquet"))[:-7])
    _refused(root, tmp_path, CorruptCommitError, f"{path} line 2: truncated or invalid JSON")


@pytest.mark.parametrize("line", ["[1, 2]", '"add"', "5", "null", "true", "{}", '{"add": {}, "remove": {}}', '{"add": [1]}', '{"add": "x"}'])
def test_a_line_that_is_not_one_action_object(root: Path, tmp_path: Path, line: str) -> None:
    write_commit(root, 0, PROTOCOL, metadata())
    path = write_commit(root, 1, line)
    _refused(root, tmp_path, CorruptCommitError, f"{path} line 1: ")


@pytest.mark.parametrize(
    "line, name",
    [
        (add(size="12"), "size"),
        (add(size=1.5), "size"),
        (add(size=True), "size"),
        ('{"add":{"path":"a.parquet","size":NaN,"modificationTime":1,"dataChange":true}}', "size"),
        ('{"add":{"path":"a.parquet","size":Infinity,"modificationTime":1,"dataChange":true}}', "size"),
        (add(path=5), "path"),
        (add(dataChange="yes"), "dataChange"),
        (add(partitionValues=[1, 2]), "partitionValues"),
        (add(partitionValues={"p": 1}), "partitionValues"),
        (add(partitionValues={"p": ["x"]}), "partitionValues"),
        (add(stats=5), "stats"),
        (add(tags={"a": {"b": 1}}), "tags"),
        (add(deletionVector=[1]), "deletionVector"),
        (add(deletionVector={"storageType": "u", "pathOrInlineDv": "x", "offset": "1", "sizeInBytes": 1, "cardinality": 1}), "offset"),
        (add(deletionVector={"storageType": 1, "pathOrInlineDv": "x", "sizeInBytes": 1, "cardinality": 1}), "storageType"),
        ({"remove": {"path": "a.parquet", "deletionTimestamp": "soon"}}, "deletionTimestamp"),
        ({"txn": {"appId": 7, "version": 1}}, "appId"),
        ({"protocol": {"minReaderVersion": "1", "minWriterVersion": 2}}, "minReaderVersion"),
        ({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": "x"}}, "readerFeatures"),
        (metadata(schemaString={"type": "struct"}), "schemaString"),
        (metadata(partitionColumns=[1]), "partitionColumns"),
        (metadata(configuration={"k": 1}), "configuration"),
        (metadata(format="parquet"), "format"),
        ({"domainMetadata": {"domain": "d", "configuration": 5}}, "configuration"),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 30 else None,
)
def test_wrong_json_types_name_the_field(root: Path, tmp_path: Path, line: Any, name: str) -> None:
    write_commit(root, 0, PROTOCOL, metadata())
    path = write_commit(root, 1, line)
    _refused(root, tmp_path, CorruptCommitError, f"{path} line 1: .*{name}")


def test_garbage_checkpoint_is_a_named_error(root: Path, tmp_path: Path) -> None:
    write_commit(root, 0, PROTOCOL, metadata())
    write_commit(root, 1, add("a.parquet"))
    ckpt = root / "_delta_log" / f"{1:020d}.checkpoint.parquet"
    ckpt.write_bytes(b"PAR1" + os.urandom(64) + b"PAR1")
    _refused(root, tmp_path, CorruptCheckpointError, f"{ckpt}: unreadable checkpoint")


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe garbage",
        b"[" * 100_000,
        b'{"version": 10000000000000000000000000000000}',
        b'{"version": "1"}',
        b'{"version": -5}',
        b'{"version": 1, "size": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        b'{"version": 7}',
        b"",
    ],
    ids=["not-utf8", "deep", "huge", "string", "negative", "deep-field", "missing-checkpoint", "empty"],
)
def test_garbage_last_checkpoint_is_ignored(root: Path, tmp_path: Path, content: bytes) -> None:
    """``_last_checkpoint`` is only a hint: when it cannot be used the log is listed instead."""
    table = varlake.Table.create(root, "id bigint")
    table.append([{"id": 1}])
    table.checkpoint()
    table.append([{"id": 2}])
    (root / "_delta_log" / "_last_checkpoint").write_bytes(content)
    with nothing_outside(root, tmp_path):
        t = varlake.Table(root)
        assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2]
        t.append([{"id": 3}])
        t.checkpoint()
        assert sorted(varlake.Table(root).scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]


# --- stats: NaN, Infinity, huge and wrong-typed numbers never break a scan ----------------------


@pytest.mark.parametrize(
    "stats",
    [
        '{"numRecords":2,"minValues":{"id":NaN},"maxValues":{"id":Infinity},"nullCount":{"id":-Infinity}}',
        '{"numRecords":2,"minValues":{"id":1e999999999},"maxValues":{"id":-1e999999999},"nullCount":{"id":1e400}}',
        '{"numRecords":100000000000000000000000000000,"minValues":{"id":100000000000000000000000000000},"nullCount":{"id":-1}}',
        '{"numRecords":"2","minValues":[1],"maxValues":"x","nullCount":{"id":{"a":1}}}',
        '{"numRecords":2,"minValues":{"id":1,"d":1e999999999},"maxValues":{"id":2,"d":"NaN"}}',
        "[1,2,3]",
        "not json",
        '{"numRecords":' + "9" * 5000 + "}",
    ],
    ids=["nan-inf", "huge-exponent", "huge-int", "wrong-types", "decimal-out-of-range", "array", "garbage", "long-literal"],
)
def test_hostile_stats_never_break_a_scan(root: Path, tmp_path: Path, stats: str) -> None:
    """Unusable bounds (not numbers, out of the column type's range) are left out: the file is
    read, never skipped on their account."""
    table = varlake.Table.create(root, "id bigint, d decimal(10,2)")
    table.append([{"id": 1, "d": None}, {"id": 2, "d": None}])
    log = root / "_delta_log" / f"{1:020d}.json"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    for obj in lines:
        if "add" in obj:
            obj["add"]["stats"] = stats
    log.write_text("\n".join(json.dumps(x) for x in lines))
    with nothing_outside(root, tmp_path):
        t = varlake.Table(root)
        assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2]
        assert t.scan().where("id = 2").to_arrow().column("id").to_pylist() == [2]
        assert t.scan().where("d > 1.5").to_arrow().num_rows == 0
        t.append([{"id": 3, "d": None}])
        t.checkpoint()
        assert varlake.Table(root).scan().to_arrow().num_rows == 3


def test_a_commit_info_nested_up_to_the_limit_is_kept(root: Path, tmp_path: Path) -> None:
    deep = "[" * (MAX_JSON_DEPTH - 3) + "]" * (MAX_JSON_DEPTH - 3)
    write_commit(root, 0, '{"commitInfo":{"x":' + deep + "}}", PROTOCOL, metadata())
    with nothing_outside(root, tmp_path):
        t = varlake.Table(root)
        assert t.history()[0].version == 0
        t.append([{"id": 1}])
        assert t.scan().to_arrow().num_rows == 1


def test_a_huge_in_commit_timestamp_is_not_a_raw_error(root: Path, tmp_path: Path) -> None:
    table = varlake.Table.create(root, "id bigint", properties={"delta.enableInCommitTimestamps": "true"})
    table.append([{"id": 1}])
    log = root / "_delta_log" / f"{1:020d}.json"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    for obj in lines:
        if "commitInfo" in obj:
            obj["commitInfo"]["inCommitTimestamp"] = 10**30
    log.write_text("\n".join(json.dumps(x) for x in lines))
    with nothing_outside(root, tmp_path):
        entries = varlake.Table(root).history()
        for entry in entries:
            try:
                entry.datetime
            except VarlakeError:
                pass
        assert varlake.Table(root).scan().to_arrow().num_rows == 1


def test_add_file_parsed_stats_limit() -> None:
    add_file = AddFile("x.parquet", 1, stats="[" * (MAX_JSON_DEPTH + 5))
    with pytest.raises(CorruptLogError, match="stats of file 'x.parquet'"):
        add_file.parsed_stats


def test_inline_stats_objects_are_kept_or_named(root: Path, tmp_path: Path) -> None:
    """Some writers inline ``stats`` as an object: kept as text; nested too deeply to be kept
    as text, it is a named error for the line."""
    write_commit(root, 0, PROTOCOL, metadata())
    write_commit(root, 1, add(stats={"numRecords": 1}))
    (f,) = varlake.Table(root).files()
    assert f.num_records == 1
    deep = "[" * (MAX_JSON_DEPTH - 4) + "]" * (MAX_JSON_DEPTH - 4)
    path = write_commit(root, 2, '{"add":{"path":"b.parquet","size":1,"modificationTime":1,"dataChange":true,"stats":{"x":' + deep + "}}}")
    _refused(root, tmp_path, CorruptCommitError, f"{path} line 1: add.stats cannot be kept as JSON text")


def test_a_checkpoint_string_that_is_not_utf8_is_named(root: Path, tmp_path: Path) -> None:
    """pyarrow does not check UTF-8 when it reads Parquet strings; the checkpoint reader does."""
    import pyarrow.parquet as pq

    table = varlake.Table.create(root, "id bigint")
    table.append([{"id": 1}])
    table.checkpoint()
    ckpt = root / "_delta_log" / f"{1:020d}.checkpoint.parquet"
    rows = pq.read_table(ckpt)
    add_col = rows.column("add").combine_chunks()
    raw = pa.array([None if p is None else b"\xff" + p.encode() for p in add_col.field("path").to_pylist()], pa.binary())
    bad = pa.Array.from_buffers(pa.string(), len(raw), raw.buffers(), null_count=raw.null_count)
    fields = list(add_col.type)
    children = [bad if f.name == "path" else add_col.field(f.name) for f in fields]
    rows = rows.set_column(rows.schema.get_field_index("add"), "add", pa.StructArray.from_arrays(children, fields=fields, mask=add_col.is_null()))
    pq.write_table(rows, ckpt)
    _refused(root, tmp_path, CorruptCheckpointError, f"{ckpt}: unreadable checkpoint Parquet: .*UTF8")
