"""Arrays of structs that a query explodes and then reads field by field (sqlglot).

TPC-H's line items are read as ``explode(variant_get(v, '$.lineitems',
'array<struct<...>>'))`` in a ``LATERAL VIEW`` (directly, or through a subquery column),
then ``l.l_shipdate``, ``l.l_discount``, ... Served from a shredded array, the view would
rebuild every element's struct from the element leaves (``derived_sql._rebuild_sql``: a
``transform`` lambda, which Spark evaluates without generated code) only for the query to
take the fields apart again. When every reference to the exploded element is such a field
access, the array can be read as its shredded elements themselves, and each ``l.f`` as
the cast of the element's leaf of ``f`` (``rewrite.rewritten_tree``): no struct is built.

``element_fields`` finds, for a site, the element's name and every field access, or
None when anything else may see the element or the array: a reference to the element
that is not ``l.f`` with ``f`` a field of the target type spelled as the type spells it
(``l``, ``l.f.g``, ``x.l.f``, a differently cased name), a reference from a nested query,
a source of the same name, another use of the subquery column, a subquery that groups
or is distinct, ``posexplode``, ``inline``, or a ``*`` (other than ``count(*)``) that
may read it whole. The planner decides whether the files serve it (``planner.element_shape``).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from varlake.delta.schema import ArrayType, DataType, PrimitiveType, StructType

__all__ = ["ElementFields", "FieldAccess", "element_fields", "primitive_struct"]

#: the generators whose one output column is the array's element (``explode_outer`` parses
#: to a class of its own; ``posexplode`` is an ``Explode`` too, with two columns)
_EXPLODES = (exp.Explode, exp.ExplodeOuter, getattr(exp, "_ExplodeOuter", exp.ExplodeOuter))


@dataclass(frozen=True)
class FieldAccess:
    """``l.f`` in the analysed tree: ``node`` reads field ``field`` of the exploded element;
    ``projected``: a bare SELECT item, whose output name (``f``) a rewrite keeps."""

    node: exp.Expr
    field: str
    projected: bool


@dataclass(frozen=True)
class ElementFields:
    """The exploded element's column name and every access to it."""

    element: str
    accesses: tuple[FieldAccess, ...]


def primitive_struct(dtype: DataType) -> StructType | None:
    """The element type of an array of structs of primitives with field names distinct
    case-insensitively (Spark resolves ``l.f`` so), else None."""
    if not isinstance(dtype, ArrayType) or not isinstance(dtype.element_type, StructType):
        return None
    element = dtype.element_type
    if not all(isinstance(f.type, PrimitiveType) for f in element.fields):
        return None
    if len({f.name.lower() for f in element.fields}) < len(element.fields):
        return None
    return element


def element_fields(site: exp.Expr, target: DataType) -> ElementFields | None:
    """How the array read at ``site`` (of type ``target``) is exploded and read, or None."""
    element_type = primitive_struct(target)
    if element_type is None:
        return None
    found = _exploded(site)
    if found is None:
        return None
    outer, lateral = found
    alias = lateral.args.get("alias")
    if not lateral.args.get("view") or not isinstance(alias, exp.TableAlias) or len(alias.columns) != 1:
        return None
    element = alias.columns[0].name
    if any(s.lower() == element.lower() for s in _source_names(outer)):
        return None
    stars = [star for star in outer.find_all(exp.Star) if not isinstance(star.parent, exp.Count)]
    if stars or any(c.is_star for c in outer.find_all(exp.Column)):
        return None  # ``*`` (but ``count(*)``) may read the element whole
    fields = {f.name for f in element_type.fields}
    accesses = []
    for column in outer.find_all(exp.Column):
        if not any(p.name.lower() == element.lower() for p in column.parts):
            continue
        access = _access(column, element, fields, outer)
        if access is None:
            return None
        accesses.append(access)
    return ElementFields(element, tuple(accesses))


def _exploded(site: exp.Expr) -> tuple[exp.Select, exp.Lateral] | None:
    """(the SELECT whose ``LATERAL VIEW`` explodes the site's array, that lateral view)."""
    parent = site.parent
    if type(parent) in _EXPLODES and parent.this is site:
        lateral = parent.parent
        outer = lateral.parent if isinstance(lateral, exp.Lateral) else None
        if isinstance(outer, exp.Select) and any(x is lateral for x in outer.args.get("laterals") or []):
            return outer, lateral
        return None
    if not isinstance(parent, exp.Alias) or parent.this is not site:
        return None
    return _through_subquery(parent)


def _through_subquery(alias: exp.Alias) -> tuple[exp.Select, exp.Lateral] | None:
    """``(SELECT <site> AS lis ...) LATERAL VIEW explode(lis) x AS l``: ``lis`` read nowhere
    else, in the subquery (a lateral column alias) or above it."""
    inner = alias.parent
    if not isinstance(inner, exp.Select) or not any(e is alias for e in inner.expressions):
        return None
    if any(inner.args.get(k) for k in ("group", "distinct", "having", "qualify", "laterals", "joins")):
        return None
    name = alias.alias
    if [n.lower() for n in inner.named_selects].count(name.lower()) != 1:
        return None
    if any(c.name.lower() == name.lower() for c in inner.find_all(exp.Column)):
        return None
    subquery = inner.parent
    from_ = subquery.parent if isinstance(subquery, exp.Subquery) else None
    outer = from_.parent if isinstance(from_, exp.From) else None
    if not isinstance(outer, exp.Select) or outer.args.get("from_", outer.args.get("from")) is not from_ or outer.args.get("joins"):
        return None
    uses = [c for c in outer.find_all(exp.Column) if c.name.lower() == name.lower() and not _inside(c, subquery)]
    if len(uses) != 1 or uses[0].table not in ("", subquery.alias) or uses[0].args.get("db"):
        return None
    generator = uses[0].parent
    lateral = generator.parent if type(generator) in _EXPLODES and generator.this is uses[0] else None
    if isinstance(lateral, exp.Lateral) and any(x is lateral for x in outer.args.get("laterals") or []):
        return outer, lateral
    return None


def _inside(node: exp.Expr, ancestor: exp.Expr) -> bool:
    while node is not None:
        if node is ancestor:
            return True
        node = node.parent
    return False


def _source_names(select: exp.Select) -> list[str]:
    """The aliases (or names) of a SELECT's sources and its lateral views' aliases."""
    names = []
    from_ = select.args.get("from_", select.args.get("from"))
    sources = [from_.this] if isinstance(from_, exp.From) else []
    sources += [j.this for j in select.args.get("joins") or []]
    for source in sources:
        names.append(source.alias_or_name)
    for lateral in select.args.get("laterals") or []:
        names.append(lateral.alias)
    return [n for n in names if n]


def _access(column: exp.Column, element: str, fields: set[str], outer: exp.Select) -> FieldAccess | None:
    """``column`` as an access ``l.f`` made in ``outer`` itself, or None."""
    if column.args.get("db") or column.args.get("catalog") or column.table.lower() != element.lower():
        return None
    if column.is_star or column.name not in fields:
        return None
    if isinstance(column.parent, exp.Dot) and column.parent.this is column:
        return None  # ``l.f.g``
    if column.find_ancestor(exp.Select) is not outer:
        return None  # a nested query's reference: correlated, or a source of its own
    projected = column.parent is outer and any(e is column for e in outer.expressions)
    return FieldAccess(column, column.name, projected)
