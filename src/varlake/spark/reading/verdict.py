"""Spark's own verdict on a query text, before and after varlake reads it with sqlglot.

varlake rewrites a query from what sqlglot parsed, and sqlglot is more lenient than
Spark's parser: it drops a stray trailing comma (``IN (1,)``, ``FROM t,``), turns
``FETCH FIRST n ROWS ONLY`` into ``LIMIT n``, reads ``SELECT a, FROM t`` as ``SELECT a
FROM t`` where Spark reads a column ``FROM`` aliased ``t``... So two questions go to the
caller's session's own SQL parser (parsing only: no catalog, no analysis):

* ``Verdict(spark, text)``: does Spark parse the text at all (the ``{name}``
  placeholders replaced by their view names)? If not, Spark's ``ParseException``
  (pyspark's ``pyspark.errors.ParseException``, what ``spark.sql`` raises for the text)
  goes to the caller before anything else happens;
* ``Verdict.same_query``: does sqlglot's regeneration of its (unrewritten) tree parse to
  the same plan as the user's text? Only then does what varlake derived from sqlglot's
  tree (the sites it rewrites, the filters it skips files by) describe the query Spark
  reads; otherwise the query runs as written.

"The same plan" is decided on Spark's unresolved logical plans, which carry fresh
expression ids per parse (so JVM equality never holds; ``canonicalized`` fails on most
unresolved plans). A plan's fingerprint is its string with the ids blanked (a plan with a
list longer than ``spark.sql.debug.maxToStringFields`` is printed again in a private
session with that bound lifted, so no list is cut short) and the text's literal tokens as
Spark's lexer spells them (strings, numbers with their type suffix, hex, the keyword of
a typed literal): the string shows every node, alias, identifier, literal value and the
fields a JSON rendering would leave out (a cast's mode: ``try_cast``; a relation's
options: ``[k=v]``), but not a literal's type (``1``, ``1L`` and ``'1'`` all print as
``1``), which the tokens add. A regeneration that spells a literal otherwise counts as
different -- slower, never wrong. Function names are compared case-insensitively (Spark
resolves them so; sqlglot writes ``count`` as ``COUNT``). Anything else differing --
including syntax sqlglot writes differently but equivalently (aliases it adds in
``struct(...)``, ``t, LATERAL (...)`` as a ``CROSS JOIN``; ``SparkSQL`` keeps typed
literals and ``RLIKE`` as written) -- counts as a different query, as does a plan Spark
cannot render: the check errs on the side of running the text as written. (The plan's
JSON was compared as well until it was measured: Spark renders an ``Aggregate`` with two
``CASE`` sums to JSON in 45 ms, a quarter of a TPC-H query's planning, for nothing the
string and the tokens do not already tell apart.)

On a Spark Connect session there is no JVM to call: the text goes to the server as
``EXPLAIN EXTENDED <text>`` (a command that parses its statement and never runs it),
whose ``Parsed Logical Plan`` section is the plan's string (printed again in a session
clone with ``maxToStringFields`` lifted when a list was cut short). A text the ``EXPLAIN``
form does not parse is given to ``spark.sql`` itself for Spark's own error and message
(a text that does not parse runs nothing); a SQL script, which ``EXPLAIN`` cannot wrap
and ``spark.sql`` would run, gets the ``EXPLAIN`` form's error instead.

Texts are parsed as ``spark.sql`` parses them (``parsePlanWithParameters`` with an empty
parameter context, the caller's session active so the parser reads its confs: the same
plan, the same error and message). The calls run on the caller's thread: on a worker
thread each py4j call would wait for the GIL while varlake runs sqlglot, which cost more
than the calls themselves (about 2-6 ms of JVM and Python time per query in all).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from varlake.spark.session.quiet import handled_errors_unlogged
from varlake.spark.session.local import is_classic

__all__ = ["ClassicPlan", "ConnectPlan", "Verdict", "fingerprint", "parse_plan"]

_EXPR_ID = re.compile(r"#\d+")
_FUNCTION = re.compile(r"'([A-Za-z_][\w.]*)\(")
_MAX_FIELDS = "spark.sql.debug.maxToStringFields"
_CUT_SHORT = " more field"

_LOCK = threading.Lock()
_RENDERERS: dict[Any, Any] = {}
_PARSERS: dict[str, tuple[Any, Any]] = {}
_SESSION_CLASS: list[tuple[Any, Any]] = []


def _activate(spark: Any, jsession: Any) -> None:
    """Make ``jsession`` the active session of this thread's JVM thread (``SQLConf.get``
    reads its confs there), as ``spark.sql`` and ``createDataFrame`` do."""
    jvm = spark._jvm
    if not _SESSION_CLASS or _SESSION_CLASS[0][0] is not jvm:
        from pyspark.sql import SparkSession

        _SESSION_CLASS[:] = [(jvm, SparkSession._get_j_spark_session_class(jvm))]  # looked up once: several py4j calls
    _SESSION_CLASS[0][1].setActiveSession(jsession)


def _renderer(spark: Any) -> Any:
    """A private JVM session of ``spark``'s application in which plans print whole."""
    key = spark.sparkContext.applicationId
    with _LOCK:
        session = _RENDERERS.get(key)
        if session is None:
            session = spark._jsparkSession.newSession()
            session.conf().set(_MAX_FIELDS, str(2**31 - 1))
            _RENDERERS.clear()  # a stopped application's session is of no further use
            _RENDERERS[key] = session
        return session


