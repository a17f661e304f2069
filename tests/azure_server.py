"""A real Azure Blob server for the tests: Azurite, installed from npm by ``tools/azurite.sh``.

``azure_server`` (session-scoped) starts it on a free loopback port with a fresh account and
key, and stops it by its pid at the end. Without it the tests that need it are skipped with the
reason -- unless ``VARLAKE_REQUIRE_S3`` is set (CI sets it; ``make tools`` installs both servers),
then they fail.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import hmac
import os
import secrets
import shutil
import subprocess
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from s3_server import CACHE, free_port, stop_process

API_VERSION = "2021-08-06"


def azurite_binary() -> Path | None:
    """Azurite's Blob server: ``$VARLAKE_AZURITE``, else the one ``tools/azurite.sh`` installed."""
    explicit = os.environ.get("VARLAKE_AZURITE")
    path = Path(explicit) if explicit else CACHE / "azurite" / "node_modules" / ".bin" / "azurite-blob"
    if path.exists() and shutil.which("node"):
        return path
    return None


def require_azurite() -> Path:
    binary = azurite_binary()
    if binary is None:
        reason = "Azurite is not installed (or Node.js is missing): run `make tools` or tools/azurite.sh"
        if os.environ.get("VARLAKE_REQUIRE_S3"):
            pytest.fail(f"VARLAKE_REQUIRE_S3 is set but {reason}")
        pytest.skip(reason)
    return binary


@dataclass
class AzureServer:
    """A running Azurite: its endpoint, an account made for the session and a container."""

    endpoint: str
    account: str
    key: str
    container: str
    pid: int

    def options(self, **extra: str) -> dict[str, str]:
        """``storage_options`` that reach this server (plain http, the account's shared key)."""
        out = {
            "AZURE_STORAGE_ACCOUNT_NAME": self.account,
            "AZURE_STORAGE_ACCOUNT_KEY": self.key,
            "AZURE_STORAGE_ENDPOINT": f"{self.endpoint}/{self.account}",
            "AZURE_ALLOW_HTTP": "true",
            "varlake.retry_timeout": "10",
        }
        out.update(extra)
        return out

    def create_container(self, name: str) -> None:
        """Make a container with a Shared Key request (obstore cannot make containers)."""
        headers = {"x-ms-date": email.utils.formatdate(usegmt=True), "x-ms-version": API_VERSION}
        canonical_headers = "".join(f"{k}:{v}\n" for k, v in sorted(headers.items()))
        resource = f"/{self.account}/{self.account}/{name}\nrestype:container"
        to_sign = "PUT\n" + "\n" * 11 + canonical_headers + resource
        digest = hmac.new(base64.b64decode(self.key), to_sign.encode(), hashlib.sha256).digest()
        headers["Authorization"] = f"SharedKey {self.account}:{base64.b64encode(digest).decode()}"
        headers["Content-Length"] = "0"
        request = urllib.request.Request(
            f"{self.endpoint}/{self.account}/{name}?restype=container", method="PUT", headers=headers
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 201, answer.status

    def uri(self, name: str = "") -> str:
        """A fresh ``az://`` location in the session's container."""
        return f"az://{self.container}/{name or 'tbl'}-{uuid.uuid4().hex[:12]}"


def _wait_listening(port: int, proc: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Azurite exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
        except urllib.error.HTTPError:
            return  # it answers (400 for a request without an account)
        except OSError:
            time.sleep(0.2)
            continue
        return
    raise RuntimeError(f"Azurite did not start in {timeout:.0f} s:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="session")
def azure_server(tmp_path_factory: pytest.TempPathFactory):
    """An Azurite Blob server for the session (see the module doc)."""
    binary = require_azurite()
    folder = tmp_path_factory.mktemp("azurite")
    port = free_port()
    account = "varlake" + secrets.token_hex(4)
    key = base64.b64encode(secrets.token_bytes(64)).decode()
    env = dict(os.environ, AZURITE_ACCOUNTS=f"{account}:{key}")
    log = folder / "azurite.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(binary), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(folder / "data"),
             "--skipApiVersionCheck", "--silent"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
        )  # fmt: skip
    try:
        _wait_listening(port, proc, log)
        server = AzureServer(f"http://127.0.0.1:{port}", account, key, "varlake-tests", proc.pid)
        server.create_container(server.container)
        yield server
    finally:
        stop_process(proc, grace=2.0)  # Azurite waits on idle keep-alive connections; its data is scratch
