"""A fault-injecting TCP proxy on loopback, between varlake and the test S3 server.

``FaultProxy(upstream_port)`` forwards connections to ``127.0.0.1:upstream_port``. A fault is armed
for the next request whose first line starts with ``method`` and holds ``needle``:

- ``"drop_request"``: close the connection before the request reaches the server;
- ``"drop_response"``: forward the request, then close the connection instead of passing on the
  server's answer (the request landed, the client never hears so);
- ``"slow_down"``: answer ``503 Slow Down`` without forwarding.

Each armed fault fires ``times`` times. Everything stays on 127.0.0.1, bounded by the test.
"""

from __future__ import annotations

import socket
import threading

_SLOW_DOWN = (
    b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nConnection: close\r\nContent-Length: 101\r\n\r\n"
    b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code><Message>Slow down</Message></Error>"
)


class FaultProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream = ("127.0.0.1", upstream_port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self._fault: tuple[str, bytes, bytes] | None = None
        self._left = 0
        self.fired = 0
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, fault: str, method: str = "PUT", needle: str = "", times: int = 1) -> None:
        with self._lock:
            self._fault = (fault, method.encode(), needle.encode())
            self._left = times

    def _take(self, chunk: bytes) -> str | None:
        """The fault to apply to a request starting with ``chunk``, if one is armed for it."""
        with self._lock:
            if self._fault is None or self._left <= 0:
                return None
            fault, method, needle = self._fault
            first = chunk.split(b"\r\n", 1)[0]
            if not first.startswith(method + b" ") or needle not in first:
                return None
            self._left -= 1
            self.fired += 1
            return fault

    def close(self) -> None:
        self._closed = True
        self._server.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.upstream, timeout=30)
        except OSError:
            client.close()
            return
        drop_answer = threading.Event()

        def answers() -> None:
            try:
                while True:
                    data = upstream.recv(65536)
                    if not data or drop_answer.is_set():
                        break
                    client.sendall(data)
            except OSError:
                pass
            _shut(client)
            _shut(upstream)

        threading.Thread(target=answers, daemon=True).start()
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                fault = self._take(data)
                if fault == "drop_request":
                    break
                if fault == "slow_down":
                    client.sendall(_SLOW_DOWN)
                    break
                if fault == "drop_response":
                    drop_answer.set()
                upstream.sendall(data)
        except OSError:
            pass
        if not drop_answer.is_set():
            _shut(client)
            _shut(upstream)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
