"""Spark's Variant cast of shredded leaves, written as Spark SQL over the leaf columns.

The planner serves a use ``variant_get(v, '$.p', T)`` (or ``v:p::T``, ``CAST``,
``try_cast``, ``try_variant_get``) from the typed leaf of ``$.p``, and a struct or array
target from the leaves of a shredded subtree. This module is the one home of what such a
leaf serves and of the SQL that gives, per row, exactly what Spark's Variant cast gives
for the value the leaf holds:

* a leaf that converts without loss or failure (``planner.leaf_serves``, or a wider number
  whose footer bounds fit) is a plain ``CAST``;
* a **string** leaf serves every other atomic target. Spark casts a Variant string to an
  atomic type ``T`` as ``Cast(string, T, EvalMode.TRY)`` in the session time zone and,
  where that gives NULL, fails with ``INVALID_VARIANT_CAST`` -- NULL for the ``try_``
  forms (``VariantGet.cast``; the same for ``variant_get``, ``::T`` and ``CAST``, whatever
  ``spark.sql.ansi.enabled`` says). So the value is ``try_cast(leaf AS T)``.

The failure must surface where Spark evaluates the user's expression, not where the view
computes its columns (Spark keeps a view's projection apart when a column is read twice,
and would then evaluate it on rows the query never looks at: ``CASE WHEN ok THEN
v:d::date END`` must not fail on the rows that are not ok). So the view's columns never
fail: next to a use's value (the ``try_`` result) it has the use's *failure* column
(``failure_sql``), a Variant that is NULL unless a leaf's cast fails on the row, where it
holds that leaf's string (in the subtree's shape for a struct or array target). The
query's site reads ``COALESCE(variant_get(failure, '$', 'T'), value)`` (``raise_sql``):
the value where nothing failed, else Spark's own Variant cast of the failing string,
raising Spark's own error and message, at the site. Struct and array targets work the
same way.

A struct or array target's value is rebuilt from the leaves with every cast a ``try_cast``
(``derived_sql._rebuild_sql``): an array of primitives without a lambda (``elements_sql``:
``try_cast(arr.typed_value.typed_value AS ARRAY<T>)``, Spark's field extraction over an
array and its array cast, which casts each element as ``try_cast`` would), an array of
structs with ``transform(arr, x -> named_struct(...))`` (cheaper than ``arrays_zip`` of the
fields' arrays, measured). Its failure test is lambda-free where the array's leaves are
primitives (``counted``): a leaf's cast fails somewhere in the array iff the cast array
``try_cast(arr.typed_value.typed_value.f.typed_value AS ARRAY<T>)`` has more NULLs than
the leaves' array (``_counted_fails``, ``_null_count``); only a row where a cast fails
builds the failure Variant (with ``transform``). Any other array (arrays of arrays,
structs with struct or array fields) keeps the ``exists`` test.
Correctness never depends on footer statistics. A use needs no failure column in files
whose every failing-capable leaf is a string the writer read and found to hold only ISO
dates, cast to a date or timestamp type (``date_text_serves``: Spark's cast never fails
on such text, ``semantics.datetime_text.ISO_DATE_TEXT``); the planner checks the files.
Such leaves, read as DATE where a query compares them with each other or with a DATE
constant, compare as text (``iso_date_text_sql``): no date is parsed per row.
"""

from __future__ import annotations

from varlake.delta.schema import ArrayType, DataType, PrimitiveType, StructType
from varlake.expr.types import decimal_params
from varlake.semantics.datetime_text import ISO_DATE_SPAN, ISO_DATE_TARGETS
from varlake.semantics.types import DELTA_NAMES, backquote

__all__ = [
    "STRING_LEAF_TARGETS", "array_cast_sql", "cast_sql", "counted", "date_text_serves", "elements_sql", "failure_sql",
    "iso_date_text_sql", "may_fail",
    "raise_sql",
    "string_leaf_serves", "type_sql",
]

#: Spark SQL spelling of Delta's primitive type names (``long`` -> ``bigint``).
_SQL_NAMES = {delta: spark for spark, delta in DELTA_NAMES.items() if spark not in ("char", "varchar")}

