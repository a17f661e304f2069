"""``varlake describe`` and ``varlake history``: what a table is and how it got there."""

from __future__ import annotations

import json
from typing import Any, Optional

import typer

from varlake.cli.base import FORMAT, STORAGE_OPTION, Format, app, errors, storage_options
from varlake.cli.output import output_for

__all__ = ["describe", "describe_table", "history"]


def _merge_bound(current: Any, new: Any, pick: Any) -> Any:
    if current is None:
        return new
    try:
        return pick(current, new)
    except TypeError:  # different type families in different files
        return current


def describe_table(path: str, options: dict[str, str] | None = None) -> dict[str, Any]:
    """Schema, protocol, properties (shredding schemas too), size and a stats summary."""
    from varlake import Table
    from varlake.delta.stats import leaf_columns
    from varlake.expr.partition import parse_partition_value

    table = Table(path, storage_options=options)
    snap = table.snapshot()
    schema = snap.schema
    files = snap.files
    # The table layer's plan of a full scan: statistics and partition values by logical
    # column name (column mapping), row counts without deletion-vector-deleted rows.
    tasks = table.scan(version=snap.version).plan().tasks
    rows: int | None = 0
    columns: dict[str, dict[str, Any]] = {}
    for p, t in leaf_columns(schema):
        columns[".".join(p)] = {"column": ".".join(p), "type": _type_name(t), "nulls": 0, "min": None, "max": None}
    variant_paths: dict[tuple[str, str], dict[str, Any]] = {}
    for task in tasks:
        fs = task.stats
        live = task.num_records
        rows = None if rows is None or live is None else rows + live
        for p in leaf_columns(schema):
            name = ".".join(p[0])
            entry = columns[name]
            n = fs.null_count.get(p[0])
            if name in snap.partition_columns:
                raw = task.partition_values.get(name)
                n = (live or 0) if raw is None else 0
                value = None if raw is None else parse_partition_value(raw, _type_name(p[1]))
                if value is not None:
                    entry["min"] = _merge_bound(entry["min"], value, min)
                    entry["max"] = _merge_bound(entry["max"], value, max)
            entry["nulls"] = None if n is None or entry["nulls"] is None else entry["nulls"] + n
            if p[0] in fs.min_values:
                entry["min"] = _merge_bound(entry["min"], fs.min_values[p[0]], min)
            if p[0] in fs.max_values:
                entry["max"] = _merge_bound(entry["max"], fs.max_values[p[0]], max)
        for key, bound in fs.variant_min.items():
            e = variant_paths.setdefault((".".join(key[0]), key[1]), {"min": None, "max": None, "files": 0})
            e["min"] = _merge_bound(e["min"], bound.value, min)
            e["files"] += 1
        for key, bound in fs.variant_max.items():
            e = variant_paths.setdefault((".".join(key[0]), key[1]), {"min": None, "max": None, "files": 0})
            e["max"] = _merge_bound(e["max"], bound.value, max)
    protocol = snap.protocol
    return {
        "path": table.path,
        "version": snap.version,
        "files": len(files),
        "rows": rows,
        "size_bytes": sum(a.size for a in files),
        "partition_columns": list(snap.partition_columns),
        "protocol": {
            "minReaderVersion": protocol.min_reader_version,
            "minWriterVersion": protocol.min_writer_version,
            "readerFeatures": list(protocol.reader_features or []),
            "writerFeatures": list(protocol.writer_features or []),
        },
        "schema": [{"column": f.name, "type": _type_name(f.type), "nullable": f.nullable} for f in schema.fields],
        "properties": dict(snap.properties),
        "shredding": {name: s.ddl for name, s in table.shredding_schemas(snap).items()},
        "column_stats": list(columns.values()),
        "variant_path_stats": [
            {"column": c, "path": p, "files": e["files"], "min": e["min"], "max": e["max"]}
            for (c, p), e in sorted(variant_paths.items())
        ],
    }


def _type_name(t: Any) -> str:
    value = t.to_json()
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


@app.command()
def describe(
    table: str = typer.Argument(..., help="Table path or URI (s3://, gs://, az://, ...)."),
    storage_option: list[str] = STORAGE_OPTION,
    fmt: Format = FORMAT,
) -> None:
    """Schema, protocol and features, properties, shredding schemas, size and statistics."""
    out = output_for(fmt)
    with errors():
        out.describe(describe_table(table, storage_options(storage_option)))


@app.command()
def history(
    table: str = typer.Argument(..., help="Table path or URI (s3://, gs://, az://, ...)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Newest N versions."),
    storage_option: list[str] = STORAGE_OPTION,
    fmt: Format = FORMAT,
) -> None:
    """The table's commits, newest first."""
    from varlake import Table

    out = output_for(fmt)
    with errors():
        entries = Table(table, storage_options=storage_options(storage_option)).history(limit)
        rows = [
            {
                "version": e.version,
                "timestamp": e.datetime.isoformat(),
                "operation": e.operation,
                "parameters": dict(e.operation_parameters),
                "metrics": dict(e.commit_info.get("operationMetrics") or {}),
            }
            for e in entries
        ]
        out.rows(rows, ["version", "timestamp", "operation", "parameters", "metrics"])
