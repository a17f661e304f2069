"""The vectorised filter (``read.arrow_filter``) against the row evaluator, and the
zero-copy removal of deleted rows."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.expr import RowEvaluator
from varlake.expr.binding import bind
from varlake.expr.tree import And, Comparison, In, IsNotNull, IsNull, Not, NotIn, Or, col, lit
from varlake.read.arrow_filter import arrow_predicate, keep_rows, matches

SCHEMA = {("i",): "integer", ("j",): "long", ("s",): "string", ("b",): "boolean", ("d",): "date", ("f",): "double"}
ARROW = pa.schema([("i", pa.int32()), ("j", pa.int64()), ("s", pa.string()), ("b", pa.bool_()), ("d", pa.date32()), ("f", pa.float64())])
VALUES = {
    "i": st.one_of(st.none(), st.integers(-3, 3)),
    "j": st.one_of(st.none(), st.integers(-3, 3)),
    "s": st.one_of(st.none(), st.sampled_from(["", "a", "b", "é", "ab", "\U0001f600"])),
    "b": st.one_of(st.none(), st.booleans()),
    "d": st.one_of(st.none(), st.sampled_from([datetime.date(2020, 1, d) for d in (1, 2, 3)])),
}
ROWS = st.lists(st.fixed_dictionaries({**VALUES, "f": st.one_of(st.none(), st.floats(allow_nan=True))}), max_size=12)


def _leaf(name: str) -> st.SearchStrategy:
    other = "j" if name == "i" else "i" if name == "j" else name
    literal = VALUES[name].map(lit)
    return st.one_of(
        st.builds(lambda op, v: Comparison(op, col(name), v), st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "<=>"]), literal),
        st.builds(lambda op, v: Comparison(op, v, col(name)), st.sampled_from(["=", "<", ">=", "<=>"]), literal),
        st.builds(lambda op: Comparison(op, col(name), col(other)), st.sampled_from(["=", "<", "<=>"])),
        st.builds(lambda vs: In(col(name), tuple(vs)), st.lists(literal, min_size=1, max_size=3)),
        st.builds(lambda vs: NotIn(col(name), tuple(vs)), st.lists(literal, min_size=1, max_size=3)),
        st.just(IsNull(col(name))),
        st.just(IsNotNull(col(name))),
    )


PREDICATES = st.recursive(
    st.sampled_from(sorted(VALUES)).flatmap(_leaf),
    lambda inner: st.one_of(st.builds(And, inner, inner), st.builds(Or, inner, inner), st.builds(Not, inner)),
    max_leaves=5,
)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(PREDICATES, ROWS)
def test_vectorised_filter_matches_the_row_evaluator(predicate, rows) -> None:
    try:
        bound = bind(predicate, SCHEMA)
    except Exception:  # noqa: BLE001 -- a type the binder refuses: nothing to compare
        return
    table = pa.Table.from_pylist(rows, schema=ARROW)
    compiled = arrow_predicate(bound, ARROW)
    if compiled is None:
        return
    expected = [r is True for r in RowEvaluator(bound).evaluate_table(table)]
    assert matches(compiled, table).tolist() == expected
    chunked = pa.concat_tables([table.slice(0, len(rows) // 2), table.slice(len(rows) // 2)])  # as keep_rows leaves it
    assert matches(compiled, chunked).tolist() == expected


def test_floats_casts_and_variant_paths_are_left_to_the_row_evaluator() -> None:
    assert arrow_predicate(bind(Comparison("=", col("f"), lit(1.0)), SCHEMA), ARROW) is None
    assert arrow_predicate(bind(Comparison("=", col("i"), lit(1)), SCHEMA), ARROW) is not None


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.lists(st.booleans(), max_size=300))
def test_keep_rows_is_filter(keep) -> None:
    table = pa.table({"x": pa.array(range(len(keep)), pa.int64()), "y": pa.array([str(i) for i in range(len(keep))])})
    mask = np.asarray(keep, dtype=bool)
    assert keep_rows(table, mask).to_pylist() == table.filter(pa.array(mask, pa.bool_())).to_pylist()


def test_few_deleted_rows_are_dropped_by_slices() -> None:
    table = pa.table({"x": pa.array(range(10_000), pa.int64())})
    keep = np.ones(10_000, dtype=bool)
    keep[::1000] = False
    out = keep_rows(table, keep)
    assert out.num_rows == 9_990 and out.column("x").num_chunks > 1


def test_integer_widening_cast_is_vectorised_and_narrowing_is_not() -> None:
    from varlake.expr.sql import parse_predicate

    table = pa.Table.from_pylist([{"i": v, "j": None} for v in (None, -2, 0, 5, 2**31 - 1)], schema=ARROW)
    wide = bind(parse_predicate("CAST(i AS BIGINT) >= 0 OR CAST(i AS BIGINT) IN (-2)"), SCHEMA)
    compiled = arrow_predicate(wide, ARROW)
    assert compiled is not None
    assert matches(compiled, table).tolist() == [r is True for r in RowEvaluator(wide).evaluate_table(table)]
    assert arrow_predicate(bind(parse_predicate("CAST(i AS SMALLINT) = 1"), SCHEMA), ARROW) is None
