"""The comparison harness: storages, loading, timed runs, bytes read, answer checks, results.

Every storage holds the same documents (loaded from one set of JSON Lines files) and
answers the same queries in its own dialect (``workloads.spec.Dialect``):

=====================  ==================================================================
``json_strings``       (a) Parquet with the raw JSON text; ``get_json_object``/``from_json``
``spark_variant``      (b) Spark ``parse_json`` -> Parquet Variant, unshredded
``spark_shredded``     (c) the same, shredded by Spark's own per-file schema inference
``varlake``            (d) a varlake table (``varlake.spark.write``) read by its planner
                           (``varlake.spark.sql``)
``relational``         (e) typed, flattened columns and arrays of structs (the reference)
``duckdb``             (f) DuckDB over the files of (d); ``duckdb_spark_shredded`` over (c)
=====================  ==================================================================

Timing: each (storage, query) gets one warm-up run (Spark's JIT compiles on first use;
its time is kept as ``first_run_seconds``) and then ``runs`` timed runs whose median is
the figure. Run ``i`` uses the query's literal set ``i`` (workloads rotate TPC-H's
substitution parameters), so no result can be reused; no engine here has a result
cache, nothing is ``.cache()``d, and every storage's files are equally warm in the OS
page cache (each was just written), so the runs are *warm* runs for all.

Bytes read: Spark's task input metrics (``inputBytes`` of every stage of the query's
jobs, read from the status store under a job group per run; Hadoop's vectored reads
bypass those counters, so the harness switches them off for its run: ``RUN_CONF``);
DuckDB's profiler (``io.total_bytes_read``) on its untimed warm-up run. The figure is
the median over the runs that measured it.

Answers: every run's rows are compared, with a float tolerance, to the reference
storage's rows for the same literal set; a mismatch is recorded and fails the run.
"""

from __future__ import annotations

import abc
import datetime as dt
import decimal
import itertools
import json
import math
import os
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from source_cache import cached_source  # noqa: F401 -- harness.cached_source, as callers know it
from workloads.spec import Dialect, Query, Source, Workload

STORAGE_KEYS = ("json_strings", "spark_variant", "spark_shredded", "varlake", "relational", "duckdb")
REFERENCE = "relational"
BASELINE = "json_strings"
REL_TOL = 1e-6
ABS_TOL = 1e-6


class BenchmarkError(RuntimeError):
    """A storage could not be loaded or queried, or answered differently from the reference."""


# --- results --------------------------------------------------------------------------------------


@dataclass
class QueryResult:
    """Timings and bytes read of one query on one storage."""

    seconds: list[float] = field(default_factory=list)
    first_run_seconds: float = 0.0
    bytes_read: list[int] = field(default_factory=list)
    rows: int = 0
    error: str | None = None
    #: how the engine read the data (varlake: the planner's read path per file group)
    note: str = ""
    #: varlake: time to plan the query alone (log, statistics, footers, SQL rewrite), warm
    plan_seconds: float | None = None

    @property
    def median_seconds(self) -> float:
        return statistics.median(self.seconds) if self.seconds else math.nan

    @property
    def median_bytes(self) -> int | None:
        return int(statistics.median(self.bytes_read)) if self.bytes_read else None

    def to_json(self) -> dict[str, Any]:
        return {"median_seconds": _round(self.median_seconds), "seconds": [_round(s) for s in self.seconds],
                "first_run_seconds": _round(self.first_run_seconds), "bytes_read": self.median_bytes,
                "rows": self.rows, "error": self.error, "note": self.note,
                "plan_seconds": _round(self.plan_seconds)}


