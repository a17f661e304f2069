"""Data-file paths in the log: decode them and keep them inside the table root.

A log written by someone else is untrusted input: an ``add`` path of
``../../etc/passwd``, ``/somewhere/else.parquet`` or ``s3://other-bucket/x`` must
never make varlake read -- or vacuum -- a file outside the table. PROTOCOL.md paths
are RFC 2396 URIs, so they are percent-decoded *before* being checked. A table on an object
store may log absolute URIs (delta-rs and Spark do): ``s3://bucket/table/part-0.parquet`` is
accepted when it lies inside the table's root (``s3a://`` naming the same place), any other
bucket, prefix or scheme is refused.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote, urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.delta.constants import LOG_DIR
from varlake.errors import UnsafePathError, UnsupportedStorageError
from varlake.io.locations import parse_uri

__all__ = ["check_path_column", "plain_paths", "relative_data_path"]

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def relative_data_path(path: str, root_location: str, where: str) -> str:
    """``path`` (as logged) decoded and made relative to the table root.

    ``root_location`` is the absolute location of the table root. Raises
    ``UnsafePathError`` naming ``where`` if the path leaves the root.
    """
    decoded = unquote(path)
    if "\x00" in decoded or not decoded:
        raise UnsafePathError(f"{where}: invalid file path {path!r}")
    if _SCHEME.match(decoded) and not re.match(r"^[A-Za-z]:[\\/]", decoded):
        parts = urlsplit(decoded)
        if parts.scheme.lower() == "file" and parts.netloc in ("", "localhost"):
            decoded = parts.path
        else:
            rel = _inside_uri_root(decoded, root_location)
            if rel is None:
                raise UnsafePathError(
                    f"{where}: file path {path!r} points outside the table root {root_location!r} "
                    "(another scheme, bucket or prefix)"
                )
            decoded = rel
    decoded = decoded.replace("\\", "/")
    if decoded.startswith("/"):
        norm = posixpath.normpath(decoded)
        root = posixpath.normpath(root_location)
        if not norm.startswith(root.rstrip("/") + "/"):
            raise UnsafePathError(f"{where}: absolute file path {path!r} is outside the table root {root_location!r}")
        rel = norm[len(root.rstrip("/")) + 1 :]
    else:
        rel = posixpath.normpath(decoded)
        if rel == "." or rel == ".." or rel.startswith("../"):
            raise UnsafePathError(f"{where}: file path {path!r} escapes the table root")
    if rel == LOG_DIR or rel.startswith(LOG_DIR + "/"):
        raise UnsafePathError(f"{where}: file path {path!r} points into {LOG_DIR}")
    return rel


def _inside_uri_root(uri: str, root_location: str) -> str | None:
    """``uri``'s key relative to the object-store root ``root_location``; None unless both are
    object-store URIs of the same store and bucket and ``uri`` lies below the root."""
    if not _SCHEME.match(root_location):
        return None
    try:
        target, root = parse_uri(uri.replace("%", "%25")), parse_uri(root_location)
    except UnsupportedStorageError:
        return None
    if target.scheme == "file" or (target.scheme, target.bucket, target.account) != (root.scheme, root.bucket, root.account):
        return None
    if not root.key:
        return target.key or None
    if not target.key.startswith(root.key + "/"):
        return None
    return target.key[len(root.key) + 1 :]


def check_path_column(paths: pa.Array | pa.ChunkedArray, root_location: str, where: str) -> None:
    """Validate a whole column of logged paths; only suspicious ones pay for a full check."""
    if len(paths) == 0:
        return
    if paths.null_count:
        raise UnsafePathError(f"{where}: a file action has a null path")
    suspicious = pc.or_(
        pc.or_(pc.match_substring(paths, "%"), pc.match_substring(paths, "..")),
        pc.or_(
            pc.or_(pc.match_substring(paths, ":"), pc.match_substring(paths, "\\")),
            pc.or_(pc.starts_with(paths, "/"), pc.starts_with(paths, LOG_DIR)),
        ),
    )
    suspicious = pc.or_(suspicious, pc.equal(pc.utf8_length(paths), 0))
    flagged = pc.filter(paths, suspicious)
    for p in flagged.to_pylist():
        relative_data_path(p, root_location, where)


def plain_paths(paths: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Which logged paths ``relative_data_path`` returns unchanged, for any root: no ``%``,
    ``:``, ``\\``, NUL, empty or ``.`` segment, not absolute, not under ``_delta_log``
    (some such paths are reported as not plain too; nulls are not plain)."""
    odd = pc.starts_with(paths, "/")
    for piece in ("%", ":", "\\", "\x00", "//", "/.", ".."):
        odd = pc.or_(odd, pc.match_substring(paths, piece))
    for start in (".", LOG_DIR):
        odd = pc.or_(odd, pc.starts_with(paths, start))
    odd = pc.or_(odd, pc.ends_with(paths, "/"))
    odd = pc.or_(odd, pc.equal(pc.utf8_length(paths), 0))
    return ~np.asarray(pc.fill_null(odd, True).to_numpy(zero_copy_only=False), dtype=bool)
