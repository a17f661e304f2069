"""Deletion vector descriptors and the RoaringBitmapArray decoder (``varlake.delta.deletion_vectors``).

Oracles: Delta's own DV files in the shared golden tables (their ``add`` actions state
the cardinality; Delta's tests state which rows are deleted) and ``pyroaring``'s
independent 64-bit serialization for random sets, indexes above 2**32 included.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from dv_tables import inline_descriptor, serialize_dv, write_dv_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from varlake.delta.deletion_vectors import (
    MAGIC,
    DeletionVector,
    decode_bitmap,
    keep_mask,
    load_deleted_rows,
)
from varlake.errors import CorruptDeletionVectorError, UnsafePathError, VarlakeError

from golden_expected import GOLDEN  # noqa: E402 - one place says where the golden tables are

# Rows Delta's tests say each DELETE removed (DeletionVectorSuite in kernel-defaults and
# DeletionVectorsSuite in spark: basic-dv-no-checkpoint deletes id < 2, table-with-dv-small
# deletes values 0 and 9 of 0..9 -- the first and the last row of its one file).
GOLDEN_DELETED = {
    "basic-dv-no-checkpoint": {"part-00000-a489737f-d477-4d9a-8b4a-bd6a6536df5b-c000.snappy.parquet": [0, 1]},
    "table-with-dv-small": {"r4/part-00000-5521fc5e-6e49-4437-8b2d-ce6a1a94a34a-c000.snappy.parquet": [0, 9]},
}


def _golden_dv_adds(name: str) -> list[dict]:
    adds = []
    for commit in sorted((GOLDEN / name / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            add = json.loads(line).get("add")
            if add and add.get("deletionVector"):
                adds.append(add)
    return adds


def _opener(root: Path):  # noqa: ANN202
    return lambda rel: open(root / rel, "rb")


@pytest.mark.parametrize("name", ["basic-dv-no-checkpoint", "table-with-dv-small", "dv-with-columnmapping"])
def test_delta_dv_files_decode_to_their_cardinality(name: str) -> None:
    root = GOLDEN / name
    adds = _golden_dv_adds(name)
    assert adds
    for add in adds:
        dv = DeletionVector.parse(add["deletionVector"], add["path"])
        rows = load_deleted_rows(dv, _opener(root), str(root), f"{name}: {add['path']}")
        assert len(rows) == add["deletionVector"]["cardinality"]
        assert list(rows) == sorted(set(rows.tolist()))
        assert (rows < json.loads(add["stats"])["numRecords"]).all()
        expected = GOLDEN_DELETED.get(name, {}).get(add["path"])
        if expected is not None:
            assert rows.tolist() == expected


def test_dv_with_columnmapping_deletes_exactly_the_deleted_rows() -> None:
    """GoldenTables.scala: rows (x % 10, x, "foo" + x % 5) for x < 50, then 15 DELETEs of
    col1 = 0, 2, ..., 28. The latest DV of each data file (checkpoint 10, then the commits
    after it) deletes exactly the rows of that file whose col1 is even and below 30 (a
    DELETE that empties a file removes it instead)."""
    import pyarrow.parquet as pq

    root = GOLDEN / "dv-with-columnmapping"
    def key(action: dict) -> tuple[str, str | None]:  # the logical file: (path, DV uniqueId)
        dv = action.get("deletionVector")
        if not dv:
            return action["path"], None
        return action["path"], f"{dv['storageType']}{dv['pathOrInlineDv']}@{dv.get('offset')}"

    latest: dict[tuple[str, str | None], dict] = {}
    checkpoint = pq.read_table(root / "_delta_log" / "00000000000000000010.checkpoint.parquet").to_pylist()
    for row in checkpoint:
        if row.get("add"):
            latest[key(row["add"])] = row["add"]
    for commit in sorted((root / "_delta_log").glob("*.json")):
        if int(commit.name[:20]) <= 10:
            continue
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                latest[key(action["add"])] = action["add"]
            elif "remove" in action:
                latest.pop(key(action["remove"]), None)
    assert len({path for path, _ in latest}) == len(latest)  # one live logical file per data file
    col1 = "col-9f0743fd-a52e-44a7-92e0-72a3d34231b1"
    survivors: list[int] = []
    for (path, _), add in latest.items():
        values = pq.read_table(root / path, columns=[col1]).column(col1).to_pylist()
        expected = [i for i, x in enumerate(values) if x % 2 == 0 and x < 30]
        descriptor = add.get("deletionVector")
        rows: list[int] = []
        if descriptor is not None:
            descriptor = {k: v for k, v in descriptor.items() if v is not None}
            dv = DeletionVector.parse(descriptor, path)
            rows = load_deleted_rows(dv, _opener(root), str(root), path).tolist()
        assert rows == expected, path
        survivors += [x for i, x in enumerate(values) if i not in rows]
    # kernel-defaults DeletionVectorSuite: the table reads to these col1 values
    assert sorted(survivors) == [x for x in range(50) if not (x % 2 == 0 and x < 30)]


def test_uuid_path_with_random_prefix_follows_the_spec_example() -> None:
    dv = DeletionVector.parse(
        {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4, "sizeInBytes": 40, "cardinality": 6},
        "example",
    )
    assert dv.relative_path("/t", "x") == "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    assert dv.unique_id == "uab^-aqEH.-t@S}K{vb[*k^@4"
    plain = DeletionVector.parse({"storageType": "u", "pathOrInlineDv": "^-aqEH.-t@S}K{vb[*k^", "sizeInBytes": 1, "cardinality": 1}, "x")
    assert plain.relative_path("/t", "x") == "deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"


@pytest.mark.parametrize(
    "descriptor",
    [
        {"storageType": "x", "pathOrInlineDv": "abc", "sizeInBytes": 1, "cardinality": 1},
        {"storageType": "i", "pathOrInlineDv": "", "sizeInBytes": 1, "cardinality": 1},
        {"storageType": "i", "pathOrInlineDv": "wi5b=", "sizeInBytes": -1, "cardinality": 1},
        {"storageType": "i", "pathOrInlineDv": "wi5b=", "sizeInBytes": 4, "cardinality": "2"},
        {"storageType": "i", "pathOrInlineDv": "wi5b=", "offset": 3, "sizeInBytes": 4, "cardinality": 2},
        {"storageType": "u", "pathOrInlineDv": "tooshort", "sizeInBytes": 4, "cardinality": 2},
        {"storageType": "p", "pathOrInlineDv": "/x.bin", "sizeInBytes": True, "cardinality": 2},
        "not an object",
    ],
)
def test_malformed_descriptor_is_a_named_error(descriptor: object) -> None:
    with pytest.raises(CorruptDeletionVectorError, match="add 'f.parquet'"):
        DeletionVector.parse(descriptor, "add 'f.parquet'")  # type: ignore[arg-type]


def test_dv_paths_must_stay_in_the_table_root(tmp_path: Path) -> None:
    escaping = DeletionVector.parse({"storageType": "u", "pathOrInlineDv": "../../^-aqEH.-t@S}K{vb[*k^", "sizeInBytes": 1, "cardinality": 1}, "x")
    with pytest.raises(UnsafePathError):
        escaping.relative_path(str(tmp_path), "t")
    outside = DeletionVector.parse({"storageType": "p", "pathOrInlineDv": "file:///etc/dv.bin", "offset": 1, "sizeInBytes": 1, "cardinality": 1}, "x")
    with pytest.raises(UnsafePathError):
        outside.relative_path(str(tmp_path), "t")
    inside = DeletionVector.parse({"storageType": "p", "pathOrInlineDv": (tmp_path / "a b.bin").as_uri(), "offset": 1, "sizeInBytes": 1, "cardinality": 1}, "x")
    assert inside.relative_path(str(tmp_path), "t") == "a b.bin"


row_sets = st.one_of(
    st.sets(st.integers(0, 2**63 - 1), max_size=40),
    st.sets(st.integers(0, 3 * 2**32), max_size=200),
    st.builds(
        lambda start, n, extra: set(range(start, start + n)) | extra,  # dense runs: bitmap and run containers
        st.integers(0, 2**33), st.integers(0, 9000), st.sets(st.integers(0, 2**34), max_size=20),
    ),
    st.builds(  # every other row of a stretch: more than 4096 in a container without runs (a bitmap container)
        lambda start, n: set(range(start, start + 2 * n, 2)), st.integers(0, 2**33), st.integers(4000, 7000)
    ),
)


@settings(max_examples=150, deadline=None, database=None)
@given(row_sets)
def test_decoder_matches_pyroaring(rows: set[int]) -> None:
    data = serialize_dv(rows)
    assert decode_bitmap(data, "dv").tolist() == sorted(rows)


@settings(max_examples=60, deadline=None, database=None)
@given(st.lists(st.sets(st.integers(0, 2**32 - 1), max_size=30), min_size=0, max_size=4))
def test_native_layout_is_read_as_delta_reads_it(buckets: list[set[int]]) -> None:
    """Delta's readers also take the older layout: magic - 1, a 4-byte count, sized buckets for keys 0, 1, ..."""
    out = bytearray(struct.pack("<II", MAGIC - 1, len(buckets)))
    expected = []
    for key, values in enumerate(buckets):
        body = BitMap(values).serialize()
        out += struct.pack("<I", len(body)) + body
        expected += [key << 32 | v for v in sorted(values)]
    assert decode_bitmap(bytes(out), "dv").tolist() == expected