#: Targets a string leaf serves by a cast (besides ``string`` itself, which any string leaf
#: serves as it is); decimals of any precision and scale too.
STRING_LEAF_TARGETS = frozenset(
    ("boolean", "byte", "short", "integer", "long", "float", "double", "date", "timestamp", "timestamp_ntz", "binary")
)


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def type_sql(name: str) -> str:
    """Spark SQL spelling of a canonical primitive type name (``long`` -> ``bigint``)."""
    return name if decimal_params(name) is not None else _SQL_NAMES[name]


def string_leaf_serves(leaf: str | None, target: str) -> bool:
    """Whether a typed leaf of type ``leaf`` serves ``target`` by Spark's Variant cast of a
    string: a string leaf and any atomic target other than string."""
    return leaf == "string" and (target in STRING_LEAF_TARGETS or decimal_params(target) is not None)


def date_text_serves(leaf: str, target: str) -> bool:
    """Whether a string leaf holding only ISO dates (``LayoutFacts.date_text``) casts to
    ``target`` without ever failing."""
    return leaf == "string" and target in ISO_DATE_TARGETS


def iso_date_text_sql(date: str) -> tuple[str, str]:
    """(a test that the DATE ``date`` has an ISO text, that text): where the test holds,
    comparing a string leaf of ISO dates (``date_text_serves``) with the text is comparing
    the leaf's DATE with ``date`` (``datetime_text.ISO_DATE_SPAN``), without parsing the leaf.
    ``date`` must not fail: the test evaluates it on every row."""
    first, last = ISO_DATE_SPAN
    return f"({date} BETWEEN DATE'{first}' AND DATE'{last}')", f"CAST({date} AS STRING)"


def cast_sql(expr: str, leaf: str, target: str, raising: bool = False) -> str:
    """SQL for Spark's Variant cast to ``target`` of what the leaf ``expr`` (of type ``leaf``)
    holds: NULL where that cast fails (``failure_sql`` says where), or with ``raising``
    Spark's own error there -- ``COALESCE(try_cast(leaf AS T), variant_get(CAST(leaf AS
    VARIANT), '$', 'T'))``, the Variant cast evaluated only on a row whose cheap cast fails
    (a NULL leaf is NULL on both sides). The pair must be one the planner serves."""
    spelled = type_sql(target)
    if not string_leaf_serves(leaf, target):
        return f"CAST({expr} AS {spelled})"
    tried = f"try_cast({expr} AS {spelled})"
    return f"COALESCE({tried}, variant_get(CAST({expr} AS VARIANT), '$', '{spelled}'))" if raising else tried


def may_fail(shape: DataType, target: DataType) -> bool:
    """Whether reading ``target`` from leaves of ``shape`` (a served pair) can fail on some value."""
    if isinstance(target, PrimitiveType) and isinstance(shape, PrimitiveType):
        return string_leaf_serves(shape.name, target.name)
    if isinstance(target, ArrayType) and isinstance(shape, ArrayType):
        return may_fail(shape.element_type, target.element_type)
    if isinstance(target, StructType) and isinstance(shape, StructType):
        read = {f.name: f.type for f in shape.fields}
        return any(may_fail(read[f.name], f.type) for f in target.fields if f.name in read)
    return False


def array_cast_sql(expr: str, leaf: str, target: str) -> str:
    """``cast_sql`` of every element of ``expr``, an array of ``leaf`` values: Spark's array
    cast applies the element cast to each element (``try_cast`` gives NULL per element)."""
    spelled = f"ARRAY<{type_sql(target)}>"
    return f"try_cast({expr} AS {spelled})" if string_leaf_serves(leaf, target) else f"CAST({expr} AS {spelled})"


def counted(target: DataType, shape: DataType) -> bool:
    """Whether an array target read from a group of ``shape`` has a failure test without a
    lambda (``_counted_fails``): its elements primitives, or structs whose read fields are
    all primitives."""
    if not (isinstance(target, ArrayType) and isinstance(shape, ArrayType)):
        return False
    element, read = target.element_type, shape.element_type
    if isinstance(element, PrimitiveType):
        return isinstance(read, PrimitiveType)
    if isinstance(element, StructType) and isinstance(read, StructType):
        fields = {f.name: f.type for f in read.fields}
        return all(isinstance(f.type, PrimitiveType) and isinstance(fields[f.name], PrimitiveType) for f in element.fields if f.name in fields)
    return False


