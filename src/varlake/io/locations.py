"""Table URIs parsed: which store a table lives in (``uris.storage_for`` builds its ``Storage``).

``parse_uri`` splits a table URI into a ``TableURI`` (scheme, bucket or container, key prefix):

- ``s3://bucket/key`` and ``s3a://bucket/key`` (Hadoop's name) are one location, scheme ``s3``;
- ``gs://bucket/key``;
- ``az://container/key``, ``abfs[s]://container@account.dfs.core.windows.net/key`` (and the
  ``adl``/``azure`` spellings), scheme ``az``;
- ``memory://name/key`` for tests (one in-process store per name);
- ``file:///abs/path`` and plain paths, scheme ``file``.

Any other ``scheme://`` (or ``scheme:`` that is not a Windows drive) is an
``UnsupportedStorageError`` naming the URI: it is never taken for a relative local path (a
folder named ``s3:`` in the working directory).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from varlake.errors import UnsupportedStorageError

__all__ = ["OBJECT_SCHEMES", "TableURI", "is_object_store_uri", "parse_uri"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
# Every spelling of a store, and the one name it has in varlake.
_SCHEMES = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gs",
    "gcs": "gs",
    "az": "az",
    "adl": "az",
    "azure": "az",
    "abfs": "az",
    "abfss": "az",
    "memory": "memory",
    "file": "file",
}
OBJECT_SCHEMES = frozenset({"s3", "gs", "az", "memory"})


@dataclass(frozen=True, slots=True)
class TableURI:
    """A parsed table URI. ``scheme`` is varlake's name of the store (``s3`` for ``s3a`` too);
    ``bucket`` the bucket or container (``""`` for local paths); ``key`` the key prefix inside
    it without leading or trailing ``/`` (the absolute path for ``file``); ``account`` the
    Azure storage account when the URI names one."""

    scheme: str
    bucket: str
    key: str
    account: str | None = None
    original: str = ""

    @property
    def location(self) -> str:
        """The canonical form: ``s3://bucket/key`` (``s3a`` written as ``s3``), an absolute path
        for local tables."""
        if self.scheme == "file":
            return self.key
        base = f"{self.scheme}://{self.bucket}"
        return f"{base}/{self.key}" if self.key else base


def is_object_store_uri(uri: str | os.PathLike[str]) -> bool:
    """Whether ``uri`` names a table in an object store (not on a local file system)."""
    text = os.fspath(uri)
    match = _SCHEME.match(text)
    if match is None or _WINDOWS_DRIVE.match(text):
        return False
    return _SCHEMES.get(match.group(1).lower()) in OBJECT_SCHEMES


def _clean_key(path: str, uri: str) -> str:
    parts = [p for p in unquote(path).split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsupportedStorageError(f"{uri}: a table URI may not contain '..'")
    return "/".join(parts)


def parse_uri(uri: str | os.PathLike[str]) -> TableURI:
    """Parse ``uri`` (see the module doc); ``UnsupportedStorageError`` for any other scheme."""
    text = os.fspath(uri)
    match = _SCHEME.match(text)
    if match is None or _WINDOWS_DRIVE.match(text):
        return TableURI("file", "", os.path.abspath(text).replace(os.sep, "/"), original=text)
    raw_scheme = match.group(1).lower()
    scheme = _SCHEMES.get(raw_scheme)
    if scheme is None:
        known = ", ".join(sorted({f"{s}://" for s in _SCHEMES}))
        raise UnsupportedStorageError(
            f"{text}: unsupported storage scheme {raw_scheme!r}; varlake reads and writes tables at "
            f"{known} and plain local paths"
        )
    parts = urlsplit(text)
    if parts.query or parts.fragment:
        raise UnsupportedStorageError(f"{text}: a table URI may not have a query or a fragment")
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise UnsupportedStorageError(f"{text}: file URIs on another host are not supported")
        return TableURI("file", "", os.path.abspath(unquote(parts.path) or "/").replace(os.sep, "/"), original=text)
    bucket = parts.netloc
    account = None
    if scheme == "az" and "@" in bucket:  # abfss://container@account.dfs.core.windows.net/key
        bucket, host = bucket.split("@", 1)
        account = host.split(".", 1)[0] or None
    if not bucket:
        raise UnsupportedStorageError(f"{text}: no bucket or container named (expected {raw_scheme}://BUCKET/path)")
    if "@" in bucket or ":" in bucket:
        # user:password@ or a port: credentials never travel in the URI; keep them out of messages too.
        raise UnsupportedStorageError(
            f"{raw_scheme}://…: a bucket name may not hold '@' or ':' (give credentials in storage_options)"
        )
    return TableURI(scheme, bucket, _clean_key(parts.path, text), account, original=text)