def test_the_protocol_inline_example_is_in_an_older_layout() -> None:
    """PROTOCOL.md's inline example (rows 3, 4, 7, 11, 18, 29) is serialized big-endian with
    magic 1681511376: neither layout Delta's readers take (they read the magic little-endian
    and refuse it). varlake refuses it too, with the named error."""
    dv = DeletionVector.parse(
        {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", "sizeInBytes": 40, "cardinality": 6},
        "example",
    )
    with pytest.raises(CorruptDeletionVectorError, match="magic number"):
        load_deleted_rows(dv, _opener(Path("/nonexistent")), "/t", "example")


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(row_sets, st.data())
def test_corrupt_bitmap_bytes_never_crash(rows: set[int], data: st.DataObject) -> None:
    """A flipped byte or a cut anywhere: the decoder returns some rows or raises the named error."""
    raw = bytearray(serialize_dv(rows))
    if data.draw(st.booleans()):
        cut = data.draw(st.integers(0, len(raw)))
        raw = raw[:cut]
    else:
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] ^= data.draw(st.integers(1, 255))
    try:
        out = decode_bitmap(bytes(raw), "dv")
    except CorruptDeletionVectorError:
        return
    assert out.dtype == np.uint64


def _stored(tmp_path: Path, rows: list[int]) -> tuple[DeletionVector, Path]:
    data = serialize_dv(rows)
    location = tmp_path / "deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    (offset,) = write_dv_file(location, [data])
    dv = DeletionVector.parse(
        {"storageType": "u", "pathOrInlineDv": "^-aqEH.-t@S}K{vb[*k^", "offset": offset, "sizeInBytes": len(data), "cardinality": len(rows)},
        "x",
    )
    return dv, location


