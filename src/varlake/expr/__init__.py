"""Predicates for varlake: a tree, SQL text -> tree, binding, row evaluation, data skipping.

Typical use::

    pred = bind(parse_predicate("v:a::bigint > 5 AND ts >= '2024-01-01'"), schema)
    skip = SkippingEvaluator(pred, partition_columns={"day": "date"})
    files = [f for f in files if skip.might_match(stats_of(f))]
    keep = RowEvaluator(pred, variant_get=...).matches(row)
"""

from varlake.expr.binding import bind, term_type
from varlake.expr.normalize import normalize
from varlake.expr.partition import parse_partition_value
from varlake.expr.rows import RowEvaluator, compare_values
from varlake.expr.skipping import ROWS_CANNOT_MATCH, ROWS_MIGHT_MATCH, SkippingEvaluator
from varlake.expr.sql import parse_predicate, parse_term, predicate_of, term_of
from varlake.expr.stats import STRING_PREFIX_LENGTH, FileStats, VariantBound
from varlake.expr.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Call,
    Cast,
    Column,
    Comparison,
    Condition,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    NotIn,
    Or,
    Predicate,
    Term,
    VariantGet,
    col,
    lit,
    try_vget,
    vget,
)
from varlake.expr.types import ColumnPath, TypeFamily, flatten_delta_schema, normalize_type
from varlake.expr.visitors import PredicateVisitor, referenced_columns, rewrite_not, visit

__all__ = [
    "ROWS_CANNOT_MATCH",
    "ROWS_MIGHT_MATCH",
    "STRING_PREFIX_LENGTH",
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "Call",
    "Cast",
    "Column",
    "ColumnPath",
    "Comparison",
    "Condition",
    "FileStats",
    "In",
    "IsNotNull",
    "IsNull",
    "Literal",
    "Not",
    "NotIn",
    "Or",
    "Predicate",
    "PredicateVisitor",
    "RowEvaluator",
    "SkippingEvaluator",
    "Term",
    "TypeFamily",
    "VariantBound",
    "VariantGet",
    "bind",
    "col",
    "compare_values",
    "flatten_delta_schema",
    "lit",
    "normalize",
    "normalize_type",
    "parse_partition_value",
    "parse_predicate",
    "parse_term",
    "predicate_of",
    "term_of",
    "referenced_columns",
    "rewrite_not",
    "term_type",
    "try_vget",
    "visit",
    "vget",
]
