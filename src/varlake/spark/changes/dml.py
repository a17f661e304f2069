"""DELETE, UPDATE and MERGE with Spark doing the heavy work; the driver commits once.

``delete(spark, path, where)``, ``update(spark, path, set, where)`` and
``merge(spark, path, source_df, on)`` (a ``MergeBuilder`` with the same clause methods as
``write.merge``'s) all return ``write.row_changes.RowChangeResult``:

1. **Candidates**: the files the condition may match, by the table layer's sound skipping
   (``spark.row_ids.plan_candidates``; for MERGE the target-only conjuncts of ``ON`` and the
   source's key values, ``write.merge``'s rules).
2. **Matching rows**: Spark reads only those files, each row with its file and index in
   the file and deletion vectors respected (``spark.row_ids.target_frame``), and evaluates
   the condition -- or joins the source and picks each row's clause (first TRUE condition
   wins) -- in Spark SQL, so Spark's semantics (``v:a::int``, ``variant_set`` ...) apply
   natively. The (file, row index) of the changed rows are collected to the driver.
3. **New rows** -- updated, inserted and, copy-on-write, the rows kept from rewritten files
   -- are written by Spark through ``spark.writer.stage_write`` (the table's shredding
   layout, statistics, constraints), in one job.
4. **Commit**: ``write.row_changes`` retires the rows (deletion vectors when the table has
   ``delta.enableDeletionVectors=true``, else file removal) and commits once with what the
   change read, so Delta's conflict rules apply as for ``Table.delete``.

``sql(spark, text, **tables)`` runs ``DELETE FROM {t} ...``, ``UPDATE {t} SET ...`` and
``MERGE INTO {t} ...`` through these (sqlglot parses the statement) and returns a one-row
DataFrame of counts, like Delta's; any other statement goes to ``spark.reader.sql``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import reduce
from typing import Any

import numpy as np
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from varlake.delta import config
from varlake.delta import constants as C
from varlake.delta.protocol import check_writable
from varlake.delta.schema import VariantType
from varlake.errors import (
    AppendOnlyTableError,
    ExpressionParseError,
    MergeCardinalityError,
    TableError,
    UnknownColumnError,
    VarlakeError,
)
from varlake.expr import Predicate, bind, parse_predicate
from varlake.expr.dialect import SparkSQL
from varlake.expr.sql import predicate_of
from varlake.expr.types import TypeFamily, family_of
from varlake.semantics.types import backquote
from varlake.spark.changes.row_ids import FILE_COLUMN, ROW_COLUMN, TargetFrame, file_rows, plan_candidates, target_frame
from varlake.spark.session.local import spark_error_summary
from varlake.spark.session.object_store import open_table
from varlake.spark.reading.placeholders import substitute, view_name
from varlake.spark.types import to_delta_schema, to_spark_type
from varlake.table import Table
from varlake.write.changes import merge as _merge
from varlake.write.changes.merge import MAX_IN_LIST, MergeBuilder as _PythonMergeBuilder, MergeClause
from varlake.write.changes.rows import FileChanges, RowChangeResult, check_changeable, commit_change, retry_change

__all__ = ["SparkMergeBuilder", "delete", "merge", "sql", "update"]

_T_MARK, _S_MARK, _CLAUSE = "__vl_t", "__vl_s", "__vl_clause"
#: key families whose Spark values compare in Python as in Spark (for skipping by source keys)
_PRUNING_FAMILIES = (TypeFamily.EXACT_NUMERIC, TypeFamily.STRING, TypeFamily.DATE, TypeFamily.BOOLEAN)


def _open(path: Any) -> Table:
    return path if isinstance(path, Table) else Table(path)


def _spark_failure(root: str, what: str, exc: Exception) -> TableError:
    return TableError(f"{root}: {what}: Spark failed, nothing was committed: {spark_error_summary(exc)}")


def _by_file(rows: Sequence[Any]) -> dict[str, np.ndarray]:
    """Collected ``(file, row)`` pairs grouped by file: sorted unique row indexes."""
    out: dict[str, list[int]] = {}
    for file, row in rows:
        out.setdefault(file, []).append(int(row))
    return {f: np.unique(np.asarray(r, dtype=np.int64)) for f, r in out.items()}


def _kept_rows(spark: Any, target: TargetFrame, retired: Mapping[str, np.ndarray]) -> Any:
    """The live rows of ``retired``'s files that are not retired (copy-on-write rewrites)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    pairs = [(name, int(r)) for name, rows in retired.items() for r in rows]
    gone = spark.createDataFrame(pairs, StructType([StructField(FILE_COLUMN, StringType()), StructField(ROW_COLUMN, LongType())]))
    names = list(retired)
    frame = target.frame.where(target.frame[FILE_COLUMN].isin(names))
    return frame.join(F.broadcast(gone), [FILE_COLUMN, ROW_COLUMN], "left_anti").select(*[backquote(c) for c in target.columns])


