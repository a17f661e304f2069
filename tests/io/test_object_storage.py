"""``Storage`` on local disk, the in-memory object store and a real S3 server (MinIO): one body
of tests for all three; put-if-absent races from threads and processes; the unknown outcome of a
lost create; named errors that never show the secret."""

from __future__ import annotations

import base64
import io
import multiprocessing
import time
import uuid

import obstore
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from obstore import exceptions as obx

from varlake.errors import (
    StorageAccessError,
    StorageBucketNotFoundError,
    StorageError,
    StorageFileNotFoundError,
    StorageUnreachableError,
    UnsafePathError,
    UnsafeStorageError,
    UnsupportedStorageError,
    VarlakeError,
)
from varlake.io.object_store import ObjectStorage
from varlake.io.storage import LocalStorage
from varlake.io.uris import storage_for
from s3_server import free_port


@pytest.fixture(params=["local", "memory", "s3", "azure"])
def place(request, tmp_path):
    """(storage, root, uri, options) of a fresh table location on each kind of store."""
    if request.param == "local":
        storage, root = storage_for(str(tmp_path / "t"))
        return storage, root, root, None
    if request.param == "memory":
        uri = f"memory://m-{uuid.uuid4().hex[:8]}/t"
        storage, root = storage_for(uri)
        return storage, root, uri, None
    if request.param == "azure":
        server = request.getfixturevalue("azure_server")
        uri = server.uri()
    else:
        server = request.getfixturevalue("s3_server")
        uri = server.uri().replace("s3://", "s3a://")  # s3a:// is the same place
    storage, root = storage_for(uri, server.options())
    return storage, root, uri, server.options()


def test_storage_operations(place):
    storage, root, _uri, _ = place
    log = f"{root}/_delta_log"
    assert storage.list(log) == []
    assert storage.write_if_absent(f"{log}/00.json", b"first") is True
    assert storage.write_if_absent(f"{log}/00.json", b"second") is False
    assert storage.read(f"{log}/00.json") == b"first"
    for name in ("02.json", "01.json", "03.checkpoint.parquet"):
        storage.write(f"{log}/{name}", name.encode())
    storage.write(f"{log}/_sidecars/s.parquet", b"side")
    names = [f.name for f in storage.list(log)]
    assert names == ["00.json", "01.json", "02.json", "03.checkpoint.parquet"]
    assert [f.name for f in storage.list(log, start_after="01.json")] == ["02.json", "03.checkpoint.parquet"]
    assert all(f.path == f"{log}/{f.name}" for f in storage.list(log))
    walked = [f.path[len(root) + 1 :] for f in storage.walk(root)]
    assert walked == [
        "_delta_log/00.json",
        "_delta_log/01.json",
        "_delta_log/02.json",
        "_delta_log/03.checkpoint.parquet",
        "_delta_log/_sidecars/s.parquet",
    ]
    storage.write(f"{log}/01.json", b"replaced")
    assert storage.read(f"{log}/01.json") == b"replaced"
    info = storage.info(f"{log}/01.json")
    assert info.size == len(b"replaced") and info.mtime_ms > 1_600_000_000_000
    assert storage.exists(f"{log}/01.json") and not storage.exists(f"{log}/09.json")
    storage.rename(f"{log}/02.json", f"{root}/moved.json")
    assert not storage.exists(f"{log}/02.json") and storage.read(f"{root}/moved.json") == b"02.json"
    assert storage.delete(f"{root}/moved.json") is True
    assert storage.delete(f"{root}/moved.json") is False
    with pytest.raises(StorageFileNotFoundError):
        storage.read(f"{log}/09.json")
    with pytest.raises(StorageFileNotFoundError):
        storage.info(f"{log}/09.json")


def test_open_read_serves_parquet(place):
    storage, root, _uri, _ = place
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": list(range(5000)), "s": [str(i) for i in range(5000)]}), buf, row_group_size=1000)
    storage.write(f"{root}/part-0.parquet", buf.getvalue())
    with storage.open_read(f"{root}/part-0.parquet") as source:
        meta = pq.read_metadata(source)
    assert meta.num_rows == 5000 and meta.num_row_groups == 5
    with storage.open_read(f"{root}/part-0.parquet") as source:
        table = pq.ParquetFile(source).read_row_group(3)
    assert table.column("id").to_pylist() == list(range(3000, 4000))
    with pytest.raises(StorageFileNotFoundError):
        storage.open_read(f"{root}/missing.parquet")


