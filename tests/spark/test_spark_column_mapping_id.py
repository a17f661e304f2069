"""Column mapping in ``varlake.spark``: ``id`` mode resolves columns by Parquet field id, and
Variant paths of mapped tables are read as pruned shredded leaves.

Tables are built by hand (``handmade_tables``): files whose column names are neither the
logical nor the physical ones (only field ids tell the columns apart), files laid out as
Delta writes them (physical names), and both in one table. Oracles: ``Table.scan`` (which
resolves ids itself) and Spark's own ``variant_get`` over the files read by field id.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from handmade_tables import ID_MODE_ROWS, commit, field, id_mode_table, metadata, protocol, struct

import varlake.spark as vs
from varlake import Table
from varlake.delta.ddl import parse_ddl
from varlake.errors import ColumnMappingError
from varlake.io.parquet_write import write_parquet
from varlake.spark.reading.explain import executed_scans
from varlake.spark.session.local import spark_conf
from varlake.table import to_arrow_table

pytestmark = pytest.mark.spark


def _plain(value: Any) -> Any:
    """Spark rows as plain dicts and lists."""
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_id_mode_files_named_otherwise_are_read_by_field_id(spark: Any, tmp_path: Path) -> None:
    """``col-a`` in the file holds the struct of id 2 and ``col-s`` the long of id 1 (nested
    fields renamed and reordered): Spark reads each by its id, as ``Table.scan`` does."""
    root = id_mode_table(tmp_path / "t")
    assert Table(root).scan().to_arrow().to_pylist() == ID_MODE_ROWS
    assert [_plain(r) for r in vs.read(spark, root).collect()] == ID_MODE_ROWS
    assert [_plain(r) for r in vs.read(spark, root, where="a = 8").collect()] == ID_MODE_ROWS[1:]
    got = vs.sql(spark, "SELECT a, s.c AS c, l[0].b AS b FROM {t} WHERE s.b = 1", t=root).collect()
    assert [tuple(r) for r in got] == [(7, "p", 3)]


def test_id_mode_files_without_field_ids_are_refused(spark: Any, tmp_path: Path) -> None:
    root = id_mode_table(tmp_path / "t", with_ids=False)
    with pytest.raises(ColumnMappingError, match="no field ids"):
        Table(root).scan().to_arrow()
    with pytest.raises(ColumnMappingError, match="no field ids"):
        vs.read(spark, root).collect()


# --- Variant columns of mapped tables ----------------------------------------------------------------------


def _fid(i: int) -> dict[bytes, bytes]:
    return {b"PARQUET:field_id": str(i).encode()}


def _write(root: Path, rel: str, rows: list[dict[str, Any]], names: tuple[str, str]) -> dict:
    """A shredded file of ``rows`` (``id``, ``v``) whose columns are called ``names`` and carry
    field ids 1 and 2; its ``add`` action."""
    tmp = root / f"_tmp_{rel}"
    write_parquet(to_arrow_table(rows, parse_ddl("id bigint, v variant")), tmp, shredding="auto", variant_columns=["v"], row_group_size=4)
    data = pq.read_table(tmp)
    tmp.unlink()
    schema = pa.schema([pa.field(names[0], pa.int64(), metadata=_fid(1)), pa.field(names[1], data.schema.field("v").type, metadata=_fid(2))])
    pq.write_table(pa.Table.from_arrays([data.column("id"), data.column("v")], schema=schema), root / rel, row_group_size=4)
    return {"add": {"path": rel, "partitionValues": {}, "size": (root / rel).stat().st_size, "modificationTime": 1, "dataChange": True}}


def _rows(ids: range) -> list[dict[str, Any]]:
    return [{"id": i, "v": {"a": i, "b": f"t{i}"}} for i in ids]


def _mapped_variant_table(root: Path, mode: str) -> Path:
    """``id bigint, v variant`` under physical names ``col-id``/``col-v``: one file laid out
    by physical names, one (id mode) naming ``v`` ``other`` and ``id`` ``col-v``."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    second = ("col-v", "other") if mode == "id" else ("col-id", "col-v")
    adds = [_write(root, "f1.parquet", _rows(range(10)), ("col-id", "col-v")), _write(root, "f2.parquet", _rows(range(10, 16)), second)]
    schema = struct(field("id", "long", 1, "col-id"), field("v", "variant", 2, "col-v"))
    features = ["columnMapping", "variantType", "variantShredding"]
    config = {"delta.columnMapping.mode": mode, "delta.columnMapping.maxColumnId": "2"}
    commit(root, 0, protocol(3, 7, features, features), metadata(schema, config), *adds)
    return root


