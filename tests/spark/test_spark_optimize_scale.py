"""The Spark OPTIMIZE runs its content check and its Z-order on the executors.

- A rewrite corrupted on purpose (a row changed, a Variant nulled, a shredded value turned
  into a Variant null, a row dropped) is caught by the executors' multiset digest before
  the commit: ``ContentCheckError`` names how many rows differ and shows one; nothing is
  committed and the new files are deleted. A rewrite that changes only the Variants' bytes
  (``parse_json(to_json(v))``) passes: the digest compares logical values.
- The driver never reads a data file: the Python reader and the old driver-side check are
  made to raise in the driver process (executors run in their own Python workers).
- Clustering: the plan has no window and range-partitions by the Z-value; each output file
  holds a contiguous, sorted range of the key (also when the key's ranks come from a small
  sample), and per-path statistics skip files afterwards.

Oracles: the Python reader's rows before and after; varlake's Python clustering keys
(``write.clustering.key_values``) for each file's key values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from optimize_tables import logical_rows, mixed_table
from varlake import Table
from varlake.errors import ContentCheckError
from varlake.write.maintenance.clustering import key_values, parse_keys, stored_keys
from varlake.write.maintenance.optimize import read_files

pytestmark = pytest.mark.spark


def _corrupting(monkeypatch: pytest.MonkeyPatch, sql: str) -> None:
    """Make the Spark writer of OPTIMIZE write ``sql`` in place of the column ``v``."""
    import varlake.spark.writing.writer as writer

    original = writer.stage_write

    def corrupted(df: Any, *args: Any, **kwargs: Any) -> Any:
        columns = [f"{sql} AS v" if c == "v" else f"`{c}`" for c in df.columns]
        return original(df.selectExpr(*columns), *args, **kwargs)

    monkeypatch.setattr(writer, "stage_write", corrupted)


def _new_files(t: Table, files: set[str]) -> list[Path]:
    return [p for p in Path(t.path).rglob("*.parquet") if p.name not in files]


@pytest.mark.parametrize(
    ("sql", "example"),
    [
        ("CASE WHEN id = 42 THEN NULL ELSE v END", "'id': 42, 'v': None"),
        ("CASE WHEN id = 342 THEN parse_json('{\"a\": null, \"b\": \"x\"}') ELSE v END", "'id': 342"),
    ],
    ids=["sql-null", "shredded-value-nulled"],
)
def test_a_corrupted_rewrite_is_caught_on_the_executors(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sql: str, example: str
) -> None:
    t = mixed_table(tmp_path / "t")
    version, files = t.version, {f.path for f in t.files()}
    _corrupting(monkeypatch, sql)
    with pytest.raises(ContentCheckError, match=r"read 500 rows and wrote 500; 1 of 500 rows read were not written as they were \(1 rows written differ\)") as caught:
        from varlake.spark.changes.optimize import optimize

        optimize(spark, t.path)
    assert example in str(caught.value) and "nothing was committed" in str(caught.value)
    assert t.version == version and {f.path for f in t.files()} == files
    assert not _new_files(t, files)


def test_a_dropped_row_is_caught_on_connect(connect_spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import varlake.spark.writing.writer as writer
    from varlake.spark.changes.optimize import optimize

    t = mixed_table(tmp_path / "t")
    t.delete("id % 100 = 7")
    version, files = t.version, {f.path for f in t.files()}
    original = writer.stage_write
    monkeypatch.setattr(writer, "stage_write", lambda df, *a, **k: original(df.where("id <> 250"), *a, **k))
    with pytest.raises(ContentCheckError, match=r"read 495 rows and wrote 494; 1 of 495 rows read .*'id': 250"):
        optimize(connect_spark, t.path)
    assert t.version == version and {f.path for f in t.files()} == files
    assert not _new_files(t, files)


def test_the_driver_reads_no_data_file(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows are read, ordered, written and checked by the executors: in the driver's
    process the Python reader and the old row-by-row check raise, and OPTIMIZE still runs.
    The writer rebuilds every Variant (``parse_json(to_json(v))``: other bytes, the same
    logical values), which the check accepts."""
    import varlake.read
    import varlake.read.arrow_reader
    import varlake.spark.changes.content_digest
    import varlake.write.maintenance.content_check
    import varlake.write.maintenance.optimize
    from varlake.spark.changes.optimize import optimize

    t = mixed_table(tmp_path / "t")
    t.delete("id % 10 = 0")
    before = logical_rows(t)
    _corrupting(monkeypatch, "parse_json(to_json(v))")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the driver read data files")

    for module, name in [
        (varlake.read, "read_tasks"),
        (varlake.read.arrow_reader, "read_tasks"),
        (varlake.spark.changes.content_digest, "read_tasks"),
        (varlake.write.maintenance.optimize, "read_files"),
        (varlake.write.maintenance.optimize, "read_bin"),
        (varlake.write.maintenance.content_check, "check_same_rows"),
    ]:
        monkeypatch.setattr(module, name, refuse)
    monkeypatch.setattr(Table, "scan", refuse)
    result = optimize(spark, t.path, cluster_by=["v:b::string"])
    monkeypatch.undo()
    assert result.num_rows == 450 and result.num_files_removed == 5
    assert logical_rows(t) == before


