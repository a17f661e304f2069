"""Malformed SQL keeps Spark's verdict (issue 11, item 9).

varlake rewrites a query from what sqlglot parsed, and sqlglot is more lenient than Spark's
parser. Whatever the text, ``varlake.spark.sql`` must answer as Spark answers the same text
with each ``{t}`` placeholder replaced by a view of the same files (``substitute``'s view
name): the same rows and output names, or the same error class and condition -- and for a
``ParseException`` the same message. The oracle is Spark itself, in its own session, over
a temporary view of the table's files read as Variant.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import varlake.spark as vs
from varlake.delta.actions import AddFile
from varlake.io.parquet_write import write_parquet
from varlake.spark.reading.placeholders import substitute
from varlake.table import Table, to_arrow_table

pytestmark = pytest.mark.spark

LAYOUT = "a bigint, b string"


def _rows(start: int, stop: int) -> list[tuple[int, Any]]:
    return [(i, {"a": i, "b": f"k{i % 3}"} if i % 7 else {"b": None}) for i in range(start, stop)]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    """Two files of ``id bigint, v variant``: one perfectly shredded (so queries over it are
    rewritten), one not."""
    table = Table.create(tmp_path_factory.mktemp("malformed") / "t", "id bigint, v variant")
    adds = []
    for rel, rows, layout in [("f0.parquet", _rows(0, 12), LAYOUT), ("f1.parquet", _rows(12, 20), None)]:
        target = Path(table.open_file(rel))
        data = to_arrow_table({"id": [r[0] for r in rows], "v": [r[1] for r in rows]}, table.schema)
        write_parquet(data, target, shredding={"v": layout} if layout else None, variant_columns=["v"])
        adds.append(AddFile(rel, target.stat().st_size, {}, 0, True, table.file_stats_json(rel)))
    table.commit_files(adds, "append")
    return table


@pytest.fixture(scope="module")
def oracle(spark: Any, table: Table) -> Any:
    """A session of its own (no view leaks into the shared one) where the placeholder's view
    name is a temporary view of the table's files, read by Spark as Variant."""
    session = spark.newSession()
    files = [table.open_file(a.path) for a in table.files()]
    session.read.schema("id bigint, v variant").parquet(*files).createOrReplaceTempView(substitute("{t}", {"t": None}))
    return session


def _plain(value: Any) -> Any:
    if hasattr(value, "toJson"):
        return ("variant", value.toJson())
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    return value


def _outcome(fn: Any) -> tuple[Any, ...]:
    """``("rows", names, sorted rows)`` or ``("error", class, condition, message)``; the message
    only for a ParseException (it quotes the text and points at the position)."""
    from pyspark.errors import ParseException, PySparkException

    try:
        frame = fn()
        return ("rows", tuple(frame.columns), tuple(sorted((tuple(_plain(v) for v in r) for r in frame.collect()), key=repr)))
    except PySparkException as exc:
        condition = exc.getCondition() if hasattr(exc, "getCondition") else None
        # a Connect client appends the server's JVM stack trace to Spark's message
        message = str(exc).split("\n\nJVM stacktrace:\n")[0]
        return ("error", type(exc).__name__, condition, message if isinstance(exc, ParseException) else None)


def _spark_answer(oracle: Any, query: str) -> tuple[Any, ...]:
    return _outcome(lambda: oracle.sql(substitute(query, {"t": None})))


def _varlake_answer(spark: Any, table: Table, query: str) -> tuple[Any, ...]:
    return _outcome(lambda: vs.sql(spark, query, t=table))


# --- explicit cases --------------------------------------------------------------------------------------

CASES = [
    # Spark reads a dangling WHERE as the table's alias
    "SELECT id, v:a::bigint AS a FROM {t} WHERE",
    "SELECT FROM {t}",
    "SELECT (v:a::bigint AS a FROM {t}",
    "SELECT v:a::bigint AS a FROM {t} WHERE (id > 3",
    "SELECT v:a::bigint AS a FROM {t} WHERE v:b::string = 'k1",
    'SELECT v:a::bigint AS a FROM {t} WHERE v:b::string = "k1',
    # stray trailing commas: sqlglot drops them, Spark does not (before: rows instead of Spark's error)
    "SELECT v:a::bigint AS a FROM {t} WHERE id IN (1, 2,)",
    "SELECT v:a::bigint AS a FROM {t},",
    "SELECT v:a::bigint AS a, FROM {t}",
    # syntax sqlglot accepts (and rewrites into Spark's) that Spark does not take
    "SELECT v:a::bigint AS a FROM {t} ORDER BY id FETCH FIRST 3 ROWS ONLY",
    "SELECT v:a::bigint AS a FROM {t} ORDER BY id ASC DESC",
    "SELECT v:a::bigint AS a FROM {t} WHERE v:b::string SIMILAR TO 'k1'",
    # a placeholder inside a literal is text, not a table
    "SELECT '{t}' AS s, v:a::bigint AS a FROM {t} WHERE id < 3",
    # valid queries still agree
    "SELECT id, v:a::bigint AS a FROM {t} WHERE v:a::bigint > 5 AND id < 15",
    "SELECT v:b::string AS b, count(*) AS n FROM {t} GROUP BY v:b::string",
]


