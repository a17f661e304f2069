"""Partition paths and the values they hold, as Hudi's key generators write them.

A file group's partition path is one segment per partition field: ``field=value`` with
hive-style partitioning, the bare value otherwise (simple and complex key generators),
URL-encoded when ``hoodie.datasource.write.partitionpath.urlencode``; a null value is
``__HIVE_DEFAULT_PARTITION__`` (or ``default`` in older writers). A non-partitioned table
has the empty path. A timestamp-based key generator writes a formatted date
(``2024/01/15/09``), from which the field's value cannot be recovered.

Hudi keeps partition columns in the data files unless
``hoodie.datasource.write.drop.partition.columns``; only then does a reader take them
from the path, typed as the table's Avro schema types them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from varlake.errors import HudiError, UnsupportedHudiFeatureError
from varlake.hudi.properties import HudiProperties

__all__ = ["DEFAULT_PARTITIONS", "arrow_type", "partition_columns", "partition_types", "partition_values"]

DEFAULT_PARTITIONS = ("__HIVE_DEFAULT_PARTITION__", "default")

#: Avro type -> Delta type name
_AVRO_TYPES = {
    "string": "string",
    "int": "integer",
    "long": "long",
    "float": "float",
    "double": "double",
    "boolean": "boolean",
    "bytes": "binary",
}
_AVRO_LOGICAL = {"date": "date", "timestamp-micros": "timestamp", "timestamp-millis": "timestamp"}


def partition_values(path: str, props: HudiProperties, where: str) -> dict[str, str | None]:
    """``field -> value text`` (None: null) of the partition ``path`` (module doc)."""
    fields = props.partition_fields
    if not fields or props.key_generator == "NON_PARTITION":
        return {}
    if props.key_generator == "TIMESTAMP" or "timestamp" in (props.get("hoodie.table.partition.fields") or "").lower():
        raise UnsupportedHudiFeatureError(
            f"{where}: partition columns dropped from the data files with a timestamp-based key generator "
            f"(the partition path {path!r} does not hold the field's value)"
        )
    segments = path.split("/") if path else []
    if len(segments) != len(fields):
        raise HudiError(f"{where}: partition path {path!r} has {len(segments)} segments for the partition fields {list(fields)}")
    out: dict[str, str | None] = {}
    for field, segment in zip(fields, segments):
        value = segment
        if props.hive_style_partitioning or segment.startswith(f"{field}="):
            key, eq, value = segment.partition("=")
            if not eq or key != field:
                raise HudiError(f"{where}: partition path segment {segment!r} is not {field}=<value>")
        if props.url_encoded_partitions:
            value = unquote(value)
        out[field] = None if value in DEFAULT_PARTITIONS else value
    return out


def _delta_type(avro: Any) -> str | None:
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        return _delta_type(branches[0]) if len(branches) == 1 else None
    if isinstance(avro, Mapping):
        logical = avro.get("logicalType")
        if logical in _AVRO_LOGICAL:
            return _AVRO_LOGICAL[logical]
        if logical == "decimal":
            return f"decimal({int(avro.get('precision', 10))},{int(avro.get('scale', 0))})"
        return _delta_type(avro.get("type"))
    if isinstance(avro, str):
        return _AVRO_TYPES.get(avro)
    return None


def partition_types(props: HudiProperties, avro_schema: str | None) -> dict[str, str]:
    """``field -> Delta type name`` of the partition fields, from the table's Avro schema
    (the latest commit's, else ``hoodie.table.create.schema``); ``string`` where it does not say."""
    text = avro_schema or props.get("hoodie.table.create.schema")
    declared: dict[str, str] = {}
    if text:
        try:
            record = json.loads(text)
        except ValueError:
            record = {}
        for f in record.get("fields", ()) if isinstance(record, Mapping) else ():
            if isinstance(f, Mapping) and isinstance(f.get("name"), str):
                t = _delta_type(f.get("type"))
                if t is not None:
                    declared[f["name"]] = t
    return {field: declared.get(field, "string") for field in props.partition_fields}


_ARROW = {
    "string": pa.string(),
    "integer": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
}


def arrow_type(name: str) -> pa.DataType:
    """The Arrow type of a Delta type name ``partition_types`` gives."""
    if name.startswith("decimal("):
        precision, scale = (int(x) for x in name[len("decimal(") : -1].split(","))
        return pa.decimal128(precision, scale)
    return _ARROW[name]


def partition_columns(rows: pa.Table, values: Mapping[str, str | None], types: Mapping[str, str], where: str) -> pa.Table:
    """``rows`` with each partition field the files dropped appended, its value from the
    path (``values``) cast to its type."""
    for field, text in values.items():
        if field in rows.column_names:
            continue
        target = arrow_type(types.get(field, "string"))
        try:
            value = pa.array([text], pa.string()).cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise HudiError(f"{where}: partition value {text!r} of {field!r} is not a {target} ({exc})") from None
        rows = rows.append_column(pa.field(field, target), pa.repeat(value[0], rows.num_rows))
    return rows
