"""Variant path text (``$.a.b``, ``$['a b'][0]``) -> Delta's stats key form.

Delta keys per-path Variant statistics by RFC 9535 *normalized paths*
(``$['a']['b']``, ``$['a b'][0]``), so a predicate's path must be normalized the same way
before it can find its statistics.  The codec's ``varlake.variant.path`` does the parsing;
these two functions are the only places the expression layer touches it.
"""

from __future__ import annotations

from varlake.variant.path import VariantPath

PathSegment = str | int


def normalize_variant_path(text: str) -> str:
    """RFC 9535 normalized form of a Spark ``variant_get`` path; raises InvalidPathError."""
    return VariantPath.parse(text).normalized


def normalized_from_segments(segments: tuple[PathSegment, ...]) -> str:
    """Normalized path for already-split segments (keys from sqlglot's ``v:a['b']`` parse)."""
    return VariantPath(tuple(segments)).normalized
