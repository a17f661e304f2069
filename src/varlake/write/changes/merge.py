"""MERGE INTO a table from a source, engine-neutral: Delta's clause semantics, one commit.

``MergeBuilder`` collects clauses in the order given; ``stage`` evaluates them:

1. **Names.** ``on`` and every condition and assignment see the target as
   ``target_alias`` and the source as ``source_alias``; a bare column name is qualified
   when exactly one side has it (both sides: ``AmbiguousColumnError``). Rows are
   evaluated as ``{target_alias: target_row, source_alias: source_row}`` by the expression
   layer, so Variant paths, casts and NULLs behave as in filters and UPDATE.
2. **Candidate target files** are planned with the target-only conjuncts of ``on`` and,
   for each equality ``t.k = s.k`` on plain columns, the source's key values (an IN list
   or a range): a target row outside them cannot match, so skipped files are untouched.
   With a ``WHEN NOT MATCHED BY SOURCE`` clause every live row is a candidate.
3. **Matching.** Equalities between plain columns of one type family are hash-joined, the
   whole ``on`` is then evaluated on each pair (TRUE matches; NULL does not). A target row
   matched by more than one source row is an error (Delta's
   ``DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE``) unless the only matched
   clause is an unconditional DELETE.
4. **Clauses**, first TRUE condition wins, per kind: ``WHEN MATCHED`` (update/delete) per
   matched pair, ``WHEN NOT MATCHED [BY TARGET]`` (insert) per unmatched source row,
   ``WHEN NOT MATCHED BY SOURCE`` (update/delete) per unmatched target row. ``*`` means
   every target column from the source column of the same name.
5. **Writing** is ``write.row_changes``' (``stage_retirements``): retired rows by deletion
   vector or rewrite, new rows through the table's one write path (layout, shredding,
   statistics, constraints), one commit. An append-only table accepts a MERGE with
   INSERT clauses only.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal as TypingLiteral

import numpy as np
import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from varlake.delta import config
from varlake.delta import constants as C
from varlake.delta.ddl import schema_from_arrow
from varlake.delta.protocol import check_writable
from varlake.delta.schema import StructField, StructType, to_arrow_schema
from varlake.delta.snapshot import Snapshot
from varlake.errors import (
    AmbiguousColumnError,
    AppendOnlyTableError,
    ExpressionParseError,
    MergeCardinalityError,
    TableError,
    UnknownColumnError,
)
from varlake.expr.dialect import DIALECT
from varlake.expr import (
    And,
    Column,
    Comparison,
    In,
    Literal,
    Predicate,
    RowEvaluator,
    bind,
    parse_predicate,
    referenced_columns,
)
from varlake.expr.rows import row_variant_get
from varlake.expr.types import TypeFamily, family_of
from varlake.read import plan_scan, schema_types
from varlake.read.row_matches import RowMatcher, added_file_matcher
from varlake.delta.transaction import ReadSet
from varlake.write.changes.rows import (
    RowChangeResult,
    StagedChange,
    commit_change,
    retry_change,
    stage_retirements,
)
from varlake.write.staging.handle import TableHandle
from varlake.write.changes.set_exprs import CompiledSet, compile_set

__all__ = ["MergeBuilder", "MergeClause", "MergeScope", "cardinality_ok", "equi_keys", "skipping_filter", "stage_merge"]

ClauseKind = TypingLiteral["matched", "not_matched", "not_matched_by_source"]
ClauseAction = TypingLiteral["update", "delete", "insert"]
#: at most this many distinct source keys become an IN list for skipping (else a range)
MAX_IN_LIST = 10_000
_KEY_FAMILIES = (TypeFamily.EXACT_NUMERIC, TypeFamily.STRING, TypeFamily.DATE, TypeFamily.BOOLEAN, TypeFamily.TIMESTAMP, TypeFamily.TIMESTAMP_NTZ, TypeFamily.BINARY)
_NUMERIC = frozenset({TypeFamily.EXACT_NUMERIC, TypeFamily.FLOAT, TypeFamily.DOUBLE})


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause: ``assignments`` None means ``*`` (every column from the source)."""

    kind: ClauseKind
    action: ClauseAction
    condition: str | None = None
    assignments: Mapping[str, str] | None = None

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"actionType": self.action}
        if self.condition is not None:
            out["predicate"] = self.condition
        return out


