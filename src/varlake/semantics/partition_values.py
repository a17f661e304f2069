"""Partition values: the one home for how varlake names, renders, parses and stores them.

Delta keeps a file's partition values in the log as text (PROTOCOL.md, "Partition Value
Serialization"); an empty string is NULL for every type. Every engine path -- ``Table``
writes, the Spark writer, the Arrow reader, the Spark reader, partition pruning -- goes
through this module, so they all agree on:

- **names**: a partition column is a top-level primitive column (not Variant, struct,
  array, map or void); the name is non-empty and holds no NUL;
- **text** (``render``/``parse``): integers and decimals (at the column's scale) in plain
  digits, floats as the shortest text that reads back to the same value (``NaN``,
  ``Infinity``), booleans ``true``/``false``, dates ``yyyy-mm-dd``, timestamps in UTC as ISO 8601
  ``yyyy-mm-ddThh:mm:ss.ffffffZ`` (the form the protocol recommends; the older
  ``yyyy-mm-dd hh:mm:ss`` is read too), timestamp_ntz as ``yyyy-mm-dd hh:mm:ss[.ffffff]``,
  strings as they are, and **binary as its bytes read as UTF-8** -- what Spark's ``CAST(binary AS
  STRING)`` names a binary partition and what Delta reads back with ``CAST(string AS
  BINARY)``. Bytes that are not UTF-8 cannot round-trip through Spark and are refused.
  An empty string or empty binary value is NULL (Spark writes both as NULL too);
- **directories** (``escape``/``unescape``/``directory``): Hive-style ``col=value``
  with exactly the characters Spark's ``ExternalCatalogUtils.escapePathName`` escapes
  (plus NUL, which no file name can hold), NULL as ``__HIVE_DEFAULT_PARTITION__``;
- **Spark's directories** (``values_from_directory``): Spark names timestamp partitions
  in its session time zone; Delta wants UTC, so they are converted here (an ambiguous
  local time is refused).
"""

from __future__ import annotations

import datetime as dt
import math
import posixpath
import re
from collections.abc import Mapping, Sequence
from decimal import Context, Decimal, InvalidOperation, localcontext
from typing import Any

from varlake.errors import PartitionValueError, UnsafePathError
from varlake.semantics.calendar import micros_of_datetime
from varlake.semantics.datetime_text import (
    format_timestamp,
    parse_timestamp_string,
    string_to_date,
    string_to_timestamp,
    string_to_timestamp_ntz,
)
from varlake.semantics.numbers import java_number_text, to_float32
from varlake.semantics.string_casts import parse_double, parse_integer
from varlake.semantics.zones import resolve_zone

__all__ = [
    "HIVE_NULL",
    "check_partition_columns",
    "directory",
    "escape",
    "inside_root",
    "normalize",
    "parse",
    "render",
    "spark_local_timestamp_to_utc",
    "unescape",
    "values_from_directory",
]

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
UTC = dt.timezone.utc

_INTEGRAL = {"byte": 8, "short": 16, "integer": 32, "long": 64}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_NOT_PARTITIONABLE = ("void",)
# Spark's ExternalCatalogUtils.charToEscape (non-Windows), plus NUL: no file name can hold it.
_ESCAPED = frozenset([chr(c) for c in range(0x00, 0x20)] + list('"#%\'*/:=?\\\x7f{[]^'))
_HEX2 = re.compile(r"%([0-9A-Fa-f]{2})")
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)


# --- names ------------------------------------------------------------------------------------------


