"""Tables Spark writes through ``varlake.spark.write`` carry each file's layout tag (facts
computed on the driver or on the executors equal the footer's); ``varlake.spark.sql`` plans
them without reading a footer and answers as from the footers."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from layout_facts_compare import assert_same_facts, rewrite_layout_tags

import varlake.read.layout as layout_module
import varlake.spark as vs
import varlake.spark.writing.writer as writer_module
from varlake.io.layout_tag import LAYOUT_TAG, tagged_layout
from varlake.read.layout import file_layout
from varlake.table import Table

pytestmark = pytest.mark.spark

QUERY = (
    "SELECT v:k::string AS k, sum(v:a::bigint) AS a, sum(v:a::int) AS i, sum(v:d.x::decimal(20,1)) AS x, "
    "max(v:s::date) AS s FROM {e} WHERE v:a::bigint >= 20 GROUP BY 1 ORDER BY 1"
)


def _write(spark: Any, path: Path) -> Table:
    df = spark.range(0, 240, 1, 6).selectExpr(
        "id",
        "parse_json(to_json(named_struct('a', id, 'k', cast(id % 3 AS string), 's', cast(date_add(DATE'2024-01-01', CAST(id AS INT)) AS string), "
        "'d', named_struct('x', id * 0.5), 'arr', array(id, id + 1)))) AS v",
    )
    vs.write(df, str(path), properties={"delta.enableVariantShredding": "true"})
    return Table(path)


def _check(table: Table) -> None:
    assert len(table.files()) >= 2
    for add in table.files():
        assert LAYOUT_TAG in (add.tags or {}), add
        facts = tagged_layout(add.tags)
        assert facts is not None and facts.leaf_type(("v",), ("a",)) == "long"
        assert facts.date_text("v.typed_value.s") and not facts.date_text("v.typed_value.k")  # ISO dates, read back
        assert_same_facts(file_layout(table.storage, table.data_file(add)), facts, [("v",)])


@pytest.fixture(scope="module")
def written(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Table:
    """A table written by Spark, its file facts computed on the driver."""
    return _write(spark, tmp_path_factory.mktemp("layout_tags") / "t")


def test_spark_write_records_tags_on_the_driver(written: Table) -> None:
    _check(written)


def test_spark_write_records_tags_on_the_executors(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writer_module, "EXECUTOR_STATS_THRESHOLD", 0)
    _check(_write(spark, tmp_path / "t"))


def test_sql_plans_without_footers_and_answers_as_from_footers(
    spark: Any, written: Table, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = written
    untagged = tmp_path / "untagged"
    shutil.copytree(table.path, untagged)
    rewrite_layout_tags(untagged, None)
    from_footers = [tuple(r) for r in vs.sql(spark, QUERY, e=str(untagged)).collect()]
    footer_plan = vs.explain(spark, QUERY, e=str(untagged), show=False)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a footer was read")

    monkeypatch.setattr(layout_module, "file_layout", refuse)
    fresh = tmp_path / "fresh"  # never seen by this process
    shutil.copytree(table.path, fresh)
    tagged_plan = vs.explain(spark, QUERY, e=str(fresh), show=False)
    rows = [tuple(r) for r in vs.sql(spark, QUERY, e=str(fresh)).collect()]
    assert rows == from_footers and len(rows) == 3
    tagged_groups, footer_groups = tagged_plan.prepared.plans["e"].groups, footer_plan.prepared.plans["e"].groups

    def reads(groups: Any) -> list[Any]:  # failure columns apart: only a tag proves the ISO dates of $.s
        return [(g.kind, tuple(x for x in g.leaf_types if not x[0].failure)) for g in groups]

    assert reads(tagged_groups) == reads(footer_groups)
    assert all(g.kind == "shredded" for g in tagged_groups)
    assert [str(u) for g in tagged_groups for u in g.proven] == ["v:$['s'] AS date"] * len(tagged_groups)
    assert not any(g.proven for g in footer_groups)
