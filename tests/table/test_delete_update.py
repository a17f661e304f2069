"""DELETE and UPDATE (``Table.delete``/``Table.update``, ``varlake.write.changes.rows``) and
deletion-vector writing (``varlake.delta.deletion_vector_write``).

Oracles: ``pyroaring`` decodes every DV varlake writes independently of varlake's reader
(``BitMap64.deserialize`` of the bytes after the magic number); the expected rows are
computed in Python; ``varlake.spark.read`` reads a table with written DVs.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap64

from varlake import Table
from varlake.delta import constants as C
from varlake.delta.deletion_vector_write import (
    DvFileWriter,
    descriptors_for,
    encode_uuid,
    inline_descriptor,
    serialize_bitmap,
)
from varlake.delta.deletion_vectors import MAGIC, DeletionVector, decode_bitmap, load_deleted_rows
from varlake.errors import (
    AppendOnlyTableError,
    CommitConflictError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConstraintViolationError,
    ExpressionEvaluationError,
    ExpressionTypeError,
    UnknownColumnError,
)
from varlake.io.storage import LocalStorage
from varlake.variant import Variant
from varlake.write.changes import rows as row_changes

DV_ON = {"delta.enableDeletionVectors": "true"}
DV_OFF = {"delta.enableDeletionVectors": "false"}


def pyroaring_rows(data: bytes) -> list[int]:
    """The rows of a serialized DV, decoded by pyroaring alone."""
    assert int.from_bytes(data[:4], "little") == MAGIC
    return list(BitMap64.deserialize(data[4:]))


def bin_files(root: Path) -> list[Path]:
    return sorted(root.rglob("deletion_vector_*.bin"))


def decode_bin(path: Path) -> list[tuple[int, list[int]]]:
    """Every DV in a DV file (offset, rows): the version byte, then size, bitmap, CRC-32 (big-endian)."""
    raw = path.read_bytes()
    assert raw[0] == 1
    out, pos = [], 1
    while pos < len(raw):
        (size,) = struct.unpack(">I", raw[pos : pos + 4])
        data = raw[pos + 4 : pos + 4 + size]
        (crc,) = struct.unpack(">I", raw[pos + 4 + size : pos + 8 + size])
        assert crc == zlib.crc32(data)
        out.append((pos, pyroaring_rows(data)))
        pos += 8 + size
    return out


def ids(table: Table, version: int | None = None) -> list[int]:
    return sorted(Table(table.path).scan(version=version).to_arrow().column("id").to_pylist())


def events(table_path: Path, n: int = 40, properties=None, partitioned: bool = False, files: int = 2) -> Table:
    props = dict(properties or {})
    t = Table.create(table_path, "id bigint, x int, p string, v variant", partition_by=["p"] if partitioned else [],
                     properties=props)  # fmt: skip
    per = n // files
    for f in range(files):
        t.append([
            {"id": i, "x": None if i % 7 == 0 else i % 10, "p": "ab"[i % 2], "v": {"user": {"id": i % 5}, "n": i}}
            for i in range(f * per, (f + 1) * per)
        ])  # fmt: skip
    return t


# --- deletion vector bytes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rows",
    [[], [0], [3, 4, 7, 11, 18, 29], list(range(0, 200_000, 3)), list(range(70_000)) + [1 << 33, (1 << 33) + 5, (1 << 40)]],
)
def test_serialized_bitmap_decodes_with_pyroaring_and_varlake(rows: list[int]) -> None:
    data = serialize_bitmap(np.array(rows, dtype=np.int64))
    assert pyroaring_rows(data) == sorted(set(rows))
    assert decode_bitmap(data, "test").tolist() == sorted(set(rows))


def test_inline_and_file_descriptors_round_trip_through_the_reader(tmp_path: Path) -> None:
    storage = LocalStorage()
    small, big = np.array([1, 5, 9], np.uint64), np.arange(0, 90_000, 2, dtype=np.uint64)
    descriptors, written, files = descriptors_for({"a": small, "b": big, "c": big[:5000]}, storage, str(tmp_path), prefix="zq")
    assert descriptors["a"]["storageType"] == "i" and "offset" not in descriptors["a"]
    assert descriptors["b"]["storageType"] == "u" and descriptors["c"]["storageType"] == "u" and files == 1
    (path,) = bin_files(tmp_path)
    assert path.parent.name == "zq" and path.stat().st_size == written
    assert descriptors["b"]["pathOrInlineDv"].startswith("zq") and len(descriptors["b"]["pathOrInlineDv"]) == 22
    in_file = dict(decode_bin(path))
    assert in_file[descriptors["b"]["offset"]] == big.tolist() and in_file[descriptors["c"]["offset"]] == big[:5000].tolist()

    def open_relative(rel: str):
        return open(tmp_path / rel, "rb")

    for key, rows in (("a", small), ("b", big), ("c", big[:5000])):
        dv = DeletionVector.parse(descriptors[key], key)
        assert dv.cardinality == len(rows)
        assert load_deleted_rows(dv, open_relative, tmp_path.as_uri(), key).tolist() == rows.tolist()


def test_dv_file_layout_and_uuid_encoding(tmp_path: Path) -> None:
    writer = DvFileWriter()
    data = serialize_bitmap([2, 3])
    descriptor = writer.add(data, 2)
    assert descriptor["offset"] == 1 and descriptor["sizeInBytes"] == len(data)
    assert descriptor["pathOrInlineDv"] == encode_uuid(writer.id) and len(descriptor["pathOrInlineDv"]) == 20
    writer.write(LocalStorage(), str(tmp_path))
    raw = (tmp_path / f"deletion_vector_{writer.id}.bin").read_bytes()
    assert raw == b"\x01" + struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    padded = inline_descriptor(data, 2)
    assert padded["sizeInBytes"] == len(data) and len(padded["pathOrInlineDv"]) % 5 == 0


# --- DELETE -------------------------------------------------------------------------------------------------


def test_new_tables_enable_deletion_vectors(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint")
    assert t.properties[C.PROP_ENABLE_DELETION_VECTORS] == "true"
    assert C.DELETION_VECTORS in t.protocol.reader_feature_set and C.DELETION_VECTORS in t.protocol.writer_feature_set
    off = Table.create(tmp_path / "off", "id bigint", properties=DV_OFF)
    assert C.DELETION_VECTORS not in (off.protocol.reader_features or ())


def test_delete_with_deletion_vectors(tmp_path: Path) -> None:
    t = events(tmp_path / "t", properties=DV_ON)
    before = {f.path: f for f in t.files()}
    result = t.delete("id < 3 OR id = 25")
    assert (result.version, result.num_deleted_rows, result.num_deletion_vectors_added) == (3, 4, 2)
    assert result.num_files_added == 0 and result.num_files_removed == 0
    assert ids(t) == [i for i in range(40) if not (i < 3 or i == 25)]
    after = {f.path: f for f in t.files()}
    assert set(after) == set(before)  # the same data files, now with DVs
    for path, add in after.items():
        stats = json.loads(add.stats)
        assert stats["tightBounds"] is False and stats["numRecords"] == 20
        assert stats["minValues"] == json.loads(before[path].stats)["minValues"]
    # a second delete merges into the DV and removes the old logical file (with its DV)
    result = t.delete("id = 1 OR id = 4")  # id 1 is already deleted
    assert result.num_deleted_rows == 1
    commit = (Path(t.path) / "_delta_log" / f"{result.version:020d}.json").read_text().splitlines()
    removes = [json.loads(x)["remove"] for x in commit if '"remove"' in x]
    assert len(removes) == 1 and removes[0]["deletionVector"]["cardinality"] == 3
    assert [f.deletion_vector["cardinality"] for f in t.files() if f.deletion_vector and f.path == removes[0]["path"]] == [4]
    assert ids(t, 2) == list(range(40)) and ids(t, 3) == [i for i in range(40) if not (i < 3 or i == 25)]


def test_large_delete_writes_a_bin_file_pyroaring_decodes(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, m int")
    t.append([{"id": i, "m": i % 3} for i in range(5000)])
    result = t.delete("m = 1")
    assert result.num_deletion_vector_files == 1 and result.deletion_vector_bytes > 0
    (path,) = bin_files(Path(t.path))
    ((offset, rows),) = decode_bin(path)
    (add,) = t.files()
    assert add.deletion_vector["offset"] == offset and add.deletion_vector["cardinality"] == len(rows) == 1667
    assert ids(t) == [i for i in range(5000) if i % 3 != 1]
    deltalake = pytest.importorskip("deltalake")  # a second reader of DVs (delta-kernel through QueryBuilder)
    query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(t.path))
    got = pa.table(query.execute("SELECT count(*) AS n, sum(id) AS s FROM t").read_all()).to_pylist()
    assert got == [{"n": 3333, "s": sum(i for i in range(5000) if i % 3 != 1)}]


def test_delete_copy_on_write_without_the_property(tmp_path: Path) -> None:
    t = events(tmp_path / "t", properties=DV_OFF)
    result = t.delete("x = 3")
    expected = [i for i in range(40) if not (i % 7 != 0 and i % 10 == 3)]
    assert result.num_deleted_rows == 40 - len(expected) and result.num_deletion_vectors_added == 0
    assert result.num_files_removed == 2 and result.num_files_added >= 1 and result.num_copied_rows == len(expected)
    assert ids(t) == expected
    assert all(f.deletion_vector is None for f in t.files()) and not bin_files(Path(t.path))


@pytest.mark.parametrize("properties", [DV_ON, DV_OFF])
def test_null_does_not_match_and_whole_files_are_removed(tmp_path: Path, properties) -> None:
    t = events(tmp_path / "t", properties=properties)
    result = t.delete("x > 5")  # x is NULL for every 7th id: those rows stay
    assert ids(t) == [i for i in range(40) if i % 7 == 0 or i % 10 <= 5]
    assert result.num_deleted_rows == sum(1 for i in range(40) if i % 7 and i % 10 > 5)
    nothing = t.delete("x > 100")
    assert nothing.version is None and nothing.num_deleted_rows == 0
    everything = t.delete("id < 20")  # every live row of the first file
    assert everything.num_files_removed == 1 and everything.num_deletion_vectors_added == 0
    assert t.delete().num_files_removed == 1 and ids(t) == []


def test_delete_reads_only_candidate_files(tmp_path: Path) -> None:
    t = events(tmp_path / "t", n=40, files=4, partitioned=True, properties={**DV_ON, "delta.enableVariantShredding": "true"})
    assert len(t.files()) == 8
    assert t.delete("v:n::bigint = 33").num_files_scanned == 2  # Variant path statistics: [30, 38] and [31, 39]
    assert t.delete("p = 'a' AND id < 10").num_files_scanned == 1  # partition + column statistics
    assert ids(t) == [i for i in range(40) if i != 33 and not (i % 2 == 0 and i < 10)]


def test_append_only_tables_refuse_delete_and_update(tmp_path: Path) -> None:
    t = events(tmp_path / "t", properties={"delta.appendOnly": "true"})
    version = t.version
    with pytest.raises(AppendOnlyTableError, match="append-only"):
        t.delete("id = 1")
    with pytest.raises(AppendOnlyTableError, match="append-only"):
        t.update("id = 1", {"x": "1"})
    assert t.version == version and not bin_files(Path(t.path))


# --- UPDATE -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("properties", [DV_ON, DV_OFF])
def test_update_sets_columns_from_expressions(tmp_path: Path, properties) -> None:
    t = events(tmp_path / "t", properties=properties, partitioned=True)
    result = t.update("id >= 30", {"x": "x * 2 + 1", "p": "'c'", "v": "parse_json('{\"fixed\": true}')"})
    assert result.num_updated_rows == 10
    assert result.num_files_added == (1 if properties is DV_ON else 3)  # copy-on-write rewrites p=a and p=b too
    rows = {r["id"]: r for r in t.scan().to_arrow().to_pylist()}
    assert len(rows) == 40
    for i in range(40):
        r = rows[i]
        if i >= 30:
            assert r["x"] == (None if i % 7 == 0 else (i % 10) * 2 + 1) and r["p"] == "c"
            assert Variant(r["v"]["metadata"], r["v"]["value"]).to_python() == {"fixed": True}
        else:
            assert r["x"] == (None if i % 7 == 0 else i % 10) and r["p"] == "ab"[i % 2]
    assert len(t.files("p = 'c'")) == 1  # the moved rows are in their partition's directory
    t.update(None, {"id": "id + 1000"})
    assert ids(t) == [i + 1000 for i in range(40)]


def test_update_of_a_shredded_table_keeps_its_layout(tmp_path: Path) -> None:
    t = events(tmp_path / "t", properties={**DV_ON, "delta.enableVariantShredding": "true"})
    stored = t.properties.get("varlake.shredding.v")
    assert stored
    t.update("id = 5", {"v": "parse_json('{\"user\": {\"id\": 99}, \"n\": 5}')"})
    assert t.properties.get("varlake.shredding.v") == stored
    assert [r["id"] for r in t.scan("v:user.id::int = 99").to_arrow().to_pylist()] == [5]
    assert len(t.files("v:user.id::int = 99")) == 1  # statistics of the new file name the patched path


def test_update_checks_constraints_and_types(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, x int", properties={"delta.constraints.positive": "x > 0"})
    t.append([{"id": i, "x": i + 1} for i in range(5)])
    version = t.version
    with pytest.raises(ConstraintViolationError, match="positive"):
        t.update("id = 2", {"x": "x - 10"})
    with pytest.raises(ExpressionEvaluationError, match="DIVIDE_BY_ZERO"):
        t.update("id = 2", {"x": "x / 0"})
    with pytest.raises(ExpressionEvaluationError):
        t.update("id = 2", {"x": "2147483647 + x"})
    with pytest.raises(UnknownColumnError):
        t.update("id = 2", {"nope": "1"})
    with pytest.raises(ExpressionTypeError):
        t.update("id = 2", {"x": "X'00'"})
    assert t.version == version
    assert t.update("id = 2", {"x": "CAST(id * 10 AS int)"}).num_updated_rows == 1
    assert sorted(t.scan().to_arrow().column("x").to_pylist()) == [1, 2, 4, 5, 20]


# --- conflicts ----------------------------------------------------------------------------------------------


def test_two_changes_to_the_same_file_conflict(tmp_path: Path) -> None:
    t = events(tmp_path / "t", properties=DV_ON)
    first = row_changes.stage_delete(t, "id = 1")
    second = row_changes.stage_update(t, {"x": "0"}, "id = 2")
    assert row_changes.commit_change(t, first).version == 3
    with pytest.raises(ConcurrentDeleteDeleteError, match="delete-delete"):
        row_changes.commit_change(t, second)
    assert ids(t) == [i for i in range(40) if i != 1] and t.version == 3


def test_a_change_that_read_a_rewritten_file_conflicts(tmp_path: Path) -> None:
    t = events(tmp_path / "t", properties=DV_ON)
    reader = row_changes.stage_delete(t, "id = 100")  # reads the files, matches nothing ...
    other = row_changes.stage_delete(t, "x = 1")
    row_changes.commit_change(t, other)
    assert reader.actions == ()  # ... so there is nothing to commit, nothing conflicts
    mine = row_changes.stage_delete(t, "id = 3 OR v:n::bigint = 1000")  # reads both files (no path statistics)
    theirs = row_changes.stage_update(t, {"x": "x + 1"}, "id = 30")  # a file mine read but did not change
    row_changes.commit_change(t, theirs)
    with pytest.raises(ConcurrentDeleteReadError, match="delete-read"):
        row_changes.commit_change(t, mine)


def test_disjoint_changes_and_blind_appends_do_not_conflict(tmp_path: Path) -> None:
    t = events(tmp_path / "t", n=40, files=4, partitioned=True, properties=DV_ON)
    a = row_changes.stage_delete(t, "p = 'b' AND id = 1")
    b = row_changes.stage_delete(t, "p = 'a' AND id = 2")
    t.append([{"id": 100, "p": "a"}])  # a blind append (WriteSerializable lets it pass)
    row_changes.commit_change(t, a)
    row_changes.commit_change(t, b)
    assert ids(t) == [i for i in range(40) if i not in (1, 2)] + [100]


def test_serializable_tables_fail_a_delete_on_a_concurrent_append(tmp_path: Path) -> None:
    t = events(tmp_path / "t", properties={**DV_ON, "delta.isolationLevel": "Serializable"})
    staged = row_changes.stage_delete(t, "x = 1")
    t.append([{"id": 100, "x": 1}])
    with pytest.raises(ConcurrentAppendError, match="Serializable"):
        row_changes.commit_change(t, staged)
    staged = row_changes.stage_delete(t, "x = 2")
    t.append([{"id": 101, "x": 9}])  # statistics prove the appended file holds no x = 2
    row_changes.commit_change(t, staged)


def test_write_serializable_fails_on_matching_data_from_a_non_blind_commit(tmp_path: Path) -> None:
    t = events(tmp_path / "t", n=40, files=4, partitioned=True, properties=DV_ON)
    mine = row_changes.stage_delete(t, "p = 'a' AND x = 4")
    t.update("p = 'b' AND id = 1", {"p": "'a'", "x": "4"})  # moves a matching row into 'a'
    with pytest.raises(ConcurrentAppendError, match="WriteSerializable"):
        row_changes.commit_change(t, mine)
    assert isinstance(ConcurrentAppendError("x"), CommitConflictError)


def test_retry_replans_on_the_new_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = events(tmp_path / "t", properties=DV_ON)
    real = row_changes.stage_delete
    calls = []
    victims = ["id = 2", "id = 5"]

    def racing(target, where, snapshot=None):
        staged = real(target, where, snapshot)
        if not calls:
            calls.append(staged)
            Table(t.path).delete(victims.pop(0))  # a concurrent change to the same file
        return staged

    monkeypatch.setattr(row_changes, "stage_delete", racing)
    with pytest.raises(ConcurrentDeleteDeleteError):
        t.delete("id = 3")
    calls.clear()
    result = t.delete("id = 4", retries=1)
    assert result.attempts == 2 and ids(t) == [i for i in range(40) if i not in (2, 4, 5)]


# --- other readers -----------------------------------------------------------------------------------------


@pytest.mark.spark
def test_spark_reads_tables_with_written_deletion_vectors(tmp_path: Path, spark) -> None:
    from varlake.spark import read

    t = Table.create(tmp_path / "t", "id bigint, m int, v variant", properties={"delta.enableVariantShredding": "true"})
    t.append([{"id": i, "m": i % 2, "v": {"a": i}} for i in range(3000)])
    t.append([{"id": i, "m": i % 2, "v": {"a": i}} for i in range(3000, 3010)])
    t.delete("m = 0 AND id < 3000")  # a .bin DV
    t.delete("id = 3005")  # an inline DV
    t.update("id = 1", {"v": "parse_json('{\"a\": -1}')"})
    assert any(f.deletion_vector and f.deletion_vector["storageType"] == "i" for f in t.files())
    assert any(f.deletion_vector and f.deletion_vector["storageType"] == "u" for f in t.files())
    got = sorted(r["id"] for r in read(spark, t.path).select("id").collect())
    assert got == ids(t) == [i for i in range(3010) if (i % 2 or i >= 3000) and i != 3005]


def test_change_data_feed_tables_are_refused_before_writing(tmp_path: Path) -> None:
    from varlake.errors import UnsupportedFeatureError

    t = events(tmp_path / "t", properties={**DV_ON, "delta.enableChangeDataFeed": "true"})
    files = sorted(p.name for p in Path(t.path).rglob("*.parquet"))
    with pytest.raises(UnsupportedFeatureError, match="change data feed"):
        t.update("id = 1", {"x": "0"})
    assert sorted(p.name for p in Path(t.path).rglob("*.parquet")) == files and not bin_files(Path(t.path))


def test_stage_retirements_retires_positions_and_writes_new_rows(tmp_path: Path) -> None:
    from varlake.read import plan_scan
    from varlake.delta.transaction import ReadSet
    from varlake.read.row_matches import RowMatcher

    t = events(tmp_path / "t", properties=DV_ON)
    snapshot = t.snapshot()
    plan = plan_scan(snapshot, t.log.root_location, "id < 20")
    (task,) = plan.tasks
    found = RowMatcher(plan, t.read_source, t.deleted_rows).match(task)
    new = found.rows.slice(0, 1).set_column(0, "id", pa.array([500], pa.int64()))
    reads = ReadSet(frozenset({task.add.path}))
    staged = row_changes.stage_retirements(
        t, snapshot, "MERGE", [(found, np.array([0, 1, 2]))], new, reads, {"predicate": "x"},
        counts={"deleted": 2, "updated": 1, "inserted": 0}, plan=plan,
    )  # fmt: skip
    result = row_changes.commit_change(t, staged)
    assert (result.num_deleted_rows, result.num_updated_rows, result.num_deletion_vectors_added) == (2, 1, 1)
    assert ids(t) == [i for i in range(3, 40)] + [500]


def test_a_concurrent_metadata_change_conflicts(tmp_path: Path) -> None:
    from dataclasses import replace

    from varlake.errors import MetadataChangedError

    t = events(tmp_path / "t", properties=DV_ON)
    staged = row_changes.stage_delete(t, "id = 1")
    metadata = t.snapshot().metadata
    t.log.commit([replace(metadata, configuration={**metadata.configuration, "delta.checkpointInterval": "5"})], "SET TBLPROPERTIES")
    with pytest.raises(MetadataChangedError, match="metadata"):
        row_changes.commit_change(t, staged)
    assert t.delete("id = 1", retries=1).num_deleted_rows == 1


def _compact(t: Table, path: str) -> None:
    """A concurrent OPTIMIZE of one file: its rows copied to a new file (dataChange=false)."""
    import shutil as _shutil
    from dataclasses import replace

    (old,) = [f for f in t.files() if f.path == path]
    assert old.deletion_vector is None
    new_path = "compacted-" + path.rsplit("/", 1)[-1]
    _shutil.copy(Path(t.path) / path, Path(t.path) / new_path)
    t.log.commit([old.remove(1, data_change=False), replace(old, path=new_path, data_change=False)], "OPTIMIZE")


@pytest.mark.parametrize("ours", ["delete", "update"])
@pytest.mark.parametrize(
    ("winner", "isolation", "error"),
    [
        ("insert", "WriteSerializable", None),
        ("insert", "Serializable", ConcurrentAppendError),
        ("delete", "WriteSerializable", ConcurrentDeleteDeleteError),
        ("update", "WriteSerializable", ConcurrentDeleteDeleteError),
        ("optimize", "WriteSerializable", ConcurrentDeleteDeleteError),
        ("optimize", "Serializable", ConcurrentDeleteDeleteError),
    ],
)
def test_conflict_matrix(tmp_path: Path, ours: str, winner: str, isolation: str, error) -> None:
    """Delta's conflict matrix, rows that apply to a DELETE/UPDATE of one file's row."""
    t = events(tmp_path / "t", properties={**DV_ON, "delta.isolationLevel": isolation})
    staged = row_changes.stage_delete(t, "id = 1") if ours == "delete" else row_changes.stage_update(t, {"x": "0"}, "id = 1")
    (path,) = {a.path for a in staged.actions if hasattr(a, "deletion_timestamp")}
    if winner == "insert":
        t.append([{"id": 1, "x": 1}])  # a blind append of a row the condition matches
    elif winner == "delete":
        t.delete("id = 2")
    elif winner == "update":
        t.update("id = 2", {"x": "9"})
    else:
        _compact(t, path)
    version = t.version
    if error is None:
        assert row_changes.commit_change(t, staged).version == version + 1
    else:
        with pytest.raises(error):
            row_changes.commit_change(t, staged)
        assert t.version == version


def test_random_file_prefixes_put_dv_files_in_a_prefix_directory(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, m int", properties={"delta.randomizeFilePrefixes": "true"})
    t.append([{"id": i, "m": i % 3} for i in range(3000)])
    t.delete("m = 0")
    (path,) = bin_files(Path(t.path))
    (add,) = t.files()
    prefix = add.deletion_vector["pathOrInlineDv"][:-20]
    assert len(prefix) == 2 and path.parent.name == prefix and path.parent.parent == Path(t.path)
    assert decode_bin(path)[0][1] == list(range(0, 3000, 3))
    assert ids(t) == [i for i in range(3000) if i % 3]
