"""Clustering keys -- columns and Variant paths -- and the Z-order a rewrite sorts rows by.

A key is SQL text the expression layer parses and binds: a column (``col``, ``s.x``) or a
Variant path with a type (``v:commit.collection::string``, ``v:time_us::bigint``); the
extraction and the cast follow Spark's semantics (``varlake.expr``); a value that does not
extract or cast is NULL (it must not fail a rewrite). A Variant key needs a primitive type.

Rows are ordered by a Z-order curve: each key's values are ranked (dense rank, NULLs
first, by Arrow's order -- strings by UTF-8 bytes, numbers by value), the ranks scaled to
``64 // len(keys)`` bits and their bits interleaved, so rows close in every key land in
the same file and per-file (per-path) statistics let selective predicates skip files.

The keys persist in the table as the ``varlake.clustering`` metadata domain (``{"clusteringColumns":
[...]}``): later ``optimize`` calls use them. Writing a domain needs the ``domainMetadata``
writer feature (``clustering_actions`` adds it to the protocol when missing).

Where the keys allow it, the table is also a Delta clustered table (PROTOCOL.md "Clustered
Table"), so delta-spark and other engines see the keys (``DESCRIBE DETAIL``'s
``clusteringColumns``) and their OPTIMIZE goes on clustering by them: every key a column (no
Variant path), the table not partitioned, each key among the leaves with statistics (the
first ``delta.dataSkippingNumIndexedCols``). Then the ``delta.clustering`` domain holds the
keys' physical paths and the protocol gets the ``clustering`` writer feature. Keys that do
not allow it on a table that was clustered that way store an empty list there (Delta's
``CLUSTER BY NONE``), so no engine clusters by keys the table no longer has.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.delta import constants as C
from varlake.delta.actions import Action, DomainMetadata
from varlake.delta.column_mapping import column_mapping
from varlake.delta.config import num_indexed_cols
from varlake.delta.protocol import with_writer_features
from varlake.delta.snapshot import Snapshot
from varlake.delta.stats import leaf_columns
from varlake.errors import ClusteringKeyError, CorruptLogError, ExpressionError
from varlake.expr import IsNull, bind, parse_term, term_type
from varlake.expr.rows import TermCompiler, row_variant_get
from varlake.expr.tree import Column, Term, VariantGet
from varlake.read.planner import schema_types

__all__ = [
    "CLUSTERING_DOMAIN",
    "DELTA_CLUSTERING_DOMAIN",
    "CLUSTERED_TAG",
    "ClusterKey",
    "clustering_actions",
    "delta_clustering_columns",
    "key_values",
    "parse_keys",
    "path_requests",
    "stored_keys",
    "zorder_indices",
]

CLUSTERING_DOMAIN = "varlake.clustering"
#: Delta's clustered-table domain: ``{"clusteringColumns": [[physical name, ...], ...]}``
DELTA_CLUSTERING_DOMAIN = C.CLUSTERING_DOMAIN
#: ``add.tags`` key of a file written clustered: the keys it was ordered by (JSON)
CLUSTERED_TAG = "VARLAKE_CLUSTERED_BY"
_ORDERABLE = ("boolean", "byte", "short", "integer", "long", "float", "double", "date", "timestamp", "timestamp_ntz", "string", "binary")


@dataclass(frozen=True)
class ClusterKey:
    """One clustering key: its text, the bound term and its type."""

    text: str
    term: Term
    type: str


def _orderable(type_name: str) -> bool:
    return type_name in _ORDERABLE or type_name.startswith("decimal")


def parse_keys(keys: Sequence[str], snapshot: Snapshot) -> tuple[ClusterKey, ...]:
    """Parse and bind clustering keys against the table's schema (``ClusteringKeyError``
    for text that does not parse or bind, an unorderable type, a repeated key, or a
    partition column -- every file of a partition has one value there)."""
    if isinstance(keys, str):
        keys = [keys]
    where = f"{snapshot.root}: cluster_by"
    types = schema_types(snapshot.schema)
    out: list[ClusterKey] = []
    for text in keys:
        if not isinstance(text, str) or not text.strip():
            raise ClusteringKeyError(f"{where}: a clustering key must be non-empty SQL text, got {text!r}")
        try:
            bound = bind(IsNull(parse_term(text)), types)
        except ExpressionError as exc:
            raise ClusteringKeyError(f"{where}: key {text!r}: {exc}") from None
        term = bound.term if isinstance(bound, IsNull) else None
        if not isinstance(term, (Column, VariantGet)):
            raise ClusteringKeyError(f"{where}: key {text!r} must be a column or a Variant path such as v:a.b::string")
        dtype = term_type(term)
        if not _orderable(dtype):
            hint = " (give the path a type: v:a.b::string)" if dtype == "variant" else ""
            raise ClusteringKeyError(f"{where}: key {text!r} has type {dtype}, which cannot be clustered by{hint}")
        if isinstance(term, Column) and term.path[0] in {c.lower() for c in snapshot.partition_columns} | set(
            snapshot.partition_columns
        ):
            raise ClusteringKeyError(f"{where}: key {text!r} is a partition column; cluster by other columns")
        if any(k.term == term for k in out):
            raise ClusteringKeyError(f"{where}: key {text!r} is given twice")
        out.append(ClusterKey(text.strip(), term, dtype))
    if not out:
        raise ClusteringKeyError(f"{where}: no clustering key given")
    return tuple(out)


def stored_keys(snapshot: Snapshot) -> tuple[str, ...] | None:
    """The clustering keys the table remembers (None: none)."""
    domain = snapshot.domains.get(CLUSTERING_DOMAIN)
    if domain is None or domain.removed:
        return None
    try:
        body = json.loads(domain.configuration)
        keys = body["clusteringColumns"]
    except (ValueError, TypeError, KeyError):
        raise CorruptLogError(f"{snapshot.root}: domain {CLUSTERING_DOMAIN} is not {{\"clusteringColumns\": [...]}}") from None
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise CorruptLogError(f"{snapshot.root}: domain {CLUSTERING_DOMAIN}: clusteringColumns must be a list of strings")
    return tuple(keys) or None


def keys_tag(keys: Sequence[ClusterKey]) -> str:
    """The ``add.tags`` value of a file written ordered by ``keys``."""
    return json.dumps([k.text for k in keys], separators=(",", ":"))


def delta_clustering_columns(snapshot: Snapshot, keys: Sequence[ClusterKey]) -> list[list[str]] | None:
    """The keys as Delta's ``clusteringColumns`` (physical paths), or None where Delta's
    clustered table cannot hold them (see the module doc)."""
    if snapshot.partition_columns or not all(isinstance(k.term, Column) for k in keys):
        return None
    limit = num_indexed_cols(snapshot.metadata.configuration)
    leaves = [path for path, _ in leaf_columns(snapshot.schema)]
    indexed = {tuple(p.lower() for p in path) for path in (leaves if limit < 0 else leaves[:limit])}
    paths = [tuple(k.term.path) for k in keys]  # type: ignore[attr-defined]
    if not all(tuple(p.lower() for p in path) in indexed for path in paths):
        return None
    mapping = column_mapping(snapshot.protocol, snapshot.metadata, snapshot.schema)
    return [list(mapping.physical_path(path) if mapping is not None else path) for path in paths]


def clustering_actions(snapshot: Snapshot, keys: Sequence[ClusterKey]) -> list[Action]:
    """The actions that make the table remember ``keys`` (none when it already does): the
    domains, and a protocol with the ``domainMetadata`` (and ``clustering``) writer features
    when it lacks them."""
    texts = [k.text for k in keys]
    if stored_keys(snapshot) == tuple(texts):
        return []
    delta_columns = delta_clustering_columns(snapshot, keys)
    was_clustered = DELTA_CLUSTERING_DOMAIN in snapshot.domains and not snapshot.domains[DELTA_CLUSTERING_DOMAIN].removed
    features = [C.DOMAIN_METADATA_FEATURE] + ([C.CLUSTERING] if delta_columns is not None else [])
    actions: list[Action] = []
    protocol = with_writer_features(snapshot.protocol, features)
    if protocol != snapshot.protocol:
        actions.append(protocol)
    actions.append(DomainMetadata(CLUSTERING_DOMAIN, json.dumps({"clusteringColumns": texts}, separators=(",", ":"))))
    if delta_columns is not None or was_clustered:
        body = json.dumps({"clusteringColumns": delta_columns or []}, separators=(",", ":"))
        actions.append(DomainMetadata(DELTA_CLUSTERING_DOMAIN, body))
    return actions


def path_requests(keys: Sequence[ClusterKey]) -> dict[str, list[str]]:
    """The Variant paths the keys read, per top-level Variant column (for a reader's
    ``paths=``, which reads only the Parquet columns a path needs)."""
    out: dict[str, list[str]] = {}
    for k in keys:
        if isinstance(k.term, VariantGet) and len(k.term.column.path) == 1:
            out.setdefault(k.term.column.path[0], [])
            if k.term.path not in out[k.term.column.path[0]]:
                out[k.term.column.path[0]].append(k.term.path)
    return out


def _variant_values(column: pa.Array | pa.ChunkedArray, fn: Any, name: str) -> list[Any]:
    """``fn`` of every row's Variant, evaluated once per distinct value (events repeat them)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    metas = column.field("metadata").to_pylist()
    values = column.field("value").to_pylist()
    valid = column.is_valid().to_pylist()
    cache: dict[tuple[bytes, bytes], Any] = {}
    out: list[Any] = []
    for m, v, ok in zip(metas, values, valid):
        if not ok or v is None:
            out.append(fn({name: None}))
            continue
        key = (m, v)
        found = cache.get(key, cache)
        if found is cache:
            try:
                found = fn({name: {"metadata": m, "value": v}})
            except Exception:  # noqa: BLE001 - a key that does not extract is NULL, never a failed rewrite
                found = None
            cache[key] = found
        out.append(found)
    return out


