"""Tables on object stores through the Python API: ``Table``/``locate`` take ``s3://``,
``s3a://``, ``memory://``, ``file://`` URIs and plain paths; the same table operations on a
local folder, the in-memory store and a real S3 server (MinIO); named errors that never show
the secret."""

from __future__ import annotations

import time
import uuid

import pytest

from varlake.errors import UnsupportedStorageError, VarlakeError
from varlake.io.object_store import ObjectStorage
from varlake.io.storage import LocalStorage
from varlake.table import Table, locate

SCHEMA = "id bigint, name string, v variant"


def _root(kind: str, request, tmp_path) -> tuple[str, dict | None]:
    if kind == "local":
        return str(tmp_path / "t"), None
    if kind == "memory":
        return f"memory://m-{uuid.uuid4().hex[:8]}/t", None
    server = request.getfixturevalue("azure_server" if kind == "azure" else "s3_server")
    return server.uri(), server.options()


@pytest.fixture(params=["local", "memory", "s3", "azure"])
def table_root(request, tmp_path):
    """(uri, storage_options) of a fresh table root on each kind of store."""
    return _root(request.param, request, tmp_path)


@pytest.fixture(params=["memory", "s3", "azure"])
def object_root(request, tmp_path):
    """(uri, storage_options) of a fresh table root on an object store."""
    return _root(request.param, request, tmp_path)


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


# --- the same table operations on every store ---------------------------------------------------


def _rows(n0: int, n: int) -> list[dict]:
    return [{"id": i, "name": f"n{i % 3}", "v": {"a": i, "s": f"x{i}"}} for i in range(n0, n0 + n)]


def _ids(table: Table, **scan) -> list[int]:
    return sorted(table.scan(**scan).to_arrow().column("id").to_pylist())


def test_table_operations(table_root, tmp_path, monkeypatch):
    uri, options = table_root
    monkeypatch.chdir(tmp_path)  # nothing of an object-store table may land in a local folder
    properties = {"delta.enableDeletionVectors": "true", "delta.enableVariantShredding": "true"}
    table = Table.create(uri, SCHEMA, partition_by=["name"], properties=properties, storage_options=options)
    assert table.append(_rows(0, 30)) == 1
    assert table.append(_rows(30, 300)) == 2
    assert _ids(table) == list(range(330))
    # skipping by partition values and statistics
    assert table.scan("id >= 50").plan().skipped_by_stats  # the first append's files hold id < 30
    assert table.scan("name = 'n1'").plan().skipped_by_partition
    assert _ids(table, filter="id >= 50") == list(range(50, 330))
    assert _ids(table, filter="name = 'n1'") == [i for i in range(330) if i % 3 == 1]
    # row changes
    assert table.delete("id < 5").num_deleted_rows == 5
    scattered = table.delete("id >= 100 AND id % 2 = 0")  # vectors too big to inline: DV files
    assert scattered.num_deleted_rows == 115 and scattered.num_deletion_vector_files >= 1
    assert table.update(where="id = 10", set={"id": "id + 1000"}).num_updated_rows == 1
    merge = table.merge([{"id": 11, "name": "n2", "v": {"a": -1}}, {"id": 999, "name": "n0", "v": {"a": 99}}], "t.id = s.id")
    merge.when_matched_update_all().when_not_matched_insert_all().execute()
    expected = sorted({*range(5, 100), *range(101, 330, 2), 1010, 999} - {10})
    assert _ids(table) == expected
    before_optimize = table.version
    result = table.optimize()
    assert result.version is not None and result.num_files_added >= 1
    assert _ids(table) == expected
    # time travel, history, checkpoint, vacuum, the doctor, engines
    assert _ids(table, version=1) == list(range(30))
    assert [e.version for e in table.history(3)] == [table.version, table.version - 1, table.version - 2]
    checkpoint = table.checkpoint()
    assert checkpoint.endswith(".checkpoint.parquet") and checkpoint.startswith(table.path)
    reopened = Table(uri, storage_options=options)
    assert reopened.version == table.version and _ids(reopened) == expected
    assert _ids(reopened, version=before_optimize) == expected
    removed = table.vacuum(0, unsafe_retention=True)
    assert removed and all(not p.startswith(("/", "..")) and "://" not in p for p in removed)  # root-relative
    assert not any(table.storage.exists(f"{table.path}/{p}") for p in removed)
    assert _ids(Table(uri, storage_options=options)) == expected
    report = table.doctor(sample=None)
    assert report.rows == len(expected) and [c.column for c in report.columns] == ["v"]
    import duckdb

    relation = table.to_duckdb(duckdb.connect(), "t")
    assert sorted(r[0] for r in relation.select("id").fetchall()) == expected
    assert sorted(table.to_polars()["id"].to_list()) == expected
    if options is not None or uri.startswith("memory://"):
        assert list(tmp_path.iterdir()) == []


