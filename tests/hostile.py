"""Helpers for hostile-table tests: hand-written ``_delta_log`` files, tampering with a table
varlake wrote, and proof that nothing appeared outside a table root.

``nothing_outside(root)`` snapshots the directory tree *around* the table (its parent by
default) and, on exit, fails if any entry appeared that is not under ``root``::

    with nothing_outside(root):
        varlake.Table(root).append(...)
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

__all__ = [
    "PROTOCOL",
    "add",
    "field",
    "metadata",
    "nothing_outside",
    "read_lines",
    "schema_string",
    "tamper_log",
    "tree",
    "write_commit",
]

PROTOCOL: dict[str, Any] = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}


def field(name: str, type_: Any, nullable: bool = True) -> dict[str, Any]:
    """One ``StructField`` of a ``schemaString``."""
    return {"name": name, "type": type_, "nullable": nullable, "metadata": {}}


def schema_string(*fields: dict[str, Any]) -> str:
    """A ``schemaString`` with ``fields`` (default: ``id long``)."""
    return json.dumps({"type": "struct", "fields": list(fields or [field("id", "long")])})


def metadata(schema: str | None = None, partition_columns: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    """A ``metaData`` action line (``extra`` overrides any field)."""
    body = {
        "id": "hostile-table",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": schema if schema is not None else schema_string(),
        "partitionColumns": partition_columns or [],
        "configuration": {},
    }
    body.update(extra)
    return {"metaData": body}


def add(path: str = "a.parquet", **extra: Any) -> dict[str, Any]:
    """An ``add`` action line (``extra`` overrides any field)."""
    body = {"path": path, "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True}
    body.update(extra)
    return {"add": body}


def write_commit(root: Path, version: int, *lines: dict[str, Any] | str) -> Path:
    """Write ``_delta_log/<version>.json``: dicts as compact JSON lines, strings verbatim."""
    path = Path(root) / "_delta_log" / f"{version:020d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines))
    return path


def read_lines(path: Path) -> list[Any]:
    """The JSON objects of one commit file."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def tamper_log(root: Path, change: Callable[[dict[str, Any]], dict[str, Any] | str | None]) -> None:
    """Rewrite every commit of the table at ``root``: each action line through ``change``
    (return a dict, a raw string line, or None to drop the line)."""
    for path in sorted((Path(root) / "_delta_log").glob("*.json")):
        out = []
        for obj in read_lines(path):
            new = change(obj)
            if new is not None:
                out.append(new if isinstance(new, str) else json.dumps(new))
        path.write_text("\n".join(out))


def tree(base: Path) -> set[str]:
    """Every file, directory and link under ``base`` (links are not followed), relative."""
    out: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        rel = os.path.relpath(dirpath, base)
        for name in dirnames + filenames:
            out.add(os.path.normpath(os.path.join(rel, name)))
    return out


@contextmanager
def nothing_outside(root: Path, around: Path | None = None) -> Iterator[None]:
    """Fail if the block creates anything under ``around`` (default: ``root``'s parent) that
    is not inside ``root``. The check runs even when the block raises."""
    root = Path(root).resolve()
    around = Path(around).resolve() if around is not None else root.parent
    inside = os.path.relpath(root, around)
    before = tree(around)
    try:
        yield
    finally:
        added = tree(around) - before
        outside = sorted(p for p in added if p != inside and not p.startswith(inside + os.sep))
        assert not outside, f"files appeared outside the table root {root}: {outside}"
