"""Reading Variant bytes exactly as Spark 4.3's ``VariantUtil`` reads them.

The patch functions (``patch``) and ``is_valid_variant`` (``validity``) must fail where Spark
fails and succeed where it succeeds, so they read bytes by Spark's rules rather than the
codec's stricter ones: only the bytes actually visited are checked, positions are 32-bit
Java ints (a huge object size wraps around), a 4-byte unsigned value with the top bit set
is malformed, object keys are decoded with U+FFFD replacement, and primitive type ids
17-19 (TIME, the nanosecond timestamps) are unknown to Spark 4.3. Every failure is a named
error whose message starts with Spark's error class in brackets.
"""

from __future__ import annotations

from varlake.errors import MalformedVariantError, UnknownVariantTypeError, VariantSizeLimitError
from varlake.variant.constants import SIZE_LIMIT

PRIMITIVE, SHORT_STR, OBJECT, ARRAY = 0, 1, 2, 3

# Spark's VariantUtil.Type for each primitive type id it knows (None: unknown to Spark 4.3).
_TYPE_OF_ID: dict[int, str] = {
    0: "null", 1: "boolean", 2: "boolean", 3: "long", 4: "long", 5: "long", 6: "long", 7: "double",
    8: "decimal", 9: "decimal", 10: "decimal", 11: "date", 12: "timestamp", 13: "timestamp_ntz",
    14: "float", 15: "binary", 16: "string", 20: "uuid",
}
# Fixed sizes of Spark's ``valueSize`` for primitives (binary and long strings carry a length).
_FIXED_SIZE: dict[int, int] = {
    0: 1, 1: 1, 2: 1, 3: 2, 4: 3, 5: 5, 6: 9, 7: 9, 8: 6, 9: 10, 10: 18, 11: 5, 12: 9, 13: 9, 14: 5, 20: 17,
}


def i32(x: int) -> int:
    """``x`` as a Java ``int`` (two's complement wrap-around)."""
    x &= 0xFFFFFFFF
    return x - 0x100000000 if x & 0x80000000 else x


def malformed(pos: int | None = None, part: str = "value") -> MalformedVariantError:
    return MalformedVariantError(
        "[MALFORMED_VARIANT] Variant binary is malformed. Please check the data source is valid.", pos, part
    )


def unknown_type(type_id: int, pos: int) -> UnknownVariantTypeError:
    return UnknownVariantTypeError(
        f"[UNKNOWN_PRIMITIVE_TYPE_IN_VARIANT] Unknown primitive type with id {type_id} was found in a variant value.",
        pos,
    )


def check_index(pos: int, length: int, part: str = "value") -> None:
    if pos < 0 or pos >= length:
        raise malformed(pos, part)


def read_unsigned(buf: bytes, pos: int, n: int, part: str = "value") -> int:
    """Spark's ``readUnsigned``: both ends in bounds, and the result must fit a Java int."""
    length = len(buf)
    if pos < 0 or pos + n > length:
        raise malformed(pos, part)
    result = int.from_bytes(buf[pos : pos + n], "little")
    if result & 0x80000000:
        raise malformed(pos, part)
    return result


def check_variant(metadata: bytes, value: bytes) -> None:
    """Spark's ``new Variant(value, metadata)``: metadata version 1 and both halves within the limit."""
    if len(metadata) < 1 or (metadata[0] & 0x0F) != 1:
        raise malformed(0, "metadata")
    if len(metadata) > SIZE_LIMIT or len(value) > SIZE_LIMIT:
        raise VariantSizeLimitError(
            "[VARIANT_CONSTRUCTOR_SIZE_LIMIT] Cannot construct a Variant larger than 128 MiB."
        )


def basic_type(value: bytes, pos: int) -> int:
    check_index(pos, len(value))
    return value[pos] & 0x03


