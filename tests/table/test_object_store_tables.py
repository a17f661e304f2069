"""Tables on object stores through the Python API: ``Table``/``locate`` take ``s3://``,
``s3a://``, ``memory://``, ``file://`` URIs and plain paths; the same table operations on a
local folder, the in-memory store and a real S3 server (MinIO); named errors that never show
the secret."""

from __future__ import annotations

import uuid

import pytest

from varlake.errors import UnsupportedStorageError, VarlakeError
from varlake.io.object_store import ObjectStorage
from varlake.io.storage import LocalStorage
from varlake.table import Table, locate

SCHEMA = "id bigint, name string, v variant"


@pytest.fixture(params=["local", "memory", "s3"])
def table_root(request, tmp_path):
    """(uri, storage_options) of a fresh table root on each kind of store."""
    if request.param == "local":
        return str(tmp_path / "t"), None
    if request.param == "memory":
        return f"memory://m-{uuid.uuid4().hex[:8]}/t", None
    server = request.getfixturevalue("s3_server")
    return server.uri(), server.options()


# --- choosing the storage ------------------------------------------------------------------------


def test_locate_chooses_the_storage_of_the_uri(tmp_path):
    local = locate(tmp_path / "a")
    assert isinstance(local.storage, LocalStorage) and local.root == str(tmp_path / "a")
    assert locate(f"file://{tmp_path}/a").root == str(tmp_path / "a")
    memory = locate("memory://bkt/x/y")
    assert isinstance(memory.storage, ObjectStorage) and memory.root == "memory://bkt/x/y"
    s3a = locate("s3a://bkt/t/", storage_options={"AWS_REGION": "us-east-1"})
    assert isinstance(s3a.storage, ObjectStorage) and s3a.root == "s3://bkt/t"


@pytest.mark.parametrize("uri", ["hdfs://namenode/t", "ftp://host/t", "s3x://b/t"])
def test_unknown_scheme_is_named_and_makes_no_local_folder(uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnsupportedStorageError) as caught:
        Table.create(uri, SCHEMA)
    assert uri in str(caught.value) and isinstance(caught.value, VarlakeError)
    with pytest.raises(UnsupportedStorageError):
        Table(uri)
    assert list(tmp_path.iterdir()) == []


def test_s3_table_is_made_in_the_bucket_not_in_a_local_folder(s3_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = s3_server.uri()
    table = Table.create(uri, SCHEMA, storage_options=s3_server.options())
    assert table.path == uri and isinstance(table.storage, ObjectStorage)
    assert list(tmp_path.iterdir()) == []  # once: a local folder "s3:"
    assert Table(uri, storage_options=s3_server.options()).version == 0
    assert Table(uri.replace("s3://", "s3a://"), storage_options=s3_server.options()).version == 0


def test_memory_table_create_and_open(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = f"memory://m-{uuid.uuid4().hex[:8]}/t"
    Table.create(uri, SCHEMA)
    assert Table(uri).version == 0
    assert list(tmp_path.iterdir()) == []
