"""The write path records each data file's layout facts in its ``add`` (``varlake.layout``),
equal to what its footer says; rewrites and checkpoints keep them; bad tags are ignored."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from layout_facts_compare import assert_same_facts

from varlake.delta.ddl import as_struct_type
from varlake.io.layout_tag import BOUNDS_TAG, DATES_TAG, LAYOUT_TAG, MAX_TAG_CHARS, TaggedLayout, layout_tags, tagged_layout
from varlake.io.parquet_write import write_parquet
from varlake.read.layout import FileLayout, file_layout
from varlake.table import Table, to_arrow_table

SHREDDED = {"delta.enableVariantShredding": "true"}


def _footer(table: Table, add: Any) -> FileLayout:
    return file_layout(table.storage, table.data_file(add))


def _check_tagged(table: Table, columns: list[tuple[str, ...]] | None = None) -> int:
    """Every live file carries a tag whose facts equal its footer's; levels compared."""
    compared = 0
    for add in table.files():
        assert add.tags is not None and LAYOUT_TAG in add.tags and BOUNDS_TAG in add.tags, add.path
        tagged = tagged_layout(add.tags)
        assert isinstance(tagged, TaggedLayout), add.tags
        compared += assert_same_facts(_footer(table, add), tagged, columns or [("v",)])
    return compared


def _events(n: int, offset: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "id": offset + i,
            "v": {
                "a": offset + i,
                "s": f"x{i}",
                "d": {"x": i * 1.5, "n": {"deep": i % 3}},
                "arr": [i, i + 1],
                "objs": [{"q": i, "r": "t"}],
                "mixed": i if i % 2 else f"{i}",
                "dec": Decimal(f"{i}.25"),
                "day": datetime.date(2024, 1, 1 + i % 28),
            },
        }
        for i in range(n)
    ]


def test_append_records_layout_facts_equal_to_the_footer(tmp_path: Path) -> None:
    table = Table.create(tmp_path / "t", "id bigint, v variant", properties=SHREDDED)
    table.append(_events(20))
    table.append(_events(5, 100))
    assert _check_tagged(table) >= 2 * 10
    tag = json.loads(table.files()[0].tags[LAYOUT_TAG])
    assert tag["v"] == 1 and [c[0] for c in tag["c"]] == [["v"]]
    layout = tagged_layout(table.files()[0].tags)
    assert layout is not None and layout.leaf_type(("v",), ("a",)) == "long"
    assert layout.leaf_type(("v",), ("d", "n", "deep")) == "long"
    assert layout.leaf_type(("v",), ("mixed",)) is None  # numbers and strings: not perfectly shredded


def test_unshredded_and_variant_free_files_record_what_they_have(tmp_path: Path) -> None:
    plain = Table.create(tmp_path / "plain", "id bigint, v variant")  # shredding off
    plain.append(_events(3))
    _check_tagged(plain)
    assert tagged_layout(plain.files()[0].tags).leaf_type(("v",), ("a",)) is None
    none = Table.create(tmp_path / "none", "id bigint, s string")
    none.append([{"id": 1, "s": "a"}])
    assert json.loads(none.files()[0].tags[LAYOUT_TAG]) == {"v": 1, "c": []}


def test_variant_in_a_struct_and_column_mapping(tmp_path: Path) -> None:
    table = Table.create(
        tmp_path / "t", "id bigint, s struct<inner: variant, n: int>, v variant",
        properties={**SHREDDED, "delta.columnMapping.mode": "name"},
    )
    table.append([{"id": i, "s": {"inner": None, "n": i}, "v": {"a": i}} for i in range(4)])
    add = table.files()[0]
    footer = _footer(table, add)
    names = [tuple(c[0]) for c in json.loads(add.tags[LAYOUT_TAG])["c"]]
    assert len(names) == 2 and all(n[0].startswith("col-") for n in names)  # the file's physical names
    assert_same_facts(footer, tagged_layout(add.tags), names)


def test_optimize_update_and_delete_rewrites_record_tags(tmp_path: Path) -> None:
    table = Table.create(tmp_path / "t", "id bigint, v variant", properties={**SHREDDED, "delta.enableDeletionVectors": "false"})
    for k in range(3):
        table.append(_events(4, 10 * k))
    table.optimize()
    assert len(table.files()) == 1
    _check_tagged(table)
    table.optimize(cluster_by=["v:a::bigint"])  # the clustering tag joins the layout tags
    assert all(len(a.tags or {}) == 3 for a in table.files())
    _check_tagged(table)
    table.update({"v": "parse_json('{\"a\": 7, \"s\": \"new\"}')"}, where="id = 1")
    table.delete("id = 2")  # rewrites (deletion vectors off)
    _check_tagged(table)


