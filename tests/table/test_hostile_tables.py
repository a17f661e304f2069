"""Hostile tables through the ``Table`` API (issue 11, item 5): tables varlake wrote, then
tampered with as another writer or an attacker could. Opening, scanning, appending and
checkpointing gives the right rows or a named ``VarlakeError`` -- never a raw exception --
and nothing ever appears outside the table root. The last test mutates valid commit lines
at random (hypothesis) and holds the same promise for every mutant.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import varlake
from hostile import nothing_outside, tamper_log
from varlake.errors import CorruptCommitError, ParquetFooterError, PartitionValueError, VarlakeError


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A table root two levels below ``tmp_path``, so an escape by ``../..`` would be seen."""
    return tmp_path / "a" / "b" / "t"


def _ids(table: varlake.Table) -> list[int]:
    return sorted(table.scan().to_arrow().column("id").to_pylist())


@pytest.mark.parametrize("ddl, value", [("p int", 1), ("p date", dt.date(2024, 1, 2))], ids=["int", "date"])
@pytest.mark.parametrize("bad", ["../x", "../../../evil", "/etc/passwd", "%2e%2e%2fx"])
def test_a_partition_value_that_is_a_path_is_a_named_error(root: Path, tmp_path: Path, ddl: str, value: Any, bad: str) -> None:
    """``"../x"`` as the value of an integer or date column: scans name file, column and value;
    appends and checkpoints (which do not read it) work and stay inside the root."""
    table = varlake.Table.create(root, f"id bigint, {ddl}", partition_by=["p"])
    table.append([{"id": 1, "p": value}])

    def change(obj: dict) -> dict:
        if "add" in obj:
            obj["add"]["partitionValues"]["p"] = bad
        return obj

    tamper_log(root, change)
    with nothing_outside(root, tmp_path):
        t = varlake.Table(root)
        (f,) = t.files()
        with pytest.raises(PartitionValueError, match=f"part-.*parquet: partition column 'p': {re.escape(repr(bad))} is not a"):
            t.scan().to_arrow()
        with pytest.raises(PartitionValueError, match="partition column 'p'"):
            t.scan().where("p is not null").to_arrow()
        t.append([{"id": 2, "p": value}])
        t.checkpoint()
        with pytest.raises(PartitionValueError, match="partition column 'p'"):
            varlake.Table(root).scan().to_arrow()


def test_a_partition_column_named_like_a_path_in_a_foreign_log(root: Path, tmp_path: Path) -> None:
    """A log someone else wrote partitions by ``../../evil``: it reads, and varlake's own writes
    land inside the root under the escaped directory name (no ArrowInvalid, nothing outside)."""
    table = varlake.Table.create(root, "id bigint, p string", partition_by=["p"])
    table.append([{"id": 1, "p": "v"}])
    evil = "../../evil"

    def change(obj: dict) -> dict:
        if "metaData" in obj:
            m = obj["metaData"]
            m["schemaString"] = m["schemaString"].replace('"p"', json.dumps(evil))
            m["partitionColumns"] = [evil]
        if "add" in obj:
            obj["add"]["partitionValues"] = {evil: "v"}
        return obj

    tamper_log(root, change)
    with nothing_outside(root, tmp_path):
        t = varlake.Table(root)
        assert t.scan().to_arrow().to_pylist() == [{"id": 1, evil: "v"}]
        t.append([{"id": 2, evil: "../../w"}, {"id": 3, evil: None}])
        t.checkpoint()
        rows = sorted(varlake.Table(root).scan().to_arrow().to_pylist(), key=lambda r: r["id"])
        assert rows == [{"id": 1, evil: "v"}, {"id": 2, evil: "../../w"}, {"id": 3, evil: None}]
        assert varlake.Table(root).scan().where(f"`{evil}` = '../../w'").to_arrow().column("id").to_pylist() == [2]


def test_partition_columns_the_schema_does_not_have(root: Path, tmp_path: Path) -> None:
    table = varlake.Table.create(root, "id bigint, p string", partition_by=["p"])
    table.append([{"id": 1, "p": "v"}])

    def change(obj: dict) -> dict:
        if "metaData" in obj:
            obj["metaData"]["partitionColumns"] = ["p", "gone"]
        return obj

    tamper_log(root, change)
    for op in ("scan", "append", "checkpoint"):
        with nothing_outside(root, tmp_path):
            with pytest.raises(PartitionValueError, match="metaData.partitionColumns: partition column 'gone'"):
                t = varlake.Table(root)
                {"scan": lambda: t.scan().to_arrow(), "append": lambda: t.append([{"id": 2, "p": "w"}]), "checkpoint": t.checkpoint}[op]()


def test_a_footer_whose_column_name_is_not_utf8(root: Path, tmp_path: Path) -> None:
    table = varlake.Table.create(root, "id bigint, qqqq string")
    table.append([{"id": 1, "qqqq": "a"}])
    (f,) = table.files()
    path = root / f.path
    data = bytearray(path.read_bytes())
    length = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - length
    at = data.index(b"qqqq", start)
    data[at : at + 2] = b"\xff\xfe"
    path.write_bytes(bytes(data))
    with nothing_outside(root, tmp_path):
        t = varlake.Table(root)
        with pytest.raises(ParquetFooterError, match=f"{f.path}: corrupt Parquet footer: the name of schema element 2 .* is not UTF-8"):
            t.scan().to_arrow()
        t.append([{"id": 2, "qqqq": "b"}])
        assert t.scan().where("id = 2").to_arrow().num_rows == 1  # the damaged file is skipped by its stats