def _parser(spark: Any) -> tuple[Any, Any]:
    """``spark``'s SQL parser and the empty parameter context ``SparkSession.sql(text)``
    parses with (both fixed for a session: looked up once)."""
    jsession = spark._jsparkSession
    key = jsession._target_id
    found = _PARSERS.get(key)
    if found is None or found[0] is not jsession:
        jvm = spark._jvm
        empty = jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(jvm.java.util.HashMap())
        context = jvm.org.apache.spark.sql.catalyst.parser.NamedParameterContext(empty)
        with _LOCK:
            if len(_PARSERS) > 16:
                _PARSERS.clear()
            _PARSERS[key] = found = (jsession, (jsession.sessionState().sqlParser(), context))
    return found[1]


def parse_plan(spark: Any, text: str) -> "ClassicPlan | ConnectPlan":
    """Spark's parse of ``text`` (on Connect through ``EXPLAIN``), as ``spark.sql`` parses
    it (the session's parser and confs, an empty parameter context); raises the error
    ``spark.sql(text)`` raises for a text it cannot parse (``pyspark.errors.ParseException``,
    message and all)."""
    from pyspark.errors.exceptions.captured import capture_sql_exception

    if not is_classic(spark):
        return _connect_plan(spark, text)
    _activate(spark, spark._jsparkSession)
    parser, context = _parser(spark)
    return ClassicPlan(text, capture_sql_exception(parser.parsePlanWithParameters)(text, context))


@dataclass(frozen=True)
class ClassicPlan:
    """A text's parse on a classic session: Spark's unresolved logical plan (a JVM object)."""

    text: str
    plan: Any

    def fingerprint(self, spark: Any) -> tuple[Any, str] | None:
        try:
            text = str(self.plan.toString())
            if _CUT_SHORT in text:  # a list longer than the session prints: print it whole
                _activate(spark, _renderer(spark))
                try:
                    text = str(self.plan.toString())
                finally:
                    _activate(spark, spark._jsparkSession)
        except Exception:  # noqa: BLE001 - a plan Spark cannot render cannot be compared
            return None
        return literal_tokens(self.text), _normalized(text)


def _normalized(parsed: str) -> str:
    """A plan string with expression ids blanked and function names in lower case."""
    return _FUNCTION.sub(lambda m: "'" + m.group(1).lower() + "(", _EXPR_ID.sub("", parsed))


def fingerprint(spark: Any, plan: "ClassicPlan | ConnectPlan") -> tuple[Any, str] | None:
    """What two plans must share to be the same query (module doc); None if Spark cannot
    render the plan."""
    return plan.fingerprint(spark)


