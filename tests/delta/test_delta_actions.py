"""Actions: JSON round trips, reconciliation keys, commit-file parsing and its errors."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from varlake.delta import constants as C
from varlake.delta.actions import (
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    action_to_json,
    dv_unique_id,
)
from varlake.delta.commit_file import parse_commit, parse_line
from varlake.errors import CorruptCommitError, CorruptLogError, UnknownActionError

text = st.text(min_size=1, max_size=12)
smap = st.dictionaries(text, st.one_of(st.none(), text), max_size=3)

adds = st.builds(
    AddFile,
    path=text,
    size=st.integers(0, 2**40),
    partition_values=smap,
    modification_time=st.integers(0, 2**45),
    data_change=st.booleans(),
    stats=st.one_of(st.none(), st.just('{"numRecords":3}')),
    tags=st.one_of(st.none(), smap),
)
removes = st.builds(
    RemoveFile,
    path=text,
    deletion_timestamp=st.one_of(st.none(), st.integers(0, 2**45)),
    data_change=st.booleans(),
    size=st.one_of(st.none(), st.integers(0, 2**40)),
)
others = st.one_of(
    st.builds(Txn, app_id=text, version=st.integers(0, 2**40)),
    st.builds(DomainMetadata, domain=text, configuration=text, removed=st.booleans()),
    st.builds(
        Protocol,
        min_reader_version=st.just(3),
        min_writer_version=st.just(7),
        reader_features=st.just(("variantType",)),
        writer_features=st.just(("variantType", "appendOnly")),
    ),
    st.builds(
        Metadata,
        id=text,
        schema_string=st.just('{"type":"struct","fields":[]}'),
        configuration=smap.map(lambda d: {k: v or "" for k, v in d.items()}),
    ),
)


@given(st.lists(st.one_of(adds, removes, others), min_size=1, max_size=8))
def test_commit_round_trip(actions: list) -> None:
    data = "\n".join(action_to_json(a) for a in actions).encode()
    assert parse_commit(data, "v.json") == actions


def test_json_field_names_follow_protocol() -> None:
    add = AddFile("a.parquet", 10, {"p": "1"}, 5, True, '{"numRecords":1}')
    assert json.loads(action_to_json(add)) == {
        "add": {
            "path": "a.parquet",
            "partitionValues": {"p": "1"},
            "size": 10,
            "modificationTime": 5,
            "dataChange": True,
            "stats": '{"numRecords":1}',
        }
    }
    assert parse_line(action_to_json(add), "x") == add
    rm = add.remove(99)
    assert json.loads(action_to_json(rm))["remove"]["deletionTimestamp"] == 99
    assert rm.key == add.key == ("a.parquet", None)
    assert add.parsed_stats == {"numRecords": 1} and add.num_records == 1


def test_deletion_vector_unique_id() -> None:
    dv = {
        "storageType": "u",
        "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
        "offset": 4,
        "sizeInBytes": 40,
        "cardinality": 6,
    }
    assert dv_unique_id(dv) == "uab^-aqEH.-t@S}K{vb[*k^@4"
    assert dv_unique_id({"storageType": "i", "pathOrInlineDv": "wi5b", "sizeInBytes": 40, "cardinality": 6}) == "iwi5b"
    assert AddFile("f", 1, deletion_vector=dv).key == ("f", "uab^-aqEH.-t@S}K{vb[*k^@4")


def test_preview_feature_names_read_as_features() -> None:
    p = Protocol(3, 7, ("variantType-preview", "variantShredding-preview"), ("variantShredding-preview",))
    assert p.reader_feature_set == {C.VARIANT_TYPE, C.VARIANT_SHREDDING}
    assert p.writer_feature_set == {C.VARIANT_SHREDDING}


def test_unknown_fields_are_ignored_and_ignorable_actions_skipped() -> None:
    data = b"\n".join(
        [
            b'{"commitInfo":{"timestamp":1,"operation":"WRITE","anything":{"x":1}}}',
            b'{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"futureField":7}}',
            b'{"cdc":{"path":"_change_data/c","partitionValues":{},"size":1,"dataChange":false}}',
            b'{"sidecar":{"path":"s.parquet","sizeInBytes":1,"modificationTime":1}}',
            b'{"checkpointMetadata":{"version":1}}',
        ]
    )
    actions = parse_commit(data, "x.json")
    assert [type(a) for a in actions] == [CommitInfo, AddFile]
    assert actions[0].operation == "WRITE" and actions[0].timestamp == 1


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        (
            b'{"add":{"path":"a","size":1}}\n{"add":{"path":"b","si',
            CorruptCommitError,
            "v.json line 2: truncated or invalid JSON",
        ),
        (b"", CorruptCommitError, "v.json: empty commit file"),
        (b'{"frobnicate":{"x":1}}', UnknownActionError, "v.json line 1: unknown action 'frobnicate'"),
        (b'{"add":{"size":1}}', CorruptCommitError, "missing required field 'path'"),
        (b'{"add":{"path":"a","size":"big"}}', CorruptCommitError, "field 'size' has type str, expected int"),
        (b'{"add":{"path":"a","size":true}}', CorruptCommitError, "field 'size' has type bool"),
        (b'{"add":{"path":"a","size":1},"remove":{"path":"b"}}', CorruptCommitError, "exactly one action key"),
        (b"[1,2]", CorruptCommitError, "exactly one action key"),
        (b'{"txn":"x"}', CorruptCommitError, "must be a JSON object"),
        (b'{"add":{"path":"a","size":1,"partitionValues":{"p":3}}}', CorruptCommitError, "must map strings to strings"),
        (b"\xff\xfe", CorruptCommitError, "not UTF-8"),
        (
            b'{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":"variantType"}}',
            CorruptCommitError,
            "list of strings",
        ),
    ],
)
def test_bad_commit_content_raises_named_error(data: bytes, error: type, message: str) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        parse_commit(data, "v.json")
    assert info.value.path is not None and info.value.path.startswith("v.json")


def test_bad_stats_json_raises_on_access() -> None:
    add = AddFile("a.parquet", 1, stats="{not json")
    with pytest.raises(CorruptLogError, match="stats of file 'a.parquet'"):
        _ = add.parsed_stats
