"""Spark 4.3's Variant patch functions, byte for byte: set, insert, delete, array append, strip nulls.

Spark (``VariantBuilder.setAtPath`` and friends) never edits bytes in place: it rebuilds the
whole Variant into a fresh builder, so every result is re-encoded and has a new dictionary.
The rules this module reproduces (each checked against Spark by tests/spark/test_spark_variant_patch.py):

- Walk: object fields in their stored order, array elements in order; every value not on the
  path is re-encoded as Spark's ``appendVariant`` does (containers rebuilt with the narrowest
  widths, primitives copied byte for byte). Keys enter the new dictionary in walk order (a key
  before its value), so the result's metadata is the pre-order of the result's keys; a removed
  field's key is not in it. Object values are laid out in walk order, field ids sorted by key.
- A new object field (set/insert of a missing key) goes after the existing fields; a missing
  intermediate key or index creates objects and arrays (an index ``n`` beyond the end pads with
  ``n - size`` Variant nulls).
- ``variant_set``: replaces every field with the key / the element; with
  ``create_if_missing=False`` a missing key or index leaves the value unchanged (still rebuilt).
- ``variant_insert``: the last step always adds: an existing key gives VARIANT_DUPLICATE_KEY;
  an index ``i <= size`` shifts the rest right; beyond the end pads with nulls.
- ``variant_delete``: removes every field with the key / the element; a missing or mistyped
  step is not an error (nothing removed); several paths apply left to right; NULL paths are
  skipped and all-NULL paths return the input untouched.
- ``variant_array_append``: the target must be an array; a missing key or index on the way
  leaves the value unchanged; the path may be ``$``.
- A key step on a non-object or an index step on a non-array (a Variant null included) is
  VARIANT_PATH_TYPE_MISMATCH naming the prefix where it failed. The ``try_`` forms return
  None for it (and ``try_variant_insert`` for VARIANT_DUPLICATE_KEY too); malformed bytes
  raise in every form. Paths use ``variant_get``'s grammar; ``$`` alone is INVALID_VARIANT_PATH
  (except for ``variant_array_append``).
- The value argument is first re-encoded on its own (Spark casts it to VARIANT), so a
  malformed value fails even where it would not be used.

The one deliberate difference from Spark: object keys are sorted by code point (the spec's
order, as varlake's encoder does), Spark sorts Java strings by UTF-16 unit; the two differ only
for keys with characters U+E000..U+FFFF next to supplementary ones.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from varlake.errors import (
    InvalidPathError,
    InvalidPatchPathError,
    UnsupportedValueError,
    VariantDuplicateKeyError,
    VariantPathTypeMismatchError,
    VariantSizeLimitError,
)
from varlake.variant import decoder as dec
from varlake.variant.constants import SIZE_LIMIT
from varlake.variant.encoder import MetadataBuilder, assemble_object, encode_array, metadata_from_keys, pack_uints
from varlake.variant.path import Segment, VariantPath
from varlake.variant.spark_reader import (
    ARRAY,
    OBJECT,
    KeyReader,
    array_layout,
    basic_type,
    check_variant,
    i32,
    object_layout,
    primitive_bytes,
    read_unsigned,
    type_name,
)
from varlake.variant.value import Variant

__all__ = [
    "render_patch_path",
    "try_variant_array_append",
    "try_variant_insert",
    "try_variant_set",
    "variant_array_append",
    "variant_delete",
    "variant_insert",
    "variant_set",
    "variant_strip_nulls",
]

_Entry = tuple[str, int, int]  # (key, new field id, offset of its value in the object's data)


class _Mismatch(Exception):
    """Internal: the walk met a value of the wrong kind after ``depth`` path steps."""

    def __init__(self, depth: int) -> None:
        self.depth = depth


# --- paths -------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _parse(text: str, function: str, allow_root: bool) -> tuple[Segment, ...]:
    if not isinstance(text, str):
        raise InvalidPatchPathError(f"[INVALID_VARIANT_PATH] `{function}` needs a str path, got {type(text).__name__}")
    try:
        segments = VariantPath.parse(text).segments
    except InvalidPathError:
        segments = None
    if segments is None or (not segments and not allow_root):
        raise InvalidPatchPathError(f"[INVALID_VARIANT_PATH] The path '{text}' is not a valid `{function}` target.")
    return segments


def render_patch_path(segments: tuple[Segment, ...]) -> str:
    """A path prefix as Spark's error messages show it: ``.key``, or ``['key']`` (``["key"]`` when
    the key holds ``'``) for keys that are empty or hold ``.`` or ``[``, and ``[index]``."""
    out = ["$"]
    for seg in segments:
        if isinstance(seg, int):
            out.append(f"[{seg}]")
        elif seg == "" or "." in seg or "[" in seg:
            q = '"' if "'" in seg else "'"
            out.append(f"[{q}{seg}{q}]")
        else:
            out.append(f".{seg}")
    return "".join(out)


