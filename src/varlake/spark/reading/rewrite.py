"""Rewrite an analysed query's sites to read the derived columns of its tables' views.

``rewrite`` turns each site of a table that has shredded files into
``IF(t.__vl_shredded, t.__vl_<n>, <the original expression>)``: rows of shredded files
take the pre-computed leaf column, every other row evaluates the user's own expression,
lazily, exactly where Spark would (so its errors surface where Spark's would). Spark folds
the IF away inside each union branch and pushes filters on the leaf down to Parquet. A
table whose every read file serves all its uses (only shredded groups: ``direct``) needs
no fallback: its sites become the derived columns themselves, and its view has no flag.
There, an array of structs the query explodes and reads only field by field
(``element_fields``) may be read as its shredded elements: the site becomes the array of
element groups, and each ``l.f`` the cast of the element's leaf (``planner.element_shape``
says when the files allow it), so no struct is rebuilt per element. A DATE read from
string leaves the writer proved to hold only ISO dates compares as text
(``date_texts.dates_as_text``). ``retarget`` points the rewritten query at the shared reads.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import sqlglot
from sqlglot import exp

from varlake.delta.schema import PrimitiveType, StructType
from varlake.expr.dialect import SparkSQL
from varlake.semantics.types import backquote
from varlake.spark.reading.date_texts import dates_as_text
from varlake.spark.reading.element_fields import FieldAccess, primitive_struct
from varlake.spark.reading.leaf_casts import cast_sql, raise_sql, type_sql
from varlake.spark.reading.placeholders import FLAG_COLUMN
from varlake.spark.reading.planner import ElementShape, PathUse, elements_of, failure_of, target_type, text_of
from varlake.spark.reading.scopes import QueryAnalysis, Site
from varlake.spark.reading.sql import json_segments, spark_path

__all__ = ["retarget", "rewrite", "rewritten_tree"]


def _variant_get_form(node: exp.Expr) -> exp.Expr:
    """``v:a.b`` as the equivalent ``variant_get(v, '$.a.b')`` (Spark resolves ``:`` to exactly that)."""
    for extract in list(node.find_all(exp.JSONExtract)):
        if not extract.args.get("variant_extract"):
            continue
        segments = json_segments(extract.expression)
        path = spark_path(segments) if segments is not None else None
        if path is None:
            continue
        call = exp.Anonymous(this="variant_get", expressions=[extract.this.copy(), exp.Literal.string(path)])
        if extract is node:
            return call
        extract.replace(call)
    return node


def rewrite(
    analysis: QueryAnalysis,
    derived: Mapping[str, Mapping[PathUse, str]],
    direct: Collection[str] = (),
    elements: Mapping[str, Mapping[PathUse, ElementShape]] | None = None,
) -> str:
    """The query with every site of the tables in ``derived`` routed through the derived columns.

    ``derived`` maps a table name to ``{use: derived column}``; tables not in it keep
    their expressions. A table in ``direct`` has only shredded reads (every row comes
    from a file that serves all its uses): its sites become the derived column itself,
    with no flag and no fallback. ``elements`` gives, per direct table, the uses whose
    exploded sites (``Site.fields``) read the array as its shredded elements (the derived
    column of ``elements_of(use)``) and how they are read (``planner.element_shape``): each
    access ``l.f`` becomes the cast of ``l``'s leaf of ``f``, and a comparison of a field of
    ISO dates with another such field or a constant DATE compares texts
    (``dates_as_text``). Without any site to rewrite the text is returned as analysed.
    """
    tree = rewritten_tree(analysis, derived, direct, elements)
    return analysis.text if tree is None else tree.sql(dialect=SparkSQL)


def rewritten_tree(
    analysis: QueryAnalysis,
    derived: Mapping[str, Mapping[PathUse, str]],
    direct: Collection[str] = (),
    elements: Mapping[str, Mapping[PathUse, ElementShape]] | None = None,
) -> exp.Expr | None:
    """``rewrite``'s syntax tree: a rewritten copy of the analysis's tree (which stays as
    parsed, so one analysis serves many rewrites), or None when nothing is rewritten."""
    elements = elements or {}
    chosen = [
        s for s in analysis.sites
        if s.table in derived and (s.use in derived[s.table] or _as_elements(s, elements) is not None)
    ]
    if analysis.tree is None or not chosen:
        return None
    tree = analysis.tree.copy()
    copies = {id(old): new for old, new in zip(analysis.tree.walk(), tree.walk())}  # the copy has the same shape
    texts: dict[int, tuple[exp.Expr, exp.Expr]] = {}  # id -> (a node read as a DATE of ISO text, that text)
    for site in chosen:
        node = copies[id(site.node)]
        qualifier = site.qualifier
        shape = _as_elements(site, elements)
        if shape is not None and site.fields is not None:
            node.replace(exp.column(derived[site.table][elements_of(site.use)], table=qualifier))
            for access in site.fields.accesses:
                copies[id(access.node)].replace(_field_sql(site.use, site.fields.element, access, shape.leaves))
            texts.update(_element_texts(site, shape))
            continue
        text = derived[site.table].get(text_of(site.use)) if site.table in direct else None
        if text is not None:
            texts[id(site.node)] = (site.node, exp.column(text, table=qualifier))
        value = exp.column(derived[site.table][site.use], table=qualifier)
        failure = derived[site.table].get(failure_of(site.use))
        if failure is not None:  # a cast that can fail on a string leaf fails here, where Spark's would (leaf_casts)
            check = raise_sql(exp.column(failure, table=qualifier).sql(dialect=SparkSQL), value.sql(dialect=SparkSQL), site.use.target)
            value = sqlglot.parse_one(check, dialect=SparkSQL)
        if site.table in direct:
            node.replace(value)
            continue
        flag = exp.column(FLAG_COLUMN, table=qualifier)
        original = _variant_get_form(node.copy())
        node.replace(exp.If(this=flag, true=value, false=original))
    dates_as_text(texts, copies)
    return tree


def _as_elements(site: Site, elements: Mapping[str, Mapping[PathUse, ElementShape]]) -> ElementShape | None:
    """The element leaves' shape when ``site`` reads its array as shredded elements."""
    if site.fields is None:
        return None
    return elements.get(site.table, {}).get(site.use)


