"""Write a Spark DataFrame into a varlake (Delta) table: Spark writes, varlake commits.

A write has two phases, ``stage_write`` and ``commit_write`` (``write`` runs both):

1. *Stage.* Open the table (or plan to create it from ``df.schema``), check the
   DataFrame against the table schema, decide the shredding layout, and let Spark
   write Parquet natively -- Variant columns stay Spark ``VariantType`` -- into a fresh
   directory ``<root>/<uuid>/`` (Hive-style ``col=value/`` below it when the table is
   partitioned). The driver then reads each new file's footer for its Delta stats
   (``delta.stats``; on the executors, through an RDD over the file list, when there
   are more than ``EXECUTOR_STATS_THRESHOLD`` files) and builds the ``add`` actions.
2. *Commit.* Create the table if it is new, then commit ONE version through
   ``Table.commit_files`` holding the ``add``s and, when the shredding schema changed,
   the new ``metaData``.

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
fed to ``Table.evolve_shredding``), so later writes keep the layout and only evolve
it when the data changes; the new schema rides along in the commit as ``metaData``.

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
in case, and for Variants inside arrays or maps (those have no stored schema).
``shredding="off"``, or a table without ``delta.enableVariantShredding=true``, gives
unshredded files (``writeShredding.enabled=false``).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from varlake.delta.actions import AddFile, Metadata
from varlake.delta.config import is_true
from varlake.delta.schema import PrimitiveType, StructType, parse_schema
from varlake.delta.snapshot import Snapshot
from varlake.delta.stats import stats_json
from varlake.errors import (
    CommitConflictError,
    ShreddingSchemaError,
    TableError,
    TableExistsError,
    TableNotFoundError,
)
from varlake.shred.schema import ShreddingSchema
from varlake.spark.session import spark_conf, spark_error_summary
from varlake.spark.types import (
    fits_nullability,
    nullable_schema,
    same_type,
    to_delta_schema,
    to_spark_type,
    variant_leaves,
)
from varlake.table import ENABLE_SHREDDING, SHREDDING_PROPERTY, Table, evolve_stable_ddl, num_indexed_cols
from varlake.variant import Variant

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
SAMPLE_ROWS = 10_000
MAX_REBASES = 5
MODES = ("append", "overwrite", "error")
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
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
class StagedWrite:
    """Files Spark wrote for one write, with their ``add`` actions, not yet committed."""

    path: str
    mode: str
    schema: StructType
    partition_columns: tuple[str, ...]
    snapshot: Snapshot | None  # None: the table is created at commit
    create_properties: Mapping[str, str]
    metadata: Metadata | None  # a metaData change to commit with the files
    stored: Mapping[str, str]  # shredding DDL per Variant column after the commit ("" = none)
    layout: Mapping[str, str | None]  # DDL the files were shredded with, per Variant column
    adds: tuple[AddFile, ...]
    write_dir: str
    started: float
    note: str | None = None
    noop: bool = False

    @property
    def num_rows(self) -> int:
        return sum(a.num_records or 0 for a in self.adds)

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
) -> WriteResult:
    """Write ``df`` into the table at ``path`` (created if missing) as one new version.

    ``mode``: ``append``, ``overwrite`` or ``error`` (fail if the table exists).
    ``shredding``: ``auto`` (infer/evolve the table's schema from a sample), ``off``, or
    a shredding schema as Spark DDL for every Variant column. ``properties`` are used
    when the table is created. ``sample`` (a DataFrame with the Variant columns) is
    what ``auto`` infers from; default ``df.limit(sample_rows)``.
    """
    staged = stage_write(
        df, path, mode, partition_by, shredding, app_id=app_id, app_version=app_version,
        properties=properties, sample=sample, sample_rows=sample_rows,
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
) -> StagedWrite:
    """Run the Spark job that writes ``df``'s files and build their ``add`` actions."""
    started = time.perf_counter()
    if mode not in MODES:
        raise TableError(f"write mode must be one of {MODES}, not {mode!r}")
    root = os.path.abspath(os.fspath(path))
    table = _open(root)
    if table is not None and mode == "error":
        raise TableExistsError(f"a table already exists at {root!r} (mode='error')")
    data_schema = to_delta_schema(df.schema)
    if table is None:
        snapshot = None
        schema = nullable_schema(data_schema)
        partition_columns = tuple(partition_by)
        _check_partition_columns(schema, partition_columns, root)
        create_props = dict(properties or {})
        if shredding != "off" and variant_leaves(schema):
            create_props.setdefault(ENABLE_SHREDDING, "true")
        current_props: Mapping[str, str] = create_props
    else:
        snapshot = table.snapshot()
        if app_id is not None and app_version is not None and (snapshot.app_version(app_id) or -1) >= app_version:
            return StagedWrite(
                path=root, mode=mode, schema=snapshot.schema, partition_columns=tuple(snapshot.partition_columns),
                snapshot=snapshot, create_properties={}, metadata=None, stored={}, layout={}, adds=(),
                write_dir="", started=started, noop=True,
            )
        schema = snapshot.schema
        partition_columns = tuple(snapshot.partition_columns)
        if partition_by and tuple(partition_by) != partition_columns:
            raise TableError(f"{root}: the table is partitioned by {list(partition_columns)}, not {list(partition_by)}")
        df = _conform(df, data_schema, schema, root)
        create_props = {}
        current_props = snapshot.properties
    plan = _plan_layout(df, table, snapshot, schema, current_props, shredding, sample, sample_rows, root)
    if table is None:
        create_props.update({SHREDDING_PROPERTY + c: d for c, d in plan.stored.items() if d})

    write_dir = uuid.uuid4().hex
    _run_spark_write(df, os.path.join(root, write_dir), partition_columns, plan.layout, root)
    indexed = num_indexed_cols(current_props)
    adds = _build_adds(df.sparkSession, root, write_dir, schema, partition_columns, indexed)
    return StagedWrite(
        path=root,
        mode=mode,
        schema=schema,
        partition_columns=partition_columns,
        snapshot=snapshot,
        create_properties=create_props,
        metadata=plan.metadata,
        stored=plan.stored,
        layout=plan.layout,
        adds=tuple(adds),
        write_dir=write_dir,
        started=started,
        note=plan.note,
    )


def _open(root: str) -> Table | None:
    try:
        return Table(root)
    except TableNotFoundError:
        return None


def _check_partition_columns(schema: StructType, columns: Sequence[str], root: str) -> None:
    if len(set(columns)) != len(columns):
        raise TableError(f"{root}: duplicate partition columns {list(columns)}")
    for name in columns:
        try:
            t = schema.field(name).type
        except KeyError:
            raise TableError(f"{root}: partition column {name!r} is not a column of the DataFrame {list(schema.names)}") from None
        if not isinstance(t, PrimitiveType) or t.name in ("binary", "void"):
            raise TableError(f"{root}: partition column {name!r} has type {t.to_json()}; partition by a primitive column")


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
        if not same_type(d.type, f.type):
            raise TableError(
                f"{root}: column {f.name!r} has type {_type_text(d.type)} in the DataFrame but {_type_text(f.type)} in the table"
            )
        if (d.nullable and not f.nullable) or not fits_nullability(d.type, f.type):
            raise TableError(f"{root}: column {f.name!r} may hold NULLs but the table declares it NOT NULL")
        columns.append(F.col(f"`{f.name}`"))
    return df.select(*columns)


def _type_text(t: Any) -> str:
    value = t.to_json()
    return value if isinstance(value, str) else str(value)


# --- shredding layout --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    layout: dict[str, str | None]
    stored: dict[str, str]
    metadata: Metadata | None
    note: str | None


def _plan_layout(
    df: Any,
    table: Table | None,
    snapshot: Snapshot | None,
    schema: StructType,
    props: Mapping[str, str],
    shredding: str,
    sample: Any,
    sample_rows: int,
    root: str,
) -> _Layout:
    names = [".".join(p) for p in variant_leaves(schema)]
    current = {n: props.get(SHREDDING_PROPERTY + n, "") for n in names}
    if not names:
        return _Layout({}, {}, None, None)
    if shredding == "off" or not is_true(props, ENABLE_SHREDDING):
        if shredding not in ("off", "auto"):
            raise TableError(f"{root}: a shredding schema was given but the table does not set {ENABLE_SHREDDING}=true")
        return _Layout({n: None for n in names}, current, None, None)
    metadata: Metadata | None = None
    if shredding == "auto":
        samples = _collect_samples(sample if sample is not None else df, names, sample_rows)
        if snapshot is not None and table is not None:
            metadata = table.evolve_shredding(samples, snapshot)
            stored = {n: metadata.configuration.get(SHREDDING_PROPERTY + n, "") for n in names}
        else:
            stored = {n: _inferred_ddl(s) for n, s in samples.items()}
    else:
        try:
            ddl = ShreddingSchema.parse(shredding).ddl
        except ShreddingSchemaError as exc:
            raise ShreddingSchemaError(f"{root}: shredding schema {shredding!r}: {exc}") from None
        blocked = _unshreddable_reason(ddl)
        if blocked:
            raise TableError(f"{root}: cannot write shredding schema {shredding!r} with Spark: {blocked}")
        stored = {n: ddl for n in names}
        if snapshot is not None and stored != current:
            cfg = dict(snapshot.metadata.configuration)
            cfg.update({SHREDDING_PROPERTY + n: d for n, d in stored.items()})
            metadata = replace(snapshot.metadata, configuration=cfg)
    layout: dict[str, str | None] = {}
    notes = []
    for n, ddl in stored.items():
        blocked = _unshreddable_reason(ddl) if ddl else None
        layout[n] = ddl if ddl and not blocked else None
        if blocked:
            notes.append(f"{n} written unshredded: {blocked}")
    return _Layout(layout, stored, _changed(metadata, snapshot), "; ".join(notes) or None)


def _changed(metadata: Metadata | None, snapshot: Snapshot | None) -> Metadata | None:
    if metadata is None or snapshot is None or metadata is snapshot.metadata or metadata == snapshot.metadata:
        return None
    return metadata


def _unshreddable_reason(ddl: str) -> str | None:
    schema = ShreddingSchema.parse(ddl)
    for path, t in schema.leaves():
        if pa.types.is_time(t) or isinstance(t, pa.ExtensionType) or (pa.types.is_timestamp(t) and t.unit != "us"):
            where = ".".join("[]" if p is None else p for p in path) or "$"
            return f"leaf {where} has type {t}, which Spark cannot shred"

    def clash(t: pa.DataType) -> str | None:
        if pa.types.is_struct(t):
            seen: set[str] = set()
            for f in t:
                if f.name.lower() in seen:
                    return f"fields that differ only in case ({f.name!r}) cannot be shredded by Spark"
                seen.add(f.name.lower())
                found = clash(f.type)
                if found:
                    return found
        elif pa.types.is_list(t):
            return clash(t.value_type)
        return None

    return clash(schema.arrow_type)


def _inferred_ddl(sample: list[Variant | None]) -> str:
    """The schema a new table starts with (as ``Table.evolve_shredding`` would store it)."""
    return evolve_stable_ddl(None, sample)


def _collect_samples(sample_df: Any, names: Sequence[str], rows: int) -> dict[str, list[Variant | None]]:
    """Variants of each column from the first ``rows`` rows of ``sample_df``."""
    from pyspark.sql import functions as F

    cols = [F.col(".".join(f"`{p}`" for p in n.split("."))).alias(f"c{i}") for i, n in enumerate(names)]
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


def shredded_file_schema(spark: Any, schema_json: Mapping[str, Any], layout: Mapping[str, str | None]) -> str:
    """The Parquet write schema Spark's write support takes (as JSON): ``schema_json``'s
    fields with each shredded Variant replaced by Spark's own shredded struct for its DDL."""
    jvm = spark._jvm
    utils = jvm.org.apache.spark.sql.execution.datasources.parquet.SparkShreddingUtils
    structs: dict[str, Any] = {}

    def shredded(ddl: str) -> Any:
        if ddl not in structs:
            struct = utils.variantShreddingSchema(jvm.org.apache.spark.sql.types.DataType.fromDDL(ddl), True, False)
            structs[ddl] = json.loads(utils.addWriteShreddingMetadata(struct).json())
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
    df: Any, target: str, partition_columns: Sequence[str], layout: Mapping[str, str | None], root: str
) -> None:
    shredded = any(layout.values())
    confs: dict[str, str | None] = {
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.variant.writeShredding.enabled": "true" if shredded else "false",
        "spark.sql.variant.inferShreddingSchema": "false",
        "spark.sql.variant.forceShreddingSchemaForTest": None,
    }
    writer = (
        df.write.format("parquet")
        .mode("errorifexists")
        .option("compression", "zstd")
        .option("mapreduce.fileoutputcommitter.algorithm.version", "2")
        .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
        # no hidden .crc side files: a failed job leaves only files vacuum can see
        .option("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
        .option("fs.file.impl.disable.cache", "true")
    )
    if shredded:
        schema_json = df.schema.jsonValue()
        data = {**schema_json, "fields": [f for f in schema_json["fields"] if f["name"] not in partition_columns]}
        writer = writer.option(SHREDDING_ATTRIBUTES, shredded_file_schema(df.sparkSession, data, layout))
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


def _data_files(directory: str) -> tuple[list[str], list[str]]:
    """Parquet files below ``directory`` (relative, sorted) and Hadoop side files to drop."""
    files, side = [], []
    for base, dirs, names in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        for name in names:
            rel = os.path.relpath(os.path.join(base, name), directory).replace(os.sep, "/")
            if name.startswith(("_", ".")):
                side.append(rel)
            elif name.endswith(".parquet"):
                files.append(rel)
    return sorted(files), side


def _unescape(text: str) -> str:
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)


