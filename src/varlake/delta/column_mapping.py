"""Column mapping (PROTOCOL.md "Column Mapping"), for reading and writing: every rule of it lives here.

In ``name`` and ``id`` mode every field -- top-level or nested -- has a *physical name*
(``delta.columnMapping.physicalName``) and an id (``delta.columnMapping.id``). Data files
hold physical names (and, as Parquet ``field_id``, the ids); ``add`` partition values and
column statistics are keyed by physical names. ``name`` mode resolves file columns by
physical name, ``id`` mode by field id; a column a file lacks reads as nulls, and an
``id``-mode file with no field ids at all is refused (``ColumnMappingError``).

``ColumnMapping`` turns what the log and the files hold into logical terms at one boundary:
``partition_values`` and ``file_stats`` for the planner, ``file_column`` and ``to_table``
for the reader (which also widens types of old files, ``type_widening``), and
``physical_schema`` for engines that read files themselves (Spark).

Writing ("Writer Requirements for Column Mapping"): ``assign_column_mapping`` gives every
field of a new (or evolved) schema without one a fresh id and a ``col-<uuid>`` physical name
and bumps ``delta.columnMapping.maxColumnId``; ``check_assigned`` is what a committed schema
must satisfy. Data files are written under physical names with every id as the Parquet
``field_id`` in both modes, as Delta does (``to_physical`` for Arrow, ``physical_field`` for
engines); ``add`` partition values (``physical_partition_values``) and statistics (computed
over ``physical_schema``) are keyed by physical names. A Variant column is a leaf: only its
own name is mapped, never the fields of its (shredded) group.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from varlake.delta import constants as C
from varlake.delta.actions import Metadata, Protocol
from varlake.delta.schema import (
    ArrayType,
    DataType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    ArrowTypePartner,
    DeltaTypePartner,
    PartnerAccessor,
    SchemaRebuilder,
    SchemaVisitor,
    SchemaWithPartnerVisitor,
    VariantType,
    from_arrow_type,
    iter_types,
    to_arrow_type,
    visit,
    visit_with_partner,
)
from varlake.delta.stats import file_stats, leaf_columns
from varlake.delta.type_widening import is_widening
from varlake.errors import ColumnMappingError, SchemaParseError, TableError, UnsupportedTypeChangeError

__all__ = [
    "ColumnMapping",
    "ID_KEY",
    "PHYSICAL_NAME_KEY",
    "MAX_COLUMN_ID_KEY",
    "PARQUET_FIELD_ID",
    "assign_column_mapping",
    "check_assigned",
    "column_mapping",
    "mapping_mode",
    "mapping_signature",
    "requested_mode",
    "to_table_type",
]

PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"
ID_KEY = "delta.columnMapping.id"
#: Arrow field metadata key under which pyarrow exposes a Parquet ``field_id``.
PARQUET_FIELD_ID = b"PARQUET:field_id"
#: The table property tracking the largest id ever assigned (PROTOCOL.md: internal, monotonic).
MAX_COLUMN_ID_KEY = "delta.columnMapping.maxColumnId"
#: Spark's StructField metadata key for the Parquet field id it writes
#: (with ``spark.sql.parquet.fieldId.write.enabled``).
SPARK_FIELD_ID_KEY = "parquet.field.id"
MODES = ("none", "name", "id")


def mapping_mode(protocol: Protocol, metadata: Metadata) -> str:
    """``none``, ``name`` or ``id``: the table property, honoured only when the protocol
    supports ``columnMapping`` (reader version 2, or 3 with the feature)."""
    supported = protocol.min_reader_version == 2 or (
        protocol.min_reader_version >= 3 and C.COLUMN_MAPPING in protocol.reader_feature_set
    )
    if not supported:
        return "none"
    mode = str(metadata.configuration.get(C.PROP_COLUMN_MAPPING_MODE, "none")).lower()
    if mode not in MODES:
        raise ColumnMappingError(f"{C.PROP_COLUMN_MAPPING_MODE} is {mode!r}; expected one of {', '.join(MODES)}")
    return mode


def requested_mode(configuration: Mapping[str, str]) -> str:
    """The mode table properties ask for (``none`` when unset), whatever the protocol: what a
    new table's protocol and schema are made for. ``ColumnMappingError`` on another value."""
    mode = str(configuration.get(C.PROP_COLUMN_MAPPING_MODE, "none")).lower()
    if mode not in MODES:
        raise ColumnMappingError(f"{C.PROP_COLUMN_MAPPING_MODE} is {mode!r}; expected one of {', '.join(MODES)}")
    return mode


