"""Comparing two sources of a data file's layout facts (footer vs ``add`` tag), path by path."""

from __future__ import annotations

from typing import Any

from varlake.io.layout_facts import LayoutFacts, leaf_type_name
from varlake.shred.layout import ArrayLayout, LeafKind, ObjectLayout, PrimitiveLayout, ValueLayout
from varlake.spark.reading.planner import ISNULL, PathUse, serving

#: primitive targets every path is asked for (widening, narrowing by bounds, string casts, ISNULL)
TARGETS = (
    "long", "integer", "short", "byte", "decimal(38,0)", "decimal(5,2)", "decimal(20,4)",
    "string", "double", "boolean", "date", "timestamp", ISNULL,
)
_BOUNDED = {LeafKind.INT8, LeafKind.INT16, LeafKind.INT32, LeafKind.INT64, LeafKind.DECIMAL4, LeafKind.DECIMAL8, LeafKind.DECIMAL16}


def skeleton(node: ValueLayout | None) -> Any:
    """A layout tree as comparable data: value column, and typed kind (leaf type name, keys, element)."""
    if node is None:
        return None
    typed = node.typed
    if isinstance(typed, PrimitiveLayout):
        kind: Any = ("p", typed.kind, leaf_type_name(typed))
    elif isinstance(typed, ObjectLayout):
        kind = ("o", tuple((k, skeleton(v)) for k, v in typed.fields))
    elif isinstance(typed, ArrayLayout):
        kind = ("a", skeleton(typed.element))
    else:
        kind = None
    return (node.path, node.has_value, kind)


def paths(node: ValueLayout, prefix: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], ValueLayout]]:
    """Every level of a layout tree with its segments (arrays through element 0)."""
    out = [(prefix, node)]
    typed = node.typed
    if isinstance(typed, ObjectLayout):
        for key, child in typed.fields:
            out.extend(paths(child, (*prefix, key)))
    elif isinstance(typed, ArrayLayout):
        out.extend(paths(typed.element, (*prefix, 0)))
    return out


def _nested_target(node: ValueLayout) -> str | None:
    """A struct/array target asking for every leaf of a subtree as its own type."""
    typed = node.typed
    if isinstance(typed, PrimitiveLayout):
        return leaf_type_name(typed)
    if isinstance(typed, ArrayLayout):
        element = _nested_target(typed.element)
        return f"array<{element}>" if element else None
    if isinstance(typed, ObjectLayout):
        fields = [(k, _nested_target(v)) for k, v in typed.fields]
        fields = [(k, t) for k, t in fields if t]
        names = [k.lower() for k, _ in fields]
        if not fields or len(set(names)) != len(names):
            return None
        return "struct<" + ",".join(f"`{k}`:{t}" for k, t in fields) + ">"
    return None


def assert_same_facts(footer: LayoutFacts, tagged: LayoutFacts, columns: list[tuple[str, ...]]) -> int:
    """Every fact a planner asks, for every level of every column and a few absent paths,
    is the same from both sources; returns the number of levels compared."""
    compared = 0
    for column in columns:
        root = footer.variant_root(column)
        assert skeleton(tagged.variant_root(column)) == skeleton(root), column
        if root is None:
            continue
        for segments, node in paths(root):
            compared += 1
            where = (column, segments)
            found = footer.node(column, segments)
            assert found is not None and found[0] == node
            other = tagged.node(column, segments)
            assert other is not None and other[1] == found[1], where
            parquet = found[1]
            assert tagged.leaf_type(column, segments) == footer.leaf_type(column, segments), where
            assert tagged.primitive_leaf(other[0], parquet) == footer.primitive_leaf(node, parquet), where
            assert tagged.all_null(f"{parquet}.value") == footer.all_null(f"{parquet}.value"), where
            if isinstance(node.typed, PrimitiveLayout):
                assert tagged.has_column(f"{parquet}.typed_value") == footer.has_column(f"{parquet}.typed_value"), where
                if node.typed.kind in _BOUNDED:
                    assert tagged.leaf_bounds(parquet) == footer.leaf_bounds(parquet), where
            for target in TARGETS:
                use = PathUse(column, segments, target)
                assert serving(tagged, use) == serving(footer, use), (where, target)
            nested = _nested_target(node)
            if nested is not None and not isinstance(node.typed, PrimitiveLayout):
                use = PathUse(column, segments, nested)
                assert serving(tagged, use) == serving(footer, use), (where, nested)
            for extra in ("zz", 0):  # absent paths below every level
                assert tagged.leaf_type(column, (*segments, extra)) == footer.leaf_type(column, (*segments, extra))
    return compared


def rewrite_layout_tags(table_path: Any, value: str | None, only: Any = None) -> None:
    """Set every ``add``'s (or only those whose path is in ``only``) ``varlake.layout`` tag in
    a table's JSON commits to ``value`` (None: remove it and the bounds tag, as another engine
    or an older varlake would have written the file)."""
    import json
    from pathlib import Path

    from varlake.io.layout_tag import BOUNDS_TAG, LAYOUT_TAG

    for commit in sorted((Path(table_path) / "_delta_log").glob("*.json")):
        lines = []
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            add = action.get("add")
            if add is not None and (only is None or add["path"] in only):
                tags = dict(add.get("tags") or {})
                if value is None:
                    tags.pop(LAYOUT_TAG, None)
                    tags.pop(BOUNDS_TAG, None)
                else:
                    tags[LAYOUT_TAG] = value
                add["tags"] = tags or None
            lines.append(json.dumps(action))
        commit.write_text("\n".join(lines) + "\n")
