"""Comparisons of DATEs read from string leaves of ISO dates, rewritten to compare the
texts (``dates_as_text``): the same answer without parsing a date per row, and a filter
Parquet can check against a string leaf's bounds."""

from __future__ import annotations

from collections.abc import Mapping

import sqlglot
from sqlglot import exp

from varlake.expr.dialect import SparkSQL
from varlake.semantics.datetime_text import string_to_date
from varlake.spark.reading.leaf_casts import iso_date_text_sql

__all__ = ["compared", "dates_as_text"]


_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.NullSafeEQ)


def compared(node: exp.Expr) -> bool:
    """Whether ``node`` is compared (``=``, ``<``, ..., ``<=>``, the subject of ``BETWEEN``):
    a DATE of ISO text there may compare as text (``dates_as_text``)."""
    parent = node.parent
    return isinstance(parent, _COMPARISONS) or (isinstance(parent, exp.Between) and parent.this is node)


def dates_as_text(texts: Mapping[int, tuple[exp.Expr, exp.Expr]], copies: Mapping[int, exp.Expr]) -> None:
    """Comparisons of DATEs read from leaves of ISO dates (``texts``: original node id ->
    (that node, the leaf's text); an exploded field or a site of a path) with each other, or with a DATE
    constant (``_constant_date``), rewritten in the copy (``copies``: original node id ->
    copy, sites already rewritten) to compare texts: the same answer
    (``leaf_casts.iso_date_text_sql``) without parsing a date per row, and a filter Parquet
    can check against a string leaf's bounds. A constant outside the span of ISO texts
    keeps the comparison as written (Spark folds the test of a constant away)."""
    def text(side: exp.Expr) -> exp.Expr:
        return texts[id(side)][1].copy()

    done: set[int] = set()
    for node, _ in texts.values():
        compare = node.parent
        if compare is None or id(compare) in done or not compared(node):
            continue
        done.add(id(compare))
        if isinstance(compare, _COMPARISONS):
            left, right = compare.this, compare.expression
            if id(left) in texts and id(right) in texts:
                copies[id(compare)].replace(type(compare)(this=text(left), expression=text(right)))
                continue
            constant = right if id(left) in texts else left
            if not _constant_date(constant):
                continue
            test, value = _iso_text(constant)
            both = type(compare)(this=text(left), expression=value) if id(left) in texts else type(compare)(this=value, expression=text(right))
        else:
            low, high = compare.args.get("low"), compare.args.get("high")
            if not (_constant_date(low) and _constant_date(high)):
                continue
            (low_test, low_text), (high_test, high_text) = _iso_text(low), _iso_text(high)
            test = exp.and_(low_test, high_test)
            both = exp.Between(this=text(node), low=low_text, high=high_text)
        written = copies[id(compare)]
        written.replace(exp.Case(ifs=[exp.If(this=test, true=both)], default=written.copy()))


def _iso_text(date: exp.Expr) -> tuple[exp.Expr, exp.Expr]:
    """``leaf_casts.iso_date_text_sql`` of a DATE constant, as (test, text) nodes."""
    test, text = iso_date_text_sql(date.sql(dialect=SparkSQL))
    return sqlglot.parse_one(test, dialect=SparkSQL), sqlglot.parse_one(text, dialect=SparkSQL)


def _constant_date(node: exp.Expr | None) -> bool:
    """Whether ``node`` is a DATE that never fails and is the same on every row: a DATE
    literal, ``current_date()``, or ``date_add``, ``date_sub``, ``add_months`` of one by an
    integer literal."""
    if isinstance(node, exp.Paren):
        return _constant_date(node.this)
    if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):  # DATE'...' (a date Spark reads)
        literal = node.this
        return (node.to.this == exp.DataType.Type.DATE and isinstance(literal, exp.Literal) and literal.is_string
                and string_to_date(literal.this) is not None)
    if isinstance(node, exp.CurrentDate):
        return not node.args.get("this")
    if isinstance(node, exp.AddMonths):
        return _constant_date(node.this) and _integer(node.expression)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in ("date_add", "date_sub") and len(node.expressions) == 2:
        return _constant_date(node.expressions[0]) and _integer(node.expressions[1])
    if isinstance(node, exp.TsOrDsAdd):  # ``date_add(d, n)``, regenerated as such
        unit = node.args.get("unit")
        days = unit is None or (isinstance(unit, exp.Var) and unit.name.upper() == "DAY")
        return days and _constant_date(node.this) and _integer(node.expression)
    return False


def _integer(node: exp.Expr | None) -> bool:
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit()
