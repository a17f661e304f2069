"""``Snapshot``: one immutable, consistent version of a table.

A snapshot never changes; time travel returns a different ``Snapshot``. Files are
held as an Arrow table (``files_table``, schema ``file_table.ADD_SCHEMA``) and turned
into ``AddFile`` objects -- each with ``parsed_stats`` and ``partition_values`` -- only
when ``files`` is first read.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Mapping

import pyarrow as pa

from varlake.delta.actions import AddFile, DomainMetadata, Metadata, Protocol, RemoveFile
from varlake.delta.file_table import table_to_adds, table_to_removes
from varlake.delta.replay import TableState
from varlake.delta.schema import StructType, parse_schema, to_arrow_schema

__all__ = ["Snapshot"]


@dataclass(frozen=True, eq=False)
class Snapshot:
    """The table at ``version``: protocol, metadata, schema, live files, app versions."""

    root: str
    state: TableState
    timestamp: int  # commit timestamp of ``version`` in ms since the epoch (see history.py)

    @property
    def version(self) -> int:
        return self.state.version

    @property
    def protocol(self) -> Protocol:
        return self.state.protocol

    @property
    def metadata(self) -> Metadata:
        return self.state.metadata

    @property
    def table_id(self) -> str:
        return self.state.metadata.id

    @cached_property
    def schema(self) -> StructType:
        """The table schema (``variant`` columns included, at any depth)."""
        return parse_schema(self.state.metadata.schema_string, f"{self.root} metaData.schemaString")

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        """The schema in Arrow terms (a Variant is ``struct<metadata, value>``)."""
        return to_arrow_schema(self.schema)

    @property
    def partition_columns(self) -> tuple[str, ...]:
        return tuple(self.state.metadata.partition_columns)

    @cached_property
    def properties(self) -> Mapping[str, str]:
        """Table properties (``metaData.configuration``), read-only."""
        return MappingProxyType(dict(self.state.metadata.configuration))

    @property
    def files_table(self) -> pa.Table:
        """Live files as Arrow (one row per ``add``; ``stats`` as JSON text)."""
        return self.state.adds

    @property
    def num_files(self) -> int:
        return self.state.adds.num_rows

    @cached_property
    def files(self) -> tuple[AddFile, ...]:
        """Live files as ``AddFile`` objects (``parsed_stats`` gives the stats dict)."""
        return tuple(table_to_adds(self.state.adds))

    @cached_property
    def tombstones(self) -> tuple[RemoveFile, ...]:
        """Removed logical files still kept as tombstones (for vacuum)."""
        return tuple(table_to_removes(self.state.removes))

    @cached_property
    def app_versions(self) -> Mapping[str, int]:
        """Latest committed ``txn`` version per application id."""
        return MappingProxyType({app: t.version for app, t in self.state.txns.items()})

    def app_version(self, app_id: str) -> int | None:
        """The latest ``txn`` version ``app_id`` committed, or ``None``."""
        txn = self.state.txns.get(app_id)
        return txn.version if txn is not None else None

    @cached_property
    def domains(self) -> Mapping[str, DomainMetadata]:
        """Live metadata domains (kept and rewritten into checkpoints, not interpreted)."""
        return MappingProxyType(dict(self.state.domains))

    def __repr__(self) -> str:
        return f"Snapshot(root={self.root!r}, version={self.version}, files={self.num_files})"
