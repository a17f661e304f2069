"""JSON text -> Variant, byte-identical to Spark 4.3's ``parse_json``.

The C JSON scanner of the standard library does the tokenising. Its number hooks
encode numbers straight into Variant bytes (from their exact text), its object hook
keeps key order and duplicates, and one top-down pass encodes the rest in document
order, so keys enter the dictionary in the order Spark's Jackson-driven builder
meets them.

Spark's rules reproduced here, each confirmed against Spark 4.3 (Jackson 2.21) by
tests/test_spark_oracle_codec.py:

- integers take the narrowest of int8..int64; beyond int64 a decimal when the
  digits fit 38, else a double (``1e1000``-sized integers become Infinity);
- numbers with a fraction and no exponent become the narrowest decimal when
  precision and scale fit 38, else a double; any exponent makes a double
  (overflow gives +-Infinity, underflow 0.0);
- only the first JSON value is read. After it, a number at the top level must be
  followed by space, tab, CR or LF (or the end); ``true``/``false``/``null`` may be
  followed by any UTF-16 code unit below ``'0'``, ``]``, ``}``, or one that is not a
  Java identifier part (so ``null$`` and ``null½`` parse, ``null€`` and ``truex`` do
  not); strings, arrays and objects may be followed by anything;
- Jackson's default stream limits: nesting deeper than 1000, object keys longer
  than 50,000 UTF-16 code units, strings longer than 20,000,000 code units, and
  numbers with more than 1000 digits are errors. The digit count depends on
  Jackson's code path: a number that starts with ``0`` or ends the input is checked
  part by part (integer, fraction and exponent digits each <= 1000, and all three
  together <= 1000 when both a fraction and an exponent are present); any other
  number must have <= 1000 digits in all;
- lone surrogates (``"\\ud800"``), NaN/Infinity literals, comments, single quotes,
  leading ``+``/``.``/zeros and a byte-order mark are errors; duplicate keys are an
  error unless allowed, then the last value wins (and keys of dropped values stay
  in the dictionary).
"""

from __future__ import annotations

import json
import struct
from itertools import accumulate
import unicodedata
from typing import Any

from varlake.errors import DuplicateKeyError, JsonParseError, VariantSizeLimitError
from varlake.variant.constants import MAX_JSON_DEPTH, SIZE_LIMIT
from varlake.variant.decoder import with_deep_stack
from varlake.variant.encoder import assemble_array, assemble_object, encode_double, encode_int, metadata_from_keys

MAX_NUMBER_DIGITS = 1000
MAX_KEY_LENGTH = 50_000  # UTF-16 code units
MAX_STRING_LENGTH = 20_000_000  # UTF-16 code units
_WHITESPACE = " \t\n\r"

_SHORT_STRING_HEADERS = [bytes(((n << 2) | 1,)) for n in range(64)]
_LONG_STRING = struct.Struct("<BI")
_DECIMAL4 = struct.Struct("<BBi")
_DECIMAL8 = struct.Struct("<BBq")
_EMPTY_OBJECT = b"\x02\x00\x00"
_EMPTY_ARRAY = b"\x03\x00\x00"


class _Pairs(list):  # type: ignore[type-arg]
    """A JSON object as its ``(key, value)`` pairs, in document order, duplicates kept."""

    __slots__ = ()


class _LongNumber:
    """A number within Jackson's per-part digit limits but over its overall one: valid only
    as the whole document (where Jackson checks it part by part), an error anywhere else."""

    __slots__ = ("encoded", "text")

    def __init__(self, text: str, encoded: bytes) -> None:
        self.text = text
        self.encoded = encoded


# --- numbers --------------------------------------------------------------------------


def _digit_counts(text: str) -> tuple[int, int, int, bool, bool]:
    """``(integer, fraction, exponent)`` digit counts and whether a fraction/exponent is present."""
    body = text.lstrip("-")
    mantissa, e, exponent = body.replace("E", "e").partition("e")
    whole, dot, fraction = mantissa.partition(".")
    return len(whole), len(fraction), len(exponent.lstrip("+-")), bool(dot), bool(e)


