"""``ObjectStorage``: the ``Storage`` interface on S3, GCS, Azure Blob and an in-memory store.

Built on ``obstore`` (the Python binding of the Rust ``object_store`` crate that delta-rs uses):
one well-kept client for the three clouds, with conditional puts, ranged reads, paginated
listings and retries with backoff and jitter.

Paths are keys of one bucket, ``/``-separated; a path may also be written as a URI of that same
bucket (``s3://bucket/t/_delta_log/...``, ``s3a://`` alike), which is what ``storage_for`` hands
the table layer as its root. ``location`` gives the canonical URI (``s3://bucket/key``).

Guarantees and their limits:

- ``write_if_absent`` is a conditional PUT (``If-None-Match: *`` on S3 and Azure,
  ``ifGenerationMatch=0`` on GCS): exactly one of two racing creators wins, across machines.
  ``check_put_if_absent`` proves it on the store before the first commit; a store that lets two
  creates of one key succeed is refused (``UnsafeStorageError``) unless the storage was made with
  ``varlake.single_writer=true``.
- The unknown outcome: a create whose answer was lost (reset, timeout, 5xx) may have landed. It is
  sent again; if the key then exists, its bytes are compared with ours: equal means it was ours
  (success), different means someone else's (``False``). This is exact only when the content is
  unique to its writer, as a Delta commit is (its ``commitInfo`` carries the writer's token).
- Throttling (503 SlowDown, 429) and transient network errors are retried with exponential backoff
  and jitter within a time budget (``varlake.retry_timeout``, default 60 s); then a named error.
- Every failure is a ``StorageError`` subclass naming the URI; secrets are never in a message or
  a ``repr`` (they are scrubbed from the client's messages too).

Settings: the standard environment variables, overridden by ``storage_options`` with the same
names (case-insensitive): ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
``AWS_REGION``, ``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP``, ``AWS_VIRTUAL_HOSTED_STYLE_REQUEST``;
``GOOGLE_SERVICE_ACCOUNT``, ``GOOGLE_SERVICE_ACCOUNT_KEY``, ``GOOGLE_APPLICATION_CREDENTIALS``;
``AZURE_STORAGE_ACCOUNT_NAME``, ``AZURE_STORAGE_ACCOUNT_KEY``, ``AZURE_STORAGE_SAS_KEY``,
``AZURE_STORAGE_CLIENT_ID``/``_SECRET``/``TENANT_ID``, ``AZURE_STORAGE_ENDPOINT``,
``AZURE_ALLOW_HTTP``, ``AZURE_STORAGE_USE_EMULATOR``. varlake's own: ``varlake.single_writer``,
``varlake.retry_timeout``, ``varlake.max_retries``, ``varlake.connect_timeout``, ``varlake.timeout``
(seconds).
"""

from __future__ import annotations

import functools
import io
import os
import random
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO, TypeVar

import obstore
from obstore import exceptions as obx
from obstore.store import AzureStore, GCSStore, MemoryStore, S3Store

from varlake.errors import (
    StorageAccessError,
    StorageBucketNotFoundError,
    StorageError,
    StorageFileNotFoundError,
    StorageUnreachableError,
    UnsafePathError,
    UnsafeStorageError,
    UnsupportedStorageError,
)
from varlake.io.storage import TEMP_PREFIX, FileInfo, Storage
from varlake.io.locations import TableURI, parse_uri
from varlake.io.store_settings import SINGLE_WRITER, StoreSettings

__all__ = ["ObjectStorage", "SINGLE_WRITER", "TAIL_BYTES", "WHOLE_READ_BYTES"]

_T = TypeVar("_T")

#: ``open_read`` fetches a file of at most this many bytes whole, in one GET
WHOLE_READ_BYTES = 8 * 1024 * 1024
#: ... and of a larger one fetches the last this many bytes (its footer) in one GET; at least the
#: 64 kB pyarrow reads first of a footer
TAIL_BYTES = 256 * 1024

