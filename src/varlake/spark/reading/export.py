"""Write every row of a query result to one local file: CSV, JSON Lines or Parquet.

Spark writes the rows (so a result larger than the driver's memory still works) into a
hidden directory next to the target, with one partition; the single part file is then
moved onto the target with ``os.replace``, so the target is either the old file or the
complete new one. CSV cannot hold nested values, so Variant, struct, array and map
columns are written as their JSON text (Spark's ``to_json``); JSON Lines keeps them
nested and writes NULL fields explicitly; Parquet keeps every type (Variants as Parquet
Variant groups). The row count comes from a Spark ``Observation`` of the same job.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Literal

from varlake.errors import ExportError

__all__ = ["ExportError", "ExportFormat", "export_rows", "format_for"]

ExportFormat = Literal["csv", "json", "parquet"]
_SUFFIXES: dict[str, ExportFormat] = {".csv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json", ".parquet": "parquet"}


def format_for(path: str | os.PathLike[str], requested: str | None) -> ExportFormat:
    """The output format: ``requested`` if given, else from the file's suffix."""
    if requested is not None:
        if requested not in ("csv", "json", "parquet"):
            raise ExportError(f"--output {os.fspath(path)}: format {requested!r} cannot be written to a file (csv, json or parquet)")
        return requested  # type: ignore[return-value]
    suffix = Path(path).suffix.lower()
    if suffix not in _SUFFIXES:
        raise ExportError(f"--output {os.fspath(path)}: say --format csv|json|parquet (the suffix {suffix!r} does not tell)")
    return _SUFFIXES[suffix]


def _flat_for_csv(df: Any) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType, VariantType

    nested = (ArrayType, MapType, StructType, VariantType)
    return df.select(
        *[
            F.to_json(F.col(f"`{f.name}`")).alias(f.name) if isinstance(f.dataType, nested) else F.col(f"`{f.name}`")
            for f in df.schema.fields
        ]
    )


def export_rows(df: Any, path: str | os.PathLike[str], fmt: ExportFormat) -> int:
    """Write all rows of ``df`` to the file ``path`` in ``fmt``; returns the number of rows."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    target = Path(path).absolute()
    if target.is_dir():
        raise ExportError(f"--output {target}: is a directory")
    if not target.parent.is_dir():
        raise ExportError(f"--output {target}: directory {target.parent} does not exist")
    staging = target.parent / f".{target.name}.varlake-{uuid.uuid4().hex}"
    observation = Observation("varlake_export")
    out = _flat_for_csv(df) if fmt == "csv" else df
    out = out.observe(observation, F.count(F.lit(1)).alias("rows")).coalesce(1)
    try:
        writer = out.write.mode("error")
        if fmt == "csv":
            writer.option("header", True).option("escape", "\"").csv(str(staging))  # RFC 4180 quoting
        elif fmt == "json":
            writer.option("ignoreNullFields", False).json(str(staging))
        else:
            writer.parquet(str(staging))
        parts = sorted(p for p in staging.iterdir() if p.name.startswith("part-"))
        if len(parts) != 1:
            raise ExportError(f"--output {target}: Spark wrote {len(parts)} part files, expected 1")
        os.replace(parts[0], target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return int(observation.get["rows"])
