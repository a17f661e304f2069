"""How Spark reads the data files of a column-mapped table (``mapped_reads``): by physical
names, or in ``id`` mode by Parquet field id, under names no file uses where a file does
not hold every field id under its physical name."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

from varlake.delta.schema import SchemaRebuilder, StructField, StructType, visit
from varlake.errors import TableError
from varlake.spark.reading.planner import TablePlan
from varlake.spark.types import to_spark_schema

__all__ = ["FIELD_ID_READ", "ID_NAME", "SPARK_FIELD_ID", "mapped_reads", "read_path"]


#: Spark's Parquet option that resolves requested fields carrying ``parquet.field.id``
#: metadata by Parquet field id (fields without it by name); set in the read sessions.
FIELD_ID_READ = "spark.sql.parquet.fieldId.read.enabled"


SPARK_FIELD_ID = "parquet.field.id"


#: Prefix of the names under which id-mode fields are requested from files that do not
#: hold them under their physical names (see ``mapped_reads``).
ID_NAME = "__vl_fid_"


class _ByIdNames(SchemaRebuilder):
    """A ``file_schema`` with every struct field (nested too) named ``__vl_fid_<id>``."""

    def field(self, field: StructField, type_result: Any) -> Any:
        return StructField(f"{ID_NAME}{field.metadata[SPARK_FIELD_ID]}", type_result, field.nullable, field.metadata)


def mapped_reads(plan: TablePlan, tasks: Sequence[Any]) -> list[tuple[list[Any], list[Any]]]:
    """How the data files of a column-mapped table are read: ``(tasks, top-level read
    fields)`` pairs (``delta.column_mapping``), the fields paired in order with the table's.

    ``name`` mode reads physical names. ``id`` mode resolves fields by Parquet field id
    (``FIELD_ID_READ``, field ids in each requested field's ``parquet.field.id``): files
    that hold every field id under its physical name (as Delta writes them) are read by
    their physical names, so Spark's Parquet filters (which go by name) still skip row
    groups; other files are read under names no file uses (``__vl_fid_<id>``): Spark's
    vectorized reader mixes up a requested field with a file field of the same name and
    another id. A file without field ids is refused (``ColumnMappingError``), as
    ``Table.scan`` does."""
    mapping = plan.scan.column_mapping
    if mapping.mode != "id":
        return [(list(tasks), list(to_spark_schema(mapping.file_schema()).fields))]
    physical, other = [], []
    for task in tasks:
        where = f"{plan.table.path}: data file {task.relative_path!r}"
        if _id_layout(mapping, plan.table.open_file(task.relative_path), where, lambda t=task: plan.table.read_source(t.relative_path)):
            physical.append(task)
        else:
            other.append(task)
    schema = mapping.file_schema(SPARK_FIELD_ID)
    reads = []
    if physical:
        reads.append((physical, list(to_spark_schema(schema).fields)))
    if other:
        by_id = visit(schema, _ByIdNames())
        assert isinstance(by_id, StructType)
        reads.append((other, list(to_spark_schema(by_id).fields)))
    return reads


_ID_LAYOUTS: "weakref.WeakKeyDictionary[Any, dict[str, bool]]" = weakref.WeakKeyDictionary()


def _id_layout(mapping: Any, location: str, where: str, opener: Any = None) -> bool:
    """Whether an id-mode file holds every field id under its physical name
    (``ColumnMapping.check_physical_layout``), once per mapping and file (files never
    change); ``ColumnMappingError`` for a file without field ids, or one that uses the
    names ``mapped_reads`` reads other files under."""
    import pyarrow.parquet as pq

    from varlake.delta.column_mapping import PARQUET_FIELD_ID
    from varlake.errors import ColumnMappingError

    checked = _ID_LAYOUTS.setdefault(mapping, {})
    if location in checked:
        return checked[location]
    try:
        schema = pq.read_schema(location if opener is None else opener())  # opener: the file on its storage
    except (OSError, ValueError) as exc:  # pyarrow's errors derive from these
        raise TableError(f"{where}: cannot read the Parquet footer ({exc})") from None
    if len(schema) and not any(f.metadata and PARQUET_FIELD_ID in f.metadata for f in schema):
        raise ColumnMappingError(f"{where}: the table resolves columns by field id (id mode), but the file has no field ids")
    if _uses_id_names(list(schema)):
        raise ColumnMappingError(f"{where}: the file has fields named {ID_NAME}*, which varlake.spark cannot read by field id")
    try:
        mapping.check_physical_layout(schema, where)
        laid_out = True
    except ColumnMappingError:
        laid_out = False  # read by field id under names no file uses
    checked[location] = laid_out
    return laid_out


def _uses_id_names(fields: list[Any]) -> bool:
    import pyarrow as pa

    for f in fields:
        if f.name.startswith(ID_NAME):
            return True
        t = f.type
        while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
            if pa.types.is_map(t):
                if _uses_id_names([t.key_field, t.item_field]):
                    return True
                break
            t = t.value_type
        if pa.types.is_struct(t) and _uses_id_names(list(t)):
            return True
    return False


def read_path(read: Any, logical: Any, path: tuple[str, ...]) -> tuple[str, ...]:
    """The read names of a table path through structs (``read`` and ``logical`` pair in order)."""
    names = [read.name]
    for name in path[1:]:
        index = [f.name for f in logical.dataType.fields].index(name)
        read, logical = read.dataType.fields[index], logical.dataType.fields[index]
        names.append(read.name)
    return tuple(names)