def check_partition_columns(columns: Sequence[str], types: Mapping[str, str | None], where: str) -> None:
    """Raise ``PartitionValueError`` unless ``columns`` can partition a table whose top-level
    columns have ``types`` (name -> Delta primitive type name; ``"variant"``; None for a
    struct, array or map). Writers and the Delta log's metadata check both use it."""
    if len(set(columns)) != len(columns):
        raise PartitionValueError(f"{where}: duplicate partition columns {list(columns)}")
    for name in columns:
        if not isinstance(name, str) or not name or "\x00" in name:
            raise PartitionValueError(f"{where}: invalid partition column name {name!r}")
        if name not in types:
            raise PartitionValueError(f"{where}: partition column {name!r} is not a top-level column of the schema {list(types)}")
        t = types[name]
        if t == "variant":
            raise PartitionValueError(f"{where}: Variant column {name!r} cannot be a partition column (Variant is not comparable)")
        if t is None or t in _NOT_PARTITIONABLE:
            raise PartitionValueError(
                f"{where}: partition column {name!r} has type {t or 'non-primitive'}; only primitive columns can partition"
            )


# --- typed value <-> Delta text ---------------------------------------------------------------------


def render(value: Any, type_name: str, where: str = "partition value") -> str | None:
    """A typed partition value as Delta stores it (None for NULL, and for "" / b"")."""
    if value is None:
        return None
    try:
        return _render(value, type_name)
    except PartitionValueError:
        raise
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise PartitionValueError(f"{where}: cannot write {value!r} as a {type_name} partition value: {exc}") from None


