"""Prepare a query over varlake tables (``prepare``): Spark's verdict on the text,
sqlglot's analysis (made once per text, schemas and parser confs: ``Analyses``), one plan
per table (files skipped, read paths), the derived columns, and the rewritten SQL."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from varlake.delta.snapshot import Snapshot
from varlake.errors import TableError
from varlake.expr.dialect import SparkSQL
from varlake.spark.reading.date_texts import compared
from varlake.spark.reading.derived_sql import rebuilt
from varlake.spark.reading.frames import all_shredded
from varlake.spark.reading.placeholders import derived_name, next_derived_name, substitute
from varlake.spark.reading.planner import (
    ElementShape,
    PathUse,
    TablePlan,
    combine,
    element_shape,
    elements_of,
    failure_of,
    iso_date_text,
    plan_table,
    text_of,
    usable_conjuncts,
)
from varlake.spark.reading.rewrite import rewritten_tree
from varlake.spark.reading.scopes import QueryAnalysis
from varlake.spark.reading.shared_views import SharedReads
from varlake.spark.reading.sql import analyze, as_written, depends_on_tree, regenerate
from varlake.spark.reading.verdict import Verdict
from varlake.spark.session.object_store import open_table
from varlake.table import Table

__all__ = ["Analyses", "PreparedQuery", "TableSource", "prepare", "session_time_zone"]


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


def _as_table(spark: Any, name: str, source: TableSource, storage_options: Mapping[str, str] | None) -> Table:
    """The table a placeholder names: a ``Table`` as it is, else the one at the path or URI
    (``session.object_store.open_table``: storage from the environment and ``storage_options``)."""
    if not isinstance(source, (Table, str, os.PathLike)):
        raise TableError(f"table {name!r}: expected a varlake Table or a path, got {type(source).__name__}")
    return open_table(spark, source, storage_options)


def session_time_zone(spark: Any) -> str:
    return str(spark.conf.get("spark.sql.session.timeZone"))


def prepare(
    spark: Any,
    query: str,
    tables: Mapping[str, TableSource],
    versions: Mapping[str, int] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> PreparedQuery:
    """Analyse the query, plan every table (skipping, read paths), rewrite the SQL.

    Spark has the first word on the text (``varlake.spark.reading.verdict``): its parser reads it
    (placeholders replaced by view names) before anything else; a text Spark cannot parse
    raises Spark's own ``ParseException``, and sqlglot's analysis is used only if Spark
    reads sqlglot's regeneration of it as the same query -- otherwise the query runs as
    written, every table read whole, no file skipped. Tables named by path are opened only
    after that verdict (with ``storage_options`` for object-store URIs).
    """
    versions = dict(versions or {})
    unknown = set(versions) - set(tables)
    if unknown:
        raise TableError(f"versions given for unknown tables {sorted(unknown)}")
    text = substitute(query, tables)
    context = SharedReads.context(spark)
    verdict = None if (text, context) in _ANALYSES else Verdict(spark, text)  # a text Spark cannot parse fails here, as in spark.sql
    resolved = {name: _as_table(spark, name, source, storage_options) for name, source in tables.items()}
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
    Spark's parser reads: so it is keyed by those (the confs as ``SharedReads.context``
    hashes them) and made once. Analyses are never changed after they are made
    (``rewrite.rewritten_tree`` rewrites a copy). A text Spark parsed once under the same confs
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


def _plan_tables(analysis: QueryAnalysis, resolved: Mapping[str, Table], snapshots: Mapping[str, Snapshot], tz: str) -> dict[str, TablePlan]:
    """Every table's plan for what the analysis says the query needs of it."""
    plans: dict[str, TablePlan] = {}
    for name, usage in analysis.tables.items():
        schema = snapshots[name].schema
        filter = combine([usable_conjuncts(f, schema, tz) if f is not None else None for f in usage.filters])
        plans[name] = plan_table(name, resolved[name], snapshots[name], usage.uses, usage.whole_variant, filter, tz)
    return plans


def _served_as_text(analysis: QueryAnalysis, plan: TablePlan, derived: dict[PathUse, str]) -> None:
    """A derived column ``text_of(use)`` for each DATE use of a directly read table whose
    string leaves hold only ISO dates in every file (``planner.iso_date_text``) and that a
    site compares (``date_texts.compared``): the query compares its text (``rewrite.rewritten_tree``)."""
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

    nested = any(rebuilt(use) for use in (plan.uses if derived is None else derived))
    filtered = any(
        s.table == plan.name and s.node.find_ancestor(exp.Where, exp.Having, exp.Join, exp.Qualify) is not None
        for s in analysis.sites
    )
    return replace(plan, keep_apart=True) if nested and not filtered else plan
