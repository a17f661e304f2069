"""``.hoodie/hoodie.properties``: the table's configuration, as Hudi writes it.

The file is a Java properties file (``key=value`` lines, ``#`` comments, ``\\:`` and
``\\=`` escapes). ``HudiProperties`` names the settings a reader needs: the table type
and version, the timeline layout and folder, the record key, partition and ordering
fields, the key generator, how partition paths are written, and the base file format.
``check_readable`` refuses, by name, the features varlake does not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from varlake.errors import CorruptHudiTimelineError, TableNotFoundError, UnsupportedHudiFeatureError
from varlake.io.storage import Storage

__all__ = ["HOODIE_DIR", "HudiProperties", "load_properties", "parse_properties"]

HOODIE_DIR = ".hoodie"
PROPERTIES_FILE = "hoodie.properties"
COPY_ON_WRITE = "COPY_ON_WRITE"
MERGE_ON_READ = "MERGE_ON_READ"
READABLE_VERSIONS = range(6, 10)
READABLE_BASE_FORMATS = ("PARQUET",)

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """The ``key -> value`` pairs of a Java properties file (continuation lines joined)."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while line.endswith("\\") and not line.endswith("\\\\") and i < len(lines):
            line = line[:-1] + lines[i].lstrip()
            i += 1
        key_end = len(line)
        j = 0
        while j < len(line):
            if line[j] == "\\":
                j += 2
                continue
            if line[j] in "=: \t":
                key_end = j
                break
            j += 1
        key = line[:key_end]
        rest = line[key_end:].lstrip(" \t")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t")
        out[_unescape(key)] = _unescape(rest)
    return out


def _fields(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(f.strip() for f in value.split(",") if f.strip())


def _flag(value: str | None, default: bool) -> bool:
    if value is None or value == "":
        return default
    return value.strip().lower() == "true"


@dataclass(frozen=True)
class HudiProperties:
    """The settings of ``hoodie.properties`` a reader uses (``raw`` holds them all)."""

    raw: Mapping[str, str]

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.raw.get(key, default)

    @property
    def name(self) -> str:
        return self.raw.get("hoodie.table.name", "")

    @property
    def table_type(self) -> str:
        return self.raw.get("hoodie.table.type", COPY_ON_WRITE).upper()

    @property
    def is_mor(self) -> bool:
        return self.table_type == MERGE_ON_READ

    @property
    def version(self) -> int:
        text = self.raw.get("hoodie.table.version")
        try:
            return int(text) if text is not None else 6
        except ValueError:
            raise CorruptHudiTimelineError(f"hoodie.table.version is not a number: {text!r}") from None

    @property
    def timeline_layout(self) -> int:
        text = self.raw.get("hoodie.timeline.layout.version")
        if text is None:
            return 2 if self.version >= 8 else 1
        try:
            return int(text)
        except ValueError:
            raise CorruptHudiTimelineError(f"hoodie.timeline.layout.version is not a number: {text!r}") from None

    @property
    def timeline_folder(self) -> str:
        """The active timeline's folder below ``.hoodie`` ('' for layout 1)."""
        if self.timeline_layout < 2:
            return ""
        return self.raw.get("hoodie.timeline.path", "timeline")

    @property
    def history_folder(self) -> str:
        """Where instants leave the active timeline to: ``archived`` (layout 1) or the LSM
        history below the timeline folder (layout 2)."""
        if self.timeline_layout < 2:
            return self.raw.get("hoodie.archivelog.folder", "archived")
        return f"{self.timeline_folder}/{self.raw.get('hoodie.timeline.history.path', 'history')}"

    @property
    def record_key_fields(self) -> tuple[str, ...]:
        return _fields(self.raw.get("hoodie.table.recordkey.fields"))

    @property
    def partition_fields(self) -> tuple[str, ...]:
        """Partition fields, with any ``:type`` suffix (custom key generator) dropped."""
        return tuple(f.split(":", 1)[0] for f in _fields(self.raw.get("hoodie.table.partition.fields")))

    @property
    def ordering_fields(self) -> tuple[str, ...]:
        """The ordering (pre-combine) fields: the latest value wins when keys collide."""
        return _fields(self.raw.get("hoodie.table.ordering.fields") or self.raw.get("hoodie.table.precombine.field"))

    @property
    def key_generator(self) -> str:
        """The key generator's type: SIMPLE, COMPLEX, NON_PARTITION, TIMESTAMP, CUSTOM..."""
        kind = self.raw.get("hoodie.table.keygenerator.type")
        if kind:
            return kind.upper()
        cls = self.raw.get("hoodie.table.keygenerator.class", "")
        short = cls.rsplit(".", 1)[-1].replace("AvroKeyGenerator", "").replace("KeyGenerator", "")
        known = {"Simple": "SIMPLE", "Complex": "COMPLEX", "Nonpartitioned": "NON_PARTITION",
                 "Timestamp": "TIMESTAMP", "TimestampBased": "TIMESTAMP", "Custom": "CUSTOM"}
        return known.get(short, short.upper() or ("SIMPLE" if self.partition_fields else "NON_PARTITION"))

    @property
    def hive_style_partitioning(self) -> bool:
        return _flag(self.raw.get("hoodie.datasource.write.hive_style_partitioning"), False)

    @property
    def url_encoded_partitions(self) -> bool:
        return _flag(self.raw.get("hoodie.datasource.write.partitionpath.urlencode"), False)

    @property
    def drops_partition_columns(self) -> bool:
        return _flag(self.raw.get("hoodie.datasource.write.drop.partition.columns"), False)

    @property
    def populates_meta_fields(self) -> bool:
        return _flag(self.raw.get("hoodie.populate.meta.fields"), True)

    @property
    def base_file_format(self) -> str:
        return self.raw.get("hoodie.table.base.file.format", "PARQUET").upper()

    @property
    def merge_mode(self) -> str:
        return self.raw.get("hoodie.record.merge.mode", "").upper()

    def check_readable(self, where: str) -> None:
        """Refuse, by name, what varlake does not read (``UnsupportedHudiFeatureError``)."""
        if self.version not in READABLE_VERSIONS:
            raise UnsupportedHudiFeatureError(f"{where}: Hudi table version {self.version} (varlake reads 6 to 9)")
        if self.base_file_format not in READABLE_BASE_FORMATS:
            raise UnsupportedHudiFeatureError(
                f"{where}: {self.base_file_format} base files (hoodie.table.base.file.format); varlake reads Parquet base files"
            )
        if self.raw.get("hoodie.bootstrap.base.path"):
            raise UnsupportedHudiFeatureError(f"{where}: bootstrapped table (hoodie.bootstrap.base.path)")
        table_format = self.raw.get("hoodie.table.format", "native").lower()
        if table_format != "native":
            raise UnsupportedHudiFeatureError(f"{where}: hoodie.table.format={table_format}")


def load_properties(storage: Storage, root: str) -> HudiProperties:
    """``root``'s ``.hoodie/hoodie.properties`` (``TableNotFoundError`` when absent)."""
    path = f"{root}/{HOODIE_DIR}/{PROPERTIES_FILE}"
    try:
        data = storage.read(path)
    except FileNotFoundError:
        raise TableNotFoundError(f"{root}: no Hudi table here ({HOODIE_DIR}/{PROPERTIES_FILE} missing)") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptHudiTimelineError(f"{path}: not UTF-8 text") from None
    return HudiProperties(MappingProxyType(parse_properties(text)))
