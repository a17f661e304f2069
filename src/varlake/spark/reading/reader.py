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
  read: ``rewrite.rewritten_tree`` casts each field where the query reads it); the Variant
  columns themselves (top-level or in structs) are NULL;
* one *variant* branch per group of other files, read with the table's schema
  (``variant`` types): derived columns are NULL there, and the query's own expressions
  compute the values (``rewrite.rewrite`` routes each use through ``IF(__vl_shredded, ...)``);

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

The parts: ``prepare`` (analysis, plans, derived columns, the rewritten SQL),
``frames`` (a table's view as a DataFrame) with ``derived_sql`` (its SQL text),
``mapped_read`` and ``deleted_rows``, and ``shared_views`` (the global views and session
clones); this module runs a prepared query (``run``) and holds the entry points.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from varlake.spark.reading.count import count_from_log
from varlake.spark.reading.frames import table_frame
from varlake.spark.reading.placeholders import substitute
from varlake.spark.reading.planner import PathUse, TablePlan
from varlake.spark.reading.prepare import PreparedQuery, TableSource, prepare, session_time_zone
from varlake.spark.reading.rewrite import retarget
from varlake.spark.reading.shared_views import SHARED_READS, clone_session
from varlake.spark.session.local import is_classic
from varlake.spark.session.quiet import handled_errors_unlogged

__all__ = ["read", "read_query", "run", "sql"]


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
    if counted is not None:  # SELECT count(*) answered from the log (count.count_query)
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


# --- the public entry points --------------------------------------------------------------------------------


def sql(
    spark: Any,
    query: str,
    /,
    *,
    versions: Mapping[str, int] | None = None,
    storage_options: Mapping[str, str] | None = None,
    **tables: TableSource,
) -> Any:
    """Run Spark SQL over varlake tables named as ``{name}`` placeholders.

    ``sql(spark, "SELECT v:a::int, count(*) FROM {events} GROUP BY 1", events="/data/events")``.
    Tables are paths or ``Table`` objects; ``versions`` pins a table to a version. Variant
    columns are Spark ``VariantType``; the result equals Spark's evaluation of the query
    over all of the tables' files, but files are skipped by statistics and perfectly
    shredded paths are read as plain Parquet columns. A path may be an object-store URI
    (``t="s3://bkt/t"``; ``s3a://`` the same) reached with ``storage_options``.
    """
    return run(spark, prepare(spark, query, tables, versions, storage_options))


def read(
    spark: Any,
    path: TableSource,
    columns: Sequence[str] | None = None,
    where: str | None = None,
    version: int | None = None,
    *,
    storage_options: Mapping[str, str] | None = None,
) -> Any:
    """A DataFrame of a table: ``columns`` are SQL expressions (``"id"``, ``"v:a.b::int AS b"``),
    ``where`` a SQL condition; Variant columns surface as ``VariantType``. ``path`` may be an
    object-store URI reached with ``storage_options``."""
    query = read_query(columns, where)
    versions = {"table": version} if version is not None else None
    return sql(spark, query, versions=versions, storage_options=storage_options, table=path)


def read_query(columns: Sequence[str] | str | None, where: str | None) -> str:
    """The SQL ``read`` runs: ``SELECT <columns or *> FROM {table} [WHERE <where>]``."""
    if isinstance(columns, str):
        columns = [columns]
    select = ", ".join(columns) if columns else "*"
    return f"SELECT {select} FROM {{table}}" + (f" WHERE {where}" if where else "")