def _only_valid_alone(text: str) -> bool:
    """Apply Jackson's 1000-digit limit to a number of more than 1000 characters: raise if
    it is over, True if it passes only where Jackson checks part by part (see module doc)."""
    whole, fraction, exponent, has_fraction, has_exponent = _digit_counts(text)
    total = whole + fraction + exponent
    if (
        max(whole, fraction, exponent) > MAX_NUMBER_DIGITS
        or (has_fraction and has_exponent and total > MAX_NUMBER_DIGITS)
    ):
        raise JsonParseError(f"number with {total} digits exceeds Jackson's {MAX_NUMBER_DIGITS}-digit limit")
    return total > MAX_NUMBER_DIGITS and not text.lstrip("-").startswith("0")


def _encode_decimal_text(text: str) -> bytes | None:
    """A plain decimal literal (``-12.50``) as the narrowest decimal, or None past 38 digits."""
    whole, _, fraction = text.partition(".")
    scale = len(fraction)
    digits = whole + fraction
    unscaled = int(digits)
    precision = len(digits.lstrip("-0")) or 1
    if scale <= 9 and precision <= 9:
        return _DECIMAL4.pack(0x20, scale, unscaled)
    if scale <= 18 and precision <= 18:
        return _DECIMAL8.pack(0x24, scale, unscaled)
    if scale <= 38 and precision <= 38:
        return bytes((0x28, scale)) + unscaled.to_bytes(16, "little", signed=True)
    return None


def _parse_int(text: str) -> Any:
    if len(text) <= 18:
        return encode_int(int(text))
    digits = len(text) - (text[0] == "-")
    if digits > MAX_NUMBER_DIGITS:
        raise JsonParseError(f"integer with {digits} digits exceeds Jackson's {MAX_NUMBER_DIGITS}-digit limit")
    value = int(text)
    if -(1 << 63) <= value < (1 << 63):
        return encode_int(value)
    if digits <= 38:
        return bytes((0x28, 0)) + value.to_bytes(16, "little", signed=True)
    return encode_double(float(text))


def _parse_float(text: str) -> Any:
    alone = len(text) > MAX_NUMBER_DIGITS and _only_valid_alone(text)  # before int() of the digits
    if "e" in text or "E" in text:
        encoded = encode_double(float(text))
    else:
        encoded = _encode_decimal_text(text) or encode_double(float(text))
    return _LongNumber(text, encoded) if alone else encoded


def _reject_constant(name: str) -> Any:
    raise JsonParseError(f"invalid JSON literal {name}")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_Pairs,
    parse_int=_parse_int,
    parse_float=_parse_float,
    parse_constant=_reject_constant,
    strict=True,
)
_SCAN = _DECODER.scan_once  # the C scanner: (text, index) -> (value, end)


# --- encoding -----------------------------------------------------------------------------


def _utf16_length(text: str) -> int:
    return len(text) + sum(1 for ch in text if ch > "\uffff")