# --- the builder ---------------------------------------------------------------------------------


class _Fields:
    """An object being rebuilt: each key enters the dictionary before its value is built
    (Spark's order), and values are laid out one after another."""

    def __init__(self, keys: Any) -> None:
        self.keys = keys
        self.entries: list[_Entry] = []
        self.parts: list[bytes] = []
        self.at = 0

    def key(self, key: str) -> None:
        self.entries.append((key, self.keys.add(key), self.at))

    def value(self, body: bytes) -> None:
        self.parts.append(body)
        self.at += len(body)


class _Builder:
    """One Spark ``VariantBuilder`` run: a shared key dictionary and Spark's walk rules."""

    __slots__ = ("keys", "segments", "new", "create", "include_arrays", "function")

    def __init__(self, function: str, segments: tuple[Segment, ...] = (), new: tuple[bytes, bytes] | None = None,
                 create: bool = True, include_arrays: bool = True) -> None:
        self.keys = MetadataBuilder()
        self.segments = segments
        self.new = new
        self.create = create
        self.include_arrays = include_arrays
        self.function = function

    # finishing containers (Spark's finishWritingObject / finishWritingArray)

    @staticmethod
    def _object(entries: list[_Entry], parts: list[bytes]) -> bytes:
        order = sorted(range(len(entries)), key=lambda i: entries[i][0])
        for a, b in zip(order, order[1:]):
            if entries[a][0] == entries[b][0]:
                raise VariantDuplicateKeyError(entries[a][0])
        data = b"".join(parts)
        offsets = [entries[i][2] for i in order]
        offsets.append(len(data))
        return assemble_object([entries[i][1] for i in order], offsets, data)

    # walking the input (lazily: fields and elements are read in Spark's order)

    @staticmethod
    def _object_fields(value: bytes, pos: int) -> Iterator[tuple[int, int]]:
        """(field id, value position) of each field of the object at ``pos``, in stored order."""
        size, isz, osz, ids, offs, data = object_layout(value, pos)
        for i in range(size):
            yield read_unsigned(value, i32(ids + isz * i), isz), i32(data + read_unsigned(value, i32(offs + osz * i), osz))

    @staticmethod
    def _array_elements(value: bytes, pos: int) -> Iterator[int]:
        """The position of each element of the array at ``pos``."""
        size, osz, offs, data = array_layout(value, pos)
        for i in range(size):
            yield i32(data + read_unsigned(value, i32(offs + osz * i), osz))

    # appendVariant: re-encode the value at ``pos``

    def copy(self, value: bytes, kr: KeyReader, pos: int) -> bytes:
        basic = basic_type(value, pos)
        if basic == OBJECT:
            fields = _Fields(self.keys)
            for fid, elem in self._object_fields(value, pos):
                fields.key(kr.key(fid))
                fields.value(self.copy(value, kr, elem))
            return self._object(fields.entries, fields.parts)
        if basic == ARRAY:
            return encode_array([self.copy(value, kr, elem) for elem in self._array_elements(value, pos)])
        return primitive_bytes(value, pos)

    def copy_new(self) -> bytes:
        assert self.new is not None
        metadata, value = self.new
        return self.copy(value, KeyReader(metadata), 0)

    def _nulls(self, count: int, data_so_far: int) -> bytes:
        """``count`` Variant nulls of padding; refuses padding that alone breaks the size limit."""
        if count + data_so_far > SIZE_LIMIT:
            raise _size_error(self.function)
        return b"\x00" * count

    def _padded_array(self, parts: list[bytes], count: int, last: bytes) -> bytes:
        """Elements ``parts``, then ``count`` nulls, then ``last`` (no per-null Python objects)."""
        if count < 64:
            return encode_array(parts + [b"\x00"] * count + [last])
        head = b"".join(parts)
        pad = self._nulls(count, len(head) + len(last))
        offsets: list[int] = []
        at = 0
        for p in parts:
            offsets.append(at)
            at += len(p)
        n = len(parts) + count + 1
        total = at + count + len(last)
        osz = 1 if total <= 0xFF else 2 if total <= 0xFFFF else 3 if total <= 0xFFFFFF else 4
        if 1 + 4 + (n + 1) * osz + total > SIZE_LIMIT:
            raise _size_error(self.function)
        offsets.extend(range(at, at + count + 1))
        offsets.append(total)
        large = n > 0xFF
        header = 0x03 | ((osz - 1) << 2) | (0x10 if large else 0)
        return b"".join((bytes((header,)), n.to_bytes(4 if large else 1, "little"), pack_uints(offsets, osz),
                         head, pad, last))

    def new_path(self, depth: int) -> bytes:
        """Spark's appendNewPath: create the rest of the path, holding the new value at its end."""
        seg = self.segments[depth]
        last = depth == len(self.segments) - 1
        if isinstance(seg, str):
            fid = self.keys.add(seg)
            body = self.copy_new() if last else self.new_path(depth + 1)
            return self._object([(seg, fid, 0)], [body])
        body = self.copy_new() if last else self.new_path(depth + 1)
        return self._padded_array([], seg, body)

    # set -----------------------------------------------------------------------------------

    def set(self, value: bytes, kr: KeyReader, pos: int, depth: int) -> bytes:
        basic = basic_type(value, pos)
        seg = self.segments[depth]
        last = depth == len(self.segments) - 1
        if isinstance(seg, str) and basic == OBJECT:
            fields = _Fields(self.keys)
            found = False
            for fid, elem in self._object_fields(value, pos):
                key = kr.key(fid)
                match = key == seg
                found |= match
                fields.key(key)
                if match:
                    fields.value(self.copy_new() if last else self.set(value, kr, elem, depth + 1))
                else:
                    fields.value(self.copy(value, kr, elem))
            if not found and self.create:
                fields.key(seg)
                fields.value(self.copy_new() if last else self.new_path(depth + 1))
            return self._object(fields.entries, fields.parts)
        if isinstance(seg, int) and basic == ARRAY:
            elements = []
            for i, elem in enumerate(self._array_elements(value, pos)):
                if i != seg:
                    elements.append(self.copy(value, kr, elem))
                elif last:
                    elements.append(self.copy_new())
                else:
                    elements.append(self.set(value, kr, elem, depth + 1))
            size = len(elements)
            if seg < size or not self.create:
                return encode_array(elements)
            tail = self.copy_new() if last else self.new_path(depth + 1)
            return self._padded_array(elements, seg - size, tail)
        raise _Mismatch(depth)

    # insert ----------------------------------------------------------------------------------

    def insert(self, value: bytes, kr: KeyReader, pos: int, depth: int) -> bytes:
        basic = basic_type(value, pos)
        seg = self.segments[depth]
        last = depth == len(self.segments) - 1
        if isinstance(seg, str) and basic == OBJECT:
            fields = _Fields(self.keys)
            found = False
            for fid, elem in self._object_fields(value, pos):
                key = kr.key(fid)
                match = key == seg
                found |= match
                fields.key(key)
                if match and not last:
                    fields.value(self.insert(value, kr, elem, depth + 1))
                else:
                    fields.value(self.copy(value, kr, elem))
            if last:
                fields.key(seg)
                fields.value(self.copy_new())
            elif not found:
                fields.key(seg)
                fields.value(self.new_path(depth + 1))
            return self._object(fields.entries, fields.parts)
        if isinstance(seg, int) and basic == ARRAY:
            elements = []
            if last:
                for i, elem in enumerate(self._array_elements(value, pos)):
                    if i == seg:
                        elements.append(self.copy_new())
                    elements.append(self.copy(value, kr, elem))
                size = array_layout(value, pos)[0]
                if seg < size:
                    return encode_array(elements)
                return self._padded_array(elements, seg - size, self.copy_new())
            for i, elem in enumerate(self._array_elements(value, pos)):
                elements.append(self.insert(value, kr, elem, depth + 1) if i == seg else self.copy(value, kr, elem))
            size = len(elements)
            if seg < size:
                return encode_array(elements)
            return self._padded_array(elements, seg - size, self.new_path(depth + 1))
        raise _Mismatch(depth)

    # delete ------------------------------------------------------------------------------------

    def delete(self, value: bytes, kr: KeyReader, pos: int, depth: int) -> bytes:
        basic = basic_type(value, pos)
        seg = self.segments[depth]
        last = depth == len(self.segments) - 1
        if isinstance(seg, str) and basic == OBJECT:
            fields = _Fields(self.keys)
            for fid, elem in self._object_fields(value, pos):
                key = kr.key(fid)
                match = key == seg
                if match and last:
                    continue
                fields.key(key)
                fields.value(self.delete(value, kr, elem, depth + 1) if match else self.copy(value, kr, elem))
            return self._object(fields.entries, fields.parts)
        if isinstance(seg, int) and basic == ARRAY:
            elements = []
            for i, elem in enumerate(self._array_elements(value, pos)):
                match = i == seg
                if match and last:
                    continue
                elements.append(self.delete(value, kr, elem, depth + 1) if match else self.copy(value, kr, elem))
            return encode_array(elements)
        return self.copy(value, kr, pos)

    # array append ----------------------------------------------------------------------------------

    def append(self, value: bytes, kr: KeyReader, pos: int, depth: int) -> bytes:
        basic = basic_type(value, pos)
        if depth == len(self.segments):
            if basic != ARRAY:
                raise _Mismatch(depth)
            elements = [self.copy(value, kr, elem) for elem in self._array_elements(value, pos)]
            elements.append(self.copy_new())
            return encode_array(elements)
        seg = self.segments[depth]
        if isinstance(seg, str) and basic == OBJECT:
            fields = _Fields(self.keys)
            for fid, elem in self._object_fields(value, pos):
                key = kr.key(fid)
                fields.key(key)
                fields.value(self.append(value, kr, elem, depth + 1) if key == seg else self.copy(value, kr, elem))
            return self._object(fields.entries, fields.parts)
        if isinstance(seg, int) and basic == ARRAY:
            return encode_array(
                [
                    self.append(value, kr, elem, depth + 1) if i == seg else self.copy(value, kr, elem)
                    for i, elem in enumerate(self._array_elements(value, pos))
                ]
            )
        raise _Mismatch(depth)

    # strip nulls --------------------------------------------------------------------------------------

    def strip(self, value: bytes, kr: KeyReader, pos: int) -> bytes:
        basic = basic_type(value, pos)
        if basic == OBJECT:
            fields = _Fields(self.keys)
            for fid, elem in self._object_fields(value, pos):
                if type_name(value, elem) == "null":
                    continue
                fields.key(kr.key(fid))
                fields.value(self.strip(value, kr, elem))
            return self._object(fields.entries, fields.parts)
        if basic == ARRAY:
            return encode_array(
                [
                    self.strip(value, kr, elem)
                    for elem in self._array_elements(value, pos)
                    if not (self.include_arrays and type_name(value, elem) == "null")
                ]
            )
        return self.copy(value, kr, pos)

    def result(self, body: bytes) -> tuple[bytes, bytes]:
        """Spark's ``result()``: the dictionary in insertion order, both halves within the limit."""
        if len(body) > SIZE_LIMIT:
            raise _size_error(self.function)
        try:
            metadata = metadata_from_keys(self.keys.keys)
        except VariantSizeLimitError:
            raise _size_error(self.function) from None
        return metadata, body


