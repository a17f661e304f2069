"""varlake's checkpoint of a table with the ``v2Checkpoint`` feature is V2-spec: the classic-named
file holds a ``checkpointMetadata`` action (PROTOCOL.md "Checkpoint Specs"); tables without
the feature keep V1-spec checkpoints (issue 31: delta-spark writes V2 checkpoints into
varlake's tables, and varlake then checkpoints them)."""

from __future__ import annotations

import pyarrow.parquet as pq

import varlake
from varlake.delta.actions import Protocol


def test_classic_checkpoint_is_v2_spec_on_a_v2_checkpoint_table(tmp_path):
    t = varlake.Table.create(tmp_path / "t", "id bigint, v variant")
    t.append([{"id": 1, "v": {"a": 1}}])
    plain_checkpoint = pq.read_table(t.checkpoint())
    assert "checkpointMetadata" not in plain_checkpoint.column_names
    p = t.protocol
    v2 = Protocol(3, 7, tuple(sorted({*p.reader_features, "v2Checkpoint"})), tuple(sorted({*p.writer_features, "v2Checkpoint"})))
    t.log.transaction(t.snapshot(), "UPGRADE PROTOCOL").set_protocol(v2).commit()
    t.append([{"id": 2, "v": None}])
    table = pq.read_table(t.checkpoint())
    meta = [m for m in table.column("checkpointMetadata").to_pylist() if m is not None]
    assert meta == [{"version": t.version, "tags": None}]
    assert sum(a is not None for a in table.column("add").to_pylist()) == 2
    again = varlake.Table(t.path)
    assert sorted(r["id"] for r in again.scan().to_arrow().to_pylist()) == [1, 2]
    assert again.snapshot().version == t.version