_MAPPINGS: dict[tuple[str, int], "ColumnMapping"] = {}


def column_mapping(protocol: Protocol, metadata: Metadata, schema: StructType) -> "ColumnMapping | None":
    """The table's mapping, or ``None`` when columns are read by their display names.

    One object per schema object (a snapshot's), so its decoded statistics stay cached."""
    mode = mapping_mode(protocol, metadata)
    if mode == "none":
        return None
    key = (mode, id(schema))
    mapping = _MAPPINGS.get(key)
    if mapping is None or mapping.schema is not schema:
        if len(_MAPPINGS) > 256:
            _MAPPINGS.clear()
        mapping = _MAPPINGS[key] = ColumnMapping(mode, schema)
    return mapping


def _physical_name(f: StructField, where: str) -> str:
    name = f.metadata.get(PHYSICAL_NAME_KEY)
    if name is None:
        return f.name  # a column that kept its display name when mapping was turned on
    if not isinstance(name, str) or not name:
        raise ColumnMappingError(f"{where}: field {f.name!r} has {PHYSICAL_NAME_KEY} {name!r}, not a name")
    return name


def _field_id(f: StructField, where: str) -> int:
    value = f.metadata.get(ID_KEY)
    if type(value) is not int:
        raise ColumnMappingError(f"{where}: field {f.name!r} has no integer {ID_KEY} (got {value!r}), needed in id mode")
    return value


class _Renamed(SchemaRebuilder):
    """The type with every struct field under its physical name (checked before its children)."""

    def __init__(self, where: str) -> None:
        self.where = where

    def before_field(self, field: StructField) -> None:
        _physical_name(field, self.where)

    def field(self, field: StructField, type_result: Any) -> Any:
        return StructField(_physical_name(field, self.where), type_result, field.nullable, field.metadata)


class _FileFields(SchemaRebuilder):
    """The type with each field's metadata just ``{key: id}`` (``key`` given), else empty."""

    def __init__(self, key: str | None, where: str) -> None:
        self.key = key
        self.where = where

    def field(self, field: StructField, type_result: Any) -> Any:
        meta = {self.key: _field_id(field, self.where)} if self.key else {}
        return StructField(field.name, type_result, field.nullable, meta)


def _physical_type(dtype: DataType, where: str) -> DataType:
    return visit(dtype, _Renamed(where))


