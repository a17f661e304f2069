"""A MinIO server for the object-store benchmark, with a data folder kept between runs.

``MinioServer.start(folder)`` starts the binary ``tools/minio.sh`` built (found by
``tests/s3_server.minio_binary``) on free loopback ports, its objects in ``folder/data`` (kept,
so a table built once is reused), and ``stop()`` ends it by its pid. ``RequestCounter.start``
starts ``bench/request_counter.py`` in its own process in front of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from s3_server import free_port, minio_binary, stop_process  # noqa: E402

# Loopback only, a folder of the benchmark's own: fixed credentials keep the kept data readable.
ACCESS_KEY = "varlake-bench"
SECRET_KEY = "varlake-bench-secret"


@dataclass
class MinioServer:
    endpoint: str
    proc: subprocess.Popen

    @classmethod
    def start(cls, folder: Path) -> "MinioServer":
        binary = minio_binary()
        if binary is None:
            raise SystemExit("MinIO is not built: run `make tools` (tools/minio.sh)")
        folder.mkdir(parents=True, exist_ok=True)
        port, console = free_port(), free_port()
        env = dict(os.environ, MINIO_ROOT_USER=ACCESS_KEY, MINIO_ROOT_PASSWORD=SECRET_KEY, MINIO_BROWSER="off")
        log = folder / "minio.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(binary), "server", str(folder / "data"), "--address", f"127.0.0.1:{port}",
                 "--console-address", f"127.0.0.1:{console}", "--quiet"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            )  # fmt: skip
        server = cls(f"http://127.0.0.1:{port}", proc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"MinIO exited:\n{log.read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(f"{server.endpoint}/minio/health/live", timeout=2) as answer:
                    if answer.status == 200:
                        return server
            except OSError:
                time.sleep(0.2)
        server.stop()
        raise RuntimeError("MinIO did not become healthy in 60 s")

    @property
    def port(self) -> int:
        return int(self.endpoint.rsplit(":", 1)[1])

    def options(self, endpoint: str | None = None) -> dict[str, str]:
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_ENDPOINT_URL": endpoint or self.endpoint,
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }

    def ensure_bucket(self, name: str) -> None:
        from minio import Minio

        client = Minio(self.endpoint.split("://", 1)[1], access_key=ACCESS_KEY, secret_key=SECRET_KEY, secure=False)
        if not client.bucket_exists(name):
            client.make_bucket(name)

    def stop(self) -> None:
        stop_process(self.proc)


@dataclass
class RequestCounter:
    endpoint: str
    proc: subprocess.Popen

    @classmethod
    def start(cls, upstream_port: int) -> "RequestCounter":
        proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("request_counter.py")), "--upstream-port", str(upstream_port)],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        line = proc.stdout.readline() if proc.stdout else ""
        if not line.startswith("PORT "):
            stop_process(proc)
            raise RuntimeError(f"request counter did not start: {line!r}")
        return cls(f"http://127.0.0.1:{int(line.split()[1])}", proc)

    def read(self, reset: bool = False) -> dict:
        url = f"{self.endpoint}/__counter__" + ("?reset=1" if reset else "")
        with urllib.request.urlopen(url, timeout=10) as answer:
            return json.loads(answer.read())

    def reset(self) -> None:
        self.read(reset=True)

    def stop(self) -> None:
        stop_process(self.proc)
