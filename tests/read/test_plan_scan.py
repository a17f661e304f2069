"""``read.plan_scan``: files skipped by partition values, by statistics, put back because a
cast could raise (and why); the pyarrow reader raising where Spark would; footer layouts
read through ``Storage``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, BinaryIO

import pytest

from varlake import Table
from varlake.errors import DataFileMissingError, ExpressionEvaluationError
from varlake.expr import AlwaysFalse, AlwaysTrue, Comparison, VariantGet, bind, parse_predicate
from varlake.io.storage import LocalStorage
from varlake.read import file_layout, fold_partitions, plan_scan, schema_types
from varlake.read.residual import filter_steps, row_group_guards

SHREDDED = {"delta.enableVariantShredding": "true"}


def _names(tasks: Any) -> list[str]:
    return sorted(t.relative_path.split("/")[0] + ":" + str(t.num_records) for t in tasks)


@pytest.fixture()
def table(tmp_path: Path) -> Table:
    """Four files in two partitions: small numbers, numbers as text, text that is not a
    number, and numbers too large for a TINYINT."""
    t = Table.create(tmp_path / "t", "id bigint, p int, s string, v variant", partition_by=["p"], properties=SHREDDED)
    t.append([{"id": i, "p": 0, "s": "a", "v": {"a": i, "n": i}} for i in range(5)])  # p=0, 5 rows
    t.append([{"id": 10 + i, "p": 1, "s": "b", "v": {"a": 10 + i, "n": str(i)}} for i in range(3)])  # p=1, 3 rows
    t.append([{"id": 20 + i, "p": 1, "s": "c", "v": {"a": 20 + i, "n": "x"}} for i in range(2)])  # p=1, 2 rows
    t.append([{"id": 30 + i, "p": 0, "s": "d", "v": {"a": 30 + i, "n": 1000 + i}} for i in range(4)])  # p=0, 4 rows
    return t


def _plan(t: Table, text: str) -> Any:
    return t.scan(text).plan()


def test_files_skipped_by_partition_values_and_by_statistics(table: Table) -> None:
    plan = _plan(table, "p = 1 AND v:a::bigint < 15")
    assert _names(plan.skipped_by_partition) == ["p=0:4", "p=0:5"]
    assert _names(plan.skipped_by_stats) == ["p=1:2"]
    assert _names(plan.tasks) == ["p=1:3"]
    assert plan.put_back == () and plan.total_files == 4
    assert _names(plan.skipped) == ["p=0:4", "p=0:5", "p=1:2"]  # what existing callers read
    assert sorted(table.scan("p = 1 AND v:a::bigint < 15").to_arrow().column("id").to_pylist()) == [10, 11, 12]


def test_partition_values_fold_on_either_side_of_and_or(table: Table) -> None:
    # Spark folds "x OR TRUE" and "x AND FALSE" whatever x is: so does the residual filter
    plan = _plan(table, "v:n::int = 3 OR p = 1")
    residuals = {t.relative_path.split("/")[0]: t.residual for t in plan.tasks}
    assert residuals["p=1"] == AlwaysTrue()
    assert isinstance(residuals["p=0"], Comparison) and isinstance(residuals["p=0"].left, VariantGet)
    # the p=1 files hold "x" at n, but their rows never evaluate the cast
    assert sorted(table.scan("v:n::int = 3 OR p = 1").to_arrow().column("id").to_pylist()) == [3, 10, 11, 12, 20, 21]
    plan = _plan(table, "v:n::int = 3 AND p = 0")
    assert _names(plan.skipped_by_partition) == ["p=1:2", "p=1:3"]
    assert _names(plan.skipped_by_stats) == ["p=0:4"] and _names(plan.tasks) == ["p=0:5"]
    bound = bind(parse_predicate("(p = 0 AND id > 1) OR NOT (p = 0)"), schema_types(table.schema))
    assert fold_partitions(bound, {"p": "0"}, {"p": "integer"}) == bind(parse_predicate("id > 1"), schema_types(table.schema))
    assert fold_partitions(bound, {"p": "1"}, {"p": "integer"}) == AlwaysTrue()
    assert fold_partitions(bind(parse_predicate("p = 2"), schema_types(table.schema)), {"p": "0"}, {"p": "integer"}) == AlwaysFalse()


def test_a_file_where_a_cast_could_raise_is_put_back_with_the_reason(table: Table) -> None:
    # statistics exclude the numbers (none below -5), but 1000 does not fit a TINYINT: Spark
    # raises on that file, so it is read (the text files have no numeric bounds: read anyway)
    plan = _plan(table, "p = 0 AND v:n::tinyint < -5")
    assert _names(plan.skipped_by_stats) == ["p=0:5"]  # 0..4 fit: the cast cannot fail there
    assert _names(plan.put_back_tasks) == ["p=0:4"] and _names(plan.tasks) == ["p=0:4"]
    reason = plan.put_back[0].reason
    assert "could raise" in reason and "$['n']" in reason and "byte" in reason
    assert [str(t) for t in plan.put_back[0].terms] == ["variant_get(v, '$[\\'n\\']', 'byte')"]
    # ... so the pyarrow reader raises, as Spark does, instead of silently skipping the file
    for text in ("p = 0 AND v:n::tinyint < -5", "p = 0 AND CAST(v:n AS TINYINT) < -5"):
        with pytest.raises(ExpressionEvaluationError, match="(?i)overflow|cannot be cast|INVALID_VARIANT_CAST"):
            table.scan(text).to_arrow()
    # text that is not a number raises in the files that are read anyway
    with pytest.raises(ExpressionEvaluationError, match="INVALID_VARIANT_CAST|cannot be cast"):
        table.scan("v:n::int > 5000").to_arrow()
    # the try_ forms never raise: nothing is put back
    plan = _plan(table, "p = 0 AND try_variant_get(v, '$.n', 'tinyint') < -5")
    assert plan.put_back == () and plan.tasks == ()
    assert table.scan("TRY_CAST(v:n AS TINYINT) < -5").to_arrow().num_rows == 0


def test_a_plain_conjunct_that_excludes_a_file_keeps_it_skipped(table: Table) -> None:
    # no row of any file has id > 100: no row group is evaluated, no cast runs
    plan = _plan(table, "v:n::int = 1 AND id > 100")
    assert plan.tasks == () and len(plan.skipped_by_stats) == 4 and plan.put_back == ()
    assert table.scan("v:n::int = 1 AND id > 100").to_arrow().num_rows == 0
    # a plain conjunct no row satisfies, within the statistics' range (s = 'bb'): the file
    # is read, but its row group is dropped before the cast runs (as Parquet dictionaries do)
    assert table.scan("v:n::int = 1 AND s = 'bb'").to_arrow().num_rows == 0
    bound = bind(parse_predicate("v:n::int = 1 AND s = 'bb' AND (id > 3 OR id < 1)"), schema_types(table.schema))
    assert [str(g) for g in row_group_guards(bound)] == ["(s = 'bb')", "((id > 3) OR (id < 1))"]
    assert row_group_guards(bind(parse_predicate("s = 'bb'"), schema_types(table.schema))) == ()
    # either order: the file of "x" has no row with s = 'b', the others cast without error
    for text in ("v:n::int = 1 AND s = 'b'", "s = 'b' AND v:n::int = 1"):
        assert table.scan(text).to_arrow().column("id").to_pylist() == [11]
    # where a row with "x" satisfies the plain conjunct, the cast runs there and fails
    for text in ("v:n::int = 1 AND s = 'c'", "s = 'c' AND v:n::int = 1"):
        with pytest.raises(ExpressionEvaluationError):
            table.scan(text).to_arrow()


def test_plain_casts_are_never_proven_safe(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id bigint, s string")
    t.append([{"id": 1, "s": "1"}, {"id": 2, "s": "2"}])
    t.append([{"id": 1000, "s": "three"}])
    # the column's bounds prove the narrowing cast of the first file; 1000 does not fit
    plan = t.scan("CAST(id AS TINYINT) < 0").plan()
    assert [t.num_records for t in plan.skipped_by_stats] == [2]
    assert [p.task.num_records for p in plan.put_back] == [1] and "no statistics prove its input converts" in plan.put_back[0].reason
    with pytest.raises(ExpressionEvaluationError):
        t.scan("CAST(id AS TINYINT) < 0").to_arrow()
    # widening casts and casts to text never raise
    assert t.scan("CAST(id AS BIGINT) < 0").plan().put_back == ()
    assert t.scan("CAST(id AS STRING) = 'zz'").plan().put_back == ()
    # text to a number is never proven safe, but statistics cannot exclude it either: read
    with pytest.raises(ExpressionEvaluationError):
        t.scan("CAST(s AS INT) > 10").to_arrow()
    assert t.scan("TRY_CAST(s AS INT) > 1").to_arrow().column("id").to_pylist() == [2]


class CountingStorage(LocalStorage):
    """A LocalStorage that counts the footers it is asked to open."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    def open_read(self, path: str) -> BinaryIO:
        self.opened.append(path)
        return super().open_read(path)


