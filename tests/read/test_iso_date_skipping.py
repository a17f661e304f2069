"""Files skipped by a Variant path read as a DATE, where the writer proved the path holds only
ISO date strings (``varlake.layout.dates``): the strings' bounds are then date bounds and
the cast cannot raise. Without the proof (another engine's file, a value that is no ISO
date, a path of mixed types, column mapping by id) nothing is skipped by it; either way
the answers, and the errors, are those of reading every file."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from layout_facts_compare import rewrite_layout_tags

from varlake import Table
from varlake.errors import ExpressionEvaluationError

SHREDDED = {"delta.enableVariantShredding": "true"}


def _month(year: int, month: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"id": start + i, "v": {"d": str(dt.date(year, month, 1 + i)), "n": i}} for i in range(5)]


def _ids(table: Table, text: str) -> list[int]:
    return sorted(table.scan(text).to_arrow().column("id").to_pylist())


def _counts(tasks: Any) -> list[int]:
    return sorted(t.num_records for t in tasks)


@pytest.fixture()
def months(tmp_path: Path) -> Table:
    """Three files, one month each (January, March, May 2024), five days of each."""
    t = Table.create(tmp_path / "t", "id bigint, v variant", properties=SHREDDED)
    for k, month in enumerate((1, 3, 5)):
        t.append(_month(2024, month, 10 * k))
    return t


def _untagged(table: Table, target: Path) -> Table:
    """A copy whose files carry no layout tags, as another engine writes them."""
    shutil.copytree(table.path, target)
    rewrite_layout_tags(target, None)
    return Table(target)


def _unskippable(table: Table, target: Path) -> Table:
    """A copy whose files carry neither tags nor statistics: every file is read."""
    shutil.copytree(table.path, target)
    for commit in (target / "_delta_log").glob("*.json"):
        actions = [json.loads(line) for line in commit.read_text().splitlines()]
        for action in actions:
            if "add" in action:
                action["add"]["stats"] = action["add"]["tags"] = None
        commit.write_text("".join(json.dumps(a) + "\n" for a in actions))
    return Table(target)


@pytest.mark.parametrize(
    ("text", "read", "ids"),
    [
        ("v:d::date < DATE'2024-03-01'", 1, [0, 1, 2, 3, 4]),
        ("v:d::date <= DATE'2024-03-01'", 2, [0, 1, 2, 3, 4, 10]),
        ("v:d::date BETWEEN DATE'2024-03-03' AND DATE'2024-04-30'", 1, [12, 13, 14]),
        ("v:d::date = DATE'2024-05-02'", 1, [21]),
        ("v:d::date IN (DATE'2024-02-01', DATE'2024-06-01')", 0, []),
        ("try_variant_get(v, '$.d', 'date') > DATE'2024-03-04'", 2, [14, 20, 21, 22, 23, 24]),
        ("CAST(v:d AS DATE) >= DATE'2024-05-05'", 1, [24]),
        ("v:d::date < DATE'2024-01-02' OR v:d::date > DATE'2024-05-04'", 2, [0, 24]),
        ("v:d::date > DATE'2024-02-01' AND v:n::int > 3", 2, [14, 24]),
    ],
)
def test_files_of_iso_dates_are_skipped_by_their_string_bounds(months: Table, tmp_path: Path, text: str, read: int, ids: list[int]) -> None:
    plan = months.scan(text).plan()
    assert len(plan.tasks) == read and len(plan.skipped_by_stats) == 3 - read and plan.put_back == ()
    assert _ids(months, text) == ids
    other = _untagged(months, tmp_path / "untagged")
    assert len(other.scan(text).plan().tasks) == 3  # no proof without the tags
    assert _ids(other, text) == ids == _ids(_unskippable(months, tmp_path / "every"), text)


def test_a_value_that_is_no_iso_date_keeps_its_file(months: Table) -> None:
    """'2024-6-5' casts to a date but is no ISO text, 'june' does not cast: neither file is
    proven, so both are read; Spark's cast raises on 'june', so does the scan."""
    months.append([{"id": 30, "v": {"d": "2024-6-5", "n": 0}}])
    months.append([{"id": 40, "v": {"d": "june", "n": 0}}])
    plan = months.scan("try_variant_get(v, '$.d', 'date') > DATE'2024-06-01'").plan()
    assert _counts(plan.tasks) == [1, 1] and _counts(plan.skipped_by_stats) == [5, 5, 5]
    assert _ids(months, "try_variant_get(v, '$.d', 'date') > DATE'2024-06-01'") == [30]
    plan = months.scan("v:d::date < DATE'2024-01-01'").plan()
    assert _counts(plan.skipped_by_stats) == [5, 5, 5] and _counts(plan.tasks) == [1, 1]
    with pytest.raises(ExpressionEvaluationError, match="june"):
        months.scan("v:d::date < DATE'2024-01-01'").to_arrow()
    # the bounds of n exclude every file, but Spark casts d first: the proven files are
    # skipped, 'june' is read and raises, '2024-6-5' (a date) is put back as it could
    text = "v:d::date < DATE'2024-01-01' AND v:n::int > 100"
    plan = months.scan(text).plan()
    assert _counts(plan.skipped_by_stats) == [5, 5, 5] and _counts(plan.put_back_tasks) == [1, 1]
    with pytest.raises(ExpressionEvaluationError, match="june"):
        months.scan(text).to_arrow()


