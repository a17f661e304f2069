"""What a workload is: a source of JSON Lines and one query set written once per dialect.

A query is written four times because the storages are queried in different ways:
JSON text (``get_json_object`` / ``from_json``), Variant (``v:path::type`` /
``variant_get``, shared by Spark's own Variant files and by varlake's planner),
relational Parquet (typed columns, arrays of structs), and DuckDB (its VARIANT type).
The benchmark is only meaningful if all four mean the same thing, which the harness
checks on every run by comparing result sets.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # Spark is only needed when a workload's relational form is built
    from pyspark.sql import DataFrame, SparkSession


class Dialect(str, enum.Enum):
    """How a storage is queried (several storages can share one dialect)."""

    JSON = "json"
    VARIANT = "variant"
    RELATIONAL = "relational"
    DUCKDB = "duckdb"


@dataclass(frozen=True)
class Query:
    """One benchmark query: SQL templates per dialect plus the literal sets to rotate through.

    Templates use ``str.format`` fields: ``{t}`` is the table (a view name, a placeholder
    for varlake's planner, or a DuckDB ``read_parquet`` call) and every other field is a
    literal from ``params``. Run ``i`` of a query uses ``params[i % len(params)]``, so
    repeated runs cannot be served from any result cache.
    """

    name: str
    title: str
    sql: Mapping[Dialect, str]
    params: Sequence[Mapping[str, str]] = (dict(),)

    def render(self, dialect: Dialect, table: str, run: int = 0) -> str:
        """The SQL text of run ``run`` of this query against ``table``."""
        literals = self.params[run % len(self.params)]
        return self.sql[dialect].format(t=table, **literals)


@dataclass(frozen=True)
class Source:
    """Generated JSON Lines: the one input every storage is loaded from."""

    paths: tuple[Path, ...]
    rows: int
    bytes: int
    seconds: float
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Workload:
    """A named data set: how to generate it, how to make it relational, what to ask of it."""

    name: str
    title: str
    queries: tuple[Query, ...]
    #: (out_dir, scale, seed) -> Source; ``scale`` 1.0 is the default benchmark size
    generate: Callable[[Path, float, int], Source]
    #: (spark, JSON Lines paths) -> the typed, flattened relational frame of the same documents
    relational: Callable[["SparkSession", Sequence[str]], "DataFrame"]
    #: the JSON paths every query touches (for the report: what the shredder must get right)
    paths: tuple[str, ...] = ()
