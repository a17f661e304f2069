"""Read varlake tables with Spark: ``read`` and ``sql``, with shredded paths read as plain columns.

Spark 4.3 reads a shredded Variant column whole for ``variant_get`` and cannot skip row
groups on a shredded path. Read as a plain struct (``ignoreVariantAnnotation`` on, an
explicit schema of just the needed ``typed_value`` leaves) the same file is an ordinary
Parquet column: Spark prunes it to those leaves and pushes filters on them to the row
groups. So each table of a query becomes a view that is the union of

* one *shredded* branch per group of files in which every path the query uses is
  perfectly shredded with a compatible leaf type (``planner``): each path is a derived
  column ``__vl_<n>`` computed from the leaf (for a struct or array target, rebuilt from
  the subtree's leaves with ``named_struct`` and ``transform``, or for an array of
  structs the query only explodes and reads field by field, the shredded elements as
  read: ``sql.rewritten_tree`` casts each field where the query reads it); the Variant
  columns themselves (top-level or in structs) are NULL;
* one *variant* branch per group of other files, read with the table's schema
  (``variant`` types): derived columns are NULL there, and the query's own expressions
  compute the values (``sql.rewrite`` routes each use through ``IF(__vl_shredded, ...)``);

plus the partition columns as literals. When every group is shredded (``all_shredded``),
the view has no flag column and the query names the derived columns directly: Spark
plans a projection of the leaves over one Parquet scan (one group) or a union of such,
as it would for plain columns. Files with deletion vectors are read with their
deletion test as a filter right above the scan, ahead of every expression of the query
(``deleted_rows``); column-mapped tables are read under physical names, or in ``id``
mode by Parquet field id (``mapped_reads``), Variant paths pruned as on other tables.
The reads are built in a clone of the caller's
session with the annotation conf on, and shared by later queries over the same files as
global temporary views (``SharedReads``). The query itself runs in the caller's session,
naming those global views directly, so the caller's current confs, temporary views and
functions apply and nothing is registered in it; Spark reads each relation with the
session it was built in (the clone with the annotation conf), so the returned DataFrame
reads correctly wherever it is used later. Analyses (sqlglot's, and Spark's verdict on
them) are made once per query text, schemas and parser confs (``Analyses``), so a repeated
query is planned from the log and footers alone.
"""

from __future__ import annotations

import atexit
import os
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import reduce
from typing import Any

from varlake.delta.schema import ArrayType, DataType, MapType, PrimitiveType, StructField, StructType
from varlake.delta.snapshot import Snapshot
from varlake.errors import TableError
from varlake.semantics.types import backquote
from varlake.spark.reading.deleted_rows import DeletedRows, keep_sql
from varlake.spark.types import holds_variant
from varlake.spark.uris import local_path, spark_file_name
from varlake.spark.reading.leaf_casts import cast_sql, elements_sql, failure_sql
from varlake.spark.reading.planner import (
    ISNULL,
    FileGroup,
    PathUse,
    ElementShape,
    TablePlan,
    combine,
    element_shape,
    elements_of,
    failure_of,
    is_nested,
    iso_date_text,
    read_use,
    text_of,
    plan_table,
    target_type,
    usable_conjuncts,
)
from varlake.spark.session.quiet import handled_errors_unlogged
from varlake.spark.session.local import PARQUET_READ_OPTIONS, is_classic
from varlake.spark.reading.sql import (
    FLAG_COLUMN,
    QueryAnalysis,
    analyze,
    as_written,
    compared,
    count_from_log,
    depends_on_tree,
    derived_name,
    next_derived_name,
    regenerate,
    retarget,
    SparkSQL,
    rewritten_tree,
    substitute,
)
from varlake.spark.types import to_spark_schema, to_spark_type
from varlake.spark.reading.verdict import Verdict
from varlake.table import Table

__all__ = [
    "IGNORE_VARIANT_ANNOTATION",
    "PreparedQuery",
    "TableSource",
    "clone_session",
    "prepare",
    "read",
    "read_query",
    "run",
    "sql",
    "all_shredded",
    "table_frame",
]

IGNORE_VARIANT_ANNOTATION = "spark.sql.parquet.ignoreVariantAnnotation"
#: a coalesce target above any partition count: the coalesce merges nothing (``_keep_apart``)
NO_MERGE_PARTITIONS = 1 << 30
TableSource = Table | str | os.PathLike[str]


@dataclass
class PreparedQuery:
    """A planned query: the analysis, one plan per table, derived columns and the SQL to run."""

    query: str
    analysis: QueryAnalysis
    plans: dict[str, TablePlan]
    derived: dict[str, dict[PathUse, str]]
    sql: str
    #: the rewritten syntax tree (None when the query runs as analysed)
    tree: Any = None

    @property
    def rewritten(self) -> bool:
        return self.sql != self.analysis.text


def _as_table(name: str, source: TableSource) -> Table:
    if isinstance(source, Table):
        return source
    if isinstance(source, (str, os.PathLike)):
        return Table(source)
    raise TableError(f"table {name!r}: expected a varlake Table or a path, got {type(source).__name__}")


def session_time_zone(spark: Any) -> str:
    return str(spark.conf.get("spark.sql.session.timeZone"))