# Words of a store's answer that mean: slow down and try again.
_THROTTLED = ("SlowDown", "503", "429", "TooManyRequests", "Too Many Requests", "Service Unavailable", "RequestTimeout")
_UNREACHABLE = ("tcp connect error", "dns error", "Connection refused", "error sending request", "connect error")
_NO_BUCKET = ("NoSuchBucket", "bucket does not exist", "ContainerNotFound", "The specified bucket does not exist")
_DENIED = (
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "AccessDenied",
    "ExpiredToken",
    "InvalidToken",
    "AuthenticationFailed",
    "AuthorizationFailure",
    "403 Forbidden",
    "401 Unauthorized",
)

_memory_lock = threading.Lock()
_memory_stores: dict[str, MemoryStore] = {}


def _make_store(parsed: TableURI, settings: StoreSettings, max_retries: int | None = None) -> Any:
    """The obstore client of ``parsed``'s bucket (no prefix: paths are whole keys)."""
    common = {"client_options": settings.client_options(), "retry_config": settings.retry_config(max_retries)}
    config = dict(settings.config)
    try:
        if parsed.scheme == "s3":
            return S3Store(parsed.bucket, config=config, **common)
        if parsed.scheme == "gs":
            return GCSStore(parsed.bucket, config=config, **common)
        if parsed.scheme == "az":
            if parsed.account:
                config["account_name"] = parsed.account
            return AzureStore(parsed.bucket, config=config, **common)
    except (obx.BaseError, ValueError) as exc:
        message = _scrub(str(exc).split("\n\n", 1)[0], settings.secrets)
        raise UnsupportedStorageError(f"{parsed.location}: cannot configure the store ({message})") from None
    raise UnsupportedStorageError(f"{parsed.original or parsed.location}: no object store for scheme {parsed.scheme!r}")


def _summary(message: str) -> str:
    """The client's message without its debug dump, with an S3 XML error body cut to its code
    and message (``SignatureDoesNotMatch: The request signature ...``)."""
    text = message.split("\n\nDebug source", 1)[0].strip()
    xml = text.find("<?xml")
    if xml < 0:
        xml = text.find("<Error>")
    if xml >= 0:
        code = re.search(r"<Code>(.*?)</Code>", text, re.S)
        said = re.search(r"<Message>(.*?)</Message>", text, re.S)
        text = text[:xml].rstrip(" :") + ": " + ": ".join(m.group(1).strip() for m in (code, said) if m)
    return " ".join(text.split())