def _partition_values(rel: str, columns: Sequence[str], schema: StructType, tz: str, where: str) -> dict[str, str | None]:
    parts = rel.split("/")[:-1]
    if len(parts) != len(columns):
        raise TableError(f"{where}: file {rel!r} is not inside one directory per partition column {list(columns)}")
    out: dict[str, str | None] = {}
    for part, column in zip(parts, columns):
        key, sep, raw = part.partition("=")
        if not sep or _unescape(key) != column:
            raise TableError(f"{where}: directory {part!r} of {rel!r} is not the partition column {column!r}")
        value = None if raw == HIVE_NULL else _unescape(raw)
        t = schema.field(column).type
        if value is not None and isinstance(t, PrimitiveType) and t.name == "timestamp":
            value = _utc_timestamp_text(value, tz, f"{where}: partition directory {part!r}")
        out[column] = value
    return out


def _utc_timestamp_text(local: str, tz: str, where: str) -> str:
    """Spark names timestamp partitions in the session time zone; Delta wants UTC."""
    import datetime as dt
    from zoneinfo import ZoneInfo

    try:
        naive = dt.datetime.fromisoformat(local)
        zone = ZoneInfo(tz) if tz not in ("UTC", "Z") else dt.timezone.utc
    except (ValueError, KeyError) as exc:
        raise TableError(f"{where}: cannot read timestamp {local!r} in time zone {tz!r}: {exc}") from None
    early = naive.replace(tzinfo=zone, fold=0).astimezone(dt.timezone.utc)
    late = naive.replace(tzinfo=zone, fold=1).astimezone(dt.timezone.utc)
    if early != late:
        raise TableError(f"{where}: local time {local!r} is ambiguous in {tz!r}; write timestamp partitions with a UTC session time zone")
    text = early.replace(tzinfo=None).isoformat(" ")
    return text