def prepare(
    spark: Any, query: str, tables: Mapping[str, TableSource], versions: Mapping[str, int] | None = None
) -> PreparedQuery:
    """Analyse the query, plan every table (skipping, read paths), rewrite the SQL.

    Spark has the first word on the text (``varlake.spark.reading.verdict``): its parser reads it
    (placeholders replaced by view names) before anything else; a text Spark cannot parse
    raises Spark's own ``ParseException``, and sqlglot's analysis is used only if Spark
    reads sqlglot's regeneration of it as the same query -- otherwise the query runs as
    written, every table read whole, no file skipped.
    """
    versions = dict(versions or {})
    unknown = set(versions) - set(tables)
    if unknown:
        raise TableError(f"versions given for unknown tables {sorted(unknown)}")
    text = substitute(query, tables)
    context = SharedReads._context(spark)
    verdict = None if (text, context) in _ANALYSES else Verdict(spark, text)  # a text Spark cannot parse fails here, as in spark.sql
    resolved = {name: _as_table(name, source) for name, source in tables.items()}
    snapshots: dict[str, Snapshot] = {name: t.snapshot(versions.get(name)) for name, t in resolved.items()}
    analysis = _ANALYSES.analysis(spark, query, text, context, snapshots, verdict)
    tz = session_time_zone(spark)
    plans = _plan_tables(analysis, resolved, snapshots, tz)
    derived = {
        name: {use: derived_name(i) for i, use in enumerate(plan.uses)}
        for name, plan in plans.items()
        if plan.uses and any(g.kind == "shredded" for g in plan.groups)
    }
    direct = [name for name in derived if all_shredded(plans[name])]
    elements = {name: _served_as_elements(analysis, plans[name], derived[name]) for name in direct}
    for name in direct:
        _served_as_text(analysis, plans[name], derived[name])
    plans = {name: _kept_apart(plan, analysis, derived.get(name)) for name, plan in plans.items()}
    tree = rewritten_tree(analysis, derived, direct, elements)
    sql = analysis.text if tree is None else tree.sql(dialect=SparkSQL)
    return PreparedQuery(query, analysis, plans, derived, sql, tree)


def _served_as_elements(analysis: QueryAnalysis, plan: TablePlan, derived: dict[PathUse, str]) -> dict[PathUse, ElementShape]:
    """The uses of a directly read table whose exploded sites read the array as its
    shredded elements (``planner.element_shape``), with how they are read; each
    gets the derived column ``elements_of(use)``. A use none of whose sites needs the
    rebuilt array any more loses its rebuilt column (and its failure column)."""
    sites = [s for s in analysis.sites if s.table == plan.name]
    chosen = {}
    for use in dict.fromkeys(s.use for s in sites if s.fields is not None):
        shape = element_shape(plan, use)
        if shape is not None:
            chosen[use] = shape
    for use in chosen:
        derived[elements_of(use)] = next_derived_name(derived)
    for use in chosen:
        if all(s.fields is not None for s in sites if s.use == use):
            derived.pop(use, None)
            derived.pop(failure_of(use), None)
    return chosen


class Analyses:
    """Query analyses shared by the queries of a process (least recently used dropped
    beyond ``capacity``).

    An analysis (sqlglot's parse and walk, Spark's verdict that sqlglot's regeneration is
    the same query) depends only on the query text, the tables' schemas and the confs
    Spark's parser reads: so it is keyed by those (the confs as ``SharedReads._context``
    hashes them) and made once. Analyses are never changed after they are made
    (``sql.rewritten_tree`` rewrites a copy). A text Spark parsed once under the same confs
    parses again, so a known text skips Spark's first parse as well.
    """

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._parsed: OrderedDict[tuple[Any, ...], None] = OrderedDict()
        self._analyses: OrderedDict[tuple[Any, ...], QueryAnalysis] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, key: tuple[str, tuple[Any, ...]]) -> bool:
        """Whether Spark parsed this text under these confs before."""
        with self._lock:
            return key in self._parsed

    def analysis(
        self, spark: Any, query: str, text: str, context: tuple[Any, ...], snapshots: Mapping[str, Snapshot], verdict: Verdict | None
    ) -> QueryAnalysis:
        """The analysis of ``query`` over tables with these snapshots' schemas; ``verdict``:
        Spark's parse of ``text`` (None if it parsed before: made again only if needed)."""
        schemas = {name: s.schema for name, s in snapshots.items()}
        key = (query, tuple((name, schema.to_schema_string()) for name, schema in schemas.items()), context)
        with self._lock:
            self._remember(self._parsed, (text, context), None)
            found = self._analyses.get(key)
            if found is not None:
                self._analyses.move_to_end(key)
                return found
        analysis = analyze(query, schemas)
        if depends_on_tree(analysis) and not (verdict or Verdict(spark, text)).same_query(regenerate(analysis)):
            analysis = as_written(analysis, "no rewrite: Spark's parser reads the query differently from sqlglot")
        with self._lock:
            self._remember(self._analyses, key, analysis)
        return analysis

    def _remember(self, store: "OrderedDict[tuple[Any, ...], Any]", key: tuple[Any, ...], value: Any) -> None:
        store[key] = value
        store.move_to_end(key)
        while len(store) > self.capacity:
            store.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._parsed.clear()
            self._analyses.clear()


_ANALYSES = Analyses()


def all_shredded(plan: TablePlan) -> bool:
    """Whether every file a plan reads is in a shredded group (at least one): its view then
    has no flag column and the query reads the derived columns directly (``sql.rewrite``)."""
    return bool(plan.groups) and all(g.kind == "shredded" for g in plan.groups)


def _plan_tables(analysis: QueryAnalysis, resolved: Mapping[str, Table], snapshots: Mapping[str, Snapshot], tz: str) -> dict[str, TablePlan]:
    """Every table's plan for what the analysis says the query needs of it."""
    plans: dict[str, TablePlan] = {}
    for name, usage in analysis.tables.items():
        schema = snapshots[name].schema
        filter = combine([usable_conjuncts(f, schema, tz) if f is not None else None for f in usage.filters])
        plans[name] = plan_table(name, resolved[name], snapshots[name], usage.uses, usage.whole_variant, filter, tz)
    return plans


# --- Spark frames for one table ---------------------------------------------------------------------------


def _string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _type_sql(name: str) -> str:
    """Spark SQL spelling of a canonical primitive type name (``long`` -> ``bigint``)."""
    return str(to_spark_type(PrimitiveType(name)).simpleString())


def spark_type_sql(dtype: DataType) -> str:
    """Spark SQL spelling of any table type (field names back-quoted), e.g. for a CAST that
    renames struct fields by position."""
    if isinstance(dtype, MapType):
        return f"MAP<{spark_type_sql(dtype.key_type)}, {spark_type_sql(dtype.value_type)}>"
    if isinstance(dtype, ArrayType):
        return f"ARRAY<{spark_type_sql(dtype.element_type)}>"
    if isinstance(dtype, StructType):
        return "STRUCT<" + ", ".join(f"{backquote(f.name)}: {spark_type_sql(f.type)}" for f in dtype.fields) + ">"
    if isinstance(dtype, PrimitiveType):
        return _type_sql(dtype.name)
    return "VARIANT"