class MergeBuilder:
    """``Table.merge(...)``'s builder: add clauses, then ``execute()`` (one commit).

    Each ``when_*`` method returns a new builder, so a partly built merge can be reused."""

    def __init__(
        self,
        target: TableHandle,
        source: pa.Table,
        on: str,
        source_alias: str = "s",
        target_alias: str = "t",
        clauses: tuple[MergeClause, ...] = (),
        retries: int = 0,
    ) -> None:
        if not isinstance(on, str) or not on.strip():
            raise ExpressionParseError("MERGE needs an ON condition (SQL text), e.g. on='t.id = s.id'")
        if source_alias.lower() == target_alias.lower():
            raise ExpressionParseError(f"MERGE: the source and target aliases are both {source_alias!r}")
        self.target, self.source, self.on = target, source, on
        self.source_alias, self.target_alias = source_alias, target_alias
        self.clauses, self.retries = clauses, retries

    def _with(self, clause: MergeClause) -> "MergeBuilder":
        return MergeBuilder(
            self.target, self.source, self.on, self.source_alias, self.target_alias, self.clauses + (clause,), self.retries
        )

    def when_matched_update(self, set: Mapping[str, str] | str = "*", condition: str | None = None) -> "MergeBuilder":
        """``WHEN MATCHED [AND condition] THEN UPDATE SET ...`` (``"*"``: every column)."""
        return self._with(MergeClause("matched", "update", condition, _assignments(set)))

    def when_matched_update_all(self, condition: str | None = None) -> "MergeBuilder":
        return self.when_matched_update("*", condition)

    def when_matched_delete(self, condition: str | None = None) -> "MergeBuilder":
        """``WHEN MATCHED [AND condition] THEN DELETE``."""
        return self._with(MergeClause("matched", "delete", condition))

    def when_not_matched_insert(self, values: Mapping[str, str] | str = "*", condition: str | None = None) -> "MergeBuilder":
        """``WHEN NOT MATCHED [AND condition] THEN INSERT ...`` (``"*"``: every column)."""
        return self._with(MergeClause("not_matched", "insert", condition, _assignments(values)))

    def when_not_matched_insert_all(self, condition: str | None = None) -> "MergeBuilder":
        return self.when_not_matched_insert("*", condition)

    def when_not_matched_by_source_update(self, set: Mapping[str, str], condition: str | None = None) -> "MergeBuilder":
        """``WHEN NOT MATCHED BY SOURCE [AND condition] THEN UPDATE SET ...``."""
        if set == "*" or not isinstance(set, Mapping):
            raise ExpressionParseError("WHEN NOT MATCHED BY SOURCE THEN UPDATE needs explicit assignments (no source row)")
        return self._with(MergeClause("not_matched_by_source", "update", condition, dict(set)))

    def when_not_matched_by_source_delete(self, condition: str | None = None) -> "MergeBuilder":
        """``WHEN NOT MATCHED BY SOURCE [AND condition] THEN DELETE``."""
        return self._with(MergeClause("not_matched_by_source", "delete", condition))

    def stage(self, snapshot: Snapshot | None = None) -> StagedChange:
        return stage_merge(
            self.target, self.source, self.on, self.clauses, self.source_alias, self.target_alias, snapshot
        )

    def execute(self) -> RowChangeResult:
        """Run the merge: one commit (``version`` None when it changed nothing)."""
        if not self.clauses:
            raise ExpressionParseError("MERGE needs at least one WHEN clause")
        return retry_change(lambda: commit_change(self.target, self.stage()), self.retries)


def _assignments(value: Mapping[str, str] | str) -> Mapping[str, str] | None:
    if isinstance(value, str):
        if value.strip() == "*":
            return None
        raise ExpressionParseError(f"MERGE assignments must be a mapping of column to SQL or '*', got {value!r}")
    if not isinstance(value, Mapping) or not value:
        raise ExpressionParseError("MERGE assignments must be a non-empty mapping of column to SQL expression")
    return dict(value)


