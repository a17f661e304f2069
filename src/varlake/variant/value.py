"""The ``Variant`` value: immutable bytes with navigation, conversion and logical equality."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from varlake.errors import MalformedVariantError, UnsupportedValueError, VarlakeError
from varlake.variant import decoder as dec
from varlake.variant.constants import FAMILY_OF_PRIMITIVE, BasicType, PrimitiveType, TypeFamily
from varlake.variant.encoder import MetadataBuilder, check_size, encode_python
from varlake.variant.path import Segment, VariantPath

_I64 = struct.Struct("<q")
_I32 = struct.Struct("<i")
_EMPTY_METADATA = b"\x01\x00\x00"


class Variant:
    """A Variant value: ``metadata`` (key dictionary) and ``value`` bytes.

    Equality is logical, by the spec's equivalence classes: int8 ``1`` equals
    decimal ``1.00``, a short string equals the same long string, object field
    order and dictionary layout do not matter. ``hash`` agrees with ``==``.
    """

    __slots__ = ("_metadata", "_value", "_hash")

    def __init__(self, metadata: bytes, value: bytes) -> None:
        metadata = bytes(metadata)
        value = bytes(value)
        if not value:
            raise MalformedVariantError("empty value", 0)
        dec.metadata_view(metadata)  # checks header, version and dictionary bounds
        object.__setattr__(self, "_metadata", metadata)
        object.__setattr__(self, "_value", value)
        object.__setattr__(self, "_hash", None)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Variant is immutable")

    # --- construction ---------------------------------------------------------------

    @classmethod
    def from_python(cls, obj: object) -> "Variant":
        """Encode None, bool, int, float, Decimal, str, bytes, date, time, datetime, UUID,
        TimestampNanos, list/tuple and dict (str keys). Unsupported values raise
        ``UnsupportedValueError``. Aware datetimes become ``timestamp``, naive ones
        ``timestamp_ntz``."""
        meta = MetadataBuilder()
        try:
            value = check_size(dec.with_deep_stack(encode_python, obj, meta))
        except RecursionError:
            raise UnsupportedValueError("value nested too deeply to encode") from None
        return cls(meta.build(), value)

    @classmethod
    def trusted(cls, metadata: bytes, value: bytes) -> "Variant":
        """A Variant of ``bytes`` the codec itself just wrote or checked: no copy, no header
        checks (the fast path of ``parse_json`` and navigation)."""
        v = object.__new__(cls)
        _SET_METADATA(v, metadata)
        _SET_VALUE(v, value)
        _SET_HASH(v, None)
        return v

    @classmethod
    def null(cls) -> "Variant":
        return cls(_EMPTY_METADATA, b"\x00")

    @classmethod
    def from_bytes(cls, data: bytes) -> "Variant":
        """From ``metadata‖value`` (as Delta stats and the test data store it)."""
        meta = dec.MetadataView(bytes(data))
        end = meta.strings_start + dec.read_uint(meta.raw, meta.strings_start - meta.offset_size, meta.offset_size)
        return cls(data[:end], data[end:])

    # --- raw access ---------------------------------------------------------------------

    @property
    def metadata(self) -> bytes:
        return self._metadata

    @property
    def value(self) -> bytes:
        return self._value

    def to_bytes(self) -> bytes:
        """``metadata‖value``."""
        return self._metadata + self._value

    def validate(self) -> "Variant":
        """Check every byte against the spec; returns self so it chains."""
        dec.validate(self._metadata, self._value)
        return self

    # --- types ---------------------------------------------------------------------------

    @property
    def basic_type(self) -> BasicType:
        return BasicType(self._value[0] & 0x03)

    @property
    def primitive_type(self) -> PrimitiveType | None:
        """The primitive type id (short strings report STRING); None for objects/arrays."""
        basic, t = dec.type_info(self._value, 0)
        return PrimitiveType(t) if basic == 0 else None

    @property
    def type_family(self) -> TypeFamily:
        basic, t = dec.type_info(self._value, 0)
        if basic == 2:
            return TypeFamily.OBJECT
        if basic == 3:
            return TypeFamily.ARRAY
        return FAMILY_OF_PRIMITIVE[t]

    def is_null(self) -> bool:
        """True for the Variant null (not SQL NULL, which has no Variant at all)."""
        return self._value[0] == 0

    def is_object(self) -> bool:
        return self._value[0] & 0x03 == 2

    def is_array(self) -> bool:
        return self._value[0] & 0x03 == 3

    # --- conversion ----------------------------------------------------------------------------

    @dec.guarded
    def to_python(self) -> Any:
        """Python objects: dict, list, None, bool, int, float, Decimal, str, bytes, date,
        datetime (aware for timestamp), time, UUID, TimestampNanos."""
        return dec.to_python(dec.metadata_view(self._metadata), self._value)

    def to_json(self, zone: str = "UTC") -> str:
        """JSON text identical to Spark's ``to_json``; timestamps shown in ``zone``."""
        from varlake.variant.json_render import to_json

        return to_json(dec.metadata_view(self._metadata), self._value, 0, zone)

    # --- navigation ------------------------------------------------------------------------------

    def _sub(self, pos: int) -> "Variant":
        if pos == 0:
            return self
        size = dec.value_size(self._value, pos)
        if pos + size > len(self._value):
            raise MalformedVariantError("nested value runs past the end", pos)
        return Variant.trusted(self._metadata, self._value[pos : pos + size])

    @dec.guarded
    def _locate(self, segments: tuple[Segment, ...]) -> int | None:
        value = self._value
        pos = 0
        meta = None
        for seg in segments:
            basic = value[pos] & 0x03
            if isinstance(seg, str):
                if basic != 2:
                    return None
                if meta is None:
                    meta = dec.metadata_view(self._metadata)
                # a lone surrogate in a path key matches no (valid UTF-8) key
                found = dec.object_field(meta, value, pos, seg.encode("utf-8", "surrogatepass"))
            else:
                if basic != 3:
                    return None
                found = dec.array_element(value, pos, seg)
            if found is None:
                return None
            pos = found
        return pos

    def get(self, path: str | VariantPath | Segment, default: Any = None) -> "Variant | Any":
        """The value at ``path`` (``'$.a[0]'``, a VariantPath, a key or an index), else ``default``."""
        if isinstance(path, VariantPath):
            segments = path.segments
        elif isinstance(path, str) and path.startswith("$"):
            segments = VariantPath.parse(path).segments
        else:
            segments = (path,)
        pos = self._locate(segments)
        return default if pos is None else dec.guarded(self._sub)(pos)

    def __getitem__(self, key: Segment) -> "Variant":
        pos = self._locate((key,))
        if pos is None:
            if isinstance(key, int):
                raise IndexError(f"no element {key} in this Variant")
            raise KeyError(key)
        return dec.guarded(self._sub)(pos)

    @dec.guarded
    def keys(self) -> list[str]:
        """Object keys in sorted (field id) order; empty for non-objects."""
        if not self.is_object():
            return []
        return [k for k, _ in dec.object_entries(dec.metadata_view(self._metadata), self._value, 0)]

    @dec.guarded
    def items(self) -> list[tuple[str, "Variant"]]:
        """``(key, Variant)`` pairs of an object."""
        if not self.is_object():
            return []
        meta = dec.metadata_view(self._metadata)
        return [(k, self._sub(p)) for k, p in dec.object_entries(meta, self._value, 0)]

    @dec.guarded
    def elements(self) -> list["Variant"]:
        """Elements of an array."""
        if not self.is_array():
            return []
        return [self._sub(p) for p in dec.array_positions(self._value, 0)]

    @dec.guarded
    def __len__(self) -> int:
        if self.is_object():
            return dec.object_layout(self._value, 0)[0]
        if self.is_array():
            return dec.array_layout(self._value, 0)[0]
        raise TypeError("only Variant objects and arrays have a length")

    def __iter__(self) -> Iterator[Any]:
        if self.is_object():
            return iter(self.keys())
        if self.is_array():
            return iter(self.elements())
        raise TypeError("only Variant objects and arrays are iterable")

    # --- equality ------------------------------------------------------------------------------------

    @dec.guarded
    def canonical(self) -> Any:
        """A hashable Python form that is equal exactly when the Variants are logically equal."""
        meta = dec.metadata_view(self._metadata)
        return _canonical(meta, meta.keys(), self._value, 0, dec.Budget(self._value))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Variant):
            return NotImplemented
        if self._value == other._value and self._metadata == other._metadata:
            return True
        return self.canonical() == other.canonical()

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash(self.canonical())
            object.__setattr__(self, "_hash", h)
        return h

    def __repr__(self) -> str:
        try:
            text = self.to_json()
        except VarlakeError as exc:
            text = f"<malformed: {exc}>"
        if len(text) > 200:
            text = text[:197] + "..."
        return f"Variant({text})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Variant, (self._metadata, self._value))