def key_values(table: pa.Table, key: ClusterKey) -> pa.Array:
    """The values of ``key`` for every row of ``table`` (the table's logical Arrow schema, with
    ``"<column>:<path>"`` columns where a reader extracted the keys' paths); a Variant value
    that does not extract or cast is NULL."""
    term = key.term
    if isinstance(term, Column) and len(term.path) == 1 and term.path[0] in table.column_names:
        return table.column(term.path[0]).combine_chunks()
    if isinstance(term, VariantGet):
        column = term.column.path[0]
        extracted = f"{column}:{term.path}"
        if len(term.column.path) == 1 and extracted in table.column_names:
            root = VariantGet(Column((extracted,), "variant"), "$", term.target, True)
            values = _variant_values(table.column(extracted), TermCompiler(row_variant_get).compile(root), extracted)
        else:
            fn = TermCompiler(row_variant_get).compile(term)
            values = _variant_values(table.column(column), fn, column) if len(term.column.path) == 1 else _rows(table, fn, column)
    else:
        values = _rows(table, TermCompiler(row_variant_get).compile(term), term.path[0])
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.array([None if v is None else str(v) for v in values], pa.string())


def _rows(table: pa.Table, fn: Any, column: str) -> list[Any]:
    out = []
    for value in table.column(column).to_pylist():
        try:
            out.append(fn({column: value}))
        except Exception:  # noqa: BLE001 - a key that does not extract is NULL, never a failed rewrite
            out.append(None)
    return out