def test_a_string_with_a_lone_surrogate_is_refused(root: Path, tmp_path: Path) -> None:
    table = varlake.Table.create(root, "id bigint, p string", partition_by=["p"])
    table.append([{"id": 1, "p": "v"}])
    log = root / "_delta_log" / f"{1:020d}.json"
    log.write_text(log.read_text().replace('"p":"v"', '"p":"\\udc80"'))
    with nothing_outside(root, tmp_path):
        with pytest.raises(CorruptCommitError, match=f"{log} line .*lone UTF-16 surrogate"):
            varlake.Table(root).scan().to_arrow()


# --- mutated commit lines -----------------------------------------------------------------------

_HOSTILE_VALUES: list[Any] = [
    2**100,
    -(2**63) - 1,
    10**30,
    -1,
    0,
    1.5,
    float("nan"),
    "",
    "../../x",
    "/etc/passwd",
    "%2e%2e/x",
    "file:///etc/passwd",
    "\x00",
    True,
    None,
    [],
    {},
    [[[[[[]]]]]],
    {"a": {"b": {"c": 1}}},
    "[" * 50,
    "9" * 40,
]


def _mutants() -> st.SearchStrategy[tuple[str, int, int, int]]:
    """(kind, line choice, position choice, value choice)."""
    return st.tuples(
        st.sampled_from(["truncate", "flip", "replace", "nest", "drop", "swap-type"]),
        st.integers(0, 10**6),
        st.integers(0, 10**6),
        st.integers(0, 10**6),
    )


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, prefix + (i,))
    return out


def _set(obj: Any, path: tuple, value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def _mutate(text: str, kind: str, a: int, b: int, c: int) -> str:
    lines = text.split("\n")
    full = [n for n, line in enumerate(lines) if line.strip()]
    i = full[a % len(full)]
    line = lines[i]
    if kind == "truncate":
        lines[i] = line[: b % len(line)]
    elif kind == "flip":
        raw = bytearray(line.encode())
        raw[b % len(raw)] ^= 1 << (c % 8)
        lines[i] = raw.decode("utf-8", "surrogateescape")
    elif kind == "drop":
        del lines[i]
    else:
        obj = json.loads(line)
        paths = _paths(obj)
        path = paths[b % len(paths)]
        if kind == "replace":
            value: Any = _HOSTILE_VALUES[c % len(_HOSTILE_VALUES)]
        elif kind == "nest":
            value = "__NEST__"  # spliced in as text: deeper than json.dumps could write
        else:
            value = random.Random(c).choice(["1", 1, {"x": 1}, [1]])
        _set(obj, path, value)
        depth = c % 3000
        lines[i] = json.dumps(obj).replace('"__NEST__"', "[" * depth + "]" * depth)
    return "\n".join(lines)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small partitioned table with stats, a txn and two commits, written by varlake."""
    root = tmp_path_factory.mktemp("template") / "t"
    table = varlake.Table.create(root, "id bigint, s string, p int", partition_by=["p"])
    table.append([{"id": 1, "s": "a", "p": 1}, {"id": 2, "s": "b", "p": 2}], app_id="app", app_version=1)
    return root


@settings(max_examples=100, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutant=_mutants(), target=st.sampled_from([0, 1]))
def test_mutated_commit_lines_give_rows_or_a_named_error(template: Path, tmp_path_factory: pytest.TempPathFactory, mutant: tuple, target: int) -> None:
    base = tmp_path_factory.mktemp("mutant")
    root = base / "x" / "t"
    shutil.copytree(template, root)
    log = root / "_delta_log" / f"{target:020d}.json"
    kind, a, b, c = mutant
    log.write_bytes(_mutate(log.read_text(), kind, a, b, c).encode("utf-8", "surrogateescape"))
    with nothing_outside(root, base):
        try:
            t = varlake.Table(root)
            t.scan().to_arrow()
            t.append([{"id": 3, "s": "c", "p": 3}])
            t.checkpoint()
            varlake.Table(root).scan().where("p = 3").to_arrow()
        except VarlakeError:
            pass


@pytest.mark.parametrize("lie", [3 * 10**8, 5, 0, 2**63 - 1, -1, 10**30])
def test_a_lying_num_records_never_changes_a_partition_only_scan(root: Path, tmp_path: Path, lie: int) -> None:
    """Reading only partition columns takes the row count from the file's own footer, so a
    ``numRecords`` that lies (huge, too small, out of range) neither blows memory nor invents rows."""
    table = varlake.Table.create(root, "id bigint, p int", partition_by=["p"])
    table.append([{"id": 1, "p": 1}, {"id": 2, "p": 1}])

    def change(obj: dict) -> dict:
        if "add" in obj:
            stats = json.loads(obj["add"]["stats"])
            stats["numRecords"] = lie
            obj["add"]["stats"] = json.dumps(stats)
        return obj

    tamper_log(root, change)
    with nothing_outside(root, tmp_path):
        t = varlake.Table(root)
        assert t.scan().select("p").to_arrow().column("p").to_pylist() == [1, 1]
        assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2]