# --- names ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MergeScope:
    """The two sides' names and types, and the combined row types the expression layer binds."""

    target_alias: str
    source_alias: str
    target_schema: StructType
    source_schema: StructType

    @property
    def target_names(self) -> dict[str, str]:
        return {f.name.lower(): f.name for f in self.target_schema.fields}

    @property
    def source_names(self) -> dict[str, str]:
        return {f.name.lower(): f.name for f in self.source_schema.fields}

    def types(self) -> dict[tuple[str, ...], str]:
        out: dict[tuple[str, ...], str] = {(self.target_alias,): "struct", (self.source_alias,): "struct"}
        for alias, schema in ((self.target_alias, self.target_schema), (self.source_alias, self.source_schema)):
            for path, type_name in schema_types(schema).items():
                out[(alias, *path)] = type_name
        return out

    def qualify(self, text: str, what: str) -> str:
        """``text`` with every bare column name prefixed by the side that has it."""
        try:
            node = sqlglot.parse_one(text, read=DIALECT)
        except SqlglotError as exc:
            raise ExpressionParseError(f"MERGE {what}: cannot parse {text!r}: {str(exc).splitlines()[0]}") from None
        aliases = {self.target_alias.lower(), self.source_alias.lower()}
        targets, sources = self.target_names, self.source_names
        for column in list(node.find_all(exp.Column)):
            table = column.table
            if table and table.lower() in aliases:
                column.set("table", exp.to_identifier(self.target_alias if table.lower() == self.target_alias.lower() else self.source_alias))
                continue
            if table:  # a struct field reference a.b where a is a column: qualify the root
                root = table.lower()
            else:
                root = column.name.lower()
            in_target, in_source = root in targets, root in sources
            if in_target and in_source:
                raise AmbiguousColumnError(
                    f"MERGE {what}: column {column.sql(dialect=DIALECT)!r} is in both the target and the source; "
                    f"qualify it as {self.target_alias}.{root} or {self.source_alias}.{root}"
                )
            if not in_target and not in_source:
                raise UnknownColumnError(f"MERGE {what}: column {column.sql(dialect=DIALECT)!r} is in neither the target nor the source")
            alias = self.target_alias if in_target else self.source_alias
            parts = [p.name for p in column.parts]
            qualified = _column_path([alias, *parts])
            if column is node:  # the whole expression is this column
                node = qualified
            else:
                column.replace(qualified)
        return node.sql(dialect=DIALECT)


def _column_path(parts: Sequence[str]) -> exp.Expression:
    """A column reference ``a.b.c...`` (any depth) as sqlglot nodes."""
    node: exp.Expression = exp.column(parts[1], table=parts[0]) if len(parts) > 1 else exp.column(parts[0])
    for part in parts[2:]:
        node = exp.Dot(this=node, expression=exp.to_identifier(part))
    return node


def _conjuncts(predicate: Predicate) -> list[Predicate]:
    if isinstance(predicate, And):
        return _conjuncts(predicate.left) + _conjuncts(predicate.right)
    return [predicate]


def _strip_alias(node: Any, alias: str) -> Any:
    """The tree with ``alias.`` removed from every column path (all columns are on that side)."""
    if isinstance(node, Column):
        return dataclasses.replace(node, path=node.path[1:])
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        changes = {}
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            if dataclasses.is_dataclass(value) or isinstance(value, tuple):
                changes[f.name] = (
                    tuple(_strip_alias(v, alias) for v in value) if isinstance(value, tuple) else _strip_alias(value, alias)
                )
        return dataclasses.replace(node, **changes) if changes else node
    return node


# --- staging -------------------------------------------------------------------------------------


