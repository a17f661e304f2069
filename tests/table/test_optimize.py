"""OPTIMIZE on the Python path (``Table.optimize``, ``varlake.write.maintenance.optimize``): layouts made
one, deletion vectors purged, small files bin-packed, partitions chosen by ``where``, the
commit's shape and its conflicts, and the layout-drift facts it acts on.

Oracles: the rows before and after (Variants compared logically); the files' footers
(``write.layout_drift``, independently ``ShreddingSchema.from_physical`` of pyarrow's schema);
the log's JSON read as text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from optimize_tables import SHREDDED, STABLE, add_file, doc, logical_rows, mixed_table, write_file
from varlake import Table
from varlake.variant import Variant
from varlake.errors import (
    ConcurrentDeleteDeleteError,
    InvalidTablePropertyError,
    OptimizeError,
)
from varlake.shred.schema import ShreddingSchema
from varlake.write.maintenance import optimize as opt
from varlake.write.changes import rows as row_changes
from varlake.write.maintenance.layout_drift import layout_status


def _file_ddls(table: Table) -> set[str | None]:
    """The shredding DDL of ``v`` in every live file, read with pyarrow alone."""
    out = set()
    for add in table.files():
        schema = pq.read_schema(table.data_file(add))
        found = ShreddingSchema.from_physical(schema.field("v").type)
        out.add(found.ddl if found else None)
    return out


def _commit_json(table: Table, version: int) -> list[dict]:
    text = (Path(table.path) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_layout_status_names_each_kind_of_drift(tmp_path: Path) -> None:
    t = mixed_table(tmp_path / "t")
    by_path = {s.path: s for s in layout_status(t)}
    kinds = {p: [d.kind for d in s.drift] for p, s in by_path.items()}
    assert kinds["older.parquet"] == ["older-schema"]
    assert kinds["plain.parquet"] == ["unshredded"]
    assert kinds["types.parquet"] == ["leaf-types"]
    stable = [p for p in kinds if p.startswith("part-")]
    assert len(stable) == 2 and all(kinds[p] == [] and by_path[p].reason is None for p in stable)
    assert "a bigint" in by_path["older.parquet"].reason and STABLE in by_path["older.parquet"].reason


def test_mixed_layouts_become_one_layout_with_identical_rows(tmp_path: Path) -> None:
    t = mixed_table(tmp_path / "t")
    before = logical_rows(t)
    assert len(_file_ddls(t)) == 4
    result = t.optimize()
    assert result.version == t.version and result.num_files_removed == 5 and result.num_files_added == 1
    assert result.num_layout_rewrites == 3 and result.num_rows == 500
    assert _file_ddls(t) == {ShreddingSchema.parse(STABLE).ddl}
    assert not any(s.drifted for s in layout_status(t))
    assert logical_rows(t) == before
    assert t.properties["varlake.shredding.v"] == STABLE  # the stored schema is kept, not re-inferred


def test_unshredded_table_rewrites_shredded_files_unshredded(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant")  # shredding off
    t.commit_files([add_file(t, write_file(t, "s.parquet", [(i, doc(i)) for i in range(50)], "a bigint"))], "append")
    t.append([{"id": 99, "v": doc(99)}])
    (status,) = [s for s in layout_status(t) if s.drifted]
    assert [d.kind for d in status.drift] == ["shredded"]
    before = logical_rows(t)
    t.optimize()
    assert _file_ddls(t) == {None} and logical_rows(t) == before


def test_deletion_vectors_are_purged(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties=SHREDDED)
    for k in range(3):
        t.append([{"id": i, "v": doc(i)} for i in range(k * 100, k * 100 + 100)])
    t.delete("id % 7 = 0")
    assert any(f.deletion_vector for f in t.files())
    before = logical_rows(t)
    result = t.optimize()
    assert result.num_deletion_vectors_purged == 3
    assert not any(f.deletion_vector for f in t.files())
    assert logical_rows(t) == before and all(r[0] % 7 for r in before)
    assert sum(f.num_records for f in t.files()) == len(before)


def test_a_large_file_with_a_deletion_vector_is_rewritten_alone(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties=SHREDDED)
    t.append([{"id": i, "v": doc(i)} for i in range(300)])
    t.delete("id < 10")
    size = t.files()[0].size
    plan = opt.plan_optimize(t, target_file_size=size // 2)  # the file is not small
    assert [len(b.files) for b in plan.bins] == [1] and plan.reasons[t.files()[0].path] == ("deletion-vector",)
    t.optimize(target_file_size=size // 2)
    assert [f.num_records for f in t.files() if f.deletion_vector is None] == [290] or sum(f.num_records for f in t.files()) == 290


def test_bin_packing_and_the_commit_shape(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties=SHREDDED)
    for k in range(12):
        t.append([{"id": i, "v": doc(i)} for i in range(k * 800, k * 800 + 800)])
    before = logical_rows(t)
    data_bytes = opt.plan_optimize(t, target_file_size="1gb").estimated_output_bytes  # footers not counted
    assert data_bytes < sum(f.size for f in t.files())
    target = data_bytes // 3 + 1
    plan = opt.plan_optimize(t, target_file_size=target)
    assert plan.num_files_to_rewrite >= 11 and 3 <= len(plan.bins) <= 4  # a last lone small file stays
    assert all(r == ("small",) for r in plan.reasons.values())
    version = t.version
    result = t.optimize(target_file_size=target)
    assert result.version == version + 1 and result.num_files_added == len(plan.bins)
    actions = _commit_json(t, result.version)
    info = actions[0]["commitInfo"]
    assert info["operation"] == "OPTIMIZE" and info["isBlindAppend"] is False
    assert info["operationMetrics"]["numRemovedFiles"] == str(plan.num_files_to_rewrite)
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]
    assert len(removes) == plan.num_files_to_rewrite and all(a["dataChange"] is False for a in adds + removes)
    assert logical_rows(t) == before
    again = t.optimize(target_file_size=target)  # the output compressed better: at most one more round
    assert again.version is None or again.num_files_added < again.num_files_removed
    assert t.optimize(target_file_size=target).version is None and logical_rows(t) == before


def test_a_lone_small_file_is_left_alone(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties=SHREDDED)
    t.append([{"id": 1, "v": doc(1)}])
    assert opt.plan_optimize(t).is_empty and t.optimize().version is None


def test_where_limits_optimize_to_partitions(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, p string, v variant", partition_by=["p"], properties=SHREDDED)
    for k in range(4):
        t.append([{"id": k * 10 + i, "p": "ab"[i % 2], "v": doc(i)} for i in range(10)])
    before = logical_rows(t)
    result = t.optimize(where="p = 'a'")
    assert result.num_files_removed == 4 and result.num_files_added == 1
    by_partition: dict[str, int] = {}
    for f in t.files():
        by_partition[f.partition_values["p"]] = by_partition.get(f.partition_values["p"], 0) + 1
    assert by_partition == {"a": 1, "b": 4}
    assert logical_rows(t) == before
    with pytest.raises(OptimizeError, match="not partition columns"):
        t.optimize(where="id > 3")
    with pytest.raises(OptimizeError, match="not partition columns"):
        t.optimize(where="p = 'a' AND v:a::int = 1")


def test_target_file_size_property_and_errors(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint", properties={"delta.targetFileSize": "64mb"})
    assert opt.plan_optimize(t).target_file_size == 64 * 1024 * 1024
    assert opt.plan_optimize(t, target_file_size="1kb").target_file_size == 1024
    assert opt.target_file_size({}, None, opt.SPARK_TARGET_FILE_SIZE) == 128 * 1024 * 1024
    for bad in ("-1", "12 parsecs", 0, True):
        with pytest.raises(OptimizeError):
            opt.plan_optimize(t, target_file_size=bad)
    u = Table.create(tmp_path / "u", "id bigint", properties={"delta.targetFileSize": "big"})
    with pytest.raises(InvalidTablePropertyError):
        opt.plan_optimize(u)


def test_dry_run_plans_and_commits_nothing(tmp_path: Path) -> None:
    t = mixed_table(tmp_path / "t")
    version, files = t.version, {f.path for f in t.files()}
    result = t.optimize(dry_run=True)
    assert result.dry_run and result.version is None and result.num_files_removed == 5
    summary = result.plan.summary()
    assert summary["files_to_rewrite"] == 5 and summary["drifted_files"] == 3
    assert t.version == version and {f.path for f in t.files()} == files
    assert sorted(p.name for p in Path(t.path).glob("*.parquet")) == sorted(files)


@pytest.mark.parametrize("isolation", ["WriteSerializable", "Serializable"])
def test_a_concurrent_append_survives(tmp_path: Path, isolation: str) -> None:
    t = mixed_table(tmp_path / "t", {"delta.isolationLevel": isolation})
    before = logical_rows(t)
    staged = opt.stage_optimize(t, opt.plan_optimize(t))
    t.append([{"id": 1000, "v": doc(1000)}])
    result = opt.commit_optimize(t, staged)
    assert result.version == t.version
    rows = logical_rows(t)
    assert [r[0] for r in rows] == [r[0] for r in before] + [1000]
    assert len(t.files()) == 2


def test_a_concurrent_delete_of_a_rewritten_file_fails_the_optimize(tmp_path: Path) -> None:
    t = mixed_table(tmp_path / "t")
    staged = opt.stage_optimize(t, opt.plan_optimize(t))
    t.delete("id = 150")
    version = t.version
    with pytest.raises(ConcurrentDeleteDeleteError, match="concurrently removed"):
        opt.commit_optimize(t, staged)
    assert t.version == version and 150 not in [r[0] for r in logical_rows(t)]
    assert not any(Path(t.data_file(a)).exists() for a in staged.adds)  # the rewrite's files are gone


def test_an_optimize_that_wins_fails_the_concurrent_delete(tmp_path: Path) -> None:
    t = mixed_table(tmp_path / "t")
    staged = row_changes.stage_delete(t, "id = 150")
    t.optimize()
    with pytest.raises(ConcurrentDeleteDeleteError):
        row_changes.commit_change(t, staged)
    assert 150 in [r[0] for r in logical_rows(t)]
    assert t.delete("id = 150", retries=1).num_deleted_rows == 1


def test_optimize_of_a_column_mapped_table(tmp_path: Path) -> None:
    t = Table.create(
        tmp_path / "t", "id bigint, p string, v variant", partition_by=["p"],
        properties={**SHREDDED, "delta.columnMapping.mode": "name"},
    )  # fmt: skip
    for k in range(3):
        t.append([{"id": k * 10 + i, "p": "ab"[i % 2], "v": doc(i)} for i in range(10)])
    t.delete("id = 3")
    before = logical_rows(t)
    result = t.optimize()
    assert result.num_files_added == 2 and logical_rows(t) == before
    assert not any(s.drifted for s in layout_status(t))


def test_optimize_of_a_variant_inside_a_struct(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, s struct<n: int, v: variant>", properties={"delta.enableVariantShredding": "true"})
    for k in range(3):
        values = [Variant.from_python(doc(k * 10 + i) if k else {"a": "x", "z": i}) for i in range(10)]
        t.append([{"id": k * 10 + i, "s": {"n": i, "v": {"metadata": v.metadata, "value": v.value}}} for i, v in enumerate(values)])
    before = sorted(
        ((r["id"], r["s"]["n"], r["s"]["v"] and Variant(r["s"]["v"]["metadata"], r["s"]["v"]["value"])) for r in t.scan().to_arrow().to_pylist()),
        key=lambda r: r[0],
    )
    t.delete("id = 4")
    result = t.optimize()
    assert result.num_files_added == 1 and not any(s.drifted for s in layout_status(t))
    after = sorted(
        ((r["id"], r["s"]["n"], r["s"]["v"] and Variant(r["s"]["v"]["metadata"], r["s"]["v"]["value"])) for r in t.scan().to_arrow().to_pylist()),
        key=lambda r: r[0],
    )
    assert after == [r for r in before if r[0] != 4]