def test_footer_layouts_are_read_through_storage_and_cached(table: Table) -> None:
    storage = CountingStorage()
    task = next(t for t in table.scan().plan().tasks if t.num_records == 5)
    path = f"{table.path}/{task.relative_path}"
    layout = file_layout(storage, path)
    assert layout.leaf_type(("v",), ("a",)) == "long" and layout.leaf_type(("v",), ("n",)) == "long"
    assert layout.location == storage.location(path)
    assert file_layout(storage, path) is layout  # cached by location, size and mtime
    assert file_layout(LocalStorage(), path) is layout  # another Table object shares it
    assert len(storage.opened) <= 1
    with pytest.raises(DataFileMissingError):
        file_layout(storage, f"{table.path}/missing.parquet")


def test_storage_open_read_is_seekable_and_names_missing_files(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    storage.write("d/f.bin", b"0123456789")
    with storage.open_read("d/f.bin") as fh:
        fh.seek(-3, 2)
        assert fh.read() == b"789"
    from varlake.errors import StorageFileNotFoundError

    with pytest.raises(StorageFileNotFoundError):
        storage.open_read("d/none.bin")


def test_files_and_scans_without_a_filter_list_every_file(table: Table) -> None:
    plan = plan_scan(table.snapshot(), table.log.root_location)
    assert plan == table.scan().plan()
    assert plan.filter is None and len(plan.tasks) == 4 and plan.skipped == () and plan.put_back == ()
    assert len(table.files()) == 4 and len(table.files("p = 0")) == 2
    assert table.scan().to_arrow().num_rows == 14


def test_typed_variant_get_calls_are_extracted_from_every_row_read(table: Table) -> None:
    # Spark extracts variant_get(v, path, type) while scanning (pushVariantIntoScan): a value
    # that does not convert raises even where the rest of the filter already decided the row
    with pytest.raises(ExpressionEvaluationError, match="INVALID_VARIANT_CAST|cannot be cast"):
        table.scan("id >= 0 OR variant_get(v, '$.n', 'int') = 1").to_arrow()
    # the cast forms are evaluated lazily, only where the filter reaches them
    assert table.scan("id >= 0 OR v:n::int = 1").to_arrow().num_rows == 14
    assert table.scan("id >= 0 OR CAST(v:n AS INT) = 1").to_arrow().num_rows == 14
    assert table.scan("id >= 0 OR try_variant_get(v, '$.n', 'int') = 1").to_arrow().num_rows == 14
    # ... and never on files whose partition values decide the filter ("x" is in p=1 only)
    ids = table.scan("p = 1 OR variant_get(v, '$.n', 'int') = 1").to_arrow().column("id").to_pylist()
    assert sorted(ids) == [1, 10, 11, 12, 20, 21]


def test_rows_are_checked_in_sparks_order(tmp_path: Path) -> None:
    types = {("id",): "long", ("t",): "string", ("v",): "variant"}
    steps = filter_steps(bind(parse_predicate("try_variant_get(v, '$.n', 'int') < 5 AND CAST(t AS INT) = 7"), types))
    assert [(k, w if k == "not null" else str(w)) for k, w, _ in steps] == [
        ("not null", "v"), ("predicate", "(try_variant_get(v, '$[\\'n\\']', 'integer') < 5)"),
        ("not null", "t"), ("predicate", "(CAST(t AS INTEGER) = 7)"),
    ]
    # IN and IS NULL infer nothing; an IS NOT NULL on a path goes last; NOT (a OR b) splits
    steps = filter_steps(bind(parse_predicate("v:a IS NOT NULL AND t IN ('1') AND NOT (id = 1 OR v:b IS NULL)"), types))
    assert [w if k == "not null" else str(w) for k, w, _ in steps] == [
        "(t IN ('1'))", "id", "(id <> 1)", "v", "(variant_get(v, '$[\\'a\\']', 'variant') IS NOT NULL)",
        "(variant_get(v, '$[\\'b\\']', 'variant') IS NOT NULL)",
    ]
    # a row whose Variant is NULL never reaches the cast of t that follows
    t = Table.create(tmp_path / "t", "id bigint, t string, v variant")
    t.append([{"id": 1, "t": "", "v": None}, {"id": 2, "t": "7", "v": {"n": 1}}])
    assert t.scan("try_variant_get(v, '$.n', 'int') < 5 AND CAST(t AS INT) = 7").to_arrow().column("id").to_pylist() == [2]
    with pytest.raises(ExpressionEvaluationError):
        t.scan("CAST(t AS INT) = 7 AND try_variant_get(v, '$.n', 'int') < 5").to_arrow()


def test_a_cast_repeated_in_one_conjunct_is_computed_before_it(tmp_path: Path) -> None:
    # Spark computes a repeated subexpression once, ahead of the conjunct: the OR cannot
    # skip it; across top-level conjuncts it is not shared, so AND still short-circuits
    t = Table.create(tmp_path / "t", "id bigint, s string, v variant")
    t.append([{"id": 1, "s": "12", "v": {"a": "x"}}, {"id": 2, "s": "b", "v": {"a": 3}}])
    types = schema_types(t.schema)
    [(_, _, first)] = filter_steps(bind(parse_predicate("s < '7' OR v:a::bigint >= -13 OR v:a::bigint < 9"), types))
    assert [str(term) for term in first] == ["variant_get(v, '$[\\'a\\']', 'long')"]
    with pytest.raises(ExpressionEvaluationError):
        t.scan("s < '7' OR (v:a::bigint >= -13 AND v:a::bigint < 100)").to_arrow()
    assert t.scan("s < '7' OR v:a::bigint >= -13").to_arrow().num_rows == 2
    assert t.scan("s > '7' AND v:a::bigint >= -13 AND v:a::bigint < 100").to_arrow().column("id").to_pylist() == [2]


def test_common_factors_are_taken_out_as_spark_does(table: Table) -> None:
    types = schema_types(table.schema)

    def folded(text: str) -> str:
        return str(fold_partitions(bind(parse_predicate(text), types), {}, {}))

    assert folded("(s <> 'x' AND v:n::int = 14) OR s <> 'x'") == "(s <> 'x')"
    assert folded("(s = 'a' OR v:n::int = 1) AND (s = 'a' OR id > 3)") == (
        "((s = 'a') OR ((variant_get(v, '$[\\'n\\']', 'integer') = 1) AND (id > 3)))"
    )
    # so the cast absorbed away never runs: "x" at n is in the rows with s = 'c'
    assert table.scan("(s <> 'zz' AND v:n::int = 14) OR s <> 'zz'").to_arrow().num_rows == 14
    with pytest.raises(ExpressionEvaluationError):
        table.scan("(s <> 'zz' AND v:n::int = 14) OR s <> 'zy'").to_arrow()
