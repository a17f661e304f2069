"""Property tests: data skipping never drops a file that holds a matching row.

Random small tables (ints, strings up to 40 characters, doubles with NaN, timestamps,
a struct, an integer partition column and a dict-valued "Variant" column with mixed
types per path) are split into files; each file gets statistics the way a Delta writer
makes them (32-character string prefixes, padded or not, timestamps cut to
milliseconds, no per-path stats for mixed-type paths, random stats left out).  For
random predicates, a file may be reported ROWS_CANNOT_MATCH only if the row evaluator
finds no matching row in it.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from varlake.expr import (
    FileStats,
    RowEvaluator,
    SkippingEvaluator,
    TypeFamily,
    VariantBound,
    bind,
    col,
    lit,
    normalize,
    try_vget,
    vget,
)
from varlake.expr.casts import java_double_text
from varlake.expr.tree import Cast, Comparison, Literal, Not, Predicate, Term

UTC = dt.timezone.utc
BASE_TS = dt.datetime(2024, 1, 1, tzinfo=UTC)
SCHEMA = {("i",): "long", ("s",): "string", ("f",): "double", ("ts",): "timestamp", ("st",): "struct",
          ("st", "x"): "long", ("p",): "integer", ("v",): "variant"}
PARTITIONS = {"p": "integer"}
PATHS = {"$['a']": ("a",), "$['b']": ("b",), "$['c']": ("c",), "$['c']['d']": ("c", "d")}
PREFIX = 32

# --- data ----------------------------------------------------------------------------------

short_text = st.text(alphabet="ab\U0001f600", max_size=3)
long_text = st.builds(lambda n, tail: "a" * n + tail, st.integers(26, 36), st.text(alphabet="ab\U0001f600", max_size=3))
number_text = st.sampled_from(["1", "10", "2", "9", "-3", "2.5", "true", "false", "NaN"])
emoji_text = st.builds(lambda n, tail: "\U0001f600" * n + tail, st.integers(14, 17), st.sampled_from(["", "a"]))
texts = st.one_of(long_text, short_text, long_text, number_text, emoji_text)
floats = st.sampled_from([-2.5, -1.0, -0.0, 0.0, 0.5, 2.0, 3.75, math.nan, math.inf, -math.inf])
micros = st.sampled_from([0, 1, 500, 999, 1000, 1001, 1999, 2000, 2500])
timestamps = micros.map(lambda m: BASE_TS + dt.timedelta(microseconds=m))
small_ints = st.integers(-4, 4)
primitives = st.one_of(st.none(), small_ints, floats, texts, st.booleans())
variant_values = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from("abc"),
        st.one_of(primitives, st.dictionaries(st.just("d"), st.one_of(small_ints, texts, st.none()), max_size=1)),
        max_size=3,
    ),
)
rows = st.fixed_dictionaries({
    "i": st.one_of(st.none(), small_ints),
    "s": st.one_of(st.none(), texts),
    "f": st.one_of(st.none(), floats),
    "ts": st.one_of(st.none(), timestamps),
    "st": st.one_of(st.none(), st.fixed_dictionaries({"x": st.one_of(st.none(), small_ints)})),
    "v": variant_values,
})
files = st.lists(
    st.tuples(st.one_of(st.none(), st.integers(0, 2)), st.lists(rows, min_size=1, max_size=6)),
    min_size=1,
    max_size=4,
)
#: which statistics a writer leaves out (~1 in 8); every file is also checked with complete stats
drop_masks = st.lists(st.integers(0, 7).map(lambda n: n == 0), min_size=24, max_size=24)
STRING_MODES = ("padded", "code_points", "utf16")
NO_DROP = [False] * 24

# --- a pure-python stand-in for variant_get -------------------------------------------------

_SEGMENT = re.compile(r"\['((?:[^'\\]|\\.)*)'\]|\[(\d+)\]")


def variant_get(value: Any, path: str, target: str) -> Any:
    """Navigate dicts by a normalized path and cast like Spark; None when missing or not castable."""
    for key, index in _SEGMENT.findall(path[1:]):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    if value is None:
        return None
    try:
        return _cast(value, target)
    except (ValueError, OverflowError, TypeError):
        return None  # an ANSI error or a try_ NULL: either way the row is not returned


def _cast(value: Any, target: str) -> Any:
    if isinstance(value, dict):
        if target == "string":
            return json.dumps(value)
        raise ValueError("object")
    if target == "long":
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError("not finite")
            return math.trunc(value)
        return int(value) if not isinstance(value, str) else int(value)
    if target == "double":
        return float(value) if not isinstance(value, str) else float(value.replace("nan", "x"))
    if target == "string":
        if isinstance(value, bool):
            return "true" if value else "false"
        return java_double_text(value) if isinstance(value, float) else str(value)
    if target == "boolean":
        if isinstance(value, str):
            if value.lower() in ("true", "false"):
                return value.lower() == "true"
            raise ValueError(value)
        return bool(value)
    raise ValueError(target)


# --- statistics as a Delta writer makes them -------------------------------------------------


def _utf16_prefix(text: str, units: int) -> str:
    out, used = [], 0
    for ch in text:
        width = 2 if ord(ch) > 0xFFFF else 1
        if used + width > units:
            break
        out.append(ch)
        used += width
    return "".join(out)


def _truncate_min(text: str, mode: str) -> str:
    return _utf16_prefix(text, PREFIX) if mode == "utf16" else text[:PREFIX]


def _truncate_max(text: str, mode: str) -> str:
    if mode == "padded":
        return text if len(text) <= PREFIX else text[:PREFIX] + "\U0010ffff"
    return _truncate_min(text, mode)


def _spark_min_max(values: list[Any]) -> tuple[Any, Any]:
    """min/max in Spark's order, where NaN is the largest double."""
    if all(isinstance(v, float) for v in values):
        numbers = [v for v in values if not math.isnan(v)]
        has_nan = len(numbers) < len(values)
        return (min(numbers) if numbers else math.nan), (math.nan if has_nan else max(numbers))
    return min(values), max(values)