def object_layout(value: bytes, pos: int) -> tuple[int, int, int, int, int, int]:
    """``(size, id_size, offset_size, id_start, offset_start, data_start)`` as Spark's ``handleObject``."""
    check_index(pos, len(value))
    info = value[pos] >> 2
    size_bytes = 4 if (info >> 4) & 1 else 1
    size = read_unsigned(value, pos + 1, size_bytes)
    id_size = ((info >> 2) & 3) + 1
    offset_size = (info & 3) + 1
    id_start = pos + 1 + size_bytes
    offset_start = i32(id_start + size * id_size)
    data_start = i32(offset_start + (size + 1) * offset_size)
    return size, id_size, offset_size, id_start, offset_start, data_start


def array_layout(value: bytes, pos: int) -> tuple[int, int, int, int]:
    """``(size, offset_size, offset_start, data_start)`` as Spark's ``handleArray``."""
    check_index(pos, len(value))
    info = value[pos] >> 2
    size_bytes = 4 if (info >> 2) & 1 else 1
    size = read_unsigned(value, pos + 1, size_bytes)
    offset_size = (info & 3) + 1
    offset_start = pos + 1 + size_bytes
    data_start = i32(offset_start + (size + 1) * offset_size)
    return size, offset_size, offset_start, data_start


class KeyReader:
    """Spark's ``getMetadataKey`` over one metadata buffer, memoised per id (it is pure)."""

    __slots__ = ("metadata", "cache")

    def __init__(self, metadata: bytes) -> None:
        self.metadata = metadata
        self.cache: dict[int, str] = {}

    def key(self, fid: int) -> str:
        found = self.cache.get(fid)
        if found is not None:
            return found
        m = self.metadata
        check_index(0, len(m), "metadata")
        osz = ((m[0] >> 6) & 3) + 1
        dict_size = read_unsigned(m, 1, osz, "metadata")
        if fid >= dict_size:
            raise malformed(None, "metadata")
        string_start = i32(1 + (dict_size + 2) * osz)
        at = i32(1 + (fid + 1) * osz)
        start = read_unsigned(m, at, osz, "metadata")
        end = read_unsigned(m, i32(1 + (fid + 2) * osz), osz, "metadata")
        if start > end:
            raise malformed(at, "metadata")
        check_index(i32(string_start + end - 1), len(m), "metadata")
        lo = i32(string_start + start)
        if lo < 0:  # Java's String constructor refuses it (not a Spark error): treat as malformed
            raise malformed(None, "metadata")
        text = m[lo : lo + (end - start)].decode("utf-8", "replace")
        self.cache[fid] = text
        return text


def value_size(value: bytes, pos: int) -> int:
    """Spark's ``valueSize``: bytes taken by the value at ``pos`` (containers by their last offset)."""
    check_index(pos, len(value))
    header = value[pos]
    basic = header & 0x03
    info = header >> 2
    if basic == SHORT_STR:
        return 1 + info
    if basic == OBJECT:
        size, _, osz, _, offset_start, data_start = object_layout(value, pos)
        return i32(data_start - pos + read_unsigned(value, i32(offset_start + size * osz), osz))
    if basic == ARRAY:
        size, osz, offset_start, data_start = array_layout(value, pos)
        return i32(data_start - pos + read_unsigned(value, i32(offset_start + size * osz), osz))
    fixed = _FIXED_SIZE.get(info)
    if fixed is not None:
        return fixed
    if info in (15, 16):
        return i32(5 + read_unsigned(value, pos + 1, 4))
    raise unknown_type(info, pos)


def type_name(value: bytes, pos: int) -> str:
    """Spark's ``getType``: ``object``, ``array``, ``string``, ``null``, ... (unknown ids raise)."""
    check_index(pos, len(value))
    header = value[pos]
    basic = header & 0x03
    if basic == SHORT_STR:
        return "string"
    if basic == OBJECT:
        return "object"
    if basic == ARRAY:
        return "array"
    name = _TYPE_OF_ID.get(header >> 2)
    if name is None:
        raise unknown_type(header >> 2, pos)
    return name


def primitive_bytes(value: bytes, pos: int) -> bytes:
    """Spark's ``shallowAppendVariantImpl``: the value's bytes, copied as they are."""
    size = value_size(value, pos)
    check_index(i32(pos + size - 1), len(value))
    return value[pos : pos + size]
