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
    VariantType,
    from_arrow_type,
    to_arrow_type,
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


def _physical_type(dtype: DataType, where: str) -> DataType:
    if isinstance(dtype, StructType):
        return StructType(
            tuple(
                StructField(_physical_name(f, where), _physical_type(f.type, where), f.nullable, f.metadata)
                for f in dtype.fields
            )
        )
    if isinstance(dtype, ArrayType):
        return ArrayType(_physical_type(dtype.element_type, where), dtype.contains_null)
    if isinstance(dtype, MapType):
        return MapType(_physical_type(dtype.key_type, where), _physical_type(dtype.value_type, where), dtype.value_contains_null)
    return dtype


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

        def strip(dtype: DataType) -> DataType:
            if isinstance(dtype, StructType):
                return StructType(
                    tuple(
                        StructField(
                            f.name, strip(f.type), f.nullable,
                            {field_id_key: _field_id(f, self.where)} if self.mode == "id" and field_id_key else {},
                        )
                        for f in dtype.fields
                    )
                )  # fmt: skip
            if isinstance(dtype, ArrayType):
                return ArrayType(strip(dtype.element_type), dtype.contains_null)
            if isinstance(dtype, MapType):
                return MapType(strip(dtype.key_type), strip(dtype.value_type), dtype.value_contains_null)
            return dtype

        result = strip(self.physical_schema)
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
        _check_layout(self.schema, list(file_schema), where, self.where)


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


def _physical_arrow(dtype: DataType, arrow: pa.DataType, mode: str, where: str) -> pa.DataType:
    """Arrow type ``arrow`` (of logical ``dtype``) with struct fields renamed physically and
    carrying their ids; same layout, so arrays of it can be viewed as the result."""
    if isinstance(dtype, StructType) and pa.types.is_struct(arrow):
        out = []
        for f in dtype.fields:
            index = arrow.get_field_index(f.name)
            if index < 0:
                raise ColumnMappingError(f"{where}: struct field {f.name!r} is missing from the data")
            child = arrow.field(index)
            out.append(pa.field(_physical_name(f, where), _physical_arrow(f.type, child.type, mode, where), child.nullable, _id_metadata(f, mode, where)))
        return pa.struct(out)
    if isinstance(dtype, ArrayType) and (pa.types.is_list(arrow) or pa.types.is_large_list(arrow)):
        v = arrow.value_field
        element = pa.field(v.name, _physical_arrow(dtype.element_type, v.type, mode, where), v.nullable)
        return pa.large_list(element) if pa.types.is_large_list(arrow) else pa.list_(element)
    if isinstance(dtype, MapType) and pa.types.is_map(arrow):
        k, i = arrow.key_field, arrow.item_field
        return pa.map_(
            pa.field(k.name, _physical_arrow(dtype.key_type, k.type, mode, where), k.nullable),
            pa.field(i.name, _physical_arrow(dtype.value_type, i.type, mode, where), i.nullable),
            keys_sorted=arrow.keys_sorted,
        )
    return arrow  # primitives, and Variant: a leaf (its group's fields are not mapped)


def _key_metadata(f: StructField, key: str, mode: str, where: str) -> dict[str, Any]:
    if f.metadata.get(ID_KEY) is None and mode != "id":
        return {}
    return {key: _field_id(f, where)}


def _physical_like(dtype: DataType, data: DataType, key: str, mode: str, where: str) -> DataType:
    """``_physical_arrow`` for a Delta type: ``data`` (same shape as logical ``dtype``) with
    struct fields renamed physically and their ids as metadata under ``key``."""
    if isinstance(dtype, StructType) and isinstance(data, StructType):
        by_name = {f.name: f for f in data.fields}
        fields = []
        for f in dtype.fields:
            d = by_name.get(f.name)
            if d is None:
                raise ColumnMappingError(f"{where}: struct field {f.name!r} is missing from the data")
            fields.append(StructField(_physical_name(f, where), _physical_like(f.type, d.type, key, mode, where), d.nullable, _key_metadata(f, key, mode, where)))
        return StructType(tuple(fields))
    if isinstance(dtype, ArrayType) and isinstance(data, ArrayType):
        return ArrayType(_physical_like(dtype.element_type, data.element_type, key, mode, where), data.contains_null)
    if isinstance(dtype, MapType) and isinstance(data, MapType):
        return MapType(
            _physical_like(dtype.key_type, data.key_type, key, mode, where),
            _physical_like(dtype.value_type, data.value_type, key, mode, where),
            data.value_contains_null,
        )  # fmt: skip
    return data


# --- assigning ids and physical names (new tables, new columns) ---------------------------------