def _columns(node: str, target: ArrayType, shape: ArrayType) -> list[tuple[str, str, str, str]]:
    """A ``counted`` array's leaves as arrays: ``(array of the leaves, leaf type, target
    type, field)``, one per read field of the elements (one for an array of primitives,
    its field ``""``). Spark reads ``a.f`` over an array of structs as the array of each
    element's ``f`` (``GetArrayStructFields``: NULL where the element or its field is NULL)."""
    elements = f"{node}.typed_value.typed_value"
    element, read = target.element_type, shape.element_type
    if isinstance(element, PrimitiveType) and isinstance(read, PrimitiveType):
        return [(elements, read.name, element.name, "")]
    assert isinstance(element, StructType) and isinstance(read, StructType)
    fields = {f.name: f.type for f in read.fields}
    columns = []
    for f in element.fields:
        leaf = fields.get(f.name)
        if leaf is not None:
            assert isinstance(leaf, PrimitiveType) and isinstance(f.type, PrimitiveType)
            columns.append((f"{elements}.{backquote(f.name)}.typed_value", leaf.name, f.type.name, f.name))
    return columns


def elements_sql(node: str, target: DataType, shape: DataType) -> str | None:
    """An array of primitives read from the shredded array group ``node`` without a lambda:
    the elements' leaves as one array, cast element-wise (NULL where the group is, and
    where an element's cast fails). None for other arrays: measured on TPC-H line items,
    ``arrays_zip`` of the fields' arrays costs more than ``transform`` building each
    struct (each ``a.f`` is an array of its own, and the zipped structs are copied once
    more by the CAST naming their fields)."""
    if not counted(target, shape) or not isinstance(target, ArrayType) or not isinstance(target.element_type, PrimitiveType):
        return None
    ((leaves, leaf, want, _),) = _columns(node, target, shape)  # type: ignore[arg-type]
    return array_cast_sql(leaves, leaf, want)


#: Per target family, a value an array is searched for in ``_counted_fails``: any value is
#: exact (its presence only sends the row to the exact count), a rare one is cheaper.
_PROBES = {"date": "0001-01-01", "timestamp": "0001-01-01 00:00:00", "timestamp_ntz": "0001-01-01 00:00:00", "boolean": "false"}


def _null_count(array: str) -> str:
    """The number of NULL elements of an array, without a lambda: ascending ``sort_array``
    puts NULLs first, so the first non-NULL (the minimum) sits at position NULLs + 1."""
    return f"(coalesce(array_position(sort_array({array}), array_min({array})), size({array}) + 1) - 1)"


def _counted_fails(node: str, target: ArrayType, shape: ArrayType, rebuilt: str | None) -> str | None:
    """``_fails`` of a ``counted`` array: some leaf's cast gives NULL for a non-NULL leaf,
    i.e. the cast array has more NULLs than the leaves. ``array_contains(cast, probe)`` is
    NULL only when the cast array holds a NULL (and not the probe), so it keeps the
    sort-based counts to the rows with a NULL (or the probe) in them. (Spark computes the
    cast array once: as a common subexpression of the ``AND``; the same test as an ``IF``
    took three times the CPU on TPC-H Q12.) With ``rebuilt`` (the array already rebuilt
    from these leaves, as the target type), its field arrays are the cast arrays: no leaf
    is cast a second time."""
    element = target.element_type
    if isinstance(element, StructType) and len({f.name.lower() for f in element.fields}) < len(element.fields):
        rebuilt = None  # ``rebuilt.f`` would be ambiguous (names resolve case-insensitively)
    tests = []
    for leaves, leaf, want, field in _columns(node, target, shape):
        if not string_leaf_serves(leaf, want):
            continue
        if rebuilt is None:
            cast = array_cast_sql(leaves, leaf, want)
        else:
            cast = f"{rebuilt}.{backquote(field)}" if field else rebuilt
        probe = f"try_cast({_literal(_PROBES.get(want, '-97'))} AS {type_sql(want)})"
        tests.append(f"(coalesce(array_contains({cast}, {probe}), true) AND {_null_count(cast)} > {_null_count(leaves)})")
    return f"coalesce({' OR '.join(tests)}, false)" if tests else None


