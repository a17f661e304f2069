"""A real S3 server for the tests: MinIO, built from source by ``tools/minio.sh`` into the cache.

``s3_server`` (session-scoped) starts it on free loopback ports in a temporary folder and stops it
by its pid at the end. Without the binary the tests that need it are skipped with the reason --
unless ``VARLAKE_REQUIRE_S3`` is set (CI sets it), then they fail.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("VARLAKE_CACHE", Path.home() / ".cache" / "varlake"))


def minio_binary() -> Path | None:
    """The MinIO server binary: ``$VARLAKE_MINIO``, else the one ``tools/minio.sh`` built."""
    explicit = os.environ.get("VARLAKE_MINIO")
    candidates = [Path(explicit)] if explicit else [CACHE / "bin" / "minio"]
    found = shutil.which("minio")
    if found and not explicit:
        candidates.append(Path(found))
    return next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


def require_minio() -> Path:
    """The MinIO binary; without it the test is skipped, or fails when ``VARLAKE_REQUIRE_S3`` is set."""
    binary = minio_binary()
    if binary is None:
        reason = f"MinIO is not built (no {os.environ.get('VARLAKE_MINIO') or CACHE / 'bin' / 'minio'}): run `make tools` or tools/minio.sh"
        if os.environ.get("VARLAKE_REQUIRE_S3"):
            pytest.fail(f"VARLAKE_REQUIRE_S3 is set but {reason}")
        pytest.skip(reason)
    return binary


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class S3Server:
    """A running MinIO: its endpoint, credentials and a bucket made for the session."""

    endpoint: str
    access_key: str
    secret_key: str
    bucket: str
    pid: int
    _buckets: list[str] = field(default_factory=list)

    def options(self, **extra: str) -> dict[str, str]:
        """``storage_options`` that reach this server (plain http, path-style requests)."""
        out = {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
            "varlake.retry_timeout": "10",
        }
        out.update(extra)
        return out

    def client(self):
        """A ``minio`` client (obstore cannot make buckets)."""
        from minio import Minio

        return Minio(self.endpoint.split("://", 1)[1], access_key=self.access_key, secret_key=self.secret_key, secure=False)

    def new_bucket(self) -> str:
        name = f"t-{uuid.uuid4().hex[:20]}"
        self.client().make_bucket(name)
        self._buckets.append(name)
        return name

    def uri(self, name: str = "") -> str:
        """A fresh ``s3://`` location in the session's bucket."""
        return f"s3://{self.bucket}/{name or 'tbl'}-{uuid.uuid4().hex[:12]}"


def _wait_healthy(endpoint: str, proc: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"MinIO exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(f"{endpoint}/minio/health/live", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"MinIO did not become healthy in {timeout:.0f} s:\n{log.read_text(errors='replace')[-3000:]}")


def stop_process(proc: subprocess.Popen, grace: float = 15.0) -> None:
    """Stop a server process by its pid: SIGTERM, then SIGKILL after ``grace`` seconds."""
    if proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=15)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory):
    """A MinIO server for the session (see the module doc)."""
    binary = require_minio()
    folder = tmp_path_factory.mktemp("minio")
    port, console = free_port(), free_port()
    access_key = "varlake-" + secrets.token_hex(4)
    secret_key = "secret-" + secrets.token_hex(16)
    env = dict(os.environ, MINIO_ROOT_USER=access_key, MINIO_ROOT_PASSWORD=secret_key, MINIO_BROWSER="off")
    log = folder / "minio.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(binary), "server", str(folder / "data"), "--address", f"127.0.0.1:{port}",
             "--console-address", f"127.0.0.1:{console}", "--quiet"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
        )  # fmt: skip
    endpoint = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(endpoint, proc, log)
        server = S3Server(endpoint, access_key, secret_key, "varlake-tests", proc.pid)
        server.client().make_bucket(server.bucket)
        yield server
    finally:
        stop_process(proc)
