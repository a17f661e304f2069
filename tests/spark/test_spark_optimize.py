"""OPTIMIZE with Spark (``varlake.spark.optimize``): a table of mixed layouts -- varlake files
under older schemas, unshredded, other leaf types, and a file Spark shredded by its own
layout -- becomes one layout with the same rows; deletion vectors are purged; clustering by
a Variant path orders rows so statistics skip files, and the keys persist.

Oracles: Spark reads the files itself (``spark.read.parquet`` of the live files) for the
rows; pyarrow's footer for each file's layout; the Python path's rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from optimize_tables import STABLE, add_file, doc, logical_rows, mixed_table
from spark_files import spark_shredded_file
from varlake import Table
from varlake.shred.schema import ShreddingSchema
from varlake.spark.changes.optimize import optimize
from varlake.write.maintenance.clustering import CLUSTERED_TAG, stored_keys
from varlake.write.maintenance.layout_drift import layout_status
from varlake.write.maintenance.optimize import plan_optimize

pytestmark = pytest.mark.spark


def _ddls(table: Table) -> set[str | None]:
    out = set()
    for add in table.files():
        t = pq.read_schema(table.data_file(add)).field("v").type
        t = t.storage_type if hasattr(t, "storage_type") else t
        found = ShreddingSchema.from_physical(t)
        out.add(found.ddl if found else None)
    return out


def _spark_rows(spark: Any, table: Table) -> list[tuple[int, str]]:
    """Rows as Spark reads the live files (no DVs in them after OPTIMIZE), JSON text of v."""
    files = [table.data_file(a) for a in table.files()]
    df = spark.read.schema("id bigint, v variant").parquet(*files)
    return sorted((r["id"], r["j"]) for r in df.selectExpr("id", "to_json(v) AS j").collect())


def test_spark_optimize_makes_mixed_layouts_one(spark: Any, tmp_path: Path) -> None:
    t = mixed_table(tmp_path / "t")
    rel = "spark.parquet"
    spark_shredded_file(
        spark, Path(t.path) / rel, [(i, f'{{"a": {i}, "z": "q{i}", "b": "k{i % 3}"}}') for i in range(500, 560)], "a bigint, z string"
    )
    t.commit_files([add_file(t, rel)], "append")
    kinds = {s.path: [d.kind for d in s.drift] for s in layout_status(t)}
    assert kinds[rel] == ["spark-layout"]
    t.delete("id % 10 = 0")
    before = logical_rows(t)
    result = optimize(spark, t.path)
    assert result.engine == "spark" and result.version == t.version
    assert result.num_files_removed == 6 and result.num_deletion_vectors_purged >= 5
    assert _ddls(t) == {ShreddingSchema.parse(STABLE).ddl}
    assert not any(s.drifted for s in layout_status(t)) and not any(f.deletion_vector for f in t.files())
    assert logical_rows(t) == before
    assert len(_spark_rows(spark, t)) == len(before)
    history = t.history(1)[0]
    assert history.operation == "OPTIMIZE"


def test_spark_optimize_clusters_by_a_variant_path(spark: Any, tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties={"delta.enableVariantShredding": "true"})
    for k in range(8):
        t.append([{"id": k * 50 + i, "v": {"col": f"c{(k * 50 + i) * 7 % 40:02d}", "n": i}} for i in range(50)])
    predicate = "v:col::string = 'c17'"
    assert not t.scan(predicate).plan().skipped
    before = logical_rows(t)
    data = plan_optimize(t, target_file_size="1gb").estimated_output_bytes
    result = optimize(spark, t.path, cluster_by=["v:col::string"], target_file_size=max(data // 8, 1024))
    assert result.cluster_by == ("v:col::string",) and result.num_files_added >= 4
    assert stored_keys(t.snapshot()) == ("v:col::string",)
    assert all(f.tags and CLUSTERED_TAG in f.tags for f in t.files())
    plan = t.scan(predicate).plan()
    assert len(plan.skipped) >= len(plan.tasks)  # most files skipped by the per-path statistics
    assert logical_rows(t) == before
    assert t.scan(predicate).to_arrow().num_rows == sum(1 for r in before if r[1]["col"].to_python() == "c17")


def test_spark_optimize_where_and_dry_run(spark: Any, tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, p string, v variant", partition_by=["p"], properties={"delta.enableVariantShredding": "true"})
    for k in range(3):
        t.append([{"id": k * 10 + i, "p": "ab"[i % 2], "v": doc(i)} for i in range(10)])
    dry = optimize(spark, t.path, where="p = 'b'", dry_run=True)
    assert dry.version is None and dry.num_files_removed == 3
    before = logical_rows(t)
    result = optimize(spark, t.path, where="p = 'b'")
    assert result.num_files_removed == 3 and result.num_files_added == 1
    assert sorted(f.partition_values["p"] for f in t.files()) == ["a", "a", "a", "b"]
    assert logical_rows(t) == before


def test_spark_optimize_on_spark_connect(connect_spark: Any, tmp_path: Path) -> None:
    """Only DataFrame and SQL APIs: the same OPTIMIZE runs on a Spark Connect session."""
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties={"delta.enableVariantShredding": "true"})
    for k in range(3):
        t.append([{"id": k * 20 + i, "v": {"col": f"c{i % 4}", "n": i}} for i in range(20)])
    t.delete("id = 5")
    before = logical_rows(t)
    result = optimize(connect_spark, t.path, cluster_by=["v:col::string", "id"])
    assert result.num_files_removed == 3 and result.num_deletion_vectors_purged == 1
    assert stored_keys(t.snapshot()) == ("v:col::string", "id")
    assert logical_rows(t) == before


def test_spark_optimize_checks_the_content(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Spark rewrite that loses a row is caught before the commit; its files are deleted."""
    import varlake.spark.writing.writer as writer
    from varlake.errors import ContentCheckError

    t = mixed_table(tmp_path / "t")
    version, files = t.version, {f.path for f in t.files()}
    original = writer.stage_write
    monkeypatch.setattr(writer, "stage_write", lambda df, *a, **k: original(df.where("id <> 42"), *a, **k))
    with pytest.raises(ContentCheckError, match="read 500 rows and wrote 499"):
        optimize(spark, t.path)
    assert t.version == version and {f.path for f in t.files()} == files
    assert not [p for p in Path(t.path).rglob("*.parquet") if p.name not in files]