def _node_sql(use: PathUse, column: tuple[str, ...] | None = None) -> str:
    """SQL for the shredded ``value``/``typed_value`` group at a use's path (struct read);
    ``column``: the names the read gives the Variant column (column mapping), if not its own."""
    expr = ".".join(backquote(name) for name in (column or use.column))
    for segment in use.segments:
        expr += ".typed_value"
        expr = f"get({expr}, {segment})" if isinstance(segment, int) else f"{expr}.{backquote(segment)}"
    return expr


def _leaf_sql(use: PathUse, column: tuple[str, ...] | None = None) -> str:
    """SQL for a use's typed leaf inside its struct-read Variant column."""
    return f"{_node_sql(use, column)}.typed_value"


def _served_as_text(analysis: QueryAnalysis, plan: TablePlan, derived: dict[PathUse, str]) -> None:
    """A derived column ``text_of(use)`` for each DATE use of a directly read table whose
    string leaves hold only ISO dates in every file (``planner.iso_date_text``) and that a
    site compares (``sql.compared``): the query compares its text (``sql.rewritten_tree``)."""
    for use in dict.fromkeys(s.use for s in analysis.sites if s.table == plan.name and s.fields is None and compared(s.node)):
        if use in derived and iso_date_text(plan, use):
            derived[text_of(use)] = next_derived_name(derived)


def _kept_apart(plan: TablePlan, analysis: QueryAnalysis, derived: Mapping[PathUse, str] | None = None) -> TablePlan:
    """``plan``, marked to compute its rebuilt structs and arrays apart (``_keep_apart``)
    when it has one (among the ``derived`` columns, if given: an array read as its
    shredded elements is not rebuilt) and no site of the table is in a filter (WHERE,
    HAVING, a join): a filter on another path would then run after every row's rebuild,
    not before it."""
    from sqlglot import exp

    nested = any(_rebuilt(use) for use in (plan.uses if derived is None else derived))
    filtered = any(
        s.table == plan.name and s.node.find_ancestor(exp.Where, exp.Having, exp.Join, exp.Qualify) is not None
        for s in analysis.sites
    )
    return replace(plan, keep_apart=True) if nested and not filtered else plan


def _rebuilt(use: PathUse) -> bool:
    """Whether a derived column is a struct or array rebuilt from leaves."""
    return is_nested(use.target) and not use.elements


def _rebuild_sql(node: str, target: DataType, shape: DataType, depth: int = 0, raising: bool = True) -> str:
    """SQL rebuilding Spark's Variant cast to ``target`` from a perfectly shredded group
    read as ``shape`` (``planner.serving``): NULL where the group is (the path
    is missing), struct fields that were not shredded NULL (missing in every object),
    arrays element by element (an array of primitives without a lambda:
    ``leaf_casts.elements_sql``), each leaf cast as Spark casts its Variant value
    (``leaf_casts.cast_sql``: NULL where that fails, or with ``raising`` Spark's error)."""
    typed = f"{node}.typed_value"
    if isinstance(target, StructType) and isinstance(shape, StructType):
        read = {f.name: f.type for f in shape.fields}
        parts = []
        for f in target.fields:
            if f.name in read:
                value = _rebuild_sql(f"{typed}.{backquote(f.name)}", f.type, read[f.name], depth, raising)
            else:
                value = f"CAST(NULL AS {spark_type_sql(f.type)})"
            parts.append(f"{_string(f.name)}, {value}")
        return f"CASE WHEN {typed} IS NULL THEN NULL ELSE named_struct({', '.join(parts)}) END"
    if isinstance(target, ArrayType) and isinstance(shape, ArrayType):
        elements = None if raising else elements_sql(node, target, shape)
        if elements is not None:  # an array of primitives: no lambda
            return elements
        var = f"__vl_e{depth}"
        return f"transform({typed}, {var} -> {_rebuild_sql(var, target.element_type, shape.element_type, depth + 1, raising)})"
    if isinstance(target, PrimitiveType) and isinstance(shape, PrimitiveType):
        return cast_sql(typed, shape.name, target.name, raising)
    raise TableError(f"cannot read {shape!r} as {target!r}: the planner chose a shape that does not fit")


def _derived_sql(use: PathUse, leaf: str, column: tuple[str, ...] | None = None) -> str:
    """A shredded group's value of a use: its leaf (or rebuilt subtree) as the target type.
    A value is NULL where a string leaf's cast fails (a rebuilt struct or array at that
    leaf), and the use's failure column (``planner.failure_of``) holds the Variant that
    makes the query's site fail there (``leaf_casts``)."""
    if use.target == ISNULL:
        return f"({_leaf_sql(use, column)} IS NULL)"
    if use.elements:  # the array of shredded elements as read (``sql.rewritten_tree`` casts their fields)
        return f"{_node_sql(use, column)}.typed_value"
    if use.text:  # the string leaf of ISO dates as read (``sql.rewritten_tree`` compares it)
        return _leaf_sql(use, column)
    if use.failure:
        return failure_sql(_node_sql(use, column), target_type(use.target), target_type(leaf))
    if not is_nested(use.target):
        return cast_sql(_leaf_sql(use, column), leaf, use.target)
    # the outer CAST only fixes nullability flags, so the type is exactly variant_get's
    # never raising: a use that can fail reads its failure column at the site (``leaf_casts``)
    rebuilt = _rebuild_sql(_node_sql(use, column), target_type(use.target), target_type(leaf), raising=False)
    return f"CAST({rebuilt} AS {_target_sql(use)})"


def _insert_shape(level: dict[str, Any], dtype: DataType) -> None:
    if isinstance(dtype, ArrayType):
        _insert_shape(level.setdefault("element", {}), dtype.element_type)
    elif isinstance(dtype, StructType):
        for f in dtype.fields:
            _insert_shape(level.setdefault("fields", {}).setdefault(f.name, {}), f.type)
    elif isinstance(dtype, PrimitiveType):
        level["leaf"] = dtype.name
    else:
        raise TableError(f"cannot read {dtype!r} as a shredded leaf")


