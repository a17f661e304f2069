"""``ObjectStorage`` through a fault-injecting proxy in front of MinIO: a create whose answer is
lost is found to be ours, a create dropped before it reached the server is sent again, throttling
is retried within the budget and then named. Nothing is lost or written twice."""

from __future__ import annotations

import time

import pytest

from fault_proxy import FaultProxy
from varlake.errors import StorageError
from varlake.io.uris import storage_for


@pytest.fixture
def proxied(s3_server):
    proxy = FaultProxy(int(s3_server.endpoint.rsplit(":", 1)[1]))
    options = s3_server.options(AWS_ENDPOINT_URL=proxy.endpoint, **{"varlake.retry_timeout": "5"})
    storage, root = storage_for(s3_server.uri(), options)
    yield proxy, storage, root
    proxy.close()


def test_a_create_whose_answer_is_lost_is_ours(proxied):
    proxy, storage, root = proxied
    path = f"{root}/_delta_log/{0:020d}.json"
    proxy.arm("drop_response", "PUT", "_delta_log")
    assert storage.write_if_absent(path, b'{"commitInfo":{"txnId":"mine"}}') is True
    assert proxy.fired == 1
    assert storage.read(path) == b'{"commitInfo":{"txnId":"mine"}}'
    # The next version is still free, and a rival's create of version 0 still loses.
    assert storage.write_if_absent(path, b'{"commitInfo":{"txnId":"rival"}}') is False
    assert storage.write_if_absent(f"{root}/_delta_log/{1:020d}.json", b"{}") is True


def test_a_create_dropped_before_the_server_is_sent_again(proxied):
    proxy, storage, root = proxied
    path = f"{root}/_delta_log/{0:020d}.json"
    proxy.arm("drop_request", "PUT", "_delta_log")
    assert storage.write_if_absent(path, b"commit 0") is True
    assert proxy.fired == 1 and storage.read(path) == b"commit 0"


def test_throttled_creates_and_reads_are_retried(proxied):
    proxy, storage, root = proxied
    path = f"{root}/_delta_log/{0:020d}.json"
    proxy.arm("slow_down", "PUT", "_delta_log", times=2)
    assert storage.write_if_absent(path, b"commit 0") is True
    assert proxy.fired == 2
    proxy.arm("slow_down", "GET", "_delta_log", times=2)
    assert storage.read(path) == b"commit 0"
    assert proxy.fired == 4
    proxy.arm("drop_response", "GET", "_delta_log")
    assert storage.read(path) == b"commit 0"


def test_endless_throttling_ends_in_a_named_error_within_the_budget(proxied, s3_server):
    proxy, storage, root = proxied
    proxy.arm("slow_down", "GET", "_delta_log", times=10_000)
    began = time.monotonic()
    with pytest.raises(StorageError, match="SlowDown") as caught:
        storage.read(f"{root}/_delta_log/{0:020d}.json")
    assert time.monotonic() - began < 20
    assert root in str(caught.value) and s3_server.secret_key not in str(caught.value)
    proxy.arm("slow_down", "PUT", "_delta_log", times=10_000)
    began = time.monotonic()
    with pytest.raises(StorageError, match="SlowDown"):
        storage.write_if_absent(f"{root}/_delta_log/{0:020d}.json", b"commit 0")
    assert time.monotonic() - began < 20
    proxy.arm("slow_down", "PUT", "_delta_log", times=0)
    assert storage.write_if_absent(f"{root}/_delta_log/{0:020d}.json", b"commit 0") is True


def _upload_then_hang(uri: str, options, ready) -> None:
    from varlake.io.uris import storage_for as open_storage

    storage, root = open_storage(uri, options)
    sink = storage.open_write(f"{root}/part-0.parquet")
    chunk = bytes(range(256)) * 4096
    for _ in range(20):  # 20 MiB: two parts of a multipart upload sent
        sink.write(chunk)
    ready.set()
    time.sleep(120)  # killed long before


def test_kill_9_during_a_multipart_upload_leaves_no_object(s3_server):
    import multiprocessing
    import os
    import signal

    uri, options = s3_server.uri(), s3_server.options()
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_upload_then_hang, args=(uri, options, ready))
    proc.start()
    try:
        assert ready.wait(90), "the uploader did not get going"
        time.sleep(0.5)  # let the parts reach the server
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(30)
    storage, root = storage_for(uri, options)
    key = f"{root.split('/', 3)[3]}/part-0.parquet"
    # The upload was cut in the middle: the server holds its parts, and no object.
    pending = s3_server.client()._list_multipart_uploads(s3_server.bucket, prefix=key).uploads
    assert [u.object_name for u in pending] == [key]
    assert not storage.exists(f"{root}/part-0.parquet")
    assert storage.walk(root) == []
