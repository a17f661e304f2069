"""Writing deletion vectors in Delta's format (PROTOCOL.md "Deletion Vector Format").

The inverse of ``delta.deletion_vectors`` (which reads them):

* ``serialize_bitmap(rows)`` -- the magic number 1681511377 (little-endian) and the rows
  as a 64-bit RoaringBitmap in the portable format: a little-endian 8-byte bucket count,
  then per bucket its 4-byte key (the high 32 bits, ascending, top bit clear) and the low
  32 bits as a portable 32-bit RoaringBitmap (``pyroaring.BitMap``, run-optimized);
* ``inline_descriptor(data, n)`` -- ``storageType`` ``i``: the Z85 text of the bytes
  zero-padded to a multiple of 4, ``sizeInBytes`` the unpadded length;
* ``DvFileWriter`` -- one ``deletion_vector_<uuid>.bin`` file of several DVs: the version
  byte 1, then per DV its big-endian 4-byte size, the bytes and their big-endian CRC-32;
  each descriptor is ``storageType`` ``u`` with ``pathOrInlineDv`` = ``<random prefix><Z85
  of the UUID's 16 bytes>`` (20 characters) and ``offset`` pointing at the size.

``descriptors_for`` picks inline for small vectors (``MAX_INLINE_BYTES``) and the file for
the rest. Files are written put-if-absent through ``Storage`` before the commit that names
them; a commit that is lost leaves them unreferenced (``vacuum`` removes them).
"""

from __future__ import annotations

import secrets
import string
import struct
import uuid
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from varlake.delta.deletion_vectors import FILE_FORMAT_VERSION, MAGIC
from varlake.errors import CorruptDeletionVectorError, StorageError
from varlake.io.storage import Storage
from varlake.variant.z85 import z85_encode

__all__ = [
    "MAX_INLINE_BYTES",
    "DvFileWriter",
    "descriptors_for",
    "dv_file_name",
    "encode_uuid",
    "inline_descriptor",
    "serialize_bitmap",
]

#: serialized DVs up to this many bytes are stored inline in the log (``storageType`` ``i``)
MAX_INLINE_BYTES = 64
_MAX_ROW_INDEX = (1 << 63) - 1  # keys must keep their top bit clear
_PREFIX_ALPHABET = string.ascii_letters + string.digits


def serialize_bitmap(rows: Iterable[int] | np.ndarray) -> bytes:
    """The serialized DV of the row indexes ``rows`` (any order, duplicates allowed)."""
    from pyroaring import BitMap

    values = np.unique(np.asarray(rows if isinstance(rows, np.ndarray) else list(rows), dtype=np.int64))
    if len(values) and (values[0] < 0 or values[-1] > _MAX_ROW_INDEX):
        raise CorruptDeletionVectorError(f"row index {int(values[0] if values[0] < 0 else values[-1])} cannot be in a DV")
    values = values.astype(np.uint64)
    keys = (values >> np.uint64(32)).astype(np.uint32)
    out = bytearray(struct.pack("<I", MAGIC))
    distinct, starts = np.unique(keys, return_index=True) if len(keys) else (np.empty(0, np.uint32), np.empty(0, int))
    out += struct.pack("<Q", len(distinct))
    bounds = list(starts) + [len(values)]
    for i, key in enumerate(distinct):
        low = (values[bounds[i] : bounds[i + 1]] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        bitmap = BitMap(low)
        bitmap.run_optimize()
        out += struct.pack("<I", int(key)) + bitmap.serialize()
    return bytes(out)


def inline_descriptor(data: bytes, cardinality: int) -> dict[str, Any]:
    """The ``deletionVector`` of a DV stored inline in the log."""
    padded = data + b"\x00" * (-len(data) % 4)
    return {"storageType": "i", "pathOrInlineDv": z85_encode(padded), "sizeInBytes": len(data), "cardinality": cardinality}


def encode_uuid(ident: uuid.UUID, prefix: str = "") -> str:
    """``pathOrInlineDv`` of a ``u`` DV: ``prefix`` then the Z85 text of the UUID (20 characters)."""
    return prefix + z85_encode(ident.bytes)


def dv_file_name(ident: uuid.UUID, prefix: str = "") -> str:
    """The DV file's path relative to the table root (PROTOCOL.md "absolutePath")."""
    name = f"deletion_vector_{ident}.bin"
    return f"{prefix}/{name}" if prefix else name


def random_prefix(length: int = 2) -> str:
    """A random directory prefix for DV files (as Delta's ``delta.randomizeFilePrefixes``)."""
    return "".join(secrets.choice(_PREFIX_ALPHABET) for _ in range(length))


class DvFileWriter:
    """Collects DVs for one ``deletion_vector_<uuid>.bin`` file; ``write`` puts it in storage."""

    def __init__(self, prefix: str = "") -> None:
        if any(c not in _PREFIX_ALPHABET for c in prefix):
            raise CorruptDeletionVectorError(f"DV file prefix {prefix!r} must be letters and digits")
        self.id = uuid.uuid4()
        self.prefix = prefix
        self._data = bytearray([FILE_FORMAT_VERSION])
        self.count = 0

    @property
    def relative_path(self) -> str:
        return dv_file_name(self.id, self.prefix)

    def add(self, data: bytes, cardinality: int) -> dict[str, Any]:
        """Append one serialized DV; its ``deletionVector`` descriptor."""
        offset = len(self._data)
        self._data += struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))
        self.count += 1
        return {
            "storageType": "u",
            "pathOrInlineDv": encode_uuid(self.id, self.prefix),
            "offset": offset,
            "sizeInBytes": len(data),
            "cardinality": cardinality,
        }

    @property
    def size(self) -> int:
        return len(self._data)

    def write(self, storage: Storage, root: str) -> int:
        """Write the file under the table ``root`` (put-if-absent); its size in bytes (0: no DVs)."""
        if not self.count:
            return 0
        path = f"{root}/{self.relative_path}"
        storage.location_inside(root, path)
        if not storage.write_if_absent(path, bytes(self._data)):
            raise StorageError(f"{root}: DV file {self.relative_path!r} already exists; nothing was written")
        return len(self._data)


def descriptors_for(
    deleted: Mapping[str, np.ndarray] | Sequence[tuple[str, np.ndarray]],
    storage: Storage,
    root: str,
    *,
    max_inline_bytes: int = MAX_INLINE_BYTES,
    prefix: str = "",
) -> tuple[dict[str, dict[str, Any]], int, int]:
    """A descriptor per key of ``deleted`` (key -> row indexes): inline when the serialized
    DV has at most ``max_inline_bytes`` bytes, else in one new DV file written now. Returns
    the descriptors, the bytes written to DV files and the number of files written."""
    items = list(deleted.items()) if isinstance(deleted, Mapping) else list(deleted)
    out: dict[str, dict[str, Any]] = {}
    writer = DvFileWriter(prefix)
    for key, rows in items:
        data = serialize_bitmap(rows)
        cardinality = len(np.unique(np.asarray(rows)))
        out[key] = inline_descriptor(data, cardinality) if len(data) <= max_inline_bytes else writer.add(data, cardinality)
    written = writer.write(storage, root)
    return out, written, 1 if written else 0
