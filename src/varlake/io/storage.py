"""Storage: the few file operations a table needs, behind one small interface.

The Delta log relies on exactly one strong primitive: *put-if-absent*. Two writers
that race for commit ``N`` must see exactly one winner, and no reader may ever see
a half-written commit. ``LocalStorage`` gets this by writing the full content to a
hidden temporary file first and then ``os.link``-ing it to the final name: ``link``
fails atomically with ``EEXIST`` if the name is taken, across processes, and the
linked file is complete from its first visible instant.

Paths are ``/``-separated strings. ``LocalStorage(base)`` resolves relative paths
against ``base``; absolute paths are used as they are.
"""

from __future__ import annotations

import abc
import errno
import io
import os
import re
import uuid
from typing import BinaryIO
from dataclasses import dataclass

from varlake.errors import StorageError, StorageFileNotFoundError, UnsafePathError

__all__ = ["FileInfo", "LocalStorage", "Storage"]

_TMP_PREFIX = ".varlake-tmp-"
TEMP_PREFIX = _TMP_PREFIX
# Temporary names of earlier releases' Parquet writer: ``.<name>.<uuid hex>.tmp``.
_OLD_PARQUET_TEMP = re.compile(r"\..+\.[0-9a-f]{32}\.tmp\Z")


def temporary_name(name: str) -> str:
    """A hidden name beside ``name`` for a file being written (renamed to ``name`` when complete)."""
    return f"{TEMP_PREFIX}{uuid.uuid4().hex}-{name}"


def is_temporary(name: str) -> bool:
    """Whether a file's base ``name`` is one varlake gives files while it writes them: such a
    file left behind by a crash is never referenced by a table and vacuum may delete it."""
    return name.startswith(TEMP_PREFIX) or _OLD_PARQUET_TEMP.match(name) is not None


@dataclass(frozen=True, slots=True)
class FileInfo:
    """One listed file: its path (as passed to the storage), size and mtime in ms."""

    path: str
    size: int
    mtime_ms: int

    @property
    def name(self) -> str:
        """The last path component."""
        return self.path.rsplit("/", 1)[-1]