def _scrub(message: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret:
            message = message.replace(secret, "***")
    return message


def _is_throttled(message: str) -> bool:
    return any(word in message for word in _THROTTLED)


class ObjectStorage(Storage):
    """``Storage`` on one bucket (or container) of an object store; see the module doc."""

    def __init__(
        self,
        store: Any,
        uri: TableURI,
        *,
        create_store: Any = None,
        create_factory: Callable[[], Any] | None = None,
        settings: StoreSettings | None = None,
    ) -> None:
        self._store = store
        # The client for conditional creates retries nothing by itself: write_if_absent retries a
        # create whose outcome is unknown and then checks whose object landed. Built when first
        # needed (``create_factory``): a reader never pays for it.
        self._create_client = create_store if create_store is not None or create_factory else store
        self._create_factory = create_factory
        self._uri = uri
        self._settings = settings if settings is not None else StoreSettings(uri.scheme, None, {})
        self.single_writer = self._settings.single_writer
        self._put_if_absent_checked: bool | None = None
        self._check_lock = threading.Lock()
        self._endpoint = str(self._settings.config.get("endpoint") or "")
        # Requests sent, by kind ("read", "list", "stat", "create", "write", ...): for benchmarks.
        self.requests: Counter[str] = Counter()

    @property
    def _create_store(self) -> Any:
        client = self._create_client
        if client is None:
            assert self._create_factory is not None
            client = self._create_client = self._create_factory()
        return client

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (for worker processes): the clients and settings travel, the lock does not."""
        state = dict(self.__dict__)
        del state["_check_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._check_lock = threading.Lock()

    # --- construction --------------------------------------------------------------------

    @classmethod
    def for_uri(
        cls,
        uri: str | TableURI,
        storage_options: Mapping[str, Any] | None = None,
        *,
        env: Mapping[str, str] | None = None,
    ) -> ObjectStorage:
        """The storage of ``uri``'s bucket, configured from ``env`` (default ``os.environ``)
        overridden by ``storage_options``."""
        parsed = parse_uri(uri) if isinstance(uri, str) else uri
        if parsed.scheme == "file":
            raise UnsupportedStorageError(f"{parsed.original}: a local path, not an object store (use LocalStorage)")
        settings = StoreSettings(parsed.scheme, storage_options, os.environ if env is None else env)
        if parsed.scheme == "memory":
            with _memory_lock:
                store = _memory_stores.setdefault(parsed.bucket, MemoryStore())
            return cls(store, TableURI("memory", parsed.bucket, ""), settings=settings)
        store = _make_store(parsed, settings)
        creates = functools.partial(_make_store, parsed, settings, max_retries=0)
        bucket_only = TableURI(parsed.scheme, parsed.bucket, "", parsed.account)
        return cls(store, bucket_only, create_factory=creates, settings=settings)

    def __repr__(self) -> str:
        where = f", endpoint={self._endpoint!r}" if self._endpoint else ""
        mode = ", single_writer=True" if self.single_writer else ""
        return f"ObjectStorage({self._uri.location!r}{where}{mode})"

    @property
    def uri(self) -> str:
        """The bucket's canonical URI (``s3://bucket``)."""
        return self._uri.location

    # --- paths ---------------------------------------------------------------------------

    def key(self, path: str) -> str:
        """The object key ``path`` names: a key of this bucket or a URI of it (``s3a://`` alike)."""
        text = path
        if "://" in text:
            try:
                parsed = parse_uri(text)
            except UnsupportedStorageError as exc:
                raise UnsafePathError(f"{self._uri.location}: cannot use path {path!r} ({exc})") from None
            if parsed.scheme != self._uri.scheme or parsed.bucket != self._uri.bucket:
                raise UnsafePathError(f"{path}: not in {self._uri.location}; a storage reads and writes its own bucket only")
            return parsed.key
        parts = [p for p in text.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise UnsafePathError(f"{self._uri.location}: path {path!r} may not contain '..'")
        return "/".join(parts)

    def location(self, path: str) -> str:
        key = self.key(path)
        return f"{self._uri.location}/{key}" if key else self._uri.location

    def location_inside(self, root: str, path: str) -> str:
        root_key = self.key(root)
        key = self.key(path)
        if root_key and key != root_key and not key.startswith(root_key + "/"):
            raise UnsafePathError(f"{self.location(root)}: {path} is outside the table root")
        return self.location(path)

    # --- errors and retries --------------------------------------------------------------

    def _error(self, exc: BaseException, action: str, path: str) -> StorageError:
        """The named error for a failed request (names the URI, never a secret)."""
        where = self.location(path) if path else self._uri.location
        text = _scrub(_summary(str(exc)), self._settings.secrets)
        if isinstance(exc, (FileNotFoundError, getattr(obx, "NotFoundError", FileNotFoundError))):
            if any(word in str(exc) for word in _NO_BUCKET):
                return StorageBucketNotFoundError(f"{where}: the bucket {self._uri.bucket!r} does not exist ({text})")
            return StorageFileNotFoundError(f"no such file: {where}")
        if any(word in str(exc) for word in _NO_BUCKET):
            return StorageBucketNotFoundError(f"{where}: the bucket {self._uri.bucket!r} does not exist ({text})")
        if isinstance(exc, (obx.PermissionDeniedError, obx.UnauthenticatedError)) or any(
            word in str(exc) for word in _DENIED
        ):
            return StorageAccessError(
                f"cannot {action} {where}: access denied; check the credentials and permissions ({text})"
            )
        if any(word in str(exc) for word in _UNREACHABLE):
            endpoint = f" at {self._endpoint}" if self._endpoint else ""
            return StorageUnreachableError(
                f"cannot {action} {where}: the store{endpoint} cannot be reached within "
                f"{self._settings.retry_timeout:g} s ({text})"
            )
        return StorageError(f"cannot {action} {where}: {text}")

    def _call(self, action: str, path: str, fn: Callable[[], _T], *, count: bool = True) -> _T:
        """``fn()`` with throttled answers retried (backoff and jitter) within the time budget;
        the client itself retries 5xx and connection errors. Errors become named errors.
        ``requests[action]`` counts the calls (not the client's own retries)."""
        deadline = time.monotonic() + self._settings.retry_timeout
        attempt = 0
        while True:
            if count:
                self.requests[action] += 1
            try:
                return fn()
            except StorageError:
                raise
            except (obx.BaseError, OSError, ValueError) as exc:
                if isinstance(exc, FileNotFoundError) or not _is_throttled(str(exc)):
                    raise self._error(exc, action, path) from None
                delay = _backoff(attempt)
                if time.monotonic() + delay > deadline:
                    raise self._error(exc, action, path) from None
                time.sleep(delay)
                attempt += 1

    # --- Storage -------------------------------------------------------------------------

    def _info(self, meta: Mapping[str, Any], path: str) -> FileInfo:
        modified = meta.get("last_modified")
        mtime = int(modified.timestamp() * 1000) if modified is not None else 0
        return FileInfo(path, int(meta["size"]), mtime)

    def list(self, prefix: str, start_after: str | None = None) -> list[FileInfo]:
        key = self.key(prefix)
        base = prefix.rstrip("/")
        lead = f"{key}/" if key else ""

        def fetch() -> list[dict[str, Any]]:
            if start_after is None:
                return list(obstore.list_with_delimiter(self._store, key or None)["objects"])
            found = []
            for batch in obstore.list(self._store, key or None, offset=f"{lead}{start_after}", chunk_size=1000):
                found.extend(batch)
            return found

        out = []
        for meta in self._without_markers(self._call("list", prefix, fetch)):
            name = meta["path"][len(lead) :] if meta["path"].startswith(lead) else None
            if not name or "/" in name or name.startswith(TEMP_PREFIX):
                continue  # deeper keys, in-flight temporaries
            if start_after is not None and name <= start_after:
                continue
            out.append(self._info(meta, f"{base}/{name}"))
        out.sort(key=lambda f: f.path)
        return out

    def walk(self, prefix: str) -> list[FileInfo]:
        key = self.key(prefix)
        base = prefix.rstrip("/")
        lead = f"{key}/" if key else ""

        def fetch() -> list[dict[str, Any]]:
            found = []
            for batch in obstore.list(self._store, key or None, chunk_size=1000):
                found.extend(batch)
            return found

        out = []
        for meta in self._without_markers(self._call("list", prefix, fetch)):
            rel = meta["path"][len(lead) :] if meta["path"].startswith(lead) else None
            if not rel:
                continue
            out.append(self._info(meta, f"{base}/{rel}"))
        out.sort(key=lambda f: f.path)
        return out

    def _without_markers(self, metas: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``metas`` without directory markers: the empty ``dir/`` objects S3A and consoles
        make, which the client lists as ``dir``. An empty object is a marker when other keys
        lie below it, or when no object ``dir`` exists without the slash (a HEAD tells)."""
        if not any(int(m["size"]) == 0 for m in metas):
            return metas
        folders = {m["path"].rsplit("/", i)[0] for m in metas for i in range(1, m["path"].count("/") + 1)}
        out = []
        for meta in metas:
            if int(meta["size"]) == 0:
                if meta["path"] in folders:
                    continue
                self.requests["stat"] += 1
                try:
                    obstore.head(self._store, meta["path"])
                except FileNotFoundError:
                    continue
                except (obx.BaseError, OSError) as exc:
                    raise self._error(exc, "stat", meta["path"]) from None
            out.append(meta)
        return out

    def read(self, path: str) -> bytes:
        key = self.key(path)
        return self._call("read", path, lambda: bytes(obstore.get(self._store, key).bytes()))

    def read_range(self, path: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of ``path`` (one ranged GET)."""
        key = self.key(path)
        if end <= start:
            return b""
        return self._call("read", path, lambda: bytes(obstore.get_range(self._store, key, start=start, end=end)))

    def _put_create(self, key: str, data: bytes) -> None:
        """One conditional create of ``key`` (``AlreadyExistsError`` if taken); no retries."""
        self.requests["create"] += 1
        obstore.put(self._create_store, key, data, mode="create", use_multipart=False)

    def write_if_absent(self, path: str, data: bytes) -> bool:
        key = self.key(path)
        data = bytes(data)
        deadline = time.monotonic() + self._settings.retry_timeout
        attempt = 0
        unknown = False  # an earlier attempt may have landed without our hearing of it
        while True:
            try:
                self._put_create(key, data)
                return True
            except (obx.AlreadyExistsError, obx.PreconditionError):
                if not unknown:
                    return False
                # Our lost create or someone else's: the bytes tell (a commit's are unique to its writer).
                try:
                    return self.read(path) == data
                except StorageFileNotFoundError:
                    attempt += 1  # deleted since: try the create again
                    continue
            except (obx.BaseError, OSError) as exc:
                if isinstance(exc, (FileNotFoundError, obx.PermissionDeniedError, obx.UnauthenticatedError)):
                    raise self._error(exc, "create", path) from None
                message = str(exc)
                if any(word in message for word in _NO_BUCKET + _DENIED):
                    raise self._error(exc, "create", path) from None
                if any(word in message for word in ("tcp connect error", "dns error", "Connection refused")):
                    pass  # never sent: the outcome is known (nothing landed)
                else:
                    unknown = True
                delay = _backoff(attempt)
                if time.monotonic() + delay > deadline:
                    raise self._error(exc, "create", path) from None
                time.sleep(delay)
                attempt += 1

    def write(self, path: str, data: bytes) -> None:
        key = self.key(path)
        self._call("write", path, lambda: obstore.put(self._store, key, bytes(data)))

    def delete(self, path: str) -> bool:
        key = self.key(path)
        if not self.exists(path):  # object stores answer a delete of a missing key with success
            return False
        self._call("delete", path, lambda: obstore.delete(self._store, key))
        return True

    def rename(self, src: str, dst: str) -> None:
        """Copy then delete: not atomic, so never used for commits (those are ``write_if_absent``)."""
        src_key, dst_key = self.key(src), self.key(dst)
        self._call("rename", src, lambda: obstore.rename(self._store, src_key, dst_key, overwrite=True))

    def exists(self, path: str) -> bool:
        try:
            self.info(path)
        except StorageFileNotFoundError:
            return False
        return True

    def info(self, path: str) -> FileInfo:
        key = self.key(path)
        return self._info(self._call("stat", path, lambda: obstore.head(self._store, key)), path)

    def open_read(self, path: str, size: int | None = None) -> BinaryIO:
        """A file object on ``path``. Given its ``size`` (a log's ``add.size``: a reader about to
        read the file's data), no HEAD looks it up, and a file of at most ``WHOLE_READ_BYTES`` is
        fetched whole in one GET and served from memory. Otherwise (a larger file, or one whose
        footer alone is wanted) it is read by ranges, its last ``TAIL_BYTES`` (the footer,
        usually) fetched once on the first read there."""
        whole = size is not None
        if size is None:
            size = self.info(path).size
        if whole and size <= WHOLE_READ_BYTES:
            return _WholeObject(self.read(path), self.location(path))  # type: ignore[return-value]
        return _RangeReader(self, path, size)  # type: ignore[return-value]

    def open_write(self, path: str) -> BinaryIO:
        """Stream to ``path``: small objects in one PUT at close, large ones as a multipart
        upload that becomes visible only when complete (an abort or a crash leaves nothing)."""
        key = self.key(path)
        writer = self._call("write", path, lambda: obstore.open_writer(self._store, key, buffer_size=8 * 1024 * 1024))
        return _ObjectWriter(self, path, writer)  # type: ignore[return-value]

    # --- put-if-absent safety ------------------------------------------------------------

    def check_put_if_absent(self, probe_key: str) -> bool:
        """Prove that the store honours put-if-absent: a second create of ``probe_key`` must fail
        and leave the first one's bytes. ``True`` when it does; when it does not, ``False`` in
        single-writer mode and ``UnsafeStorageError`` otherwise. Checked once per storage."""
        with self._check_lock:
            if self._put_if_absent_checked is not None:
                return self._put_if_absent_checked
            first = f"varlake put-if-absent probe {uuid.uuid4().hex} (1)".encode()
            second = f"varlake put-if-absent probe {uuid.uuid4().hex} (2)".encode()
            try:
                if not self.write_if_absent(probe_key, first):  # a probe left by a crash
                    self.delete(probe_key)
                    if not self.write_if_absent(probe_key, first):
                        raise StorageError(f"{self.location(probe_key)}: the probe key is in use by another writer")
                second_won = self.write_if_absent(probe_key, second)
                kept = self.read(probe_key)
            finally:
                try:
                    self.delete(probe_key)
                except StorageError:
                    pass
            safe = not second_won and kept == first
            if not safe and not self.single_writer:
                raise UnsafeStorageError(
                    f"{self.location(probe_key)}: the store does not honour put-if-absent (a second create of "
                    "one key succeeded), so concurrent commits could overwrite each other; use a store with "
                    f"conditional writes, or set storage option {SINGLE_WRITER}=true if only one writer ever "
                    "commits to its tables"
                )
            self._put_if_absent_checked = safe
            return safe


def _backoff(attempt: int) -> float:
    """Exponential backoff with full jitter: up to 0.1 s * 2**attempt, at most 5 s."""
    return random.uniform(0.05, min(5.0, 0.1 * 2**attempt))


class _WholeObject(io.BytesIO):
    """A small object fetched whole: a file object in memory that names its URI."""

    def __init__(self, data: bytes, name: str) -> None:
        super().__init__(data)
        self.name = name  # what errors name

    def size(self) -> int:
        return len(self.getbuffer())


class _RangeReader(io.RawIOBase):
    """A seekable read-only file on a large object: a read inside its last ``TAIL_BYTES`` is
    served from one GET of them (the footer and the reads around it), any other read is one
    ranged GET of just its bytes (a column chunk)."""

    def __init__(self, storage: ObjectStorage, path: str, size: int) -> None:
        self._storage = storage
        self._path = path
        self._size = size
        self._pos = 0
        self._tail_start = max(0, size - TAIL_BYTES)
        self._tail: bytes | None = None
        self.name = storage.location(path)  # what errors name

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def size(self) -> int:
        return self._size

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def read(self, size: int | None = -1) -> bytes:
        """Up to ``size`` bytes (all the rest if negative) in one request at most."""
        end = self._size if size is None or size < 0 else min(self._size, self._pos + size)
        data = self._fetch(end)
        self._pos += len(data)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self._fetch(min(self._size, self._pos + len(view)))
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def _fetch(self, end: int) -> bytes:
        """Bytes ``[pos, end)``: from the tail when inside it, else one ranged GET."""
        if self.closed:
            raise ValueError("I/O operation on closed file")
        if end <= self._pos:
            return b""
        if self._pos >= self._tail_start:
            if self._tail is None:
                self._tail = self._storage.read_range(self._path, self._tail_start, self._size)
            return self._tail[self._pos - self._tail_start : end - self._tail_start]
        return self._storage.read_range(self._path, self._pos, end)


class _ObjectWriter(io.RawIOBase):
    """A write-only file on an object being uploaded; ``close`` completes it, ``abort`` (or an
    exception out of its ``with`` block) discards it."""

    def __init__(self, storage: ObjectStorage, path: str, writer: Any) -> None:
        self._storage = storage
        self._path = path
        self._writer = writer
        self._pos = 0
        self._done = False

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def write(self, data: Any) -> int:
        if self._done:
            raise ValueError("I/O operation on closed file")
        view = memoryview(data).cast("B")
        n = view.nbytes
        self._storage._call("write", self._path, lambda: self._writer.write(bytes(view)), count=False)
        self._pos += n
        return n

    def abort(self) -> None:
        if not self._done:
            self._done = True
            try:
                self._writer.__exit__(RuntimeError, RuntimeError("aborted"), None)
            except (obx.BaseError, OSError):
                pass
        super().close()

    def close(self) -> None:
        if not self._done:
            self._done = True
            self._storage._call("write", self._path, self._writer.close)
        super().close()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()
