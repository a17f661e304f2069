"""Test helpers: deletion vectors built with ``pyroaring`` and tables that carry them.

``serialize_dv`` frames a set of row indexes as Delta does (the magic number, then
``pyroaring.BitMap64``'s portable 64-bit serialization -- an encoder independent of
varlake's decoder). ``dv_table`` writes a varlake table whose data files have several
row groups; ``delete_rows`` commits, by hand as Delta's writers do, a new version in
which chosen files carry deletion vectors stored inline (``i``), in UUID-named files
(``u``, optionally under a random prefix, several DVs per file at their offsets) or at
absolute paths (``p``), and the protocol declares ``deletionVectors``.
"""

from __future__ import annotations

import json
import os
import struct
import uuid
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
from pyroaring import BitMap64

from varlake import Table
from varlake.delta.actions import AddFile, Protocol, action_to_json
from varlake.delta.ddl import parse_ddl
from varlake.io.parquet_write import write_parquet
from varlake.variant.z85 import z85_encode

MAGIC = 1681511377


def serialize_dv(rows: Iterable[int]) -> bytes:
    """A deletion vector's bytes: magic number (little-endian) + portable 64-bit RoaringBitmap."""
    bitmap = BitMap64(rows)
    bitmap.run_optimize()
    return struct.pack("<I", MAGIC) + bitmap.serialize()


def inline_descriptor(data: bytes, cardinality: int) -> dict:
    padded = data + b"\x00" * (-len(data) % 4)
    return {"storageType": "i", "pathOrInlineDv": z85_encode(padded), "sizeInBytes": len(data), "cardinality": cardinality}


def write_dv_file(path: Path, dvs: Sequence[bytes]) -> list[int]:
    """A DV file holding ``dvs`` (version byte, then size, bytes and CRC-32 of each); their offsets."""
    out, offsets = bytearray(b"\x01"), []
    for data in dvs:
        offsets.append(len(out))
        out += struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))
    return offsets


def uuid_dv_path(root: Path, prefix: str = "") -> tuple[Path, str]:
    """A fresh ``u`` DV file location and its ``pathOrInlineDv`` (``<prefix><Z85 UUID>``)."""
    ident = uuid.uuid4()
    name = f"deletion_vector_{ident}.bin"
    return (root / prefix / name if prefix else root / name), prefix + z85_encode(ident.bytes)


def dv_table(
    root: Path, sizes: Sequence[int], row_group_size: int = 5, partitioned: bool = False, variant: bool = False
) -> Table:
    """A varlake table of ``len(sizes)`` files (``id`` numbered across the files, ``s`` its
    text, ``p`` = file number % 2 when ``partitioned``, ``v`` = ``{"a": id}`` shredded when
    ``variant``), each in row groups of ``row_group_size``."""
    schema = "id bigint, s string" + (", p int" if partitioned else "") + (", v variant" if variant else "")
    properties = {"delta.enableVariantShredding": "true"} if variant else {}
    properties["delta.enableDeletionVectors"] = "false"  # the feature comes with ``delete_rows``
    table = Table.create(root, schema, partition_by=("p",) if partitioned else (), properties=properties)
    adds, start = [], 0
    for i, n in enumerate(sizes):
        part = f"p={i % 2}/" if partitioned else ""
        rel = f"{part}data-{i:03d}.parquet"
        ids = list(range(start, start + n))
        start += n
        data = pa.table({"id": pa.array(ids, pa.int64()), "s": pa.array([f"row {x}" for x in ids])})
        if variant:
            data = data.append_column("v", _variants([{"a": x} for x in ids]))
        os.makedirs(os.path.dirname(f"{root}/{rel}"), exist_ok=True)
        write_parquet(data, f"{root}/{rel}", row_group_size=row_group_size,
                      shredding="auto" if variant else None, variant_columns=["v"] if variant else None)
        stats = table.file_stats_json(rel)
        adds.append(
            AddFile(rel, os.path.getsize(f"{root}/{rel}"), {"p": str(i % 2)} if partitioned else {}, 1_700_000_000_000, True, stats)
        )
    table.commit_files(adds, "append")
    return table


def _variants(values: list) -> pa.Array:
    from varlake.table import to_arrow_table

    return to_arrow_table({"v": values}, parse_ddl("v variant")).column("v").combine_chunks()


def delete_rows(table: Table, deletions: Mapping[str, tuple[str, Iterable[int]]], prefix: str = "") -> int:
    """Commit a version in which each file ``rel`` of ``deletions`` carries a DV deleting
    ``rows`` (``storage`` ``i``, ``u`` or ``p``; the ``u`` and ``p`` ones of one commit share
    a file, at their offsets). Returns the new version."""
    root = Path(table.path)
    snapshot = table.snapshot()
    by_rel = {a.path: a for a in snapshot.files}
    stored: list[tuple[str, bytes, int]] = []
    descriptors: dict[str, dict] = {}
    for rel, (storage, rows) in deletions.items():
        rows = sorted(set(rows))
        data = serialize_dv(rows)
        if storage == "i":
            descriptors[rel] = inline_descriptor(data, len(rows))
        else:
            stored.append((rel, data, len(rows)))
    if stored:
        location, encoded = uuid_dv_path(root, prefix)
        offsets = write_dv_file(location, [d for _, d, _ in stored])
        for (rel, data, card), offset in zip(stored, offsets):
            storage = deletions[rel][0]
            text = encoded if storage == "u" else location.resolve().as_uri()
            descriptors[rel] = {"storageType": storage, "pathOrInlineDv": text, "offset": offset,
                                "sizeInBytes": len(data), "cardinality": card}
    old = snapshot.protocol
    readers = set(old.reader_features or ()) | {"deletionVectors"}
    writers = set(old.writer_features or ()) | {"deletionVectors"}
    protocol = Protocol(3, 7, tuple(sorted(readers)), tuple(sorted(writers)))
    lines = [json.dumps({"commitInfo": {"timestamp": 1_700_000_000_001, "operation": "DELETE"}}), action_to_json(protocol)]
    for rel, descriptor in descriptors.items():
        add = by_rel[rel]
        lines.append(action_to_json(add.remove(1_700_000_000_001)))
        lines.append(action_to_json(replace(add, deletion_vector=descriptor, data_change=True)))
    version = snapshot.version + 1
    (root / "_delta_log" / f"{version:020d}.json").write_text("\n".join(lines) + "\n")
    return version