class _Encoder:
    """One document's top-down encoding pass: dictionary ids in first-seen key order."""

    __slots__ = ("keys", "allow_duplicates")

    def __init__(self, allow_duplicates: bool) -> None:
        self.keys: dict[str, int] = {}  # key -> id, in first-seen order
        self.allow_duplicates = allow_duplicates

    def value(self, obj: Any, depth: int) -> bytes:
        t = type(obj)
        if t is bytes:  # a number, encoded by the scanner's hooks
            return obj
        if t is str:
            data = obj.encode("utf-8")
            n = len(data)
            return _SHORT_STRING_HEADERS[n] + data if n < 64 else self.long_string(obj, data)
        if t is _Pairs:
            return self.obj(obj, depth + 1)
        if t is list:
            return self.array(obj, depth + 1)
        if obj is None:
            return b"\x00"
        if obj is True:
            return b"\x04"
        if obj is False:
            return b"\x08"
        if t is _LongNumber:
            raise JsonParseError(f"number with more than {MAX_NUMBER_DIGITS} digits inside a document: {obj.text[:20]}...")
        raise JsonParseError(f"unexpected JSON value {obj!r}")  # pragma: no cover - the scanner makes no others

    @staticmethod
    def long_string(text: str, data: bytes) -> bytes:
        n = len(data)
        if n > MAX_STRING_LENGTH and _utf16_length(text) > MAX_STRING_LENGTH:
            raise JsonParseError(f"string of {_utf16_length(text)} UTF-16 units exceeds Jackson's limit of {MAX_STRING_LENGTH}")
        return _LONG_STRING.pack(0x40, n) + data

    @staticmethod
    def check_key(name: str) -> None:
        """Jackson's key length limit, and no lone surrogates."""
        if len(name) > MAX_KEY_LENGTH // 2 and _utf16_length(name) > MAX_KEY_LENGTH:
            raise JsonParseError(f"object key of {_utf16_length(name)} UTF-16 units exceeds Jackson's limit of {MAX_KEY_LENGTH}")
        name.encode("utf-8")  # lone surrogates raise UnicodeEncodeError here

    def obj(self, pairs: _Pairs, depth: int) -> bytes:
        if depth > MAX_JSON_DEPTH:
            raise JsonParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        n = len(pairs)
        if n == 0:
            return _EMPTY_OBJECT
        keys = self.keys
        encode = self.value
        ids = []
        values = []
        # Keys enter the dictionary in document order, nested ones between their parents'.
        for name, val in pairs:
            fid = keys.get(name)
            if fid is None:
                fid = keys[name] = len(keys)
                if not name.isascii() or len(name) > MAX_KEY_LENGTH // 2:
                    self.check_key(name)
            ids.append(fid)
            t = type(val)
            if t is bytes:
                values.append(val)
            elif t is str:
                data = val.encode("utf-8")
                size = len(data)
                values.append(_SHORT_STRING_HEADERS[size] + data if size < 64 else self.long_string(val, data))
            else:
                values.append(encode(val, depth))
        names = [p[0] for p in pairs]
        order = sorted(range(n), key=names.__getitem__)  # code point order == UTF-8 byte order
        if len(set(ids)) != n:
            order, values, ids = self._drop_duplicates(names, ids, values, order)
        offsets = list(accumulate(map(len, values), initial=0))
        total = offsets[-1]
        sorted_ids = [ids[i] for i in order]
        sorted_offsets = [offsets[i] for i in order]
        sorted_offsets.append(total)
        data = b"".join(values)
        if total < 256 and len(order) < 256 and len(keys) <= 256:
            return bytes((0x02, len(order), *sorted_ids, *sorted_offsets)) + data
        return assemble_object(sorted_ids, sorted_offsets, data)

    def _drop_duplicates(
        self, names: list[str], ids: list[int], values: list[bytes], order: list[int]
    ) -> tuple[list[int], list[bytes], list[int]]:
        """Keep the last value of each repeated key (Spark's rule), values in document order."""
        if not self.allow_duplicates:
            seen: set[str] = set()
            for name in names:
                if name in seen:
                    raise DuplicateKeyError(name)
                seen.add(name)
        last: dict[str, int] = {}
        for i, name in enumerate(names):
            last[name] = i
        kept = sorted(last.values())
        position = {i: j for j, i in enumerate(kept)}
        new_order = [position[i] for i in order if last[names[i]] == i]
        return new_order, [values[i] for i in kept], [ids[i] for i in kept]

    def array(self, items: list[Any], depth: int) -> bytes:
        if depth > MAX_JSON_DEPTH:
            raise JsonParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        n = len(items)
        if n == 0:
            return _EMPTY_ARRAY
        encode = self.value
        values = [v if type(v) is bytes else encode(v, depth) for v in items]
        offsets = list(accumulate(map(len, values), initial=0))
        total = offsets[n]
        data = b"".join(values)
        if n < 256 and total < 256:
            return bytes((0x03, n, *offsets)) + data
        return assemble_array(offsets, data)