@pytest.mark.parametrize("query", CASES)
def test_explicit_malformed_queries_answer_as_spark(any_spark: Any, table: Table, oracle: Any, query: str) -> None:
    assert _varlake_answer(any_spark, table, query) == _spark_answer(oracle, query)


def test_sqlglot_only_syntax_is_spark_parse_error(any_spark: Any, table: Table) -> None:
    """``FETCH FIRST`` is what sqlglot reads (and writes back as ``LIMIT``) but Spark 4.3 does not."""
    from pyspark.errors import ParseException

    with pytest.raises(ParseException) as caught:
        vs.sql(any_spark, "SELECT v:a::bigint AS a FROM {t} FETCH FIRST 1 ROWS ONLY", t=table)
    assert caught.value.getCondition() == "PARSE_SYNTAX_ERROR"


def test_spark_verdict_comes_before_the_tables(any_spark: Any, tmp_path: Path) -> None:
    """A text Spark cannot parse fails with Spark's error even if its table does not exist."""
    from pyspark.errors import ParseException

    with pytest.raises(ParseException):
        vs.sql(any_spark, "SELECT v:a::bigint FROM {t} WHERE (", t=tmp_path / "missing")


def test_disagreement_runs_as_written(any_spark: Any, table: Table) -> None:
    """Where Spark reads the text differently from sqlglot, nothing sqlglot derived is used."""
    plan = vs.explain(any_spark, "SELECT v:a::bigint AS a, FROM {t}", t=table, show=False)
    assert not plan.prepared.rewritten
    assert "differently from sqlglot" in str(plan.prepared.analysis.note)
    agreed = vs.explain(any_spark, "SELECT v:a::bigint AS a FROM {t}", t=table, show=False)
    assert agreed.prepared.rewritten  # an ordinary query is still rewritten


SAME = [
    ("SELECT count(*), Sum(id) FROM t", "SELECT COUNT(*), SUM(id) FROM t"),
    ("SELECT e FROM t LATERAL VIEW explode(array(1, 2)) x AS e", "SELECT e FROM t LATERAL VIEW EXPLODE(ARRAY(1, 2)) x AS e"),
    ("SELECT X'ab' AS b FROM t", "SELECT X'ab' AS b FROM t"),
]
DIFFERENT = [
    ("SELECT TRY_CAST(a AS INT) FROM t", "SELECT CAST(a AS INT) FROM t"),
    ("SELECT a FROM t WHERE c IN ('a, b')", "SELECT a FROM t WHERE c IN ('a', 'b')"),
    ("SELECT a AS x, b AS y FROM t", "SELECT a AS y, b AS x FROM t"),
    ("SELECT X'ab' FROM t", "SELECT X'ac' FROM t"),
    ("SELECT '1' FROM t", "SELECT 1 FROM t"),
    ("SELECT a FROM t WHERE a IN (" + ", ".join(map(str, range(40))) + ")", "SELECT a FROM t WHERE a IN (" + ", ".join(map(str, range(39))) + ", 99)"),
    ("SELECT a FROM t WITH ('k' = 'v')", "SELECT a FROM t WITH ('k' = 'w')"),
]


@pytest.mark.parametrize(("one", "other", "same"), [(a, b, True) for a, b in SAME] + [(a, b, False) for a, b in DIFFERENT])
def test_fingerprint_tells_queries_apart(any_spark: Any, one: str, other: str, same: bool) -> None:
    """The guard's comparison of Spark's parses: equal for the same query however spelled
    (function-name case), different for any change of meaning, however small or deep in a list."""
    from varlake.spark.reading.verdict import fingerprint, parse_plan

    assert (fingerprint(any_spark, parse_plan(any_spark, one)) == fingerprint(any_spark, parse_plan(any_spark, other))) is same


# --- the property -------------------------------------------------------------------------------------------

