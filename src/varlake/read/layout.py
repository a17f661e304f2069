"""Footer facts of a data file: where its Variant paths are shredded, and how perfectly.

A Variant path is *perfectly shredded* in a file when it ends at a typed primitive
``typed_value`` leaf whose sibling ``value`` column is null in every row group (the
footer's null counts prove it): every value at the path is then in the typed leaf, or
missing. ``FileLayout`` answers that per path from the footer alone, and gives the
footer's min and max of integer leaves; engines decide from these facts how to read.

Footers are read through ``Storage`` and cached per file location, size and mtime
(files of a Delta table never change, a rewritten file changes its size or mtime).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from varlake.errors import DataFileMissingError, ShreddingError, StorageError, StorageFileNotFoundError, TableError
from varlake.io.storage import Storage
from varlake.shred.layout import ArrayLayout, LeafKind, ObjectLayout, PrimitiveLayout, ValueLayout, recognise_layout

__all__ = ["FileLayout", "Segment", "file_layout", "leaf_type_name", "unique_field"]

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


class FileLayout:
    """The footer of one data file and what it says about its Variant columns (built once per file)."""

    def __init__(self, location: str, metadata: pq.FileMetaData) -> None:
        self.location = location
        self.metadata = metadata
        self.schema = metadata.schema.to_arrow_schema()
        self.columns = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}
        self._layouts: dict[tuple[str, ...], ValueLayout | None] = {}
        self._leaves: dict[tuple[tuple[str, ...], tuple[Segment, ...]], str | None] = {}
        #: facts an engine derives from this footer, cached with it (keys name the engine)
        self.memo: dict[object, object] = {}

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
        """The top ``value``/``typed_value`` level of a Variant column, or None if it is not one."""
        if column not in self._layouts:
            layout: ValueLayout | None = None
            group = self._group_type(column)
            if group is not None:
                try:
                    layout = recognise_layout(group, f"{self.location}: column {'.'.join(column)!r}").root
                except ShreddingError:
                    layout = None  # not a layout varlake knows: no path counts as shredded
            self._layouts[column] = layout
        return self._layouts[column]

    def all_null(self, column_path: str) -> bool:
        """Footer proof that a Parquet column holds no value in any row group."""
        index = self.columns.get(column_path)
        if index is None:
            return False
        for g in range(self.metadata.num_row_groups):
            chunk = self.metadata.row_group(g).column(index)
            stats = chunk.statistics
            if stats is None or not stats.has_null_count or stats.null_count != chunk.num_values:
                return False
        return True

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
        if f"{parquet}.typed_value" not in self.columns:
            return None  # e.g. a legacy 2-level list: its column paths differ
        if node.has_value and not self.all_null(f"{parquet}.value"):
            return None
        return leaf_type_name(node.typed)

    def leaf_type(self, column: tuple[str, ...], segments: tuple[Segment, ...]) -> str | None:
        """Type (canonical name) of the typed leaf at a perfectly shredded path, else None."""
        key = (column, segments)
        if key not in self._leaves:
            found = self.node(column, segments)
            self._leaves[key] = self.primitive_leaf(*found) if found is not None else None
        return self._leaves[key]

    def leaf_bounds(self, parquet: str) -> tuple[object, object] | None:
        """Footer min and max of an INT32/INT64 typed leaf over all row groups (``(None,
        None)`` when it holds no value at all), or None when a row group has values but no
        trustworthy statistics."""
        index = self.columns.get(f"{parquet}.typed_value")
        if index is None:
            return None
        low: object = None
        high: object = None
        for g in range(self.metadata.num_row_groups):
            chunk = self.metadata.row_group(g).column(index)
            stats = chunk.statistics
            if stats is not None and stats.has_null_count and stats.null_count == chunk.num_values:
                continue  # only NULLs here
            if stats is None or not stats.has_min_max or chunk.physical_type not in ("INT32", "INT64"):
                return None
            low = stats.min if low is None or stats.min < low else low  # type: ignore[operator]
            high = stats.max if high is None or stats.max > high else high  # type: ignore[operator]
        return low, high


_CACHE_SIZE = 4096
_cache: OrderedDict[tuple[str, int, int], FileLayout] = OrderedDict()
_cache_lock = threading.Lock()


def _read_layout(storage: Storage, path: str, location: str) -> FileLayout:
    try:
        with storage.open_read(path) as source:
            metadata = pq.read_metadata(source)
    except StorageFileNotFoundError:
        raise DataFileMissingError(f"{location}: data file is missing") from None
    except (StorageError, OSError, pa.ArrowException) as exc:
        raise TableError(f"{location}: cannot read the Parquet footer ({exc})") from None
    return FileLayout(location, metadata)


def file_layout(storage: Storage, path: str) -> FileLayout:
    """The (cached) footer layout of the data file at ``path`` in ``storage``; the cache
    is keyed by the file's location, size and mtime, so tables opened again share it."""
    location = storage.location(path)
    try:
        info = storage.info(path)
    except StorageFileNotFoundError:
        raise DataFileMissingError(f"{location}: data file is missing") from None
    except StorageError as exc:
        raise TableError(f"{location}: data file is unreadable ({exc})") from None
    key = (location, info.size, info.mtime_ms)
    with _cache_lock:
        layout = _cache.get(key)
        if layout is not None:
            _cache.move_to_end(key)
            return layout
    layout = _read_layout(storage, path, location)
    with _cache_lock:
        _cache[key] = layout
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return layout
