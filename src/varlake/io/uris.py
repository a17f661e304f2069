"""Table URIs: the ``Storage`` that reaches a table and the root to hand the table layer.

``storage_for(uri, storage_options)`` returns ``(storage, root)``: a ``LocalStorage`` and the
absolute path for local tables, an ``ObjectStorage`` of the bucket and the canonical URI
(``s3://bucket/key``; ``s3a://`` is the same location) for object stores. Parsing
(``parse_uri``: schemes, and the named error for any other) is in ``io.locations``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from varlake.errors import UnsupportedStorageError
from varlake.io.locations import TableURI, is_object_store_uri, parse_uri
from varlake.io.object_store import ObjectStorage
from varlake.io.storage import LocalStorage, Storage

__all__ = ["TableURI", "is_object_store_uri", "parse_uri", "storage_for"]


def storage_for(
    uri: str | os.PathLike[str], storage_options: Mapping[str, str] | None = None
) -> tuple[Storage, str]:
    """The storage of the table at ``uri`` and the root path to hand the table layer.

    Local paths give ``LocalStorage()`` and the absolute path; object-store URIs give an
    ``ObjectStorage`` of the bucket (configured from the environment, overridden by
    ``storage_options``) and the canonical URI (``s3a://`` written as ``s3://``).
    """
    parsed = parse_uri(uri)
    if parsed.scheme == "file":
        if storage_options:
            unknown = sorted(k for k in storage_options if not str(k).lower().startswith("varlake."))
            if unknown:
                raise UnsupportedStorageError(
                    f"{parsed.original}: storage_options {unknown} apply to object stores, not to a local path"
                )
        return LocalStorage(), parsed.key
    storage = ObjectStorage.for_uri(parsed, storage_options)
    return storage, parsed.location