class Storage(abc.ABC):
    """What the table layer needs from a file system or object store."""

    @abc.abstractmethod
    def list(self, prefix: str, start_after: str | None = None) -> list[FileInfo]:
        """Files directly inside directory ``prefix``, sorted by name.

        ``start_after`` (a file *name*) skips names that sort at or before it, as
        object stores do with paginated listings. A missing directory lists empty.
        Temporary files of in-flight writes are never listed.
        """

    @abc.abstractmethod
    def walk(self, prefix: str) -> list[FileInfo]:
        """Every file below ``prefix``, recursively (for vacuum)."""

    @abc.abstractmethod
    def read(self, path: str) -> bytes:
        """The whole content of ``path``; ``StorageFileNotFoundError`` if absent."""

    @abc.abstractmethod
    def write_if_absent(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` atomically unless it exists.

        Returns ``True`` if this call created the file, ``False`` if the path was
        already taken (the existing file is left untouched).
        """

    @abc.abstractmethod
    def write(self, path: str, data: bytes) -> None:
        """Create or atomically replace ``path`` (readers see old or new, never half)."""

    @abc.abstractmethod
    def delete(self, path: str) -> bool:
        """Delete ``path``; ``False`` if it did not exist."""

    @abc.abstractmethod
    def rename(self, src: str, dst: str) -> None:
        """Move ``src`` to ``dst``, replacing ``dst``."""

    @abc.abstractmethod
    def exists(self, path: str) -> bool:
        """Whether ``path`` is an existing file."""

    @abc.abstractmethod
    def info(self, path: str) -> FileInfo:
        """Size and mtime of ``path``; ``StorageFileNotFoundError`` if absent."""

    @abc.abstractmethod
    def location(self, path: str) -> str:
        """The absolute, normalised location ``path`` names (to match absolute paths in logs)."""

    def location_inside(self, root: str, path: str) -> str:
        """``location(path)`` for a file of the table at ``root``; stores with links refuse a
        path that resolves outside ``root`` (``UnsafePathError``)."""
        return self.location(path)

    def open_read(self, path: str, size: int | None = None) -> BinaryIO:
        """A seekable binary file object on ``path`` for reading parts of it (a Parquet
        footer); ``StorageFileNotFoundError`` if absent. The caller closes it. ``size``: the
        file's size when the caller knows it (a log's ``add.size``), so that an object store
        need not look it up. This default reads the whole file; stores that can read ranges
        override it."""
        return io.BytesIO(self.read(path))

    def open_write(self, path: str) -> BinaryIO:
        """A binary file object that creates or replaces ``path`` when it is closed: readers
        see the old content or the whole new one, never a part. Leaving a ``with`` block by an
        exception (or calling its ``abort()``) discards what was written. This default keeps
        the content in memory and hands it to ``write``; object stores stream it."""
        return _WriteOnClose(self, path)  # type: ignore[return-value]


class _WriteOnClose(io.BytesIO):
    """``Storage.open_write``'s default: buffer, then ``storage.write`` on close."""

    def __init__(self, storage: Storage, path: str) -> None:
        super().__init__()
        self._storage = storage
        self._path = path
        self._aborted = False

    def abort(self) -> None:
        self._aborted = True
        super().close()

    def close(self) -> None:
        if not self.closed and not self._aborted:
            data = self.getvalue()
            super().close()
            self._storage.write(self._path, data)
        super().close()

    def __exit__(self, exc_type, exc, tb) -> None:  # type: ignore[no-untyped-def,override]
        if exc_type is not None:
            self.abort()
        else:
            self.close()


def _mtime_ms(st: os.stat_result) -> int:
    return st.st_mtime_ns // 1_000_000


class LocalStorage(Storage):
    """``Storage`` on a local (POSIX) file system; safe across processes."""

    def __init__(self, base: str | os.PathLike[str] | None = None) -> None:
        self.base = os.fspath(base) if base is not None else None

    def __repr__(self) -> str:
        return f"LocalStorage({self.base!r})"

    def _os_path(self, path: str) -> str:
        if self.base is None or os.path.isabs(path):
            return path
        return os.path.join(self.base, path)

    def list(self, prefix: str, start_after: str | None = None) -> list[FileInfo]:
        directory = self._os_path(prefix)
        out: list[FileInfo] = []
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            return []
        except NotADirectoryError:
            return []
        except OSError as exc:
            raise StorageError(f"cannot list {directory}: {exc}") from exc
        base = prefix.rstrip("/")
        for entry in entries:
            name = entry.name
            if name.startswith(_TMP_PREFIX) or (start_after is not None and name <= start_after):
                continue
            try:
                if not entry.is_file():
                    continue
                st = entry.stat()
            except FileNotFoundError:  # deleted while listing
                continue
            out.append(FileInfo(f"{base}/{name}", st.st_size, _mtime_ms(st)))
        out.sort(key=lambda f: f.path)
        return out

    def walk(self, prefix: str) -> list[FileInfo]:
        top = self._os_path(prefix)
        base = prefix.rstrip("/")
        out: list[FileInfo] = []
        for dirpath, _dirs, files in os.walk(top):
            rel_dir = os.path.relpath(dirpath, top)
            for name in files:  # temporary files included: vacuum decides what they are
                try:
                    st = os.lstat(os.path.join(dirpath, name))  # a link's own age: never stat through it
                except FileNotFoundError:
                    continue
                rel = name if rel_dir == "." else f"{rel_dir.replace(os.sep, '/')}/{name}"
                out.append(FileInfo(f"{base}/{rel}", st.st_size, _mtime_ms(st)))
        out.sort(key=lambda f: f.path)
        return out

    def read(self, path: str) -> bytes:
        try:
            with open(self._os_path(path), "rb") as fh:
                return fh.read()
        except FileNotFoundError as exc:
            raise StorageFileNotFoundError(f"no such file: {path}") from exc
        except IsADirectoryError as exc:
            raise StorageError(f"is a directory, not a file: {path}") from exc
        except OSError as exc:
            raise StorageError(f"cannot read {path}: {exc}") from exc

    def _write_temp(self, path: str, data: bytes) -> tuple[str, str]:
        """Write ``data`` to a fresh hidden file beside ``path``, fsynced; returns the local
        target and the temporary file (the caller links or renames one onto the other)."""
        target = self._os_path(path)
        try:
            directory = os.path.dirname(target) or "."
            os.makedirs(directory, exist_ok=True)
            tmp = os.path.join(directory, f"{_TMP_PREFIX}{uuid.uuid4().hex}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            except BaseException:
                os.close(fd)
                _silent_unlink(tmp)
                raise
            os.close(fd)
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc}") from exc
        return target, tmp

    def write_if_absent(self, path: str, data: bytes) -> bool:
        target, tmp = self._write_temp(path, data)
        try:
            os.link(tmp, target)
        except FileExistsError:
            if not os.path.isfile(target):  # a directory (or worse) in the way: not a lost race
                raise StorageError(
                    f"cannot create {path}: something that is not a file is in the way; nothing was written"
                ) from None
            return False
        except OSError as exc:
            if exc.errno in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise StorageError(
                    f"cannot create {path} atomically: this file system has no hard links ({exc})"
                ) from exc
            raise StorageError(f"cannot create {path}: {exc}") from exc
        finally:
            _silent_unlink(tmp)
        return True

    def write(self, path: str, data: bytes) -> None:
        target, tmp = self._write_temp(path, data)
        try:
            os.replace(tmp, target)
        except OSError as exc:
            _silent_unlink(tmp)
            raise StorageError(f"cannot write {path}: {exc}") from exc

    def delete(self, path: str) -> bool:
        try:
            os.unlink(self._os_path(path))
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StorageError(f"cannot delete {path}: {exc}") from exc
        return True

    def rename(self, src: str, dst: str) -> None:
        try:
            target = self._os_path(dst)
            os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
            os.replace(self._os_path(src), target)
        except FileNotFoundError as exc:
            raise StorageFileNotFoundError(f"no such file: {src}") from exc
        except OSError as exc:
            raise StorageError(f"cannot rename {src} to {dst}: {exc}") from exc

    def exists(self, path: str) -> bool:
        return os.path.isfile(self._os_path(path))

    def info(self, path: str) -> FileInfo:
        try:
            st = os.stat(self._os_path(path))
        except FileNotFoundError as exc:
            raise StorageFileNotFoundError(f"no such file: {path}") from exc
        except OSError as exc:
            raise StorageError(f"cannot stat {path}: {exc}") from exc
        return FileInfo(path, st.st_size, _mtime_ms(st))

    def location(self, path: str) -> str:
        return os.path.abspath(self._os_path(path)).replace(os.sep, "/")

    def location_inside(self, root: str, path: str) -> str:
        """The policy for links: a table's files are read and written only where they really
        are inside the table root; a symlink (of the file or of a directory on the way) that
        leads out of it is refused, so one table never reads or overwrites another's files."""
        real_root = os.path.realpath(self._os_path(root))
        real = os.path.realpath(self._os_path(path))
        if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
            raise UnsafePathError(
                f"{root}: {path} resolves to {real}, outside the table root; varlake does not follow links out of a table"
            )
        return self.location(path)

    def open_read(self, path: str, size: int | None = None) -> BinaryIO:
        try:
            return open(self._os_path(path), "rb")
        except FileNotFoundError as exc:
            raise StorageFileNotFoundError(f"no such file: {path}") from exc
        except IsADirectoryError as exc:
            raise StorageError(f"is a directory, not a file: {path}") from exc
        except OSError as exc:
            raise StorageError(f"cannot read {path}: {exc}") from exc


def _silent_unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
