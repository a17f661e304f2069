"""Spark DELETE/UPDATE/MERGE on column-mapped tables (``name`` and ``id`` modes) read the
data files under their physical names and give the rows and counts the Python path gives."""

from __future__ import annotations

import shutil
from urllib.parse import unquote
from pathlib import Path

import pytest
from mapped_writes import check_footer
from test_spark_dml import rows, source_df, source_rows

import varlake.spark as vs
from varlake import Table

pytestmark = pytest.mark.spark

SCHEMA = "id bigint, x int, p string, v variant"


def _make(path: Path, mode: str, partitioned: bool, dv: bool) -> Table:
    props = {"delta.columnMapping.mode": mode, "delta.enableDeletionVectors": str(dv).lower(), "delta.enableVariantShredding": "true"}
    t = Table.create(path, SCHEMA, partition_by=["p"] if partitioned else [], properties=props)
    for f in range(2):
        t.append([
            {"id": i, "x": None if i % 7 == 0 else i % 10, "p": "ab"[i % 2], "v": {"user": {"id": i % 5}, "n": i}}
            for i in range(f * 20, (f + 1) * 20)
        ])  # fmt: skip
    return Table(path)


@pytest.mark.parametrize("mode,partitioned,dv", [("name", False, True), ("id", True, False)])
def test_mapped_tables_agree_with_the_python_path(spark, tmp_path: Path, mode: str, partitioned: bool, dv: bool) -> None:
    a, b = tmp_path / "spark", tmp_path / "python"
    _make(a, mode, partitioned, dv)
    shutil.copytree(a, b)
    ta, tb = Table(a), Table(b)
    r1, p1 = vs.delete(spark, a, "x = 3 OR v:n::int < 2"), tb.delete("x = 3 OR v:n::int < 2")
    assert (r1.num_deleted_rows, r1.version) == (p1.num_deleted_rows, p1.version) and r1.num_deleted_rows == 6
    assert rows(a) == rows(b)
    r2 = vs.update(spark, a, {"x": "x + 100", "v": "variant_set(v, '$.n', 0)"}, "id % 4 = 0")
    p2 = tb.update({"x": "x + 100", "v": "variant_set(v, '$.n', 0)"}, where="id % 4 = 0")
    assert r2.num_updated_rows == p2.num_updated_rows > 0
    assert rows(a) == rows(b)
    data = source_rows()
    r3 = vs.merge(spark, a, source_df(spark, data), "t.id = s.id").when_matched_update({"x": "s.x"}).when_not_matched_insert_all().execute()
    p3 = tb.merge(data, "t.id = s.id").when_matched_update({"x": "s.x"}).when_not_matched_insert_all().execute()
    assert (r3.num_updated_rows, r3.num_inserted_rows) == (p3.num_updated_rows, p3.num_inserted_rows) == (9, 7)
    assert rows(a) == rows(b)
    for version in range(ta.version + 1):
        assert rows(a, version) == rows(b, version)
    snapshot = ta.snapshot()
    for add in snapshot.files:  # new files are laid out under physical names with field ids
        check_footer(a / unquote(add.path), snapshot.schema, tuple(snapshot.partition_columns))
    assert sorted(r.id for r in vs.read(spark, a, ["id"]).collect()) == [r[0] for r in rows(a)]