def _key_value(value: Any) -> Any:
    """A join key as Python compares it the way Spark's ``=`` does (NaN equals NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return ("NaN",)
    if isinstance(value, dict):  # structs are not hash-joined
        raise TypeError
    return value


def equi_keys(on: Predicate, scope: MergeScope, types: Mapping[tuple[str, ...], str]) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """``(target path, source path)`` of the ``on`` conjuncts that are ``t.x = s.y`` on plain
    columns of one type family (hash-joinable with Python equality)."""
    pairs = []
    for part in _conjuncts(on):
        if not (isinstance(part, Comparison) and part.op == "=" and isinstance(part.left, Column) and isinstance(part.right, Column)):
            continue
        left, right = part.left.path, part.right.path
        if left[0] == scope.source_alias and right[0] == scope.target_alias:
            left, right = right, left
        if left[0] != scope.target_alias or right[0] != scope.source_alias:
            continue
        lt, rt = types.get(left), types.get(right)
        if lt is None or rt is None:
            continue
        lf, rf = family_of(lt), family_of(rt)
        if (lf == rf and lf in _KEY_FAMILIES) or (lf in _NUMERIC and rf in _NUMERIC):
            pairs.append((left, right))
    return pairs


def _get(row: Mapping[str, Any] | None, path: Sequence[str]) -> Any:
    for part in path:
        if row is None:
            return None
        row = row.get(part)  # type: ignore[assignment]
    return row


_KEY_ARROW_TYPES = (pa.types.is_integer, pa.types.is_string, pa.types.is_large_string, pa.types.is_date32, pa.types.is_boolean)


def _rows_with_source_keys(
    rows: pa.Table, keys: Sequence[tuple[tuple[str, ...], tuple[str, ...]]], source: pa.Table
) -> np.ndarray | None:
    """Which target ``rows`` hold, for each equi-key on top-level columns of one Arrow type
    (integers, strings, dates, booleans: Arrow's equality is Python's), a value some source
    row holds -- a superset of the rows the hash join can match (None: no key checked)."""
    import pyarrow.compute as pc

    mask = None
    for target_path, source_path in keys:
        if len(target_path) != 2 or len(source_path) != 2:
            continue
        name, source_name = target_path[1], source_path[1]
        if name not in rows.column_names or source_name not in source.column_names:
            continue
        column, values = rows.column(name), source.column(source_name)
        if column.type != values.type or not any(test(column.type) for test in _KEY_ARROW_TYPES):
            continue
        value_set = pc.unique(values.combine_chunks()).drop_null()
        found = pc.is_in(column, value_set=value_set, skip_nulls=True).fill_null(False)
        found = np.asarray(found.to_numpy(), dtype=bool)
        mask = found if mask is None else mask & found
    return mask


def skipping_filter(
    on_unbound: Predicate, scope: MergeScope, keys: Sequence[tuple[tuple[str, ...], tuple[str, ...]]], source_rows: list[dict[str, Any]], types: Mapping[tuple[str, ...], str]
) -> Predicate | None:
    """What ``on`` implies about a matching target row, over target columns only."""
    parts: list[Predicate] = []
    for part in _conjuncts(on_unbound):
        roots = {c.path[0] for c in referenced_columns(part)}
        if roots == {scope.target_alias}:
            parts.append(_strip_alias(part, scope.target_alias))
    for target_path, source_path in keys:
        if len(target_path) != 2:
            continue
        values = {_get(row, source_path[1:]) for row in source_rows}
        values.discard(None)
        values = {v for v in values if not (isinstance(v, float) and math.isnan(v))}
        column = Column(target_path[1:])
        type_name = types[target_path]
        if not values:
            continue
        if len(values) <= MAX_IN_LIST and family_of(type_name) == family_of(types[source_path]):
            parts.append(In(column, tuple(Literal(v, types[source_path]) for v in sorted(values, key=_sort_key))))
        elif family_of(type_name) == family_of(types[source_path]):
            ordered = sorted(values, key=_sort_key)
            parts.append(Comparison(">=", column, Literal(ordered[0], types[source_path])))
            parts.append(Comparison("<=", column, Literal(ordered[-1], types[source_path])))
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = And(out, p)
    return out


def _sort_key(value: Any) -> Any:
    return (str(type(value)), value)


@dataclass
class _Compiled:
    clauses: list[tuple[MergeClause, RowEvaluator | None, CompiledSet | None]]


def _compile_clauses(
    clauses: Sequence[MergeClause], scope: MergeScope, types: Mapping[tuple[str, ...], str]
) -> list[tuple[MergeClause, RowEvaluator | None, CompiledSet | None]]:
    out = []
    target_types = schema_types(scope.target_schema)
    sources = scope.source_names
    for i, clause in enumerate(clauses):
        what = f"WHEN clause {i + 1} ({clause.kind.replace('_', ' ')} {clause.action})"
        condition = None
        if clause.condition is not None:
            condition = RowEvaluator(bind(parse_predicate(scope.qualify(clause.condition, what)), types), variant_get=row_variant_get)
        compiled = None
        if clause.action in ("update", "insert"):
            assignments = clause.assignments
            if assignments is None:  # *: every target column from the source column of that name
                missing = [f.name for f in scope.target_schema.fields if f.name.lower() not in sources]
                if missing:
                    raise UnknownColumnError(
                        f"MERGE {what}: '*' needs every target column in the source; the source lacks {missing}"
                    )
                assignments = {f.name: f"{scope.source_alias}.`{sources[f.name.lower()]}`" for f in scope.target_schema.fields}
            qualified = {}
            for column, text in assignments.items():
                name = str(column)
                if "." in name and name.split(".", 1)[0].lower() == scope.target_alias.lower():
                    name = name.split(".", 1)[1]
                qualified[name] = scope.qualify(text, f"{what} SET {name}")
            compiled = compile_set(qualified, types, targets=target_types)
        out.append((clause, condition, compiled))
    return out


def cardinality_ok(clauses: Sequence[MergeClause]) -> bool:
    """Several source rows may match one target row only when the sole matched clause is an
    unconditional DELETE (Delta's rule)."""
    matched = [c for c in clauses if c.kind == "matched"]
    return not matched or (len(matched) == 1 and matched[0].action == "delete" and matched[0].condition is None)


def stage_merge(
    target: TableHandle,
    source: pa.Table,
    on: str,
    clauses: Sequence[MergeClause],
    source_alias: str = "s",
    target_alias: str = "t",
    snapshot: Snapshot | None = None,
) -> StagedChange:
    """Plan a MERGE (see the module doc) and write its files; ``commit_change`` commits it."""
    snapshot = snapshot or target.log.snapshot()
    root = target.path
    check_writable(snapshot.protocol, snapshot.metadata, root)
    if config.is_true(snapshot.metadata.configuration, C.PROP_APPEND_ONLY) and any(c.action != "insert" for c in clauses):
        raise AppendOnlyTableError(
            f"{root}: the table is append-only ({C.PROP_APPEND_ONLY}=true): MERGE may only insert; nothing was written"
        )
    scope = MergeScope(target_alias, source_alias, snapshot.schema, schema_from_arrow(source.schema))
    types = scope.types()
    on_unbound = parse_predicate(scope.qualify(on, "ON"))
    on_bound = bind(on_unbound, types)
    on_eval = RowEvaluator(on_bound, variant_get=row_variant_get)
    compiled = _compile_clauses(clauses, scope, types)
    has_nmbs = any(c.kind == "not_matched_by_source" for c in clauses)
    has_matched = any(c.kind == "matched" for c in clauses)
    source_rows = source.to_pylist()
    keys = equi_keys(on_bound, scope, types)

    # candidate target rows
    pruning = None if has_nmbs else skipping_filter(on_unbound, scope, keys, source_rows, types)
    plan = plan_scan(snapshot, target.log.root_location, pruning)
    matcher = RowMatcher(plan, target.read_source, target.deleted_rows)
    files = [matcher.match(task, all_columns=True) for task in plan.tasks] if (has_matched or has_nmbs or source_rows) else []

    # join
    index: dict[tuple[Any, ...], list[int]] | None = None
    if keys:
        index = defaultdict(list)
        for j, row in enumerate(source_rows):
            try:
                key = tuple(_key_value(_get(row, s[1:])) for _t, s in keys)
            except TypeError:
                index = None
                break
            if any(k is None for k in key):
                continue
            index[key].append(j)
    null_target = {f.name: None for f in scope.target_schema.fields}
    null_source = {f.name: None for f in scope.source_schema.fields}
    source_matched = np.zeros(len(source_rows), dtype=bool)
    retire: list[tuple[Any, np.ndarray]] = []
    new_rows: list[dict[str, Any]] = []
    updated = deleted = inserted = 0
    for found in files:
        positions = np.flatnonzero(found.matched if not has_nmbs else found.live)
        if index is not None and not has_nmbs and len(positions):  # only rows whose keys the source has
            maybe = _rows_with_source_keys(found.rows, keys, source)
            if maybe is not None:
                positions = np.flatnonzero(found.matched & maybe)
        if not len(positions):
            continue
        rows = found.rows.take(pa.array(positions, pa.int64())).to_pylist()
        gone = []
        for position, trow in zip(positions, rows):
            if index is not None:
                try:
                    key = tuple(_key_value(_get(trow, t[1:])) for t, _s in keys)
                except TypeError:
                    key = None
                candidates = index.get(key, []) if key is not None and None not in key else []
            else:
                candidates = range(len(source_rows))
            matches = [j for j in candidates if on_eval.matches({target_alias: trow, source_alias: source_rows[j]})]
            if len(matches) > 1 and not cardinality_ok(clauses):
                raise MergeCardinalityError(
                    f"{root}: MERGE: {len(matches)} source rows match the same target row "
                    f"(file {found.task.relative_path!r}, row {int(position)}); "
                    "[DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE] nothing was written"
                )
            if matches:
                source_matched[matches] = True
                action = _apply(compiled, "matched", {target_alias: trow, source_alias: source_rows[matches[0]]}, trow)
            elif has_nmbs:
                action = _apply(compiled, "not_matched_by_source", {target_alias: trow, source_alias: null_source}, trow)
            else:
                action = None
            if action is None:
                continue
            gone.append(int(position))
            if action == "delete":
                deleted += 1
            else:
                updated += 1
                new_rows.append(action)
        if gone:
            retire.append((found, np.asarray(gone, dtype=np.int64)))
    for j, srow in enumerate(source_rows):
        if source_matched[j]:
            continue
        action = _apply(compiled, "not_matched", {target_alias: null_target, source_alias: srow}, null_target)
        if isinstance(action, dict):
            inserted += 1
            new_rows.append(action)
    arrow_rows = pa.Table.from_pylist(new_rows, schema=to_arrow_schema(snapshot.schema)) if new_rows else None
    parameters = {
        "predicate": json.dumps(on),
        "matchedPredicates": json.dumps([c.describe() for c in clauses if c.kind == "matched"]),
        "notMatchedPredicates": json.dumps([c.describe() for c in clauses if c.kind == "not_matched"]),
        "notMatchedBySourcePredicates": json.dumps([c.describe() for c in clauses if c.kind == "not_matched_by_source"]),
    }
    reads = ReadSet(frozenset(t.add.path for t in plan.tasks), added_file_matcher(snapshot, plan))
    return stage_retirements(
        target, snapshot, "MERGE", retire, arrow_rows, reads, parameters,
        counts={"deleted": deleted, "updated": updated, "inserted": inserted},
        plan=plan,
    )


def _apply(
    compiled: Sequence[tuple[MergeClause, RowEvaluator | None, CompiledSet | None]],
    kind: str,
    row: Mapping[str, Any],
    base: Mapping[str, Any],
) -> dict[str, Any] | str | None:
    """The first clause of ``kind`` whose condition is TRUE: "delete", the new row, or None."""
    for clause, condition, assignments in compiled:
        if clause.kind != kind or (condition is not None and not condition.matches(row)):
            continue
        if clause.action == "delete":
            return "delete"
        new = dict(base)
        assert assignments is not None
        for column in assignments.columns:
            new[column] = assignments.evaluate(column, row)
        return new
    return None
