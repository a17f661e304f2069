"""The Spark planner takes each file's layout facts from its ``add`` tag: no footer read on a
tagged table; the footer on untagged files, malformed tags and column mapping by id; the
same groups either way."""

from __future__ import annotations

import datetime
import shutil
from dataclasses import replace
from pathlib import Path
from urllib.parse import unquote
from typing import Any

import pytest
from layout_facts_compare import rewrite_layout_tags

import varlake.read.layout as layout_module
from varlake.spark.reading.planner import ISNULL, PathUse, plan_table
from varlake.table import Table

SHREDDED = {"delta.enableVariantShredding": "true"}
USES = (
    PathUse(("v",), ("a",), "long"),
    PathUse(("v",), ("a",), "integer"),  # served by the bounds
    PathUse(("v",), ("s",), "date"),  # a string leaf, cast
    PathUse(("v",), ("d", "x"), "double"),
    PathUse(("v",), ("arr", 0), ISNULL),
    PathUse(("v",), ("objs",), "array<struct<q:bigint>>"),
)


def _rows(n: int, offset: int = 0, odd: bool = False) -> list[dict[str, Any]]:
    return [
        {
            "id": offset + i,
            "p": i % 2,
            "v": {
                "a": offset + i if not odd or i % 2 else f"{i}",  # odd: numbers and strings
                "s": str(datetime.date(2024, 1, 1 + i)),
                "d": {"x": i * 0.5},
                "arr": [i],
                "objs": [{"q": i}],
            },
        }
        for i in range(n)
    ]


@pytest.fixture()
def table(tmp_path: Path) -> Table:
    """Three appends, two partitions; the third append's ``a`` mixes numbers and strings (a Variant group)."""
    t = Table.create(tmp_path / "t", "id bigint, p int, v variant", partition_by=["p"], properties=SHREDDED)
    t.append(_rows(6))
    t.append(_rows(4, 100))
    t.append(_rows(4, 200, odd=True))
    return t


def _groups(table: Table, uses: tuple[PathUse, ...] = USES) -> list[tuple[str, tuple[str, ...], Any]]:
    """The files read each way (kind, partition, what is read per use). A tag may prove a
    string leaf's dates (``varlake.layout.dates``), which a footer never does: failure
    columns are left out, and groups that differ only in what is proven are merged."""
    plan = plan_table("t", table, table.snapshot(), uses, False, None)
    reads: dict[tuple[Any, ...], list[str]] = {}
    for g in plan.groups:
        key = (g.kind, g.partition_values, tuple(x for x in g.leaf_types if not x[0].failure))
        reads.setdefault(key, []).extend(t.relative_path for t in g.tasks)
    return sorted((kind, tuple(sorted(files)), leaves) for (kind, _, leaves), files in reads.items())


def test_tags_prove_iso_dates_and_footers_do_not(table: Table, tmp_path: Path) -> None:
    """``$.s`` holds ISO dates in every file: read through tags its cast to date needs no
    failure column in any shredded group; read through footers every group keeps one."""
    date_use = USES[2]
    tagged = plan_table("t", table, table.snapshot(), USES, False, None)
    shredded = [g for g in tagged.groups if g.kind == "shredded"]
    assert shredded and all(date_use in g.proven for g in shredded)
    assert not any(use.failure for use in tagged.uses)
    untagged = _copy(table, tmp_path / "untagged")
    rewrite_layout_tags(untagged.path, None)
    footers = plan_table("t", untagged, untagged.snapshot(), USES, False, None)
    assert not any(g.proven for g in footers.groups)
    assert [use for use in footers.uses if use.failure] == [replace(date_use, failure=True)]


@pytest.fixture()
def footer_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The footers the planner reads (through ``read.layout.file_layout``)."""
    calls: list[str] = []
    real = layout_module.file_layout

    def counting(storage: Any, path: str) -> Any:
        calls.append(path)
        return real(storage, path)

    monkeypatch.setattr(layout_module, "file_layout", counting)
    return calls


def _no_footers(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a footer was read")

    monkeypatch.setattr(layout_module, "file_layout", refuse)
    monkeypatch.setattr(layout_module, "_read_layout", refuse)


def _copy(table: Table, target: Path) -> Table:
    shutil.copytree(table.path, target)
    return Table(target)


def test_tagged_table_plans_without_reading_a_footer(table: Table, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    untagged = _copy(table, tmp_path / "untagged")
    rewrite_layout_tags(untagged.path, None)
    expected = _groups(untagged)  # from the footers
    kinds = sorted(k for k, _, _ in expected)
    assert kinds.count("shredded") >= 2 and "variant" in kinds
    _no_footers(monkeypatch)
    assert _groups(table) == expected


def test_untagged_files_read_their_footers(table: Table, tmp_path: Path, footer_reads: list[str]) -> None:
    expected = _groups(table)
    assert footer_reads == []
    untagged = _copy(table, tmp_path / "untagged")
    rewrite_layout_tags(untagged.path, None)
    assert _groups(untagged) == expected
    assert len(footer_reads) == len(untagged.files())


@pytest.mark.parametrize("bad", ["garbage", '{"v":99,"c":[]}', '{"v":1,"c":[[["v"],[1,"p","int64",5,1]]]}', "[" * 50_000])
def test_malformed_tags_fall_back_to_the_footer(table: Table, tmp_path: Path, footer_reads: list[str], bad: str) -> None:
    expected = _groups(table)
    broken = _copy(table, tmp_path / "broken")
    rewrite_layout_tags(broken.path, bad)
    assert _groups(broken) == expected
    assert len(footer_reads) == len(broken.files())


def test_one_untagged_file_reads_one_footer(table: Table, tmp_path: Path, footer_reads: list[str]) -> None:
    expected = _groups(table)
    t = _copy(table, tmp_path / "one")
    first = sorted(a.path for a in t.files())[0]
    rewrite_layout_tags(t.path, None, only={first})
    assert _groups(t) == expected
    assert len(footer_reads) == 1 and footer_reads[0].endswith(unquote(first))
    plan = plan_table("t", t, t.snapshot(), USES, False, None)  # its dates unproven: a group of its own
    for g in plan.groups:
        if g.kind == "shredded":
            assert bool(g.proven) == (unquote(first) not in {task.relative_path for task in g.tasks}), g


def test_checkpointed_table_plans_from_tags(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _groups(table)
    table.checkpoint()
    for commit in (Path(table.path) / "_delta_log").glob("*.json"):
        commit.unlink()
    _no_footers(monkeypatch)
    assert _groups(Table(table.path)) == expected


def test_column_mapping_by_id_reads_footers(tmp_path: Path, footer_reads: list[str]) -> None:
    t = Table.create(tmp_path / "id", "id bigint, p int, v variant", properties={**SHREDDED, "delta.columnMapping.mode": "id"})
    t.append(_rows(5))
    groups = _groups(t, USES[:1])
    assert [g[0] for g in groups] == ["shredded"]
    assert len(footer_reads) == 1  # field ids are in the footer only
    named = Table.create(tmp_path / "name", "id bigint, p int, v variant", properties={**SHREDDED, "delta.columnMapping.mode": "name"})
    named.append(_rows(5))
    before = len(footer_reads)
    assert [g[0] for g in _groups(named, USES[:1])] == ["shredded"]
    assert len(footer_reads) == before