def file_stats(items: Iterable[tuple[str, str]], schema_json: str, indexed: int) -> Iterator[tuple[str, int, int, int, str]]:
    """``(relative path, size, mtime ms, rows, stats JSON)`` of each ``(relative, absolute)`` file.

    Runs on the driver or, through an RDD, on executors (it only needs the file system).
    """
    import pyarrow.parquet as pq

    schema = parse_schema(schema_json)
    for rel, full in items:
        meta = pq.read_metadata(full)
        st = os.stat(full)
        yield rel, st.st_size, int(st.st_mtime * 1000), meta.num_rows, stats_json(meta, schema, indexed)


def _build_adds(
    spark: Any, root: str, write_dir: str, schema: StructType, partition_columns: Sequence[str], indexed: int
) -> list[AddFile]:
    directory = os.path.join(root, write_dir)
    files, side = _data_files(directory) if os.path.isdir(directory) else ([], [])
    for rel in side:  # Hadoop's .crc checksums and markers: ours, in our fresh directory
        try:
            os.remove(os.path.join(directory, rel))
        except OSError:
            pass
    items = [(f"{write_dir}/{rel}", os.path.join(directory, rel)) for rel in files]
    schema_json = schema.to_schema_string()
    if len(items) > EXECUTOR_STATS_THRESHOLD:
        slices = min(len(items), max(1, spark.sparkContext.defaultParallelism * 2))
        rows = (
            spark.sparkContext.parallelize(items, slices)
            .mapPartitions(lambda part: file_stats(part, schema_json, indexed))
            .collect()
        )
    else:
        rows = list(file_stats(items, schema_json, indexed))
    tz = spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC"
    adds, empty = [], []
    for rel, size, mtime, num_rows, stats in sorted(rows):
        if num_rows == 0:
            empty.append(rel)
            continue
        inner = rel[len(write_dir) + 1 :]
        values = _partition_values(inner, partition_columns, schema, tz, root) if partition_columns else {}
        adds.append(
            AddFile(
                path=quote(rel),
                size=size,
                partition_values=values,
                modification_time=mtime,
                data_change=True,
                stats=stats,
            )
        )
    for rel in empty:  # Spark writes a header-only file for an empty DataFrame
        try:
            os.remove(os.path.join(root, rel))
        except OSError:
            pass
    return adds


