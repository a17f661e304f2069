"""The one sqlglot dialect varlake reads and writes SQL with: ``SparkSQL``.

Databricks' dialect is Spark SQL plus the Variant shorthand (``v:a.b``,
``v:a['x y'][0]::bigint``), which sqlglot's plain ``spark`` does not parse, and it keeps
ANSI ``CAST`` distinct from ``TRY_CAST``. ``SparkSQL`` adds the parsing rules in which
Spark 4.3 differs from it. Every module that parses or renders SQL with sqlglot
(predicates, SET expressions, MERGE conditions, the Spark reader's analysis and rewrites)
uses ``DIALECT``, so a tree parsed in one place reads the same in another.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.databricks import Databricks
from sqlglot.generators.databricks import DatabricksGenerator
from sqlglot.parser import binary_range_parser
from sqlglot.parsers.databricks import DatabricksParser
from sqlglot.tokens import TokenType

__all__ = ["CANONICAL", "DIALECT", "SparkSQL"]

_TYPED_LITERAL = "typed_literal"


def _typed_literal(parser: DatabricksParser, this: exp.Expr, to: exp.DataType) -> exp.Expr:
    """``DATE '2024-01-02'``: sqlglot's cast of the string, marked to be written back as a
    typed literal (Spark parses the two differently, and the verdict compares parses)."""
    node = parser.expression(exp.Cast(this=this, to=to))
    node.meta[_TYPED_LITERAL] = True
    return node


_OPERATOR = "operator"
_RLIKE = binary_range_parser(exp.RegexpLike)


def _rlike(parser: DatabricksParser, this: exp.Expr | None) -> exp.Expr | None:
    """``a RLIKE b`` (or ``REGEXP``), marked to be written back as the operator, which
    Spark parses differently from the ``regexp_like`` function."""
    node = _RLIKE(parser, this)
    like = node.this if isinstance(node, exp.Escape) else node
    if isinstance(like, exp.RegexpLike):
        like.meta[_OPERATOR] = True
    return node


class SparkSQL(Databricks):
    """Databricks' dialect (Spark SQL with ``v:a::t``), with fixes for Spark 4.3.

    ``''`` inside a string literal is an escaped quote in Spark, bracketed Variant path
    keys must use single quotes (``v:['a b']``), and date/timestamp typed literals are
    written back as written (not as casts), as is the ``RLIKE`` operator.
    """

    class Tokenizer(Databricks.Tokenizer):
        STRING_ESCAPES = ["\\", "'"]

    class Parser(DatabricksParser):
        TYPE_LITERAL_PARSERS = {
            **DatabricksParser.TYPE_LITERAL_PARSERS,
            **{
                t: _typed_literal
                for t in (exp.DType.DATE, exp.DType.TIMESTAMP, exp.DType.TIMESTAMPTZ, exp.DType.TIMESTAMPNTZ, exp.DType.TIMESTAMPLTZ)
            },
        }
        RANGE_PARSERS = {**DatabricksParser.RANGE_PARSERS, TokenType.RLIKE: _rlike}
        # kept as written: sqlglot reads date_sub(d, n) as DATE_ADD(d, n * -1), which Spark parses differently
        FUNCTIONS = {**DatabricksParser.FUNCTIONS, "DATE_SUB": lambda args: exp.Anonymous(this="DATE_SUB", expressions=args)}

    class Generator(DatabricksGenerator):
        JSON_PATH_SINGLE_QUOTE_ESCAPE = True

        def cast_sql(self, expression: exp.Cast, safe_prefix: str | None = None) -> str:
            this = expression.this
            if expression.meta.get(_TYPED_LITERAL) and isinstance(this, exp.Literal) and this.is_string and not safe_prefix:
                return f"{self.sql(expression, 'to')} {self.sql(this)}"
            return super().cast_sql(expression, safe_prefix)

        def not_sql(self, expression: exp.Not) -> str:
            # sqlglot reads ``x IS NOT NULL`` as NOT(x IS NULL); Spark plans ``NOT x IS NULL`` as
            # Not(IsNull(x)) but ``x IS NOT NULL`` as IsNotNull(x), so write the form the user wrote
            this = expression.this
            if isinstance(this, exp.Is) and isinstance(this.expression, exp.Null):
                return f"{self.sql(this, 'this')} IS NOT NULL"
            return super().not_sql(expression)

        def regexplike_sql(self, expression: exp.RegexpLike) -> str:
            if expression.meta.get(_OPERATOR):
                return self.binary(expression, "RLIKE")
            return self.function_fallback_sql(expression)


#: the dialect every sqlglot parse and rendering in varlake uses
DIALECT = SparkSQL
#: sqlglot's own spelling of a tree (Databricks' generator, without ``SparkSQL``'s as-written
#: forms such as the ``RLIKE`` operator), used only to name a fragment in an error message
CANONICAL = Databricks