def test_absolute_uris_inside_the_root_are_read_and_outside_it_refused(s3_server):
    """Tables written by delta-rs log absolute URIs; one pointing outside the table's prefix or
    bucket is a named error (and never read, never vacuumed)."""
    import json

    from varlake.errors import UnsafePathError

    options = s3_server.options()
    uri = s3_server.uri()
    table = Table.create(uri, SCHEMA, storage_options=options)
    table.append(_rows(0, 3))
    storage = table.storage
    log = f"{table.path}/_delta_log"
    lines = [json.loads(x) for x in storage.read(f"{log}/00000000000000000001.json").decode().splitlines()]
    add = next(a["add"] for a in lines if "add" in a)
    # the file logged again under absolute URIs of the table (s3a:// is the same place)
    previous = add["path"]
    for version, scheme in ((2, "s3a://"), (3, "s3://")):
        path = f"{uri.replace('s3://', scheme)}/{add['path']}"
        commit = [{"remove": {"path": previous, "dataChange": True}}, {"add": dict(add, path=path)}]
        storage.write(f"{log}/{version:020d}.json", "\n".join(json.dumps(c) for c in commit).encode())
        previous = path
    assert _ids(Table(uri, storage_options=options)) == [0, 1, 2]
    outside = dict(add, path=f"s3://{s3_server.bucket}/elsewhere/{add['path']}")
    storage.write(f"{log}/{4:020d}.json", json.dumps({"add": outside}).encode())
    with pytest.raises(UnsafePathError, match="outside the table root") as caught:
        Table(uri, storage_options=options).scan().to_arrow()
    assert s3_server.secret_key not in str(caught.value)


# --- commits on S3: a lost answer, racing processes --------------------------------------------


def test_a_commit_whose_answer_is_lost_lands_once(s3_server):
    from fault_proxy import FaultProxy

    proxy = FaultProxy(int(s3_server.endpoint.rsplit(":", 1)[1]))
    try:
        options = s3_server.options(AWS_ENDPOINT_URL=proxy.endpoint, **{"varlake.retry_timeout": "5"})
        uri = s3_server.uri()
        table = Table.create(uri, SCHEMA, storage_options=options)
        # the server commits version 1, the client never hears so: the create is retried, finds
        # the object, and its bytes (with this commit's own txnId) say it is ours
        proxy.arm("drop_response", "PUT", "_delta_log/00000000000000000001.json")
        assert table.append(_rows(0, 4)) == 1
        assert proxy.fired == 1
        assert table.append(_rows(4, 2)) == 2
    finally:
        proxy.close()
    fresh = Table(uri, storage_options=s3_server.options())
    assert _ids(fresh) == list(range(6))
    assert [e.commit_info.get("txnId") is not None for e in fresh.history()] == [True, True, True]


def _append_worker(uri: str, options, worker: int, start: float, queue) -> None:
    import time

    table = Table(uri, storage_options=options)
    time.sleep(max(0.0, start - time.time()))
    versions = []
    for batch in range(2):
        rows = [{"id": worker * 100 + batch * 10 + i, "name": "x", "v": {"w": worker}} for i in range(3)]
        versions.append(table.append(rows))
    queue.put((worker, versions))


def test_processes_racing_appends_land_every_row_once(s3_server):
    import multiprocessing
    import time

    uri, options = s3_server.uri(), s3_server.options()
    Table.create(uri, SCHEMA, storage_options=options)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    start = time.time() + 4.0
    procs = [ctx.Process(target=_append_worker, args=(uri, options, w, start, queue)) for w in range(3)]
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=90) for _ in procs)
    for p in procs:
        p.join(timeout=30)
    versions = sorted(v for vs in results.values() for v in vs)
    assert versions == list(range(1, 7))  # every append got its own version
    expected = sorted(w * 100 + b * 10 + i for w in range(3) for b in range(2) for i in range(3))
    assert _ids(Table(uri, storage_options=options)) == expected


# --- named errors, never the secret --------------------------------------------------------------


