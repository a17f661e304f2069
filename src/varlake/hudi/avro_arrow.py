"""Avro schemas and records of Hudi log blocks as Arrow types and tables.

The Arrow types match what pyarrow reads from the Parquet base files Hudi writes for the
same schema, so log records and base records can be concatenated: ``int``/``long`` with
``date``, ``time-*`` and ``timestamp-*`` logical types become Arrow temporal types (UTC
timestamps for ``timestamp-*``, naive for ``local-timestamp-*``), ``decimal`` (bytes or
fixed) a decimal, ``enum`` a string, a nullable union (``["null", T]``) a nullable ``T``.
A record with ``"logicalType": "variant"`` (fields ``metadata`` and ``value``, bytes)
becomes varlake's Variant column (``arrow.parquet.variant``, unshredded); its values are
checked as Spark checks them, and bytes Spark could not read raise ``MalformedVariantError``.
A shredded variant record (``metadata``, optional ``value``, ``typed_value`` laid out as
the Parquet shredding spec says) is read unshredded the same way.

Records are decoded with fastavro against the block's writer schema with temporal logical
types removed (so they arrive as the integers Arrow takes directly).
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from varlake.errors import HudiLogFormatError, HudiLogUnsupportedError, MalformedVariantError, VarlakeError
from varlake.shred.arrow_extension import VariantExtensionType
from varlake.shred.unshred import UNSHREDDED_TYPE, unshred_variant
from varlake.variant.validity import is_valid_variant_bytes

__all__ = ["AvroArrowSchema", "avro_to_arrow_schema", "records_to_table"]

_PRIMITIVE = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
_TEMPORAL = {
    ("int", "date"): pa.date32(),
    ("int", "time-millis"): pa.time32("ms"),
    ("long", "time-micros"): pa.time64("us"),
    ("long", "timestamp-millis"): pa.timestamp("ms", tz="UTC"),
    ("long", "timestamp-micros"): pa.timestamp("us", tz="UTC"),
    ("long", "timestamp-nanos"): pa.timestamp("ns", tz="UTC"),
    ("long", "local-timestamp-millis"): pa.timestamp("ms"),
    ("long", "local-timestamp-micros"): pa.timestamp("us"),
    ("long", "local-timestamp-nanos"): pa.timestamp("ns"),
}
_MAX_DEPTH = 64


class AvroArrowSchema:
    """An Avro writer schema (parsed JSON) turned into: the Arrow schema of its records, the
    schema fastavro decodes with (temporal logical types removed) and the Variant columns."""

    def __init__(self, schema: Any, where: str) -> None:
        self.where = where
        self._named: dict[str, pa.DataType] = {}
        self._zero_width: set[str] = set()
        if not isinstance(schema, dict) or schema.get("type") != "record" or not isinstance(schema.get("fields"), list):
            raise HudiLogFormatError(f"{where}: the writer schema is not an Avro record")
        self.decode_schema = _strip_temporal(schema, 0, where)
        try:
            arrow = self._type(schema, "", 0)
        except VarlakeError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError, pa.ArrowException) as e:
            # odd schema JSON (a list where a name belongs, ...) that the checks above let through
            raise HudiLogFormatError(f"{where}: the writer schema is not a usable Avro schema: {e!r}") from None
        assert isinstance(arrow, pa.StructType)
        self.decode_arrow = pa.schema([arrow.field(i) for i in range(arrow.num_fields)])
        self.arrow = pa.schema([pa.field(f.name, _unshredded(f.type), nullable=f.nullable) for f in self.decode_arrow])

    # -- Avro type -> Arrow type --------------------------------------------------------------

    def _type(self, t: Any, namespace: str, depth: int) -> pa.DataType:
        if depth > _MAX_DEPTH:
            raise HudiLogUnsupportedError(f"{self.where}: the writer schema nests deeper than {_MAX_DEPTH} levels")
        if isinstance(t, str):
            if t in _PRIMITIVE:
                return _PRIMITIVE[t]
            full = t if "." in t or not namespace else f"{namespace}.{t}"
            for name in (full, t):
                if name in self._named:
                    return self._named[name]
            raise HudiLogFormatError(f"{self.where}: the writer schema names an unknown type {t!r}")
        if isinstance(t, list):
            return self._union(t, namespace, depth)
        if not isinstance(t, dict):
            raise HudiLogFormatError(f"{self.where}: {t!r} is not an Avro type")
        kind = t.get("type")
        logical = t.get("logicalType")
        if isinstance(kind, (dict, list)):
            return self._type(kind, namespace, depth + 1)
        if kind in ("int", "long") and (kind, logical) in _TEMPORAL:
            return _TEMPORAL[(kind, logical)]
        if logical == "decimal" and kind in ("bytes", "fixed"):
            return self._decimal(t, namespace)
        if kind in _PRIMITIVE:
            return _PRIMITIVE[kind]
        if kind == "enum":
            self._register(t, namespace, pa.string())
            return pa.string()
        if kind == "fixed":
            size = t.get("size")
            if not isinstance(size, int) or size < 0:
                raise HudiLogFormatError(f"{self.where}: fixed type {t.get('name')!r} has size {size!r}")
            self._register(t, namespace, pa.binary(size))
            if size == 0:
                self._zero_width.add(self._fullname(t, namespace))
            return pa.binary(size)
        if kind == "array":
            item = self._type(t.get("items"), namespace, depth + 1)
            self._refuse_zero_width(t.get("items"), namespace, "array items")
            return pa.list_(pa.field("element", item))
        if kind == "map":
            return pa.map_(pa.string(), self._type(t.get("values"), namespace, depth + 1))
        if kind == "record":
            return self._record(t, namespace, depth)
        raise HudiLogFormatError(f"{self.where}: unknown Avro type {kind!r}")

    def _fullname(self, t: dict[str, Any], namespace: str) -> str:
        name = t.get("name")
        if not isinstance(name, str):
            raise HudiLogFormatError(f"{self.where}: a named Avro type has no name")
        ns = t.get("namespace", namespace)
        return name if "." in name or not ns else f"{ns}.{name}"

    def _register(self, t: dict[str, Any], namespace: str, arrow: pa.DataType) -> None:
        full = self._fullname(t, namespace)
        self._named[full] = arrow
        self._named.setdefault(full.rsplit(".", 1)[-1], arrow)

    def _decimal(self, t: dict[str, Any], namespace: str) -> pa.DataType:
        precision, scale = t.get("precision"), t.get("scale", 0)
        if not isinstance(precision, int) or not isinstance(scale, int) or not 0 < precision <= 76 or not 0 <= scale <= precision:
            raise HudiLogFormatError(f"{self.where}: decimal({precision!r}, {scale!r}) is not a valid decimal")
        arrow = pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
        if t.get("type") == "fixed":
            self._register(t, namespace, arrow)
        return arrow

    def _record(self, t: dict[str, Any], namespace: str, depth: int) -> pa.DataType:
        full = self._fullname(t, namespace)
        inner_ns = full.rsplit(".", 1)[0] if "." in full else ""
        if t.get("logicalType") == "variant":
            arrow = self._variant(t, full, inner_ns, depth)
            self._register(t, namespace, arrow)
            return arrow
        self._named[full] = pa.struct([])  # a placeholder: recursive records are refused below
        fields = t.get("fields")
        if not isinstance(fields, list):
            raise HudiLogFormatError(f"{self.where}: record {full!r} has no field list")
        out = []
        zero_width = True
        for f in fields:
            if not isinstance(f, dict) or not isinstance(f.get("name"), str):
                raise HudiLogFormatError(f"{self.where}: record {full!r} has a field without a name")
            ftype = f.get("type")
            if ftype == full or ftype == t.get("name"):
                raise HudiLogUnsupportedError(f"{self.where}: recursive record {full!r}")
            arrow_f = self._type(ftype, inner_ns, depth + 1)
            nullable = _is_nullable(ftype) or arrow_f == pa.null()
            out.append(pa.field(f["name"], arrow_f, nullable=nullable))
            zero_width = zero_width and (ftype == "null" or (isinstance(ftype, str) and ftype in self._zero_width))
        struct = pa.struct(out)
        self._register(t, namespace, struct)
        if zero_width:
            self._zero_width.add(full)
        return struct

    def _variant(self, t: dict[str, Any], full: str, namespace: str, depth: int) -> pa.DataType:
        """A variant record: unshredded (``metadata``, ``value``) or shredded (``metadata``, an
        optional ``value`` and ``typed_value``, as the Parquet shredding spec lays them out)."""
        fields = [f for f in t.get("fields", []) if isinstance(f, dict)]
        names = sorted(str(f.get("name")) for f in fields)
        if names == ["metadata", "value"]:
            return VariantExtensionType()
        if "metadata" not in names or "typed_value" not in names or not set(names) <= {"metadata", "value", "typed_value"}:
            raise HudiLogFormatError(
                f"{self.where}: variant record {full!r} must have fields metadata and value (and typed_value when shredded), not {names}"
            )
        order = {"metadata": 0, "value": 1, "typed_value": 2}
        storage = pa.struct(
            [
                pa.field(f["name"], self._type(f.get("type"), namespace, depth + 1), nullable=f["name"] != "metadata")
                for f in sorted(fields, key=lambda f: order[f["name"]])
            ]
        )
        return VariantExtensionType(storage)  # checks the layout; read back unshredded

    def _union(self, branches: list[Any], namespace: str, depth: int) -> pa.DataType:
        rest = [b for b in branches if b != "null"]
        if len(rest) == 1:
            return self._type(rest[0], namespace, depth + 1)
        if not rest:
            if not branches:
                raise HudiLogFormatError(f"{self.where}: an empty Avro union")
            return pa.null()
        raise HudiLogUnsupportedError(f"{self.where}: Avro union of several non-null types {rest!r}")

    def _refuse_zero_width(self, items: Any, namespace: str, what: str) -> None:
        # A count of items that take no bytes cannot be checked against the bytes left: refuse
        # it rather than let a corrupted count run for ever.
        name = items if isinstance(items, str) else (items.get("name") if isinstance(items, dict) else None)
        if items == "null" or (isinstance(name, str) and (name in self._zero_width or f"{namespace}.{name}" in self._zero_width)):
            raise HudiLogUnsupportedError(f"{self.where}: {what} that take no bytes")

    # -- records -> Arrow table ---------------------------------------------------------------

    def table(self, records: list[dict[str, Any]]) -> pa.Table:
        return records_to_table(records, self.decode_arrow, self.where)


def _is_nullable(t: Any) -> bool:
    return t == "null" or (isinstance(t, list) and "null" in t)


def _strip_temporal(t: Any, depth: int, where: str) -> Any:
    """A copy of an Avro schema without temporal logical types (``int``/``long`` only)."""
    if depth > _MAX_DEPTH:
        raise HudiLogUnsupportedError(f"{where}: the writer schema nests deeper than {_MAX_DEPTH} levels")
    if isinstance(t, list):
        return [_strip_temporal(b, depth + 1, where) for b in t]
    if not isinstance(t, dict):
        return t
    out = {k: _strip_temporal(v, depth + 1, where) if k in ("type", "items", "values") else v for k, v in t.items()}
    if isinstance(t.get("fields"), list):
        out["fields"] = [
            {**f, "type": _strip_temporal(f.get("type"), depth + 1, where)} if isinstance(f, dict) else f for f in t["fields"]
        ]
    if out.get("type") in ("int", "long") and (out.get("type"), out.get("logicalType")) in _TEMPORAL:
        out.pop("logicalType", None)
    return out


def avro_to_arrow_schema(schema: Any, where: str = "Avro schema") -> pa.Schema:
    """The Arrow schema of records of an Avro record schema (parsed JSON)."""
    return AvroArrowSchema(schema, where).arrow


def _fix_variants(values: list[Any], arrow: pa.DataType, where: str) -> pa.Array:
    if isinstance(arrow, VariantExtensionType) and arrow.storage_type != UNSHREDDED_TYPE:
        storage = pa.array(values, type=arrow.storage_type)
        return pa.ExtensionArray.from_storage(VariantExtensionType(), unshred_variant(storage, where=where))
    if isinstance(arrow, VariantExtensionType):
        for v in values:
            if v is not None and not is_valid_variant_bytes(v["metadata"], v["value"]):
                raise MalformedVariantError(f"{where}: a variant value Spark cannot read", part="value")
        storage = pa.array(values, type=UNSHREDDED_TYPE)
        return pa.ExtensionArray.from_storage(arrow, storage)
    if pa.types.is_struct(arrow) and _has_variant(arrow):
        children = []
        for i in range(arrow.num_fields):
            f = arrow.field(i)
            children.append(_fix_variants([None if v is None else v.get(f.name) for v in values], f.type, where))
        mask = pa.array([v is None for v in values], type=pa.bool_())
        out_fields = [pa.field(f.name, c.type, nullable=f.nullable) for f, c in zip(arrow, children)]
        return pa.StructArray.from_arrays(children, fields=out_fields, mask=mask)
    if (pa.types.is_list(arrow) or pa.types.is_large_list(arrow)) and _has_variant(arrow.value_type):
        flat = [x for v in values if v is not None for x in v]
        offsets, n = [0], 0
        for v in values:
            n += 0 if v is None else len(v)
            offsets.append(n)
        inner = _fix_variants(flat, arrow.value_type, where)
        return pa.ListArray.from_arrays(
            pa.array(offsets, pa.int32()), inner, mask=pa.array([v is None for v in values])
        ).cast(_unshredded(arrow))
    if pa.types.is_map(arrow) and _has_variant(arrow.item_type):
        raise HudiLogUnsupportedError(f"{where}: a map of variants")
    return pa.array(values, type=arrow)


def _unshredded(arrow: pa.DataType) -> pa.DataType:
    """``arrow`` with every Variant as the unshredded Variant type the records are read into."""
    if isinstance(arrow, VariantExtensionType):
        return VariantExtensionType()
    if pa.types.is_struct(arrow):
        return pa.struct([pa.field(f.name, _unshredded(f.type), nullable=f.nullable) for f in arrow])
    if pa.types.is_list(arrow):
        return pa.list_(pa.field(arrow.value_field.name, _unshredded(arrow.value_type), nullable=arrow.value_field.nullable))
    if pa.types.is_map(arrow):
        return pa.map_(arrow.key_type, pa.field(arrow.item_field.name, _unshredded(arrow.item_type), nullable=arrow.item_field.nullable))
    return arrow


def _has_variant(arrow: pa.DataType) -> bool:
    if isinstance(arrow, VariantExtensionType):
        return True
    if pa.types.is_struct(arrow):
        return any(_has_variant(arrow.field(i).type) for i in range(arrow.num_fields))
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
        return _has_variant(arrow.value_type)
    if pa.types.is_map(arrow):
        return _has_variant(arrow.item_type)
    return False


def records_to_table(records: Iterable[dict[str, Any]], schema: pa.Schema, where: str) -> pa.Table:
    """Decoded Avro records (dicts) as an Arrow table of ``schema``."""
    rows = list(records)
    columns = []
    for f in schema:
        values = [r.get(f.name) for r in rows]
        try:
            columns.append(_fix_variants(values, f.type, f"{where} column {f.name!r}"))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError, KeyError) as e:
            if isinstance(e, (HudiLogFormatError, HudiLogUnsupportedError, MalformedVariantError)):
                raise
            raise HudiLogFormatError(f"{where}: column {f.name!r} does not fit {f.type}: {e}") from e
    return pa.Table.from_arrays(columns, schema=pa.schema([pa.field(f.name, c.type, nullable=f.nullable) for f, c in zip(schema, columns)]))


def read_datum(reader: Any, payload: bytes) -> tuple[Any, int]:
    """Decode one record with a fastavro ``reader`` callable; returns it and the bytes used."""
    buf = io.BytesIO(payload)
    return reader(buf), buf.tell()
