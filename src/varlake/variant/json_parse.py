"""JSON text -> Variant, byte-identical to Spark 4.3's ``parse_json``.

The C JSON scanner of the standard library does the tokenising. Its number hooks
encode numbers straight into Variant bytes (from their exact text), its object hook
keeps key order and duplicates, and one top-down pass encodes the rest in document
order, so keys enter the dictionary in the order Spark's Jackson-driven builder
meets them.

Spark's rules reproduced here, each confirmed against Spark 4.3 (Jackson 2.21) by
tests/variant/test_spark_oracle_codec.py and tests/variant/test_json_limits.py:

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

Limits and cost. The bounds are Spark's and Jackson's (``varlake.variant.constants``:
``MAX_JSON_DEPTH``, ``MAX_JSON_NUMBER_DIGITS``, ``MAX_JSON_STRING_LENGTH``,
``MAX_JSON_KEY_LENGTH``, ``SIZE_LIMIT``); breaking one raises ``JsonLimitError`` (its
``limit`` says which) or ``JsonSizeLimitError``. Time is linear in the text (plus the
``n log n`` sort of each object's keys) and peak memory stays under
``PEAK_BYTES_PER_INPUT_BYTE`` times the text's size (bench/json_limits.py measures both):
numbers reach the tree already encoded, the encoding pass replaces each array element by its
bytes as it goes (freeing the element), and the offsets and ids of big containers and of the
dictionary are packed as 4-byte arrays, not kept as per-entry Python objects.
Over-limit input is refused as soon as it can be proved, with ``early=True`` when the text
was not read to its end: a document that is one over-long string is refused from where the
next ``"`` is (``str.find``), before it is scanned; a number over the digit limit stops the
scanner in its hook; nesting deeper than the scanner's recursion ceiling (about
``decoder.DEEP_RECURSION_LIMIT`` levels) stops it there, shallower nesting past 1000 is
refused by the encoding pass at level 1001. The size limit is checked as bytes are produced
(each long string, each container, each new dictionary key), not only on the finished value.
Text length alone cannot prove a Variant too large (whitespace, and keys repeated in many
objects, shrink without bound), so there is no refusal by input size.
"""

from __future__ import annotations

import json
import struct
from itertools import accumulate, islice
from operator import eq
import unicodedata
from typing import Any

from varlake.errors import (
    DuplicateKeyError,
    JsonLimitError,
    JsonParseError,
    JsonSizeLimitError,
    VariantSizeLimitError,
)
from varlake.variant.constants import (
    MAX_JSON_DEPTH,
    MAX_JSON_KEY_LENGTH,
    MAX_JSON_NUMBER_DIGITS,
    MAX_JSON_STRING_LENGTH,
    SIZE_LIMIT,
)
from varlake.variant.decoder import with_deep_stack
from varlake.variant.encoder import (
    assemble_array,
    assemble_object,
    encode_double,
    encode_int,
    metadata_from_keys,
    uint32_array,
)

MAX_NUMBER_DIGITS = MAX_JSON_NUMBER_DIGITS
MAX_KEY_LENGTH = MAX_JSON_KEY_LENGTH  # UTF-16 code units
MAX_STRING_LENGTH = MAX_JSON_STRING_LENGTH  # UTF-16 code units
PEAK_BYTES_PER_INPUT_BYTE = 40
"""Bound on the parse's peak Python memory (``tracemalloc``) per byte of JSON text. The worst
shapes measured are arrays of empty arrays or objects, about 32 (one Python container per 3
bytes of text); an object of 1,000,000 keys takes about 19. Asserted by
tests/variant/test_json_limits.py, measured by bench/json_limits.py."""
_WHITESPACE = " \t\n\r"
_ASTRAL_LEADS = (b"\xf0", b"\xf1", b"\xf2", b"\xf3", b"\xf4")  # UTF-8 lead bytes of 4-byte sequences

_SHORT_STRING_HEADERS = [bytes(((n << 2) | 1,)) for n in range(64)]
_LONG_STRING = struct.Struct("<BI")
_DECIMAL4 = struct.Struct("<BBi")
_DECIMAL8 = struct.Struct("<BBq")
_EMPTY_OBJECT = b"\x02\x00\x00"
_EMPTY_ARRAY = b"\x03\x00\x00"