def _ranks(values: pa.Array, bits: int) -> np.ndarray:
    """Dense ranks of ``values`` (NULLs first, NaN last) scaled to ``bits`` bits."""
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    if pa.types.is_null(values.type):
        return np.zeros(n, dtype=np.uint64)
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    uniq = pc.unique(pc.drop_null(values))
    ordered = uniq.take(pc.array_sort_indices(uniq))
    index = pc.fill_null(pc.add(pc.index_in(values, value_set=ordered).cast(pa.int64()), 1), 0)  # NULLs first
    r = index.to_numpy(zero_copy_only=False).astype(np.uint64)
    distinct = len(ordered) + 1
    scale = float(1 << bits) / max(distinct, 1)
    return np.minimum((r.astype(np.float64) * scale).astype(np.uint64), np.uint64((1 << bits) - 1))


def zorder_indices(table: pa.Table, keys: Sequence[ClusterKey]) -> np.ndarray:
    """Row indices of ``table`` in Z-order over ``keys`` (stable for ties)."""
    if not keys or table.num_rows <= 1:
        return np.arange(table.num_rows, dtype=np.int64)
    bits = max(1, min(32, 64 // len(keys)))
    ranks = [_ranks(key_values(table, k), bits) for k in keys]
    if len(ranks) == 1:
        z = ranks[0]
    else:
        z = np.zeros(table.num_rows, dtype=np.uint64)
        width = len(ranks)
        for b in range(bits):
            for i, r in enumerate(ranks):
                shift = b * width + (width - 1 - i)  # the first key holds the high bit of each group
                if shift < 64:
                    z |= ((r >> np.uint64(b)) & np.uint64(1)) << np.uint64(shift)
    return np.argsort(z, kind="stable").astype(np.int64)


def tag_map(keys: Sequence[ClusterKey] | None) -> Mapping[str, str] | None:
    return {CLUSTERED_TAG: keys_tag(keys)} if keys else None


def clustered_by(tags: Mapping[str, Any] | None) -> str | None:
    """The keys tag of a file written clustered (None: it was not)."""
    value = (tags or {}).get(CLUSTERED_TAG)
    return value if isinstance(value, str) else None