def _finish(
    spark: Any,
    target: TargetFrame,
    operation: str,
    retired: Mapping[str, np.ndarray],
    new_rows: Sequence[Any],
    expected_new: int,
    counts: Mapping[str, int],
    parameters: Mapping[str, Any],
) -> RowChangeResult:
    """Retire ``retired`` (Spark file name -> row indexes), let Spark write ``new_rows`` and
    the rows kept by copy-on-write rewrites in one job, commit once (``write.row_changes``)."""
    from varlake.spark.writing.writer import stage_write

    table = target.table
    changes = FileChanges(table, target.snapshot)
    rewritten: dict[str, np.ndarray] = {}
    for name, rows in retired.items():
        found = file_rows(target, name, rows)
        if not changes.use_dv and 0 < found.num_matched < found.num_live:
            rewritten[name] = rows
        changes.retire(found, found.matched, write_kept=False)
    frames = list(new_rows)
    if rewritten:
        frames.append(_kept_rows(spark, target, rewritten))
    expected = expected_new + changes.copied
    pending = None
    if frames and expected:
        df = reduce(lambda a, b: a.unionByName(b), frames)
        pending = stage_write(df, table.path, "append", storage=table.storage)
        if pending.num_rows != expected:  # the condition gave other rows the second time
            raise TableError(
                f"{table.path}: {operation}: Spark wrote {pending.num_rows} rows where {expected} were expected "
                "(is the condition deterministic?); nothing was committed"
            )
    staged = changes.stage(operation, target.plan, parameters, counts, pending=pending)
    return commit_change(table, staged)


def _where_text(where: str | None) -> str:
    if where is None:
        return "true"
    if not isinstance(where, str) or not where.strip():
        raise ExpressionParseError(f"a Spark row change needs its condition as SQL text, got {where!r}")
    return where


def _column_value(field: Any, text: str) -> Any:
    """SQL ``text`` assigned to a table column: cast to its type (Variants as they are)."""
    from pyspark.sql import functions as F

    value = F.expr(text)
    return (value if isinstance(field.type, VariantType) else value.cast(to_spark_type(field.type))).alias(field.name)


def _target_names(columns: Sequence[str], assignments: Mapping[str, str], alias: str | None, root: str, what: str) -> dict[str, str]:
    """``assignments`` keyed by the table's own column names (case-insensitive, ``t.`` stripped)."""
    by_lower = {c.lower(): c for c in columns}
    out = {}
    for key, text in assignments.items():
        name = str(key).strip().strip("`")
        if alias and "." in name and name.split(".", 1)[0].strip("`").lower() == alias.lower():
            name = name.split(".", 1)[1].strip("`")
        if name.lower() not in by_lower:
            raise UnknownColumnError(f"{root}: {what}: SET names column {key!r}, which the table does not have ({list(columns)})")
        if not isinstance(text, str) or not text.strip():
            raise ExpressionParseError(f"{root}: {what}: SET {key!r} needs a SQL expression, got {text!r}")
        out[by_lower[name.lower()]] = text
    return out


# --- DELETE and UPDATE ---------------------------------------------------------------------------------