@dataclass(frozen=True, eq=False)
class ColumnMapping:
    """A table's column mapping (``mode`` ``name`` or ``id``) over its logical ``schema``."""

    mode: str
    schema: StructType
    where: str = "schema"
    _leaf_paths: dict[tuple[str, ...], tuple[str, ...]] = field(init=False, repr=False)
    _top: dict[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        physical = self.physical_schema
        paths = dict(zip((p for p, _ in leaf_columns(physical)), (p for p, _ in leaf_columns(self.schema))))
        object.__setattr__(self, "_leaf_paths", paths)
        object.__setattr__(self, "_top", dict(zip(self.schema.names, physical.names)))
        if self.mode == "id":
            _check_ids(self.schema, self.where)

    @functools.cached_property
    def physical_schema(self) -> StructType:
        """The schema with every struct field (nested too) under its physical name; field
        metadata kept (ids included), types unchanged."""
        result = _physical_type(self.schema, self.where)
        assert isinstance(result, StructType)
        return result

    def file_schema(self, field_id_key: str | None = None) -> StructType:
        """``physical_schema`` as a file reader asks for it: each field's metadata just
        ``{field_id_key: id}`` in ``id`` mode (Spark: ``parquet.field.id``), else empty."""

        key = field_id_key if self.mode == "id" else None
        result = visit(self.physical_schema, _FileFields(key, self.where))
        assert isinstance(result, StructType)
        return result

    def physical_name(self, name: str) -> str:
        """The physical name of top-level column ``name``."""
        return self._top[name] if name in self._top else _physical_name(self.schema.field(name), self.where)

    def physical_path(self, path: Sequence[str]) -> tuple[str, ...]:
        """A logical path through structs as physical names."""
        out: list[str] = []
        dtype: DataType = self.schema
        for name in path:
            if not isinstance(dtype, StructType):
                raise ColumnMappingError(f"{self.where}: path {'.'.join(path)!r} does not go through structs")
            f = dtype.field(name)
            out.append(_physical_name(f, self.where))
            dtype = f.type
        return tuple(out)

    def partition_values(self, values: Mapping[str, str | None], partition_columns: Sequence[str]) -> dict[str, str | None]:
        """An ``add``'s partition values (keyed by physical name) keyed by logical name; a
        value the add lacks stays absent."""
        out: dict[str, str | None] = {}
        for name in partition_columns:
            physical = self.physical_name(name)
            if physical in values:
                out[name] = values[physical]
        return out

    def file_stats(self, stats: str | Mapping[str, Any] | None, partition_values: Mapping[str, Any] | None = None) -> Any:
        """``delta.stats.file_stats`` of an ``add``'s stats (keyed by physical names) with the
        column paths turned logical: what the skipping evaluator of a logical filter wants."""
        if isinstance(stats, str):
            base = _logical_stats(stats, self)
        else:
            base = _relabel(file_stats(stats, self.physical_schema), self._leaf_paths)
        if partition_values:
            import dataclasses

            return dataclasses.replace(base, partition_values=dict(partition_values))
        return base

    def file_columns(
        self, names: Sequence[str], file_names: Sequence[str], file_schema: Callable[[], pa.Schema], where: str
    ) -> dict[str, str]:
        """Top-level columns ``names`` -> their names in a data file whose top-level columns
        are ``file_names`` (a column the file lacks is left out). ``name`` mode matches physical
        names; ``id`` mode field ids, from ``file_schema()`` (read only then), and refuses a
        file with no field ids at all (PROTOCOL.md: refuse or return nulls)."""
        out: dict[str, str] = {}
        if self.mode == "name":
            available = set(file_names)
            for name in names:
                physical = _physical_name(self.schema.field(name), self.where)
                if physical in available:
                    out[name] = physical
            return out
        arrow = file_schema()
        if len(arrow) and not any(_has_id(f) for f in arrow):
            raise ColumnMappingError(f"{where}: the table resolves columns by field id (id mode), but the file has no field ids")
        for name in names:
            found = _by_id(arrow, _field_id(self.schema.field(name), self.where), where)
            if found is not None:
                out[name] = found
        return out


    def check_physical_layout(self, file_schema: pa.Schema, where: str) -> None:
        """For readers that resolve ``id``-mode columns by physical name (the Spark planner):
        ``ColumnMappingError`` unless every field id of the table the file holds (nested
        too) sits under that field's physical name, and no physical name holds another id --
        as Delta writers write them. A file without field ids is refused, as ``file_columns`` does."""
        if self.mode != "id":
            return
        if len(file_schema) and not any(_has_id(f) for f in file_schema):
            raise ColumnMappingError(f"{where}: the table resolves columns by field id (id mode), but the file has no field ids")
        visit_with_partner(self.schema, list(file_schema), SchemaWithPartnerVisitor(), _LayoutPartner(where, self.where))


    # --- writing ------------------------------------------------------------------------------

    def physical_partition_values(self, values: Mapping[str, str | None]) -> dict[str, str | None]:
        """An ``add``'s partition values (keyed by logical name) keyed by physical name."""
        return {self.physical_name(name): value for name, value in values.items()}

    def physical_dotted(self, dotted: str) -> str:
        """A dotted logical path through structs (a Variant column's name) as physical names."""
        return ".".join(self.physical_path(dotted.split(".")))

    def physical_field(self, name: str, data_type: DataType, field_id_key: str = SPARK_FIELD_ID_KEY) -> StructField:
        """Top-level column ``name`` as an engine writes it from data of (same-shaped)
        ``data_type``: physical names throughout, the data's nullability, each field's id as
        metadata ``{field_id_key: id}`` (Spark: ``parquet.field.id``)."""
        f = self.schema.field(name)
        meta = _key_metadata(f, field_id_key, self.mode, self.where)
        return StructField(_physical_name(f, self.where), _physical_like(f.type, data_type, field_id_key, self.mode, self.where), True, meta)

    def to_physical(self, table: pa.Table, where: str) -> pa.Table:
        """``table`` (columns of this table's logical schema, by name, any subset) as a data
        file holds it: every struct field (nested too) under its physical name with its id as
        ``PARQUET:field_id``; Variant groups unchanged. Buffers are shared, nothing copied."""
        fields, columns = [], []
        for name, column in zip(table.column_names, table.columns):
            try:
                f = self.schema.field(name)
            except (KeyError, ValueError):
                raise ColumnMappingError(f"{where}: column {name!r} is not in the table schema") from None
            ftype = _physical_arrow(f.type, column.type, self.mode, where)
            fields.append(pa.field(_physical_name(f, self.where), ftype, table.schema.field(name).nullable, _id_metadata(f, self.mode, self.where)))
            columns.append(column if column.type == ftype else pa.chunked_array([c.view(ftype) for c in column.chunks], type=ftype))
        return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=table.schema.metadata))


