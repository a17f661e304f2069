"""Writers honour CHECK constraints, column invariants and NOT NULL columns (as Delta on Spark)."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest

from varlake.errors import ConstraintViolationError, UnsupportedFeatureError
from varlake.table import Table
from varlake.write.staging.constraints import table_constraints

from constraint_tables import add_constraints as _redefine, files_under as _files

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "testdata", "delta", "golden")


@pytest.fixture
def checked(tmp_path):
    root = str(tmp_path / "t")
    t = Table.create(root, "x bigint, s string, n struct<a: int>")
    t.append([{"x": 1, "s": "a", "n": {"a": 1}}])
    _redefine(root, writer=3, constraints={"pos": "x > 0", "short": "s < 'l' OR s IS NULL"}, invariants={"n": "n.a < 10"})
    return Table(root)


def _unchanged(t: Table, call, match: str) -> None:
    before_files, before_version = _files(t.path), t.snapshot().version
    with pytest.raises(ConstraintViolationError, match=match) as info:
        call()
    assert _files(t.path) == before_files
    assert Table(t.path).snapshot().version == before_version
    return info.value


def test_constraints_of_a_table(checked):
    got = table_constraints(checked.snapshot().schema, checked.snapshot().properties)
    assert [(c.kind, c.name, c.expression) for c in got] == [
        ("check", "pos", "x > 0"),
        ("check", "short", "s < 'l' OR s IS NULL"),
        ("invariant", "EXPRESSION(n.a < 10)", "n.a < 10"),
    ]


def test_rows_that_satisfy_land(checked):
    checked.append([{"x": 2, "s": "bb", "n": {"a": 9}}, {"x": 3, "s": None, "n": {"a": 0}}])
    checked.overwrite([{"x": 5, "s": "c", "n": {"a": 2}}])
    assert checked.scan().to_arrow().column("x").to_pylist() == [5]


def test_check_violation_names_constraint_and_values(checked):
    err = _unchanged(checked, lambda: checked.append([{"x": 2, "s": "a", "n": {"a": 1}}, {"x": -4, "s": "zz", "n": {"a": 1}}]), "pos")
    assert "CHECK constraint pos x > 0 violated by row with values:\n - x : -4" in str(err)


def test_overwrite_violation_keeps_table(checked):
    _unchanged(checked, lambda: checked.overwrite([{"x": 7, "s": "long", "n": {"a": 1}}]), "short")
    assert checked.scan().to_arrow().column("x").to_pylist() == [1]


def test_null_result_is_a_violation(checked):
    # Delta's CheckDeltaInvariant: a CHECK whose result is NULL fails, as does an invariant
    err = _unchanged(checked, lambda: checked.append([{"x": None, "s": "a", "n": {"a": 1}}]), "pos")
    assert " - x : null" in str(err)
    err = _unchanged(checked, lambda: checked.append([{"x": 1, "s": "a", "n": None}]), "EXPRESSION")
    assert "CHECK constraint EXPRESSION(n.a < 10) n.a < 10 violated by row with values:\n - n.a : null" in str(err)


def test_invariant_violation(checked):
    err = _unchanged(checked, lambda: checked.append([{"x": 1, "s": "a", "n": {"a": 10}}]), "EXPRESSION")
    assert " - n.a : 10" in str(err)


def test_not_null_column(tmp_path):
    root = str(tmp_path / "nn")
    t = Table.create(root, pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())]))
    t.append([{"id": 1, "v": None}])
    _unchanged(t, lambda: t.append([{"id": None, "v": "x"}]), r"NOT NULL constraint violated for column: id\.")
    assert Table(root).scan().to_arrow().column("id").to_pylist() == [1]


def test_unevaluable_expression_refuses(tmp_path):
    root = str(tmp_path / "u")
    t = Table.create(root, "x bigint")
    _redefine(root, writer=3, constraints={"odd": "some_udf(x) = 1"})
    t = Table(root)
    before = _files(root)
    with pytest.raises(UnsupportedFeatureError, match="odd.*cannot be evaluated"):
        t.append([{"x": 1}])
    assert _files(root) == before


def test_legacy_writer_v2_without_invariants_is_writable(tmp_path):
    src = os.path.join(GOLDEN, "basic-with-vacuum-protocol-check-feature")
    if not os.path.isdir(src):
        pytest.skip("golden tables not present")
    root = str(tmp_path / "g")
    shutil.copytree(src, root)
    t = Table(root)
    t.append([{"id": 100, "str": "val=100"}])
    assert t.scan().to_arrow().num_rows == 101


def test_nested_not_null_field(tmp_path):
    """Delta checks NOT NULL struct fields through GetStructField: a NULL parent fails too."""
    root = str(tmp_path / "nested")
    inner = pa.struct([pa.field("a", pa.int32(), nullable=False), pa.field("b", pa.int32())])
    t = Table.create(root, pa.schema([pa.field("n", inner)]))
    t.append([{"n": {"a": 1, "b": None}}])
    _unchanged(t, lambda: t.append([{"n": {"a": 2, "b": 1}}, {"n": {"a": None, "b": 1}}]), r"column: n\.a\.")
    _unchanged(t, lambda: t.append([{"n": None}]), r"column: n\.a\.")
    assert Table(root).scan().to_arrow().num_rows == 1
