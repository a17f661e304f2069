"""Python stand-ins for Variant types the standard library cannot hold exactly (float32, nanos)."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_NTZ = _dt.datetime(1970, 1, 1)


class Float32(float):
    """A float that came from (or must become) a Variant ``float``: keeps the 32-bit type
    through ``to_python`` -> ``from_python`` round trips. Behaves as a plain float."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Float32({float(self)!r})"


@dataclass(frozen=True, order=True, slots=True)
class TimestampNanos:
    """A nanosecond timestamp (Variant types 18 and 19): ``datetime`` stops at microseconds.

    ``utc`` is True for ``timestamp`` with time zone (stored as UTC instants), False for
    ``timestamp_ntz`` (wall-clock time without a zone).
    """

    nanos: int
    utc: bool = True

    def to_datetime(self) -> _dt.datetime:
        """The timestamp truncated (floored) to microseconds."""
        micros = self.nanos // 1000
        return (_EPOCH_UTC if self.utc else _EPOCH_NTZ) + _dt.timedelta(microseconds=micros)

    @classmethod
    def from_datetime(cls, value: _dt.datetime, extra_nanos: int = 0) -> "TimestampNanos":
        """From a datetime (aware -> utc, naive -> ntz) plus sub-microsecond nanoseconds."""
        if value.tzinfo is not None:
            delta = value - _EPOCH_UTC
            utc = True
        else:
            delta = value - _EPOCH_NTZ
            utc = False
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return cls(micros * 1000 + extra_nanos, utc)