def _change(
    spark: Any, path: Any, operation: str, where: str | None, assignments: Mapping[str, str] | None, alias: str | None
) -> RowChangeResult:
    table = _open(path)
    snapshot = table.log.snapshot()
    check_changeable(snapshot, table.path, operation)
    condition = _where_text(where)
    plan = plan_candidates(table, snapshot, _unaliased(where, alias))
    target = target_frame(spark, table, snapshot, plan)
    frame = target.frame.alias(alias) if alias else target.frame
    sets = _target_names(target.columns, assignments, alias, table.path, operation) if assignments is not None else None
    fields = snapshot.schema.fields
    try:
        matching = frame.where(condition)
        if sets is not None:  # the new rows computed once, with the rows they replace
            new_values = [_column_value(f, sets[f.name]) if f.name in sets else backquote(f.name) for f in fields]
            matching = matching.select(*new_values, FILE_COLUMN, ROW_COLUMN).localCheckpoint(eager=True)
        rows = matching.select(FILE_COLUMN, ROW_COLUMN).collect()
    except VarlakeError:
        raise
    except Exception as exc:  # analysis or evaluation of the condition or the SET
        raise _spark_failure(table.path, f"{operation} WHERE {condition}", exc) from None
    retired = _by_file(rows)
    matched = len(rows)
    new_rows = [matching.select(*[backquote(f.name) for f in fields])] if sets is not None and matched else []
    parameters: dict[str, Any] = {"predicate": json.dumps([condition])}
    if sets is not None:
        parameters["set"] = json.dumps(dict(sets))
    counts = {"num_deleted_rows": matched} if sets is None else {"num_updated_rows": matched}
    return _finish(spark, target, operation, retired, new_rows, matched if sets is not None else 0, counts, parameters)


def _unaliased(where: str | None, alias: str | None) -> str | Predicate | None:
    """``where`` with the target alias dropped from its columns (for skipping), or None
    (every file a candidate) when it cannot be rewritten or read as a predicate."""
    if where is None or not alias:
        return where
    try:
        node = sqlglot.parse_one(where, dialect=SparkSQL)
    except SqlglotError:
        return None
    for column in node.find_all(exp.Column):
        if column.table and column.table.lower() == alias.lower():
            column.set("table", None)
    try:
        return predicate_of(node)
    except VarlakeError:  # as plan_candidates treats a condition it cannot read
        return None


