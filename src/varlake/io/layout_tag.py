"""A data file's layout facts recorded in its ``add`` action, so planning reads no footer.

The write path (``write.files.file_facts``) puts ``layout_tags(metadata)`` into the file's
``add.tags`` (PROTOCOL.md: a map of string to string about the logical file). They are
computed from the footer the writer has in hand, through ``FileLayout``, so they hold
exactly the facts the footer gives, plus one only values give (which string leaves hold
only ISO dates), under three keys:

* ``LAYOUT_TAG`` (``varlake.layout``), the structure, ``{"v": 1, "c": [[["v"], NODE], ...]}``:
  every Variant column of the file (a group through structs that ``recognise_layout``
  accepts, by the file's own names) and its top level, where ``NODE`` is ``[flags]`` (no
  ``typed_value``), ``[flags, "o", [[key, NODE], ...]]`` (an object's shredded fields, in
  file order), ``[flags, "a", NODE]`` (an array's element) or ``[flags, "p", leaf]`` (a typed
  primitive: the ``LeafKind`` value, or ``decimal(p,s)``); ``flags``: 1 the level has a
  ``value`` column, 2 that column is all-null in every row group, 4 the primitive's
  ``typed_value`` column is where planners look for it;
* ``BOUNDS_TAG`` (``varlake.layout.bounds``): a JSON list with, for each integer or decimal
  leaf of the structure in order, its min and max over all row groups (``[min, max]``,
  decimals as text, ``[null, null]`` when it holds no value) or null when unknown;
* ``DATES_TAG`` (``varlake.layout.dates``), when the writer read the file's string leaves
  (``io.date_leaves``) and some hold only ISO dates: a JSON list of their positions among
  the string leaves of the structure, in order (absent: none is known to).

The structure is usually the same for every file of a write: it is decoded once per
distinct text and shared; only the bounds and dates are per file. ``tagged_layout`` reads
them back as a ``TaggedLayout`` (same answers as ``FileLayout`` for every path; leaf bounds for
integer and decimal leaves only, the only ones planners ask), or None when either is
absent, of another version or malformed (the caller then reads the footer): it never
raises; a malformed ``DATES_TAG`` only loses the dates. A file whose structure would exceed
``MAX_TAG_CHARS`` gets no tags.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from varlake.io.date_leaves import ReadColumns, date_leaves
from varlake.io.layout_facts import FileLayout, LayoutFacts
from varlake.shred.layout import ArrayLayout, LeafKind, ObjectLayout, PrimitiveLayout, ValueLayout

__all__ = ["BOUNDS_TAG", "DATES_TAG", "LAYOUT_TAG", "MAX_TAG_CHARS", "TaggedLayout", "clear_cache", "layout_tags", "tagged_layout"]

#: ``add.tags`` key of a data file's layout structure
LAYOUT_TAG = "varlake.layout"
#: ``add.tags`` key of the bounds of its integer and decimal leaves
BOUNDS_TAG = "varlake.layout.bounds"
#: ``add.tags`` key of the string leaves holding only ISO dates
DATES_TAG = "varlake.layout.dates"
#: tags longer than this are left out (the planner reads that file's footer instead)
MAX_TAG_CHARS = 65_536
_VERSION = 1

_HAS_VALUE, _VALUE_ALL_NULL, _TYPED_COLUMN = 1, 2, 4
_INTEGERS = frozenset({LeafKind.INT8, LeafKind.INT16, LeafKind.INT32, LeafKind.INT64})
_DECIMALS = {LeafKind.DECIMAL4: 9, LeafKind.DECIMAL8: 18, LeafKind.DECIMAL16: 38}
_DECIMAL = re.compile(r"decimal\((\d{1,2}),(\d{1,2})\)")
_ARROW: Mapping[LeafKind, pa.DataType] = {
    LeafKind.BOOLEAN: pa.bool_(),
    LeafKind.INT8: pa.int8(),
    LeafKind.INT16: pa.int16(),
    LeafKind.INT32: pa.int32(),
    LeafKind.INT64: pa.int64(),
    LeafKind.FLOAT: pa.float32(),
    LeafKind.DOUBLE: pa.float64(),
    LeafKind.DATE: pa.date32(),
    LeafKind.TIME: pa.time64("us"),
    LeafKind.TIMESTAMP: pa.timestamp("us", "UTC"),
    LeafKind.TIMESTAMP_NTZ: pa.timestamp("us"),
    LeafKind.TIMESTAMP_NANOS: pa.timestamp("ns", "UTC"),
    LeafKind.TIMESTAMP_NTZ_NANOS: pa.timestamp("ns"),
    LeafKind.STRING: pa.string(),
    LeafKind.BINARY: pa.binary(),
    LeafKind.UUID: pa.binary(16),
}
_KINDS = {kind.value: kind for kind in LeafKind}


# --- writing ---------------------------------------------------------------------------------------


def layout_tags(metadata: pq.FileMetaData, location: str = "data file", read: ReadColumns | None = None) -> dict[str, str]:
    """The ``LAYOUT_TAG`` and ``BOUNDS_TAG`` of a data file with this footer, and with
    ``read`` (reads the file's columns) its ``DATES_TAG``; none if the structure would be
    too large, or if the footer has no Arrow schema (then planners read the footer themselves)."""
    try:
        layout = FileLayout(location, metadata)
    except (pa.ArrowException, ValueError, TypeError):
        return {}
    columns = []
    bounds: list[Any] = []
    strings: list[str] = []
    for column in _struct_columns(layout):
        columns.append([list(column), _encode(layout, layout.variant_root(column), ".".join(column), bounds, strings)])
    text = json.dumps({"v": _VERSION, "c": columns}, separators=(",", ":"), ensure_ascii=False)
    if len(text) > MAX_TAG_CHARS:
        return {}
    tags = {LAYOUT_TAG: text, BOUNDS_TAG: json.dumps(bounds, separators=(",", ":"))}
    if read is not None and strings:
        dated = date_leaves(metadata, [f"{p}.typed_value" for p in strings], read)
        if dated:
            tags[DATES_TAG] = json.dumps([i for i, p in enumerate(strings) if f"{p}.typed_value" in dated], separators=(",", ":"))
    return tags


def _struct_columns(layout: FileLayout) -> list[tuple[str, ...]]:
    """Paths of the Variant columns: struct columns, through structs (not lists or maps),
    that ``variant_root`` recognises (a Variant's own groups are never one: no ``metadata``)."""
    out: list[tuple[str, ...]] = []

    def walk(fields: Any, prefix: tuple[str, ...]) -> None:
        for f in fields:
            if pa.types.is_struct(f.type):
                path = (*prefix, f.name)
                if layout.variant_root(path) is not None:
                    out.append(path)
                else:
                    walk(list(f.type), path)

    walk(list(layout.schema), ())
    return out


def _encode(layout: FileLayout, node: ValueLayout, parquet: str, bounds: list[Any], strings: list[str]) -> list[Any]:
    flags = 0
    if node.has_value:
        flags |= _HAS_VALUE
        if layout.all_null(f"{parquet}.value"):
            flags |= _VALUE_ALL_NULL
    typed = node.typed
    if typed is None:
        return [flags]
    if isinstance(typed, ObjectLayout):
        return [flags, "o", [[key, _encode(layout, child, f"{parquet}.typed_value.{key}", bounds, strings)] for key, child in typed.fields]]
    if isinstance(typed, ArrayLayout):
        return [flags, "a", _encode(layout, typed.element, f"{parquet}.typed_value.list.element", bounds, strings)]
    if layout.has_column(f"{parquet}.typed_value"):
        flags |= _TYPED_COLUMN
        if typed.kind is LeafKind.STRING:
            strings.append(parquet)
    if typed.kind in _INTEGERS or typed.kind in _DECIMALS:
        found = layout.leaf_bounds(parquet)
        if found is not None and all(isinstance(b, (int, Decimal)) or b is None for b in found):
            bounds.append([b if isinstance(b, int) or b is None else str(b) for b in found])
        else:
            bounds.append(None)
    return [flags, "p", _leaf_token(typed)]


def _leaf_token(leaf: PrimitiveLayout) -> str:
    if leaf.kind in _DECIMALS:
        return f"decimal({leaf.arrow_type.precision},{leaf.arrow_type.scale})"
    return leaf.kind.value


# --- reading ---------------------------------------------------------------------------------------


class _Malformed(Exception):
    """A tag that is not what ``layout_tags`` writes (never leaves this module)."""


class _Structure:
    """A decoded ``LAYOUT_TAG``: the layout trees, the all-null ``value`` columns, the
    primitive ``typed_value`` columns, the integer/decimal leaves and the string leaves
    (with a ``typed_value`` column) in order."""

    __slots__ = ("bounded", "columns", "roots", "strings", "value_all_null")

    def __init__(self) -> None:
        self.roots: dict[tuple[str, ...], ValueLayout] = {}
        self.value_all_null: set[str] = set()
        self.columns: set[str] = set()
        self.bounded: list[tuple[str, PrimitiveLayout]] = []
        self.strings: list[str] = []


class TaggedLayout(LayoutFacts):
    """A data file's layout facts read from its tags (``tagged_layout``)."""

    def __init__(
        self, structure: _Structure, bounds: Mapping[str, tuple[object, object]], dates: frozenset[str] = frozenset()
    ) -> None:
        super().__init__()
        self._structure = structure
        self._bounds = bounds
        self._dates = dates

    def variant_root(self, column: tuple[str, ...]) -> ValueLayout | None:
        return self._structure.roots.get(column)

    def all_null(self, column_path: str) -> bool:
        return column_path in self._structure.value_all_null

    def has_column(self, column_path: str) -> bool:
        """Answers for the ``typed_value`` columns of the recorded primitive levels (the only
        ones planners ask about); False for any other column."""
        return column_path in self._structure.columns

    def leaf_bounds(self, parquet: str) -> tuple[object, object] | None:
        return self._bounds.get(parquet)

    def date_text(self, parquet: str) -> bool:
        return parquet in self._dates


_CACHE_SIZE = 4096
_CACHE_CHARS = 16 * 1024 * 1024  # bounds the memory of the kept texts (and what they decode to)
_structures: OrderedDict[str, _Structure | None] = OrderedDict()
_layouts: OrderedDict[tuple[str, str, str | None], TaggedLayout | None] = OrderedDict()
_cache_chars = 0
_cache_lock = threading.Lock()


def tagged_layout(tags: Mapping[str, str | None] | None) -> TaggedLayout | None:
    """The layout facts in an ``add`` action's tags; None when absent or malformed (never
    raises). Files with the same tags share one ``TaggedLayout`` (and its memo), files with
    the same structure its decoded trees."""
    if not isinstance(tags, Mapping):
        return None
    text, bounds_text, dates_text = tags.get(LAYOUT_TAG), tags.get(BOUNDS_TAG), tags.get(DATES_TAG)
    if not isinstance(text, str) or not isinstance(bounds_text, str):
        return None
    dates_text = dates_text if isinstance(dates_text, str) else None
    key = (text, bounds_text, dates_text)
    with _cache_lock:
        if key in _layouts:
            _layouts.move_to_end(key)
            return _layouts[key]
        structure = _structures.get(text, False)
    if structure is False:
        structure = _guarded(_decode_structure, text)
        _remember(_structures, text, structure, len(text))
    layout = None
    if isinstance(structure, _Structure):
        bounds = _guarded(_decode_bounds, structure, bounds_text)
        dates = _guarded(_decode_dates, structure, dates_text) if dates_text is not None else None
        layout = TaggedLayout(structure, bounds, dates or frozenset()) if bounds is not None else None
    _remember(_layouts, key, layout, len(bounds_text) + len(dates_text or ""))
    return layout


def _guarded(decode: Any, *args: Any) -> Any:
    try:
        return decode(*args)
    except (_Malformed, ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError, InvalidOperation):
        return None  # the caller reads the footer


def _remember(store: "OrderedDict[Any, Any]", key: Any, value: Any, chars: int) -> None:
    global _cache_chars
    with _cache_lock:
        if key not in store:
            store[key] = value
            _cache_chars += chars
        for other in (_layouts, _structures):  # decoded layouts first: they hold structures
            while other and (len(other) > _CACHE_SIZE or _cache_chars > _CACHE_CHARS):
                old, _ = other.popitem(last=False)
                _cache_chars -= len(old) if isinstance(old, str) else len(old[1]) + len(old[2] or "")


def clear_cache() -> None:
    """Forget the decoded tags (benchmarks measuring a first use)."""
    global _cache_chars
    with _cache_lock:
        _structures.clear()
        _layouts.clear()
        _cache_chars = 0


def _decode_structure(text: str) -> _Structure:
    if len(text) > MAX_TAG_CHARS:
        raise _Malformed("too long")
    body = json.loads(text)
    if not isinstance(body, dict) or body.get("v") != _VERSION or not isinstance(body.get("c"), list):
        raise _Malformed("not version 1")
    structure = _Structure()
    for entry in body["c"]:
        if not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], list) or not entry[0]:
            raise _Malformed("column entry")
        column = tuple(entry[0])
        if not all(isinstance(name, str) for name in column) or column in structure.roots:
            raise _Malformed("column name")
        structure.roots[column] = _node(structure, entry[1], "$", ".".join(column))
    return structure