def test_a_path_of_mixed_types_is_not_proven(months: Table) -> None:
    """A file where ``$.d`` is a date string in one row and a number in another: the number
    lives in the ``value`` column, so the strings' bounds say nothing of it."""
    months.append([{"id": 50, "v": {"d": "2024-07-01"}}, {"id": 51, "v": {"d": 20240701}}])
    plan = months.scan("try_variant_get(v, '$.d', 'date') < DATE'2024-01-01'").plan()
    assert _counts(plan.tasks) == [2]
    with pytest.raises(ExpressionEvaluationError):
        months.scan("v:d::date < DATE'2024-01-01'").to_arrow()  # Spark cannot cast an int to a date


@pytest.mark.parametrize(("mode", "read"), [("name", 1), ("id", 3)])
def test_column_mapping_by_name_is_followed_and_by_id_proves_nothing(tmp_path: Path, mode: str, read: int) -> None:
    """The tags name the file's columns: physical names in ``name`` mode; in ``id`` mode the
    field ids are in the footer, which planning does not read, so nothing is proven."""
    t = Table.create(tmp_path / mode, "id bigint, v variant", properties={**SHREDDED, "delta.columnMapping.mode": mode})
    for k, month in enumerate((1, 3, 5)):
        t.append(_month(2024, month, 10 * k))
    text = "v:d::date > DATE'2024-04-01'"
    assert len(t.scan(text).plan().tasks) == read
    assert _ids(t, text) == [20, 21, 22, 23, 24]


# --- property: skipping by ISO dates changes nothing but what is read ------------------------------

#: days of years 1-9999 (the pure-Python reader holds no DATE of year 0, which Spark reads)
_days = st.one_of(
    st.dates(dt.date(2023, 12, 25), dt.date(2024, 1, 10)),
    st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)),
)
_values = st.one_of(
    _days.map(str),
    _days.map(str),
    st.sampled_from(["2024-1-5", "2024-01-05T10:00:00", " 2024-01-05", "2023-02-29", "x", ""]),
    st.integers(-3, 3),
    st.none(),
)
_docs = st.one_of(st.builds(lambda d, n: {"d": d, "n": n}, _values, st.integers(-3, 3)), st.just({}))
_rows = st.lists(_docs, min_size=1, max_size=4)
_ops = st.sampled_from(["<", "<=", ">", ">=", "=", "<>"])
_forms = st.sampled_from(["v:d::date", "try_variant_get(v, '$.d', 'date')", "try_cast(v:d AS DATE)"])


def _outcome(table: Table, text: str) -> Any:
    try:
        return sorted(table.scan(text).to_arrow().column("id").to_pylist())
    except ExpressionEvaluationError:
        return "raises"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(_rows, min_size=1, max_size=4),
    st.lists(st.tuples(_forms, _ops, _days), min_size=1, max_size=2),
    st.booleans(),
    st.sampled_from(["", " AND v:n::int > 2", " AND v:n::int > 5"]),
)
def test_skipping_by_iso_dates_gives_the_answer_of_reading_every_file(
    tmp_path_factory: Any, files: Any, conjuncts: Any, both: bool, last: str
) -> None:
    """Random files of ISO dates, other texts, numbers, NULLs and missing paths, filtered
    on the dates (and on a number whose bounds may exclude a file after a date cast that
    may raise): the same rows, or the same error, as reading every file."""
    root = tmp_path_factory.mktemp("iso")
    t = Table.create(root / "t", "id bigint, v variant", properties=SHREDDED)
    n = 0
    for docs in files:
        t.append([{"id": n + i, "v": doc} for i, doc in enumerate(docs)])
        n += len(docs)
    joiner = " AND " if both else " OR "
    text = "(" + joiner.join(f"{form} {op} DATE'{day}'" for form, op, day in conjuncts) + ")" + last
    assert _outcome(t, text) == _outcome(_unskippable(t, root / "every"), text)
