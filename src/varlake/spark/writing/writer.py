"""Write a Spark DataFrame into a varlake (Delta) table: Spark writes, varlake commits.

A write has two phases, ``stage_write`` and ``commit_write`` (``write`` runs both):

1. *Stage.* Open the table (or plan to create it from ``df.schema``), check the
   DataFrame against the table schema, decide the shredding layout, and let Spark
   write Parquet natively -- Variant columns stay Spark ``VariantType`` -- into a fresh
   directory ``<root>/<uuid>/`` (Hive-style ``col=value/`` below it when the table is
   partitioned). The driver then reads each new file's footer for its Delta stats
   (``delta.stats``; on the executors, through an RDD over the file list, when there
   are more than ``EXECUTOR_STATS_THRESHOLD`` files) and builds the ``add`` actions
   (``varlake.write.staging.files``; partition values from Spark's directory names through
   ``varlake.semantics.partition_values``, timestamps moved from the session zone to UTC).
2. *Commit.* ``varlake.write.commit_write`` -- the commit path ``Table`` uses too --
   creates the table if it is new and commits ONE version holding the ``add``s and, when
   the shredding schema changed, the new ``metaData``.

A failed Spark job commits nothing, so readers see no change. Spark writes with the
v2 output committer and Hadoop's raw local file system (no hidden ``.crc`` or
``_SUCCESS`` side files), so files of tasks that finished before the failure stay in
the write directory as ordinary unreferenced files, which ``Table.vacuum`` deletes
once they are older than the retention. The table path is a local path.

How the shredding schema reaches Spark's writer
-----------------------------------------------
The table stores one shredding schema per Variant column, as Spark DDL, in the
property ``varlake.shredding.<column>`` (see ``varlake.table``). With
``shredding="auto"`` it is inferred from a sample of the data (``df.limit``, or the
``sample`` DataFrame the caller passes; the Variants are collected to the driver and
fed to ``varlake.write.plan_shredding``, the policy ``Table`` uses too), so later writes
keep the layout and only evolve it when the data changes; the new schema rides along in
the commit as ``metaData``.

For the write itself the session confs ``spark.sql.variant.writeShredding.enabled=true``
and ``spark.sql.variant.inferShreddingSchema=false`` (Spark never picks a schema of its
own per file) and ``spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS`` (INT96 has
no usable statistics) are set only for the duration of the Spark job, under a
process-wide lock because confs belong to the whole session.

The schema itself does not go through ``spark.sql.variant.forceShreddingSchemaForTest``:
that conf applies one DDL to every Variant column, and Spark 4.3's ``prepareWrite``
then builds the file schema with ``ParquetUtils.replaceVariantTypes``, which drops
every top-level column after the third (any DataFrame of four or more columns fails
with ``ArrayIndexOutOfBoundsException``). Instead the writer hands Spark's Parquet
write support the finished file schema, the exact thing ``prepareWrite`` would have
computed: the DataFrame's data columns with each shredded Variant replaced by
``SparkShreddingUtils.variantShreddingSchema(<DDL>)`` (plus its write-shredding field
metadata), as the Hadoop option ``org.apache.spark.sql.parquet.variant.shredding.attributes``
of this one write. So every Variant column -- top-level or inside structs -- gets
its own stored schema, and ``forceShreddingSchemaForTest`` stays empty.

A column is written unshredded when its stored schema is empty, when it has leaf types
Spark cannot shred (time, uuid, nanosecond timestamps) or field names that differ only
in case (``varlake.write.unshreddable_reason``), and for Variants inside arrays or maps
(those have no stored schema).

On a column-mapped table (``delta.columnMapping.mode`` ``name``/``id``; a new table given
that property gets ids and physical names first, ``delta.column_mapping.assign_column_mapping``)
the DataFrame is cast to its physical form before Spark writes it: every column and struct
field under its physical name, ids as ``parquet.field.id`` StructField metadata (written as
Parquet field ids, ``spark.sql.parquet.fieldId.write.enabled``), Variant groups as they are;
partition directories, partition values and statistics use the physical names.

Binary partition columns are stored as their bytes' UTF-8 text (what Spark names their
directories); the job fails with a clear message on a value that is not UTF-8.
``shredding="off"``, or a table without ``delta.enableVariantShredding=true``, gives
unshredded files (``writeShredding.enabled=false``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from varlake.delta.column_mapping import ColumnMapping, assign_column_mapping, requested_mode
from varlake.delta.schema import StructType
from varlake.errors import ConstraintViolationError, StorageError, TableError, TableExistsError, UnsupportedFeatureError
from varlake.io.storage import Storage
from varlake.semantics import partition_values
from varlake.semantics.types import backquote
from varlake.spark.session.local import PARQUET_WRITE_OPTIONS, spark_conf, spark_error_summary
from varlake.spark.session.object_store import reach
from varlake.table import locate
from varlake.spark.types import nullable_schema, shredded_struct_json, to_delta_schema, to_spark_type
from varlake.variant import Variant
from varlake.write import (
    MODES,
    SAMPLE_ROWS,
    PendingWrite,
    check_partition_columns,
    file_facts,
    fits_nullability,
    new_table_properties,
    needs_samples,
    partition_types,
    same_shape,
    variant_columns,
)
from varlake.write import commit_write as commit_pending
from varlake.write.staging.constraints import Constraint, constraint_columns, table_constraints, violation_message
from varlake.write.staging.files import FileFacts
from varlake.write.staging.stage import FilePlan, StageTarget, WrittenFile, stage

__all__ = [
    "EXECUTOR_STATS_THRESHOLD",
    "SAMPLE_ROWS",
    "SHREDDING_ATTRIBUTES",
    "StagedWrite",
    "WriteResult",
    "commit_write",
    "shredded_file_schema",
    "stage_write",
    "write",
]

EXECUTOR_STATS_THRESHOLD = 64
_WRITE_LOCK = threading.Lock()


@dataclass(frozen=True)
class WriteResult:
    """What a write did. ``version`` is None when ``app_id``/``app_version`` was already committed."""

    path: str
    version: int | None
    created: bool
    num_files: int
    num_rows: int
    num_bytes: int
    layout: Mapping[str, str | None]
    note: str | None
    seconds: float


@dataclass(frozen=True)
class StagedWrite(PendingWrite):
    """Files Spark wrote for one write, with their ``add`` actions, not yet committed: the
    engine-neutral ``PendingWrite`` plus where Spark wrote them and what the write noted."""

    write_dir: str = ""
    started: float = 0.0
    note: str | None = None
    noop: bool = False
    storage: Storage | None = None  # the table's (varlake.table.locate); None: chosen from the path

    @property
    def path(self) -> str:
        return self.root

    @property
    def num_bytes(self) -> int:
        return sum(a.size for a in self.adds)


def write(
    df: Any,
    path: str | os.PathLike[str],
    mode: str = "append",
    partition_by: Sequence[str] = (),
    shredding: str = "auto",
    app_id: str | None = None,
    app_version: int | None = None,
    *,
    properties: Mapping[str, str] | None = None,
    sample: Any = None,
    sample_rows: int = SAMPLE_ROWS,
    storage_options: Mapping[str, str] | None = None,
) -> WriteResult:
    """Write ``df`` into the table at ``path`` (created if missing) as one new version.

    ``mode``: ``append``, ``overwrite`` or ``error`` (fail if the table exists).
    ``shredding``: ``auto`` (infer/evolve the table's schema from a sample), ``off``, or
    a shredding schema as Spark DDL for every Variant column. ``properties`` are used
    when the table is created. ``sample`` (a DataFrame with the Variant columns) is
    what ``auto`` infers from; default ``df.limit(sample_rows)``. ``path`` may be an
    object-store URI (``s3://bkt/t``, ``s3a://`` the same) reached with the environment's
    settings overridden by ``storage_options`` (see ``session.object_store``).
    """
    staged = stage_write(
        df, path, mode, partition_by, shredding, app_id=app_id, app_version=app_version,
        properties=properties, sample=sample, sample_rows=sample_rows, storage_options=storage_options,
    )
    return commit_write(staged, app_id=app_id, app_version=app_version)


# --- staging ----------------------------------------------------------------------------------------


def stage_write(
    df: Any,
    path: str | os.PathLike[str],
    mode: str = "append",
    partition_by: Sequence[str] = (),
    shredding: str = "auto",
    *,
    app_id: str | None = None,
    app_version: int | None = None,
    properties: Mapping[str, str] | None = None,
    sample: Any = None,
    sample_rows: int = SAMPLE_ROWS,
    storage: Storage | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> StagedWrite:
    """Run the Spark job that writes ``df``'s files and build their ``add`` actions, through
    the staging path every engine shares (``varlake.write.staging.stage``): Spark conforms,
    guards, samples and writes (``_SparkFiles``), the skeleton does the rest."""
    started = time.perf_counter()
    if mode not in MODES:
        raise TableError(f"write mode must be one of {MODES}, not {mode!r}")
    location = locate(path, storage, storage_options)  # the table's storage, chosen by varlake.table
    root, storage = location.root, location.storage
    reach(df.sparkSession, root, storage_options)  # Spark's S3A sees the store varlake sees
    snapshot = location.latest_snapshot()
    if snapshot is not None and mode == "error":
        raise TableExistsError(f"a table already exists at {root!r} (mode='error')")
    data_schema = to_delta_schema(df.schema)
    if snapshot is None:
        schema = nullable_schema(data_schema)
        partition_columns = tuple(partition_by)
        check_partition_columns(schema, partition_columns, root)
        create_props = new_table_properties(properties or {}, variant_columns(schema), shredding)
        schema, create_props = assign_column_mapping(schema, create_props, root)  # ids, physical names
        mode_name = requested_mode(create_props)
        mapping = ColumnMapping(mode_name, schema, root) if mode_name != "none" else None
        target = StageTarget(root, mode, None, schema, partition_columns, create_props, create_props, mapping)
    else:
        if app_id is not None and app_version is not None and (snapshot.app_version(app_id) or -1) >= app_version:
            return StagedWrite(
                root=root, mode=mode, schema=snapshot.schema, partition_columns=tuple(snapshot.partition_columns),
                snapshot=snapshot, create_properties={}, metadata=None, stored={}, layout={}, adds=(),
                write_dir="", started=started, noop=True, storage=storage,
            )
        target = StageTarget.of(root, mode, snapshot)
    engine = _SparkFiles(df.sparkSession, storage, data_schema, partition_by, sample, sample_rows)
    staged = stage(engine, target, df, shredding)
    pending = {f.name: getattr(staged.pending, f.name) for f in fields(PendingWrite)}
    return StagedWrite(**pending, write_dir=engine.write_dir, started=started, note=staged.plan.note, storage=storage)


class _SparkFiles:
    """Spark's part of staging (``varlake.write.staging.stage.FileEngine``): the DataFrame
    conformed to the table, guarded by its constraints inside the job, sampled for the
    shredding policy, and written by one Spark job into a fresh directory ``<root>/<uuid>/``;
    the footers are read on the driver, or on the executors for many files."""

    def __init__(
        self, spark: Any, storage: Storage, data_schema: StructType, partition_by: Sequence[str], sample: Any, sample_rows: int
    ) -> None:
        self.spark = spark
        self.storage = storage
        self.data_schema = data_schema
        self.partition_by = tuple(partition_by)
        self.sample = sample
        self.sample_rows = sample_rows
        self.write_dir = uuid.uuid4().hex
        self._tz: str | None = None

    def conform(self, df: Any, target: StageTarget) -> Any:
        if target.snapshot is None:  # the table is made from the DataFrame's schema
            return df
        root, partition_columns = target.root, target.partition_columns
        if self.partition_by and self.partition_by != partition_columns:
            raise TableError(f"{root}: the table is partitioned by {list(partition_columns)}, not {list(self.partition_by)}")
        return _conform(df, self.data_schema, target.schema, root)

    def guard(self, df: Any, target: StageTarget) -> Any:
        constraints = table_constraints(target.schema, target.properties, target.root)
        return _check_constraints(df, constraints, target.schema, target.root)

    def samples(self, df: Any, target: StageTarget, columns: Sequence[str], shredding: str) -> Mapping[str, Any] | None:
        """The Variants ``auto`` infers from: ``sample`` or ``df.limit(sample_rows)``, collected."""
        if not needs_samples(columns, target.properties, shredding):
            return None
        return _collect_samples(self.sample if self.sample is not None else df, columns, self.sample_rows)

    def write_files(self, df: Any, files: FilePlan) -> list[WrittenFile]:
        root = files.root
        checked = _check_binary_partitions(df, files.types)
        if files.mapping is not None:  # files under physical names with field ids (delta.column_mapping)
            checked = _physical_columns(checked, files.mapping)
        target = os.path.join(root, self.write_dir)
        try:
            _run_spark_write(
                checked, target, files.directories, files.physical_layout(), root, mapped=files.mapping is not None,
                annotate=files.annotate_variant,
            )
        except TableError as exc:
            found = _VIOLATION.search(str(exc.__cause__ or ""))
            if found is None:
                raise
            _remove_fresh(self.storage, target)  # a fresh directory of this write only
            raise ConstraintViolationError(f"{root}: {found.group(1)}") from None
        directory = f"{root}/{self.write_dir}"
        written, side = _data_files(self.storage, directory)
        for rel in side:  # Hadoop's .crc checksums and markers: ours, in our fresh directory
            self.storage.delete(f"{directory}/{rel}")
        return [WrittenFile(f"{self.write_dir}/{rel}") for rel in written]

    def file_facts(
        self,
        items: Sequence[tuple[str, str]],
        files: FilePlan,
        footers: Mapping[str, Any],
        known: Mapping[str, tuple[int, int]] | None = None,
    ) -> list[FileFacts]:
        """Spark wrote the files, so their sizes and times are looked up (``known`` is unused)."""
        schema_json = files.file_schema.to_schema_string()
        if len(items) > EXECUTOR_STATS_THRESHOLD:
            rows = _facts_on_executors(self.spark, self.storage, items, schema_json, files.indexed)
        else:
            rows = list(file_facts(self.storage, items, schema_json, files.indexed))
        return sorted(rows)  # type: ignore[arg-type]

    def partition_values(self, written: WrittenFile, files: FilePlan) -> Mapping[str, str | None]:
        """From Spark's directory names (physical on a column-mapped table), timestamps moved
        from the session zone to UTC."""
        if not files.directories:
            return {}
        if self._tz is None:
            self._tz = self.spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC"
        inner = written.relative[len(self.write_dir) + 1 :]
        types = partition_types(files.file_schema, files.directories)
        return partition_values.values_from_directory(inner, files.directories, types, self._tz, files.root)


def _check_binary_partitions(df: Any, types: Mapping[str, str]) -> Any:
    """``df`` failing its job on a binary partition value that is not UTF-8 (stored partition
    values are the bytes' UTF-8 text; Spark would silently replace such bytes)."""
    from pyspark.sql import functions as F

    binary = [c for c, t in types.items() if t == "binary"]
    if not binary:
        return df
    columns = []
    for name in df.columns:
        col = F.col(backquote(name))
        if name in binary:
            message = f"binary partition column {name!r} holds a value that is not UTF-8; it cannot be a partition value"
            ok = col.isNull() | F.is_valid_utf8(col.cast("string"))
            col = F.when(ok, col).otherwise(F.raise_error(F.lit(message)).cast("binary")).alias(name)
        columns.append(col)
    return df.select(*columns)


# --- constraints (the rule: varlake.write.staging.constraints) --------------------------------------------------

_MARK, _END = "<<varlake-constraint:", ":varlake-constraint>>"
_VIOLATION = re.compile(re.escape(_MARK) + "(.*?)" + re.escape(_END), re.S)


def _check_constraints(df: Any, constraints: Sequence[Constraint], schema: StructType, root: str) -> Any:
    """``df`` that fails its job (``raise_error``, Delta's message with the row's values) on
    the first row whose CHECK constraint or invariant is FALSE or NULL; Spark evaluates the
    SQL while it writes, so the data is computed once; a NULL in a NOT NULL column or struct
    field fails it the same way."""
    from pyspark.sql import functions as F

    checks = []
    for c in constraints:
        if c.kind == "not null":
            value = F.col(".".join(backquote(p) for p in c.column))
            failure = F.raise_error(F.lit(_MARK + violation_message(c, {}) + _END))
            checks.append(F.when(value.isNotNull(), F.lit(True)).otherwise(failure))
            continue
        parts = [F.lit(f"{_MARK}CHECK constraint {c.name} {c.expression} violated by row with values:")]
        for path in constraint_columns(c, schema):
            value = F.col(".".join(backquote(p) for p in path)).cast("string")
            parts += [F.lit(f"\n - {'.'.join(path)} : "), F.coalesce(value, F.lit("null"))]
        parts.append(F.lit(_END))
        try:
            holds = F.coalesce(F.expr(c.expression).cast("boolean"), F.lit(False))
        except Exception as exc:  # Spark cannot parse the constraint
            raise UnsupportedFeatureError(
                f"{root}: constraint {c.name} ({c.expression}) cannot be parsed: {_first_line(exc)}"
            ) from None
        checks.append(F.when(holds, F.lit(True)).otherwise(F.raise_error(F.concat(*parts))))
    if not checks:
        return df
    condition = checks[0]
    for check in checks[1:]:
        condition = condition & check
    try:
        return df.where(condition)
    except Exception as exc:  # analysis: unknown column, not a boolean ...
        raise UnsupportedFeatureError(
            f"{root}: the table's constraints cannot be evaluated by Spark: {_first_line(exc)}"
        ) from None


def _conform(df: Any, data: StructType, table: StructType, root: str) -> Any:
    """``df`` with the table's column order; missing nullable columns as NULL."""
    from pyspark.sql import functions as F

    extra = [n for n in data.names if n not in table.names]
    if extra:
        raise TableError(f"{root}: columns {extra} of the DataFrame are not in the table schema {list(table.names)}")
    columns = []
    for f in table.fields:
        if f.name not in data.names:
            if not f.nullable:
                raise TableError(f"{root}: NOT NULL column {f.name!r} is missing from the DataFrame")
            columns.append(F.lit(None).cast(to_spark_type(f.type)).alias(f.name))
            continue
        d = data.field(f.name)
        if not same_shape(d.type, f.type):
            raise TableError(
                f"{root}: column {f.name!r} has type {_type_text(d.type)} in the DataFrame but {_type_text(f.type)} in the table"
            )
        if _nulls_unchecked(d.type, f.type):  # NOT NULL columns and struct fields are checked per row
            raise TableError(
                f"{root}: column {f.name!r} may hold NULLs inside an array or map where the table declares them NOT NULL"
            )
        columns.append(F.col(backquote(f.name)))
    return df.select(*columns)


def _physical_columns(df: Any, mapping: ColumnMapping) -> Any:
    """``df`` (the table's logical columns) as its files hold it: every column and struct field
    under its physical name, ids as ``parquet.field.id`` metadata (Spark writes them as Parquet
    field ids), Variant groups as they are (``ColumnMapping.physical_field``)."""
    from pyspark.sql import functions as F

    data = to_delta_schema(df.schema)
    columns = []
    for f in data.fields:
        target = mapping.physical_field(f.name, f.type)
        spark_type = to_spark_type(target.type)
        columns.append(F.col(backquote(f.name)).cast(spark_type).alias(target.name, metadata=dict(target.metadata)))
    return df.select(*columns)


def _nulls_unchecked(data: Any, table: Any) -> bool:
    """Whether ``data`` may hold NULLs the table forbids where no NOT NULL constraint looks:
    Delta checks columns and struct fields per row, not array elements or map values."""
    if isinstance(data, StructType) and isinstance(table, StructType):
        return any(_nulls_unchecked(fd.type, ft.type) for fd, ft in zip(data.fields, table.fields))
    return not fits_nullability(data, table)


def _type_text(t: Any) -> str:
    value = t.to_json()
    return value if isinstance(value, str) else str(value)


# --- shredding layout --------------------------------------------------------------------------------


def _collect_samples(sample_df: Any, names: Sequence[str], rows: int) -> dict[str, list[Variant | None]]:
    """Variants of each column from the first ``rows`` rows of ``sample_df``."""
    from pyspark.sql import functions as F

    cols = [F.col(".".join(backquote(p) for p in n.split("."))).alias(f"c{i}") for i, n in enumerate(names)]
    try:
        collected = sample_df.select(*cols).limit(rows).collect()
    except Exception as exc:  # the sample runs the DataFrame: its failures surface here first
        raise TableError(f"the Spark job sampling {list(names)} for shredding failed, nothing was written: {_first_line(exc)}") from exc
    out: dict[str, list[Variant | None]] = {n: [] for n in names}
    for row in collected:
        for i, n in enumerate(names):
            v = row[i]
            out[n].append(None if v is None else Variant(bytes(v.metadata), bytes(v.value)))
    return out


# --- the Spark job -------------------------------------------------------------------------------------


SHREDDING_ATTRIBUTES = "org.apache.spark.sql.parquet.variant.shredding.attributes"


def shredded_file_schema(schema_json: Mapping[str, Any], layout: Mapping[str, str | None]) -> str:
    """The Parquet write schema Spark's write support takes (as JSON): ``schema_json``'s
    fields with each shredded Variant replaced by Spark's own shredded struct for its DDL
    (``types.shredded_struct_json``, built in Python: no JVM call, so Connect works too)."""
    structs: dict[str, Any] = {}

    def shredded(ddl: str) -> Any:
        if ddl not in structs:
            structs[ddl] = shredded_struct_json(ddl)
        return structs[ddl]

    def walk(fields: list[Mapping[str, Any]], prefix: tuple[str, ...]) -> list[dict[str, Any]]:
        out = []
        for f in fields:
            name = ".".join((*prefix, f["name"]))
            t = f["type"]
            if t == "variant" and layout.get(name):
                out.append({**f, "type": shredded(layout[name])})  # type: ignore[arg-type]
            elif isinstance(t, Mapping) and t.get("type") == "struct":
                out.append({**f, "type": {**t, "fields": walk(t["fields"], (*prefix, f["name"]))}})
            else:
                out.append(dict(f))
        return out

    return json.dumps({"type": "struct", "fields": walk(list(schema_json["fields"]), ())})


def _run_spark_write(
    df: Any, target: str, partition_columns: Sequence[str], layout: Mapping[str, str | None], root: str,
    *, mapped: bool = False, annotate: bool = True,
) -> None:
    shredded = any(layout.values())
    confs: dict[str, str | None] = {
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.variant.writeShredding.enabled": "true" if shredded else "false",
        "spark.sql.variant.inferShreddingSchema": "false",
        "spark.sql.variant.forceShreddingSchemaForTest": None,
    }
    if mapped:  # column mapping: StructField ids (parquet.field.id) become Parquet field ids
        confs["spark.sql.parquet.fieldId.write.enabled"] = "true"
    if not annotate:  # a varlake.compatibility table: Polars cannot parse the VARIANT annotation
        confs["spark.sql.parquet.variant.annotateLogicalType.enabled"] = "false"
    writer = (
        df.write.format("parquet")
        .mode("error")  # "errorifexists" in classic; the Connect client knows only "error"
        .option("compression", "zstd")
        .option("mapreduce.fileoutputcommitter.algorithm.version", "2")
        .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
        .options(**PARQUET_WRITE_OPTIONS)
    )
    if "://" not in target:
        # no hidden .crc side files: a failed job leaves only files vacuum can see. Local
        # tables only: S3A buffers uploads in local files through the checksummed file system.
        writer = writer.option("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem").option(
            "fs.file.impl.disable.cache", "true"
        )
    if shredded:
        schema_json = df.schema.jsonValue()
        data = {**schema_json, "fields": [f for f in schema_json["fields"] if f["name"] not in partition_columns]}
        writer = writer.option(SHREDDING_ATTRIBUTES, shredded_file_schema(data, layout))
    if partition_columns:
        writer = writer.partitionBy(*partition_columns)
    with _WRITE_LOCK, spark_conf(df.sparkSession, confs):
        try:
            writer.save(target)
        except Exception as exc:  # any Spark failure: nothing is committed
            raise TableError(
                f"{root}: the Spark job writing {os.path.basename(target)}/ failed, nothing was committed: {_first_line(exc)}"
            ) from exc


def _first_line(exc: BaseException) -> str:
    return spark_error_summary(exc)


# --- files -> add actions ------------------------------------------------------------------------------


def _remove_fresh(storage: Storage, directory: str) -> None:
    """Remove the files of a failed write's own fresh directory (and, locally, the folders)."""
    try:
        for info in storage.walk(directory):
            storage.delete(info.path)
    except (OSError, StorageError):
        pass
    if "://" not in directory:
        shutil.rmtree(directory, ignore_errors=True)


def _data_files(storage: Storage, directory: str) -> tuple[list[str], list[str]]:
    """Parquet files below ``directory`` (relative, sorted) and Hadoop side files to drop;
    anything inside hidden or ``_`` directories is not ours to take."""
    files, side = [], []
    for info in storage.walk(directory):
        rel = info.path[len(directory.rstrip("/")) + 1 :]
        parts = rel.split("/")
        if any(p.startswith(("_", ".")) for p in parts[:-1]):
            continue
        if parts[-1].startswith(("_", ".")):
            side.append(rel)
        elif parts[-1].endswith(".parquet"):
            files.append(rel)
    return sorted(files), side


_FACTS_SCHEMA = "relative string, size bigint, mtime bigint, num_rows bigint, stats string, layout string"


def _facts_on_executors(
    spark: Any, storage: Storage, items: Sequence[tuple[str, str]], schema_json: str, indexed: int
) -> list[tuple[Any, ...]]:
    """``file_facts`` of every file, computed by the executors as one DataFrame job (works on
    classic and Spark Connect sessions alike): ``spark.range`` over the file indexes, split
    in as many partitions as the application has cores, each partition reading its files'
    footers in ``mapInArrow``."""
    listed = list(items)

    def facts(batches: Any) -> Any:
        import pyarrow as pa

        for batch in batches:
            part = [listed[i] for i in batch.column(0).to_pylist()]
            rows = list(file_facts(storage, part, schema_json, indexed))
            columns = list(zip(*rows)) if rows else [[] for _ in range(6)]
            types = [pa.string(), pa.int64(), pa.int64(), pa.int64(), pa.string(), pa.string()]
            yield pa.RecordBatch.from_arrays(
                [pa.array(list(c), t) for c, t in zip(columns, types)],
                ["relative", "size", "mtime", "num_rows", "stats", "layout"],
            )

    try:
        frame = spark.range(len(listed)).mapInArrow(facts, _FACTS_SCHEMA)
        return [tuple(row) for row in frame.collect()]
    except Exception as exc:  # a footer that cannot be read: the files stay unreferenced
        raise TableError(f"the Spark job computing file statistics failed, nothing was committed: {_first_line(exc)}") from exc


# --- commit ---------------------------------------------------------------------------------------------


def commit_write(staged: StagedWrite, *, app_id: str | None = None, app_version: int | None = None) -> WriteResult:
    """Commit the staged files as one table version (creating the table first if new),
    through ``varlake.write.commit_write``.

    If a concurrent writer committed first, an append is rebased on its version as long
    as the table still stores the shredding schemas these files were written with;
    otherwise ``CommitConflictError`` and the table stays as the winner left it.
    """
    if staged.noop:
        return _result(staged, None, False)
    done = commit_pending(locate(staged.path, staged.storage).log(), staged, app_id=app_id, app_version=app_version)
    return _result(staged, done.version, done.created)


def _result(staged: StagedWrite, version: int | None, created: bool) -> WriteResult:
    return WriteResult(
        path=staged.path,
        version=version,
        created=created,
        num_files=len(staged.adds),
        num_rows=staged.num_rows,
        num_bytes=staged.num_bytes,
        layout=dict(staged.layout),
        note=staged.note,
        seconds=time.perf_counter() - staged.started,
    )
