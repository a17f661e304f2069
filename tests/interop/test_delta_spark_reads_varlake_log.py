"""varlake -> delta-spark (issue 31, item 2): the log's features.

Column mapping (name and id), deletion vectors after DELETE, UPDATE and MERGE, checkpoints
(varlake's classic ones, and varlake going on after delta-spark's multi-part and V2 ones),
CHECK constraints, type widening, ``txn`` application ids and in-commit timestamps, all in
tables varlake builds; delta-spark reads, describes, filters and writes them (checks in
``delta_spark_checks``).
"""

from __future__ import annotations

import datetime as dt

import pytest

import varlake
from delta_spark_checks import detail, history, ours, peer_writes, same_filtered, same_rows
from oracles.delta_spark import OracleError

MERGE_SOURCE = "SELECT id, n, v FROM {t} WHERE id % 7 = 0 UNION ALL SELECT 5000 id, 1 n, parse_json('[]') v"


def _rows(start: int, n: int) -> list[dict]:
    return [{"id": i, "n": i % 50, "v": {"k": i, "s": f"s{i % 5}"}} for i in range(start, start + n)]


def _dml(table: varlake.Table) -> None:
    """Three files, then a DELETE, an UPDATE and a MERGE that leave deletion vectors."""
    table.append(_rows(0, 30), app_id="app-a", app_version=1)
    table.append(_rows(30, 30), app_id="app-a", app_version=2)
    table.append(_rows(60, 30), app_id="app-b", app_version=7)
    assert table.append(_rows(60, 30), app_id="app-a", app_version=2) is None  # already committed
    table.delete("id % 10 = 3")
    table.update({"n": "n + 100", "v": "parse_json('{\"updated\":true}')"}, where="id BETWEEN 40 AND 44")
    source = [{"id": i, "n": 7, "v": {"merged": i}} for i in (5, 65, 1000)]
    (
        table.merge(source, on="t.id = s.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )


def _dv_files(table: varlake.Table) -> int:
    return sum(f.deletion_vector is not None for f in table.files())


def _as_iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).replace(tzinfo=None).isoformat()


PREDICATES = [
    "id = 13",
    "id > 88",
    "n >= 100",
    "variant_get(v, '$.k', 'int') = 62",
    "variant_get(v, '$.updated', 'boolean')",
    "variant_get(v, '$.merged', 'int') >= 65",
]


def test_column_mapping_name_dvs_constraints_widening_txn_ict(delta_spark, tmp_path):
    t = varlake.Table.create(
        tmp_path / "name",
        "id bigint, n int, v variant",
        properties={
            "delta.columnMapping.mode": "name",
            "delta.enableDeletionVectors": "true",
            "delta.enableInCommitTimestamps": "true",
            "delta.enableTypeWidening": "true",
            "delta.constraints.n_nonneg": "n >= 0",
            "delta.checkpointInterval": "4",
        },
    )
    _dml(t)
    assert _dv_files(t) >= 2
    same_rows(delta_spark, t)
    answers = same_filtered(delta_spark, t, PREDICATES)
    assert answers["id = 13"] == [] and answers["variant_get(v, '$.updated', 'boolean')"] == [40, 41, 42, 44]
    row = detail(delta_spark, t)
    assert {"columnMapping", "deletionVectors", "inCommitTimestamp", "checkConstraints", "typeWidening"} <= set(
        row["tableFeatures"]
    )
    described = history(delta_spark, t)
    ops = [r["operation"] for r in described]
    assert ops[:3] == ["MERGE", "UPDATE", "DELETE"] and ops[-1] == "CREATE TABLE"
    # in-commit timestamps: delta-spark's history times are varlake's inCommitTimestamp
    times = {r["version"]: r["timestamp"]["$timestamp"] for r in described}
    for entry in t.history():
        assert times[entry.version] == _as_iso(entry.commit_info["inCommitTimestamp"]), entry.version
    assert (tmp_path / "name/_delta_log/00000000000000000004.checkpoint.parquet").exists()  # classic, by interval

    # txn: delta-spark skips a write varlake's app id already committed, takes a newer one
    write = (
        "spark.sql(\"SELECT 7000L id, 1 n, parse_json('1') v\").write.format('delta')"
        ".option('txnAppId', 'app-a').option('txnVersion', {v}).mode('append').save({p!r}); result = 1"
    )
    delta_spark.run(write.format(v=2, p=str(t.path)))
    assert ours(varlake.Table(t.path), filter="id = 7000") == []
    delta_spark.run(write.format(v=3, p=str(t.path)))
    assert len(ours(varlake.Table(t.path), filter="id = 7000")) == 1
    assert varlake.Table(t.path).snapshot().app_version("app-a") == 3

    # CHECK constraint: delta-spark refuses what varlake refuses
    with pytest.raises(OracleError, match="(?i)constraint"):
        delta_spark.execute(f"INSERT INTO delta.`{t.path}` VALUES (9000, -1, NULL)")
    with pytest.raises(varlake.errors.ConstraintViolationError):
        varlake.Table(t.path).append([{"id": 9000, "n": -1, "v": None}])

    # type widening by delta-spark (which first needs the constraint on n gone), then varlake
    # writes the wider type
    with pytest.raises(OracleError, match="DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE"):
        delta_spark.execute(f"ALTER TABLE delta.`{t.path}` CHANGE COLUMN n TYPE bigint")
    delta_spark.execute(f"ALTER TABLE delta.`{t.path}` DROP CONSTRAINT n_nonneg")
    delta_spark.execute(f"ALTER TABLE delta.`{t.path}` CHANGE COLUMN n TYPE bigint")
    assert "delta.constraints.n_nonneg" not in varlake.Table(t.path).properties
    t = varlake.Table(t.path)
    assert t.schema.field("n").type.name == "long"
    t.append([{"id": 9001, "n": 2**40, "v": {"wide": True}}])
    t.update({"n": "n + 1"}, where="id = 9001")
    same_rows(delta_spark, t)
    same_filtered(delta_spark, t, ["n > 1099511627776", "n = 1099511627777", "n < 0"])
    peer_writes(delta_spark, t, insert="VALUES (6000, 3, parse_json('{\"k\":6000}'))", merge_source=MERGE_SOURCE.format(t=f"delta.`{t.path}`"))
    t = varlake.Table(t.path)
    t.delete("id = 6000")
    t.checkpoint()
    same_rows(delta_spark, t)
    history(delta_spark, t)


@pytest.mark.slow_oracle
def test_column_mapping_id_partitions_and_delta_spark_checkpoints(delta_spark, tmp_path):
    t = varlake.Table.create(
        tmp_path / "id",
        "id bigint, n int, p string, v variant",
        partition_by=["p"],
        properties={"delta.columnMapping.mode": "id", "delta.enableVariantShredding": "true"},
    )
    t.append([{**r, "p": f"p {r['id'] % 3}"} for r in _rows(0, 45)])
    t.append([{**r, "p": None} for r in _rows(45, 45)])
    t.delete("id % 10 = 3")
    t.update({"n": "n + 100"}, where="id BETWEEN 40 AND 50")
    t.merge([{"id": 5, "n": 1, "p": "p 9", "v": None}], on="t.id = s.id").when_matched_update_all().execute()
    t.checkpoint()
    same_rows(delta_spark, t)
    same_filtered(delta_spark, t, PREDICATES[:3] + ["p = 'p 1'", "p IS NULL", "p = 'p 9'"])
    row = detail(delta_spark, t)
    assert row["partitionColumns"] == ["p"] and "columnMapping" in row["tableFeatures"]
    history(delta_spark, t)

    # a multi-part checkpoint by delta-spark; varlake reads it and writes on
    log = "spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, {p!r})"
    delta_spark.execute("SET spark.databricks.delta.checkpoint.partSize = 2")
    try:
        delta_spark.run(f"{log.format(p=str(t.path))}.checkpoint(); result = 1")
    finally:
        delta_spark.execute("RESET spark.databricks.delta.checkpoint.partSize")
    parts = sorted(p.name for p in (tmp_path / "id/_delta_log").glob(f"{t.version:020d}.checkpoint.*.parquet"))
    assert len(parts) >= 2, parts
    t = varlake.Table(t.path)
    t.append([{"id": 100, "n": 1, "p": "p 1", "v": {"after": "multipart"}}])
    same_rows(delta_spark, t)

    # V2 checkpoints with sidecars by delta-spark; varlake reads, writes and checkpoints on
    delta_spark.execute(f"ALTER TABLE delta.`{t.path}` SET TBLPROPERTIES ('delta.checkpointPolicy' = 'v2')")
    delta_spark.run(f"{log.format(p=str(t.path))}.checkpoint(); result = 1")
    sidecars = list((tmp_path / "id/_delta_log/_sidecars").glob("*.parquet"))
    assert sidecars, sorted(p.name for p in (tmp_path / "id/_delta_log").iterdir())
    t = varlake.Table(t.path)
    assert "v2Checkpoint" in t.protocol.writer_feature_set
    same_rows(delta_spark, t)
    t.append([{"id": 101, "n": 2, "p": None, "v": {"after": "v2"}}])
    t.delete("id = 100")
    t.checkpoint()  # varlake's own checkpoint of a table with V2 checkpoints
    same_rows(delta_spark, t)
    peer_writes(
        delta_spark,
        t,
        insert="VALUES (6000, 3, 'p 2', parse_json('{\"k\":6000}'))",
        merge_source="SELECT id, n, p, v FROM delta.`{}` WHERE id % 7 = 0".format(t.path),
    )
    delta_spark.run(f"{log.format(p=str(t.path))}.checkpoint(); result = 1")
    t = varlake.Table(t.path)
    t.append([{"id": 102, "n": 2, "p": "p 0", "v": None}])
    same_rows(delta_spark, t)
    detail(delta_spark, t)