@dataclass
class StorageResult:
    """One storage's loading figures and per-query results for one workload."""

    key: str
    label: str
    dialect: str
    engine: str
    load_seconds: float | None = None
    bytes_on_disk: int | None = None
    compression: str = ""
    files: int | None = None
    note: str = ""
    queries: dict[str, QueryResult] = field(default_factory=dict)
    error: str | None = None

    @property
    def total_seconds(self) -> float:
        values = [q.median_seconds for q in self.queries.values()]
        return sum(values) if values and not any(math.isnan(v) for v in values) else math.nan

    @property
    def total_bytes(self) -> int | None:
        values = [q.median_bytes for q in self.queries.values()]
        return sum(v for v in values if v is not None) if values and None not in values else None

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label, "dialect": self.dialect, "engine": self.engine,
            "load_seconds": _round(self.load_seconds), "bytes_on_disk": self.bytes_on_disk, "files": self.files,
            "compression": self.compression,
            "note": self.note, "error": self.error,
            "queries": {name: q.to_json() for name, q in self.queries.items()},
            "total": {"median_seconds": _round(self.total_seconds), "bytes_read": self.total_bytes},
        }


@dataclass
class WorkloadResult:
    name: str
    title: str
    source: Source
    queries: list[Query]
    storages: dict[str, StorageResult] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)
    #: wall seconds of each phase of the run ("load <storage>", "round <i>"), where the time went
    phases: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "title": self.title,
            "source": {"rows": self.source.rows, "bytes": self.source.bytes, "files": len(self.source.paths),
                       "generate_seconds": _round(self.source.seconds), **dict(self.source.details)},
            "queries": {q.name: q.title for q in self.queries},
            "answers_match": not self.mismatches,
            "mismatches": self.mismatches,
            "phase_seconds": {k: _round(v) for k, v in self.phases.items()},
        }
        order = {key: i for i, key in enumerate((*STORAGE_KEYS, "duckdb_spark_shredded", "delta_spark"))}
        for key in sorted(self.storages, key=lambda k: order.get(k, len(order))):
            out[key] = self.storages[key].to_json()
        return out