def _leaf_schema(leaves: Mapping[PathUse, str], column: tuple[str, ...]) -> Any:
    """``struct<typed_value: ...>`` holding just the leaves the uses of ``column`` need
    (a struct/array use's whole shape; uses sharing a path share its columns)."""
    from pyspark.sql.types import ArrayType as SparkArray
    from pyspark.sql.types import StructField
    from pyspark.sql.types import StructType as SparkStruct

    tree: dict[str, Any] = {}
    for use, leaf in leaves.items():
        if use.column != column:
            continue
        level = tree
        for segment in use.segments:
            if isinstance(segment, int):
                level = level.setdefault("element", {})
            else:
                level = level.setdefault("fields", {}).setdefault(segment, {})
        _insert_shape(level, target_type(leaf) if is_nested(leaf) else PrimitiveType(leaf))

    def build(level: dict[str, Any]) -> Any:
        if "leaf" in level:
            typed = to_spark_type(PrimitiveType(level["leaf"]))
        elif "element" in level:
            typed = SparkArray(build(level["element"]), True)
        else:
            typed = SparkStruct([StructField(k, build(v), False) for k, v in level["fields"].items()])
        return SparkStruct([StructField("typed_value", typed, True)])

    return build(tree)


def partition_sql(plan: TablePlan, name: str, raw: str | None) -> str:
    """A partition value as a typed literal (``varlake.semantics.partition_values`` reads the
    stored text; Spark casts varlake's own spelling of it, timestamps in UTC with ``Z``)."""
    from varlake.semantics import partition_values

    delta_type = plan.schema.field(name).type
    type_sql = to_spark_type(delta_type).simpleString()
    type_name = delta_type.name if isinstance(delta_type, PrimitiveType) else "string"
    value = partition_values.parse(raw, type_name, "UTC", f"partition column {name!r}")
    if value is None:
        return f"CAST(NULL AS {type_sql})"
    if type_name == "binary":
        return f"X'{value.hex()}'"
    text = partition_values.render(value, type_name, f"partition column {name!r}")
    return f"CAST({_string(text)} AS {type_sql})"


def _target_sql(use: PathUse) -> str:
    """Spark SQL spelling of a use's result type."""
    if use.target == ISNULL:
        return "boolean"
    if use.failure:
        return "VARIANT"
    return spark_type_sql(target_type(use.target)) if is_nested(use.target) else _type_sql(use.target)


def _shredded_field(
    field: Any, path: tuple[str, ...], leaves: Mapping[PathUse, str], read_path: tuple[str, ...] | None = None, logical: Any = None
) -> tuple[Any | None, str]:
    """For a shredded group: how to read a column (None: not at all) and the SQL giving its value.

    Used Variants become their leaf structs (and NULL in the view); structs holding them are
    rebuilt field by field (NULL where the struct is NULL); anything else is read as declared.
    ``field`` is the field as read, ``path`` its path in the table (what uses name);
    with column mapping ``read_path`` is the path of read names and ``logical`` the
    table's own field (whose struct fields pair with ``field``'s in order).
    """
    from pyspark.sql.types import StructField
    from pyspark.sql.types import StructType as SparkStruct
    from pyspark.sql.types import VariantType as SparkVariant

    read_path = read_path if read_path is not None else path
    logical = logical if logical is not None else field
    ref = ".".join(backquote(p) for p in read_path)
    used = {use.column for use in leaves}
    if path in used:
        return StructField(field.name, _leaf_schema(leaves, path), True, field.metadata), "CAST(NULL AS VARIANT)"
    if isinstance(field.dataType, SparkVariant) and len(path) == 1:
        return None, "CAST(NULL AS VARIANT)"  # not used by the query: not read
    if isinstance(field.dataType, SparkStruct) and any(c[: len(path)] == path for c in used):
        read, parts = [], []
        for sub, sub_logical in zip(field.dataType.fields, logical.dataType.fields):
            sub_read, sub_sql = _shredded_field(sub, (*path, sub_logical.name), leaves, (*read_path, sub.name), sub_logical)
            if sub_read is not None:
                read.append(sub_read)
            parts.append(f"{_string(sub.name)}, {sub_sql}")
        value = f"CASE WHEN {ref} IS NULL THEN NULL ELSE named_struct({', '.join(parts)}) END"
        return StructField(field.name, SparkStruct(read), field.nullable, field.metadata), value
    return field, ref


#: Spark's Parquet option that resolves requested fields carrying ``parquet.field.id``
#: metadata by Parquet field id (fields without it by name); set in the read sessions.
FIELD_ID_READ = "spark.sql.parquet.fieldId.read.enabled"
SPARK_FIELD_ID = "parquet.field.id"
#: Prefix of the names under which id-mode fields are requested from files that do not
#: hold them under their physical names (see ``mapped_reads``).
ID_NAME = "__vl_fid_"


def _by_id_names(dtype: DataType) -> DataType:
    """A ``file_schema`` with every struct field (nested too) named ``__vl_fid_<id>``."""
    if isinstance(dtype, StructType):
        return StructType(
            tuple(
                StructField(f"{ID_NAME}{f.metadata[SPARK_FIELD_ID]}", _by_id_names(f.type), f.nullable, f.metadata)
                for f in dtype.fields
            )
        )  # fmt: skip
    if isinstance(dtype, ArrayType):
        return ArrayType(_by_id_names(dtype.element_type), dtype.contains_null)
    if isinstance(dtype, MapType):
        return MapType(_by_id_names(dtype.key_type), _by_id_names(dtype.value_type), dtype.value_contains_null)
    return dtype


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
        if _id_layout(mapping, plan.table.open_file(task.relative_path), where):
            physical.append(task)
        else:
            other.append(task)
    schema = mapping.file_schema(SPARK_FIELD_ID)
    reads = []
    if physical:
        reads.append((physical, list(to_spark_schema(schema).fields)))
    if other:
        by_id = _by_id_names(schema)
        assert isinstance(by_id, StructType)
        reads.append((other, list(to_spark_schema(by_id).fields)))
    return reads


_ID_LAYOUTS: "weakref.WeakKeyDictionary[Any, dict[str, bool]]" = weakref.WeakKeyDictionary()