def _bounds(values: list[Any], mode: str) -> tuple[Any, Any] | None:
    if not values:
        return None
    lo, hi = _spark_min_max(values)
    if isinstance(lo, str):
        return _truncate_min(lo, mode), _truncate_max(hi, mode)
    if isinstance(lo, dt.datetime):
        return lo.replace(microsecond=lo.microsecond // 1000 * 1000), hi.replace(microsecond=hi.microsecond // 1000 * 1000)
    return lo, hi


def _family(value: Any) -> tuple[type, TypeFamily] | None:
    if isinstance(value, bool):
        return bool, TypeFamily.BOOLEAN
    if isinstance(value, int):
        return int, TypeFamily.EXACT_NUMERIC
    if isinstance(value, float):
        return float, TypeFamily.DOUBLE
    if isinstance(value, str):
        return str, TypeFamily.STRING
    return None  # objects are not leaves


def _at(value: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _get(row: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = row
    for key in path:
        value = None if value is None else value.get(key)
    return value


def file_stats(partition: int | None, file_rows: list[dict[str, Any]], mode: dict[str, Any]) -> FileStats:
    drop = iter(mode["drop"])
    mins: dict[Any, Any] = {}
    maxs: dict[Any, Any] = {}
    nulls: dict[Any, Any] = {}
    for path in [("i",), ("s",), ("f",), ("ts",), ("st", "x"), ("v",)]:
        values = [_get(r, path) for r in file_rows]
        present = [v for v in values if v is not None]
        if not next(drop):
            nulls[path] = len(values) - len(present)
        bounds = _bounds(present, mode["strings"]) if path != ("v",) else None
        if bounds is not None:
            if not next(drop):
                mins[path] = bounds[0]
            if not next(drop):
                maxs[path] = bounds[1]
    vmin: dict[Any, VariantBound] = {}
    vmax: dict[Any, VariantBound] = {}
    for normalized, keys in PATHS.items():
        values = [_at(r["v"], keys) for r in file_rows if r["v"] is not None]
        present = [v for v in values if v is not None]
        kinds = {_family(v) for v in present}
        if len(kinds) != 1 or None in kinds:
            continue  # no stats for paths with mixed types or objects
        (_, family), = kinds
        lo, hi = _bounds(present, mode["strings"])  # type: ignore[misc]
        if not next(drop):
            vmin[(("v",), normalized)] = VariantBound(lo, family)
        if not next(drop):
            vmax[(("v",), normalized)] = VariantBound(hi, family)
    return FileStats(
        num_records=len(file_rows),
        min_values=mins,
        max_values=maxs,
        null_count=nulls,
        variant_min=vmin,
        variant_max=vmax,
        partition_values={"p": "" if partition is None else str(partition)},
    )


# --- predicates --------------------------------------------------------------------------------
# Literals are drawn mostly from the table's own values and their neighbours, so that
# predicates sit right on statistics boundaries (truncated prefixes, sub-millisecond
# timestamps, a single repeated value) where unsound rules would show.


def _neighbours(value: Any) -> list[Any]:
    if isinstance(value, bool):
        return [value, not value]
    if isinstance(value, int):
        return [value - 1, value, value + 1]
    if isinstance(value, float):
        return [value] if not math.isfinite(value) else [value - 0.25, value, value + 0.25]
    if isinstance(value, str):
        return [value, value[:PREFIX], value[: PREFIX - 1], value + "a", value[:-1]]
    if isinstance(value, dt.datetime):
        return [value + dt.timedelta(microseconds=d) for d in (-1, 0, 1, -value.microsecond % 1000)]
    return [value]


def _cmp(op: str, term: Term, value: Term) -> Predicate:
    return Comparison(op, term, value)


_CONSTANTS: dict[type, list[Any]] = {
    int: list(range(-5, 6)),
    float: [-2.5, -1.0, -0.0, 0.0, 0.5, 2.0, 3.75, math.nan, math.inf, -math.inf],
    str: ["", "a", "b", "ab", "1", "10", "9", "a" * 31, "a" * 32, "a" * 33, "a" * 32 + "b", "\U0001f600" * 16],
    bool: [True, False],
    dt.datetime: [BASE_TS + dt.timedelta(microseconds=m) for m in (-1, 0, 499, 999, 1000, 1500, 2999, 3000)],
}
_VARIANT_TARGETS = {"bigint": int, "double": float, "string": str, "boolean": bool}
_COLUMN_TERMS: dict[str, tuple[Term, type, Any]] = {
    "i": (col("i"), int, ("i",)),
    "s": (col("s"), str, ("s",)),
    "f": (col("f"), float, ("f",)),
    "ts": (col("ts"), dt.datetime, ("ts",)),
    "st.x": (col("st.x"), int, ("st", "x")),
    "p": (col("p"), int, ("p",)),
    "cast(i as double)": (Cast(col("i"), "double"), float, ("i",)),
    "try_cast(f as long)": (Cast(col("f"), "long", try_=True), int, ("f",)),
}
term_keys = st.one_of(
    st.sampled_from(sorted(_COLUMN_TERMS)),
    st.tuples(st.sampled_from(sorted(PATHS)), st.sampled_from(sorted(_VARIANT_TARGETS)), st.booleans()),
)
# (NULL?, from the table's values?, index): mostly values seen in the table and their neighbours
literal_slots = st.tuples(st.integers(0, 9).map(lambda n: n == 0), st.integers(0, 3).map(bool), st.integers(0, 10**6))
leaf_specs = st.tuples(
    st.just("leaf"),
    term_keys,
    st.sampled_from(["cmp", "cmp", "cmp", "in", "not_in", "between", "is_null", "is_not_null", "col_cmp"]),
    st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "<=>"]),
    st.lists(literal_slots, min_size=1, max_size=3),
)
predicate_specs = st.recursive(
    leaf_specs,
    lambda children: st.one_of(
        st.tuples(st.sampled_from(["and", "or"]), children, children),
        st.tuples(st.just("not"), children),
    ),
    max_leaves=4,
)


def _literal_pool(key: Any, table_rows: list[dict[str, Any]]) -> tuple[Term, list[Any], list[Any]]:
    """The term for ``key`` and candidate literals: the table's values, their neighbours, constants."""
    if isinstance(key, str):
        term, kind, path = _COLUMN_TERMS[key]
        found = [_get(r, path) for r in table_rows]
    else:
        path, target, try_ = key
        term, kind = (try_vget if try_ else vget)("v", path, target), _VARIANT_TARGETS[target]
        found = [_at(r["v"], PATHS[path]) for r in table_rows]
    near = {repr(x): x for v in found if v is not None for x in _neighbours(v)}
    values = [x for _, x in sorted(near.items()) if type(x) is kind]
    if kind is int:
        values += [int(x) for x in found if isinstance(x, (bool, float)) and math.isfinite(x)]
    if kind is float:
        values += [float(x) for x in found if type(x) is int]
    return term, values, _CONSTANTS[kind]


def build_predicate(spec: tuple[Any, ...], table_rows: list[dict[str, Any]]) -> Predicate:
    if spec[0] == "and":
        return build_predicate(spec[1], table_rows) & build_predicate(spec[2], table_rows)
    if spec[0] == "or":
        return build_predicate(spec[1], table_rows) | build_predicate(spec[2], table_rows)
    if spec[0] == "not":
        return Not(build_predicate(spec[1], table_rows))
    _, key, kind, op, slots = spec
    term, seen, constants = _literal_pool(key, table_rows)

    def pick(slot: tuple[bool, bool, int]) -> Any:
        pool = seen if slot[1] and seen else constants
        return pool[slot[2] % len(pool)]

    literals = [Literal(None, "void") if slot[0] else lit(pick(slot)) for slot in slots]
    if kind == "cmp":
        return _cmp(op, term, literals[0])
    if kind == "in":
        return term.isin(*literals)
    if kind == "not_in":
        return term.notin(*literals)
    if kind == "between":
        return term.between(pick(slots[0]), pick(slots[-1]))
    if kind == "is_null":
        return term.is_null()
    if kind == "is_not_null":
        return term.is_not_null()
    return _cmp(op, col("i"), col("st.x"))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(files, drop_masks, st.lists(predicate_specs, min_size=2, max_size=6))
def test_skipping_is_sound(table_files, drop, specs):
    table_files = [(partition, [{**row, "p": partition} for row in file_rows]) for partition, file_rows in table_files]
    all_rows = [row for _, file_rows in table_files for row in file_rows]
    writers = [{"strings": strings, "drop": mask} for strings in STRING_MODES for mask in (NO_DROP, drop)]
    stats = [[file_stats(partition, file_rows, mode) for mode in writers] for partition, file_rows in table_files]
    for spec in specs:
        bound = bind(build_predicate(spec, all_rows), SCHEMA)
        oracle = RowEvaluator(bound, variant_get=variant_get)
        normal_form = RowEvaluator(normalize(bound), variant_get=variant_get)
        skipping = SkippingEvaluator(bound, PARTITIONS)
        for (partition, file_rows), variants in zip(table_files, stats):
            matches = [oracle.matches(row) for row in file_rows]
            assert matches == [normal_form.matches(row) for row in file_rows], "normal form changed the result"
            if any(matches):
                for file_stat in variants:
                    assert skipping.might_match(file_stat), f"skipped a matching file: {bound} on {file_rows}, {file_stat}"


_BOUNDARY_OPS = ("=", "<>", "<", "<=", ">", ">=", "<=>")
_BOUNDARY_KEYS = [k for k in sorted(_COLUMN_TERMS) if k != "p"] + [
    (path, target, False) for path in sorted(PATHS) for target in sorted(_VARIANT_TARGETS)
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(files, drop_masks)
def test_every_single_comparison_on_boundary_literals_is_sound(table_files, drop):
    """Exhaustive over terms x operators x the table's own values and their neighbours, so
    each per-leaf rule (prefix bounds, millisecond slack, NaN, type families) is exercised
    on exactly the literals where a wrong rule would drop a file."""
    table_files = [(partition, [{**row, "p": partition} for row in file_rows]) for partition, file_rows in table_files]
    all_rows = [row for _, file_rows in table_files for row in file_rows]
    writers = [{"strings": strings, "drop": mask} for strings in STRING_MODES for mask in (NO_DROP, drop)]
    stats = [[file_stats(partition, file_rows, mode) for mode in writers] for partition, file_rows in table_files]
    for key in _BOUNDARY_KEYS:
        term, seen, _ = _literal_pool(key, all_rows)
        for value in seen:
            for predicate in [*(_cmp(op, term, lit(value)) for op in _BOUNDARY_OPS), term.notin(value)]:
                bound = bind(predicate, SCHEMA)
                oracle = RowEvaluator(bound, variant_get=variant_get)
                skipping = SkippingEvaluator(bound, PARTITIONS)
                for (_, file_rows), variants in zip(table_files, stats):
                    if any(oracle.matches(row) for row in file_rows):
                        for file_stat in variants:
                            assert skipping.might_match(file_stat), f"skipped a matching file: {bound}, {file_stat}"


@settings(max_examples=200, deadline=None)
@given(st.lists(rows, min_size=1, max_size=6), st.sampled_from(["<", "<=", ">", ">="]), small_ints)
def test_complete_integer_stats_prune_exactly(file_rows, op, k):
    """With full statistics, an inequality on integers is pruned iff no value satisfies it
    (so the soundness test above is not passed by an evaluator that never prunes)."""
    mode = {"strings": "padded", "drop": NO_DROP}
    stats = file_stats(0, file_rows, mode)
    for term in (col("i"), vget("v", "$.a", "bigint")):
        bound = bind(_cmp(op, term, lit(k)), SCHEMA)
        oracle = RowEvaluator(bound, variant_get=variant_get)
        evaluator = SkippingEvaluator(bound, PARTITIONS)
        matches = any(oracle.matches({**r, "p": 0}) for r in file_rows)
        has_stats = (("v",), "$['a']") in stats.variant_min
        ints_only = all(type(_at(r["v"], ("a",))) in (int, type(None)) for r in file_rows if r["v"] is not None)
        if term == col("i") or (has_stats and ints_only):
            assert evaluator.might_match(stats) == matches, (op, k, file_rows, stats)
