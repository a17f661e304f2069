"""Deletion vectors (PROTOCOL.md "Deletion Vectors", "Deletion Vector Format").

An ``add`` may carry a deletion vector (DV): the row indexes (positions in the data file,
from 0, across row groups) that are deleted although still in the file. This module
parses the descriptor (``DeletionVector.parse``), finds where the DV is stored, and
decodes it into a sorted ``uint64`` array of deleted row indexes (``load_deleted_rows``):

* ``i`` -- inline: ``pathOrInlineDv`` is the Z85 text of the serialized bitmap
  (zero-padded to 4 bytes; ``sizeInBytes`` is its length before padding);
* ``u`` -- a file relative to the table root, ``<random prefix><Z85 UUID>`` naming
  ``<prefix>/deletion_vector_<uuid>.bin`` (the UUID is always 20 characters);
* ``p`` -- a file at an absolute path, spelled as an ``add`` path is (a URI).

A DV file is a version byte (1), then per DV a 4-byte big-endian size, the serialized
bitmap and the CRC-32 of the bitmap (big-endian); ``offset`` points at the size. The
serialized bitmap is the magic number 1681511377 (little-endian) and a 64-bit
RoaringBitmap in the portable format: a little-endian 8-byte bucket count, then per
bucket its 4-byte key (the high 32 bits, ascending, top bit clear) and a 32-bit
RoaringBitmap in the portable format (decoded with ``pyroaring``). Every mismatch --
size, magic, checksum, bucket layout, trailing bytes, ``cardinality`` -- raises
``CorruptDeletionVectorError`` naming the table, the data file and the DV.
"""

from __future__ import annotations

import posixpath
import struct
import uuid
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from varlake.delta.actions import AddFile, dv_unique_id
from varlake.delta.paths import relative_data_path
from varlake.errors import CorruptDeletionVectorError, StorageError, StorageFileNotFoundError, UnsafePathError
from varlake.variant.z85 import Z85Error, z85_decode

__all__ = [
    "MAGIC",
    "DeletionVector",
    "decode_bitmap",
    "deleted_count",
    "keep_mask",
    "load_deleted_rows",
]

MAGIC = 1681511377
FILE_FORMAT_VERSION = 1
ENCODED_UUID_LENGTH = 20
_SERIAL_COOKIE = 12347  # a 32-bit portable bitmap with run containers
_SERIAL_COOKIE_NO_RUN = 12346
_NO_OFFSET_THRESHOLD = 4  # with runs, fewer containers than this store no offset header
_ARRAY_MAX = 4096
_EMPTY = np.empty(0, dtype=np.uint64)

#: ``relative path -> open binary file`` of the table the DV belongs to (the table layer
#: checks the path stays inside the root, links included)
OpenRelative = Callable[[str], BinaryIO]