def _id_layout(mapping: Any, location: str, where: str) -> bool:
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
        schema = pq.read_schema(location)
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


def _group_frame(session: Any, plan: TablePlan, group: FileGroup, derived: Mapping[PathUse, str]) -> Any:
    """One file group read as asked, projected to the view's columns (SQL, so one JVM call
    per read); a column-mapped table's files may take more than one read (``mapped_reads``)."""
    if plan.scan.column_mapping is None:
        return _read_frame(session, plan, group, derived, group.tasks, None)
    frames = [_read_frame(session, plan, group, derived, tasks, files) for tasks, files in mapped_reads(plan, group.tasks)]
    return reduce(lambda a, b: a.unionByName(b), frames)


def _read_frame(
    session: Any, plan: TablePlan, group: FileGroup, derived: Mapping[PathUse, str], tasks: Sequence[Any], files: list[Any] | None
) -> Any:
    """``tasks`` of a group read with ``files`` (a mapped table's read fields, in the
    table's order) or the table's own fields, projected to the view's columns."""
    from pyspark.sql.types import StructType as SparkStruct

    partitions = dict(group.partition_values)
    spark_schema = to_spark_schema(plan.schema)
    shredded = group.kind == "shredded"
    leaves = group.leaves
    read_fields, columns = [], []
    read_names: dict[tuple[str, ...], tuple[str, ...]] = {}  # a used Variant column's path -> its read names
    for i, f in enumerate(spark_schema.fields):
        if f.name in partitions:
            columns.append(f"{partition_sql(plan, f.name, partitions[f.name])} AS {backquote(f.name)}")
            continue
        source = files[i] if files is not None else f
        if shredded:
            read, value = _shredded_field(source, (f.name,), leaves, (source.name,), f)
            if files is not None:
                for use in leaves:
                    if use.column[0] == f.name:
                        read_names[use.column] = _read_path(source, f, use.column)
        else:
            read, value = source, backquote(source.name)
        if read is not None:
            read_fields.append(read)
        if files is not None:  # the read names; CAST renames nested fields by position
            value = f"CAST({value} AS {spark_type_sql(plan.schema.fields[i].type)})"
        columns.append(f"{value} AS {backquote(f.name)}")
    read_schema = SparkStruct(read_fields)
    plain = [task for task in tasks if task.deletion_vector is None]
    frames = [_parquet_read(session, plan, plain, read_schema)] if plain else []
    deleting = [task for task in tasks if task.deletion_vector is not None]
    if deleting:
        frames.append(_without_deleted_rows(session, plan, deleting, read_schema))
    frame = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    if not all_shredded(plan):  # with only shredded groups nothing reads the flag
        columns.append(f"{'true' if shredded else 'false'} AS {FLAG_COLUMN}")
    apart = shredded and plan.keep_apart and any(_rebuilt(use) for use in derived)
    tested: dict[PathUse, str] = {}  # failure columns computed over their use's rebuilt value
    for use, name in derived.items():
        if use.failure and replace(use, failure=False) in group.proven:
            columns.append(f"CAST(NULL AS VARIANT) AS {name}")  # never fails in these files
            continue
        if apart and use.failure and is_nested(use.target) and replace(use, failure=False) in derived:
            tested[use] = name
            continue
        leaf = leaves[read_use(use)] if shredded else ""
        value = _derived_sql(use, leaf, read_names.get(use.column)) if shredded else f"CAST(NULL AS {_target_sql(use)})"
        columns.append(f"{value} AS {name}")
    if not apart:
        return frame.selectExpr(*columns)
    return _keep_apart(_over_rebuilt(frame, columns, tested, derived, leaves, read_names))


def _over_rebuilt(
    frame: Any,
    columns: list[str],
    tested: Mapping[PathUse, str],
    derived: Mapping[PathUse, str],
    leaves: Mapping[PathUse, str],
    read_names: Mapping[tuple[str, ...], tuple[str, ...]],
) -> Any:
    """The view's projection, the failure columns of rebuilt arrays (``tested``) computed by
    a second projection that reads each use's rebuilt value (``leaf_casts.failure_sql``'s
    ``rebuilt``) instead of casting every leaf again inside the test: the first projection
    passes the read Variant columns on under ``__vl_read_<n>``. Spark keeps the two apart
    (it does not collapse a projection whose costly column the next one reads more than
    once), so each array is rebuilt once and its leaves cast once. Measured on TPC-H Q12
    at 150k orders (three date leaves per line item): 0.59 s of CPU against 0.72 s."""
    if not tested:
        return frame.selectExpr(*columns)
    sources: dict[str, str] = {}
    later = []
    for use, name in tested.items():
        column = read_names.get(use.column) or use.column
        alias = sources.setdefault(column[0], f"__vl_read_{len(sources)}")
        node = _node_sql(use, (alias, *column[1:]))
        later.append(f"{failure_sql(node, target_type(use.target), target_type(leaves[use]), derived[replace(use, failure=False)])} AS {name}")
    passed = [f"{backquote(read)} AS {alias}" for read, alias in sources.items()]
    return frame.selectExpr(*columns, *passed).selectExpr("*", *later).drop(*sources.values())


def _keep_apart(frame: Any) -> Any:
    """The view's rows behind a node Spark neither pushes filters through nor collapses
    projections across: a sample of fraction 1 (every row: Bernoulli sampling keeps a row
    when a draw in [0, 1) is below 1), so a rebuilt struct or array is computed once.
    Otherwise Spark substitutes it into every filter it pushes down -- e.g. the ``size(a) >
    0 AND a IS NOT NULL`` it infers below ``explode(a)`` -- and rebuilds the array once per
    filter as well as in the projection. Only where the query filters on none of the
    table's paths (``_kept_apart``): such a filter would run above the node, after every
    row's rebuild instead of before it (measured: TPC-H Q3 and Q10 took twice the CPU).

    Below the sample, a coalesce that merges no partitions (``CoalescedRDD`` keeps the
    parent's partitions when asked for more) ends Spark's whole-stage code generation: the
    rebuild is compiled in a stage of its own, whose code is the same for every query over
    the view, and only the query's smaller stage is compiled again when its literals change.
    In one stage with the query, each new literal recompiled and re-warmed the whole
    rebuild (TPC-H Q1, Q6 and Q12 at 150k orders, a new literal every run: 2.03x
    relational's wall time in one stage, 1.57x split)."""
    return frame.coalesce(NO_MERGE_PARTITIONS).sample(fraction=1.0, seed=0)


