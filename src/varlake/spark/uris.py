"""How Spark names a table's files -- the URIs a relation lists and ``_metadata.file_path``
-- and how the table names them (``Table.open_file``).

Local files: Spark lists ``file:///a%20b`` and its rows say ``file:/a%20b``; the table says
``/a b``. Object stores: Spark lists ``s3://bkt/t/a%20b`` (or ``s3a://``, whichever the
read was given: Hadoop's S3A serves both) and the table says ``s3://bkt/t/a b`` -- ``s3``
and ``s3a`` name the same object, so both are mapped to the table's canonical ``s3://``.
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlsplit

__all__ = ["local_path", "spark_file_name", "table_location", "table_path"]

#: Hadoop's spellings of a store -> the scheme varlake names it by (``io.locations``).
_SAME_STORE = {"s3a": "s3", "s3n": "s3", "s3": "s3", "gs": "gs"}


def spark_file_name(uri: str) -> str:
    """``_metadata.file_path`` of a file a relation lists as ``uri``: a local file's row
    names it without the empty authority (``file:/x``, where the listing has ``file:///x``)."""
    return "file:/" + uri[len("file:///") :] if uri.startswith("file:///") else uri


def local_path(uri: str) -> str:
    """The local path of a ``file:`` URI as Spark lists it (``file:/a%20b`` -> ``/a b``);
    any other URI is returned as it is."""
    parts = urlsplit(uri)
    return os.path.normpath(unquote(parts.path)) if parts.scheme in ("", "file") else uri


def table_path(uri: str) -> str:
    """A file Spark names ``uri`` (a listing's or a row's URI, percent-encoded) spelled as the
    table names it (``table_location``): a normalised local path, or ``s3://bucket/key``
    decoded (``s3a://`` is ``s3://``)."""
    parts = urlsplit(uri)
    if parts.scheme in ("", "file"):
        return local_path(uri)
    scheme = _SAME_STORE.get(parts.scheme.lower())
    if scheme is None:
        return uri
    key = unquote(parts.path).lstrip("/")
    return f"{scheme}://{parts.netloc}/{key}"


def table_location(location: str) -> str:
    """A file as the table names it (``Table.open_file``: decoded, never percent-encoded) in
    the form ``table_path`` gives Spark's names: local paths normalised, ``s3a://`` as ``s3://``."""
    scheme, sep, rest = location.partition("://")
    if not sep:
        return os.path.normpath(location)
    same = _SAME_STORE.get(scheme.lower())
    return f"{same}://{rest}" if same is not None else location
