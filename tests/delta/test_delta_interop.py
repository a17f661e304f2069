"""Interoperability: a Spark-written Variant table, and the ``deltalake`` package both ways."""

from __future__ import annotations

import json
import os
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from varlake.delta import AddFile, DeltaLog, RemoveFile, VariantType
from varlake.delta.schema import StructType
from varlake.io import LocalStorage

VARIANT_ARROW = pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)])


def test_open_spark_variant_table_in_place(testdata: Path) -> None:
    root = testdata / "delta" / "variant-stats-no-checkpoint"
    before = sorted(os.listdir(root / "_delta_log"))
    log = DeltaLog(LocalStorage(), str(root))
    snap = log.snapshot()
    assert snap.version == 1
    assert snap.protocol.reader_features == ("variantType", "variantShredding-preview")
    assert snap.protocol.reader_feature_set == {"variantType", "variantShredding"}
    assert {"variantType", "variantShredding", "appendOnly", "invariants"} == snap.protocol.writer_feature_set
    schema = snap.schema
    assert schema.names == ("i", "v", "nv")
    assert schema.field("v").type == VariantType()
    assert isinstance(schema.field("nv").type, StructType) and schema.field("nv").type.field("v").type == VariantType()
    assert snap.arrow_schema.field("i").type == pa.int32()
    assert snap.arrow_schema.field("v").type == VARIANT_ARROW
    assert snap.arrow_schema.field("nv").type == pa.struct([pa.field("v", VARIANT_ARROW)])
    assert snap.properties["delta.enableVariantShredding"] == "true"
    (f,) = snap.files
    assert f.path == "part-00000-20135f43-a68e-4348-9a46-e6eeed704c0e-c000.snappy.parquet"
    assert f.size == 3390 and f.partition_values == {}
    stats = f.parsed_stats
    assert stats["numRecords"] == 10
    assert stats["minValues"]["i"] == 100 and stats["maxValues"]["i"] == 109
    assert stats["nullCount"] == {"i": 0, "v": 0, "nv": {"v": 0}}
    assert stats["minValues"]["v"].startswith("0rJlc5f$") and "v" in stats["maxValues"]["nv"]
    assert f.tags["SHREDDING_STATE"] == "1"
    assert snap.files_table.column("size").to_pylist() == [3390]
    assert [h.operation for h in log.history()] == ["WRITE", "CREATE OR REPLACE TABLE"]
    assert sorted(os.listdir(root / "_delta_log")) == before  # opened in place, nothing written


def test_varlake_log_is_read_by_deltalake(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = DeltaLog(LocalStorage(), str(root))
    log.create(pa.schema([("id", pa.int32()), ("name", pa.string())]), properties={"delta.checkpointInterval": "2"})
    batches = [
        pa.table({"id": pa.array([1, 2, 3], pa.int32()), "name": ["a", "b", None]}),
        pa.table({"id": pa.array([4, 5], pa.int32()), "name": ["d", "e"]}),
        pa.table({"id": pa.array([6], pa.int32()), "name": ["f"]}),
    ]
    for i, batch in enumerate(batches):
        path = root / f"part-{i:05d}.parquet"
        pq.write_table(batch, path)
        stats = {
            "numRecords": batch.num_rows,
            "minValues": {"id": pc.min(batch["id"]).as_py(), "name": pc.min(batch["name"]).as_py()},
            "maxValues": {"id": pc.max(batch["id"]).as_py(), "name": pc.max(batch["name"]).as_py()},
            "nullCount": {"id": batch["id"].null_count, "name": batch["name"].null_count},
        }
        st = path.stat()
        log.commit([AddFile(path.name, st.st_size, {}, int(st.st_mtime * 1000), True, json.dumps(stats))], "WRITE")
    log.commit([RemoveFile("part-00001.parquet", 1_700_000_000_000)], "DELETE")  # version 4: a checkpoint too
    assert (root / "_delta_log" / "00000000000000000004.checkpoint.parquet").exists()

    table = deltalake.DeltaTable(str(root))
    assert table.version() == 4
    got = table.to_pyarrow_table().sort_by("id")
    expected = pa.concat_tables([batches[0], batches[2]]).sort_by("id")
    assert got.to_pylist() == expected.to_pylist()
    assert deltalake.DeltaTable(str(root), version=2).to_pyarrow_table().num_rows == 5
    assert sorted(table.file_uris()) == sorted(str(root / f"part-{i:05d}.parquet") for i in (0, 2))


def test_deltalake_table_with_checkpoint_is_read(tmp_path: Path) -> None:
    root = tmp_path / "d"
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "part": ["x", "y", None]})
    deltalake.write_deltalake(str(root), data, partition_by=["part"])
    deltalake.write_deltalake(str(root), data, mode="append", partition_by=["part"])
    deltalake.DeltaTable(str(root)).delete("id = 2")  # removes the two files holding id 2
    deltalake.DeltaTable(str(root)).create_checkpoint()
    deltalake.write_deltalake(str(root), data.slice(0, 1), mode="append", partition_by=["part"])
    theirs = deltalake.DeltaTable(str(root))
    actions = pa.table(theirs.get_add_actions(flatten=True))
    expected = {
        path: (size, num)
        for path, size, num in zip(
            actions["path"].to_pylist(), actions["size_bytes"].to_pylist(), actions["num_records"].to_pylist()
        )
    }

    snap = DeltaLog(LocalStorage(), str(root)).snapshot()
    assert snap.version == theirs.version() == 3 and snap.partition_columns == ("part",)
    assert {f.path: (f.size, f.num_records) for f in snap.files} == expected
    assert sorted((f.partition_values["part"] or "") for f in snap.files) == ["", "", "x", "x", "x"]
    assert len(snap.tombstones) == 2 and {t.partition_values["part"] for t in snap.tombstones} == {"y"}
    assert (root / "_delta_log" / "00000000000000000002.checkpoint.parquet").exists()
