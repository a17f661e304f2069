"""Hudi tables on object stores: the same rows from the in-memory store and from S3 (MinIO)
as from a local folder, copy-on-write and merge-on-read, filters skipping the same files."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from hudi_tables import hudi_tables, rows  # noqa: F401

from varlake.table import Table, locate

TABLES = ("cow/v9_txns_simple_nometa", "mor/parquet/v6_complexkeygen_hivestyle", "mor/avro/v9_timebasedkeygen_nonhivestyle")


def _upload(local: Path, uri: str, options: dict | None) -> None:
    location = locate(uri, storage_options=options)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            location.storage.write(f"{location.root}/{path.relative_to(local).as_posix()}", path.read_bytes())


@pytest.fixture(params=["memory", "s3"])
def store(request) -> tuple[str, dict | None]:
    if request.param == "memory":
        return f"memory://h-{uuid.uuid4().hex[:8]}", None
    server = request.getfixturevalue("s3_server")
    return server.uri(), server.options()


def test_hudi_tables_on_object_stores(hudi_tables: dict[str, Path], store, tmp_path, monkeypatch) -> None:
    base, options = store
    monkeypatch.chdir(tmp_path)
    for n, name in enumerate(TABLES):
        uri = f"{base.rstrip('/')}/t{n}"
        _upload(hudi_tables[name], uri, options)
        remote = Table(uri, storage_options=options)
        local = Table(hudi_tables[name])
        assert rows(remote.scan().to_arrow()) == rows(local.scan().to_arrow()), name
        assert [e.version for e in remote.history()] == [e.version for e in local.history()]
    remote = Table(f"{base.rstrip('/')}/t0", storage_options=options)
    plan = remote.scan(filter="region = 'us'").plan()
    assert len(plan.skipped_by_stats) == 3 and len(plan.tasks) == 2
    assert list(tmp_path.iterdir()) == []