class _Pairs(list):  # type: ignore[type-arg]
    """A JSON object as its ``(key, value)`` pairs, in document order, duplicates kept
    (the scanner's hook; a C-level constructor, so no Python call per object)."""

    __slots__ = ()


class _LongNumber:
    """A number within Jackson's per-part digit limits but over its overall one: valid only
    as the whole document (where Jackson checks it part by part), an error anywhere else."""

    __slots__ = ("encoded", "text")

    def __init__(self, text: str, encoded: bytes) -> None:
        self.text = text
        self.encoded = encoded


def _too_many_digits(what: str, digits: int) -> JsonLimitError:
    """Raised from the scanner's number hooks, so the rest of the text is never read."""
    return JsonLimitError(f"{what} with {digits} digits exceeds Jackson's {MAX_NUMBER_DIGITS}-digit limit",
                          limit="number", early=True)


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
        raise _too_many_digits("number", total)
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
        raise _too_many_digits("integer", digits)
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


def _utf16_length(text: str, data: bytes) -> int:
    """UTF-16 code units of ``text`` from its UTF-8 ``data``: one per code point, two for
    each supplementary one (a 4-byte UTF-8 sequence). Linear, no per-character Python."""
    return len(text) + sum(map(data.count, _ASTRAL_LEADS))


def _too_deep(early: bool = False) -> JsonLimitError:
    return JsonLimitError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels", limit="depth", early=early)


def _too_long(what: str, units: int, limit: int, at_least: bool = False, position: int | None = None,
              early: bool = False) -> JsonLimitError:
    size = f"at least {units}" if at_least else f"{units}"
    return JsonLimitError(f"{what} of {size} UTF-16 units exceeds Jackson's limit of {limit}", position,
                          limit="key" if what == "object key" else "string", early=early)