def _size_error(function: str) -> VariantSizeLimitError:
    return VariantSizeLimitError(f"[VARIANT_SIZE_LIMIT] Cannot build variant bigger than 128.0 MiB in `{function}`.")


def _run(fn: Any, *args: Any) -> Any:
    """Run a recursive walk with room for deep values; too deep is a named error."""
    try:
        return dec.with_deep_stack(fn, *args)
    except RecursionError:
        raise dec.MalformedVariantError("Variant nested too deeply to rebuild") from None


def _parts(v: Variant) -> tuple[bytes, bytes]:
    if not isinstance(v, Variant):
        raise UnsupportedValueError(f"a Variant patch function needs a Variant, got {type(v).__name__}")
    return v.metadata, v.value


def _cast_value(value: Any, function: str) -> tuple[bytes, bytes]:
    """The value argument cast to VARIANT as Spark does it: converted, then re-encoded on its own."""
    if isinstance(value, Variant):
        metadata, raw = value.metadata, value.value
    else:
        cast = Variant.from_python(value)
        metadata, raw = cast.metadata, cast.value
    check_variant(metadata, raw)
    b = _Builder(function)
    return b.result(_run(b.copy, raw, KeyReader(metadata), 0))


def _patch(kind: str, function: str, fail: bool, v: Variant | None, path: str | None, value: Any,
           create: bool | None = True) -> Variant | None:
    if v is None or path is None or value is None or create is None:
        return None
    segments = _parse(path, function, kind == "append")
    metadata, raw = _parts(v)
    check_variant(metadata, raw)
    try:
        new = _cast_value(value, function)
        b = _Builder(function, segments, new, bool(create))
        body = _run(getattr(b, kind), raw, KeyReader(metadata), 0, 0)
    except _Mismatch as exc:
        if not fail:
            return None
        raise VariantPathTypeMismatchError(path, render_patch_path(segments[: exc.depth]), function) from None
    except VariantDuplicateKeyError:
        if not fail and kind == "insert":
            return None
        raise
    return Variant.trusted(*b.result(body))