# --- commit ---------------------------------------------------------------------------------------------


def commit_write(staged: StagedWrite, *, app_id: str | None = None, app_version: int | None = None) -> WriteResult:
    """Commit the staged files as one table version (creating the table first if new).

    If a concurrent writer committed first, an append is rebased on its version as long
    as the table still stores the shredding schemas these files were written with;
    otherwise ``CommitConflictError`` and the table stays as the winner left it.
    """
    if staged.noop:
        return _result(staged, None, False)
    created = False
    if staged.snapshot is None:
        try:
            table = Table.create(staged.path, staged.schema, staged.partition_columns, staged.create_properties)
            created = True
        except TableExistsError:
            if staged.mode == "error":
                raise
            table = Table(staged.path)
        snapshot = table.snapshot()
        metadata = None if created else _adopt_concurrent_table(table, snapshot, staged)
    else:
        table = Table(staged.path)
        snapshot = staged.snapshot
        metadata = staged.metadata
    mode = "append" if staged.mode == "error" else staged.mode
    for _attempt in range(MAX_REBASES + 1):
        actions: list[Any] = ([metadata] if metadata is not None else []) + list(staged.adds)
        try:
            result = table.commit_files(
                actions, mode, snapshot, app_id=app_id, app_version=app_version, num_rows=staged.num_rows
            )
            return _result(staged, result.version, created)
        except CommitConflictError as exc:
            if mode != "append":
                raise
            latest = table.snapshot()
            if _stored(latest, staged) != dict(staged.stored):
                raise CommitConflictError(
                    f"{staged.path}: a concurrent commit changed the table's shredding schemas while this write "
                    f"used {dict(staged.stored)}; nothing was committed, write again ({exc})"
                ) from exc
            snapshot, metadata = latest, None
    raise CommitConflictError(f"{staged.path}: gave up after {MAX_REBASES} rebases on concurrent commits")


