"""varlake.write.staging.stage: the one staging path -- the steps run in order around the
engine's hook, a refused protocol or a broken constraint stops the write before any file is
written, and files the engine wrote without rows are deleted, not added."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from varlake import Table
from varlake.errors import ConstraintViolationError
from varlake.write import commit_write
from varlake.write.staging.stage import ArrowFiles, FilePlan, StageTarget, WrittenFile, stage


class Recording(ArrowFiles):
    """varlake's Arrow engine, noting each hook it is asked for; ``empty`` adds a file without rows."""

    def __init__(self, storage: Any, *, empty: bool = False) -> None:
        super().__init__(storage)
        self.calls: list[str] = []
        self.empty = empty

    def conform(self, data: Any, target: StageTarget) -> pa.Table:
        self.calls.append("conform")
        return super().conform(data, target)

    def guard(self, data: pa.Table, target: StageTarget) -> pa.Table:
        self.calls.append("guard")
        return super().guard(data, target)

    def samples(self, data: pa.Table, target: StageTarget, columns: Any, shredding: str) -> Any:
        self.calls.append("samples")
        return super().samples(data, target, columns, shredding)

    def write_files(self, data: pa.Table, files: FilePlan) -> list[WrittenFile]:
        self.calls.append("write_files")
        written = super().write_files(data, files)
        if self.empty:
            pq.write_table(data.schema.empty_table(), f"{files.root}/part-empty.parquet")
            written.append(WrittenFile("part-empty.parquet", {}))
        return written

    def file_facts(self, items: Any, files: FilePlan, footers: Any, known: Any = None) -> Any:
        self.calls.append("file_facts")
        return super().file_facts(items, files, footers, known)


def test_the_steps_run_in_order_and_files_without_rows_are_dropped(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties={"delta.enableVariantShredding": "true"})
    engine = Recording(t.storage, empty=True)
    staged = stage(engine, StageTarget.of(t.path, "append", t.snapshot()), [{"id": 1, "v": {"a": 1}}])
    assert engine.calls == ["conform", "guard", "samples", "write_files", "file_facts"]
    assert [a.num_records for a in staged.pending.adds] == [1]
    assert not (tmp_path / "t" / "part-empty.parquet").exists()
    assert staged.plan.stored["v"] and staged.pending.metadata is not None  # inferred from the sample, stored at commit
    assert commit_write(t.log, staged.pending).version == 1
    assert t.scan().to_arrow().column("id").to_pylist() == [1]


def test_a_broken_constraint_stops_the_write_before_any_file(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint NOT NULL, v variant")
    engine = Recording(t.storage)
    with pytest.raises(ConstraintViolationError):
        stage(engine, StageTarget.of(t.path, "append", t.snapshot()), pa.table({"id": pa.array([None], pa.int64())}))
    assert engine.calls == ["conform", "guard"]
    assert not list((tmp_path / "t").glob("*.parquet"))
