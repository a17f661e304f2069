"""Writes to tables with deletion vectors and type widening: append, overwrite, checkpoint
and vacuum keep every deleted row deleted and every referenced DV file in place.

Tables: ``dv_tables`` (DVs built with ``pyroaring`` in every storage type) and copies of
Delta's golden tables ``basic-dv-no-checkpoint`` (DeletionVectorSuite: ids 2..9),
``type-widening-nested`` (DeltaTableReadsSuite) and ``table-with-dv-small`` (column
mapping: written under physical names). Second reader: ``varlake.spark.read`` (deltalake 1.6
refuses both ``deletionVectors`` and ``typeWidening-preview``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dv_tables import delete_rows, dv_table
from golden_expected import GOLDEN, I64_MAX, I64_MIN

from varlake import Table
from varlake.delta import constants as C
from varlake.delta.actions import Metadata, Protocol
from varlake.delta.protocol import check_writable
from varlake.errors import CommitConflictError
from varlake.write.staging.commit import commit_write

DV_FIELDS = ("storageType", "pathOrInlineDv", "offset", "sizeInBytes", "cardinality", "maxRowIndex")


def _ids(table: Table) -> list[int]:
    return sorted(Table(table.path).scan().to_arrow().column("id").to_pylist())


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts}


def _actions(root: Path, version: int, kind: str) -> list[dict]:
    lines = (root / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    return [json.loads(x)[kind] for x in lines if x.strip() and kind in json.loads(x)]


def _live_dvs(table: Table) -> dict[str, dict]:
    return {f.path: dict(f.deletion_vector) for f in Table(table.path).files() if f.deletion_vector is not None}


def _with_max_row_index(root: Path, version: int) -> None:
    """Give every DV of commit ``version`` its optional ``maxRowIndex`` (as Delta may write it)."""
    path = root / "_delta_log" / f"{version:020d}.json"
    out = []
    for line in path.read_text().splitlines():
        action = json.loads(line)
        dv = action.get("add", {}).get("deletionVector")
        if dv is not None:
            dv["maxRowIndex"] = 7
        out.append(json.dumps(action))
    path.write_text("\n".join(out) + "\n")


def test_protocol_allows_writes_with_dvs_and_type_widening() -> None:
    meta = Metadata("t", '{"type":"struct","fields":[]}')
    for features in (("deletionVectors",), ("typeWidening",), ("typeWidening-preview",), ("deletionVectors", "typeWidening")):
        check_writable(Protocol(3, 7, features, features), meta)
    mapped = Metadata("t", '{"type":"struct","fields":[]}', configuration={"delta.columnMapping.mode": "name"})
    both = ("deletionVectors", "columnMapping")
    check_writable(Protocol(3, 7, both, both), mapped)  # column-mapped tables are written too


def test_append_checkpoint_overwrite_vacuum_on_every_storage_type(tmp_path: Path) -> None:
    root = tmp_path / "a dir%20+é"  # the p DV's URI spells it percent-encoded
    table = dv_table(root, [8, 8, 8, 8], 3)
    rels = sorted(f.path for f in table.files())
    version = delete_rows(table, {rels[0]: ("i", [0, 7]), rels[1]: ("u", [3]), rels[2]: ("p", [1, 2])}, "zz")
    _with_max_row_index(root, version)
    deleted = {0, 7, 11, 17, 18}
    expected = [x for x in range(32) if x not in deleted]
    assert _ids(table) == expected
    descriptors = _live_dvs(table)
    assert len(descriptors) == 3 and all(d["maxRowIndex"] == 7 for d in descriptors.values())
    dv_file = {str(p.relative_to(root)) for p in root.rglob("deletion_vector_*.bin")}
    assert len(dv_file) == 1 and next(iter(dv_file)).startswith("zz/")  # the u and p DVs share it

    table.append([{"id": 100, "s": "x"}, {"id": 101, "s": "y"}])
    assert _ids(table) == expected + [100, 101]
    assert not set(table.vacuum(0, unsafe_retention=True, dry_run=True)) & dv_file

    # checkpoint: every descriptor field survives exactly, and the table reads the same from it
    path = table.checkpoint()
    adds = pq.read_table(path).column("add").to_pylist()
    written = {a["path"]: {k: v for k, v in a["deletionVector"].items() if v is not None}
               for a in adds if a and a["deletionVector"]}  # fmt: skip
    assert written == descriptors
    assert set(pq.read_table(path).schema.field("add").type.field("deletionVector").type.names) >= set(DV_FIELDS)
    for log_file in (root / "_delta_log").glob("*.json"):
        log_file.unlink()  # the checkpoint alone must carry the DVs now
    reopened = Table(root)
    assert _live_dvs(reopened) == descriptors
    assert _ids(reopened) == expected + [100, 101]

    # vacuum at zero retention keeps every referenced DV and data file
    vacuumed = table.vacuum(0, unsafe_retention=True)
    assert not set(vacuumed) & (dv_file | set(rels))
    assert _ids(table) == expected + [100, 101]

    # overwrite: each remove names the logical file, i.e. carries its add's DV
    sentinel = tmp_path / "outside.bin"
    sentinel.write_bytes(b"keep")
    new_version = table.overwrite([{"id": 5, "s": "new"}])
    removes = {r["path"]: r.get("deletionVector") for r in _actions(root, new_version, "remove")}
    assert {p: d for p, d in removes.items() if d is not None} == descriptors
    assert removes[rels[3]] is None
    assert _ids(table) == [5]
    tombstones = pq.read_table(table.checkpoint()).column("remove").to_pylist()
    kept = {r["path"]: {k: v for k, v in r["deletionVector"].items() if v is not None}
            for r in tombstones if r and r["deletionVector"]}  # fmt: skip
    assert kept == descriptors  # removes keep their DVs through a checkpoint too
    deleted_files = table.vacuum(0, unsafe_retention=True)
    assert dv_file <= set(deleted_files) and set(rels) <= set(deleted_files)
    assert not any(root.rglob("deletion_vector_*.bin"))
    assert sentinel.read_bytes() == b"keep" and _ids(table) == [5]


def test_appends_rebase_over_a_concurrent_delete_but_overwrites_conflict(tmp_path: Path) -> None:
    table = dv_table(tmp_path / "t", [6, 6], 4)
    rels = sorted(f.path for f in table.files())
    append = table.stage([{"id": 50, "s": "a"}], "append")
    overwrite = table.stage([{"id": 60, "s": "o"}], "overwrite")
    delete_rows(table, {rels[0]: ("u", [1, 2])})  # a concurrent DELETE wins the race
    version = table.version
    with pytest.raises(CommitConflictError, match="concurrently"):
        commit_write(table.log, overwrite)  # its removes name the files without the new DV
    assert table.version == version
    assert commit_write(table.log, append).version == version + 1
    assert _ids(table) == [0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 50]
    # an overwrite planned on the DV'd snapshot commits and removes (path, DV)
    v = table.overwrite([{"id": 70, "s": "w"}])
    assert any(r.get("deletionVector") for r in _actions(tmp_path / "t", v, "remove"))
    assert _ids(table) == [70]


def _golden_copy(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(GOLDEN / name, root)
    return root


def test_golden_basic_dv_table_takes_writes(tmp_path: Path) -> None:
    root = _golden_copy("basic-dv-no-checkpoint", tmp_path)
    table = Table(root)
    dv_files = {p for p in _files(root) if p.startswith("deletion_vector_")}
    assert len(dv_files) == 1
    table.append([{"id": 100}])
    assert _ids(table) == list(range(2, 10)) + [100]
    table.checkpoint()
    assert _ids(Table(root)) == list(range(2, 10)) + [100]
    assert not set(table.vacuum(0, unsafe_retention=True)) & dv_files
    assert dv_files <= _files(root) and _ids(table) == list(range(2, 10)) + [100]
    assert sorted(Table(root).scan(version=0).to_arrow().column("id").to_pylist()) == list(range(10))

    table.overwrite([{"id": 1}, {"id": 2}])
    assert _ids(table) == [1, 2]
    gone = table.vacuum(0, unsafe_retention=True)
    assert dv_files <= set(gone)
    assert not dv_files & _files(root)
    assert Table(root).snapshot().protocol.writer_feature_set == {C.DELETION_VECTORS}  # declared as before


def test_golden_column_mapped_dv_table_takes_writes(tmp_path: Path) -> None:
    """Column mapping is written now (files under physical names: tests/table/test_column_mapped_writes.py)."""
    root = _golden_copy("table-with-dv-small", tmp_path)
    dv_files = {p for p in _files(root) if p.startswith("deletion_vector_")}
    table = Table(root)
    table.append([{"value": 100}])
    assert sorted(Table(root).scan().to_arrow().column("value").to_pylist()) == list(range(1, 9)) + [100]
    table.checkpoint()
    assert not set(table.vacuum(0, unsafe_retention=True)) & dv_files
    assert sorted(Table(root).scan().to_arrow().column("value").to_pylist()) == list(range(1, 9)) + [100]
    table.overwrite([{"value": 1}])
    assert Table(root).scan().to_arrow().column("value").to_pylist() == [1]
    assert sorted(Table(root).scan(version=1).to_arrow().column("value").to_pylist()) == list(range(1, 9))
    physical = table.schema.field("value").metadata["delta.columnMapping.physicalName"]
    (add,) = table.files()
    assert pq.read_schema(table.data_file(add)).names == [physical]


def _nested_rows(table: Table) -> list[tuple]:
    rows = Table(table.path).scan(columns=["struct", "map", "array"]).to_arrow().to_pylist()
    return sorted((r["struct"]["a"], tuple(r["map"]), tuple(r["array"])) for r in rows)


def test_golden_type_widened_table_takes_writes(tmp_path: Path) -> None:
    root = _golden_copy("type-widening-nested", tmp_path)
    table = Table(root)
    schema_before = table.snapshot().metadata.schema_string
    assert "delta.typeChanges" in schema_before
    old = [(1, ((2, 3),), (4, 5)), (I64_MAX, ((I64_MAX, I64_MAX),), (I64_MAX, I64_MIN))]
    assert _nested_rows(table) == sorted(old)
    big = 2**40
    table.append([{"struct": {"a": big}, "map": {big: -big}, "array": [big, None]}])
    new_file = [f for f in table.files() if f.modification_time > 1727266121853]
    assert len(new_file) == 1
    file_schema = pq.read_schema(root / new_file[0].path)
    assert file_schema.field("struct").type.field("a").type == pa.int64()  # the current, wide type
    expected = sorted(old + [(big, ((big, -big),), (big, None))])
    assert _nested_rows(table) == expected
    table.checkpoint()
    reopened = Table(root)
    assert reopened.snapshot().metadata.schema_string == schema_before  # typeChanges kept as they were
    assert _nested_rows(reopened) == expected
    assert reopened.protocol.writer_features == ("typeWidening-preview", "appendOnly", "invariants")

    table.overwrite([{"struct": {"a": 7}, "map": {}, "array": []}])
    table.vacuum(0, unsafe_retention=True)
    assert _nested_rows(table) == [(7, (), ())]
    assert len([p for p in _files(root) if p.endswith(".parquet")]) == 1
    assert Table(root).snapshot().metadata.schema_string == schema_before


@pytest.mark.spark
def test_spark_reads_what_the_writes_left(spark, tmp_path: Path) -> None:  # noqa: ANN001
    import varlake.spark as vs

    table = dv_table(tmp_path / "t", [9, 7], 4)
    rels = sorted(f.path for f in table.files())
    delete_rows(table, {rels[0]: ("u", [0, 8]), rels[1]: ("i", [3])}, "ab")
    table.append([{"id": 200, "s": "z"}])
    table.checkpoint()
    table.vacuum(0, unsafe_retention=True)
    expected = [x for x in range(16) if x not in (0, 8, 12)] + [200]
    assert _ids(table) == expected
    assert sorted(r.id for r in vs.read(spark, Table(table.path)).collect()) == expected