def _walk_fields(dtype: DataType) -> list[StructField]:
    """Every struct field at any depth, through arrays and maps (Variant is a leaf)."""
    out: list[StructField] = []
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            out.append(f)
            out.extend(_walk_fields(f.type))
    elif isinstance(dtype, ArrayType):
        out.extend(_walk_fields(dtype.element_type))
    elif isinstance(dtype, MapType):
        out.extend(_walk_fields(dtype.key_type) + _walk_fields(dtype.value_type))
    return out


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

    def assign(dtype: DataType) -> DataType:
        nonlocal top
        if isinstance(dtype, StructType):
            fields = []
            for f in dtype.fields:
                meta = dict(f.metadata)
                if type(meta.get(ID_KEY)) is not int:
                    top += 1
                    meta[ID_KEY] = top
                if not meta.get(PHYSICAL_NAME_KEY):
                    meta[PHYSICAL_NAME_KEY] = f"col-{uuid.uuid4()}"
                fields.append(StructField(f.name, assign(f.type), f.nullable, meta))
            return StructType(tuple(fields))
        if isinstance(dtype, ArrayType):
            return ArrayType(assign(dtype.element_type), dtype.contains_null)
        if isinstance(dtype, MapType):
            return MapType(assign(dtype.key_type), assign(dtype.value_type), dtype.value_contains_null)
        return dtype

    result = assign(schema)
    assert isinstance(result, StructType)
    cfg[MAX_COLUMN_ID_KEY] = str(top)
    return result, cfg


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


def _structs_in(dtype: DataType) -> list[StructType]:
    """The struct types directly at ``dtype`` (itself, or the element/key/value of arrays and maps)."""
    if isinstance(dtype, StructType):
        return [dtype]
    if isinstance(dtype, ArrayType):
        return _structs_in(dtype.element_type)
    if isinstance(dtype, MapType):
        return _structs_in(dtype.key_type) + _structs_in(dtype.value_type)
    return []


def _check_layout(dtype: DataType, file_fields: list[pa.Field], where: str, schema_where: str) -> None:
    """``check_physical_layout`` of struct ``dtype`` against the file's fields at that level."""
    assert isinstance(dtype, StructType)
    for f in dtype.fields:
        physical = _physical_name(f, schema_where)
        found = _by_id(file_fields, _field_id(f, schema_where), where)
        named = next((x for x in file_fields if x.name == physical), None)
        if found is None and named is None:
            continue  # the file lacks the column: nulls whichever way it is resolved
        if found != physical or named is None:
            raise ColumnMappingError(
                f"{where}: field id {_field_id(f, schema_where)} ({f.name!r}) is stored as {found!r}, not under its "
                f"physical name {physical!r}; this reader resolves id-mode columns by physical name (Table.scan "
                "resolves them by id)"
            )
        _check_nested(f.type, named.type, where, schema_where)


def _check_nested(dtype: DataType, file_type: pa.DataType, where: str, schema_where: str) -> None:
    if isinstance(dtype, StructType) and pa.types.is_struct(file_type):
        _check_layout(dtype, list(file_type), where, schema_where)
    elif isinstance(dtype, ArrayType) and (pa.types.is_list(file_type) or pa.types.is_large_list(file_type)):
        _check_nested(dtype.element_type, file_type.value_type, where, schema_where)
    elif isinstance(dtype, MapType) and pa.types.is_map(file_type):
        _check_nested(dtype.key_type, file_type.key_type, where, schema_where)
        _check_nested(dtype.value_type, file_type.item_type, where, schema_where)


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
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            _field_id(f, where)
            _check_ids(f.type, where)
    elif isinstance(dtype, ArrayType):
        _check_ids(dtype.element_type, where)
    elif isinstance(dtype, MapType):
        _check_ids(dtype.key_type, where)
        _check_ids(dtype.value_type, where)


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
    if isinstance(dtype, StructType):
        return True
    if isinstance(dtype, ArrayType):
        return _needs_walk(file_type, dtype.element_type)
    if isinstance(dtype, MapType):
        return _needs_walk(file_type, dtype.key_type) or _needs_walk(file_type, dtype.value_type)
    return False


def _check_leaves(file_type: pa.DataType, dtype: DataType, where: str) -> None:
    """Leaf type checks of a column read by display names (no rebuild): structs by name."""
    if isinstance(dtype, StructType) and pa.types.is_struct(file_type):
        for f in dtype.fields:
            index = file_type.get_field_index(f.name)
            if index >= 0:
                _check_leaves(file_type.field(index).type, f.type, f"{where}.{f.name}")
    elif isinstance(dtype, ArrayType) and (pa.types.is_list(file_type) or pa.types.is_large_list(file_type)):
        _check_leaves(file_type.value_type, dtype.element_type, f"{where}.element")
    elif isinstance(dtype, MapType) and pa.types.is_map(file_type):
        _check_leaves(file_type.key_type, dtype.key_type, f"{where}.key")
        _check_leaves(file_type.item_type, dtype.value_type, f"{where}.value")
    elif isinstance(dtype, PrimitiveType):
        _check_leaf(file_type, dtype, where)


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