def test_deletion_vectors_keep_the_tag(tmp_path: Path) -> None:
    table = Table.create(tmp_path / "t", "id bigint, v variant", properties={**SHREDDED, "delta.enableDeletionVectors": "true"})
    table.append(_events(6))
    before = table.files()[0].tags
    table.delete("id = 2")
    (after,) = table.files()
    assert after.deletion_vector is not None and after.tags == before
    _check_tagged(table)


def test_checkpoint_keeps_tags(tmp_path: Path) -> None:
    table = Table.create(tmp_path / "t", "id bigint, v variant", properties=SHREDDED)
    table.append(_events(5))
    table.append(_events(5, 50))
    expected = {a.path: a.tags for a in table.files()}
    table.checkpoint()
    for commit in (Path(table.path) / "_delta_log").glob("*.json"):
        commit.unlink()  # the checkpoint alone must give the tags back
    reopened = Table(table.path)
    assert {a.path: a.tags for a in reopened.files()} == expected
    _check_tagged(reopened)


# --- the property: random batches through the shredding policy -------------------------------------------

_KEYS = st.sampled_from(["a", "b", "c", "A", "k.l", "x y"])
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-120, 120),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.text(max_size=4),
    st.decimals(min_value=-1000, max_value=1000, places=2, allow_nan=False, allow_infinity=False),
    st.dates(min_value=datetime.date(1900, 1, 1), max_value=datetime.date(2100, 1, 1)),
)


def _value(depth: int) -> st.SearchStrategy[Any]:
    if depth == 0:
        return _SCALARS
    inner = _value(depth - 1)
    return st.one_of(_SCALARS, st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3))


@st.composite
def _batches(draw: Any) -> list[Any]:
    """Rows mostly shaped like one template (so the policy shreds), with some drift."""
    template = draw(st.dictionaries(_KEYS, _value(2), min_size=1, max_size=4))
    rows = []
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.integers(0, 4)) == 0:
            rows.append(draw(st.one_of(st.none(), _value(2))))
        else:
            row = dict(template)
            for key in draw(st.lists(_KEYS, max_size=2)):
                row[key] = draw(_value(1))
            rows.append(row)
    return rows