# --- public functions ------------------------------------------------------------------------------------


def variant_set(v: Variant | None, path: str | None, value: Any,
                create_if_missing: bool | None = True) -> Variant | None:
    """Spark's ``variant_set(v, path, value[, create_if_missing])``: replace or create the value at ``path``.

    ``value`` is a ``Variant`` (a Variant null for JSON null) or a Python value converted like
    ``Variant.from_python`` (``varlake.variant.functions.variant_set`` also takes ``value_type``,
    a Spark type, to convert it as ``cast(value AS VARIANT)``). None for any None argument
    (SQL NULL). A path stepping into a value of the wrong kind raises
    ``VariantPathTypeMismatchError``; a bad path ``InvalidPatchPathError``; malformed bytes
    ``MalformedVariantError``.
    """
    return _patch("set", "variant_set", True, v, path, value, create_if_missing)


def try_variant_set(v: Variant | None, path: str | None, value: Any,
                    create_if_missing: bool | None = True) -> Variant | None:
    """``variant_set`` that returns None instead of raising VARIANT_PATH_TYPE_MISMATCH."""
    return _patch("set", "try_variant_set", False, v, path, value, create_if_missing)


def variant_insert(v: Variant | None, path: str | None, value: Any) -> Variant | None:
    """Spark's ``variant_insert``: add a field (an existing key raises ``VariantDuplicateKeyError``) or
    insert an array element at the index, shifting the rest; missing steps are created."""
    return _patch("insert", "variant_insert", True, v, path, value)


