"""Variant columns in Hudi base files: shredded and unshredded files mixed in one table,
read as Variants, and skipped by the per-path statistics of the shredded ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import varlake
from varlake.write import ENABLE_SHREDDING

PROPERTIES = """hoodie.table.name=variants
hoodie.table.type=COPY_ON_WRITE
hoodie.table.version=6
hoodie.timeline.layout.version=1
hoodie.table.recordkey.fields=id
hoodie.populate.meta.fields=false
hoodie.table.keygenerator.class=org.apache.hudi.keygen.NonpartitionedKeyGenerator
"""


def _parquet_files(delta_root: Path) -> list[Path]:
    return sorted(delta_root.glob("*.parquet"))


def _hudi_table(tmp: Path) -> Path:
    """A copy-on-write Hudi table (version 6, no meta fields) of three base files written by
    varlake: ids 0..99 shredded, 100..199 shredded, 200..299 not shredded."""
    shredded = varlake.Table.create(tmp / "shredded", "id bigint, v variant", properties={ENABLE_SHREDDING: "true"})
    shredded.append([{"id": i, "v": {"user": {"id": i, "name": f"n{i}"}}} for i in range(100)])
    shredded.append([{"id": i, "v": {"user": {"id": i}}} for i in range(100, 200)])
    plain = varlake.Table.create(tmp / "plain", "id bigint, v variant")
    plain.append([{"id": i, "v": {"user": {"id": i}, "extra": [i]}} for i in range(200, 300)])
    files = [*(_parquet_files(tmp / "shredded")), *(_parquet_files(tmp / "plain"))]
    files.sort(key=lambda p: min(r["id"] for r in varlake.read_parquet(p, columns=["id"]).to_pylist()))
    root = tmp / "hudi"
    (root / ".hoodie").mkdir(parents=True)
    (root / ".hoodie" / "hoodie.properties").write_text(PROPERTIES)
    for n, src in enumerate(files):
        instant = f"2024010100000{n}000"
        file_id = f"0000000{n}-aaaa-bbbb-cccc-dddddddddddd-0"
        name = f"{file_id}_0-1-{n}_{instant}.parquet"
        shutil.copy(src, root / name)
        stats = {"partitionToWriteStats": {"": [{"fileId": file_id, "path": name, "numWrites": 100}]}, "operationType": "INSERT"}
        (root / ".hoodie" / f"{instant}.commit.requested").write_text("")
        (root / ".hoodie" / f"{instant}.inflight").write_text("")
        (root / ".hoodie" / f"{instant}.commit").write_text(json.dumps(stats))
    return root


def test_variant_columns_read_and_skip(tmp_path: Path) -> None:
    table = varlake.Table(_hudi_table(tmp_path))
    assert table.schema.to_schema_string().count('"variant"') == 1
    everything = table.scan().to_arrow()
    assert everything.num_rows == 300
    assert everything.schema.field("v").type.extension_name == "arrow.parquet.variant"
    scan = table.scan(filter="v:user.id::bigint = 150")
    got = scan.to_arrow()
    assert got.column("id").to_pylist() == [150]
    read = {t.relative_path for t in scan.plan().tasks}
    skipped = {t.relative_path for t in scan.plan().skipped_by_stats}
    assert len(read) == 2 and len(skipped) == 1  # the other shredded file, by its path bounds
    assert [r["id"] for r in table.scan(filter="v:user.id::bigint >= 250").to_arrow().to_pylist()] == list(range(250, 300))
    names = table.scan(columns=["id"], paths={"v": ["$.user.name"]}, filter="id < 3").to_pandas(variant="json")
    assert sorted(names["v:$.user.name"].tolist()) == ['"n0"', '"n1"', '"n2"']


def test_doctor_on_a_hudi_variant_table(tmp_path: Path) -> None:
    """The shredding doctor reads a Hudi table's Variant column like a Delta table's: the
    unshredded file is counted as drifted from the others' layout."""
    report = varlake.Table(_hudi_table(tmp_path)).doctor(sample=None)
    assert (report.files, report.rows, report.deleted_rows) == (3, 300, 0)
    column = report.column("v")
    assert column is not None
    assert len(report.drifted_files) >= 1