def test_locations(place):
    storage, root, uri, options = place
    location = storage.location(f"{root}/a/b.parquet")
    assert location.endswith("/a/b.parquet")
    assert storage.location_inside(root, f"{root}/a/b.parquet") == location
    if isinstance(storage, ObjectStorage):
        assert location.startswith(("s3://", "memory://", "az://")) and "s3a://" not in location
        again, again_root = storage_for(uri.replace("s3a://", "s3://"), options)
        assert again_root == root and again.location(f"{again_root}/x") == storage.location(f"{root}/x")
        with pytest.raises(UnsafePathError):
            storage.location_inside(root, f"{root}-other/x.parquet")
        with pytest.raises(UnsafePathError):
            storage.read(f"{root}/../escape")


def _race_threads(storage, path: str, writers: int) -> list[bool]:
    import threading

    results: dict[int, bool] = {}
    barrier = threading.Barrier(writers)

    def one(i: int) -> None:
        barrier.wait()
        results[i] = storage.write_if_absent(path, f"writer {i}".encode())

    threads = [threading.Thread(target=one, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [results[i] for i in range(writers)]


def test_put_if_absent_race_threads(place):
    storage, root, _uri, _ = place
    for version in range(3):
        path = f"{root}/_delta_log/{version:020d}.json"
        won = _race_threads(storage, path, 8)
        assert won.count(True) == 1
        assert storage.read(path) == f"writer {won.index(True)}".encode()


def _process_writer(uri: str, options, version: int, i: int, start: float, queue) -> None:
    storage, root = storage_for(uri, options)
    time.sleep(max(0.0, start - time.time()))
    queue.put((i, storage.write_if_absent(f"{root}/_delta_log/{version:020d}.json", f"process {i}".encode())))


def test_put_if_absent_race_processes(place):
    storage, root, uri, options = place
    if uri.startswith("memory://"):
        pytest.skip("the in-memory store lives in one process")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    start = time.time() + 3.0
    procs = [ctx.Process(target=_process_writer, args=(uri, options, 7, i, start, queue)) for i in range(4)]
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=30)
    assert list(results.values()).count(True) == 1
    winner = next(i for i, won in results.items() if won)
    assert storage.read(f"{root}/_delta_log/{7:020d}.json") == f"process {winner}".encode()


def test_s3a_directory_markers_are_not_files(s3_server):
    storage, root = storage_for(s3_server.uri(), s3_server.options())
    key = root.split("/", 3)[3]
    client = s3_server.client()
    for marker in (f"{key}/_delta_log/", f"{key}/part=1/"):
        client.put_object(s3_server.bucket, marker, io.BytesIO(b""), 0)
    storage.write(f"{root}/_delta_log/00.json", b"{}")
    storage.write(f"{root}/part=1/f.parquet", b"PAR1")
    assert [f.name for f in storage.list(f"{root}/_delta_log")] == ["00.json"]
    assert [f.name for f in storage.list(root)] == []
    assert [f.path[len(root) + 1 :] for f in storage.walk(root)] == ["_delta_log/00.json", "part=1/f.parquet"]


# --- put-if-absent safety and the unknown outcome ---------------------------------------------


class _IgnoresPrecondition(ObjectStorage):
    """A store that answers every create with success, overwriting: what a store without
    conditional writes does."""

    def _put_create(self, key: str, data: bytes) -> None:
        obstore.put(self._create_store, key, data)


class _LostAnswer(ObjectStorage):
    """The first create's answer is lost (a reset after the request was sent); ``landed`` says
    whose bytes the store got meanwhile: ours, someone else's or nobody's."""

    landed = "ours"
    calls = 0

    def _put_create(self, key: str, data: bytes) -> None:
        type(self).calls += 1
        if type(self).calls == 1:
            if self.landed == "ours":
                super()._put_create(key, data)
            elif self.landed == "theirs":
                super()._put_create(key, b"another writer's commit")
            raise OSError("connection reset by peer")
        super()._put_create(key, data)


def _object_place(kind: str, request) -> tuple[str, dict | None]:
    if kind == "memory":
        return f"memory://m-{uuid.uuid4().hex[:8]}/t", None
    server = request.getfixturevalue("azure_server" if kind == "azure" else "s3_server")
    return server.uri(), server.options()


@pytest.mark.parametrize("kind", ["memory", "s3", "azure"])
def test_put_if_absent_is_checked(kind, request):
    uri, options = _object_place(kind, request)
    storage, root = storage_for(uri, options)
    assert storage.check_put_if_absent(f"{root}/_delta_log/.probe") is True
    assert not storage.exists(f"{root}/_delta_log/.probe")

    unsafe = _IgnoresPrecondition.for_uri(uri, options)
    with pytest.raises(UnsafeStorageError, match="put-if-absent") as caught:
        unsafe.check_put_if_absent(f"{root}/_delta_log/.probe")
    assert "varlake.single_writer" in str(caught.value)
    single = _IgnoresPrecondition.for_uri(uri, {**(options or {}), "varlake.single_writer": "true"})
    assert single.check_put_if_absent(f"{root}/_delta_log/.probe") is False
    assert not single.exists(f"{root}/_delta_log/.probe")


@pytest.mark.parametrize("kind", ["memory", "s3", "azure"])
@pytest.mark.parametrize(("landed", "expected"), [("ours", True), ("theirs", False), ("nothing", True)])
def test_unknown_outcome_of_a_lost_create(kind, landed, expected, request):
    uri, options = _object_place(kind, request)
    cls = type("Lost", (_LostAnswer,), {"landed": landed, "calls": 0})
    storage = cls.for_uri(uri, options)
    path = f"{uri}/_delta_log/{0:020d}.json"
    assert storage.write_if_absent(path, b"my commit, token 42") is expected
    assert cls.calls == 2
    assert storage.read(path) == (b"another writer's commit" if landed == "theirs" else b"my commit, token 42")


def test_throttled_requests_are_retried_within_the_budget():
    storage = ObjectStorage.for_uri(f"memory://m-{uuid.uuid4().hex[:8]}", {"varlake.retry_timeout": "1"})
    answers = [obx.GenericError("503 SlowDown: please reduce your request rate")] * 3

    def flaky() -> bytes:
        if answers:
            raise answers.pop()
        return b"ok"

    assert storage._call("read", "x", flaky) == b"ok" and not answers

    def always_throttled() -> bytes:
        raise obx.GenericError("429 Too Many Requests")

    began = time.monotonic()
    with pytest.raises(StorageError, match="memory://m-.*/x"):
        storage._call("read", "x", always_throttled)
    assert time.monotonic() - began < 3


# --- named errors, never the secret ----------------------------------------------------------


@pytest.mark.parametrize("uri", ["hdfs://namenode/t", "ftp://host/t", "s3x://b/t", "wasb:/c/t"])
def test_unknown_scheme_is_named_never_a_local_path(uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnsupportedStorageError, match=uri.split(":")[0]) as caught:
        storage_for(uri)
    assert uri in str(caught.value) and isinstance(caught.value, VarlakeError)
    assert list(tmp_path.iterdir()) == []


def test_options_are_checked():
    with pytest.raises(UnsupportedStorageError, match="aws_secret_acess_key"):
        storage_for("s3://b/t", {"AWS_SECRET_ACESS_KEY": "x"})
    with pytest.raises(UnsupportedStorageError, match="varlake.single_writr"):
        storage_for("s3://b/t", {"varlake.single_writr": "true"})
    with pytest.raises(UnsupportedStorageError, match="GOOGLE"):
        storage_for("/tmp/local-table", {"GOOGLE_SERVICE_ACCOUNT": "x"})


def _assert_quick_named(err_type, fn, secret: str, seconds: float = 20.0):
    began = time.monotonic()
    with pytest.raises(err_type) as caught:
        fn()
    assert time.monotonic() - began < seconds
    assert secret not in str(caught.value) and secret not in repr(caught.value)
    return caught.value


def test_wrong_credentials(s3_server):
    secret = "wrong-" + uuid.uuid4().hex
    uri = s3_server.uri()
    storage, root = storage_for(uri, s3_server.options(AWS_SECRET_ACCESS_KEY=secret))
    assert secret not in repr(storage)
    err = _assert_quick_named(StorageAccessError, lambda: storage.read(f"{root}/x"), secret)
    assert uri in str(err)
    _assert_quick_named(StorageAccessError, lambda: storage.write_if_absent(f"{root}/_delta_log/0.json", b"{}"), secret)
    _assert_quick_named(StorageAccessError, lambda: storage.list(f"{root}/_delta_log"), secret)


def test_missing_bucket(s3_server):
    uri = f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/t"
    storage, root = storage_for(uri, s3_server.options())
    err = _assert_quick_named(StorageBucketNotFoundError, lambda: storage.list(f"{root}/_delta_log"), s3_server.secret_key)
    assert "no-such-bucket" in str(err)
    _assert_quick_named(StorageBucketNotFoundError, lambda: storage.read(f"{root}/x"), s3_server.secret_key)
    _assert_quick_named(
        StorageBucketNotFoundError, lambda: storage.write_if_absent(f"{root}/_delta_log/0.json", b"{}"), s3_server.secret_key
    )


def test_wrong_key_and_missing_container_on_azure(azure_server):
    secret = base64.b64encode(uuid.uuid4().bytes * 4).decode()
    uri = azure_server.uri()
    storage, root = storage_for(uri, azure_server.options(AZURE_STORAGE_ACCOUNT_KEY=secret))
    assert secret not in repr(storage) and azure_server.key not in repr(storage)
    err = _assert_quick_named(StorageAccessError, lambda: storage.read(f"{root}/x"), secret)
    assert uri in str(err)
    _assert_quick_named(StorageAccessError, lambda: storage.write_if_absent(f"{root}/_delta_log/0.json", b"{}"), secret)
    missing = f"az://no-such-container-{uuid.uuid4().hex[:8]}/t"
    storage, root = storage_for(missing, azure_server.options())
    err = _assert_quick_named(StorageBucketNotFoundError, lambda: storage.list(f"{root}/_delta_log"), azure_server.key)
    assert "no-such-container" in str(err)


def test_unreachable_endpoint():
    secret = "unreachable-" + uuid.uuid4().hex
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    options = {
        "AWS_ACCESS_KEY_ID": "k",
        "AWS_SECRET_ACCESS_KEY": secret,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
        "varlake.retry_timeout": "2",
        "varlake.connect_timeout": "1",
    }
    storage, root = storage_for("s3://bucket/t", options)
    assert secret not in repr(storage) and endpoint in repr(storage)
    err = _assert_quick_named(StorageUnreachableError, lambda: storage.read(f"{root}/x"), secret, 10)
    assert "s3://bucket/t/x" in str(err) and endpoint in str(err)
    _assert_quick_named(StorageUnreachableError, lambda: storage.write_if_absent(f"{root}/0.json", b"{}"), secret, 10)
    _assert_quick_named(StorageUnreachableError, lambda: storage.list(root), secret, 10)


def test_environment_then_options(s3_server, monkeypatch):
    """The standard variables are read; storage_options with the same names override them."""
    for key, value in s3_server.options().items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    storage, root = storage_for(s3_server.uri())
    storage.write(f"{root}/x", b"from the environment")
    assert storage.read(f"{root}/x") == b"from the environment"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "a-wrong-secret-from-env")
    bad, _ = storage_for(root)
    with pytest.raises(StorageAccessError):
        bad.read(f"{root}/x")
    good, _ = storage_for(root, {"aws_secret_access_key": s3_server.secret_key})
    assert good.read(f"{root}/x") == b"from the environment"


