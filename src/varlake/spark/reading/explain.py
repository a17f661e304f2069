"""``explain``: what the Spark reader will do for a query, without running it.

Per table: the snapshot version, the filter used for skipping, which files were skipped
by partition values and by statistics (``varlake.read.plan_scan``), which were put back
because a cast in the filter could raise on them (and which casts), which file groups take the struct-pruned path (with the leaf
type of every used Variant path) and which are read as Variant (when none is, the query
reads the leaves as plain columns), and why a table is read whole; then the SQL that
Spark runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from varlake.errors import TableError
from varlake.read import PutBack
from varlake.spark.reading.planner import FileGroup, TablePlan, read_use
from varlake.spark.reading.frames import all_shredded
from varlake.spark.reading.prepare import PreparedQuery, TableSource, prepare
from varlake.spark.reading.reader import read_query
from varlake.spark.session.local import is_classic
from varlake.spark.session.object_store import open_table

__all__ = ["Explanation", "executed_scans", "explain"]

_MAX_LISTED = 20


@dataclass(frozen=True)
class Explanation:
    """The plan of a query over varlake tables, printable as text (``str(explanation)``)."""

    prepared: PreparedQuery

    @property
    def plans(self) -> dict[str, TablePlan]:
        return self.prepared.plans

    @property
    def sql(self) -> str:
        return self.prepared.sql

    def __str__(self) -> str:
        lines = [f"query: {self.prepared.query}"]
        if self.prepared.analysis.note:
            lines.append(self.prepared.analysis.note)
        for name, plan in self.plans.items():
            lines.extend(_table_lines(name, plan, self.prepared))
        lines.append("spark sql:" + (" (rewritten)" if self.prepared.rewritten else " (as written)"))
        lines.append("  " + self.prepared.sql)
        return "\n".join(lines)


def _files(title: str, tasks: Sequence[Any]) -> list[str]:
    if not tasks:
        return []
    out = [f"  {title}: {len(tasks)}"]
    out += [f"    {t.relative_path}" for t in tasks[:_MAX_LISTED]]
    if len(tasks) > _MAX_LISTED:
        out.append(f"    ... and {len(tasks) - _MAX_LISTED} more")
    return out


def _put_back(put_back: Sequence[PutBack]) -> list[str]:
    if not put_back:
        return []
    out = [f"  put back although statistics exclude them (a cast in the filter could raise): {len(put_back)}"]
    for p in put_back[:_MAX_LISTED]:
        out.append(f"    {p.task.relative_path}: " + "; ".join(str(t) for t in p.terms))
    if len(put_back) > _MAX_LISTED:
        out.append(f"    ... and {len(put_back) - _MAX_LISTED} more")
    return out


def _group_line(group: FileGroup) -> str:
    rows = sum(t.num_records or 0 for t in group.tasks)
    where = ", ".join(f"{k}={v}" for k, v in group.partition_values)
    head = f"    {group.kind} read: {len(group.tasks)} file(s), {rows} row(s)" + (f" [{where}]" if where else "")
    if group.kind == "shredded":
        leaves = "; ".join(f"{use} <- {leaf}" for use, leaf in group.leaf_types)
        proven = "; ".join(str(use) for use, _ in group.leaf_types if use in group.proven)
        return f"{head}: struct leaves {leaves}" + (f"; casts proven by ISO-date leaves: {proven}" if proven else "")
    return head


def _table_lines(name: str, plan: TablePlan, prepared: PreparedQuery) -> list[str]:
    usage = prepared.analysis.tables[name]
    lines = [f"table {{{name}}} = {plan.table.path} @ version {plan.scan.version} ({plan.scan.total_files} file(s))"]
    lines.append(f"  skipping filter: {plan.filter if plan.filter is not None else 'none'}")
    lines += _files("skipped by partition values", plan.skipped_by_partition)
    lines += _files("skipped by statistics", plan.skipped_by_stats)
    lines += _put_back(plan.put_back)
    if plan.whole_variant:
        lines.append("  Variant columns read whole: " + "; ".join(usage.reasons))
    elif plan.uses:
        lines.append("  Variant paths used: " + "; ".join(str(u) for u in plan.uses))
    mapping = plan.scan.column_mapping
    if mapping is not None:
        how = "Parquet field id" if mapping.mode == "id" else "physical name"
        lines.append(f"  column mapping: {mapping.mode} mode (data files read by {how})")
    with_dv = [t for t in plan.read_tasks if t.deletion_vector is not None]
    if with_dv:
        lines.append(
            f"  deletion vectors: {len(with_dv)} file(s); their deleted rows are filtered by row index "
            "before any expression of the query"
        )
    lines.append(f"  file groups: {len(plan.groups)}")
    lines += [_group_line(g) for g in plan.groups]
    if plan.uses and all_shredded(plan):
        lines.append("  every file read serves the paths from leaves: the query reads them as plain columns (no fallback)")
    exploded = [str(read_use(use)) for use in prepared.derived.get(name, {}) if use.elements]
    if exploded:
        lines.append("  arrays read as their shredded elements, each field cast where the query reads it: " + "; ".join(exploded))
    texts = [str(read_use(use)) for use in prepared.derived.get(name, {}) if use.text]
    if texts:
        lines.append("  dates of ISO-date leaves compared as text: " + "; ".join(texts))
    return lines


def explain(
    spark: Any,
    source: str | TableSource,
    /,
    columns: Sequence[str] | None = None,
    where: str | None = None,
    version: int | None = None,
    *,
    versions: Mapping[str, int] | None = None,
    show: bool = True,
    storage_options: Mapping[str, str] | None = None,
    **tables: TableSource,
) -> Explanation:
    """Explain ``sql(spark, source, **tables)``, or, without tables, ``read(spark, source, columns, where, version)``.

    Prints the explanation unless ``show=False``; returns it either way. Tables may be
    object-store URIs reached with ``storage_options``.
    """
    if tables:
        if not isinstance(source, str):
            raise TypeError("with tables given, the second argument must be the SQL text")
        prepared = prepare(spark, source, tables, versions, storage_options)
    else:
        if isinstance(source, str) and "{" in source:
            raise TableError("the query names {tables}: pass each table as a keyword argument")
        table = open_table(spark, source, storage_options)
        prepared = prepare(spark, read_query(columns, where), {"table": table}, {"table": version} if version is not None else None)
    explanation = Explanation(prepared)
    if show:
        print(explanation)
    return explanation


def executed_scans(df: Any) -> list[Any]:
    """The file scan nodes (JVM objects) of an executed DataFrame's physical plan, through
    adaptive query stages: their ``requiredSchema()`` and ``metrics()`` (``numOutputRows``:
    rows left after row-group skipping) show what a query really read. Classic sessions
    only (a Spark Connect DataFrame has no JVM plan to walk): ``TableError`` otherwise."""
    if not is_classic(df.sparkSession):
        raise TableError("executed_scans needs a classic (JVM) SparkSession: a Spark Connect plan has no JVM nodes")

    def walk(node: Any) -> list[Any]:
        name = node.getClass().getName()
        if name.endswith("AdaptiveSparkPlanExec"):
            return walk(node.executedPlan())
        if "QueryStageExec" in name:
            return walk(node.plan())
        out = [node]
        children = node.children()
        for i in range(children.size()):
            out += walk(children.apply(i))
        return out

    return [n for n in walk(df._jdf.queryExecution().executedPlan()) if n.nodeName().startswith("Scan")]
