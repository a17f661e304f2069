"""Z85 (ZeroMQ RFC 32) as Delta uses it for Variant min/max statistics.

Delta stores ``metadata‖value`` zero-padded to a multiple of 4 bytes, Z85-encoded.
Decoding drops the padding by reading the metadata header and the value's size.
"""

from __future__ import annotations

from varlake.errors import MalformedVariantError, VariantError
from varlake.variant import decoder as dec
from varlake.variant.value import Variant

ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_DECODE = {ch: i for i, ch in enumerate(ALPHABET)}


class Z85Error(VariantError):
    """Text is not valid Z85 (bad length or character)."""


def z85_encode(data: bytes) -> str:
    """Z85 text of ``data`` (its length must be a multiple of 4)."""
    if len(data) % 4:
        raise Z85Error(f"Z85 input length {len(data)} is not a multiple of 4")
    out = []
    alphabet = ALPHABET
    for i in range(0, len(data), 4):
        n = int.from_bytes(data[i : i + 4], "big")
        chunk = []
        for _ in range(5):
            n, r = divmod(n, 85)
            chunk.append(alphabet[r])
        out.append("".join(reversed(chunk)))
    return "".join(out)


def z85_decode(text: str) -> bytes:
    """Bytes of Z85 ``text`` (length a multiple of 5)."""
    if len(text) % 5:
        raise Z85Error(f"Z85 text length {len(text)} is not a multiple of 5")
    out = bytearray()
    table = _DECODE
    for i in range(0, len(text), 5):
        n = 0
        for j, ch in enumerate(text[i : i + 5]):
            digit = table.get(ch)
            if digit is None:
                raise Z85Error(f"invalid Z85 character {ch!r} at {i + j}")
            n = n * 85 + digit
        if n > 0xFFFFFFFF:
            raise Z85Error(f"Z85 group at {i} exceeds 32 bits")
        out += n.to_bytes(4, "big")
    return bytes(out)


def encode_variant_stat(variant: Variant) -> str:
    """Delta stats string: ``metadata‖value``, zero-padded to 4 bytes, in Z85."""
    data = variant.metadata + variant.value
    data += b"\x00" * (-len(data) % 4)
    return z85_encode(data)


def decode_variant_stat(text: str) -> Variant:
    """The Variant of a Delta stats string (padding dropped, bytes validated)."""
    data = z85_decode(text)
    meta_end, end = _stat_extent(data)
    if end > len(data) or any(data[end:]):
        raise MalformedVariantError("Variant statistic has non-zero bytes after the value", end, "stats")
    variant = Variant(data[:meta_end], data[meta_end:end])
    variant.validate()
    return variant


@dec.guarded
def _stat_extent(data: bytes) -> tuple[int, int]:
    """``(end of the metadata, end of the value)`` in decoded ``metadata‖value‖padding``."""
    meta = dec.MetadataView(data)
    meta_end = meta.strings_start + dec.read_uint(data, meta.strings_start - meta.offset_size, meta.offset_size)
    if meta_end >= len(data):
        raise MalformedVariantError("Variant statistic has no value after its metadata", meta_end, "stats")
    return meta_end, meta_end + dec.value_size(data, meta_end)