def _read_path(read: Any, logical: Any, path: tuple[str, ...]) -> tuple[str, ...]:
    """The read names of a table path through structs (``read`` and ``logical`` pair in order)."""
    names = [read.name]
    for name in path[1:]:
        index = [f.name for f in logical.dataType.fields].index(name)
        read, logical = read.dataType.fields[index], logical.dataType.fields[index]
        names.append(read.name)
    return tuple(names)


def _parquet_read(session: Any, plan: TablePlan, tasks: Sequence[Any], read_schema: Any) -> Any:
    """One Parquet relation over the data files of ``tasks``, reading ``read_schema``."""
    locations = [plan.table.open_file(task.relative_path) for task in tasks]
    return session.read.schema(read_schema).options(**PARQUET_READ_OPTIONS).parquet(*locations)


_DV_FILE, _DV_ROW, _DV_SIZE, _DV_KEEP = "__vl_dv_file", "__vl_dv_row", "__vl_dv_size", "__vl_dv_keep"


def _without_deleted_rows(session: Any, plan: TablePlan, tasks: Sequence[Any], read_schema: Any) -> Any:
    """The files of ``tasks`` (each with a deletion vector) read as one Parquet relation,
    without their deleted rows, which no expression of the query ever sees.

    A ``Filter`` right above the scan keeps the rows their deletion vectors keep
    (``deleted_rows.keep_sql`` of each row's ``_metadata`` ``file_path``, ``file_size``
    and ``row_index`` -- its index in the file, which Spark's Parquet scan keeps right
    while it prunes columns and row groups). Spark merges the query's filters after it
    (``And(keep, ...)``, evaluated left first) while still pushing their comparisons to
    the scan to skip row groups. Columns holding Variants are also read as ``IF(keep, v,
    NULL)``: otherwise Spark would evaluate a ``variant_get(v, '$.a', 'int')`` of the
    query inside the scan (``pushVariantIntoScan``), before any filter.

    The file names are those the relation's own file index lists (``inputFiles``, as
    ``spark_file_name`` spells them); should a row come from a file under another name,
    the read raises rather than return rows a deletion vector deletes."""
    from varlake.delta.deletion_vectors import keep_mask

    relation = _parquet_read(session, plan, tasks, read_schema)
    files = []
    for found, task in deleted_rows_by_name(relation, plan.table, tasks):
        if task.physical_records is not None:  # numRecords is required with a DV: check it bounds the DV
            keep_mask(found.rows, task.physical_records, f"{plan.table.path}: data file {task.relative_path!r} (rows counted by its numRecords)")
        files.append(found)
    guard = f"{plan.table.path}: a file with a deletion vector is named otherwise than varlake expects"
    keep = keep_sql(files, _DV_ROW, _DV_FILE, _DV_SIZE, guard)
    names = [backquote(f.name) for f in read_schema.fields]
    masked = variants_masked(read_schema.fields, names, _DV_KEEP)
    return (
        relation.selectExpr(
            *names, f"_metadata.file_path AS {_DV_FILE}", f"_metadata.row_index AS {_DV_ROW}", f"_metadata.file_size AS {_DV_SIZE}"
        )
        .selectExpr(*names, f"{keep} AS {_DV_KEEP}")
        .where(_DV_KEEP)
        .selectExpr(*masked)
    )


def file_size(table: Table, task: Any) -> int:
    """A data file's size as its storage lists it (what Spark's ``_metadata.file_size`` says)."""
    try:
        return int(table.storage.info(f"{table.path}/{task.relative_path}").size)
    except Exception:  # noqa: BLE001 -- the add's size is the file's size in a sound table
        return int(task.add.size)


def deleted_rows_by_name(relation: Any, table: Table, tasks: Sequence[Any]) -> list[tuple[DeletedRows, Any]]:
    """Each task's deleted rows (empty without a deletion vector) under the name Spark's
    ``_metadata.file_path`` gives its file in ``relation`` (its own file index,
    ``inputFiles``); a file listed under no name varlake recognises raises."""
    spelled = {local_path(uri): spark_file_name(uri) for uri in relation.inputFiles()}
    out = []
    for task in tasks:
        location = table.open_file(task.relative_path)
        name = spelled.get(os.path.normpath(location))
        if name is None:
            raise TableError(
                f"{table.path}: data file {task.relative_path!r}: Spark lists {location!r} under no name varlake recognises"
            )
        out.append((DeletedRows(name, file_size(table, task), table.deleted_rows(task), task.physical_records), task))
    return out


def variants_masked(fields: Sequence[Any], names: Sequence[str], keep: str) -> list[str]:
    """Select expressions reading each column, those holding Variants as ``IF(keep, v, NULL)``
    (so Spark never extracts from a deleted row inside the scan)."""
    return [f"IF({keep}, {n}, NULL) AS {n}" if holds_variant(f.dataType) else n for f, n in zip(fields, names)]


def _empty_frame(session: Any, plan: TablePlan, derived: Mapping[PathUse, str]) -> Any:
    from pyspark.sql.types import BooleanType, StructField
    from pyspark.sql.types import StructType as SparkStruct

    fields = list(to_spark_schema(plan.schema).fields) + [StructField(FLAG_COLUMN, BooleanType(), True)]
    for use, name in derived.items():
        if use.target == ISNULL:
            dtype = BooleanType()
        else:
            dtype = to_spark_type(target_type(use.target) if is_nested(use.target) else PrimitiveType(use.target))
        fields.append(StructField(name, dtype, True))
    return session.createDataFrame([], SparkStruct(fields))