def test_local_paths_stay_local(tmp_path):
    storage, root = storage_for(tmp_path / "t")
    assert isinstance(storage, LocalStorage) and root == str(tmp_path / "t")
    storage, root = storage_for(f"file://{tmp_path}/t")
    assert isinstance(storage, LocalStorage) and root == str(tmp_path / "t")


def test_empty_files_are_files_and_empty_markers_are_not(s3_server):
    storage, root = storage_for(s3_server.uri(), s3_server.options())
    key = root.split("/", 3)[3]
    s3_server.client().put_object(s3_server.bucket, f"{key}/_delta_log/empty-dir/", io.BytesIO(b""), 0)
    storage.write(f"{root}/_delta_log/empty.json", b"")
    assert [f.name for f in storage.list(f"{root}/_delta_log")] == ["empty.json"]
    assert [f.name for f in storage.list(f"{root}/_delta_log", start_after="a")] == ["empty.json"]
    assert [f.path[len(root) + 1 :] for f in storage.walk(root)] == ["_delta_log/empty.json"]


def test_a_secret_in_a_client_message_is_scrubbed():
    """Should a client's message ever hold a configured secret, the named error does not."""
    secret = "scrub-me-" + uuid.uuid4().hex
    storage = ObjectStorage.for_uri("s3://bucket/t", {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": secret + "tok"})
    err = storage._error(obx.GenericError(f"request failed: key={secret} token={secret}tok"), "read", "t/x")
    assert isinstance(err, StorageError) and "s3://bucket/t/x" in str(err)
    assert secret not in str(err) and "***" in str(err)
    assert secret not in repr(storage)


def test_without_the_server_tests_skip_unless_s3_is_required(monkeypatch, tmp_path):
    from s3_server import require_minio

    monkeypatch.setenv("VARLAKE_MINIO", str(tmp_path / "no-minio"))
    monkeypatch.delenv("VARLAKE_REQUIRE_S3", raising=False)
    with pytest.raises(pytest.skip.Exception, match="make tools"):
        require_minio()
    monkeypatch.setenv("VARLAKE_REQUIRE_S3", "1")
    with pytest.raises(pytest.fail.Exception, match="VARLAKE_REQUIRE_S3"):
        require_minio()


def _committer(uri: str, options, writer: int, commits: int, start: float, queue) -> None:
    """A writer as Delta's: take the next free version by put-if-absent, try the next on a loss."""
    storage, root = storage_for(uri, options)
    time.sleep(max(0.0, start - time.time()))
    version, mine = 0, []
    for n in range(commits):
        while not storage.write_if_absent(f"{root}/_delta_log/{version:020d}.json", f"writer {writer} commit {n}".encode()):
            version += 1
        mine.append(version)
        version += 1
    queue.put((writer, mine))


@pytest.mark.parametrize("kind", ["local", "s3", "azure"])
def test_racing_committers_land_every_commit_once(kind, request, tmp_path):
    if kind == "local":
        uri, options = str(tmp_path / "t"), None
    else:
        uri, options = _object_place(kind, request)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    start = time.time() + 3.0
    writers, commits = 3, 8
    procs = [ctx.Process(target=_committer, args=(uri, options, w, commits, start, queue)) for w in range(writers)]
    for p in procs:
        p.start()
    won = dict(queue.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=30)
    storage, root = storage_for(uri, options)
    log = storage.list(f"{root}/_delta_log")
    assert [f.name for f in log] == [f"{v:020d}.json" for v in range(writers * commits)]
    contents = {storage.read(f.path).decode() for f in log}
    assert contents == {f"writer {w} commit {n}" for w in range(writers) for n in range(commits)}
    for w, versions in won.items():
        assert [storage.read(f"{root}/_delta_log/{v:020d}.json").decode() for v in versions] == [
            f"writer {w} commit {n}" for n in range(commits)
        ]


def test_large_objects_and_ranges(s3_server):
    storage, root = storage_for(s3_server.uri(), s3_server.options())
    data = bytes(range(256)) * (11 * 4096)  # 11 MiB: a multipart upload
    storage.write(f"{root}/big.bin", data)
    assert storage.info(f"{root}/big.bin").size == len(data)
    assert storage.read(f"{root}/big.bin") == data
    assert storage.read_range(f"{root}/big.bin", 5_000_000, 5_000_100) == data[5_000_000:5_000_100]
    with storage.open_read(f"{root}/big.bin") as source:
        source.seek(-10, io.SEEK_END)
        assert source.read() == data[-10:]


def test_open_write_streams_and_aborts(place):
    storage, root, _uri, _ = place
    table = pa.table({"id": list(range(20_000)), "s": [f"row {i}" for i in range(20_000)]})
    with storage.open_write(f"{root}/part-0.parquet") as sink:
        pq.write_table(table, sink)
    with storage.open_read(f"{root}/part-0.parquet") as source:
        assert pq.read_table(source).equals(table)
    chunk = bytes(range(256)) * 4096  # 1 MiB
    with pytest.raises(RuntimeError, match="writer died"):
        with storage.open_write(f"{root}/part-1.parquet") as sink:
            for _ in range(12):  # 12 MiB: past the first part of a multipart upload
                sink.write(chunk)
            raise RuntimeError("writer died")
    assert not storage.exists(f"{root}/part-1.parquet")
    assert [f.name for f in storage.walk(root)] == ["part-0.parquet"]
    with storage.open_write(f"{root}/part-1.parquet") as sink:
        for _ in range(12):
            sink.write(chunk)
    assert storage.read(f"{root}/part-1.parquet") == chunk * 12


def test_pickled_storage_reaches_the_same_bucket(s3_server):
    import pickle

    storage, root = storage_for(s3_server.uri(), s3_server.options())
    storage.write(f"{root}/x", b"shared")
    again = pickle.loads(pickle.dumps(storage))
    assert again.read(f"{root}/x") == b"shared"
    assert again.write_if_absent(f"{root}/x", b"other") is False
    assert again.check_put_if_absent(f"{root}/_delta_log/.probe") is True


def test_requests_are_counted(place):
    storage, root, _uri, _ = place
    if not isinstance(storage, ObjectStorage):
        pytest.skip("only object stores count requests")
    storage.requests.clear()
    storage.write_if_absent(f"{root}/_delta_log/0.json", b"{}")
    storage.list(f"{root}/_delta_log")
    storage.read(f"{root}/_delta_log/0.json")
    assert dict(storage.requests) == {"create": 1, "list": 1, "read": 1}


def test_s3a_properties_follow_the_same_settings():
    from varlake.io.store_settings import StoreSettings

    env = {"AWS_ACCESS_KEY_ID": "env-key", "AWS_SECRET_ACCESS_KEY": "env-secret", "AWS_REGION": "eu-west-1"}
    options = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "aws_secret_access_key": "opt-secret", "AWS_ALLOW_HTTP": "true"}
    props = StoreSettings("s3", options, env).s3a_properties()
    assert props["fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert props["fs.s3a.path.style.access"] == "true" and props["fs.s3a.connection.ssl.enabled"] == "false"
    assert props["fs.s3a.access.key"] == "env-key" and props["fs.s3a.secret.key"] == "opt-secret"
    assert props["fs.s3a.endpoint.region"] == "eu-west-1"
    assert props["fs.s3.impl"] == props["fs.s3a.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert props["fs.s3a.aws.credentials.provider"].endswith("SimpleAWSCredentialsProvider")
    with_token = StoreSettings("s3", {**options, "AWS_SESSION_TOKEN": "tok"}, env).s3a_properties()
    assert with_token["fs.s3a.session.token"] == "tok"
    assert with_token["fs.s3a.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")
    aws = StoreSettings("s3", {}, {}).s3a_properties()
    assert "fs.s3a.endpoint" not in aws and "fs.s3a.access.key" not in aws


def test_open_read_fetches_a_small_file_whole_and_a_large_one_by_ranges(place, monkeypatch):
    from varlake.io import object_store
    from varlake.io.parquet_read import file_summary

    storage, root, _uri, _ = place
    if not isinstance(storage, ObjectStorage):
        pytest.skip("only object stores count requests")
    n = 30000
    table = pa.table({"a": list(range(n)), "b": [f"s{i * 7919 % 100003}-{i}" for i in range(n)]})
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=n // 5)  # about 500 kB
    data = sink.getvalue()
    path = f"{root}/data/part-0.parquet"
    storage.write(path, data)
    # small, size known: one GET, no HEAD; the footer read any number of times from memory
    storage.requests.clear()
    with storage.open_read(path, len(data)) as handle:
        assert file_summary(handle) == (["a", "b"], n)
        assert pq.ParquetFile(handle).read().equals(table)
    assert dict(storage.requests) == {"read": 1}
    # size unknown (a footer reader): looked up first, then the tail alone serves the footer
    storage.requests.clear()
    with storage.open_read(path) as handle:
        assert file_summary(handle) == (["a", "b"], n)
        assert pq.ParquetFile(handle).metadata.num_rows == n
    assert dict(storage.requests) == {"stat": 1, "read": 1}
    # large: the tail (footer) in one GET however often it is read, then a GET a column chunk
    monkeypatch.setattr(object_store, "WHOLE_READ_BYTES", 100 * 1024)
    monkeypatch.setattr(object_store, "TAIL_BYTES", 64 * 1024)  # what pyarrow reads of a footer first
    storage.requests.clear()
    with storage.open_read(path, len(data)) as handle:
        assert file_summary(handle) == (["a", "b"], n)
        parquet = pq.ParquetFile(handle)
        assert dict(storage.requests) == {"read": 1}
        assert parquet.read().equals(table)
        assert handle.seek(0) == 0 and handle.read(4) == b"PAR1" and handle.seek(0, io.SEEK_END) == len(data)
        assert handle.seek(-4, io.SEEK_END) and handle.read() == b"PAR1" and handle.read() == b""
    assert "stat" not in storage.requests and 1 < storage.requests["read"] <= 1 + 2 * 5 + 1
    with pytest.raises(ValueError):
        handle.read(4)
