"""varlake.write.staging.commit: the one commit path -- modes, txn idempotency, blind-append
rebase, named conflicts, and the table left as it was when a write loses."""

from __future__ import annotations

from pathlib import Path

import pytest

from varlake import Table
from varlake.errors import CommitConflictError, ShreddingConflictError, TableError, TableExistsError
from varlake.write import PendingWrite, commit_write

SHREDDED = {"delta.enableVariantShredding": "true"}


def _ids(t: Table) -> list[int]:
    return sorted(r["id"] for r in t.scan(columns=["id"]).to_arrow().to_pylist())


def _objects(start: int, n: int = 5) -> list[dict]:
    return [{"id": i, "v": {"a": i, "b": f"s{i}"}} for i in range(start, start + n)]


def test_txn_makes_a_retried_write_a_noop(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant")
    assert t.append(_objects(0), app_id="job", app_version=1) == 1
    assert t.append(_objects(0), app_id="job", app_version=1) is None
    assert t.append(_objects(0), app_id="job", app_version=0) is None  # older versions too
    # a write staged before the first commit, committed after it: still a no-op
    staged = t.stage(_objects(0), "append", t.snapshot(0))
    assert commit_write(t.log, staged, app_id="job", app_version=1).version is None
    assert t.version == 1 and _ids(t) == list(range(5))
    assert t.append(_objects(5), app_id="job", app_version=2) == 2
    assert t.snapshot().app_version("job") == 2
    with pytest.raises(TableError, match="app_version"):
        commit_write(t.log, t.stage(_objects(9)), app_id="x")


def test_an_append_that_lost_is_rebased_when_the_stored_schema_is_the_same(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties=SHREDDED)
    base = t.snapshot()
    first, second = t.stage(_objects(0), snapshot=base), t.stage(_objects(100), snapshot=base)
    assert first.metadata is not None and second.metadata is not None, "both infer the first shredding schema"
    assert dict(first.stored) == dict(second.stored) and first.stored["v"]
    assert commit_write(t.log, first).version == 1
    # the second changes metaData on a stale version: a conflict; same stored schema: rebased
    assert commit_write(t.log, second).version == 2
    t = Table(t.path)
    assert _ids(t) == list(range(5)) + list(range(100, 105))
    assert t.properties["varlake.shredding.v"] == first.stored["v"]
    assert [h.operation for h in t.history()][:2] == ["WRITE", "WRITE"]


def test_an_append_whose_files_assume_another_shredding_schema_is_a_named_conflict(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties=SHREDDED)
    base = t.snapshot()
    objects = t.stage(_objects(0), snapshot=base)
    arrays = t.stage([{"id": 50 + i, "v": [i, i + 1]} for i in range(5)], snapshot=base)
    assert objects.stored != arrays.stored
    commit_write(t.log, objects)
    before = Table(t.path)
    with pytest.raises(ShreddingConflictError, match="shredding schemas"):
        commit_write(t.log, arrays)
    after = Table(t.path)
    assert after.version == before.version == 1 and _ids(after) == list(range(5))
    assert after.properties == before.properties
    assert isinstance(ShreddingConflictError("x"), CommitConflictError)


def test_overwrites_that_race_conflict_and_leave_the_winner(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant")
    t.append(_objects(0))
    base = t.snapshot()
    winner = t.stage(_objects(10), "overwrite", base)
    loser = t.stage(_objects(20), "overwrite", base)
    assert commit_write(t.log, winner).version == 2
    with pytest.raises(CommitConflictError, match="concurrently removed"):
        commit_write(t.log, loser)
    after = Table(t.path)
    assert after.version == 2 and _ids(after) == list(range(10, 15))
    # an append racing an overwrite is fine (WriteSerializable): it lands after it
    stale_append = t.stage(_objects(30), "append", base)
    assert commit_write(t.log, stale_append).version == 3
    assert _ids(Table(t.path)) == list(range(10, 15)) + list(range(30, 35))


def test_modes_and_creating_a_missing_table(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, v variant")
    pending = t.stage(_objects(0))
    with pytest.raises(TableError, match="write mode"):
        commit_write(t.log, PendingWrite(**{**pending.__dict__, "mode": "upsert"}))
    with pytest.raises(TableError, match="write mode"):
        t.write(_objects(0), "upsert")  # type: ignore[arg-type]
    # planned against no table: created at commit, or joined when created meanwhile
    as_new = PendingWrite(**{**pending.__dict__, "snapshot": None, "metadata": None})
    assert commit_write(t.log, as_new) .created is False
    assert _ids(Table(t.path)) == list(range(5))
    with pytest.raises(TableExistsError):
        commit_write(t.log, PendingWrite(**{**as_new.__dict__, "mode": "error"}))
    other = Table.create(tmp_path / "o", "id bigint, w variant")
    with pytest.raises(CommitConflictError, match="another schema"):
        commit_write(other.log, PendingWrite(**{**as_new.__dict__, "root": other.path}))
    assert Table(other.path).version == 0
