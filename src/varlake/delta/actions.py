"""Delta log actions as frozen dataclasses, with their JSON form (PROTOCOL.md "Actions").

Each action class has ``to_dict()`` (the JSON body under its action key),
``from_dict(body, where)`` (validating, raising ``CorruptCommitError`` naming
``where``); ``action_to_json`` gives one log line and ``commit_file.parse_commit``
turns a whole commit file into actions.

Every integer field must fit Delta's ``long`` (``int`` for protocol versions and deletion
vector offsets/sizes) and is refused at parse time otherwise, naming the field, so nothing
downstream (Arrow columns, checkpoints) can overflow.

Unknown *fields* inside known actions are ignored, as PROTOCOL.md requires. Unknown
*actions* raise ``UnknownActionError``, except the spec'd ones listed in
``constants.IGNORED_ACTIONS`` that cannot change a snapshot (``cdc``,
``checkpointMetadata``, ``sidecar``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Union

from varlake.delta import constants as C
from varlake.delta.json_fields import compact as _compact
from varlake.delta.json_fields import LONG_MAX
from varlake.delta.json_fields import get_field as _get
from varlake.delta.json_fields import get_long as _long
from varlake.delta.json_fields import get_str_map as _str_map
from varlake.delta.json_fields import load_json
from varlake.errors import CorruptCommitError, CorruptLogError

__all__ = [
    "Action",
    "AddFile",
    "CommitInfo",
    "DomainMetadata",
    "Metadata",
    "Protocol",
    "RemoveFile",
    "Txn",
    "ACTIONS_BY_NAME",
    "action_name",
    "action_to_json",
    "dv_unique_id",
]


def dv_unique_id(dv: Mapping[str, Any] | None) -> str | None:
    """The ``uniqueId`` of a deletion vector descriptor (PROTOCOL.md "Derived Fields")."""
    if dv is None:
        return None
    base = f"{dv.get('storageType', '')}{dv.get('pathOrInlineDv', '')}"
    offset = dv.get("offset")
    return base if offset is None else f"{base}@{offset}"


def _deletion_vector(body: Mapping[str, Any], where: str) -> dict[str, Any] | None:
    """The ``deletionVector`` descriptor, its fields type- and range-checked (PROTOCOL.md
    "Deletion Vector Descriptor Schema"); unknown fields are kept."""
    dv = _get(body, "deletionVector", dict, where, None)
    if dv is None:
        return None
    try:
        _get(dv, "storageType", str, where)
        _get(dv, "pathOrInlineDv", str, where)
        _long(dv, "offset", where, None, bits=32)
        _long(dv, "sizeInBytes", where, bits=32)
        _long(dv, "cardinality", where)
        _long(dv, "maxRowIndex", where, None)
    except CorruptCommitError as exc:
        raise CorruptCommitError(f"deletionVector: {exc.reason}", where) from None
    return dv


@dataclass(frozen=True)
class Protocol:
    """``protocol``: the reader/writer versions and table features a client needs."""

    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    writer_features: tuple[str, ...] | None = None

    @property
    def reader_feature_set(self) -> frozenset[str]:
        """Reader features with ``-preview`` spellings folded to their feature."""
        return frozenset(C.canonical_feature(f) for f in self.reader_features or ())

    @property
    def writer_feature_set(self) -> frozenset[str]:
        """Writer features with ``-preview`` spellings folded to their feature."""
        return frozenset(C.canonical_feature(f) for f in self.writer_features or ())

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "minReaderVersion": self.min_reader_version,
            "minWriterVersion": self.min_writer_version,
        }
        if self.reader_features is not None:
            body["readerFeatures"] = list(self.reader_features)
        if self.writer_features is not None:
            body["writerFeatures"] = list(self.writer_features)
        return body

    @classmethod
    def from_dict(cls, body: Mapping[str, Any], where: str) -> Protocol:
        def features(key: str) -> tuple[str, ...] | None:
            value = body.get(key)
            if value is None:
                return None
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise CorruptCommitError(f"protocol field {key!r} must be a list of strings", where)
            return tuple(value)

        return cls(
            _long(body, "minReaderVersion", where, bits=32),
            _long(body, "minWriterVersion", where, bits=32),
            features("readerFeatures"),
            features("writerFeatures"),
        )


@dataclass(frozen=True)
class Metadata:
    """``metaData``: table id, schema string, partition columns and properties."""

    id: str
    schema_string: str
    partition_columns: tuple[str, ...] = ()
    configuration: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None
    description: str | None = None
    format_provider: str = "parquet"
    format_options: Mapping[str, str] = field(default_factory=dict)
    created_time: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return _compact(
            {
                "id": self.id,
                "name": self.name,
                "description": self.description,
                "format": {"provider": self.format_provider, "options": dict(self.format_options)},
                "schemaString": self.schema_string,
                "partitionColumns": list(self.partition_columns),
                "configuration": dict(self.configuration),
                "createdTime": self.created_time,
            }
        )

    @classmethod
    def from_dict(cls, body: Mapping[str, Any], where: str) -> Metadata:
        fmt = _get(body, "format", dict, where, {"provider": "parquet"})
        cols = _get(body, "partitionColumns", list, where, [])
        if not all(isinstance(c, str) for c in cols):
            raise CorruptCommitError("metaData.partitionColumns must be a list of strings", where)
        return cls(
            id=_get(body, "id", str, where),
            schema_string=_get(body, "schemaString", str, where),
            partition_columns=tuple(cols),
            configuration=_str_map(body, "configuration", where, {}),
            name=_get(body, "name", str, where, None),
            description=_get(body, "description", str, where, None),
            format_provider=_get(fmt, "provider", str, where, "parquet"),
            format_options=_str_map(fmt, "options", where, {}),
            created_time=_get(body, "createdTime", int, where, None),
        )


@dataclass(frozen=True)
class AddFile:
    """``add``: a logical file (data file path + optional deletion vector) in the table.

    ``path`` is kept exactly as logged (a URI-encoded relative or absolute path);
    ``stats`` is the raw JSON string and ``parsed_stats`` its parsed dict.
    """

    path: str
    size: int
    partition_values: Mapping[str, str | None] = field(default_factory=dict)
    modification_time: int = 0
    data_change: bool = True
    stats: str | None = None
    tags: Mapping[str, str | None] | None = None
    deletion_vector: Mapping[str, Any] | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    clustering_provider: str | None = None

    @property
    def key(self) -> tuple[str, str | None]:
        """The logical-file primary key ``(path, deletionVector.uniqueId)``."""
        return (self.path, dv_unique_id(self.deletion_vector))

    @cached_property
    def parsed_stats(self) -> dict[str, Any]:
        """``stats`` parsed (``{}`` when the file has none)."""
        if self.stats is None:
            return {}
        value = load_json(self.stats, f"stats of file {self.path!r}", "add.stats", CorruptLogError)
        if not isinstance(value, dict):
            raise CorruptLogError(f"stats of file {self.path!r} are not a JSON object")
        return value

    @property
    def num_records(self) -> int | None:
        """``stats.numRecords`` if logged."""
        value = self.parsed_stats.get("numRecords")
        return value if type(value) is int and 0 <= value <= LONG_MAX else None

    def remove(self, deletion_timestamp: int, data_change: bool = True) -> RemoveFile:
        """The ``remove`` that retires this logical file (keeps partition values and size)."""
        return RemoveFile(
            path=self.path,
            deletion_timestamp=deletion_timestamp,
            data_change=data_change,
            extended_file_metadata=True,
            partition_values=self.partition_values,
            size=self.size,
            stats=self.stats,
            tags=self.tags,
            deletion_vector=self.deletion_vector,
            base_row_id=self.base_row_id,
            default_row_commit_version=self.default_row_commit_version,
        )

    def to_dict(self) -> dict[str, Any]:
        return _compact(
            {
                "path": self.path,
                "partitionValues": dict(self.partition_values),
                "size": self.size,
                "modificationTime": self.modification_time,
                "dataChange": self.data_change,
                "stats": self.stats,
                "tags": dict(self.tags) if self.tags is not None else None,
                "deletionVector": dict(self.deletion_vector) if self.deletion_vector is not None else None,
                "baseRowId": self.base_row_id,
                "defaultRowCommitVersion": self.default_row_commit_version,
                "clusteringProvider": self.clustering_provider,
            }
        )

    @classmethod
    def from_dict(cls, body: Mapping[str, Any], where: str) -> AddFile:
        stats = body.get("stats")
        if isinstance(stats, dict):  # tolerate writers that inline the object
            try:
                stats = json.dumps(stats, separators=(",", ":"))
            except (RecursionError, ValueError) as exc:
                raise CorruptCommitError(f"add.stats cannot be kept as JSON text: {type(exc).__name__}", where) from None
        elif stats is not None and not isinstance(stats, str):
            raise CorruptCommitError("add.stats must be a JSON string", where)
        return cls(
            path=_get(body, "path", str, where),
            size=_get(body, "size", int, where),
            partition_values=_str_map(body, "partitionValues", where, {}),
            modification_time=_get(body, "modificationTime", int, where, 0),
            data_change=_get(body, "dataChange", bool, where, True),
            stats=stats,
            tags=_str_map(body, "tags", where, None),
            deletion_vector=_deletion_vector(body, where),
            base_row_id=_get(body, "baseRowId", int, where, None),
            default_row_commit_version=_get(body, "defaultRowCommitVersion", int, where, None),
            clustering_provider=_get(body, "clusteringProvider", str, where, None),
        )


@dataclass(frozen=True)
class RemoveFile:
    """``remove``: a tombstone for a logical file no longer in the table."""

    path: str
    deletion_timestamp: int | None = None
    data_change: bool = True
    extended_file_metadata: bool | None = None
    partition_values: Mapping[str, str | None] | None = None
    size: int | None = None
    stats: str | None = None
    tags: Mapping[str, str | None] | None = None
    deletion_vector: Mapping[str, Any] | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None

    @property
    def key(self) -> tuple[str, str | None]:
        """The logical-file primary key ``(path, deletionVector.uniqueId)``."""
        return (self.path, dv_unique_id(self.deletion_vector))

    def to_dict(self) -> dict[str, Any]:
        return _compact(
            {
                "path": self.path,
                "deletionTimestamp": self.deletion_timestamp,
                "dataChange": self.data_change,
                "extendedFileMetadata": self.extended_file_metadata,
                "partitionValues": dict(self.partition_values) if self.partition_values is not None else None,
                "size": self.size,
                "stats": self.stats,
                "tags": dict(self.tags) if self.tags is not None else None,
                "deletionVector": dict(self.deletion_vector) if self.deletion_vector is not None else None,
                "baseRowId": self.base_row_id,
                "defaultRowCommitVersion": self.default_row_commit_version,
            }
        )

    @classmethod
    def from_dict(cls, body: Mapping[str, Any], where: str) -> RemoveFile:
        stats = body.get("stats")
        return cls(
            path=_get(body, "path", str, where),
            deletion_timestamp=_get(body, "deletionTimestamp", int, where, None),
            data_change=_get(body, "dataChange", bool, where, True),
            extended_file_metadata=_get(body, "extendedFileMetadata", bool, where, None),
            partition_values=_str_map(body, "partitionValues", where, None),
            size=_get(body, "size", int, where, None),
            stats=stats if isinstance(stats, str) else None,
            tags=_str_map(body, "tags", where, None),
            deletion_vector=_deletion_vector(body, where),
            base_row_id=_get(body, "baseRowId", int, where, None),
            default_row_commit_version=_get(body, "defaultRowCommitVersion", int, where, None),
        )


@dataclass(frozen=True)
class Txn:
    """``txn``: the latest ``version`` an application (``app_id``) has committed."""

    app_id: str
    version: int
    last_updated: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return _compact({"appId": self.app_id, "version": self.version, "lastUpdated": self.last_updated})

    @classmethod
    def from_dict(cls, body: Mapping[str, Any], where: str) -> Txn:
        return cls(
            _get(body, "appId", str, where),
            _get(body, "version", int, where),
            _get(body, "lastUpdated", int, where, None),
        )


@dataclass(frozen=True)
class DomainMetadata:
    """``domainMetadata``: configuration of a named metadata domain (kept, not interpreted)."""

    domain: str
    configuration: str
    removed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"domain": self.domain, "configuration": self.configuration, "removed": self.removed}

    @classmethod
    def from_dict(cls, body: Mapping[str, Any], where: str) -> DomainMetadata:
        return cls(
            _get(body, "domain", str, where),
            _get(body, "configuration", str, where, ""),
            _get(body, "removed", bool, where, False),
        )


@dataclass(frozen=True)
class CommitInfo:
    """``commitInfo``: free-form provenance; ``values`` holds the whole JSON object."""

    values: Mapping[str, Any] = field(default_factory=dict)

    def _int(self, key: str) -> int | None:
        v = self.values.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    @property
    def timestamp(self) -> int | None:
        return self._int("timestamp")

    @property
    def in_commit_timestamp(self) -> int | None:
        return self._int("inCommitTimestamp")

    @property
    def read_version(self) -> int | None:
        return self._int("readVersion")

    @property
    def operation(self) -> str | None:
        v = self.values.get("operation")
        return v if isinstance(v, str) else None

    @property
    def operation_parameters(self) -> Mapping[str, Any]:
        v = self.values.get("operationParameters")
        return v if isinstance(v, dict) else {}

    def to_dict(self) -> dict[str, Any]:
        return dict(self.values)

    @classmethod
    def from_dict(cls, body: Mapping[str, Any], where: str) -> CommitInfo:
        if not isinstance(body, dict):
            raise CorruptCommitError("commitInfo must be a JSON object", where)
        return cls(body)


Action = Union[Protocol, Metadata, AddFile, RemoveFile, Txn, DomainMetadata, CommitInfo]

ACTIONS_BY_NAME: dict[str, Any] = {
    C.PROTOCOL: Protocol,
    C.METADATA: Metadata,
    C.ADD: AddFile,
    C.REMOVE: RemoveFile,
    C.TXN: Txn,
    C.DOMAIN_METADATA: DomainMetadata,
    C.COMMIT_INFO: CommitInfo,
}
_NAME_OF: dict[type, str] = {cls: name for name, cls in ACTIONS_BY_NAME.items()}


def action_name(action: Action) -> str:
    """The JSON key of ``action`` (``add``, ``metaData``, ...)."""
    return _NAME_OF[type(action)]


def action_to_json(action: Action) -> str:
    """One newline-free log line for ``action``: ``{"<name>": {...}}``."""
    return json.dumps({_NAME_OF[type(action)]: action.to_dict()}, separators=(",", ":"), ensure_ascii=False)
