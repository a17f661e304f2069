"""Layout facts of a data file: where its Variant paths are shredded, and how perfectly.

A Variant path is *perfectly shredded* in a file when it ends at a typed primitive
``typed_value`` leaf whose sibling ``value`` column is null in every row group (the
footer's null counts prove it): every value at the path is then in the typed leaf, or
missing. ``LayoutFacts`` answers that per path; engines decide from these facts how to read.

Two sources give the same facts: ``FileLayout``, from the Parquet footer, and
``io.layout_tag.TaggedLayout``, from the compact record the writer puts in the file's
``add`` action (so a never-seen table plans without reading footers).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from varlake.errors import ShreddingError
from varlake.shred.layout import ArrayLayout, LeafKind, ObjectLayout, PrimitiveLayout, ValueLayout, recognise_layout

__all__ = ["FileLayout", "LayoutFacts", "Segment", "clear_cache", "leaf_type_name", "row_group_bounds", "unique_field"]

Segment = str | int

_LEAF_TYPES: Mapping[LeafKind, str] = {
    LeafKind.BOOLEAN: "boolean",
    LeafKind.INT8: "byte",
    LeafKind.INT16: "short",
    LeafKind.INT32: "integer",
    LeafKind.INT64: "long",
    LeafKind.FLOAT: "float",
    LeafKind.DOUBLE: "double",
    LeafKind.DATE: "date",
    LeafKind.TIMESTAMP: "timestamp",
    LeafKind.TIMESTAMP_NTZ: "timestamp_ntz",
    LeafKind.STRING: "string",
    LeafKind.BINARY: "binary",
}


def leaf_type_name(leaf: PrimitiveLayout) -> str | None:
    """Canonical type name of a typed leaf; None for TIME, UUID and nanosecond timestamps."""
    if leaf.kind in (LeafKind.DECIMAL4, LeafKind.DECIMAL8, LeafKind.DECIMAL16):
        return f"decimal({leaf.arrow_type.precision},{leaf.arrow_type.scale})"
    return _LEAF_TYPES.get(leaf.kind)


def unique_field(typed: ObjectLayout, key: str) -> ValueLayout | None:
    """The shredded field ``key``, unless another field has the same name up to case
    (readers that match names case-insensitively, as Spark's does, would mix them)."""
    lowered = key.lower()
    if sum(1 for k in typed.keys if k.lower() == lowered) != 1:
        return None
    return typed.field(key)


class LayoutFacts(ABC):
    """What a data file's layout says about its Variant columns, whatever the source.

    Columns are named as in the file (``("v",)``, ``("s", "v")``); Parquet columns by their
    dotted path (``v.typed_value.a.value``). Subclasses give ``variant_root``, ``all_null``,
    ``has_column`` and ``leaf_bounds``; the derived facts are computed here, once.
    """

    def __init__(self) -> None:
        self._leaves: dict[tuple[tuple[str, ...], tuple[Segment, ...]], str | None] = {}
        #: facts an engine derives from these, cached with them (keys name the engine)
        self.memo: dict[object, object] = {}

    @abstractmethod
    def variant_root(self, column: tuple[str, ...]) -> ValueLayout | None:
        """The top ``value``/``typed_value`` level of a Variant column, or None if it is not one."""

    @abstractmethod
    def all_null(self, column_path: str) -> bool:
        """Proof that a Parquet column holds no value in any row group."""

    @abstractmethod
    def has_column(self, column_path: str) -> bool:
        """Whether the file has this Parquet (leaf) column."""

    @abstractmethod
    def leaf_bounds(self, parquet: str) -> tuple[object, object] | None:
        """Min and max of the integer or decimal typed leaf of the level at ``parquet`` over
        all row groups (``(None, None)`` when it holds no value at all), or None when unknown."""

    def date_text(self, parquet: str) -> bool:
        """Proof that the string typed leaf of the level at ``parquet`` holds only ISO dates
        (``io.date_leaves``: its values were read); a footer alone never proves it."""
        return False

    def node(self, column: tuple[str, ...], segments: tuple[Segment, ...]) -> tuple[ValueLayout, str] | None:
        """The shredded level at a path and its dotted Parquet path, if the path is shredded."""
        node = self.variant_root(column)
        if node is None:
            return None
        parquet = ".".join(column)
        for segment in segments:
            typed = node.typed
            if isinstance(segment, str) and isinstance(typed, ObjectLayout):
                child = unique_field(typed, segment)
                if child is None:
                    return None
                node, parquet = child, f"{parquet}.typed_value.{segment}"
            elif isinstance(segment, int) and isinstance(typed, ArrayLayout):
                node, parquet = typed.element, f"{parquet}.typed_value.list.element"
            else:
                return None
        return node, parquet

    def primitive_leaf(self, node: ValueLayout, parquet: str) -> str | None:
        """The leaf type of a level holding only typed primitives (its ``value`` all-null)."""
        if not isinstance(node.typed, PrimitiveLayout):
            return None
        if not self.has_column(f"{parquet}.typed_value"):
            return None  # e.g. a legacy 2-level list: its column paths differ
        if node.has_value and not self.all_null(f"{parquet}.value"):
            return None
        return leaf_type_name(node.typed)

    def iso_date_leaf(self, column: tuple[str, ...], segments: tuple[Segment, ...]) -> bool:
        """Proof that every value at a path is a string of an ISO date: it ends at a perfectly
        shredded string leaf the writer proved to hold only such text (``date_text``)."""
        key = ("iso_date_leaf", column, segments)
        if key not in self.memo:
            found = self.node(column, segments) if self.leaf_type(column, segments) == "string" else None
            self.memo[key] = found is not None and self.date_text(found[1])
        return self.memo[key]  # type: ignore[return-value]

    def leaf_type(self, column: tuple[str, ...], segments: tuple[Segment, ...]) -> str | None:
        """Type (canonical name) of the typed leaf at a perfectly shredded path, else None."""
        key = (column, segments)
        if key not in self._leaves:
            found = self.node(column, segments)
            self._leaves[key] = self.primitive_leaf(*found) if found is not None else None
        return self._leaves[key]


def row_group_bounds(metadata: pq.FileMetaData, index: int) -> list[tuple[object, object]] | None:
    """The footer's ``(min, max)`` of column ``index`` in each row group that holds a value
    (row groups of NULLs only are left out), or None when such a row group has no
    statistics or bounds that cannot be decoded (bytes that are no UTF-8 text)."""
    out = []
    for g in range(metadata.num_row_groups):
        chunk = metadata.row_group(g).column(index)
        stats = chunk.statistics
        if stats is not None and stats.has_null_count and stats.null_count == chunk.num_values:
            continue  # only NULLs here
        if stats is None or not stats.has_min_max:
            return None
        try:
            out.append((stats.min, stats.max))
        except (UnicodeDecodeError, ValueError, pa.ArrowException):
            return None
    return out


_RECOGNISED_SIZE = 1024
_MISSING = object()
_recognised: dict[pa.DataType, ValueLayout | None] = {}
_recognised_lock = threading.Lock()


def _recognise(group: pa.DataType) -> ValueLayout | None:
    """``recognise_layout(group).root``, None if it is not a layout varlake knows; shared by
    the files with the same column type (the layout depends on the type alone; a type's
    hash walks it, so the cache is looked up once and simply emptied when full)."""
    found = _recognised.get(group, _MISSING)
    if found is not _MISSING:
        return found  # type: ignore[return-value]
    try:
        layout: ValueLayout | None = recognise_layout(group).root
    except ShreddingError:
        layout = None  # not a layout varlake knows: no path counts as shredded
    with _recognised_lock:
        if len(_recognised) >= _RECOGNISED_SIZE:
            _recognised.clear()
        _recognised[group] = layout
    return layout


def clear_cache() -> None:
    """Forget the recognised layouts (benchmarks measuring a first use)."""
    with _recognised_lock:
        _recognised.clear()


class FileLayout(LayoutFacts):
    """The footer of one data file and what it says about its Variant columns (built once per file)."""

    def __init__(self, location: str, metadata: pq.FileMetaData) -> None:
        super().__init__()
        self.location = location
        self.metadata = metadata
        self.schema = metadata.schema.to_arrow_schema()
        self.columns = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
        self._layouts: dict[tuple[str, ...], ValueLayout | None] = {}

    def _group_type(self, column: tuple[str, ...]) -> pa.DataType | None:
        t: pa.DataType | None = None
        for i, name in enumerate(column):
            if i == 0:
                index = self.schema.get_field_index(name)
                t = self.schema.field(index).type if index >= 0 else None
            elif t is not None and pa.types.is_struct(t) and t.get_field_index(name) >= 0:
                t = t.field(name).type
            else:
                return None
        return t if t is not None and pa.types.is_struct(t) else None

    def variant_root(self, column: tuple[str, ...]) -> ValueLayout | None:
        if column not in self._layouts:
            group = self._group_type(column)
            self._layouts[column] = _recognise(group) if group is not None else None
        return self._layouts[column]

    def has_column(self, column_path: str) -> bool:
        return column_path in self.columns

    def all_null(self, column_path: str) -> bool:
        index = self.columns.get(column_path)
        if index is None:
            return False
        for g in range(self.metadata.num_row_groups):
            chunk = self.metadata.row_group(g).column(index)
            stats = chunk.statistics
            if stats is None or not stats.has_null_count or stats.null_count != chunk.num_values:
                return False
        return True

    def leaf_bounds(self, parquet: str) -> tuple[object, object] | None:
        """Footer min and max of an INT32/INT64 typed leaf over all row groups (``(None,
        None)`` when it holds no value at all), or None when a row group has values but no
        trustworthy statistics."""
        index = self.columns.get(f"{parquet}.typed_value")
        if index is None:
            return None
        groups = row_group_bounds(self.metadata, index)
        if groups is None:
            return None
        if not groups:
            return None, None
        if self.metadata.schema.column(index).physical_type not in ("INT32", "INT64"):
            return None
        return min(low for low, _ in groups), max(high for _, high in groups)  # type: ignore[type-var]