def _node(structure: _Structure, raw: Any, path: str, parquet: str) -> ValueLayout:
    if not isinstance(raw, list) or not raw or type(raw[0]) is not int or not 0 <= raw[0] <= 7:
        raise _Malformed("node")
    flags = raw[0]
    has_value = bool(flags & _HAS_VALUE)
    if flags & _VALUE_ALL_NULL:
        if not has_value:
            raise _Malformed("all-null value column without a value column")
        structure.value_all_null.add(f"{parquet}.value")
    if len(raw) == 1:
        return ValueLayout(path, has_value, None)
    kind = raw[1]
    if kind == "o" and len(raw) == 3 and isinstance(raw[2], list):
        fields = []
        for item in raw[2]:
            if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str):
                raise _Malformed("object field")
            key = item[0]
            child = f"{path}.{key}" if key and all(c.isalnum() or c == "_" for c in key) else f"{path}[{key!r}]"
            fields.append((key, _node(structure, item[1], child, f"{parquet}.typed_value.{key}")))
        return ValueLayout(path, has_value, ObjectLayout(tuple(fields)))
    if kind == "a" and len(raw) == 3:
        element = _node(structure, raw[2], f"{path}[*]", f"{parquet}.typed_value.list.element")
        if not element.has_value and element.typed is None:
            raise _Malformed("array element with neither value nor typed_value")
        return ValueLayout(path, has_value, ArrayLayout(element))
    if kind == "p" and len(raw) == 3 and isinstance(raw[2], str):
        leaf = _leaf(raw[2])
        if flags & _TYPED_COLUMN:
            structure.columns.add(f"{parquet}.typed_value")
        if leaf.kind in _INTEGERS or leaf.kind in _DECIMALS:
            structure.bounded.append((parquet, leaf))
        if leaf.kind is LeafKind.STRING and flags & _TYPED_COLUMN:
            structure.strings.append(parquet)
        return ValueLayout(path, has_value, leaf)
    raise _Malformed("typed_value")