# --- the document -------------------------------------------------------------------------------


def _is_identifier_part(ch: str) -> bool:
    """Java's ``Character.isJavaIdentifierPart`` of one UTF-16 code unit (a supplementary
    character reaches Jackson as a surrogate, which is not)."""
    if ch > "\uffff":
        return False
    cat = unicodedata.category(ch)
    return cat[0] == "L" or cat in ("Nd", "Nl", "Mn", "Mc", "Pc", "Sc", "Cf") or (
        ch <= "\x08" or "\x0e" <= ch <= "\x1b" or "\x7f" <= ch <= "\x9f"
    )


def _check_tail(text: str, start: int, end: int) -> None:
    """Jackson reads only the first value but checks the character right after a scalar."""
    if end >= len(text):
        return
    first = text[start]
    nxt = text[end]
    if first in "-0123456789":
        if nxt not in _WHITESPACE:
            raise JsonParseError(f"unexpected character {nxt!r} after a number", end)
    elif first in "tfn" and nxt >= "0" and nxt not in "]}" and _is_identifier_part(nxt):
        raise JsonParseError(f"unrecognized token starting {text[start:end + 1]!r}", start)


def _decode(text: str) -> Any:
    start = 0
    n = len(text)
    while start < n and text[start] in _WHITESPACE:
        start += 1
    if start == n:
        raise JsonParseError("no JSON value (empty input)", start)
    try:
        obj, end = with_deep_stack(_SCAN, text, start)
    except StopIteration as exc:
        raise JsonParseError("invalid JSON: expecting a value", exc.value) from None
    except json.JSONDecodeError as exc:
        raise JsonParseError(f"invalid JSON: {exc.msg}", exc.pos) from None
    except RecursionError:
        raise JsonParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    _check_tail(text, start, end)
    if type(obj) is _LongNumber:
        if end < n:  # followed by whitespace: Jackson took its whole-number path
            raise JsonParseError(f"number with more than {MAX_NUMBER_DIGITS} digits: {obj.text[:20]}...", start)
        return obj.encoded
    return obj


def parse_json_parts(text: str | bytes, allow_duplicate_keys: bool = False) -> tuple[bytes, bytes]:
    """``(metadata, value)`` for JSON ``text``; raises JsonParseError on bad input."""
    if not isinstance(text, str):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonParseError(f"input is not valid UTF-8 ({exc.reason})", exc.start) from None
    obj = _decode(text)
    try:
        keys, value = with_deep_stack(_encode_document, obj, allow_duplicate_keys)
    except RecursionError:
        raise JsonParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except UnicodeEncodeError:
        raise JsonParseError("string or key holds a lone surrogate (invalid \\u escape)") from None
    if len(value) > SIZE_LIMIT:
        raise VariantSizeLimitError(f"parsed Variant value of {len(value)} bytes exceeds the 128 MiB size limit")
    return _metadata(keys), value


def _encode_document(obj: Any, allow_duplicate_keys: bool) -> tuple[tuple[str, ...], bytes]:
    encoder = _Encoder(allow_duplicate_keys)
    value = encoder.value(obj, 0)
    return tuple(encoder.keys), value


_METADATA_CACHE: dict[tuple[str, ...], bytes] = {}


def _metadata(keys: tuple[str, ...]) -> bytes:
    """Metadata for a key sequence; documents of one shape share it (and its cached view)."""
    found = _METADATA_CACHE.get(keys)
    if found is None:
        if len(_METADATA_CACHE) >= 4096:
            _METADATA_CACHE.clear()
        found = _METADATA_CACHE[keys] = metadata_from_keys(keys)
    return found