def _id_metadata(f: StructField, mode: str, where: str) -> dict[bytes, bytes] | None:
    """A field's Arrow metadata for the Parquet writer: its id as ``PARQUET:field_id``."""
    value = f.metadata.get(ID_KEY)
    if value is None and mode != "id":
        return None
    return {PARQUET_FIELD_ID: str(_field_id(f, where)).encode()}


class _DataFields(ArrowTypePartner):
    """Arrow partners whose struct fields must all be present (the data being written)."""

    def __init__(self, where: str) -> None:
        self.where = where

    def field_partner(self, struct_partner: Any, index: int, field: StructField) -> Any:
        found = super().field_partner(struct_partner, index, field)
        if found is None and struct_partner is not None and pa.types.is_struct(struct_partner):
            raise ColumnMappingError(f"{self.where}: struct field {field.name!r} is missing from the data")
        if found is not None:
            _physical_name(field, self.where)
        return found


class _PhysicalArrow(SchemaWithPartnerVisitor[Any, Any]):
    """The partner Arrow type with struct fields renamed physically and carrying their ids;
    a partner of another shape, a primitive's and a Variant's (a leaf: its group's fields
    are not mapped) are kept as they are."""

    def __init__(self, mode: str, where: str) -> None:
        self.mode = mode
        self.where = where

    def struct(self, struct: StructType, partner: Any, field_results: list[Any]) -> Any:
        return pa.struct(field_results) if partner is not None and pa.types.is_struct(partner) else partner

    def field(self, field: StructField, partner: Any, type_result: Any) -> Any:
        if partner is None:
            return None
        return pa.field(_physical_name(field, self.where), type_result, partner.nullable, _id_metadata(field, self.mode, self.where))

    def array(self, array: ArrayType, partner: Any, element_result: Any) -> Any:
        if partner is None or not (pa.types.is_list(partner) or pa.types.is_large_list(partner)):
            return partner
        v = partner.value_field
        element = pa.field(v.name, element_result, v.nullable)
        return pa.large_list(element) if pa.types.is_large_list(partner) else pa.list_(element)

    def map(self, map_type: MapType, partner: Any, key_result: Any, value_result: Any) -> Any:
        if partner is None or not pa.types.is_map(partner):
            return partner
        k, i = partner.key_field, partner.item_field
        return pa.map_(
            pa.field(k.name, key_result, k.nullable), pa.field(i.name, value_result, i.nullable), keys_sorted=partner.keys_sorted
        )

    def primitive(self, primitive: PrimitiveType, partner: Any) -> Any:
        return partner

    def variant(self, variant: VariantType, partner: Any) -> Any:
        return partner


def _physical_arrow(dtype: DataType, arrow: pa.DataType, mode: str, where: str) -> pa.DataType:
    """Arrow type ``arrow`` (of logical ``dtype``) with struct fields renamed physically and
    carrying their ids; same layout, so arrays of it can be viewed as the result."""
    return visit_with_partner(dtype, arrow, _PhysicalArrow(mode, where), _DataFields(where))


def _key_metadata(f: StructField, key: str, mode: str, where: str) -> dict[str, Any]:
    if f.metadata.get(ID_KEY) is None and mode != "id":
        return {}
    return {key: _field_id(f, where)}