def delete(
    spark: Any, path: Any, where: str | None = None, *, retries: int = 0, target_alias: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> RowChangeResult:
    """DELETE the rows ``where`` (Spark SQL; every row when None) matches, Spark finding them
    (module doc); one commit. ``retries`` re-plans after a conflict with a concurrent change.
    ``path`` may be an object-store URI reached with ``storage_options``."""
    table = open_table(spark, path, storage_options)
    return retry_change(lambda: _change(spark, table, "DELETE", where, None, target_alias), retries)


def update(
    spark: Any, path: Any, set: Mapping[str, str], where: str | None = None, *, retries: int = 0, target_alias: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> RowChangeResult:
    """UPDATE the rows ``where`` matches with ``set`` (column -> Spark SQL expression of the
    old row, e.g. ``{"v": "variant_set(v, '$.a', 5)"}``); Spark writes the new rows in the
    table's layout; one commit."""
    if not isinstance(set, Mapping) or not set:
        raise ExpressionParseError(f"UPDATE set must map column names to SQL expressions, got {set!r}")
    table = open_table(spark, path, storage_options)
    return retry_change(lambda: _change(spark, table, "UPDATE", where, set, target_alias), retries)


# --- MERGE ---------------------------------------------------------------------------------------------


class SparkMergeBuilder(_PythonMergeBuilder):
    """``merge(spark, path, source_df, on)``'s builder: ``write.merge.MergeBuilder``'s clause
    methods; ``execute()`` runs the MERGE with Spark (module doc) and commits once."""

    def __init__(
        self,
        spark: Any,
        path: Any,
        source: Any,
        on: str,
        source_alias: str = "s",
        target_alias: str = "t",
        clauses: tuple[MergeClause, ...] = (),
        retries: int = 0,
    ) -> None:
        table = _open(path)
        super().__init__(table, source, on, source_alias, target_alias, clauses, retries)
        self.spark = spark

    def _with(self, clause: MergeClause) -> "SparkMergeBuilder":
        return SparkMergeBuilder(
            self.spark, self.target, self.source, self.on, self.source_alias, self.target_alias, self.clauses + (clause,), self.retries
        )

    def stage(self, snapshot: Any = None) -> Any:
        raise TableError("a Spark MERGE stages and commits in execute()")

    def execute(self) -> RowChangeResult:
        """Run the MERGE with Spark: one commit (``version`` None when it changed nothing)."""
        if not self.clauses:
            raise ExpressionParseError("MERGE needs at least one WHEN clause")
        return retry_change(lambda: _run_merge(self), self.retries)


def merge(
    spark: Any, path: Any, source_df: Any, on: str, source_alias: str = "s", target_alias: str = "t", *, retries: int = 0,
    storage_options: Mapping[str, str] | None = None,
) -> SparkMergeBuilder:
    """A MERGE of the DataFrame ``source_df`` into the table at ``path`` on ``on`` (Spark
    SQL, ``"t.id = s.id"``): add ``when_*`` clauses, then ``.execute()``."""
    if not (hasattr(source_df, "schema") and hasattr(source_df, "withColumn")):
        raise TableError(f"a Spark MERGE source must be a Spark DataFrame, got {type(source_df).__name__}")
    table = open_table(spark, path, storage_options)
    return SparkMergeBuilder(spark, table, source_df, on, source_alias, target_alias, retries=retries)


def _merge_pruning(b: SparkMergeBuilder, snapshot: Any) -> Any:
    """What ``on`` implies about matching target rows (``write.merge``'s rules), or None."""
    from pyspark.sql import functions as F

    try:
        scope = _merge.MergeScope(b.target_alias, b.source_alias, snapshot.schema, to_delta_schema(b.source.schema))
        types = scope.types()
        on_unbound = parse_predicate(scope.qualify(b.on, "ON"))
        keys = [
            (t, s)
            for t, s in _merge.equi_keys(bind(on_unbound, types), scope, types)
            if family_of(types[t]) in _PRUNING_FAMILIES and family_of(types[s]) in _PRUNING_FAMILIES
        ]
        rows: list[dict[str, Any]] = []
        if keys:
            roots = sorted({s[1] for _t, s in keys})
            picked = b.source.select(*[F.col(backquote(r)) for r in roots]).distinct().limit(MAX_IN_LIST + 1).collect()
            if len(picked) <= MAX_IN_LIST:
                rows = [r.asDict(recursive=True) for r in picked]
        return _merge.skipping_filter(on_unbound, scope, keys, rows, types)
    except VarlakeError:
        return None  # not readable by varlake: every file is a candidate
    except Exception:  # noqa: BLE001 -- Spark could not list the keys: the join will say why
        return None


def _clause_sql(clauses: Sequence[MergeClause], kind: str) -> str:
    branches = [
        f"WHEN {'true' if c.condition is None else '(' + c.condition + ')'} THEN {i}"
        for i, c in enumerate(clauses)
        if c.kind == kind
    ]
    return f"CASE {' '.join(branches)} ELSE -1 END" if branches else "-1"


def _clause_values(b: SparkMergeBuilder, i: int, clause: MergeClause, columns: Sequence[Any], root: str) -> list[Any]:
    """The new row clause ``i`` (an UPDATE or INSERT) makes: one Spark column per table column."""
    from pyspark.sql import functions as F

    what = f"WHEN clause {i + 1} ({clause.kind.replace('_', ' ')} {clause.action})"
    source_names = {n.lower(): n for n in b.source.columns if not n.startswith("__vl_")}
    if clause.assignments is None:
        missing = [f.name for f in columns if f.name.lower() not in source_names]
        if missing:
            raise UnknownColumnError(f"MERGE {what}: '*' needs every target column in the source; the source lacks {missing}")
        sets = {f.name: f"{backquote(b.source_alias)}.{backquote(source_names[f.name.lower()])}" for f in columns}
    else:
        sets = _target_names([f.name for f in columns], clause.assignments, b.target_alias, root, f"MERGE {what}")
    out = []
    for f in columns:
        if f.name in sets:
            out.append(_column_value(f, sets[f.name]))
        elif clause.action == "update":
            out.append(F.col(f"{backquote(b.target_alias)}.{backquote(f.name)}"))
        else:
            out.append(F.lit(None).cast(to_spark_type(f.type)))
    return out


def _run_merge(b: SparkMergeBuilder) -> RowChangeResult:
    """The join, each row's clause and the new rows computed by Spark in one pass and kept
    (``localCheckpoint``); the driver collects (file, row, kind, clause) and commits."""
    from pyspark.sql import functions as F

    table: Table = b.target  # type: ignore[assignment]
    root = table.path
    snapshot = table.log.snapshot()
    clauses = b.clauses
    check_writable(snapshot.protocol, snapshot.metadata, root)
    if config.is_true(snapshot.metadata.configuration, C.PROP_APPEND_ONLY) and any(c.action != "insert" for c in clauses):
        raise AppendOnlyTableError(
            f"{root}: the table is append-only ({C.PROP_APPEND_ONLY}=true): MERGE may only insert; nothing was written"
        )
    has_nmbs = any(c.kind == "not_matched_by_source" for c in clauses)
    pruning = None if has_nmbs else _merge_pruning(b, snapshot)
    plan = plan_candidates(table, snapshot, pruning)
    target = target_frame(b.spark, table, snapshot, plan)
    t, s = b.target_alias, b.source_alias
    target_side = target.frame.withColumn(_T_MARK, F.lit(True)).alias(t)
    source_side = b.source.withColumn(_S_MARK, F.lit(True)).alias(s)
    t_mark, s_mark = f"{backquote(t)}.{_T_MARK}", f"{backquote(s)}.{_S_MARK}"
    kind = f"CASE WHEN {t_mark} IS NOT NULL AND {s_mark} IS NOT NULL THEN 0 WHEN {t_mark} IS NULL THEN 1 ELSE 2 END"
    choice = (
        f"CASE WHEN {t_mark} IS NOT NULL AND {s_mark} IS NOT NULL THEN {_clause_sql(clauses, 'matched')} "
        f"WHEN {t_mark} IS NULL THEN {_clause_sql(clauses, 'not_matched')} "
        f"ELSE {_clause_sql(clauses, 'not_matched_by_source')} END"
    )
    columns = snapshot.schema.fields
    writing = [i for i, c in enumerate(clauses) if c.action != "delete"]
    check_cardinality = not _merge.cardinality_ok(clauses)
    try:
        joined = target_side.join(source_side, F.expr(b.on), "full" if has_nmbs else "right")
        flagged = joined.withColumn("__vl_kind", F.expr(kind)).withColumn(_CLAUSE, F.expr(choice))
        values = {i: _clause_values(b, i, clauses[i], columns, root) for i in writing}
        new_columns = []
        for j, f in enumerate(columns):
            value = None
            for i in writing:
                value = (F.when if value is None else value.when)(F.col(_CLAUSE) == i, values[i][j])
            if value is not None:
                new_columns.append(value.alias(f.name))
        keep = F.col(_CLAUSE) >= 0
        if check_cardinality:
            keep = keep | (F.col("__vl_kind") == 0)
        outcome = flagged.where(keep).select(
            F.col(f"{backquote(t)}.{FILE_COLUMN}").alias(FILE_COLUMN), F.col(f"{backquote(t)}.{ROW_COLUMN}").alias(ROW_COLUMN),
            F.col("__vl_kind"), F.col(_CLAUSE), *new_columns,
        ).localCheckpoint(eager=True)  # fmt: skip
        chosen = outcome.select(FILE_COLUMN, ROW_COLUMN, "__vl_kind", _CLAUSE).collect()
    except VarlakeError:
        raise
    except Exception as exc:
        raise _spark_failure(root, "MERGE", exc) from None
    if check_cardinality:
        seen_pairs: dict[tuple[str, int], int] = {}
        for name, row, k, _c in chosen:
            if k == 0:
                seen_pairs[(name, row)] = seen_pairs.get((name, row), 0) + 1
        for (name, row), n in seen_pairs.items():
            if n > 1:
                task = target.tasks.get(name)
                raise MergeCardinalityError(
                    f"{root}: MERGE: {n} source rows match the same target row "
                    f"(file {task.relative_path if task else name!r}, row {int(row)}); "
                    "[DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE] nothing was written"
                )
    retired_pairs, seen = [], set()
    deleted = updated = inserted = 0
    for name, row, k, c in chosen:
        if c < 0:
            continue
        if k == 1:
            inserted += 1
            continue
        if (name, row) in seen:  # several source rows deleting one target row (allowed)
            continue
        seen.add((name, row))
        retired_pairs.append((name, row))
        if clauses[c].action == "delete":
            deleted += 1
        else:
            updated += 1
    new_rows = []
    if updated + inserted:
        new_rows.append(outcome.where(F.col(_CLAUSE).isin(writing)).select(*[backquote(f.name) for f in columns]))
    parameters = {
        "predicate": json.dumps(b.on),
        "matchedPredicates": json.dumps([c.describe() for c in clauses if c.kind == "matched"]),
        "notMatchedPredicates": json.dumps([c.describe() for c in clauses if c.kind == "not_matched"]),
        "notMatchedBySourcePredicates": json.dumps([c.describe() for c in clauses if c.kind == "not_matched_by_source"]),
    }
    counts = {"num_deleted_rows": deleted, "num_updated_rows": updated, "num_inserted_rows": inserted}
    return _finish(b.spark, target, "MERGE", _by_file(retired_pairs), new_rows, updated + inserted, counts, parameters)


# --- SQL -----------------------------------------------------------------------------------------------

_DML = re.compile(r"^\s*(?:(?:--[^\n]*\n|/\*.*?\*/)\s*)*(DELETE|UPDATE|MERGE)\b", re.I | re.S)


def _sql(node: Any) -> str:
    return str(node.sql(dialect=SparkSQL))


def _target_of(node: Any, views: Mapping[str, str], what: str) -> tuple[str, str | None]:
    """The ``{name}`` of a statement's target table and its alias."""
    if not isinstance(node, exp.Table) or node.name not in views or node.db:
        raise TableError(f"{what}: the target must be a varlake table given as a {{name}} placeholder")
    alias = node.alias or None
    return views[node.name], alias


def _assignments(items: Sequence[Any], what: str) -> dict[str, str] | None:
    if len(items) == 1 and isinstance(items[0], exp.Star):
        return None
    out = {}
    for item in items:
        if not isinstance(item, exp.EQ):
            raise ExpressionParseError(f"{what}: expected column = expression, got {_sql(item)!r}")
        out[_sql(item.this)] = _sql(item.expression)
    return out


def _source_frame(spark: Any, node: Any, views: Mapping[str, str], tables: Mapping[str, Any]) -> tuple[Any, str | None]:
    """A MERGE's ``USING``: a varlake table placeholder, a Spark table or view, or a subquery."""
    from varlake.spark.reading.reader import read, sql as read_sql

    alias = node.alias or None
    if isinstance(node, exp.Table) and not node.db and node.name in views:
        return read(spark, tables[views[node.name]]), alias
    if isinstance(node, exp.Table):
        return spark.table(".".join(p.name for p in node.parts)), alias
    if isinstance(node, exp.Subquery):
        text = _sql(node.this)
        used = {name: tables[name] for view, name in views.items() if view in text}
        for view, name in views.items():
            text = text.replace(view, "{" + name + "}")
        return (read_sql(spark, text, **used) if used else spark.sql(text)), alias
    raise ExpressionParseError(f"MERGE: cannot use {_sql(node)!r} as the source")


def _counts_frame(spark: Any, result: RowChangeResult, operation: str) -> Any:
    if operation == "MERGE":
        names = ["num_affected_rows", "num_updated_rows", "num_deleted_rows", "num_inserted_rows"]
        values = [result.num_affected_rows, result.num_updated_rows, result.num_deleted_rows, result.num_inserted_rows]
    else:
        names, values = ["num_affected_rows"], [result.num_affected_rows]
    return spark.createDataFrame([tuple(values)], ", ".join(f"{n} bigint" for n in names))


def run_statement(spark: Any, query: str, tables: Mapping[str, Any]) -> tuple[RowChangeResult, str]:
    """Run one DELETE/UPDATE/MERGE statement naming varlake tables as ``{name}``."""
    views = {view_name(name): name for name in tables}
    try:
        node = sqlglot.parse_one(substitute(query, tables), dialect=SparkSQL)
    except SqlglotError as exc:
        raise ExpressionParseError(f"cannot parse the statement: {str(exc).splitlines()[0]}") from None
    if isinstance(node, exp.Delete):
        name, alias = _target_of(node.this, views, "DELETE")
        where = node.args.get("where")
        return delete(spark, tables[name], _sql(where.this) if where else None, target_alias=alias), "DELETE"
    if isinstance(node, exp.Update):
        name, alias = _target_of(node.this, views, "UPDATE")
        sets = _assignments(node.expressions, "UPDATE")
        if sets is None:
            raise ExpressionParseError("UPDATE SET * is not a statement; name the columns")
        where = node.args.get("where")
        return update(spark, tables[name], sets, _sql(where.this) if where else None, target_alias=alias), "UPDATE"
    if isinstance(node, exp.Merge):
        name, t_alias = _target_of(node.this, views, "MERGE")
        using = node.args["using"]
        source, s_alias = _source_frame(spark, using, views, tables)
        if s_alias is None:  # unaliased: named as written (a table's name, or the placeholder's view)
            s_alias = using.name if isinstance(using, exp.Table) else "source"
        builder = merge(spark, tables[name], source, _sql(node.args["on"]), s_alias, t_alias or node.this.name)
        for when in node.args["whens"].expressions:
            builder = _when(builder, when)
        return builder.execute(), "MERGE"
    raise ExpressionParseError(f"not a DELETE, UPDATE or MERGE statement: {query[:80]!r}")


def _when(builder: SparkMergeBuilder, when: Any) -> SparkMergeBuilder:
    condition = when.args.get("condition")
    cond = _sql(condition) if condition is not None else None
    then = when.args.get("then")
    matched, by_source = bool(when.args.get("matched")), bool(when.args.get("source"))
    is_delete = isinstance(then, exp.Var) and then.name.upper() == "DELETE"
    if matched or by_source:
        if is_delete:
            return builder.when_not_matched_by_source_delete(cond) if by_source else builder.when_matched_delete(cond)
        if not isinstance(then, exp.Update):
            raise ExpressionParseError(f"MERGE: WHEN MATCHED needs UPDATE or DELETE, got {_sql(then)!r}")
        sets = _assignments(then.expressions, "MERGE UPDATE")
        if by_source:
            if sets is None:
                raise ExpressionParseError("WHEN NOT MATCHED BY SOURCE THEN UPDATE needs explicit assignments (no source row)")
            return builder.when_not_matched_by_source_update(sets, cond)
        return builder.when_matched_update(sets if sets is not None else "*", cond)
    if not isinstance(then, exp.Insert):
        raise ExpressionParseError(f"MERGE: WHEN NOT MATCHED needs INSERT, got {_sql(then)!r}")
    if isinstance(then.this, exp.Star):
        return builder.when_not_matched_insert("*", cond)
    names, values = then.this, then.expression
    if not isinstance(names, exp.Tuple) or not isinstance(values, exp.Tuple) or len(names.expressions) != len(values.expressions):
        raise ExpressionParseError(f"MERGE: INSERT needs (columns) VALUES (expressions) of one length: {_sql(then)!r}")
    return builder.when_not_matched_insert({_sql(n): _sql(v) for n, v in zip(names.expressions, values.expressions)}, cond)


def sql(
    spark: Any, query: str, /, *, versions: Mapping[str, int] | None = None, storage_options: Mapping[str, str] | None = None,
    **tables: Any,
) -> Any:
    """``spark.reader.sql``, plus ``DELETE FROM {t} ...``, ``UPDATE {t} SET ...`` and ``MERGE
    INTO {t} ...`` (run with Spark, one commit), which return a one-row DataFrame of counts
    (``num_affected_rows``; MERGE also ``num_updated_rows``, ``num_deleted_rows``,
    ``num_inserted_rows``). Tables may be object-store URIs reached with ``storage_options``."""
    from varlake.spark.reading.reader import sql as read_sql

    if isinstance(query, str) and _DML.match(query):
        if versions:
            raise TableError("DELETE, UPDATE and MERGE change the latest version; versions= does not apply")
        opened = {k: open_table(spark, v, storage_options) for k, v in tables.items()}
        result, operation = run_statement(spark, query, opened)
        return _counts_frame(spark, result, operation)
    return read_sql(spark, query, versions=versions, storage_options=storage_options, **tables)