def table_frame(session: Any, plan: TablePlan, derived: Mapping[PathUse, str] | None = None) -> Any:
    """The DataFrame a table's view stands for: the union of its file groups' reads.

    With ``derived`` columns it also has the flag column saying which branch a row came
    from, unless every group is shredded (``all_shredded``).
    """
    derived = derived or {}
    frames = [_group_frame(session, plan, g, derived) for g in plan.groups]
    frame = reduce(lambda a, b: a.unionByName(b), frames) if frames else _empty_frame(session, plan, derived)
    if derived or all_shredded(plan):  # the flag is there only when the query reads it
        return frame
    return frame.drop(FLAG_COLUMN)  # nothing refers to it: keep SELECT * clean


def clone_session(spark: Any) -> Any:
    """A clone of ``spark`` (confs, views, functions) that reads Variant groups as structs
    and id-mode columns by field id on request (Spark reads a relation with the confs of
    the session it was built in, whichever session runs the query). On Spark Connect the
    server clones the caller's server-side session (``cloneSession``)."""
    from pyspark.sql import SparkSession

    if is_classic(spark):
        session = SparkSession(spark.sparkContext, spark._jsparkSession.cloneSession())
    else:
        session = spark.cloneSession()
        _close_at_exit(session.client)
    session.conf.set(IGNORE_VARIANT_ANNOTATION, "true")
    session.conf.set(FIELD_ID_READ, "true")  # only fields that carry parquet.field.id are matched by id
    return session


def _close_at_exit(client: Any) -> None:
    """At exit, close a Connect clone's channel instead of running the client's own exit
    RPCs: those are retried for minutes when the server is already gone, holding up the
    process; the server drops the idle clone session by itself."""
    import atexit

    atexit.unregister(client._on_exit)
    atexit.register(client.close)


def _register(session: Any, prepared: PreparedQuery, plans: Mapping[str, TablePlan], derived: Mapping[str, Mapping[PathUse, str]]) -> None:
    for name, plan in plans.items():
        table_frame(session, plan, derived.get(name)).createOrReplaceTempView(prepared.analysis.tables[name].view)


def run(spark: Any, prepared: PreparedQuery) -> Any:
    """Run the prepared SQL over the tables' shared reads, in the caller's session.

    The SQL names the shared reads directly: the rewritten text through its syntax tree,
    the user's own text (run as written, or analysed for Spark's output names) by putting
    them in place of the ``{name}`` placeholders. The query means what Spark makes of the
    user's text with each placeholder an (unqualified) view name -- the text Spark's
    verdict was given in ``prepare``; a qualified name in its place reads the same
    wherever Spark accepts it (a table, a column qualifier). So should Spark reject the
    text run (sqlglot rendered something Spark 4.3 does not take, or a placeholder sits
    where only a plain name parses), the query runs as written with the placeholders as
    view names, in a session clone, with every file read as Variant: slower, never
    different, and a query that fails there fails with Spark's own error for that text.
    """
    from pyspark.errors import AnalysisException, ParseException

    counted = count_from_log(spark, prepared.analysis, prepared.plans, session_time_zone(spark))
    if counted is not None:  # SELECT count(*) answered from the log (sql.count_query)
        return counted
    # the SQL names only global views: the caller's session is not changed
    shared = {name: SHARED_READS.view(spark, plan, prepared.derived.get(name, {})) for name, plan in prepared.plans.items()}
    as_written = substitute(prepared.query, prepared.plans, shared)
    try:
        with handled_errors_unlogged():  # Spark's rejection is handled below
            return _run_shared(spark, prepared, shared, as_written)
    except (AnalysisException, ParseException):
        fallback = clone_session(spark)
        _register(fallback, prepared, {n: p.as_variant() for n, p in prepared.plans.items()}, {})
        return fallback.sql(prepared.analysis.text)


def _run_shared(spark: Any, prepared: PreparedQuery, shared: Mapping[str, tuple[str, str]], as_written: str) -> Any:
    """``run``'s query over the shared reads: as written, or rewritten (``run``)."""
    if not prepared.rewritten or prepared.tree is None:
        return _holding(spark, shared, spark.sql(as_written))
    views = {prepared.analysis.tables[name].view: table for name, table in shared.items()}
    names: Future[list[str]] | None = None
    if not prepared.analysis.names_known:
        # the user's own query names the output as Spark would; Spark analyses it on
        # another thread while it analyses the rewritten query
        names = _names_worker().submit(lambda: list(spark.sql(as_written).columns))
    result = _holding(spark, shared, spark.sql(retarget(prepared.tree, views)))
    return result.toDF(*names.result()) if names is not None else result


def _holding(spark: Any, shared: Mapping[str, tuple[str, str]], result: Any) -> Any:
    """``result``, its shared reads kept while it lives on Spark Connect (``SharedReads.hold``)."""
    if not is_classic(spark):
        SHARED_READS.hold(list(shared.values()), result)
    return result


_NAMES_WORKER: list[ThreadPoolExecutor] = []


def _names_worker() -> ThreadPoolExecutor:
    """One long-lived thread (so its py4j connection is reused) for the output-name analysis."""
    if not _NAMES_WORKER:
        _NAMES_WORKER.append(ThreadPoolExecutor(1, thread_name_prefix="varlake-names"))
    return _NAMES_WORKER[0]


