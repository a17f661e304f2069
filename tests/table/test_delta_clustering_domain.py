"""OPTIMIZE with clustering keys writes Delta's clustered-table domain (``delta.clustering``,
physical paths, ``clustering`` writer feature) where the keys allow it, so delta-spark sees the
keys (issue 31); Variant paths, partitioned tables and keys without statistics keep only
varlake's own domain."""

from __future__ import annotations

import json

import varlake
from varlake.write.maintenance.clustering import CLUSTERING_DOMAIN, DELTA_CLUSTERING_DOMAIN


def _domain(t: varlake.Table, name: str):
    d = t.snapshot().domains.get(name)
    return None if d is None or d.removed else json.loads(d.configuration)["clusteringColumns"]


def _rows(n: int) -> list[dict]:
    return [{"id": i, "s": {"k": f"k{i % 4}"}, "v": {"a": i % 3}} for i in range(n)]


def test_columns_become_delta_clustering_with_physical_names(tmp_path):
    t = varlake.Table.create(tmp_path / "t", "id bigint, s struct<k: string>, v variant", properties={"delta.columnMapping.mode": "name"})
    t.append(_rows(10))
    t.append(_rows(10))
    t.optimize(cluster_by=["s.k", "id"])
    t = varlake.Table(t.path)
    schema = t.schema
    s = schema.field("s")
    physical = [
        [s.metadata["delta.columnMapping.physicalName"], s.type.field("k").metadata["delta.columnMapping.physicalName"]],
        [schema.field("id").metadata["delta.columnMapping.physicalName"]],
    ]
    assert _domain(t, DELTA_CLUSTERING_DOMAIN) == physical and physical[1] != [["id"]]
    assert _domain(t, CLUSTERING_DOMAIN) == ["s.k", "id"]
    assert {"clustering", "domainMetadata"} <= t.protocol.writer_feature_set
    t.append(_rows(3))  # varlake goes on writing its clustered table
    assert t.scan().to_arrow().num_rows == 23
    # keys Delta cannot hold: the Delta domain says CLUSTER BY NONE
    t.optimize(cluster_by=["v:a::int"])
    t = varlake.Table(t.path)
    assert _domain(t, DELTA_CLUSTERING_DOMAIN) == [] and _domain(t, CLUSTERING_DOMAIN) == ["v:a::int"]


def test_variant_paths_partitions_and_unindexed_columns_keep_only_varlake_keys(tmp_path):
    cases = [
        ("id bigint, v variant", [], {}, ["v:a::int"]),
        ("id bigint, p string, v variant", ["p"], {}, ["id"]),
        ("id bigint, n int, v variant", [], {"delta.dataSkippingNumIndexedCols": "1"}, ["n"]),
    ]
    for i, (schema, parts, props, keys) in enumerate(cases):
        t = varlake.Table.create(tmp_path / str(i), schema, partition_by=parts, properties=props)
        t.append([{"id": j, "v": {"a": j}, **({"p": "x"} if parts else {}), **({"n": j} if "n int" in schema else {})} for j in range(4)])
        t.optimize(cluster_by=keys)
        t = varlake.Table(t.path)
        assert _domain(t, CLUSTERING_DOMAIN) == keys
        assert _domain(t, DELTA_CLUSTERING_DOMAIN) is None and "clustering" not in t.protocol.writer_feature_set


def test_delta_clustering_domain_needs_the_clustering_feature(tmp_path):
    import pytest

    from varlake.errors import InvalidCommitError

    t = varlake.Table.create(tmp_path / "t", "id bigint", properties={"delta.enableDeletionVectors": "false"})
    log = t.log
    from varlake.delta.actions import Protocol

    with_domains = Protocol(1, 7, None, ("appendOnly", "domainMetadata", "invariants"))
    with pytest.raises(InvalidCommitError, match="system-controlled"):
        log.transaction(log.snapshot()).set_protocol(with_domains).set_domain_metadata(DELTA_CLUSTERING_DOMAIN, '{"clusteringColumns":[["id"]]}').commit()