def try_variant_insert(v: Variant | None, path: str | None, value: Any) -> Variant | None:
    """``variant_insert`` that returns None for a type mismatch or an existing key."""
    return _patch("insert", "try_variant_insert", False, v, path, value)


def variant_array_append(v: Variant | None, path: str | None, value: Any) -> Variant | None:
    """Spark's ``variant_array_append``: append to the array at ``path`` (``$`` allowed); a missing
    step leaves ``v`` unchanged, a non-array target raises ``VariantPathTypeMismatchError``."""
    return _patch("append", "variant_array_append", True, v, path, value)


def try_variant_array_append(v: Variant | None, path: str | None, value: Any) -> Variant | None:
    """``variant_array_append`` that returns None instead of raising VARIANT_PATH_TYPE_MISMATCH."""
    return _patch("append", "try_variant_array_append", False, v, path, value)


def variant_delete(v: Variant | None, *paths: str | None) -> Variant | None:
    """Spark's ``variant_delete(v, path1, ...)``: remove the fields / elements at each path, left to
    right. None paths are skipped (all None: ``v`` itself); missing or mistyped steps remove
    nothing. Every non-None path is checked even when ``v`` is None (as Spark checks literals)."""
    if not paths:
        raise InvalidPatchPathError("[INVALID_VARIANT_PATH] `variant_delete` needs at least one path")
    parsed = [_parse(p, "variant_delete", False) for p in paths if p is not None]
    if v is None:
        return None
    current = v
    for segments in parsed:
        metadata, raw = _parts(current)
        check_variant(metadata, raw)
        b = _Builder("variant_delete", segments)
        current = Variant.trusted(*b.result(_run(b.delete, raw, KeyReader(metadata), 0, 0)))
    return current


def variant_strip_nulls(v: Variant | None, include_arrays: bool | None = True) -> Variant | None:
    """Spark's ``variant_strip_nulls``: drop object fields (and, with ``include_arrays``, array
    elements) whose value is a Variant null, at every depth; a null root stays null."""
    if v is None or include_arrays is None:
        return None
    metadata, raw = _parts(v)
    check_variant(metadata, raw)
    b = _Builder("variant_strip_nulls", include_arrays=bool(include_arrays))
    return Variant.trusted(*b.result(_run(b.strip, raw, KeyReader(metadata), 0)))
