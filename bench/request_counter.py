"""A counting HTTP proxy on loopback, in front of an S3 server: requests by method and kind of key.

    python bench/request_counter.py --upstream-port 9000 [--port 0]

Prints ``PORT <n>`` once it listens. It forwards every byte unchanged (so it is neutral for any
client: varlake through obstore, delta-rs through its own object_store) and parses only the
request heads (and bodies' lengths, to find the next head on a kept-alive connection). Each
request is counted under ``"<METHOD> <kind>"`` where kind is one of:

- ``list``: a bucket listing (``?list-type=2``); ``multipart``: multipart upload requests
  (``?uploads``/``?uploadId=``);
- ``log-json``, ``log-checkpoint``, ``log-last-checkpoint``, ``log-other``: keys under ``_delta_log/``;
- ``data``: any other key (data files, deletion vectors); a GET with a ``Range`` header is
  ``data-range``.

It also keeps the distinct data keys read and the bytes answered. ``GET /__counter__`` answers
the counts as JSON (``?reset=1`` zeroes them after answering); it is not forwarded or counted.
Runs in its own process so its work never shares the measured process's interpreter.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
from collections import Counter
from urllib.parse import unquote, urlsplit

CONTROL = "/__counter__"


def kind_of(method: str, target: str, headers: dict[str, str]) -> tuple[str, str]:
    """The kind of a request (see the module doc) and its key (bucket included, unquoted)."""
    parts = urlsplit(target)
    query, key = parts.query, unquote(parts.path).lstrip("/")
    if "list-type=" in query or (method == "GET" and "/" not in key.rstrip("/")):
        return "list", key
    if "uploads" in query or "uploadId=" in query:
        return "multipart", key
    if "/_delta_log/" in key:
        name = key.rsplit("/", 1)[-1]
        if name == "_last_checkpoint":
            return "log-last-checkpoint", key
        if ".checkpoint" in name and name.endswith(".parquet"):
            return "log-checkpoint", key
        if name.endswith(".json"):
            return "log-json", key
        return "log-other", key
    if method == "GET" and "range" in headers:
        return "data-range", key
    return "data", key


class Counts:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.requests: Counter[str] = Counter()
        self.data_keys_read: set[str] = set()
        self.data_keys_written: set[str] = set()
        self.bytes_down = 0

    def record(self, method: str, target: str, headers: dict[str, str]) -> None:
        kind, key = kind_of(method, target, headers)
        with self.lock:
            self.requests[f"{method} {kind}"] += 1
            if kind.startswith("data") and method in ("GET", "HEAD"):
                self.data_keys_read.add(key)
            if kind in ("data", "multipart") and method in ("PUT", "POST"):
                self.data_keys_written.add(key)

    def as_json(self) -> dict[str, object]:
        with self.lock:
            return {
                "requests": dict(sorted(self.requests.items())),
                "total": sum(self.requests.values()),
                "data_files_read": len(self.data_keys_read),
                "data_files_written": len(self.data_keys_written),
                "bytes_down": self.bytes_down,
            }


class Reader:
    """Buffered reads of a socket that also forwards every byte it consumes."""

    def __init__(self, sock: socket.socket, forward: socket.socket) -> None:
        self.sock, self.forward, self.buf = sock, forward, b""

    def _fill(self) -> bool:
        data = self.sock.recv(65536)
        if not data:
            return False
        self.buf += data
        return True

    def head(self) -> bytes | None:
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                return None
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        return head

    def pass_through(self, data: bytes) -> None:
        self.forward.sendall(data)

    def body(self, length: int) -> None:
        """Forward ``length`` body bytes."""
        while length > 0:
            if not self.buf and not self._fill():
                raise ConnectionError("closed inside a body")
            chunk, self.buf = self.buf[:length], self.buf[length:]
            self.forward.sendall(chunk)
            length -= len(chunk)

    def line(self) -> bytes:
        while b"\r\n" not in self.buf:
            if not self._fill():
                raise ConnectionError("closed inside a chunked body")
        line, self.buf = self.buf.split(b"\r\n", 1)
        self.forward.sendall(line + b"\r\n")
        return line

    def chunked(self) -> None:
        while True:
            size = int(self.line().split(b";", 1)[0], 16)
            if size == 0:
                while self.line():  # trailers up to the empty line
                    pass
                return
            self.body(size + 2)


class Proxy:
    def __init__(self, upstream_port: int, port: int = 0) -> None:
        self.upstream = ("127.0.0.1", upstream_port)
        self.server = socket.create_server(("127.0.0.1", port), backlog=256)
        self.port = self.server.getsockname()[1]
        self.counts = Counts()

    def serve_forever(self) -> None:
        while True:
            client, _ = self.server.accept()
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _control(self, client: socket.socket, target: str) -> None:
        body = json.dumps(self.counts.as_json()).encode()
        if "reset=1" in target:
            with self.counts.lock:
                self.counts.reset()
        client.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                       b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            reader = Reader(client, client)
            head = reader.head()
            if head is None:
                return
            target = head.split(b"\r\n", 1)[0].split(b" ")[1].decode()
            if target.startswith(CONTROL):
                self._control(client, target)
                return
            upstream = socket.create_connection(self.upstream, timeout=300)
            threading.Thread(target=self._answers, args=(upstream, client), daemon=True).start()
            reader.forward = upstream  # the bytes after the first head (a body) stay in its buffer
            while head is not None:
                lines = head.decode("latin-1").split("\r\n")
                method, target = lines[0].split(" ")[:2]
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                self.counts.record(method, target, headers)
                reader.pass_through(head + b"\r\n\r\n")
                if headers.get("transfer-encoding", "").lower() == "chunked":
                    reader.chunked()
                else:
                    reader.body(int(headers.get("content-length", "0") or 0))
                head = reader.head()
        except (OSError, ConnectionError, ValueError, IndexError):
            pass
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    _shut(sock)

    def _answers(self, upstream: socket.socket, client: socket.socket) -> None:
        try:
            while True:
                data = upstream.recv(65536)
                if not data:
                    break
                with self.counts.lock:
                    self.counts.bytes_down += len(data)
                client.sendall(data)
        except OSError:
            pass
        _shut(client)
        _shut(upstream)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    proxy = Proxy(args.upstream_port, args.port)
    print(f"PORT {proxy.port}", flush=True)
    proxy.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
