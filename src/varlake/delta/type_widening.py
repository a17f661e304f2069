"""Type widening (PROTOCOL.md "Type Widening"): which type changes Delta allows, and the
check of a schema's ``delta.typeChanges`` history.

Readers convert values of files written before a widening to the current, wider type;
``is_widening`` says which conversions those are (the read path casts only those) and
``validate_type_changes`` refuses a schema recording any other change.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from varlake.delta.schema import ArrayType, DataType, MapType, PathVisitor, PrimitiveType, StructField, StructType, visit
from varlake.errors import UnsupportedTypeChangeError

__all__ = ["TYPE_CHANGES_KEY", "check_schema_change", "is_widening", "validate_type_changes", "type_changes"]

TYPE_CHANGES_KEY = "delta.typeChanges"

_INTEGERS = ("byte", "short", "integer", "long")
#: Integer type -> the decimal precision it needs with scale 0.
_INTEGER_DIGITS = {"byte": 10, "short": 10, "integer": 10, "long": 20}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


def _norm(name: str) -> str:
    """A Delta type name as ``schemaString`` spells it (``typeChanges`` may space decimals)."""
    return name.strip().lower()


def _decimal(name: str) -> tuple[int, int] | None:
    m = _DECIMAL.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def is_widening(from_type: str, to_type: str) -> bool:
    """Whether Delta allows widening primitive ``from_type`` to ``to_type`` (Delta type
    names; a type to itself is not a widening)::

        byte -> short -> integer -> long; float -> double; byte/short/integer -> double;
        date -> timestamp_ntz; decimal(p,s) -> decimal(p+k1, s+k2) with k1 >= k2 >= 0;
        byte/short/integer -> decimal(10+k1, k2), long -> decimal(20+k1, k2), k1 >= k2 >= 0.
    """
    src, dst = _norm(from_type), _norm(to_type)
    if src == dst:
        return False
    if src in _INTEGERS and dst in _INTEGERS:
        return _INTEGERS.index(src) < _INTEGERS.index(dst)
    if dst == "double":
        return src in ("float", "byte", "short", "integer")
    if (src, dst) == ("date", "timestamp_ntz"):
        return True
    to_dec = _decimal(dst)
    if to_dec is None:
        return False
    p2, s2 = to_dec
    if src in _INTEGER_DIGITS:
        p1, s1 = _INTEGER_DIGITS[src], 0
    else:
        from_dec = _decimal(src)
        if from_dec is None:
            return False
        p1, s1 = from_dec
    k1, k2 = p2 - p1, s2 - s1
    return k1 >= k2 >= 0


def _type_at(dtype: DataType, field_path: str | None, where: str) -> DataType:
    """The type at a ``fieldPath`` (``key``/``value``/``element``, dotted) below a field."""
    if not field_path:
        return dtype
    for step in field_path.split("."):
        if step == "element" and isinstance(dtype, ArrayType):
            dtype = dtype.element_type
        elif step == "key" and isinstance(dtype, MapType):
            dtype = dtype.key_type
        elif step == "value" and isinstance(dtype, MapType):
            dtype = dtype.value_type
        else:
            raise UnsupportedTypeChangeError(f"{where}: fieldPath {field_path!r} does not lead to an element, key or value")
    return dtype


class _Paths(PathVisitor[None]):
    """Every struct field with its dotted path, and every type that is not a struct with its
    path and the nearest struct field above it, inside arrays and maps too."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[tuple[str, StructField]] = []
        self.leaves: list[tuple[str, DataType, StructField | None]] = []
        self.owners: list[StructField] = []

    def _enter(self, dtype: DataType) -> None:
        if not isinstance(dtype, StructType):
            self.leaves.append((".".join(self.path), dtype, self.owners[-1] if self.owners else None))

    def before_field(self, field: StructField) -> None:
        super().before_field(field)
        self.fields.append((".".join(self.path), field))
        self.owners.append(field)
        self._enter(field.type)

    def after_field(self, field: StructField) -> None:
        super().after_field(field)
        self.owners.pop()

    def before_element(self, array: ArrayType) -> None:
        super().before_element(array)
        self._enter(array.element_type)

    def before_key(self, map_type: MapType) -> None:
        super().before_key(map_type)
        self._enter(map_type.key_type)

    def before_value(self, map_type: MapType) -> None:
        super().before_value(map_type)
        self._enter(map_type.value_type)


def _paths(dtype: DataType) -> _Paths:
    found = _Paths()
    found._enter(dtype)
    visit(dtype, found)
    return found


def type_changes(metadata: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    """A field's ``delta.typeChanges`` list ([] when absent); malformed -> named error."""
    changes = metadata.get(TYPE_CHANGES_KEY)
    if changes is None:
        return []
    if not isinstance(changes, list) or not all(isinstance(c, dict) for c in changes):
        raise UnsupportedTypeChangeError(f"{where}: {TYPE_CHANGES_KEY} must be a list of objects")
    return changes


def validate_type_changes(schema: StructType, where: str = "schema") -> None:
    """Refuse (``UnsupportedTypeChangeError``, naming field and types) any recorded type
    change that is not a widening Delta allows (or whose ``fieldPath`` leads nowhere)."""
    for path, f in _paths(schema).fields:
        at = f"{where}: field {path!r}"
        changes = type_changes(f.metadata, at)
        for change in changes:
            src, dst, fp = change.get("fromType"), change.get("toType"), change.get("fieldPath")
            if not isinstance(src, str) or not isinstance(dst, str) or (fp is not None and not isinstance(fp, str)):
                raise UnsupportedTypeChangeError(f"{at}: {TYPE_CHANGES_KEY} entry {change!r} lacks fromType/toType text")
            _type_at(f.type, fp, at)
            if not is_widening(src, dst):
                raise UnsupportedTypeChangeError(
                    f"{at}{f' ({fp})' if fp else ''}: unsupported type change {src} -> {dst} in {TYPE_CHANGES_KEY}"
                )


def _kind(dtype: DataType) -> str:
    return dtype.name if isinstance(dtype, PrimitiveType) else type(dtype).__name__


def check_schema_change(old: StructType, new: StructType, widening_supported: bool, where: str) -> None:
    """Refuse a new schema that changes the type of a column existing data files hold
    (PROTOCOL.md "Consistency Between Table Metadata and Data Files"), unless it is a
    widening the table supports and records in ``delta.typeChanges``."""
    before = {path: dtype for path, dtype, _ in _paths(old).leaves}
    for path, dtype, owner in _paths(new).leaves:
        was = before.get(path)
        if was is None or _kind(was) == _kind(dtype):
            continue
        recorded = owner is not None and any(
            isinstance(c, dict) and _norm(str(c.get("toType", ""))) == _norm(_kind(dtype))
            for c in owner.metadata.get(TYPE_CHANGES_KEY) or []
        )
        if not (widening_supported and recorded and is_widening(_kind(was), _kind(dtype))):
            raise UnsupportedTypeChangeError(
                f"{where}: column {path!r} changes type {_kind(was)} -> {_kind(dtype)} while data files hold the old "
                f"type (only a widening recorded in {TYPE_CHANGES_KEY} on a table with the typeWidening feature may)"
            )