@pytest.mark.parametrize("mode", ["name", "id"])
def test_mapped_variant_paths_are_read_as_shredded_leaves(spark: Any, tmp_path: Path, mode: str) -> None:
    root = _mapped_variant_table(tmp_path / mode, mode)
    expected = sorted((r["id"], r["v"]["a"]) for r in _rows(range(16)) if r["v"]["a"] > 3)
    query = "SELECT id, v:a::int AS a FROM {t} WHERE v:a::int > 3"
    explanation = vs.explain(spark, query, t=root, show=False)
    assert [g.kind for g in explanation.plans["t"].groups] == ["shredded"], str(explanation)
    assert f"column mapping: {mode} mode" in str(explanation) and "struct leaves t:$['a'] AS integer" not in str(explanation)
    assert "v:$['a'] AS integer <- byte" in str(explanation)
    df = vs.sql(spark, query, t=root)
    assert sorted(tuple(r) for r in df.collect()) == expected
    schemas = [str(s.requiredSchema().simpleString()) for s in executed_scans(df)]
    assert schemas and all("typed_value:struct<a:struct<typed_value" in s and "metadata" not in s and ",b:" not in s for s in schemas), schemas
    # the same answers as Table.scan, and as Spark's own variant_get over the files read by field id
    scanned = Table(root).scan().to_arrow()
    assert scanned.num_rows == 16
    from pyspark.sql.types import LongType, StructField, StructType, VariantType

    by_id = StructType([StructField("x1", LongType(), True, {"parquet.field.id": 1}), StructField("x2", VariantType(), True, {"parquet.field.id": 2})])
    with spark_conf(spark, {"spark.sql.parquet.fieldId.read.enabled": "true"}):
        plain = spark.read.schema(by_id).parquet(str(root / "f1.parquet"), str(root / "f2.parquet"))
        oracle = sorted(tuple(r) for r in plain.selectExpr("x1", "variant_get(x2, '$.a', 'int') AS a").where("a > 3").collect())
    assert oracle == expected
    # whole Variants and other paths (variant read path) agree too
    got = vs.sql(spark, "SELECT id, v:b::string AS b, to_json(v) AS j FROM {t} WHERE id % 5 = 0", t=root).collect()
    assert sorted(tuple(r) for r in got) == [(i, f"t{i}", f'{{"a":{i},"b":"t{i}"}}') for i in (0, 5, 10, 15)]


@pytest.mark.parametrize("mode", ["name", "id"])
def test_files_laid_out_by_physical_name_still_skip_row_groups(spark: Any, tmp_path: Path, mode: str) -> None:
    """Spark's Parquet filters go by name: files holding their ids under the physical names
    (f1 here, ids 0..9 in row groups of 4) are read under those names, so ``id >= 12``
    skips all of f1's row groups; f2 (id mode: other names) is read by id, unskipped."""
    root = _mapped_variant_table(tmp_path / mode, mode)
    df = vs.read(spark, root, columns=["id"], where="id >= 12")
    assert sorted(r.id for r in df.collect()) == [12, 13, 14, 15]
    assert sum(n.metrics().apply("numOutputRows").value() for n in executed_scans(df)) <= 6
