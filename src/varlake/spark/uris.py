"""How Spark names local files: the URIs a relation lists and ``_metadata.file_path``."""

from __future__ import annotations

import os
from urllib.parse import unquote, urlsplit

__all__ = ["local_path", "spark_file_name"]


def spark_file_name(uri: str) -> str:
    """``_metadata.file_path`` of a file a relation lists as ``uri``: a local file's row
    names it without the empty authority (``file:/x``, where the listing has ``file:///x``)."""
    return "file:/" + uri[len("file:///") :] if uri.startswith("file:///") else uri


def local_path(uri: str) -> str:
    """The local path of a ``file:`` URI as Spark lists it (``file:/a%20b`` -> ``/a b``);
    any other URI is returned as it is."""
    parts = urlsplit(uri)
    return os.path.normpath(unquote(parts.path)) if parts.scheme in ("", "file") else uri
