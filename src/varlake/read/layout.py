"""Layout facts of a data file for planning: from its ``add`` action's tag, else its footer.

A Variant path is *perfectly shredded* in a file when it ends at a typed primitive
``typed_value`` leaf whose sibling ``value`` column is null in every row group (the
footer's null counts prove it). ``FileLayout`` (``varlake.io.layout_facts``) answers that
per path from the footer; ``TaggedLayout`` (``varlake.io.layout_tag``) gives the same
facts from the ``varlake.layout`` tag the write path records in each ``add``, so that a
never-seen table plans without reading footers (``task_layout``).

Footers are read through ``Storage`` and cached per file location, size and mtime
(files of a Delta table never change, a rewritten file changes its size or mtime).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from varlake.delta.column_mapping import ID_KEY, PARQUET_FIELD_ID, ColumnMapping
from varlake.delta.schema import DataType, StructType
from varlake.errors import DataFileMissingError, StorageError, StorageFileNotFoundError, TableError
from varlake.io import layout_facts, layout_tag
from varlake.io.layout_facts import FileLayout, LayoutFacts, Segment, leaf_type_name, unique_field
from varlake.io.layout_tag import LAYOUT_TAG, TaggedLayout, tagged_layout
from varlake.io.storage import Storage

__all__ = [
    "LAYOUT_TAG",
    "FileLayout",
    "LayoutFacts",
    "Segment",
    "TaggedLayout",
    "clear_caches",
    "file_column",
    "file_layout",
    "iso_date_keys",
    "leaf_type_name",
    "task_layout",
    "unique_field",
]

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


def task_layout(storage: Storage, path: str, tags: Mapping[str, str | None] | None) -> LayoutFacts:
    """The layout facts of the data file at ``path`` whose ``add`` has ``tags``: from its
    ``varlake.layout`` tag when well-formed (no I/O), else from its footer (``file_layout``:
    files written by other engines, by older varlake versions, or with a malformed tag)."""
    tagged = tagged_layout(tags)
    return tagged if tagged is not None else file_layout(storage, path)


def iso_date_keys(
    tags: Mapping[str, str | None] | None,
    keys: Mapping[tuple[tuple[str, ...], str], tuple[Segment, ...]],
    mapping: ColumnMapping | None,
) -> frozenset[tuple[tuple[str, ...], str]]:
    """Of ``keys`` (a Variant column of the table and a normalized path, each with the
    path's segments), those every value of which is an ISO date string in the data file
    whose ``add`` has ``tags`` (``LayoutFacts.iso_date_leaf``), its columns named as
    ``file_column`` finds them. From the tags alone, as planning reads no footer: without
    them, none (nor in column mapping by id, whose field ids only the footer has)."""
    layout = tagged_layout(tags)
    if layout is None:
        return frozenset()
    found = set()
    for (column, path), segments in keys.items():
        in_file = file_column(layout, column, mapping)
        if in_file is not None and layout.iso_date_leaf(in_file, segments):
            found.add((column, path))
    return frozenset(found)


def file_column(layout: LayoutFacts, column: tuple[str, ...], mapping: ColumnMapping | None) -> tuple[str, ...] | None:
    """The names a data file gives a column (a path through structs) of the table: its
    physical names in ``name`` mode, the names of the fields holding its field ids in ``id``
    mode (None if the file lacks one), the display names without column mapping."""
    if mapping is None:
        return column
    if mapping.mode != "id":
        return mapping.physical_path(column)
    if not isinstance(layout, FileLayout):
        return None  # field ids are in the footer only (``_group`` reads it in id mode)
    names: list[str] = []
    dtype: DataType = mapping.schema
    fields = list(layout.schema)
    for name in column:
        assert isinstance(dtype, StructType)
        f = dtype.field(name)
        wanted = str(f.metadata.get(ID_KEY)).encode()
        found = [x for x in fields if x.metadata is not None and x.metadata.get(PARQUET_FIELD_ID) == wanted]
        if len(found) != 1:
            return None
        names.append(found[0].name)
        dtype = f.type
        fields = list(found[0].type) if pa.types.is_struct(found[0].type) else []
    return tuple(names)


def clear_caches() -> None:
    """Forget every cached footer, decoded tag and recognised layout of this process, as a
    process that never saw a table (benchmarks measuring a first use)."""
    with _cache_lock:
        _cache.clear()
    layout_tag.clear_cache()
    layout_facts.clear_cache()
