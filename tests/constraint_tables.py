"""Test helper: give an existing varlake table CHECK constraints and column invariants by a
hand-written commit (protocol + metaData), as Delta's ALTER TABLE ADD CONSTRAINT would."""

from __future__ import annotations

import json
import os

from varlake.table import Table


def files_under(root: str) -> set[str]:
    """Every file below ``root`` (relative paths), to show a failed write left nothing."""
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


def add_constraints(
    root: str, *, writer: int = 3, constraints: dict[str, str] | None = None, invariants: dict[str, str] | None = None
) -> None:
    """Commit a new version with ``minWriterVersion`` ``writer``, ``delta.constraints.<name>``
    properties and ``delta.invariants`` on top-level columns."""
    snap = Table(root).snapshot()
    schema = json.loads(snap.metadata.schema_string)
    for f in schema["fields"]:
        if invariants and f["name"] in invariants:
            f["metadata"]["delta.invariants"] = json.dumps({"expression": {"expression": invariants[f["name"]]}})
    conf = dict(snap.metadata.configuration)
    conf.update({f"delta.constraints.{k}": v for k, v in (constraints or {}).items()})
    meta = snap.metadata.to_dict()
    meta.update(schemaString=json.dumps(schema), configuration=conf)
    with open(os.path.join(root, "_delta_log", f"{snap.version + 1:020d}.json"), "x") as fh:
        fh.write(json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": writer}}) + "\n")
        fh.write(json.dumps({"metaData": meta}) + "\n")