class _DataTypeFields(DeltaTypePartner):
    """Partners from a Delta type of the data being written: struct fields by name, all present."""

    def __init__(self, where: str) -> None:
        self.where = where

    def field_partner(self, struct_partner: Any, index: int, field: StructField) -> Any:
        if not isinstance(struct_partner, StructType):
            return None
        found = {d.name: d for d in struct_partner.fields}.get(field.name)
        if found is None:
            raise ColumnMappingError(f"{self.where}: struct field {field.name!r} is missing from the data")
        _physical_name(field, self.where)
        return found


class _PhysicalLike(SchemaWithPartnerVisitor[Any, Any]):
    """``_PhysicalArrow`` for a Delta partner: its struct fields renamed physically, their
    ids as metadata under ``key``; the data's nullability kept."""

    def __init__(self, key: str, mode: str, where: str) -> None:
        self.key = key
        self.mode = mode
        self.where = where

    def struct(self, struct: StructType, partner: Any, field_results: list[Any]) -> Any:
        return StructType(tuple(field_results)) if isinstance(partner, StructType) else partner

    def field(self, field: StructField, partner: Any, type_result: Any) -> Any:
        if partner is None:
            return None
        meta = _key_metadata(field, self.key, self.mode, self.where)
        return StructField(_physical_name(field, self.where), type_result, partner.nullable, meta)

    def array(self, array: ArrayType, partner: Any, element_result: Any) -> Any:
        return ArrayType(element_result, partner.contains_null) if isinstance(partner, ArrayType) else partner

    def map(self, map_type: MapType, partner: Any, key_result: Any, value_result: Any) -> Any:
        if not isinstance(partner, MapType):
            return partner
        return MapType(key_result, value_result, partner.value_contains_null)

    def primitive(self, primitive: PrimitiveType, partner: Any) -> Any:
        return partner

    def variant(self, variant: VariantType, partner: Any) -> Any:
        return partner


def _physical_like(dtype: DataType, data: DataType, key: str, mode: str, where: str) -> DataType:
    """``_physical_arrow`` for a Delta type: ``data`` (same shape as logical ``dtype``) with
    struct fields renamed physically and their ids as metadata under ``key``."""
    return visit_with_partner(dtype, data, _PhysicalLike(key, mode, where), _DataTypeFields(where))


# --- assigning ids and physical names (new tables, new columns) ---------------------------------


class _AllFields(SchemaVisitor[None]):
    def __init__(self) -> None:
        self.fields: list[StructField] = []

    def before_field(self, field: StructField) -> None:
        self.fields.append(field)


def _walk_fields(dtype: DataType) -> list[StructField]:
    """Every struct field at any depth, through arrays and maps (Variant is a leaf)."""
    found = _AllFields()
    visit(dtype, found)
    return found.fields


def _max_column_id(configuration: Mapping[str, str], where: str) -> int | None:
    text = configuration.get(MAX_COLUMN_ID_KEY)
    if text is None:
        return None
    try:
        return int(str(text).strip())
    except ValueError:
        raise ColumnMappingError(f"{where}: {MAX_COLUMN_ID_KEY} is {text!r}, not an integer") from None


def assign_column_mapping(
    schema: StructType, configuration: Mapping[str, str], where: str = "schema"
) -> tuple[StructType, dict[str, str]]:
    """``schema`` and ``configuration`` of a table whose properties ask for ``name``/``id``
    mapping, every field (nested too) that lacks them given a fresh id above
    ``delta.columnMapping.maxColumnId`` (and every id already used) and a unique
    ``col-<uuid>`` physical name, and ``maxColumnId`` raised to the largest id: for new
    tables and for columns added to a mapped table. Unchanged in ``none`` mode."""
    cfg = dict(configuration)
    if requested_mode(cfg) == "none":
        return schema, cfg
    used = [f.metadata[ID_KEY] for f in _walk_fields(schema) if type(f.metadata.get(ID_KEY)) is int]
    top = max([_max_column_id(cfg, where) or 0, *used])

    assign = _Assign(top)
    result = visit(schema, assign)
    assert isinstance(result, StructType)
    cfg[MAX_COLUMN_ID_KEY] = str(assign.top)
    return result, cfg