@pytest.mark.parametrize(
    ("flip", "message"),
    [
        (lambda b: b.__setitem__(0, 2), "format version"),  # version byte
        (lambda b: b.__setitem__(4, b[4] ^ 1), "size"),  # size prefix
        (lambda b: b.__setitem__(6, b[6] ^ 0x10), "magic number"),  # magic (its CRC is recomputed below)
        (lambda b: b.__setitem__(len(b) - 1, b[-1] ^ 1), "CRC-32"),  # checksum
        (lambda b: b.__setitem__(20, b[20] ^ 0x40), "CRC-32"),  # a bitmap byte under the checksum
        (lambda b: b.__delitem__(slice(len(b) - 3, None)), "truncated"),
    ],
)
def test_corrupt_dv_file_is_a_named_error(tmp_path: Path, flip, message: str) -> None:  # noqa: ANN001
    dv, location = _stored(tmp_path, [1, 5, 2**32 + 3])
    raw = bytearray(location.read_bytes())
    flip(raw)
    if message == "magic number":  # keep the checksum right so the magic check is what fails
        body = bytes(raw[5 : 5 + dv.size_in_bytes])
        raw[5 + dv.size_in_bytes : 9 + dv.size_in_bytes] = struct.pack(">I", zlib.crc32(body))
    location.write_bytes(bytes(raw))
    with pytest.raises(CorruptDeletionVectorError, match=message) as info:
        load_deleted_rows(dv, _opener(tmp_path), str(tmp_path), "/t: data file 'f.parquet'")
    assert "/t: data file 'f.parquet'" in str(info.value)
    assert "deletion_vector_d2c639aa" in str(info.value)


def test_cardinality_must_match_and_missing_file_is_named(tmp_path: Path) -> None:
    dv, location = _stored(tmp_path, [1, 2, 3])
    wrong = DeletionVector(dv.storage_type, dv.path_or_inline, dv.offset, dv.size_in_bytes, 4)
    with pytest.raises(CorruptDeletionVectorError, match="cardinality is 4"):
        load_deleted_rows(wrong, _opener(tmp_path), str(tmp_path), "t")
    location.unlink()
    with pytest.raises(CorruptDeletionVectorError, match="missing"):
        load_deleted_rows(dv, _opener(tmp_path), str(tmp_path), "t")
    inline = DeletionVector.parse(inline_descriptor(serialize_dv([7]), 2), "x")
    with pytest.raises(CorruptDeletionVectorError, match="cardinality is 2"):
        load_deleted_rows(inline, _opener(tmp_path), str(tmp_path), "t")
    bad_size = DeletionVector.parse({**inline_descriptor(serialize_dv([7]), 1), "sizeInBytes": 3}, "x")
    with pytest.raises(VarlakeError):
        load_deleted_rows(bad_size, _opener(tmp_path), str(tmp_path), "t")


def test_keep_mask_refuses_rows_past_the_file() -> None:
    assert keep_mask(np.array([0, 3], dtype=np.uint64), 5, "f").tolist() == [False, True, True, False, True]
    with pytest.raises(CorruptDeletionVectorError, match="has 5 rows"):
        keep_mask(np.array([5], dtype=np.uint64), 5, "f")