class _Encoder:
    """One document's top-down encoding pass: dictionary ids in first-seen key order.

    An array's elements are replaced in place by their encoded bytes, which frees the
    scanner's objects as the pass goes. A retry (after ``RecursionError``, with a higher
    limit) runs on the same encoder over the same, partly encoded tree: encoded elements pass
    through as they are, and keys met again keep the ids they were given, so it resumes the
    same encoding.
    """

    __slots__ = ("keys", "key_bytes", "allow_duplicates", "written")

    def __init__(self, allow_duplicates: bool) -> None:
        self.keys: dict[str, int] = {}  # key -> id, in first-seen order
        self.key_bytes = 0  # UTF-8 bytes of the long or non-ASCII keys (a lower bound of the metadata)
        self.allow_duplicates = allow_duplicates
        self.written = 0  # bytes of long strings so far: a lower bound of the value's size

    def document(self, obj: Any) -> bytes:
        self.written = 0  # a retry meets the same strings again
        return self.value(obj, 0)

    def value(self, obj: Any, depth: int) -> bytes:
        t = type(obj)
        if t is bytes:  # a number, encoded by the scanner's hooks (or a child encoded before a retry)
            return obj
        if t is str:
            return self.string(obj)
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
            raise JsonLimitError(f"number with more than {MAX_NUMBER_DIGITS} digits inside a document: {obj.text[:20]}...",
                                 limit="number")
        raise JsonParseError(f"unexpected JSON value {obj!r}")  # pragma: no cover - the scanner makes no others

    def string(self, text: str) -> bytes:
        if len(text) > MAX_STRING_LENGTH:  # code points <= UTF-16 units: over, without counting
            raise _too_long("string", len(text), MAX_STRING_LENGTH, at_least=True)
        data = text.encode("utf-8")
        n = len(data)
        if n < 64:
            return _SHORT_STRING_HEADERS[n] + data
        if n > MAX_STRING_LENGTH:  # UTF-16 units <= UTF-8 bytes, so only then can it be over
            units = _utf16_length(text, data)
            if units > MAX_STRING_LENGTH:
                raise _too_long("string", units, MAX_STRING_LENGTH)
        self.written += 5 + n
        if self.written > SIZE_LIMIT and not self.allow_duplicates:  # dropped duplicates shrink it
            raise _too_large("value", self.written, early=True)
        return _LONG_STRING.pack(0x40, n) + data

    def new_key(self, name: str) -> None:
        """Jackson's key length limit, no lone surrogates, and the dictionary's size so far."""
        if name.isascii():
            size = len(name)
            if size > MAX_KEY_LENGTH:
                raise _too_long("object key", size, MAX_KEY_LENGTH)
        else:
            if len(name) > MAX_KEY_LENGTH:
                raise _too_long("object key", len(name), MAX_KEY_LENGTH, at_least=True)
            data = name.encode("utf-8")  # lone surrogates raise UnicodeEncodeError here
            size = len(data)
            if size > MAX_KEY_LENGTH and _utf16_length(name, data) > MAX_KEY_LENGTH:
                raise _too_long("object key", _utf16_length(name, data), MAX_KEY_LENGTH)
        # Metadata holds every key's bytes and an offset (>= 1 byte) per key: short ASCII keys
        # (not counted here, for speed) add at least their offset.
        if self.key_bytes + size + len(self.keys) > SIZE_LIMIT:
            raise _too_large("metadata", self.key_bytes + size + len(self.keys), early=True)
        self.key_bytes += size

    def obj(self, pairs: _Pairs, depth: int) -> bytes:
        if depth > MAX_JSON_DEPTH:
            raise _too_deep()
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
                if len(name) > 64 or not name.isascii():
                    self.new_key(name)  # checked before it enters: a retry must meet it as new again
                fid = keys[name] = len(keys)
            ids.append(fid)
            t = type(val)
            if t is bytes:
                values.append(val)
            elif t is str and len(val) < 64:
                data = val.encode("utf-8")
                size = len(data)
                values.append(_SHORT_STRING_HEADERS[size] + data if size < 64 else self.string(val))
            else:
                values.append(encode(val, depth))
        names = [p[0] for p in pairs]
        order = sorted(range(n), key=names.__getitem__)  # code point order == UTF-8 byte order
        if n < 256:
            if len(set(ids)) != n:
                order, values, ids = self._drop_duplicates(names, ids, values, order)
            offsets = list(accumulate(map(len, values), initial=0))
            total = offsets[-1]
            sorted_ids = [ids[i] for i in order]
            if total < 256 and len(keys) <= 256:  # assemble_object's narrowest layout, inline
                return bytes((0x02, len(order), *sorted_ids, *[offsets[i] for i in order], total)) + b"".join(values)
            sorted_offsets = [offsets[i] for i in order]
            sorted_offsets.append(total)
            return self.checked(assemble_object(sorted_ids, sorted_offsets, b"".join(values)))
        sorted_ids = uint32_array(map(ids.__getitem__, order))
        if any(map(eq, sorted_ids, islice(sorted_ids, 1, None))):  # equal keys sort next to each other
            order, values, ids = self._drop_duplicates(names, ids, values, order)
            sorted_ids = uint32_array(map(ids.__getitem__, order))
        del ids, names
        offsets = uint32_array(accumulate(map(len, values), initial=0))
        data = b"".join(values)
        del values
        sorted_offsets = uint32_array(map(offsets.__getitem__, order))
        sorted_offsets.append(len(data))
        del offsets, order
        return self.checked(assemble_object(sorted_ids, sorted_offsets, data))

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
            raise _too_deep()
        n = len(items)
        if n == 0:
            return _EMPTY_ARRAY
        encode = self.value
        for i, v in enumerate(items):
            if type(v) is not bytes:
                items[i] = encode(v, depth)
        if n < 256:
            offsets = list(accumulate(map(len, items), initial=0))
            if offsets[n] < 256:
                return bytes((0x03, n, *offsets)) + b"".join(items)
            return self.checked(assemble_array(offsets, b"".join(items)))
        return self.checked(assemble_array(uint32_array(accumulate(map(len, items), initial=0)), b"".join(items)))

    @staticmethod
    def checked(container: bytes) -> bytes:
        """A container over the size limit is refused at once (the value holds all of it)."""
        if len(container) > SIZE_LIMIT:
            raise _too_large("value", len(container), early=True)
        return container