class _Assign(SchemaRebuilder):
    """Gives each field without them an id above ``top`` (in schema order, a field before
    its children) and a fresh ``col-<uuid>`` physical name."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.metadata: list[dict[str, Any]] = []

    def before_field(self, field: StructField) -> None:
        meta = dict(field.metadata)
        if type(meta.get(ID_KEY)) is not int:
            self.top += 1
            meta[ID_KEY] = self.top
        if not meta.get(PHYSICAL_NAME_KEY):
            meta[PHYSICAL_NAME_KEY] = f"col-{uuid.uuid4()}"
        self.metadata.append(meta)

    def field(self, field: StructField, type_result: Any) -> Any:
        return StructField(field.name, type_result, field.nullable, self.metadata.pop())


def mapping_signature(schema: StructType) -> tuple[tuple[str, Any, Any], ...]:
    """Each field's (display name, physical name, id), at any depth: two schemas whose data
    files are interchangeable have the same signature."""
    return tuple((f.name, f.metadata.get(PHYSICAL_NAME_KEY), f.metadata.get(ID_KEY)) for f in _walk_fields(schema))


def check_assigned(schema: StructType, configuration: Mapping[str, str], where: str) -> None:
    """``ColumnMappingError`` unless every field of a mapped schema (nested too) has an
    integer id and a physical name, ids are unique, sibling physical names are distinct and
    ``delta.columnMapping.maxColumnId`` is at least the largest id (PROTOCOL.md writer
    requirements; what a commit of a mapped table's metadata must hold)."""
    seen: dict[int, str] = {}
    for f in _walk_fields(schema):
        fid = _field_id(f, where)
        name = f.metadata.get(PHYSICAL_NAME_KEY)
        if not isinstance(name, str) or not name:
            raise ColumnMappingError(f"{where}: field {f.name!r} has no {PHYSICAL_NAME_KEY}")
        if fid in seen:
            raise ColumnMappingError(f"{where}: fields {seen[fid]!r} and {f.name!r} share {ID_KEY} {fid}")
        seen[fid] = f.name
    for dtype in [schema, *(f.type for f in _walk_fields(schema))]:
        for struct in _structs_in(dtype):
            names = [_physical_name(f, where) for f in struct.fields]
            if len(set(names)) != len(names):
                raise ColumnMappingError(f"{where}: two fields of one struct share a physical name ({sorted(names)})")
    top = _max_column_id(configuration, where)
    if seen and (top is None or top < max(seen)):
        raise ColumnMappingError(f"{where}: {MAX_COLUMN_ID_KEY} is {top}, below the largest column id {max(seen)}")


class _StructsAt(SchemaVisitor[list[StructType]]):
    """The struct types directly at a type (itself, or the element/key/value of arrays and maps)."""

    def struct(self, struct: StructType, field_results: list[Any]) -> list[StructType]:
        return [struct]

    def array(self, array: ArrayType, element_result: list[StructType]) -> list[StructType]:
        return element_result

    def map(self, map_type: MapType, key_result: list[StructType], value_result: list[StructType]) -> list[StructType]:
        return key_result + value_result

    def primitive(self, primitive: PrimitiveType) -> list[StructType]:
        return []

    def variant(self, variant: VariantType) -> list[StructType]:
        return []


def _structs_in(dtype: DataType) -> list[StructType]:
    return visit(dtype, _StructsAt())


class _LayoutPartner(ArrowTypePartner):
    """``check_physical_layout``: each field of the table the file holds (its partner: the
    file's field under its physical name) must sit there with its own id."""

    def __init__(self, where: str, schema_where: str) -> None:
        self.where = where
        self.schema_where = schema_where

    def field_partner(self, struct_partner: Any, index: int, field: StructField) -> Any:
        if isinstance(struct_partner, list):
            file_fields = struct_partner  # the file's top-level columns
        elif struct_partner is not None and pa.types.is_struct(struct_partner):
            file_fields = list(struct_partner)
        else:
            return None
        physical = _physical_name(field, self.schema_where)
        found = _by_id(file_fields, _field_id(field, self.schema_where), self.where)
        named = next((x for x in file_fields if x.name == physical), None)
        if found is None and named is None:
            return None  # the file lacks the column: nulls whichever way it is resolved
        if found != physical or named is None:
            raise ColumnMappingError(
                f"{self.where}: field id {_field_id(field, self.schema_where)} ({field.name!r}) is stored as {found!r}, "
                f"not under its physical name {physical!r}; this reader resolves id-mode columns by physical name "
                "(Table.scan resolves them by id)"
            )
        return named


def _has_id(f: pa.Field) -> bool:
    return f.metadata is not None and PARQUET_FIELD_ID in f.metadata


def _by_id(fields: Any, wanted: int, where: str) -> str | None:
    found = None
    for f in fields:
        if _has_id(f):
            try:
                fid = int(f.metadata[PARQUET_FIELD_ID])
            except ValueError:
                raise ColumnMappingError(f"{where}: field {f.name!r} has a field id that is not a number") from None
            if fid == wanted:
                if found is not None:
                    raise ColumnMappingError(f"{where}: field id {wanted} appears twice ({found!r}, {f.name!r})")
                found = f.name
    return found


def _check_ids(dtype: DataType, where: str) -> None:
    for f in _walk_fields(dtype):
        _field_id(f, where)


def _relabel(stats: Any, paths: Mapping[tuple[str, ...], tuple[str, ...]]) -> Any:
    import dataclasses

    def keys(d: Mapping[tuple[str, ...], Any]) -> dict[tuple[str, ...], Any]:
        return {paths[k]: v for k, v in d.items() if k in paths}

    def vkeys(d: Mapping[tuple[tuple[str, ...], str], Any]) -> dict[tuple[tuple[str, ...], str], Any]:
        return {(paths[k], p): v for (k, p), v in d.items() if k in paths}

    return dataclasses.replace(
        stats,
        min_values=keys(stats.min_values),
        max_values=keys(stats.max_values),
        null_count=keys(stats.null_count),
        variant_min=vkeys(stats.variant_min),
        variant_max=vkeys(stats.variant_max),
    )


@functools.lru_cache(maxsize=65536)
def _logical_stats(stats: str, mapping: ColumnMapping) -> Any:
    """Decoded and relabelled once per stats text and mapping (mappings hash by identity)."""
    return _relabel(file_stats(stats, mapping.physical_schema), mapping._leaf_paths)


# --- data: a file's column in the table's (logical, widened) type ---------------------------


_SAME_FAMILY = frozenset({("timestamp", "timestamp_ntz"), ("timestamp_ntz", "timestamp"), ("binary", "string"), ("string", "binary")})


def _check_leaf(file_type: pa.DataType, dtype: PrimitiveType, where: str) -> None:
    """Refuse a file leaf whose type is neither the table's (any Arrow spelling of it) nor
    one Delta widens to it."""
    try:
        found = from_arrow_type(file_type)
    except SchemaParseError:
        return  # no Delta name for it (unsigned, fixed-size...): left to the cast
    if not isinstance(found, PrimitiveType) or found.name == dtype.name or dtype.name in ("void",):
        return
    if (found.name, dtype.name) in _SAME_FAMILY or is_widening(found.name, dtype.name):
        return
    raise UnsupportedTypeChangeError(
        f"{where}: the file holds {found.name}, the table says {dtype.name}, which is not a type widening Delta allows"
    )


def _cast(array: pa.Array, target: pa.DataType, where: str) -> pa.Array:
    if array.type == target:
        return array
    try:
        return array.cast(target)  # safe: a value that does not fit raises
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise TableError(f"{where}: has type {array.type}, table says {target}: {exc}") from None


def _child_index(file_type: pa.StructType, f: StructField, mode: str | None, where: str) -> int | None:
    if mode == "id":
        name = _by_id(list(file_type), _field_id(f, where), where)
    else:
        name = _physical_name(f, where) if mode == "name" else f.name
    if name is None:
        return None
    index = file_type.get_field_index(name)
    return None if index < 0 else index


def _convert(array: pa.Array, dtype: DataType, mode: str | None, where: str) -> pa.Array:
    target = to_arrow_type(dtype)
    t = array.type
    if isinstance(dtype, VariantType):
        return _cast(array, target, where)
    if isinstance(dtype, StructType):
        if not pa.types.is_struct(t):
            raise TableError(f"{where}: the file holds {t}, the table says a struct")
        children = []
        for f, target_field in zip(dtype.fields, target):
            index = _child_index(t, f, mode, f"{where}.{f.name}")
            if index is None:
                children.append(pa.nulls(len(array), target_field.type))
            else:
                children.append(_convert(array.field(index), f.type, mode, f"{where}.{f.name}"))
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if isinstance(dtype, ArrayType):
        if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
            raise TableError(f"{where}: the file holds {t}, the table says an array")
        values = _convert(array.values, dtype.element_type, mode, f"{where}.element")
        offsets = array.offsets.cast(pa.int32()) if pa.types.is_large_list(t) else array.offsets
        mask = array.is_null() if array.null_count else None
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if isinstance(dtype, MapType):
        if not pa.types.is_map(t):
            raise TableError(f"{where}: the file holds {t}, the table says a map")
        keys = _convert(array.keys, dtype.key_type, mode, f"{where}.key")
        items = _convert(array.items, dtype.value_type, mode, f"{where}.value")
        mask = array.is_null() if array.null_count else None
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=target, mask=mask)
    assert isinstance(dtype, PrimitiveType)
    _check_leaf(t, dtype, where)
    return _cast(array, target, where)