@settings(max_examples=40, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(batches=st.lists(_batches(), min_size=1, max_size=2))
def test_tag_facts_equal_footer_facts_for_random_batches(tmp_path_factory: pytest.TempPathFactory, batches: list[list[Any]]) -> None:
    table = Table.create(tmp_path_factory.mktemp("prop") / "t", "id bigint, v variant", properties=SHREDDED)
    for rows in batches:
        table.append([{"id": i, "v": row} for i, row in enumerate(rows)])
    _check_tagged(table)


@settings(max_examples=30, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(
    rows=st.lists(st.dictionaries(st.sampled_from(["a", "b"]), _value(1), max_size=2), min_size=1, max_size=6),
    layout=st.sampled_from([
        "a bigint, b string",
        "a int, b array<smallint>",
        "a decimal(9,2), b struct<x: tinyint, y: date>",
        "a decimal(20,2), b double",
        "a array<struct<q: bigint>>, b boolean",
    ]),
)
def test_tag_facts_equal_footer_facts_for_given_layouts(tmp_path_factory: pytest.TempPathFactory, rows: list[Any], layout: str) -> None:
    """Layouts the policy might not pick (narrow integers, decimals, arrays of objects)."""
    target = tmp_path_factory.mktemp("given") / "f.parquet"
    data = to_arrow_table({"v": rows}, as_struct_type("v variant"))
    result = write_parquet(data, target, shredding={"v": layout}, variant_columns=["v"])
    footer = FileLayout(str(target), result.metadata)
    tags = layout_tags(result.metadata)
    assert set(tags) == {LAYOUT_TAG, BOUNDS_TAG}
    tagged = tagged_layout(tags)
    assert tagged is not None
    assert_same_facts(footer, tagged, [("v",)])


# --- malformed tags are ignored, never an exception ----------------------------------------------------------

_GOOD = '{"v":1,"c":[[["v"],[1,"o",[["a",[7,"p","int64"]],["d",[7,"p","decimal(9,2)"]]]]]]}'
_GOOD_BOUNDS = '[[0,9],["1.50","2.25"]]'


@pytest.mark.parametrize(
    "text",
    [
        "", "not json", "[]", "null", '{"v":2,"c":[]}', '{"v":1}', '{"v":1,"c":{}}',
        '{"v":1,"c":[[["v"]]]}', '{"v":1,"c":[[[],[0]]]}', '{"v":1,"c":[[[1],[0]]]}',
        '{"v":1,"c":[[["v"],[0]],[["v"],[0]]]}',  # the same column twice
        '{"v":1,"c":[[["v"],[8]]]}', '{"v":1,"c":[[["v"],[true]]]}', '{"v":1,"c":[[["v"],[2]]]}',
        '{"v":1,"c":[[["v"],[1,"q",[]]]]}', '{"v":1,"c":[[["v"],[1,"o",[["a"]]]]]}',
        '{"v":1,"c":[[["v"],[1,"o",[[1,[0]]]]]]}', '{"v":1,"c":[[["v"],[1,"a",[0]]]]}',
        '{"v":1,"c":[[["v"],[1,"p","int99"]]]}', '{"v":1,"c":[[["v"],[1,"p","string",1]]]}',
        '{"v":1,"c":[[["v"],[1,"p","decimal(99,2)"]]]}', '{"v":1,"c":[[["v"],[1,"p","decimal(4,9)"]]]}',
        '{"v":1,"c":[[["v"],[1,"p","decimal4"]]]}',
        "[" * 100_000, '{"v":1,"c":[[["v"],' + "[1,\"a\"," * 5000 + "[0]" + "]" * 5000 + "]]}",
        _GOOD + " " * MAX_TAG_CHARS,
    ],
)
def test_malformed_structures_are_ignored(text: str) -> None:
    assert tagged_layout({LAYOUT_TAG: text, BOUNDS_TAG: "[]"}) is None
    assert tagged_layout({LAYOUT_TAG: text, BOUNDS_TAG: _GOOD_BOUNDS}) is None


@pytest.mark.parametrize(
    "bounds",
    [
        "", "{}", "[]", "[null]", "[null,null,null]", '[[0,9],["1","2"],null]', "[[0],null]", "[[9,0],null]",
        "[[1.5,2],null]", "[[null,2],null]", "[[true,false],null]", '[["0","9"],null]', '[null,[1,2]]',
        '[null,["x","1"]]', '[null,["NaN","1"]]', '[null,["2","1"]]', "[" * 100_000,
    ],
)
def test_malformed_bounds_are_ignored(bounds: str) -> None:
    assert tagged_layout({LAYOUT_TAG: _GOOD, BOUNDS_TAG: bounds}) is None


def test_absent_and_odd_tag_maps_are_ignored() -> None:
    assert tagged_layout(None) is None
    assert tagged_layout({}) is None
    assert tagged_layout({LAYOUT_TAG: None, BOUNDS_TAG: "[]"}) is None
    assert tagged_layout({LAYOUT_TAG: _GOOD}) is None  # the bounds are part of the facts
    assert tagged_layout({BOUNDS_TAG: _GOOD_BOUNDS}) is None
    assert tagged_layout({"other": _GOOD, BOUNDS_TAG: _GOOD_BOUNDS}) is None
    good = tagged_layout({LAYOUT_TAG: _GOOD, BOUNDS_TAG: _GOOD_BOUNDS})
    assert good is not None and good.leaf_type(("v",), ("a",)) == "long" and good.leaf_bounds("v.typed_value.a") == (0, 9)
    assert good.leaf_bounds("v.typed_value.d") == (Decimal("1.50"), Decimal("2.25"))
    unknown = tagged_layout({LAYOUT_TAG: _GOOD, BOUNDS_TAG: "[null,[null,null]]"})
    assert unknown is not None and unknown.leaf_bounds("v.typed_value.a") is None and unknown.leaf_bounds("v.typed_value.d") == (None, None)


def test_files_of_one_layout_share_the_decoded_structure() -> None:
    one = tagged_layout({LAYOUT_TAG: _GOOD, BOUNDS_TAG: _GOOD_BOUNDS})
    other = tagged_layout({LAYOUT_TAG: _GOOD, BOUNDS_TAG: "[[1,2],null]"})
    assert one is not None and other is not None and one is not other
    assert one.variant_root(("v",)) is other.variant_root(("v",))
    assert tagged_layout({LAYOUT_TAG: _GOOD, BOUNDS_TAG: _GOOD_BOUNDS}) is one  # and its memo


_JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10, 10), st.sampled_from(["v", "o", "a", "p", "int64", "decimal(9,2)", "string", "1.5"])),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(["v", "c"]), c, max_size=2),
    max_leaves=30,
).map(json.dumps)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.one_of(st.text(max_size=200), _JSONISH), st.one_of(st.just(_GOOD_BOUNDS), st.text(max_size=50), _JSONISH))
def test_random_tags_never_raise(text: str, bounds: str) -> None:
    for tags in ({LAYOUT_TAG: text, BOUNDS_TAG: bounds}, {LAYOUT_TAG: _GOOD, BOUNDS_TAG: bounds}):
        result = tagged_layout(tags)
        assert result is None or isinstance(result, TaggedLayout)


