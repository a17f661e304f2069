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
unresolved plans). Two renderings are compared instead, with the ids blanked:

* the plan's JSON: every node's class and fields, literal values and types, alias names,
  identifiers -- all but the fields JSON cannot render (a cast's mode, a relation's
  options), which come out as ``null``;
* the plan's string, which shows those (``try_cast``, ``[k=v]``); a plan with a list
  longer than ``spark.sql.debug.maxToStringFields`` is printed again in a private session
  with that bound lifted, so no list is cut short.

Function names are compared case-insensitively (Spark resolves them so; sqlglot writes
``count`` as ``COUNT``); a binary literal's value, which JSON shows as a JVM object
hash, is compared through the string (``0xAB``). Anything else differing -- including
syntax sqlglot writes differently but equivalently (aliases it adds in ``struct(...)``,
``t, LATERAL (...)`` as a ``CROSS JOIN``; ``SparkSQL`` keeps typed literals and
``RLIKE`` as written) -- counts as a different query, as does a plan Spark cannot
render: the check errs on the side of running the text as written.

Texts are parsed as ``spark.sql`` parses them (``parsePlanWithParameters`` with an empty
parameter context, the caller's session active so the parser reads its confs: the same
plan, the same error and message). The calls run on the caller's thread: on a worker
thread each py4j call would wait for the GIL while varlake runs sqlglot, which cost more
than the calls themselves (about 2-6 ms of JVM and Python time per query in all).
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

__all__ = ["Verdict", "fingerprint", "parse_plan"]

_EXPR_ID = re.compile(r"#\d+")
_FUNCTION = re.compile(r"'([A-Za-z_][\w.]*)\(")
_MAX_FIELDS = "spark.sql.debug.maxToStringFields"
_CUT_SHORT = " more field"
_FUNCTION_CLASSES = (".UnresolvedFunction", ".UnresolvedTableValuedFunction", ".UnresolvedFunctionName")

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


def parse_plan(spark: Any, text: str) -> Any:
    """Spark's unresolved logical plan of ``text`` (a JVM object), parsed as ``spark.sql``
    parses it (the session's parser and confs, an empty parameter context); raises the error
    ``spark.sql(text)`` raises for a text it cannot parse (``pyspark.errors.ParseException``,
    message and all)."""
    from pyspark.errors.exceptions.captured import capture_sql_exception

    _activate(spark, spark._jsparkSession)
    parser, context = _parser(spark)
    return capture_sql_exception(parser.parsePlanWithParameters)(text, context)


def _normalized_json(value: Any) -> Any:
    if isinstance(value, list):
        return [_normalized_json(v) for v in value]
    if isinstance(value, dict):
        out = {k: _normalized_json(v) for k, v in value.items() if k != "exprId"}
        if str(out.get("class", "")).endswith(_FUNCTION_CLASSES) and isinstance(out.get("nameParts"), str):
            out["nameParts"] = out["nameParts"].lower()
        if str(out.get("product-class", "")).endswith(".FunctionIdentifier") and isinstance(out.get("funcName"), str):
            out["funcName"] = out["funcName"].lower()
        if str(out.get("class", "")).endswith(".Literal") and out.get("dataType") == "binary":
            out["value"] = "binary"  # a JVM object hash; the bytes are in the plan string
        return out
    return value


def fingerprint(spark: Any, plan: Any) -> tuple[Any, str] | None:
    """What two plans must share to be the same query (module doc); None if Spark cannot
    render the plan."""
    try:
        data = _normalized_json(json.loads(plan.toJSON()))
        text = str(plan.toString())
        if _CUT_SHORT in text:  # a list longer than the session prints: print it whole
            _activate(spark, _renderer(spark))
            try:
                text = str(plan.toString())
            finally:
                _activate(spark, spark._jsparkSession)
    except Exception:  # noqa: BLE001 - a plan Spark cannot render cannot be compared
        return None
    text = _FUNCTION.sub(lambda m: "'" + m.group(1).lower() + "(", _EXPR_ID.sub("", text))
    return data, text


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
            other = parse_plan(self.spark, regenerated)
        except Exception:  # noqa: BLE001 - Spark rejects sqlglot's text: not the same query
            return False
        return mine == fingerprint(self.spark, other)