def _named(err_type, fn, secret: str, seconds: float = 90.0):
    import time

    began = time.monotonic()
    with pytest.raises(err_type) as caught:
        fn()
    assert time.monotonic() - began < seconds
    assert secret not in str(caught.value) and secret not in repr(caught.value)
    return caught.value


def test_wrong_credentials_missing_bucket_unreachable_store(s3_server):
    from s3_server import free_port

    from varlake.errors import StorageAccessError, StorageBucketNotFoundError, StorageUnreachableError

    secret = "wrong-" + uuid.uuid4().hex
    uri = s3_server.uri()
    bad = s3_server.options(AWS_SECRET_ACCESS_KEY=secret)
    err = _named(StorageAccessError, lambda: Table.create(uri, SCHEMA, storage_options=bad), secret)
    assert uri in str(err)
    Table.create(uri, SCHEMA, storage_options=s3_server.options())
    _named(StorageAccessError, lambda: Table(uri, storage_options=bad), secret)
    missing = f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/t"
    err = _named(StorageBucketNotFoundError, lambda: Table(missing, storage_options=s3_server.options()), s3_server.secret_key)
    assert "no-such-bucket" in str(err)
    _named(StorageBucketNotFoundError, lambda: Table.create(missing, SCHEMA, storage_options=s3_server.options()), s3_server.secret_key)
    nowhere = s3_server.options(
        AWS_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}", AWS_SECRET_ACCESS_KEY=secret,
        **{"varlake.retry_timeout": "2", "varlake.connect_timeout": "1"},
    )
    _named(StorageUnreachableError, lambda: Table(uri, storage_options=nowhere), secret, 20)
    _named(StorageUnreachableError, lambda: Table.create(s3_server.uri(), SCHEMA, storage_options=nowhere), secret, 20)


def test_the_secret_is_never_shown(s3_server):
    options = s3_server.options()
    uri = s3_server.uri()
    table = Table.create(uri, SCHEMA, storage_options=options)
    table.append(_rows(0, 2))
    shown = [repr(table), repr(table.storage), repr(table.log), repr(table.snapshot()), repr(table.history()),
             repr(table.files()), repr(table.doctor()), repr(table.properties)]
    assert uri in repr(table)
    assert not any(s3_server.secret_key in text for text in shown)


def test_the_first_commit_proves_put_if_absent(tmp_path):
    """A store that overwrites on a conditional create is refused before version 0 is written
    (UnsafeStorageError), unless the table's writer says it is the only one."""
    import obstore

    from varlake.errors import UnsafeStorageError

    class IgnoresPrecondition(ObjectStorage):
        def _put_create(self, key: str, data: bytes) -> None:
            obstore.put(self._create_store, key, data)

    uri = f"memory://m-{uuid.uuid4().hex[:8]}/t"
    unsafe = IgnoresPrecondition.for_uri(uri)
    with pytest.raises(UnsafeStorageError, match="varlake.single_writer"):
        Table.create(uri, SCHEMA, storage=unsafe)
    assert unsafe.list(f"{uri}/_delta_log") == []  # no commit, no probe left behind
    single = IgnoresPrecondition.for_uri(uri, {"varlake.single_writer": "true"})
    table = Table.create(uri, SCHEMA, storage=single)
    assert table.append(_rows(0, 2)) == 1 and _ids(table) == [0, 1]


# --- tables other engines wrote, copied into the store ------------------------------------------


@pytest.mark.parametrize("name", ["v2-checkpoint-json", "basic-dv-no-checkpoint", "multi-part-checkpoint"])
def test_tables_written_by_others_read_the_same_from_a_store(name, object_root):
    """V2 checkpoints with sidecars, deletion-vector files, multi-part checkpoints: read through
    the store as from the local folder."""
    from golden_expected import GOLDEN

    uri, options = object_root
    source = GOLDEN / name
    target = locate(uri, storage_options=options)
    for path in sorted(source.rglob("*")):
        if path.is_file():
            target.storage.write(f"{target.root}/{path.relative_to(source).as_posix()}", path.read_bytes())
    local = Table(source).scan().to_arrow()
    remote = Table(uri, storage_options=options)
    assert remote.version == Table(source).version
    got = remote.scan().to_arrow()
    key = local.column_names[0]
    assert got.sort_by(key).to_pylist() == local.sort_by(key).to_pylist()