def _too_large(part: str, size: int, early: bool = False) -> JsonSizeLimitError:
    what = "value" if part == "value" else "metadata (dictionary keys)"
    at_least = "at least " if early else ""
    return JsonSizeLimitError(f"parsed Variant {what} of {at_least}{size} bytes exceeds Spark's size limit of "
                              f"{SIZE_LIMIT} bytes (128 MiB)", part=part, early=early)


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


def _refuse_long_top_string(text: str, start: int) -> None:
    """Refuse a document that is one over-long string without scanning it: its content runs
    at least to the next ``"``, and each escape (one backslash) shortens at most 6 characters
    to 1 code unit, so ``chars - 5 * backslashes`` is a lower bound of its length."""
    quote = text.find('"', start + 1)
    if quote == -1:
        return  # unterminated: the scanner says so
    units = quote - start - 1 - 5 * text.count("\\", start + 1, quote)
    if units > MAX_STRING_LENGTH:
        raise _too_long("string", units, MAX_STRING_LENGTH, at_least=True, position=start, early=True)


def _decode(text: str) -> Any:
    start = 0
    n = len(text)
    while start < n and text[start] in _WHITESPACE:
        start += 1
    if start == n:
        raise JsonParseError("no JSON value (empty input)", start)
    if n - start > MAX_STRING_LENGTH + 2 and text[start] == '"':
        _refuse_long_top_string(text, start)
    try:
        obj, end = with_deep_stack(_SCAN, text, start)
    except StopIteration as exc:
        raise JsonParseError("invalid JSON: expecting a value", exc.value) from None
    except json.JSONDecodeError as exc:
        raise JsonParseError(f"invalid JSON: {exc.msg}", exc.pos) from None
    except RecursionError:  # the scanner stopped where the nesting got too deep
        raise _too_deep(early=True) from None
    _check_tail(text, start, end)
    if type(obj) is _LongNumber:
        if end < n:  # followed by whitespace: Jackson took its whole-number path
            raise JsonLimitError(f"number with more than {MAX_NUMBER_DIGITS} digits: {obj.text[:20]}...", start,
                                 limit="number")
        return obj.encoded
    return obj


def parse_json_parts(text: str | bytes, allow_duplicate_keys: bool = False) -> tuple[bytes, bytes]:
    """``(metadata, value)`` for JSON ``text``; raises JsonParseError on bad input
    (``JsonLimitError`` past a nesting/length limit, ``JsonSizeLimitError`` past 128 MiB)."""
    if not isinstance(text, str):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonParseError(f"input is not valid UTF-8 ({exc.reason})", exc.start) from None
    obj = _decode(text)
    encoder = _Encoder(allow_duplicate_keys)
    try:
        value = with_deep_stack(encoder.document, obj)
    except RecursionError:
        raise _too_deep() from None
    except UnicodeEncodeError:
        raise JsonParseError("string or key holds a lone surrogate (invalid \\u escape)") from None
    del obj
    if len(value) > SIZE_LIMIT:
        raise _too_large("value", len(value))
    try:
        return _metadata(encoder.keys), value
    except VariantSizeLimitError as exc:  # the exact test, on the offsets as well as the key bytes
        raise JsonSizeLimitError(str(exc), part="metadata") from None


_METADATA_CACHE: dict[tuple[str, ...], bytes] = {}
_CACHED_KEYS = 64  # dictionaries up to this many keys are cached (documents of one shape share them)


def _metadata(keys: dict[str, int]) -> bytes:
    """Metadata for the dictionary; small ones are cached (with their cached view)."""
    if len(keys) > _CACHED_KEYS:
        return metadata_from_keys(list(keys))
    shape = tuple(keys)
    found = _METADATA_CACHE.get(shape)
    if found is None:
        if len(_METADATA_CACHE) >= 4096:
            _METADATA_CACHE.clear()
        found = _METADATA_CACHE[shape] = metadata_from_keys(shape)
    return found
