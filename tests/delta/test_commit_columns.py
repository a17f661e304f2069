"""A big commit read column-wise (``delta.commit_columns``) gives the actions, the replayed
state and the errors that reading it line by line gives."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.delta.commit_columns import MIN_ROWS, ColumnarCommit, columnar_commit
from varlake.delta.commit_file import parse_commit_lines
from varlake.delta.file_table import table_to_adds
from varlake.delta.paths import relative_data_path
from varlake.delta.replay import replay
from varlake.errors import VarlakeError

ROOT = "/data/t"
HEAD = [
    '{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}',
    json.dumps({"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(
        {"type": "struct", "fields": [{"name": "p", "type": "string", "nullable": True, "metadata": {}}]}),
        "partitionColumns": ["p"], "configuration": {}, "createdTime": 0}}),
]  # fmt: skip


def _add(i: int, **over: object) -> dict:
    body = {"path": f"p={i % 3}/f{i}.parquet", "partitionValues": {"p": str(i % 3)}, "size": 10 + i,
            "modificationTime": i, "dataChange": True, "stats": '{"numRecords":1}'}  # fmt: skip
    body.update(over)
    return {k: v for k, v in body.items() if v is not ...}


VARIANTS = {
    "plain": lambda i: json.dumps({"add": _add(i)}, separators=(",", ":")),
    "spaced": lambda i: json.dumps({"add": _add(i)}),
    "null value": lambda i: json.dumps({"add": _add(i, partitionValues={"p": None})}),
    "absent key": lambda i: json.dumps({"add": _add(i, partitionValues={})}),
    "other key": lambda i: json.dumps({"add": _add(i, partitionValues={"p": "1", "q": "z"})}),
    "no values": lambda i: json.dumps({"add": _add(i, partitionValues=...)}),
    "null values": lambda i: json.dumps({"add": _add(i, partitionValues=None)}),
    "tags": lambda i: json.dumps({"add": _add(i, tags={"a": "1"})}),
    "empty tags": lambda i: json.dumps({"add": _add(i, tags={})}),
    "null tag": lambda i: json.dumps({"add": _add(i, tags={"a": None})}),
    "dv": lambda i: json.dumps({"add": _add(i, deletionVector={"storageType": "i", "pathOrInlineDv": "abc",
                                                               "sizeInBytes": 3, "cardinality": 1})}),  # fmt: skip
    "no stats": lambda i: json.dumps({"add": _add(i, stats=None, dataChange=..., modificationTime=...)}),
    "row ids": lambda i: json.dumps({"add": _add(i, baseRowId=i, defaultRowCommitVersion=0, clusteringProvider="x")}),
    "unknown field": lambda i: json.dumps({"add": _add(i, somethingNew={"x": [1]})}),
    "same path": lambda i: json.dumps({"add": _add(0)}),
    "remove": lambda i: json.dumps({"remove": {"path": f"p={i % 3}/f{i - 1}.parquet", "deletionTimestamp": 1}}),
    "txn": lambda i: json.dumps({"txn": {"appId": "a", "version": i}}),
    "blank": lambda i: "   ",
    "stats object": lambda i: json.dumps({"add": _add(i, stats={"numRecords": 1})}),
    "odd path": lambda i: json.dumps({"add": _add(i, path=f"./x/../f{i}.parquet")}),
    "absolute path": lambda i: json.dumps({"add": _add(i, path=f"{ROOT}/f{i}.parquet")}),
    "deep": lambda i: json.dumps({"add": _add(i)})[:-2] + ',"extra":' + "[" * 300 + "]" * 300 + "}}",
}  # fmt: skip
BAD = {
    "outside path": lambda i: json.dumps({"add": _add(i, path="../escape.parquet")}),
    "float size": lambda i: json.dumps({"add": _add(i, size=1.5)}),
    "string size": lambda i: json.dumps({"add": _add(i, size="1")}),
    "int value": lambda i: json.dumps({"add": _add(i, partitionValues={"p": 1})}),
    "no path": lambda i: json.dumps({"add": _add(i, path=...)}),
    "no size": lambda i: json.dumps({"add": _add(i, size=...)}),
    "null add": lambda i: '{"add":null}',
    "two actions": lambda i: json.dumps({"add": _add(i), "txn": {"appId": "a", "version": 1}}),
    "two objects": lambda i: json.dumps({"add": _add(i)}) + json.dumps({"add": _add(i + 1)}),
    "trailing junk": lambda i: json.dumps({"add": _add(i)}) + " x",
    "duplicate key": lambda i: json.dumps({"add": _add(i)})[:-1] + ',"size":3}',
    "lone surrogate": lambda i: json.dumps({"add": _add(i, stats="\\ud800")}).replace("\\\\ud800", "\\ud800"),
    "bool change": lambda i: json.dumps({"add": _add(i, dataChange=1)}),
    "huge size": lambda i: json.dumps({"add": _add(i, size=2**63)}),
    "too deep": lambda i: json.dumps({"add": _add(i)})[:-2] + ',"extra":' + "[" * 1050 + "]" * 1050 + "}}",
    "cr inside": lambda i: json.dumps({"add": _add(i)}) + "\r" + json.dumps({"add": _add(i + 1)}),
}  # fmt: skip


def _both(lines: list[str]):  # type: ignore[no-untyped-def]
    def line_by_line():  # type: ignore[no-untyped-def]
        actions = parse_commit_lines("\n".join(lines).encode(), "c.json")
        for lineno, action in actions:
            if hasattr(action, "path") and type(action).__name__ in ("AddFile", "RemoveFile"):
                relative_data_path(action.path, ROOT, f"c.json line {lineno}")
        return [a for _, a in actions]

    def columns():  # type: ignore[no-untyped-def]
        return columnar_commit(lines, "c.json", ROOT)

    return line_by_line, columns


def _outcome(fn):  # type: ignore[no-untyped-def]
    try:
        return fn()
    except VarlakeError as exc:
        return (type(exc), str(exc))


def _check(lines: list[str]) -> ColumnarCommit | None:
    line_by_line, columns = _both(lines)
    expected, got = _outcome(line_by_line), _outcome(columns)
    if isinstance(expected, tuple) or got is None or isinstance(got, tuple):
        if got is not None:  # column-wise, an error is the same error
            assert got == expected
        return None
    assert isinstance(got, ColumnarCommit)
    adds = table_to_adds(got.adds)
    actions = [x for a in got.items for x in ([adds[i] for i in a] if isinstance(a, range) else [a])]
    assert actions == expected
    assert got.paths == [a.path for a in adds]
    for a in (replay(None, [(0, expected)]), replay(None, [(0, got)])):
        assert a.adds.schema == replay(None, [(0, expected)]).adds.schema
    one, other = replay(None, [(0, expected)]), replay(None, [(0, got)])
    assert table_to_adds(one.adds) == table_to_adds(other.adds)
    assert one.removes.equals(other.removes)
    return got


def test_a_plain_commit_is_read_column_wise() -> None:
    lines = HEAD + [VARIANTS["plain"](i) for i in range(200)] + [""]
    got = _check(lines)
    assert got is not None and got.adds.num_rows == 200


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_each_variant_among_plain_adds(variant: str) -> None:
    lines = HEAD + [VARIANTS["plain"](i) for i in range(MIN_ROWS)]
    lines[20:20] = [VARIANTS[variant](1000 + k) for k in range(3)]
    _check(lines)


@pytest.mark.parametrize("variant", sorted(BAD))
def test_each_bad_line_raises_as_line_by_line(variant: str) -> None:
    lines = HEAD + [VARIANTS["plain"](i) for i in range(MIN_ROWS + 5)]
    lines.insert(30, BAD[variant](999))
    line_by_line, columns = _both(lines)
    expected = _outcome(line_by_line)
    assert isinstance(expected, tuple), variant  # each is an error line by line
    got = _outcome(columns)
    assert got is None or got == expected


@settings(max_examples=60, deadline=None)
@given(picks=st.lists(st.sampled_from(sorted(set(VARIANTS) - {"stats object"}) + ["plain"] * 20), min_size=MIN_ROWS, max_size=MIN_ROWS + 40))
def test_any_mix_reads_as_line_by_line(picks: list[str]) -> None:
    lines = HEAD + [VARIANTS[v](i) for i, v in enumerate(picks)]
    _check(lines)