class SharedReads:
    """Table reads shared by the queries of one Spark application, as global temporary views.

    Building a table's read (the Parquet relation of each file group, its projection, the
    union) costs tens of milliseconds of JVM calls -- a third of a short query's time -- and
    is the same for every query that plans the same files the same way. So each read is
    built once, in a session clone with the caller's confs and ``ignoreVariantAnnotation``
    (the relation keeps that session for reading), and registered as a global temporary
    view, which each query's SQL names directly. The key is everything
    the read depends on: the Spark application, the caller's confs (a hash of all of them),
    the table's location and schema, and per file group its kind, files, partition values
    and leaf types, plus the derived columns. Files in a Delta table never change, so a key
    never goes stale; the least recently used views are dropped beyond ``capacity``.

    On Spark Connect a DataFrame is a plan the server analyses again at each action, so
    it names the view rather than holding its read: a view some live result still uses
    (``hold``; tracked through its plan object, which every DataFrame derived from the
    result shares) is retired instead of dropped, and dropped by a later ``view`` call once
    no such plan is left.
    """

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self._views: OrderedDict[tuple[Any, ...], tuple[str, str]] = OrderedDict()
        self._readers: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()
        self._users: dict[tuple[str, str], weakref.WeakSet[Any]] = {}
        self._retired: list[tuple[Any, tuple[str, str]]] = []

    @staticmethod
    def _context(spark: Any) -> tuple[Any, ...]:
        """The application and a hash of the caller's confs (one JVM call, or one Connect
        round trip; the Connect server's confs include its application id)."""
        if is_classic(spark):
            jconf = spark._jsparkSession.conf().getAll()
            return (spark.sparkContext.applicationId, jconf.hashCode(), jconf.size())
        confs = dict(spark.conf.getAll)
        return ("connect", confs.get("spark.app.id"), hash(frozenset(confs.items())), len(confs))

    @staticmethod
    def _plan_key(plan: TablePlan, derived: Mapping[PathUse, str]) -> tuple[Any, ...]:
        groups = tuple(
            (g.kind, tuple((t.relative_path, t.add.key[1]) for t in g.tasks), g.partition_values, g.leaf_types, g.proven)
            for g in plan.groups  # a file's deletion vector (key[1]) changes what its read returns
        )
        flagged = not all_shredded(plan)  # whether the view has the flag column
        derived_key = tuple(sorted(derived.items(), key=lambda kv: kv[1]))
        return (plan.table.open_file(""), plan.schema.to_schema_string(), groups, flagged, derived_key, plan.keep_apart)

    def view(self, spark: Any, plan: TablePlan, derived: Mapping[PathUse, str]) -> tuple[str, str]:
        """``(database, name)`` of the global view holding ``plan``'s read (built if new)."""
        context = self._context(spark)
        key = (context, self._plan_key(plan, derived))
        with self._lock:
            self._sweep()
            name = self._views.get(key)
            if name is not None:
                self._views.move_to_end(key)
                return name
            reader = self._readers.get(context)
            if reader is None:
                reader = self._readers[context] = clone_session(spark)
            local = f"__varlake_read_{uuid.uuid4().hex}"
            table_frame(reader, plan, derived).createOrReplaceGlobalTempView(local)
            database = reader.conf.get("spark.sql.globalTempDatabase", "global_temp")
            name = self._views[key] = (database, local)
            while len(self._views) > self.capacity:
                self._drop(*self._views.popitem(last=False))
            return name

    def hold(self, views: Sequence[tuple[str, str]], result: Any) -> None:
        """Keep ``views`` while ``result`` (a Connect DataFrame) or one derived from it lives."""
        plan = getattr(result, "_plan", None)
        if plan is None:
            return
        with self._lock:
            for view in views:
                self._users.setdefault(view, weakref.WeakSet()).add(plan)

    def _in_use(self, view: tuple[str, str]) -> bool:
        users = self._users.get(view)
        if users is not None and not len(users):
            del self._users[view]
            return False
        return users is not None

    def _sweep(self) -> None:
        """Drop the retired views no live result uses any more."""
        kept = []
        for reader, view in self._retired:
            if self._in_use(view):
                kept.append((reader, view))
            else:
                self._drop_view(reader, view)
        self._retired = kept

    def _drop(self, key: tuple[Any, ...], view: tuple[str, str]) -> None:
        context = key[0]
        reader = self._readers.get(context)
        if not any(k[0] == context for k in self._views):
            self._readers.pop(context, None)
        if reader is None:
            return
        if self._in_use(view):
            self._retired.append((reader, view))
        else:
            self._drop_view(reader, view)

    @staticmethod
    def _drop_view(reader: Any, view: tuple[str, str]) -> None:
        try:
            reader.catalog.dropGlobalTempView(view[1])
        except Exception:  # its Spark application has stopped: nothing left to drop
            return

    def __len__(self) -> int:
        return len(self._views)

    @property
    def views(self) -> list[tuple[str, str]]:
        """``(database, name)`` of every shared read, least recently used first."""
        return list(self._views.values())

    def clear(self) -> None:
        """Drop every shared read (DataFrames made from them keep working)."""
        with self._lock:
            while self._views:
                self._drop(*self._views.popitem(last=False))


SHARED_READS = SharedReads()


@atexit.register
def _close_connect_readers() -> None:
    """Close the Spark Connect session clones ``SHARED_READS`` holds while the interpreter is
    whole: closed later, by their finalizers, their gRPC channels can hang the process's exit."""
    for reader in list(SHARED_READS._readers.values()):
        if not is_classic(reader):
            try:
                reader.client.close()
            except Exception:  # the server may be gone already  # noqa: BLE001
                pass


# --- the public entry points --------------------------------------------------------------------------------


def sql(spark: Any, query: str, /, *, versions: Mapping[str, int] | None = None, **tables: TableSource) -> Any:
    """Run Spark SQL over varlake tables named as ``{name}`` placeholders.

    ``sql(spark, "SELECT v:a::int, count(*) FROM {events} GROUP BY 1", events="/data/events")``.
    Tables are paths or ``Table`` objects; ``versions`` pins a table to a version. Variant
    columns are Spark ``VariantType``; the result equals Spark's evaluation of the query
    over all of the tables' files, but files are skipped by statistics and perfectly
    shredded paths are read as plain Parquet columns.
    """
    return run(spark, prepare(spark, query, tables, versions))


def read(
    spark: Any,
    path: TableSource,
    columns: Sequence[str] | None = None,
    where: str | None = None,
    version: int | None = None,
) -> Any:
    """A DataFrame of a table: ``columns`` are SQL expressions (``"id"``, ``"v:a.b::int AS b"``),
    ``where`` a SQL condition; Variant columns surface as ``VariantType``."""
    query = read_query(columns, where)
    return sql(spark, query, versions={"table": version} if version is not None else None, table=path)


def read_query(columns: Sequence[str] | str | None, where: str | None) -> str:
    """The SQL ``read`` runs: ``SELECT <columns or *> FROM {table} [WHERE <where>]``."""
    if isinstance(columns, str):
        columns = [columns]
    select = ", ".join(columns) if columns else "*"
    return f"SELECT {select} FROM {{table}}" + (f" WHERE {where}" if where else "")