def test_vacuum_stays_inside_the_table_prefix(object_root):
    """``t`` and ``tt`` share a key prefix, not a root: vacuuming one never deletes the other's
    files, nor an object beside the table."""
    uri, options = object_root
    sibling = uri + "t"
    table = Table.create(uri, SCHEMA, storage_options=options)
    other = Table.create(sibling, SCHEMA, storage_options=options)
    table.append(_rows(0, 2))
    other.append(_rows(2, 2))
    other.storage.write(f"{sibling}/stray.parquet", b"not referenced")
    table.storage.write(f"{uri}.parquet", b"beside the table")
    table.overwrite(_rows(5, 1))
    time.sleep(0.01)  # a remove of the vacuum's very millisecond is within the retention, and kept
    removed = table.vacuum(0, unsafe_retention=True)
    assert len(removed) == 1 and not removed[0].startswith(("t/", "../"))
    assert _ids(other) == [2, 3] and other.storage.exists(f"{sibling}/stray.parquet")
    assert table.storage.exists(f"{uri}.parquet")


# --- Parquet files at URIs --------------------------------------------------------------------


def test_write_and_read_parquet_at_a_uri(object_root, tmp_path):
    """``write_parquet``/``read_parquet`` take object-store URIs: the file is put whole, its
    Variant groups annotated as a local file's are; reads are ranged; errors name the URI."""
    import io

    import pyarrow as pa

    from varlake import Variant, parse_json, read_parquet, write_parquet
    from varlake.errors import ParquetFooterError
    from varlake.io.parquet_annotate import parse_file_metadata, schema_nodes, is_variant
    from varlake.io.thrift_footer import read_footer_bytes
    from varlake.shred.shred import variant_array

    uri, options = object_root
    values = [parse_json('{"a": 1, "b": "x"}'), parse_json('{"a": 2}'), None]
    data = pa.table({"id": [1, 2, 3], "v": variant_array(values)})
    written = write_parquet(data, f"{uri}/f.parquet", shredding="auto", storage_options=options)
    local = write_parquet(data, tmp_path / "f.parquet", shredding="auto")
    assert written.path == f"{uri}/f.parquet" and written.shredding == local.shredding and written.num_rows == 3
    storage = locate(uri, storage_options=options).storage
    raw = storage.read(f"{uri}/f.parquet")
    assert len(raw) == written.size
    footer = read_footer_bytes(io.BytesIO(raw), len(raw), "f")
    assert [n.path for n in schema_nodes(parse_file_metadata(footer)) if is_variant(n)] == [("v",)]
    back = read_parquet(f"{uri}/f.parquet", storage_options=options, arrow_extension=False)
    assert back.column("id").to_pylist() == [1, 2, 3]
    got = back.column("v").to_pylist()
    assert [Variant(g["metadata"], g["value"]).to_json() if g else None for g in got] == [
        v.to_json() if v is not None else None for v in values
    ]
    storage.write(f"{uri}/bad.parquet", b"not parquet at all")
    with pytest.raises(ParquetFooterError, match=f"{uri}/bad.parquet"):
        read_parquet(f"{uri}/bad.parquet", storage_options=options)


def test_an_append_and_a_scan_make_few_requests(object_root):
    """An append: its data files' PUTs, a listing and the commit's PUT -- no HEAD of a file it
    has just written (sizes known, times from the clock). A scan of one small file: one GET of
    it, no HEAD (the log's size serves), beside the listing that checks for a newer version."""
    uri, options = object_root
    table = Table.create(uri, SCHEMA, partition_by=["name"], storage_options=options)
    storage = table.storage
    assert isinstance(storage, ObjectStorage)
    assert table.append(_rows(0, 3)) == 1  # the table's log read once
    storage.requests.clear()
    assert table.append(_rows(3, 27)) == 2  # three partitions: three data files
    made = dict(storage.requests)
    assert made.get("write") == 3 and "stat" not in made, made
    assert sum(made.values()) - made["write"] <= 3, made
    files = table.snapshot().files
    assert len(files) == 6 and all(f.size > 0 and f.modification_time > 0 for f in files)
    assert {f.size for f in files} == {storage.info(f"{table.path}/{f.path}").size for f in files}
    storage.requests.clear()
    assert _ids(table, filter="name = 'n1' AND id >= 3") == [i for i in range(3, 30) if i % 3 == 1]  # one file
    read = dict(storage.requests)
    assert read == {"list": 1, "read": 1}, read  # the log is current: only the data file is read
    reopened = Table(uri, storage_options=options)  # what the store says of the commit serves too
    assert reopened.version == 2 and _ids(reopened) == list(range(30))