def _round(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else round(x, 4)


# --- answers ----------------------------------------------------------------------------------------


def canonical_value(value: Any, engine: str) -> Any:
    """A value both engines agree on: numbers as float, dates ISO, timestamps epoch microseconds.

    PySpark hands timestamps back as naive datetimes in the *Python process's* local zone;
    DuckDB as naive UTC datetimes. Both become epoch microseconds.
    """
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, (int, float, decimal.Decimal)):
        return float(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is None and engine == "duckdb":
            value = value.replace(tzinfo=dt.timezone.utc)
        return round(value.timestamp() * 1_000_000)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return tuple(canonical_value(v, engine) for v in value)
    return str(value)


def canonical_rows(rows: Sequence[Sequence[Any]], engine: str) -> list[tuple[Any, ...]]:
    return [tuple(canonical_value(v, engine) for v in row) for row in rows]


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def compare_rows(expected: list[tuple[Any, ...]], got: list[tuple[Any, ...]]) -> str | None:
    """``None`` when equal (in order; every query has a total ORDER BY), else what differs."""
    if len(expected) != len(got):
        return f"{len(got)} rows, expected {len(expected)}"
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        if not same_value(e, g):
            return f"row {i}: {g!r}, expected {e!r}"
    return None


# --- Spark bytes read -------------------------------------------------------------------------------


class SparkIO:
    """Runs Spark actions under a fresh job group and reads back the bytes their stages read."""

    _ids = itertools.count()

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.sc = spark.sparkContext
        self._jsc = self.sc._jsc.sc()

    def run(self, action: Callable[[], Any], label: str) -> tuple[Any, float, int]:
        """(result, seconds, input bytes) of ``action``."""
        group = f"varlake-bench-{os.getpid()}-{next(self._ids)}"
        self.sc.setJobGroup(group, label[:200], interruptOnCancel=False)
        try:
            start = time.perf_counter()
            result = action()
            seconds = time.perf_counter() - start
        finally:
            self.sc.setLocalProperty("spark.jobGroup.id", None)
            self.sc.setLocalProperty("spark.job.description", None)
        return result, seconds, self.input_bytes(group)

    def input_bytes(self, group: str) -> int:
        from py4j.protocol import Py4JJavaError

        self._jsc.listenerBus().waitUntilEmpty()
        store = self._jsc.statusStore()
        total = 0
        for job_id in self.sc.statusTracker().getJobIdsForGroup(group):
            stage_ids = store.job(job_id).stageIds().iterator()
            while stage_ids.hasNext():
                try:
                    total += int(store.lastStageAttempt(stage_ids.next()).inputBytes())
                except Py4JJavaError:  # a skipped stage has no attempt: it read nothing
                    continue
        return total


@contextmanager
def spark_conf(spark: Any, settings: Mapping[str, str]) -> Iterator[None]:
    """Session confs for a block (restored after), e.g. Spark's shredding switches for a write."""
    previous = {k: spark.conf.get(k, None) for k in settings}
    try:
        for k, v in settings.items():
            spark.conf.set(k, v)
        yield
    finally:
        for k, v in previous.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


#: session confs the harness sets for its run: Hadoop's vectored Parquet reads bypass the task
#: input metrics (SQL confs reach the readers' Hadoop configuration), and hours are UTC hours
RUN_CONF = {"parquet.hadoop.vectored.io.enabled": "false", "spark.sql.session.timeZone": "UTC"}


def dir_size(path: Path) -> tuple[int, int]:
    """(bytes, data files) under ``path``."""
    size = files = 0
    for p in path.rglob("*"):
        if p.is_file():
            size += p.stat().st_size
            files += p.suffix == ".parquet"
    return size, files


# --- storages ---------------------------------------------------------------------------------------


class Storage(abc.ABC):
    """One way of storing the documents; subclasses load them and run rendered SQL."""

    key = ""
    label = ""
    dialect = Dialect.VARIANT
    engine = "spark"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / self.key
        self.result = StorageResult(self.key, self.label, self.dialect.value, self.engine)

    @abc.abstractmethod
    def load(self, source: Source, workload: Workload) -> None:
        """Store the documents of ``source`` this storage's way."""

    @abc.abstractmethod
    def table_ref(self) -> str:
        """What the workload's SQL names the table as."""

    @abc.abstractmethod
    def execute(self, sql: str, label: str, warm_up: bool = False) -> tuple[list[tuple[Any, ...]], float, int | None]:
        """(canonical rows, seconds, bytes read or None when this run did not measure them).

        ``warm_up`` marks the untimed run: engines whose byte counter costs time measure there."""

    def describe(self, sql: str) -> tuple[str, float | None]:
        """How this storage reads the data for ``sql``, and the seconds planning alone takes
        (``("", None)`` when there is nothing to say)."""
        return "", None

    def close(self) -> None:
        """Release views/connections (files stay until the root is removed)."""


class SparkStorage(Storage):
    """A Parquet directory written by Spark and queried through a temp view."""

    write_conf: Mapping[str, str] = {}

    def __init__(self, root: Path, spark: Any, io: SparkIO) -> None:
        super().__init__(root)
        self.spark = spark
        self.io = io
        self.view = f"bench_{self.key}"

    def frame(self, source: Source, workload: Workload) -> Any:
        return self.spark.read.text([str(p) for p in source.paths])

    def write(self, df: Any) -> None:
        with spark_conf(self.spark, self.write_conf):
            df.write.mode("overwrite").parquet(str(self.path))

    def load(self, source: Source, workload: Workload) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        # one input file per task, so every storage gets one data file per source part, in source order
        split = str(max(p.stat().st_size for p in source.paths) + 1)
        with spark_conf(self.spark, {"spark.sql.files.maxPartitionBytes": split, "spark.sql.files.openCostInBytes": split}):
            # building the frame is timed too: the relational form infers its schema in a pass of its own
            _, seconds, _ = self.io.run(lambda: self.write(self.frame(source, workload)), f"load {self.key}")
        self.result.load_seconds = seconds
        self.result.bytes_on_disk, self.result.files = dir_size(self.path)
        self.result.compression = compression(next(iter(sorted(self.path.rglob("*.parquet"))), None))
        self.register()

    def register(self) -> None:
        self.spark.read.parquet(str(self.path)).createOrReplaceTempView(self.view)

    def table_ref(self) -> str:
        return self.view

    def dataframe(self, sql: str) -> Any:
        return self.spark.sql(sql)

    def execute(self, sql: str, label: str, warm_up: bool = False) -> tuple[list[tuple[Any, ...]], float, int | None]:
        rows, seconds, nbytes = self.io.run(lambda: self.dataframe(sql).collect(), label)
        return canonical_rows(rows, "spark"), seconds, nbytes

    def close(self) -> None:
        self.spark.catalog.dropTempView(self.view)


class JsonStrings(SparkStorage):
    key = "json_strings"
    label = "(a) JSON strings"
    dialect = Dialect.JSON

    def frame(self, source: Source, workload: Workload) -> Any:
        return super().frame(source, workload).selectExpr("value AS doc")


class SparkVariant(SparkStorage):
    key = "spark_variant"
    label = "(b) Spark Variant"
    write_conf = {"spark.sql.variant.writeShredding.enabled": "false"}

    def frame(self, source: Source, workload: Workload) -> Any:
        return super().frame(source, workload).selectExpr("parse_json(value) AS v")


class SparkShredded(SparkVariant):
    key = "spark_shredded"
    label = "(c) Spark shredded"
    write_conf = {"spark.sql.variant.writeShredding.enabled": "true", "spark.sql.variant.inferShreddingSchema": "true"}


class Relational(SparkStorage):
    key = "relational"
    label = "(e) relational"
    dialect = Dialect.RELATIONAL

    def frame(self, source: Source, workload: Workload) -> Any:
        return workload.relational(self.spark, [str(p) for p in source.paths])


class Varlake(SparkStorage):
    """A varlake table: written by ``varlake.spark.write``, queried by ``varlake.spark.sql``."""

    key = "varlake"
    label = "(d) varlake"
    placeholder = "data"

    def __init__(self, root: Path, spark: Any, io: SparkIO) -> None:
        super().__init__(root, spark, io)
        import varlake.spark as vs

        for name in ("write", "sql"):
            if not hasattr(vs, name):
                raise BenchmarkError(f"varlake.spark.{name} is not available in this tree")
        self.vs = vs

    def frame(self, source: Source, workload: Workload) -> Any:
        return super().frame(source, workload).selectExpr("parse_json(value) AS v")

    def write(self, df: Any) -> None:
        result = self.vs.write(df, str(self.path), mode="overwrite", shredding="auto")
        self.result.note = _layout_note(getattr(result, "layout", None))

    def register(self) -> None:
        """Nothing to register: every query is planned afresh from the table's log."""

    def table_ref(self) -> str:
        return "{" + self.placeholder + "}"

    def dataframe(self, sql: str) -> Any:
        return self.vs.sql(self.spark, sql, **{self.placeholder: str(self.path)})

    def describe(self, sql: str) -> tuple[str, float | None]:
        """The planner's read path (file groups by kind, files skipped, why Variant is read
        whole) and the time ``explain`` takes, which plans the query without running it."""
        start = time.perf_counter()
        try:
            explanation = self.vs.explain(self.spark, sql, show=False, **{self.placeholder: str(self.path)})
        except Exception as exc:  # noqa: BLE001 - the query ran; only its description failed
            return f"read path unknown: explain failed: {type(exc).__name__}: {_first_line(exc)[:120]}", None
        seconds = time.perf_counter() - start
        try:
            return _read_path(explanation), seconds
        except (AttributeError, KeyError, TypeError) as exc:  # the planner's shape changed under us
            return f"read path unknown: {type(exc).__name__}: {_first_line(exc)[:120]}", seconds

    def data_files(self) -> list[str]:
        from varlake.table import Table

        table = Table(self.path)
        return [table.data_file(add) for add in table.files()]

    def close(self) -> None:
        """No view to drop."""


def _read_path(explanation: Any) -> str:
    """The planner's read path in a few words: file groups by kind ("shredded read 8/8 files"),
    arrays of structs read as their shredded elements, files skipped by statistics, and why
    the Variant is read whole when it is."""
    parts = []
    for name, plan in explanation.plans.items():
        total = plan.scan.total_files
        kinds: dict[str, int] = {}
        for group in plan.groups:
            kinds[group.kind] = kinds.get(group.kind, 0) + len(group.tasks)
        parts += [f"{kind} read {n}/{total} files" for kind, n in sorted(kinds.items())]
        exploded = [use for use in explanation.prepared.derived.get(name, {}) if getattr(use, "elements", False)]
        if exploded:
            parts.append("exploded from element leaves")
        if plan.skipped_by_stats:
            parts.append(f"{len(plan.skipped_by_stats)}/{total} skipped by statistics")
        if plan.whole_variant:
            reasons = explanation.prepared.analysis.tables[name].reasons
            parts.append("Variant read whole: " + "; ".join(r.split(": ")[-1] for r in reasons))
    return ", ".join(parts)


_LEAF = re.compile(r"\b(string|bigint|int|smallint|tinyint|double|float|boolean|date|timestamp(_ntz)?|binary|decimal\(\d+,\s*\d+\))(?!<)")


def _layout_note(layout: Mapping[str, str | None] | None) -> str:
    """What the write did with the table's shredding schema (its typed leaves, or why none)."""
    if not layout:
        return ""
    ddl = next(iter(layout.values()), None)
    if not ddl:
        return "written unshredded"
    return f"one shredding schema for every file: {len(_LEAF.findall(ddl))} typed leaves"


def compression(path: Path | None) -> str:
    """The codec of a Parquet file's first column chunk (storages differ: Spark snappy, varlake its own)."""
    if path is None:
        return ""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    return str(meta.row_group(0).column(0).compression).lower() if meta.num_row_groups else ""


class DuckDB(Storage):
    """DuckDB 2.0 over another storage's Parquet files (it reads Parquet Variant natively)."""

    key = "duckdb"
    label = "(f) DuckDB on (d) files"
    dialect = Dialect.DUCKDB
    engine = "duckdb"

    def __init__(self, root: Path, over: Storage, key: str | None = None, label: str | None = None,
                 threads: int = 2) -> None:
        self.key = key or self.key
        self.label = label or self.label
        super().__init__(root)
        import duckdb

        self.over = over
        self.con = duckdb.connect(config={"threads": threads})
        self.con.execute("SET enable_progress_bar = false")
        self.profile = Path(tempfile.mkdtemp(prefix="varlake-bench-duckdb-")) / "profile.json"
        self.files: list[str] = []

    def load(self, source: Source, workload: Workload) -> None:
        if isinstance(self.over, Varlake):
            self.files = self.over.data_files()
        else:
            self.files = sorted(str(p) for p in self.over.path.rglob("*.parquet"))
        self.result.load_seconds = 0.0
        self.result.bytes_on_disk = sum(os.path.getsize(f) for f in self.files)
        self.result.files = len(self.files)
        self.result.compression = self.over.result.compression
        self.result.note = f"reads the files of {self.over.key} (no load of its own)"

    def table_ref(self) -> str:
        return "read_parquet([" + ", ".join("'" + f.replace("'", "''") + "'" for f in self.files) + "])"

    def execute(self, sql: str, label: str, warm_up: bool = False) -> tuple[list[tuple[Any, ...]], float, int | None]:
        """Timed runs go unprofiled; the warm-up run is profiled for ``io.total_bytes_read``."""
        if warm_up:
            self.con.execute("PRAGMA enable_profiling = 'json'")
            self.con.execute(f"PRAGMA profiling_output = '{self.profile.as_posix()}'")
        try:
            start = time.perf_counter()
            rows = self.con.execute(sql).fetchall()
            seconds = time.perf_counter() - start
        finally:
            if warm_up:
                self.con.execute("PRAGMA disable_profiling")
        nbytes = None
        if warm_up:
            profile = json.loads(self.profile.read_text())
            nbytes = int(profile.get("io", {}).get("total_bytes_read", 0))
        return canonical_rows(rows, "duckdb"), seconds, nbytes

    def close(self) -> None:
        self.con.close()
        shutil.rmtree(self.profile.parent, ignore_errors=True)


class Unavailable(Storage):
    """A storage this tree cannot provide; loading it fails with the reason (recorded, not raised)."""

    def __init__(self, root: Path, key: str, label: str, reason: str) -> None:
        self.key, self.label, self.reason = key, label, reason
        super().__init__(root)

    def load(self, source: Source, workload: Workload) -> None:
        raise BenchmarkError(self.reason)

    def table_ref(self) -> str:
        raise BenchmarkError(self.reason)

    def execute(self, sql: str, label: str, warm_up: bool = False) -> tuple[list[tuple[Any, ...]], float, int | None]:
        raise BenchmarkError(self.reason)


# --- running ----------------------------------------------------------------------------------------


def build_storages(spark: Any, root: Path, include: Sequence[str] | None = None,
                   extra: Sequence[Callable[[Path], Storage]] = ()) -> list[Storage]:
    """The storages in load order (the reference first, DuckDB after the files it reads), then
    ``extra``: storages of other engines, each made from the scratch root (``delta_peer.py``)."""
    io = SparkIO(spark)
    wanted = set(include or (*STORAGE_KEYS, "duckdb_spark_shredded"))
    out: list[Storage] = []
    relational = Relational(root, spark, io)
    out.append(relational)
    shredded = SparkShredded(root, spark, io)
    for cls in (JsonStrings, SparkVariant):
        if cls.key in wanted:
            out.append(cls(root, spark, io))
    if wanted & {"spark_shredded", "duckdb_spark_shredded"}:
        out.append(shredded)
    if wanted & {"varlake", "duckdb"}:
        try:
            varlake: Storage = Varlake(root, spark, io)
        except (ImportError, BenchmarkError) as exc:
            varlake = Unavailable(root, "varlake", Varlake.label, f"{type(exc).__name__}: {exc}")
        out.append(varlake)
        if "duckdb" in wanted:
            out.append(DuckDB(root, varlake) if isinstance(varlake, Varlake)
                       else Unavailable(root, "duckdb", DuckDB.label, "needs the files of (d) varlake"))
    if "duckdb_spark_shredded" in wanted:
        out.append(DuckDB(root, shredded, key="duckdb_spark_shredded", label="(f) DuckDB on (c) files"))
    return out + [make(root) for make in extra]


def run_workload(
    spark: Any,
    workload: Workload,
    source: Source,
    root: Path,
    *,
    runs: int = 3,
    include: Sequence[str] | None = None,
    log: Callable[[str], None] = print,
    warm_up: bool = True,
    extra: Sequence[Callable[[Path], Storage]] = (),
) -> WorkloadResult:
    """Load every storage from ``source``, run every query on each, check the answers.

    Round 0 warms up; rounds 1..``runs`` are timed (``runs=0`` only checks answers).
    ``warm_up=False`` skips round 0 (for a session whose JIT an earlier workload run already
    warmed, e.g. the larger sizes of ``scaling.py``): the first timed round then records the
    rows and the read path, and DuckDB, which profiles only its untimed run, no bytes."""
    with spark_conf(spark, RUN_CONF):
        return _run_workload(spark, workload, source, root, runs, include, log, warm_up, extra)


def _run_workload(
    spark: Any,
    workload: Workload,
    source: Source,
    root: Path,
    runs: int,
    include: Sequence[str] | None,
    log: Callable[[str], None],
    warm_up: bool = True,
    extra: Sequence[Callable[[Path], Storage]] = (),
) -> WorkloadResult:
    root.mkdir(parents=True, exist_ok=True)
    result = WorkloadResult(workload.name, workload.title, source, list(workload.queries))
    storages = build_storages(spark, root, include, extra)
    reference: dict[tuple[str, int], tuple[str, list[tuple[Any, ...]]]] = {}
    try:
        loaded = []
        for storage in storages:
            result.storages[storage.key] = storage.result
            log(f"[{workload.name}] load {storage.key} ...")
            start = time.perf_counter()
            try:
                storage.load(source, workload)
            except Exception as exc:  # noqa: BLE001 - recorded; the run fails at the end
                storage.result.error = f"load failed: {type(exc).__name__}: {_first_line(exc)}"
                log(f"[{workload.name}] {storage.result.error}")
                continue
            finally:
                result.phases[f"load {storage.key}"] = time.perf_counter() - start
            loaded.append(storage)
            r = storage.result
            log(f"[{workload.name}] load {storage.key}: {r.load_seconds:.1f} s, {(r.bytes_on_disk or 0) / 1e6:.1f} MB "
                f"in {r.files} files")
        first = 0 if warm_up or runs == 0 else 1
        for i in range(first, runs + 1):  # round 0 warms every storage up before any timed round
            start = time.perf_counter()
            for storage in loaded:
                for query in workload.queries:
                    run_once(storage, query, i, reference, result.mismatches, first=i == first)
            result.phases[f"round {i}"] = time.perf_counter() - start
            log(f"[{workload.name}] round {i} ({'warm-up' if i == 0 else 'timed'}) took {result.phases[f'round {i}']:.1f} s")
        for storage in loaded:
            for query in workload.queries:
                qr = storage.result.queries[query.name]
                log(f"[{workload.name}] {storage.key:22s} {query.name:4s} median {qr.median_seconds:8.3f} s  "
                    f"first {qr.first_run_seconds:7.3f} s  read {(qr.median_bytes or 0) / 1e6:9.1f} MB")
    finally:
        for storage in storages:
            storage.close()
    return result


def run_once(
    storage: Storage,
    query: Query,
    run: int,
    reference: dict[tuple[str, int], tuple[str, list[tuple[Any, ...]]]],
    mismatches: list[str],
    first: bool | None = None,
) -> None:
    """Run ``run`` of ``query`` on ``storage`` (run 0 is the untimed warm-up), checking its answer
    against the first storage that answered the same run (the reference storage runs first).
    The ``first`` run (run 0 unless told) records the rows and the storage's read path."""
    out = storage.result.queries.setdefault(query.name, QueryResult())
    if out.error:
        return
    sql = query.render(storage.dialect, storage.table_ref(), run)
    try:
        rows, seconds, nbytes = storage.execute(sql, f"{storage.key} {query.name} run {run}", warm_up=run == 0)
    except Exception as exc:  # noqa: BLE001 - recorded; the run fails at the end
        out.error = f"{type(exc).__name__}: {_first_line(exc)}"
        mismatches.append(f"{storage.key} {query.name} run {run} failed: {out.error}")
        return
    key = (query.name, run)
    if key not in reference:
        reference[key] = (storage.key, rows)
    else:
        ref_key, expected = reference[key]
        diff = compare_rows(expected, rows)
        if diff:
            mismatches.append(f"{storage.key} {query.name} run {run} differs from {ref_key}: {diff}")
    if nbytes is not None:
        out.bytes_read.append(nbytes)
    if run == 0:
        out.first_run_seconds = seconds
    else:
        out.seconds.append(seconds)
    if (run == 0) if first is None else first:
        out.rows = len(rows)
        out.note, out.plan_seconds = storage.describe(sql)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else ""