_SET_METADATA = Variant.__dict__["_metadata"].__set__
_SET_VALUE = Variant.__dict__["_value"].__set__
_SET_HASH = Variant.__dict__["_hash"].__set__


def _canonical(meta: dec.MetadataView, keys: list[str], value: bytes, pos: int, budget: dec.Budget) -> Any:
    """Hashable form of the value at ``pos``: equal exactly for logically equal values.

    Numbers of the exact-numeric family (int8-64, decimal4-16) meet as ``Decimal`` /
    ``int`` (which compare and hash alike across types), short and long strings as
    ``str``, objects as frozensets of members (order and ids do not matter).
    """
    header = value[pos]
    basic = header & 0x03
    if basic == 1:
        return ("s", dec.primitive_to_python(value, pos))
    if basic == 2:
        ids, offs, data = dec.object_ids_offsets(meta, value, pos)
        budget.spend(len(ids), pos)
        return ("o", frozenset([(keys[i], _canonical(meta, keys, value, data + o, budget)) for i, o in zip(ids, offs)]))
    if basic == 3:
        n, osz, offs_at, data = dec.array_layout(value, pos)
        budget.spend(n, pos)
        return ("a", tuple([_canonical(meta, keys, value, data + o, budget) for o in dec.read_uints(value, offs_at, n, osz)]))
    t = header >> 2
    family = FAMILY_OF_PRIMITIVE.get(t)
    if family is None:
        raise MalformedVariantError(f"unknown primitive type id {t}", pos)
    if t in (12, 13):
        return (family, _I64.unpack_from(value, pos + 1)[0] * 1000)
    if t in (18, 19, 17):
        return (family, _I64.unpack_from(value, pos + 1)[0])
    if t == 11:
        return (family, _I32.unpack_from(value, pos + 1)[0])
    if t == 15 or t == 16:
        budget.take(dec.payload_length(value, pos), pos)
        if t == 16:
            return ("s", dec.primitive_to_python(value, pos))
    py = dec.primitive_to_python(value, pos)
    if t in (7, 14) and py != py:
        return (family, "NaN")
    return (family, py)