BASE = [
    "SELECT id, v:a::bigint AS a FROM {t} WHERE v:a::bigint > 5 AND id < 15",
    "SELECT v:b::string AS b, count(*) AS n FROM {t} GROUP BY v:b::string",
    "SELECT sum(v:a::bigint) FROM {t} WHERE v:b::string = 'k1'",
    "SELECT id FROM {t} WHERE v:a::bigint IN (1, 2, 3) OR (id > 17 AND v:b::string <> 'k0')",
    "SELECT t.id, CAST(t.v:a AS INT) AS ai FROM {t} AS t WHERE t.id BETWEEN 3 AND 9",
    "SELECT id, variant_get(v, '$.b', 'string') AS b FROM {t} WHERE try_variant_get(v, '$.a', 'int') >= 10",
]
STRAY = [
    "WHERE", "FROM", "SELECT", "AND", "OR", "NOT", "GROUP BY", "ORDER BY", "AS", "JOIN", "ON", "IS", "NULL",
    "BETWEEN", "IN", "CASE", "END", "FETCH FIRST 1 ROWS ONLY", "QUALIFY", ",", "(", ")", "'", '"', "`", "::", ":",
    ".", "*", ";", "=", "1", "{t}", "v:a::bigint", ",", ", ", ",",
]
#: endings Spark may well accept (an alias, a comment, a statement end)
TAIL = ["x", "AS x", "WHERE", ";", "-- c", "/* c */", "GROUP", "ORDER", "JOIN", "ON", "AS", ",", "FETCH FIRST 2 ROWS ONLY", "ORDER BY id ASC DESC"]
_TOKEN = re.compile(r"(\{[a-z]+\}|'[^']*'|\w+|::|<>|>=|<=|[^\s\w])(\s*)")


@st.composite
def mutated(draw: Any) -> str:
    """A valid query with one or two token mutations: truncated (or commented out) at a
    token, a token dropped or doubled, a stray keyword or punctuation inserted or left
    dangling at the end, a stray comma where a list or clause ends, a parenthesis or quote
    unbalanced, a token wrapped in parentheses, the space after a token dropped."""
    tokens = [m.group(0) for m in _TOKEN.finditer(draw(st.sampled_from(BASE)))]
    # half the queries get only changes Spark often still accepts, so that answers (not
    # just parse errors) are compared too
    benign = draw(st.booleans())
    kinds = ["append", "wrap", "squeeze"] if benign else [
        "truncate", "comment", "drop", "duplicate", "insert", "append", "unbalance", "wrap", "squeeze", "comma", "comma"
    ]
    for _ in range(draw(st.sampled_from([1, 1, 2]))):
        kind = draw(st.sampled_from(kinds))
        i = draw(st.integers(0, len(tokens) - 1))
        if kind == "truncate" and i > 0:
            tokens = tokens[:i]
        elif kind == "comment" and i > 0:
            tokens.insert(i, draw(st.sampled_from(["-- ", "/* ", "/* */ "])))
        elif kind == "drop" and len(tokens) > 1:
            del tokens[i]
        elif kind == "duplicate":
            tokens.insert(i, tokens[i])
        elif kind == "insert":
            tokens.insert(i, draw(st.sampled_from(STRAY)) + " ")
        elif kind == "append":
            tokens.append(" " + draw(st.sampled_from(TAIL if benign else STRAY + TAIL)))
        elif kind == "unbalance":
            tokens.insert(i, draw(st.sampled_from(["(", ")", "'", '"', "`"])))
        elif kind == "comma":  # a stray comma where a list or clause ends
            ends = [j for j, token in enumerate(tokens) if token.strip().upper() in (")", "FROM", "WHERE", "GROUP", "ORDER", "AND")]
            tokens.insert(draw(st.sampled_from(ends)) if ends else len(tokens), ", ")
        elif kind == "wrap":
            if benign:  # an operand: a number, a string, the id column
                i = draw(st.sampled_from([j for j, token in enumerate(tokens) if re.fullmatch(r"(\d+|'[^']*'|id)\s*", token)] or [i]))
            tokens[i] = f"({tokens[i].rstrip()}) "
        else:
            if benign:  # only next to punctuation
                i = draw(st.sampled_from([j for j in range(len(tokens) - 1) if not (tokens[j][0].isalnum() and tokens[j + 1][0].isalnum())] or [i]))
            tokens[i] = tokens[i].rstrip()
    return "".join(tokens)


@settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(query=mutated())
def test_mutated_queries_answer_as_spark(spark: Any, table: Table, oracle: Any, query: str) -> None:
    expected = _spark_answer(oracle, query)
    event(f"spark: {expected[0]} {expected[2] if expected[0] == 'error' else ''}")
    assert _varlake_answer(spark, table, query) == expected, query