@dataclass(frozen=True)
class DeletionVector:
    """A deletion vector descriptor (``add.deletionVector``), validated."""

    storage_type: str
    path_or_inline: str
    offset: int | None
    size_in_bytes: int
    cardinality: int

    @classmethod
    def parse(cls, descriptor: Mapping[str, Any], where: str) -> DeletionVector:
        """The descriptor of an ``add`` (``where`` names it), or ``CorruptDeletionVectorError``."""
        if not isinstance(descriptor, Mapping):
            raise CorruptDeletionVectorError(f"{where}: deletionVector must be an object, got {descriptor!r}")

        def integer(key: str, optional: bool = False) -> int | None:
            value = descriptor.get(key)
            if value is None and optional:
                return None
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise CorruptDeletionVectorError(
                    f"{where}: deletionVector.{key} must be a non-negative integer, got {value!r}"
                )
            return value

        kind = descriptor.get("storageType")
        text = descriptor.get("pathOrInlineDv")
        if kind not in ("u", "i", "p"):
            raise CorruptDeletionVectorError(f"{where}: deletionVector.storageType must be 'u', 'i' or 'p', got {kind!r}")
        if not isinstance(text, str) or not text:
            raise CorruptDeletionVectorError(f"{where}: deletionVector.pathOrInlineDv must be a non-empty string")
        offset = integer("offset", optional=True)
        if kind == "i" and offset is not None:
            raise CorruptDeletionVectorError(f"{where}: an inline deletionVector has no offset (got {offset})")
        if kind == "u" and len(text) < ENCODED_UUID_LENGTH:
            raise CorruptDeletionVectorError(
                f"{where}: deletionVector.pathOrInlineDv {text!r} is shorter than a Z85-encoded UUID"
            )
        size = integer("sizeInBytes")
        cardinality = integer("cardinality")
        return cls(kind, text, offset, size, cardinality)  # type: ignore[arg-type]

    @property
    def unique_id(self) -> str:
        """PROTOCOL.md's ``uniqueId`` (the logical file's key with the data file path)."""
        return dv_unique_id(
            {"storageType": self.storage_type, "pathOrInlineDv": self.path_or_inline, "offset": self.offset}
        ) or ""

    @property
    def inline(self) -> bool:
        return self.storage_type == "i"

    def describe(self) -> str:
        """How the DV is named in messages: its file, or the inline text."""
        if self.inline:
            return f"inline deletion vector {self.path_or_inline[:40]!r}"
        return f"deletion vector {self.path_or_inline!r} (storageType {self.storage_type!r}, offset {self.offset or 0})"

    def relative_path(self, root_location: str, where: str) -> str:
        """The DV file's path relative to the table root (``u`` and ``p``); it must stay in
        the root (``UnsafePathError`` otherwise)."""
        if self.inline:
            raise CorruptDeletionVectorError(f"{where}: an inline deletion vector has no file")
        if self.storage_type == "p":
            return relative_data_path(self.path_or_inline, root_location, f"{where}: deletion vector path")
        split = len(self.path_or_inline) - ENCODED_UUID_LENGTH
        prefix, encoded = self.path_or_inline[:split], self.path_or_inline[split:]
        try:
            raw = z85_decode(encoded)
        except Z85Error as exc:
            raise CorruptDeletionVectorError(f"{where}: {self.describe()}: the UUID is not valid Z85 ({exc})") from None
        name = f"deletion_vector_{uuid.UUID(bytes=raw)}.bin"
        rel = posixpath.normpath(f"{prefix}/{name}") if prefix else name
        if "\x00" in rel or rel.startswith("/") or rel == ".." or rel.startswith("../") or "\\" in prefix:
            raise UnsafePathError(f"{where}: deletion vector prefix {prefix!r} escapes the table root")
        return rel