def _render(value: Any, t: str) -> str | None:
    if t == "string":
        if not isinstance(value, str):
            raise TypeError(f"{type(value).__name__} is not text")
        _check_utf8(value)
        return value or None
    if t == "binary":
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"{type(value).__name__} is not bytes")
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"byte 0x{bytes(value)[exc.start]:02x} at offset {exc.start} is not UTF-8; binary partition values "
                "are stored as their UTF-8 text (as Spark and Delta do), so only UTF-8 bytes round-trip"
            ) from None
        return text or None
    if t == "boolean":
        if not isinstance(value, bool):
            raise TypeError(f"{type(value).__name__} is not a boolean")
        return "true" if value else "false"
    if t in _INTEGRAL:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{type(value).__name__} is not an integer")
        _check_range(value, t)
        return str(value)
    m = _DECIMAL.match(t)
    if m:
        precision, scale = int(m.group(1)), int(m.group(2))
        number = Decimal(value) if isinstance(value, (int, str)) else value
        if not isinstance(number, Decimal) or not number.is_finite():
            raise TypeError(f"{value!r} is not a finite decimal")
        with localcontext(Context(prec=80)):
            exact = number.quantize(Decimal(1).scaleb(-scale))
        if exact != number or len(exact.as_tuple().digits) > precision and exact != 0:
            raise ValueError(f"does not fit decimal({precision},{scale}) exactly")
        return format(exact, "f")
    if t in ("double", "float"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{type(value).__name__} is not a number")
        if t == "float" and math.isfinite(value) and math.isinf(to_float32(float(value))):
            raise ValueError(f"{value!r} is out of range for float")
        return java_number_text(float(value), float32=t == "float")
    if t == "date":
        if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
            raise TypeError(f"{type(value).__name__} is not a date")
        return value.isoformat()
    if t == "timestamp":
        if not isinstance(value, dt.datetime):
            raise TypeError(f"{type(value).__name__} is not a timestamp")
        if value.tzinfo is None:
            raise ValueError("a timestamp partition value needs a time zone (naive datetimes are ambiguous)")
        return _utc_text(value.astimezone(UTC).replace(tzinfo=None))
    if t == "timestamp_ntz":
        if not isinstance(value, dt.datetime):
            raise TypeError(f"{type(value).__name__} is not a timestamp")
        return format_timestamp(micros_of_datetime(value.replace(tzinfo=None)))
    raise PartitionValueError(f"type {t!r} cannot be a partition column")


def parse(text: str | None, type_name: str, tz: str = "UTC", where: str = "partition value") -> Any:
    """The typed value of a stored partition value (None and "" are NULL).

    Timestamps carry their zone (``...Z``, ``+08:00``; varlake writes ``Z``) or are
    ``yyyy-mm-dd hh:mm:ss[.f]`` in ``tz`` (the zone of the writer), per the protocol; they come
    back as aware UTC datetimes (timestamp_ntz: naive). Binary comes back as the UTF-8 bytes.
    """
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        raise PartitionValueError(f"{where}: {text!r} is not text")
    try:
        return _parse(text, type_name, tz)
    except PartitionValueError:
        raise
    except (TypeError, ValueError, ArithmeticError, InvalidOperation, OverflowError) as exc:
        raise PartitionValueError(f"{where}: {text!r} is not a {type_name} partition value ({exc})") from None


def _parse(text: str, t: str, tz: str) -> Any:
    if t == "string":
        return text
    if t == "binary":
        return text.encode("utf-8")
    if t == "boolean":
        low = text.strip().lower()
        if low not in ("true", "false"):
            raise ValueError("not true or false")
        return low == "true"
    if t in _INTEGRAL:
        value = parse_integer(text)
        if value is None:
            raise ValueError("not an integer")
        _check_range(value, t)
        return value
    m = _DECIMAL.match(t)
    if m:
        number = Decimal(text.strip())
        if not number.is_finite():
            raise ValueError("not a finite decimal")
        with localcontext(Context(prec=80)):
            return number.quantize(Decimal(1).scaleb(-int(m.group(2))))
    if t in ("double", "float"):
        number = parse_double(text, float32=t == "float")
        if number is None:
            raise ValueError("not a number")
        return number
    if t == "date":
        days = string_to_date(text)
        if days is None:
            raise ValueError("not a date")
        return _EPOCH_DATE + dt.timedelta(days=days)
    if t == "timestamp_ntz":
        micros = string_to_timestamp_ntz(text)
        if micros is None:
            raise ValueError("not a timestamp")
        return _EPOCH + dt.timedelta(microseconds=micros)
    if t == "timestamp":
        micros = string_to_timestamp(text, _zone(tz))
        if micros is None:
            raise ValueError("not a timestamp")
        return (_EPOCH + dt.timedelta(microseconds=micros)).replace(tzinfo=UTC)
    raise PartitionValueError(f"type {t!r} cannot be a partition column")


def normalize(text: str | None, type_name: str, tz: str = "UTC", where: str = "partition value") -> str | None:
    """Stored text in varlake's one spelling (``render(parse(text))``): the same value always
    gets the same text, whichever engine named it."""
    return render(parse(text, type_name, tz, where), type_name, where)


# --- helpers for text ---------------------------------------------------------------------------------


def _check_utf8(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"character {exc.start} is a lone surrogate, which UTF-8 cannot store") from None


def _check_range(value: int, t: str) -> None:
    bits = _INTEGRAL[t]
    if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise ValueError(f"{value} is out of range for {t}")


def _utc_text(naive_utc: dt.datetime) -> str:
    """timestamp: ISO 8601 in UTC, ``yyyy-mm-ddThh:mm:ss.ffffffZ`` (the protocol's recommended form:
    no reader can take it for a local time)."""
    return naive_utc.isoformat("T", "microseconds") + "Z"


def _zone(name: str) -> dt.tzinfo:
    """A time zone by Spark's spelling (``varlake.semantics.zones``: region ids, ``UTC``,
    ``Z``, offsets such as ``+08:00`` or ``GMT+8``); ``ValueError`` for ids Spark refuses."""
    return resolve_zone(name)


def spark_local_timestamp_to_utc(local: str, tz: str, where: str) -> str:
    """A timestamp partition directory Spark named in session zone ``tz``, as Delta's UTC text.

    A local time that a clock change makes ambiguous (or skips) is refused: which instant
    Spark meant cannot be known from the directory name.
    """
    try:
        zone = _zone(tz)
    except ValueError as exc:
        raise PartitionValueError(f"{where}: cannot read timestamp {local!r} in time zone {tz!r}: {exc}") from None
    parts = parse_timestamp_string(local)
    if parts is not None and parts.zone is not None:  # the name carries its own zone: no ambiguity
        micros = string_to_timestamp(local, zone)
        if micros is None:
            raise PartitionValueError(f"{where}: cannot read timestamp {local!r}")
        return _utc_text(_EPOCH + dt.timedelta(microseconds=micros))
    micros = string_to_timestamp_ntz(local)
    if micros is None:
        raise PartitionValueError(f"{where}: cannot read timestamp {local!r} in time zone {tz!r}: not a timestamp")
    naive = _EPOCH + dt.timedelta(microseconds=micros)
    early = naive.replace(tzinfo=zone, fold=0).astimezone(UTC)
    late = naive.replace(tzinfo=zone, fold=1).astimezone(UTC)
    if early != late:
        raise PartitionValueError(
            f"{where}: local time {local!r} is ambiguous in {tz!r}; write timestamp partitions with a UTC session time zone"
        )
    return _utc_text(early.replace(tzinfo=None))


# --- directories -------------------------------------------------------------------------------------


def escape(text: str) -> str:
    """Hive-style escaping of a directory name part, as Spark's ``escapePathName`` (``%XX``)."""
    if not any(c in _ESCAPED for c in text):
        return text
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def unescape(text: str) -> str:
    """The inverse of ``escape`` (Spark's ``unescapePathName``: ``%XX`` -> the character)."""
    if "%" not in text:
        return text
    return _HEX2.sub(lambda m: chr(int(m.group(1), 16)), text)


def directory(columns: Sequence[str], texts: Sequence[str | None]) -> str:
    """The relative directory ``col=value/...`` of a data file with these stored values."""
    parts = []
    for column, text in zip(columns, texts, strict=True):
        value = HIVE_NULL if text is None or text == "" else escape(text)
        parts.append(f"{escape(column)}={value}")
    return "/".join(parts)


def values_from_directory(
    relative: str, columns: Sequence[str], types: Mapping[str, str], session_tz: str, where: str
) -> dict[str, str | None]:
    """Stored partition values of a file Spark wrote at ``relative`` (``col=value/.../file``):
    each directory unescaped, read in Spark's spelling (timestamps in ``session_tz``) and
    stored in varlake's (``normalize``; timestamps in UTC)."""
    parts = relative.split("/")[:-1]
    if len(parts) != len(columns):
        raise PartitionValueError(f"{where}: file {relative!r} is not inside one directory per partition column {list(columns)}")
    out: dict[str, str | None] = {}
    for part, column in zip(parts, columns):
        key, sep, raw = part.partition("=")
        if not sep or unescape(key) != column:
            raise PartitionValueError(f"{where}: directory {part!r} of {relative!r} is not the partition column {column!r}")
        text = None if raw == HIVE_NULL else unescape(raw)
        t = types[column]
        context = f"{where}: partition directory {part!r}"
        if text is not None and t == "timestamp":
            text = spark_local_timestamp_to_utc(text, session_tz, context)
        out[column] = normalize(text, t, "UTC", context)
    return out


def inside_root(root: str, relative: str, where: str) -> str:
    """``root/relative`` after checking that ``relative`` stays inside ``root`` (no absolute
    path, no ``..``, not into ``_delta_log``); ``UnsafePathError`` otherwise."""
    if not relative or "\x00" in relative or relative.startswith("/") or "\\" in relative:
        raise UnsafePathError(f"{where}: data file path {relative!r} is not a relative path inside the table")
    norm = posixpath.normpath(relative)
    if norm != relative or norm in (".", "..") or norm.startswith("../") or norm.split("/")[0] == "_delta_log":
        raise UnsafePathError(f"{where}: data file path {relative!r} would leave the table root {root!r}")
    return f"{root.rstrip('/')}/{relative}"