def _leaf(token: str) -> PrimitiveLayout:
    found = _DECIMAL.fullmatch(token)
    if found is not None:
        precision, scale = int(found.group(1)), int(found.group(2))
        if not 1 <= precision <= 38 or scale > precision:
            raise _Malformed("decimal")
        kind = next(k for k, most in _DECIMALS.items() if precision <= most)
        return PrimitiveLayout(kind, pa.decimal128(precision, scale), scale)
    kind = _KINDS.get(token)
    if kind is None or kind in _DECIMALS:
        raise _Malformed("leaf kind")
    return PrimitiveLayout(kind, _ARROW[kind])


def _decode_bounds(structure: _Structure, text: str) -> dict[str, tuple[object, object]]:
    if len(text) > MAX_TAG_CHARS:
        raise _Malformed("too long")
    raw = json.loads(text)
    if not isinstance(raw, list) or len(raw) != len(structure.bounded):
        raise _Malformed("bounds do not match the structure")
    out: dict[str, tuple[object, object]] = {}
    for (parquet, leaf), pair in zip(structure.bounded, raw):
        if pair is None:
            continue
        if not isinstance(pair, list) or len(pair) != 2:
            raise _Malformed("bounds")
        out[parquet] = _bounds(leaf, pair[0], pair[1])
    return out


def _decode_dates(structure: _Structure, text: str) -> frozenset[str]:
    if len(text) > MAX_TAG_CHARS:
        raise _Malformed("too long")
    raw = json.loads(text)
    if not isinstance(raw, list) or not all(type(i) is int and 0 <= i < len(structure.strings) for i in raw):
        raise _Malformed("dates do not match the structure")
    return frozenset(structure.strings[i] for i in raw)


def _bounds(leaf: PrimitiveLayout, low: Any, high: Any) -> tuple[object, object]:
    if low is None and high is None:
        return None, None
    if leaf.kind in _INTEGERS:
        if type(low) is not int or type(high) is not int or low > high:
            raise _Malformed("integer bounds")
        return low, high
    if isinstance(low, str) and isinstance(high, str):
        lo, hi = Decimal(low), Decimal(high)
        if not (lo.is_finite() and hi.is_finite()) or lo > hi:
            raise _Malformed("decimal bounds")
        return lo, hi
    raise _Malformed("bounds")
