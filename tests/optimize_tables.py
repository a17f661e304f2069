"""Test helper: tables whose files have mixed Variant layouts, for OPTIMIZE's tests.

``mixed_table`` builds ``id bigint, v variant`` (optionally partitioned by ``p``) with a
stored shredding schema ``STABLE`` and files written by varlake's Parquet writer under an
older schema, unshredded, with other leaf types, and through ``Table.append`` (the stable
layout); ``add_file`` commits any Parquet file already in the table directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from varlake import Table
from varlake.delta.actions import AddFile
from varlake.delta.ddl import as_struct_type
from varlake.io.parquet_write import write_parquet
from varlake.table import to_arrow_table
from varlake.variant import Variant

STABLE = "a bigint, b string, c struct<d: bigint>"
SHREDDED = {"delta.enableVariantShredding": "true", "varlake.shredding.v": STABLE}


def doc(i: int) -> dict[str, Any]:
    return {"a": i, "b": f"k{i % 3}", "c": {"d": i * 2}}


def add_file(table: Table, rel: str, partition: dict[str, str] | None = None) -> AddFile:
    path = Path(table.open_file(rel))
    return AddFile(rel, path.stat().st_size, partition or {}, 0, True, table.file_stats_json(rel))


def write_file(table: Table, rel: str, rows: list[tuple[int, Any]], layout: str | None) -> str:
    """``(id, value)`` rows as a Parquet file at ``rel``, shredded with ``layout`` (None: unshredded)."""
    target = Path(table.open_file(rel))
    target.parent.mkdir(parents=True, exist_ok=True)
    schema = as_struct_type("id bigint, v variant")
    data = to_arrow_table({"id": [r[0] for r in rows], "v": [r[1] for r in rows]}, schema)
    write_parquet(data, target, shredding={"v": layout} if layout else None, variant_columns=["v"])
    return rel


def mixed_table(root: Path, properties: dict[str, str] | None = None) -> Table:
    """Five files of ``id bigint, v variant``: older schema (0..99), unshredded (100..199),
    other leaf types (200..299), and two appended in the stable layout (300..399, 400..499)."""
    table = Table.create(root, "id bigint, v variant", properties={**SHREDDED, **(properties or {})})
    adds = [
        add_file(table, write_file(table, "older.parquet", [(i, doc(i)) for i in range(0, 100)], "a bigint")),
        add_file(table, write_file(table, "plain.parquet", [(i, doc(i)) for i in range(100, 200)], None)),
        add_file(table, write_file(table, "types.parquet", [(i, doc(i)) for i in range(200, 300)], "a string, b string, c struct<d: bigint>")),
    ]
    table.commit_files(adds, "append")
    table.append([{"id": i, "v": doc(i)} for i in range(300, 400)])
    table.append([{"id": i, "v": doc(i)} for i in range(400, 500)])
    assert table.properties["varlake.shredding.v"] == STABLE
    return table


def logical_rows(table: Table) -> list[tuple[Any, ...]]:
    """Every row, sorted by ``id``, Variants as ``Variant`` (compared logically)."""
    rows = table.scan().to_arrow().to_pylist()
    out = []
    for row in rows:
        out.append(tuple(Variant(v["metadata"], v["value"]) if isinstance(v, dict) and "metadata" in v else v for v in row.values()))
    return sorted(out, key=lambda r: r[0])


def null_first_typed(arr: pa.StructArray, field: str) -> pa.StructArray:
    """A shredded Variant column with ``typed_value.<field>.typed_value`` of its first row NULL:
    the silent-null corruption the content check must catch."""
    typed = arr.field("typed_value")
    child = typed.field(field)
    leaf = child.field("typed_value")
    mask = pa.array([i == 0 for i in range(len(leaf))])
    nulled = pc.if_else(mask, pa.scalar(None, leaf.type), leaf)
    new_child = pa.StructArray.from_arrays(
        [nulled if f.name == "typed_value" else child.field(f.name) for f in child.type], fields=list(child.type)
    )
    new_typed = pa.StructArray.from_arrays(
        [new_child if f.name == field else typed.field(f.name) for f in typed.type], fields=list(typed.type),
        mask=typed.is_null(),
    )
    return pa.StructArray.from_arrays(
        [new_typed if f.name == "typed_value" else arr.field(f.name) for f in arr.type], fields=list(arr.type),
        mask=arr.is_null(),
    )