def _file_keys(t: Table, key: str) -> list[list[Any]]:
    """Each data file's values of ``key``, in the file's row order (Python reader)."""
    snapshot = t.snapshot()
    (parsed,) = parse_keys([key], snapshot)
    out = []
    for add in t.files():
        rows = read_files(t, snapshot, [add])
        out.append(key_values(rows, parsed).to_pylist())
    return out


def _clustered_table(root: Path, n: int = 1200, files: int = 6) -> Table:
    t = Table.create(root, "id bigint, v variant", properties={"delta.enableVariantShredding": "true"})
    step = n // files
    for k in range(files):
        t.append([{"id": i, "v": {"t": (i * 7919) % n, "col": f"c{(i * 31) % 97:02d}"}} for i in range(k * step, (k + 1) * step)])
    return t


def test_clustering_writes_contiguous_sorted_ranges(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file a contiguous, sorted range of the key, also with ranks from a 16-row sample
    of 1200 distinct values (rows between two sampled values share a Z-value)."""
    import varlake.spark.changes.zorder as zorder
    from varlake.spark.changes.optimize import optimize
    from varlake.write.maintenance.optimize import plan_optimize

    monkeypatch.setattr(zorder, "SAMPLE_ROWS", 16)
    t = _clustered_table(tmp_path / "t")
    assert not t.scan("v:t::bigint = 600").plan().skipped
    before = logical_rows(t)
    data = plan_optimize(t, target_file_size="1gb").estimated_output_bytes
    result = optimize(spark, t.path, cluster_by=["v:t::bigint"], target_file_size=max(data // 6, 1024))
    assert result.num_files_added >= 4 and stored_keys(t.snapshot()) == ("v:t::bigint",)
    assert logical_rows(t) == before
    per_file = [keys for keys in _file_keys(t, "v:t::bigint") if keys]
    assert len(per_file) >= 4
    for keys in per_file:
        assert keys == sorted(keys)  # sorted within each file
    ranges = sorted((min(k), max(k)) for k in per_file)
    for (_, high), (low, _) in zip(ranges, ranges[1:]):
        assert high < low  # disjoint: each file a contiguous range of the key
    plan = t.scan("v:t::bigint = 600").plan()
    assert len(plan.tasks) == 1 and len(plan.skipped) == len(per_file) - 1
    assert t.scan("v:t::bigint = 600").to_arrow().num_rows == 1


def test_two_keys_z_order_skips_on_each_key(spark: Any, tmp_path: Path) -> None:
    from varlake.spark.changes.optimize import optimize
    from varlake.write.maintenance.optimize import plan_optimize

    t = _clustered_table(tmp_path / "t")
    before = logical_rows(t)
    data = plan_optimize(t, target_file_size="1gb").estimated_output_bytes
    result = optimize(spark, t.path, cluster_by=["v:col::string", "v:t::bigint"], target_file_size=max(data // 8, 1024))
    assert result.num_files_added >= 4 and logical_rows(t) == before
    for predicate in ("v:col::string = 'c05'", "v:t::bigint = 600"):
        plan = t.scan(predicate).plan()
        assert len(plan.skipped) >= len(plan.tasks), predicate


def test_the_z_order_plan_has_no_window(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No unpartitioned window: the Z-value is a column, the rows are range-partitioned by it."""
    from varlake.spark.changes.zorder import zordered

    t = Table.create(tmp_path / "t", "id bigint, v variant")
    keys = parse_keys(["v:a::bigint", "id"], t.snapshot())
    df = spark.sql("SELECT id, parse_json(concat('{\"a\": ', id % 13, '}')) AS v FROM range(200)")
    zordered(df, keys, 4, 200).explain()
    plan = capsys.readouterr().out
    assert "Window" not in plan and "rangepartitioning(__vl_z" in plan and "SinglePartition" not in plan


def test_many_bins_are_written_by_one_job(spark: Any, tmp_path: Path) -> None:
    """Bin-packing bins are written together (one partition per output file), each table
    partition into its own files, and checked together."""
    from varlake.spark.changes.optimize import optimize
    from varlake.write.maintenance.optimize import plan_optimize

    t = Table.create(tmp_path / "t", "id bigint, p string, v variant", partition_by=["p"], properties={"delta.enableVariantShredding": "true"})
    for k in range(8):
        t.append([{"id": k * 100 + i, "p": "ab"[i % 2], "v": {"a": i, "s": f"x{k}{i}" * 5}} for i in range(100)])
    t.delete("id % 7 = 0")
    before = logical_rows(t)
    target = plan_optimize(t, target_file_size="1gb").estimated_output_bytes // 6
    plan = plan_optimize(t, target_file_size=target)
    assert len(plan.bins) >= 4
    result = optimize(spark, t.path, target_file_size=target)
    assert result.num_files_removed == 16 and 2 <= result.num_files_added <= plan.estimated_output_files + 2
    assert logical_rows(t) == before and result.num_rows == len(before)
    for add in t.files():  # a file holds one partition's rows
        assert set(read_files(t, t.snapshot(), [add]).column("p").to_pylist()) == {add.partition_values["p"]}
