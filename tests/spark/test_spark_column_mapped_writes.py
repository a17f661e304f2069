"""``varlake.spark.write`` and ``ingest_json`` on column-mapped tables: Spark writes the
DataFrame under physical names (nested too) with ``parquet.field.id`` field ids, partition
directories and values and statistics keyed by physical names, Variant groups unmapped
inside; the table reads back through ``Table.scan``, ``varlake.spark.read`` and (name mode)
``deltalake``; appends to copies of Delta's own mapped golden tables sit next to Delta's files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import varlake.spark as vs
from golden_expected import GOLDEN
from mapped_writes import PHYSICAL, check_add, check_footer, same_layout
from varlake import Table
from varlake.delta import constants as C
from varlake.spark import ingest_json

pytestmark = pytest.mark.spark

NO_DV = {C.PROP_ENABLE_DELETION_VECTORS: "false"}  # deltalake 1.6 refuses deletion vectors
QUERY = (
    "SELECT id, CAST(id % 3 AS INT) AS p, named_struct('a', CAST(id AS INT), 't', named_struct('b', CAST(id AS STRING))) AS s, "
    "array(named_struct('x', id)) AS l, parse_json(concat('{\"k\":', id, ',\"w\":\"', CAST(id % 2 AS STRING), '\"}')) AS v "
    "FROM range({lo}, {hi})"
)


def _df(spark: Any, lo: int, hi: int) -> Any:
    return spark.sql(QUERY.replace("{lo}", str(lo)).replace("{hi}", str(hi)))


def _ids(rows: list[dict[str, Any]]) -> list[int]:
    return sorted(r["id"] for r in rows)


def test_spark_write_creates_and_appends_a_mapped_table(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "t"
    props = {C.PROP_COLUMN_MAPPING_MODE: "name", "delta.enableVariantShredding": "true", **NO_DV}
    first = vs.write(_df(spark, 0, 12), root, partition_by=["p"], properties=props)
    vs.write(_df(spark, 100, 106), root)
    table = Table(root)
    assert first.version == 1 and first.created  # version 0 creates the table
    p = table.protocol
    assert C.COLUMN_MAPPING in p.reader_feature_set and C.COLUMN_MAPPING in p.writer_feature_set
    assert table.properties["delta.columnMapping.maxColumnId"] == "9"
    assert all(f.metadata[PHYSICAL].startswith("col-") for f in table.schema.fields)
    p_phys = table.schema.field("p").metadata[PHYSICAL]
    for add in table.files():
        check_add(add, table.schema, ("p",))
        arrow = check_footer(table.data_file(add), table.schema, ("p",))
        assert f"/{p_phys}=" in add.path  # Spark's partition directories by physical name
    v_type = arrow.field(table.schema.field("v").metadata[PHYSICAL]).type
    assert v_type.get_field_index("typed_value") >= 0  # shredded, inner names unmapped

    expected = list(range(12)) + list(range(100, 106))
    assert _ids(table.scan().to_arrow().to_pylist()) == expected
    assert _ids(table.scan(version=1).to_arrow().to_pylist()) == list(range(12))  # time travel
    got = vs.read(spark, root, columns=["id", "p", "s.t.b AS b", "l[0].x AS x", "v:k::int AS k"]).collect()
    assert sorted((r.id, r.p, r.b, r.x, r.k) for r in got) == [(i, i % 3, str(i), i, i) for i in expected]
    for where, ids in [("p = 1", [i for i in expected if i % 3 == 1]), ("v:k::int >= 100", list(range(100, 106))),
                       ("s.a < 3", [0, 1, 2]), ("v:w::string = '1' AND id > 100", [101, 103, 105])]:  # fmt: skip
        scan = table.scan(where)
        assert _ids(scan.to_arrow().to_pylist()) == ids, where
        assert scan.plan().skipped, where
    where = "v:w::string = '1' AND id > 100 OR p = 0 AND s.a < 3"
    assert sorted(r.id for r in vs.read(spark, root, columns=["id"], where=where).collect()) == [0, 101, 103, 105]


def test_spark_appends_to_created_name_and_id_mode_tables(spark: Any, tmp_path: Path) -> None:
    """Tables made by ``Table.create`` take Spark appends: the ``name``-mode one delta-rs reads,
    the ``id``-mode one varlake's Spark reader accepts (ids under their physical names)."""
    root = tmp_path / "t"
    Table.create(root, "id bigint, s struct<a: int, t: struct<b: string>>", properties={C.PROP_COLUMN_MAPPING_MODE: "name", **NO_DV})
    vs.write(spark.sql("SELECT id, named_struct('a', CAST(id AS INT), 't', named_struct('b', 'x')) AS s FROM range(5)"), root)
    table = Table(root)
    for add in table.files():
        check_footer(table.data_file(add), table.schema)
    import deltalake

    result = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(root))).execute("SELECT * FROM t").read_all()
    rows = sorted(pa.table(result).to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": i, "s": {"a": i, "t": {"b": "x"}}} for i in range(5)]

    id_root = tmp_path / "ids"
    Table.create(id_root, "id bigint, s struct<a: int>", properties={C.PROP_COLUMN_MAPPING_MODE: "id"})
    vs.write(spark.sql("SELECT id, named_struct('a', CAST(id AS INT)) AS s FROM range(4)"), id_root)
    id_table = Table(id_root)
    check_footer(id_table.data_file(id_table.files()[0]), id_table.schema)
    assert sorted(r.id for r in vs.read(spark, id_root, where="s.a >= 2").collect()) == [2, 3]


@pytest.mark.usefixtures("golden_tables")
@pytest.mark.parametrize("name", ["data-skipping-basic-stats-all-types-columnmapping-id", "table-with-columnmapping-mode-name"])
def test_spark_append_to_delta_mapped_table(spark: Any, tmp_path: Path, name: str) -> None:
    """Delta's own tables (id mode; name mode with arrays, maps and structs nested in each
    other) take Spark appends whose files lay out fields exactly as Delta's do."""
    root = tmp_path / "g"
    shutil.copytree(GOLDEN / name, root)
    table = Table(root)
    before = table.scan().to_arrow().to_pylist()
    delta_file = table.data_file(table.files()[0])
    version = vs.write(vs.read(spark, root), root).version
    after = Table(root)
    assert sorted(map(repr, after.scan().to_arrow().to_pylist())) == sorted(map(repr, before * 2))
    log = (root / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    new = {json.loads(x)["add"]["path"] for x in log if x.startswith('{"add"')}
    theirs = pq.read_schema(delta_file)
    for add in [a for a in after.files() if a.path in new]:
        check_add(add, after.schema)
        mine = check_footer(after.data_file(add), after.schema)
        assert same_layout(mine, theirs)
    assert vs.read(spark, root).count() == 2 * len(before)


def test_ingest_into_a_mapped_table(spark: Any, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps({"n": i, "tag": "ab"[i % 2]}) for i in range(30)) + "\n")
    root = tmp_path / "t"
    Table.create(root, "doc variant, n int, tag string", ["tag"], {C.PROP_COLUMN_MAPPING_MODE: "name"})
    result = ingest_json(spark, str(src), root, columns={"n": "$.n::int", "tag": "$.tag::string"}, partition_by=["tag"], shredding="off")
    assert (result.written, result.quarantined) == (30, 0)
    table = Table(root)
    for add in table.files():
        check_add(add, table.schema, ("tag",))
        check_footer(table.data_file(add), table.schema, ("tag",))
    rows = table.scan("tag = 'a' AND n < 10").to_arrow().to_pylist()
    assert sorted(r["n"] for r in rows) == [0, 2, 4, 6, 8]
    assert len(table.scan("tag = 'a'").plan().skipped_by_partition) >= 1