def _needs_walk(file_type: pa.DataType, dtype: DataType) -> bool:
    """Whether a column whose Arrow type is not the table's needs more than a cast: a
    struct below (fields are matched by name or id, not position)."""
    return any(isinstance(t, StructType) for t in iter_types(dtype))


class _FileLeaves(PartnerAccessor[Any]):
    """Partners ``(Arrow type, where)`` from a file's column: struct fields by display name."""

    def field_partner(self, struct_partner: Any, index: int, field: StructField) -> Any:
        if struct_partner is None or not pa.types.is_struct(struct_partner[0]):
            return None
        file_type, where = struct_partner
        i = file_type.get_field_index(field.name)
        return (file_type.field(i).type, f"{where}.{field.name}") if i >= 0 else None

    def element_partner(self, array_partner: Any) -> Any:
        if array_partner is None or not (pa.types.is_list(array_partner[0]) or pa.types.is_large_list(array_partner[0])):
            return None
        return array_partner[0].value_type, f"{array_partner[1]}.element"

    def key_partner(self, map_partner: Any) -> Any:
        if map_partner is None or not pa.types.is_map(map_partner[0]):
            return None
        return map_partner[0].key_type, f"{map_partner[1]}.key"

    def value_partner(self, map_partner: Any) -> Any:
        if map_partner is None or not pa.types.is_map(map_partner[0]):
            return None
        return map_partner[0].item_type, f"{map_partner[1]}.value"