def _fails(node: str, target: DataType, shape: DataType, depth: int, rebuilt: str | None = None) -> str | None:
    """A never-NULL boolean: some leaf under ``node`` fails its cast (None: none can);
    ``rebuilt``: SQL of ``node`` already rebuilt as ``target`` (``failure_sql``)."""
    typed = f"{node}.typed_value"
    if isinstance(target, PrimitiveType) and isinstance(shape, PrimitiveType):
        if not string_leaf_serves(shape.name, target.name):
            return None
        return f"({typed} IS NOT NULL AND try_cast({typed} AS {type_sql(target.name)}) IS NULL)"
    if isinstance(target, ArrayType) and isinstance(shape, ArrayType):
        if counted(target, shape):
            return _counted_fails(node, target, shape, rebuilt)
        var = f"__vl_f{depth}"
        element = _fails(var, target.element_type, shape.element_type, depth + 1)
        return None if element is None else f"coalesce(exists({typed}, {var} -> {element}), false)"
    if isinstance(target, StructType) and isinstance(shape, StructType):
        read = {f.name: f.type for f in shape.fields}
        parts = [_fails(f"{typed}.{backquote(f.name)}", f.type, read[f.name], depth) for f in target.fields if f.name in read]
        found = [p for p in parts if p is not None]
        return "(" + " OR ".join(found) + ")" if found else None
    return None


def _failing(node: str, target: DataType, shape: DataType, depth: int) -> str:
    """The subtree under ``node`` with every failing leaf as its Variant string, the other
    leaves NULL (cast back to ``target``, the first failing leaf in Spark's order raises)."""
    typed = f"{node}.typed_value"
    if isinstance(target, PrimitiveType) and isinstance(shape, PrimitiveType):
        fails = _fails(node, target, shape, depth)
        return "CAST(NULL AS VARIANT)" if fails is None else f"IF({fails}, CAST({typed} AS VARIANT), NULL)"
    if isinstance(target, ArrayType) and isinstance(shape, ArrayType):
        var = f"__vl_f{depth}"
        return f"transform({typed}, {var} -> {_failing(var, target.element_type, shape.element_type, depth + 1)})"
    if isinstance(target, StructType) and isinstance(shape, StructType):
        read = {f.name: f.type for f in shape.fields}
        parts = [
            f"{_literal(f.name)}, {_failing(f'{typed}.{backquote(f.name)}', f.type, read[f.name], depth)}"
            for f in target.fields
            if f.name in read and may_fail(read[f.name], f.type)
        ]
        return f"named_struct({', '.join(parts)})"
    return "CAST(NULL AS VARIANT)"


def failure_sql(node: str, target: DataType, shape: DataType, rebuilt: str | None = None) -> str:
    """SQL for a use's failure column: a Variant, NULL unless a leaf under the shredded group
    ``node`` (read as ``shape``) fails its cast to ``target``; then, cast to ``target``, it
    fails as Spark's cast of the row's value does (same error, same message). ``rebuilt``:
    the use's value as computed by an earlier projection (an array rebuilt as ``target``),
    which a ``counted`` test reads instead of casting the leaves again."""
    fails = _fails(node, target, shape, 0, rebuilt)
    if fails is None:
        return "CAST(NULL AS VARIANT)"
    if isinstance(target, PrimitiveType):
        return f"IF({fails}, CAST({node}.typed_value AS VARIANT), NULL)"
    return f"IF({fails}, to_variant_object({_failing(node, target, shape, 0)}), NULL)"


def raise_sql(failure: str, value: str, target: str) -> str:
    """The site's SQL for a use that can fail: its value, or Spark's error for the failing
    value (``failure``: the failure column; ``target``: the use's canonical target text)."""
    return f"COALESCE(variant_get({failure}, '$', {_literal(target)}), {value})"
