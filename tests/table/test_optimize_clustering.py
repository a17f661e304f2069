"""Clustering by columns and Variant paths (``Table.optimize(cluster_by=...)``,
``varlake.write.maintenance.clustering``): rows ordered by a Z-order curve so per-path statistics skip
files; the keys persist as the ``varlake.clustering`` domain (with the ``domainMetadata``
writer feature) and later ``optimize()`` calls use them; bad keys are named errors.

Oracles: the scan planner's skipped files, the rows before and after, the log's JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from optimize_tables import SHREDDED, logical_rows
from varlake import Table
from varlake.delta import constants as C
from varlake.delta.actions import DomainMetadata, Protocol
from varlake.delta.protocol import with_writer_features
from varlake.errors import ClusteringKeyError, InvalidCommitError
from varlake.write.maintenance.optimize import plan_optimize
from varlake.write.maintenance.clustering import CLUSTERED_TAG, CLUSTERING_DOMAIN, parse_keys, stored_keys, zorder_indices

_PROPS = {"delta.enableVariantShredding": "true"}


def _events(t: Table, files: int, per: int) -> None:
    for k in range(files):
        base = k * per
        t.append(
            [{"id": base + i, "v": {"col": f"c{(base + i) * 13 % 50:02d}", "t": base + i, "x": {"y": i % 5}}} for i in range(per)]
        )


def _data_bytes(t: Table) -> int:
    """The table's data bytes without per-file footers (what OPTIMIZE sizes files by)."""
    return plan_optimize(t, target_file_size="1gb").estimated_output_bytes or 1


def _skipped_share(t: Table, predicate: str) -> float:
    plan = t.scan(predicate).plan()
    return len(plan.skipped) / plan.total_files


def test_clustering_by_a_variant_path_makes_statistics_skip_files(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties=_PROPS)
    _events(t, 10, 200)
    predicate = "v:col::string = 'c17'"
    assert _skipped_share(t, predicate) == 0  # every file holds every collection
    before = logical_rows(t)
    result = t.optimize(cluster_by=["v:col::string"], target_file_size=_data_bytes(t) // 10)
    assert result.num_files_added >= 8
    assert _skipped_share(t, predicate) >= 0.75
    assert logical_rows(t) == before
    assert t.scan(predicate).to_arrow().num_rows == sum(1 for r in before if r[1]["col"].to_python() == "c17")


def test_two_keys_order_by_both(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties=_PROPS)
    _events(t, 8, 250)
    t.optimize(cluster_by=["v:col::string", "v:t::bigint"], target_file_size=_data_bytes(t) // 16)
    assert _skipped_share(t, "v:col::string = 'c03'") >= 0.5
    assert _skipped_share(t, "v:t::bigint BETWEEN 100 AND 120") >= 0.5


def test_keys_persist_and_later_optimizes_use_them(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties=_PROPS)
    _events(t, 4, 50)
    keys = ["v:col::string", "id"]
    first = t.optimize(cluster_by=keys)
    assert stored_keys(t.snapshot()) == tuple(keys) and first.cluster_by == tuple(keys)
    assert C.DOMAIN_METADATA_FEATURE in t.protocol.writer_feature_set
    log = [json.loads(line) for line in (Path(t.path) / "_delta_log" / f"{first.version:020d}.json").read_text().splitlines()]
    (domain,) = [a["domainMetadata"] for a in log if "domainMetadata" in a]
    assert domain["domain"] == CLUSTERING_DOMAIN and json.loads(domain["configuration"]) == {"clusteringColumns": keys}
    assert all(json.loads(f.tags[CLUSTERED_TAG]) == keys for f in t.files())
    assert t.optimize(cluster_by=keys).version is None  # already clustered by these keys: nothing to do
    assert t.optimize().version is None
    _events(t, 3, 10)  # new small files
    again = t.optimize()
    assert again.cluster_by == tuple(keys) and again.num_files_removed == 3 and again.version == t.version
    reopened = Table(t.path)
    assert stored_keys(reopened.snapshot()) == tuple(keys)
    changed = t.optimize(cluster_by=["v:t::bigint"])  # new keys: every file is re-clustered
    assert changed.num_files_removed == len(Table(t.path).snapshot(changed.version - 1).files)
    assert stored_keys(t.snapshot()) == ("v:t::bigint",)


def test_clustering_keys_survive_a_checkpoint(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties=_PROPS)
    _events(t, 2, 20)
    t.optimize(cluster_by=["v:col::string"])
    t.checkpoint()
    t.append([{"id": 1, "v": {"col": "z"}}])
    assert stored_keys(Table(t.path).snapshot()) == ("v:col::string",)


@pytest.mark.parametrize(
    ("key", "match"),
    [
        ("v:col", "give the path a type"),
        ("nope", "nope"),
        ("p", "partition column"),
        ("", "non-empty"),
        ("id + 1", "column or a Variant path"),
    ],
)
def test_bad_keys_are_named(tmp_path: Path, key: str, match: str) -> None:
    t = Table.create(tmp_path / "t", "id bigint, p string, v variant", partition_by=["p"], properties=_PROPS)
    with pytest.raises(ClusteringKeyError, match=match):
        t.optimize(cluster_by=[key])
    with pytest.raises(ClusteringKeyError, match="twice"):
        t.optimize(cluster_by=["id", "ID"])


def test_zorder_puts_nulls_first_and_unconvertible_values_as_null(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties=_PROPS)
    (key,) = parse_keys(["v:n::int"], t.snapshot())
    from varlake.variant import Variant

    values = [{"n": 3}, {"n": "x"}, None, {"n": 1}, {"n": 2}]
    rows = pa.table(
        {
            "id": list(range(5)),
            "v": pa.array(
                [None if v is None else {"metadata": Variant.from_python(v).metadata, "value": Variant.from_python(v).value} for v in values],
                pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)]),
            ),
        }
    )
    order = zorder_indices(rows, [key]).tolist()
    assert set(order[:2]) == {1, 2} and order[2:] == [3, 4, 0]
    assert np.array_equal(np.sort(order), np.arange(5))


