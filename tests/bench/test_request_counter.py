"""bench/request_counter.py: the counting proxy of the object-store benchmark, against a tiny
HTTP server (no MinIO): requests counted by method and kind, bytes passed on unchanged, bodies
(sent with the head, chunked) never taken for the next request of a kept-alive connection."""

from __future__ import annotations

import http.client
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from minio_server import RequestCounter  # noqa: E402
from request_counter import kind_of  # noqa: E402


class Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:
        self._answer(f"got {self.path}".encode())

    def do_HEAD(self) -> None:
        self._answer(b"")

    def do_PUT(self) -> None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(b"stored %d bytes" % len(body))

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def counter():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    proxy = RequestCounter.start(server.server_address[1])
    try:
        yield proxy
    finally:
        proxy.stop()
        server.shutdown()


def test_kinds() -> None:
    assert kind_of("GET", "/b?list-type=2&prefix=t%2F_delta_log%2F", {}) == ("list", "b")
    assert kind_of("GET", "/b/t/_delta_log/_last_checkpoint", {})[0] == "log-last-checkpoint"
    assert kind_of("GET", "/b/t/_delta_log/00000000000000000010.checkpoint.parquet", {})[0] == "log-checkpoint"
    assert kind_of("PUT", "/b/t/_delta_log/00000000000000000011.json", {})[0] == "log-json"
    assert kind_of("GET", "/b/t/part%3Dp1/x.parquet", {"range": "bytes=0-7"}) == ("data-range", "b/t/part=p1/x.parquet")
    assert kind_of("POST", "/b/t/big.parquet?uploads", {})[0] == "multipart"


def test_counts_requests_on_a_kept_alive_connection(counter: RequestCounter) -> None:
    host, port = counter.endpoint.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    answers = []
    for method, path, body, headers in [
        ("PUT", "/b/t/a.parquet", b"x" * 5000, {}),
        ("GET", "/b/t/a.parquet", None, {"Range": "bytes=0-9"}),
        ("PUT", "/b/t/_delta_log/00000000000000000001.json", None, {}),  # chunked below
        ("HEAD", "/b/t/a.parquet", None, {}),
        ("GET", "/b?list-type=2&prefix=t%2F", None, {}),
    ]:
        if method == "PUT" and body is None:
            conn.request(method, path, body=iter([b"ab", b"cde"]), headers={"Transfer-Encoding": "chunked"}, encode_chunked=True)
        else:
            conn.request(method, path, body=body, headers=headers)
        answer = conn.getresponse()
        answers.append(answer.read())
    conn.close()
    assert answers == [b"stored 5000 bytes", b"got /b/t/a.parquet", b"stored 5 bytes", b"", b"got /b?list-type=2&prefix=t%2F"]
    counts = counter.read(reset=True)
    assert counts["requests"] == {"GET data-range": 1, "GET list": 1, "HEAD data": 1, "PUT data": 1, "PUT log-json": 1}
    assert counts["total"] == 5 and counts["data_files_read"] == 1 and counts["data_files_written"] == 1
    assert counter.read()["total"] == 0  # reset after answering