def test_oversized_layout_is_not_written(tmp_path: Path) -> None:
    """A layout whose tag would exceed ``MAX_TAG_CHARS`` gets none (planners read the footer)."""
    keys = [f"field_with_a_long_name_{i:05d}" for i in range(2000)]
    data = to_arrow_table({"v": [{k: 1 for k in keys}]}, as_struct_type("v variant"))
    target = tmp_path / "wide.parquet"
    layout = ", ".join(f"{k} bigint" for k in keys)
    result = write_parquet(data, target, shredding={"v": layout}, variant_columns=["v"])
    assert layout_tags(result.metadata) == {}


# --- string leaves of ISO dates (``DATES_TAG``) ------------------------------------------------------

_WITH_STRINGS = (
    '{"v":1,"c":[[["v"],[1,"o",[["s",[7,"p","string"]],["n",[7,"p","int64"]],'
    '["l",[3,"a",[1,"o",[["d",[7,"p","string"]],["e",[3,"p","string"]]]]]]]]]]}'
)  # string leaves in order: $.s, $.l[*].d ($.l[*].e has no typed_value column)
_STRING_BOUNDS = "[[1,2]]"


def test_append_records_which_string_leaves_hold_only_iso_dates(tmp_path: Path) -> None:
    table = Table.create(tmp_path / "t", "id bigint, v variant", properties=SHREDDED)
    docs = [{"day": f"2024-01-{i + 1:02d}", "loose": f"2024-1-{i + 1}", "items": [{"when": f"1999-12-{i + 1:02d}", "bad": "2023-02-28"}]} for i in range(9)]
    docs[4]["items"][0]["bad"] = "2023-02-29"  # ISO-shaped, sorts between the bounds, not a day
    table.append([{"id": i, "v": d} for i, d in enumerate(docs)])
    (add,) = table.files()
    assert DATES_TAG in add.tags
    layout = tagged_layout(add.tags)
    assert layout is not None
    dated = {p for p in ("day", "loose") if layout.date_text(f"v.typed_value.{p}")}
    items = "v.typed_value.items.typed_value.list.element.typed_value"
    dated |= {f"items.{p}" for p in ("when", "bad") if layout.date_text(f"{items}.{p}")}
    assert dated == {"day", "items.when"}
    assert not _footer(table, add).date_text("v.typed_value.day")  # a footer alone proves nothing
    assert layout.leaf_type(("v",), ("day",)) == "string"


def test_dates_tag_decodes_by_position_and_a_malformed_one_only_loses_the_dates() -> None:
    tags = {LAYOUT_TAG: _WITH_STRINGS, BOUNDS_TAG: _STRING_BOUNDS}
    layout = tagged_layout({**tags, DATES_TAG: "[1]"})
    assert layout is not None and layout.date_text("v.typed_value.l.typed_value.list.element.typed_value.d")
    assert not layout.date_text("v.typed_value.s")
    both = tagged_layout({**tags, DATES_TAG: "[0,1]"})
    assert both is not None and both.date_text("v.typed_value.s") and both is not layout
    for bad in ["", "{}", "[2]", "[-1]", "[true]", '["0"]', "[0.0]", "[" * 100_000, None, 7]:
        found = tagged_layout({**tags, DATES_TAG: bad})  # type: ignore[dict-item]
        assert found is not None and found.leaf_type(("v",), ("n",)) == "long", bad
        assert not found.date_text("v.typed_value.s") and not found.date_text("v.typed_value.l.typed_value.list.element.typed_value.d")
    absent = tagged_layout(tags)
    assert absent is not None and not absent.date_text("v.typed_value.s")