def _field_sql(use: PathUse, element: str, access: FieldAccess, shape: StructType) -> exp.Expr:
    """``l.f`` over shredded elements: the cast of the element's leaf of ``f`` as Spark
    casts its Variant value (``leaf_casts.cast_sql``; NULL where the element or its field
    is), NULL of the field's type where no file shreds ``f`` (missing in every element);
    a bare SELECT item keeps its output name ``f``."""
    want = _element_type(use).field(access.field).type
    read = {f.name: f.type for f in shape.fields}.get(access.field)
    assert isinstance(want, PrimitiveType) and (read is None or isinstance(read, PrimitiveType))
    if read is None:
        text = f"CAST(NULL AS {type_sql(want.name)})"
    else:
        text = cast_sql(_leaf_text(element, access.field), read.name, want.name)
    value = sqlglot.parse_one(text, dialect=SparkSQL)
    return exp.alias_(value, access.field, quoted=True) if access.projected else value


def _element_type(use: PathUse) -> StructType:
    """The element struct of a use served as shredded elements (``element_fields`` checked it)."""
    element = primitive_struct(target_type(use.target))
    assert element is not None
    return element


def _leaf_text(element: str, field: str) -> str:
    """SQL for the typed leaf of field ``field`` of the shredded element ``element``."""
    return f"{backquote(element)}.typed_value.{backquote(field)}.typed_value"


def _element_texts(site: Site, shape: ElementShape) -> dict[int, tuple[exp.Expr, exp.Expr]]:
    """The site's field accesses read as DATE from leaves of ISO dates
    (``ElementShape.iso_dates``), each with its leaf's text."""
    assert site.fields is not None
    element = _element_type(site.use)
    return {
        id(a.node): (a.node, sqlglot.parse_one(_leaf_text(site.fields.element, a.field), dialect=SparkSQL))
        for a in site.fields.accesses
        if a.field in shape.iso_dates and element.field(a.field).type == PrimitiveType("date")
    }


def retarget(tree: exp.Expr, tables: Mapping[str, tuple[str, str]]) -> str:
    """The SQL of ``tree`` (a copy) with each reference to a view in ``tables`` replaced by
    the ``(database, table)`` given for it, aliased to the view's name when it had no alias
    of its own, so column qualifiers naming the view still resolve."""
    copy = tree.copy()
    for table in list(copy.find_all(exp.Table)):
        if table.args.get("db") or table.name not in tables:
            continue
        database, name = tables[table.name]
        replacement = exp.Table(this=exp.to_identifier(name, quoted=True), db=exp.to_identifier(database, quoted=True))
        alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(table.name, quoted=True))
        replacement.set("alias", alias)
        table.replace(replacement)
    return copy.sql(dialect=SparkSQL)