def _stored(snapshot: Snapshot, staged: StagedWrite) -> dict[str, str]:
    props = snapshot.properties
    return {n: props.get(SHREDDING_PROPERTY + n, "") for n in staged.stored}


def _metadata_with(snapshot: Snapshot, staged: StagedWrite) -> Metadata:
    cfg = dict(snapshot.metadata.configuration)
    cfg.update({SHREDDING_PROPERTY + n: d for n, d in staged.stored.items()})
    return replace(snapshot.metadata, configuration=cfg)


def _adopt_concurrent_table(table: Table, snapshot: Snapshot, staged: StagedWrite) -> Metadata | None:
    """The table this write meant to create was created concurrently: check the staged
    files fit it; the metadata change they need, if any."""
    where = f"{staged.path}: the table was created concurrently"
    if not same_type(snapshot.schema, staged.schema) or tuple(snapshot.partition_columns) != staged.partition_columns:
        raise CommitConflictError(f"{where} with another schema or partitioning; nothing was committed")
    if any(staged.layout.values()) and not is_true(snapshot.properties, ENABLE_SHREDDING):
        raise CommitConflictError(f"{where} without {ENABLE_SHREDDING}; these shredded files cannot join it")
    if _stored(snapshot, staged) == dict(staged.stored):
        return None
    if snapshot.num_files:
        raise CommitConflictError(f"{where} with files of another shredding schema; nothing was committed")
    return _metadata_with(snapshot, staged)


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