def deleted_count(add: AddFile) -> int:
    """Rows the ``add``'s deletion vector removes (0 without one); a malformed count is 0
    here (reading the file raises the named error)."""
    dv = add.deletion_vector
    if dv is None:
        return 0
    value = dv.get("cardinality") if isinstance(dv, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# --- the serialized bitmap -----------------------------------------------------------------------------------


def _u32(data: bytes, pos: int, where: str, what: str) -> int:
    if pos + 4 > len(data):
        raise CorruptDeletionVectorError(f"{where}: the bitmap ends inside {what} (byte {pos} of {len(data)})")
    return int.from_bytes(data[pos : pos + 4], "little")


def _bitmap32_end(data: bytes, pos: int, where: str) -> int:
    """Where the portable 32-bit RoaringBitmap starting at ``pos`` ends (its header walked)."""
    cookie = _u32(data, pos, where, "a bucket's cookie")
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        count = (cookie >> 16) + 1
        p = pos + 4
        runs = data[p : p + (count + 7) // 8]
        p += (count + 7) // 8
        if p > len(data):
            raise CorruptDeletionVectorError(f"{where}: the bitmap ends inside a run-container bitset")
        offsets = count >= _NO_OFFSET_THRESHOLD
    elif cookie == _SERIAL_COOKIE_NO_RUN:
        count = _u32(data, pos + 4, where, "a bucket's container count")
        if count > 1 << 16:
            raise CorruptDeletionVectorError(f"{where}: a bucket claims {count} containers (at most 65536)")
        p, runs, offsets = pos + 8, b"", True
    else:
        raise CorruptDeletionVectorError(f"{where}: byte {pos}: not a portable RoaringBitmap (cookie {cookie})")
    header_end = p + 4 * count
    if header_end > len(data):
        raise CorruptDeletionVectorError(f"{where}: the bitmap ends inside a container header")
    cards = np.frombuffer(data, dtype="<u2", count=2 * count, offset=p)[1::2].astype(np.int64) + 1
    p = header_end + (4 * count if offsets else 0)
    for i in range(count):
        if runs and runs[i // 8] >> (i % 8) & 1:
            if p + 2 > len(data):
                raise CorruptDeletionVectorError(f"{where}: the bitmap ends inside a run container")
            p += 2 + 4 * int.from_bytes(data[p : p + 2], "little")
        elif cards[i] > _ARRAY_MAX:
            p += 8192
        else:
            p += 2 * int(cards[i])
        if p > len(data):
            raise CorruptDeletionVectorError(f"{where}: the bitmap ends inside a container")
    return p


def _bucket(data: bytes, start: int, end: int, key: int, where: str) -> np.ndarray:
    """The row indexes of one 32-bit bucket ``data[start:end]`` with high bits ``key``."""
    from pyroaring import BitMap

    try:
        low = BitMap.deserialize(data[start:end])
    except (ValueError, OverflowError, MemoryError) as exc:
        raise CorruptDeletionVectorError(f"{where}: bucket {key}: invalid RoaringBitmap ({exc})") from None
    values = np.frombuffer(low.to_array(), dtype=np.uint32).astype(np.uint64)
    return values | np.uint64(key << 32) if key else values


def decode_bitmap(data: bytes, where: str) -> np.ndarray:
    """The row indexes (sorted ``uint64``) of a serialized DV: magic number + portable 64-bit
    RoaringBitmap, every byte accounted for. Delta's readers also take their older "native"
    layout (magic ``MAGIC - 1``: a 4-byte count, then per key 0, 1, ... a 4-byte size and
    a 32-bit bitmap); so does this."""
    if len(data) < 8:
        raise CorruptDeletionVectorError(f"{where}: {len(data)} bytes is too short for a deletion vector")
    magic = int.from_bytes(data[:4], "little")
    native = magic == MAGIC - 1
    if magic != MAGIC and not native:
        raise CorruptDeletionVectorError(f"{where}: magic number {magic} is not {MAGIC}")
    header = 8 if native else 12
    if len(data) < header:
        raise CorruptDeletionVectorError(f"{where}: {len(data)} bytes is too short for a deletion vector")
    buckets = int.from_bytes(data[4:header], "little")
    if buckets > (len(data) - header) // 12:  # a bucket takes at least 4 bytes and an 8-byte empty bitmap
        raise CorruptDeletionVectorError(f"{where}: {buckets} buckets cannot fit in {len(data)} bytes")
    parts: list[np.ndarray] = []
    pos, previous = header, -1
    for index in range(buckets):
        if native:
            key, size = index, _u32(data, pos, where, "a bucket size")
            end = _bitmap32_end(data, pos + 4, where)
            if end != pos + 4 + size:
                raise CorruptDeletionVectorError(f"{where}: bucket {key} is {end - pos - 4} bytes, its size says {size}")
        else:
            key = _u32(data, pos, where, "a bucket key")
            if key >= 1 << 31 or key <= previous:
                raise CorruptDeletionVectorError(
                    f"{where}: bucket key {key} is not ascending or has its top bit set (previous {previous})"
                )
            end = _bitmap32_end(data, pos + 4, where)
        previous = key
        parts.append(_bucket(data, pos + 4, end, key, where))
        pos = end
    if pos != len(data):
        raise CorruptDeletionVectorError(f"{where}: {len(data) - pos} byte(s) after the bitmap's last bucket")
    if not parts:
        return _EMPTY
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


# --- loading one DV ------------------------------------------------------------------------------------------


def _inline_bytes(dv: DeletionVector, where: str) -> bytes:
    try:
        raw = z85_decode(dv.path_or_inline)
    except Z85Error as exc:
        raise CorruptDeletionVectorError(f"{where}: inline deletion vector is not valid Z85 ({exc})") from None
    if len(raw) < dv.size_in_bytes or len(raw) - dv.size_in_bytes >= 4:
        raise CorruptDeletionVectorError(
            f"{where}: inline deletion vector holds {len(raw)} bytes, sizeInBytes is {dv.size_in_bytes}"
        )
    return raw[: dv.size_in_bytes]


def _stored_bytes(dv: DeletionVector, source: BinaryIO, where: str) -> bytes:
    offset = dv.offset or 0
    try:
        version = source.read(1)
        if version != bytes([FILE_FORMAT_VERSION]):
            raise CorruptDeletionVectorError(f"{where}: DV file format version {version!r} is not 1")
        if offset < 1:
            raise CorruptDeletionVectorError(f"{where}: offset {offset} points at the DV file's version byte")
        source.seek(offset)
        framed = source.read(dv.size_in_bytes + 8)
    except (OSError, ValueError) as exc:
        raise CorruptDeletionVectorError(f"{where}: cannot read the DV file ({exc})") from None
    if len(framed) < 4:
        raise CorruptDeletionVectorError(f"{where}: the DV file ends before offset {offset} + 4")
    (size,) = struct.unpack(">I", framed[:4])
    if size != dv.size_in_bytes:
        raise CorruptDeletionVectorError(f"{where}: the DV file gives size {size}, sizeInBytes is {dv.size_in_bytes}")
    if len(framed) < size + 8:
        raise CorruptDeletionVectorError(f"{where}: the DV file is truncated ({len(framed)} of {size + 8} bytes)")
    data = framed[4 : 4 + size]
    (checksum,) = struct.unpack(">I", framed[4 + size : 8 + size])
    actual = zlib.crc32(data)
    if checksum != actual:
        raise CorruptDeletionVectorError(f"{where}: CRC-32 {actual:#010x} of the DV does not match {checksum:#010x}")
    return data


def load_deleted_rows(dv: DeletionVector, open_relative: OpenRelative, root_location: str, where: str) -> np.ndarray:
    """The deleted row indexes (sorted ``uint64``) of ``dv``; ``where`` names the table and
    the data file, ``open_relative`` opens a file of the table by its root-relative path."""
    where = f"{where}: {dv.describe()}"
    if dv.cardinality == 0:
        return _EMPTY  # Delta's readers do not read an empty DV
    if dv.inline:
        data = _inline_bytes(dv, where)
    else:
        rel = dv.relative_path(root_location, where)
        where = f"{where} at {rel!r}"
        try:
            source = open_relative(rel)
        except (StorageFileNotFoundError, FileNotFoundError):
            raise CorruptDeletionVectorError(f"{where}: the DV file is missing") from None
        except (StorageError, OSError) as exc:
            raise CorruptDeletionVectorError(f"{where}: cannot open the DV file ({exc})") from None
        with source:
            data = _stored_bytes(dv, source, where)
    rows = decode_bitmap(data, where)
    if len(rows) != dv.cardinality:
        raise CorruptDeletionVectorError(f"{where}: the bitmap holds {len(rows)} rows, cardinality is {dv.cardinality}")
    return rows


def keep_mask(deleted: np.ndarray, num_rows: int, where: str) -> np.ndarray:
    """A boolean mask over a file's ``num_rows`` rows: False where the row is deleted. A
    deleted index past the file's last row means the DV is not this file's: an error."""
    last = int(deleted.max()) if len(deleted) else -1
    if last >= num_rows:
        raise CorruptDeletionVectorError(f"{where}: the deletion vector deletes row {last}, but the data file has {num_rows} rows")
    mask = np.ones(num_rows, dtype=bool)
    mask[deleted.astype(np.int64)] = False
    return mask
