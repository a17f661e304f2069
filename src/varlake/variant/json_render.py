"""Variant -> JSON text, string-identical to Spark 4.3's ``to_json``.

Spark's rules, each confirmed against Spark 4.3 on Java 17 by
tests/test_spark_oracle_codec.py (to_json of varlake's and of Spark's own bytes):

- object fields in the value's field-id order; no whitespace anywhere;
- strings escaped as Jackson does: ``\"``, ``\\``, ``\b \t \n \f \r``, other control
  characters as upper-case ``\u001F``; DEL, U+2028/2029, ``/`` and all non-ASCII raw;
- doubles and floats as Java 17's ``Double.toString``/``Float.toString``, whose
  ``FloatingDecimal`` is not the shortest round trip (``1.99802253835840973E18``,
  ``9.999999999999999E22`` for 1e23, ``4.9E-324``; ``varlake.semantics.numbers``). NaN and
  infinities are quoted (``"NaN"``, ``"-Infinity"``);
- decimals as ``stripTrailingZeros().toPlainString()`` (``1.50`` -> ``1.5``, never an exponent);
- dates ``yyyy-MM-dd`` as ``LocalDate`` prints them (``0000``, ``-0001``, ``+10000``);
  timestamps ``yyyy-MM-dd HH:mm:ss[.ffffff]`` with trailing zeros of the fraction dropped,
  plus ``+HH:MM`` in the session time zone for ``timestamp`` (offset seconds of old LMT
  offsets are dropped from the text but applied to the time); timestamp_ntz without zone;
- binary as standard base64 with padding; UUIDs in lower-case 8-4-4-4-12 form;
- Spark 4.3 fails on TIME and nanosecond timestamps (``UNKNOWN_PRIMITIVE_TYPE_IN_VARIANT``);
  varlake renders them in the same style with up to 9 fraction digits instead of failing.

Number, date and zone rules live in ``varlake.semantics`` (shared with the casts and the
expression layer); zone rules come from the ``tzdata`` package when installed, and the JVM
ships its own tzdb, so instants in years where IANA revised a zone's history can differ.
"""

from __future__ import annotations

import base64
import datetime as _dt
import struct

from varlake.errors import InvalidTimeZoneError, MalformedVariantError, VariantTimeZoneError
from varlake.semantics.datetime_text import format_date, format_time, format_timestamp_nanos
from varlake.semantics.json_text import quote
from varlake.semantics.numbers import decimal_text, java_double, java_float
from varlake.semantics.zones import resolve_zone
from varlake.variant.decoder import (
    Budget,
    MetadataView,
    array_layout,
    guarded,
    object_ids_offsets,
    payload_length,
    primitive_to_python,
    read_decimal,
    read_uints,
)

_I64 = struct.Struct("<q")
_I32 = struct.Struct("<i")


def session_zone(name: str) -> _dt.tzinfo:
    """The ``zone`` argument of the codec's functions resolved as Spark resolves a session
    time zone; refused ids raise ``VariantTimeZoneError`` (an ``InvalidTimeZoneError``)."""
    try:
        return resolve_zone(name)
    except InvalidTimeZoneError as exc:
        raise VariantTimeZoneError(str(exc)) from None


# --- the walk ------------------------------------------------------------------------------

_INT8_TEXT = [str(b - 256 if b > 127 else b) for b in range(256)]
_LITERALS = ("null", "true", "false")


def _primitive_json(value: bytes, pos: int, zone: str, budget: Budget) -> str:
    header = value[pos]
    if header & 0x03 == 1:
        return quote(primitive_to_python(value, pos))
    t = header >> 2
    if t <= 2:
        return _LITERALS[t]
    if t == 3:
        return _INT8_TEXT[value[pos + 1]]
    if t <= 6:
        return str(primitive_to_python(value, pos))
    if 8 <= t <= 10:
        return decimal_text(*read_decimal(value, pos))
    if t == 16:
        budget.take(payload_length(value, pos), pos)
        return quote(primitive_to_python(value, pos))
    if t == 7 or t == 14:
        num = primitive_to_python(value, pos)
        text = java_double(num) if t == 7 else java_float(num)
        return text if num == num and num not in (float("inf"), float("-inf")) else f'"{text}"'
    if t == 11:
        return f'"{format_date(_I32.unpack_from(value, pos + 1)[0])}"'
    if t == 12 or t == 13:
        micros = _I64.unpack_from(value, pos + 1)[0]
        return f'"{format_timestamp_nanos(micros * 1000, session_zone(zone) if t == 12 else None)}"'
    if t == 18 or t == 19:
        nanos = _I64.unpack_from(value, pos + 1)[0]
        return f'"{format_timestamp_nanos(nanos, session_zone(zone) if t == 18 else None)}"'
    if t == 15:
        budget.take(payload_length(value, pos), pos)
        return '"' + base64.b64encode(primitive_to_python(value, pos)).decode("ascii") + '"'
    if t == 17:
        primitive_to_python(value, pos)  # validates the range
        return f'"{format_time(_I64.unpack_from(value, pos + 1)[0])}"'
    return f'"{primitive_to_python(value, pos)}"'  # uuid (unknown ids raised above)


def _walk(meta: MetadataView, qkeys: list[str], value: bytes, pos: int, zone: str, out: list[str], budget: Budget) -> None:
    header = value[pos]
    basic = header & 0x03
    if basic == 1:  # short string: the most common value
        end = pos + 1 + (header >> 2)
        if end > len(value):
            raise MalformedVariantError("short string runs past the end", pos)
        out.append(quote(value[pos + 1 : end].decode("utf-8")))
    elif basic == 2:
        ids, offs, data = object_ids_offsets(meta, value, pos)
        budget.spend(len(ids), pos)
        sep = "{"
        for i, o in zip(ids, offs):
            out.append(sep)
            out.append(qkeys[i])
            _walk(meta, qkeys, value, data + o, zone, out, budget)
            sep = ","
        out.append("}" if sep == "," else "{}")
    elif basic == 3:
        n, osz, offs_at, data = array_layout(value, pos)
        budget.spend(n, pos)
        sep = "["
        for o in read_uints(value, offs_at, n, osz):
            out.append(sep)
            _walk(meta, qkeys, value, data + o, zone, out, budget)
            sep = ","
        out.append("]" if sep == "," else "[]")
    else:
        out.append(_primitive_json(value, pos, zone, budget))


@guarded
def to_json(meta: MetadataView, value: bytes, pos: int = 0, zone: str = "UTC") -> str:
    """JSON text of the value at ``pos``; timestamps are shown in ``zone``."""
    out: list[str] = []
    _walk(meta, meta.quoted_keys(), value, pos, zone, out, Budget(value))
    return "".join(out)