class _CheckLeaves(SchemaWithPartnerVisitor[Any, None]):
    def primitive(self, primitive: PrimitiveType, partner: Any) -> None:
        if partner is not None:
            _check_leaf(partner[0], primitive, partner[1])


def _check_leaves(file_type: pa.DataType, dtype: DataType, where: str) -> None:
    """Leaf type checks of a column read by display names (no rebuild): structs by name."""
    visit_with_partner(dtype, (file_type, where), _CheckLeaves(), _FileLeaves())


def to_table_type(
    column: pa.ChunkedArray, dtype: DataType, mapping: ColumnMapping | None, where: str
) -> pa.ChunkedArray:
    """A data file's column in the table's type: nested fields resolved by physical name
    (``name`` mode) or field id (``id`` mode) and named logically, fields the file lacks as
    nulls, and leaves of old files widened exactly (``type_widening.is_widening``); any
    other type difference is ``UnsupportedTypeChangeError`` naming file and column.
    Without a mapping, columns are matched by display name and cast as before."""
    target = to_arrow_type(dtype)
    if column.type == target:
        return column
    if mapping is None:
        _check_leaves(column.type, dtype, where)
        try:
            return column.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise TableError(f"{where}: has type {column.type}, table says {target}: {exc}") from None
    if not _needs_walk(column.type, dtype):
        _check_leaves(column.type, dtype, where)
        chunks = [_cast(c, target, where) for c in column.chunks]
    else:
        chunks = [_convert(c, dtype, mapping.mode, where) for c in column.chunks]
    return pa.chunked_array(chunks, type=target)