def test_a_domain_needs_the_domain_metadata_feature(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint")
    assert C.DOMAIN_METADATA_FEATURE not in t.protocol.writer_feature_set
    with pytest.raises(InvalidCommitError, match="domainMetadata"):
        t.log.commit([DomainMetadata("varlake.x", "{}")], "SET DOMAIN")
    upgraded = with_writer_features(t.protocol, [C.DOMAIN_METADATA_FEATURE])
    assert isinstance(upgraded, Protocol) and upgraded.min_writer_version == 7
    t.log.commit([upgraded, DomainMetadata("varlake.x", "{}")], "SET DOMAIN")
    assert "varlake.x" in t.snapshot().domains
    assert with_writer_features(t.protocol, [C.DOMAIN_METADATA_FEATURE]) is t.protocol


def test_clustering_a_shredded_table_keeps_partitions_apart(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, p string, v variant", partition_by=["p"], properties=SHREDDED)
    for k in range(3):
        t.append([{"id": k * 20 + i, "p": "ab"[i % 2], "v": {"a": i, "b": f"k{i % 4}"}} for i in range(20)])
    before = logical_rows(t)
    t.optimize(cluster_by=["v:b::string"])
    assert sorted(f.partition_values["p"] for f in t.files()) == ["a", "b"]
    assert logical_rows(t) == before


@pytest.mark.parametrize("isolation", ["WriteSerializable", "Serializable"])
def test_a_concurrent_append_survives_the_first_clustering(tmp_path: Path, isolation: str) -> None:
    """Storing the keys upgrades the protocol (``domainMetadata``); the commit is rebased."""
    from varlake.write.maintenance import optimize as opt

    t = Table.create(tmp_path / "t", "id bigint, v variant", properties={**_PROPS, "delta.isolationLevel": isolation})
    _events(t, 3, 20)
    before = logical_rows(t)
    staged = opt.stage_optimize(t, opt.plan_optimize(t, cluster_by=["v:col::string"]))
    t.append([{"id": 999, "v": {"col": "zz", "t": 999, "x": {"y": 1}}}])  # the same shape: no schema change
    result = opt.commit_optimize(t, staged)
    assert result.version == t.version and stored_keys(t.snapshot()) == ("v:col::string",)
    assert [r[0] for r in logical_rows(t)] == sorted([r[0] for r in before] + [999])


def test_a_concurrent_delete_still_fails_the_first_clustering(tmp_path: Path) -> None:
    from varlake.errors import ConcurrentDeleteDeleteError
    from varlake.write.maintenance import optimize as opt

    t = Table.create(tmp_path / "t", "id bigint, v variant", properties=_PROPS)
    _events(t, 3, 20)
    staged = opt.stage_optimize(t, opt.plan_optimize(t, cluster_by=["v:col::string"]))
    t.delete("id = 3")
    version = t.version
    with pytest.raises(ConcurrentDeleteDeleteError):
        opt.commit_optimize(t, staged)
    assert t.version == version and stored_keys(t.snapshot()) is None