class Verdict:
    """Spark's parse of one query text (made on construction, on the caller's thread)."""

    def __init__(self, spark: Any, text: str) -> None:
        """Parse ``text``; raise what ``spark.sql`` raises if Spark cannot parse it (a
        ``ParseException``; an ``AnalysisException`` for an unbound ``:name`` marker)."""
        self.spark = spark
        self.text = text
        self.plan = parse_plan(spark, text)
        self._fingerprint: tuple[Any, str] | None | bool = False

    def same_query(self, regenerated: str) -> bool:
        """Whether ``regenerated`` parses to the same plan as the text; False also when
        Spark does not parse it or cannot render a plan."""
        if self._fingerprint is False:
            self._fingerprint = fingerprint(self.spark, self.plan)
        mine = self._fingerprint
        if mine is None:
            return False
        try:
            with handled_errors_unlogged():
                other = parse_plan(self.spark, regenerated)
        except Exception:  # noqa: BLE001 - Spark rejects sqlglot's text: not the same query
            return False
        return mine == fingerprint(self.spark, other)


# --- Spark Connect: the parse through EXPLAIN ----------------------------------------------------------

_PARSED = "== Parsed Logical Plan ==\n"
_ANALYZED = "\n== Analyzed Logical Plan =="
_LEXEME = re.compile(
    r"(?P<skip>--[^\n]*|/\*.*?\*/|`(?:[^`]|``)*`)"
    r"|(?P<string>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<hex>[xX]'[0-9A-Fa-f]*')"
    r"|(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?:BD|bd|[LSYDFlsydf])?(?![\w]))"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)",
    re.S,
)
_TYPED_LITERAL = frozenset(("DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ", "INTERVAL", "TIME"))
_SCRIPT_START = re.compile(r"\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*(?:BEGIN|DECLARE|[A-Za-z_]\w*\s*:\s*BEGIN)\b", re.S | re.I)


def literal_tokens(text: str) -> tuple[str, ...]:
    """The literals of a SQL text as Spark's lexer spells them, in order: strings (with a
    typed literal's keyword), hex, numbers with their suffix; comments and quoted names skipped."""
    out: list[str] = []
    previous = ""
    for m in _LEXEME.finditer(text):
        kind = m.lastgroup
        token = m.group(0)
        if kind == "string":
            out.append(f"{previous} {token}" if previous in _TYPED_LITERAL else token)
        elif kind == "hex":
            out.append(token.lower())
        elif kind == "number":
            out.append(token.upper())
        previous = token.upper() if kind == "word" else ""
    return tuple(out)


@dataclass(frozen=True)
class ConnectPlan:
    """A text's parse on a Spark Connect session: the ``Parsed Logical Plan`` of its
    ``EXPLAIN EXTENDED`` and its literal tokens (module doc)."""

    text: str
    parsed: str

    def fingerprint(self, spark: Any) -> tuple[Any, str] | None:
        parsed = self.parsed
        if _CUT_SHORT in parsed:  # a list longer than the session prints: print it whole
            clone = spark.cloneSession()
            try:
                clone.conf.set(_MAX_FIELDS, str(2**31 - 1))
                parsed = _explained(clone, self.text)
            except Exception:  # noqa: BLE001 - a plan Spark cannot render cannot be compared
                return None
            finally:
                _release(clone)
            if parsed is None or _CUT_SHORT in parsed:
                return None
        return literal_tokens(self.text), _normalized(parsed)


def _release(session: Any) -> None:
    try:
        session.stop()
    except Exception:  # noqa: BLE001 - the server forgets idle sessions anyway
        return


def _explained(spark: Any, text: str) -> str | None:
    """The ``Parsed Logical Plan`` section of ``EXPLAIN EXTENDED <text>`` (None if absent)."""
    out = str(spark.sql("EXPLAIN EXTENDED " + text).collect()[0][0])
    start = out.find(_PARSED)
    if start < 0:
        return None
    end = out.find(_ANALYZED, start)
    return out[start + len(_PARSED) : end if end >= 0 else len(out)].rstrip("\n")


def _connect_plan(spark: Any, text: str) -> ConnectPlan:
    """Parse ``text`` on a Connect session (module doc); raise Spark's own parse error."""
    from pyspark.errors import ParseException

    try:
        with handled_errors_unlogged():
            parsed = _explained(spark, text)
    except ParseException as wrapped:
        if _SCRIPT_START.match(text):
            raise  # spark.sql would run a script that parses: keep EXPLAIN's error
        spark.sql(text)  # does not parse either (EXPLAIN takes any statement): Spark's own error
        raise wrapped  # pragma: no cover - a statement EXPLAIN cannot wrap that still parses
    return ConnectPlan(text, parsed or "")
