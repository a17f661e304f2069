"""Hudi log files: the blocks of a merge-on-read file slice, framed as Hudi writes them.

A log file (``.<fileId>_<instant>.log.<version>_<writeToken>``) is a sequence of blocks.
Each block (log format version 1, every Hudi release since 0.4) is, big-endian::

    "#HUDI#"                      magic
    int64   block size            bytes after this field up to the end of the block
    int32   log format version    1
    int32   block type            0 command, 1 delete, 2 corrupt, 3 Avro data, 4 HFile data,
                                  5 Parquet data, 6 CDC data
    header  int32 count, then count x (int32 key, int32 length, UTF-8 value)
    int64   content length, then the content (decoded by ``hudi.log_blocks``)
    footer  same layout as the header
    int64   total block length    block size + 6 (the magic)

A block whose size runs past the end of the file, whose trailing length disagrees with
its size, or that is not followed by the next magic (or the end of the file) was cut
short by a crashed writer: like Hudi's ``HoodieLogFileReader`` the reader then skips to
the next magic and reports a ``CORRUPT`` block, which merging ignores. Anything else that
does not parse raises ``HudiLogFormatError`` naming the file and byte offset.

Parsing frames blocks and reads their headers only; contents are decoded on demand
(``log_blocks.decode_data_block`` / ``decode_delete_block``), so blocks of instants that do
not count are never decoded.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from varlake.errors import HudiLogFormatError, HudiLogUnsupportedError
from varlake.io.storage import Storage

__all__ = [
    "MAGIC",
    "BlockType",
    "CommandType",
    "HeaderKey",
    "LogBlock",
    "LogFile",
    "LogFileName",
    "parse_log_file",
    "parse_log_file_name",
    "read_log_files",
]

MAGIC = b"#HUDI#"
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
# size field's own width is excluded from the block size; the trailing total includes the magic
_SIZE_WIDTH = 8
# version + type + header count + content length + footer count + total length
_MIN_BLOCK_SIZE = 4 + 4 + 4 + 8 + 4 + 8


class BlockType(IntEnum):
    """``HoodieLogBlockType`` by its ordinal."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class HeaderKey(IntEnum):
    """``HeaderMetadataType`` (also used for footers) by its ordinal."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


class CommandType(IntEnum):
    """``HoodieCommandBlockTypeEnum``: the only command Hudi writes is a rollback."""

    ROLLBACK = 0


_DATA_TYPES = frozenset({BlockType.AVRO_DATA, BlockType.HFILE_DATA, BlockType.PARQUET_DATA, BlockType.CDC_DATA})


@dataclass(frozen=True)
class LogBlock:
    """One framed block: its type, header and footer (keys are ``HeaderKey`` ordinals) and
    the raw content bytes; ``offset`` is the byte offset of its magic in ``file``."""

    file: str
    offset: int
    block_type: BlockType
    header: Mapping[int, str] = field(default_factory=dict)
    footer: Mapping[int, str] = field(default_factory=dict)
    content: bytes = b""

    @property
    def instant_time(self) -> str | None:
        """The instant that wrote the block (``None`` for a corrupt block)."""
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        """The instant a command block (a rollback) acts on."""
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema(self) -> str | None:
        """The writer's Avro schema (JSON text) of a data or delete block."""
        return self.header.get(HeaderKey.SCHEMA)

    @property
    def is_data(self) -> bool:
        return self.block_type in _DATA_TYPES

    @property
    def is_partial(self) -> bool:
        """Whether the block holds partial updates (only some columns of each record)."""
        return self.header.get(HeaderKey.IS_PARTIAL, "false").strip().lower() == "true"

    def command_type(self) -> CommandType:
        """The command of a command block; an unknown command raises ``HudiLogUnsupportedError``."""
        raw = self.header.get(HeaderKey.COMMAND_BLOCK_TYPE)
        try:
            return CommandType(int(raw)) if raw is not None else _missing_command(self)
        except ValueError:
            raise HudiLogUnsupportedError(
                f"{self.where()}: command block type {raw!r} (Hudi only writes rollbacks, 0)"
            ) from None

    def where(self) -> str:
        return f"{self.file} block at byte {self.offset}"


def _missing_command(block: LogBlock) -> CommandType:
    raise HudiLogFormatError(f"{block.where()}: command block without a command type header")


@dataclass(frozen=True)
class LogFile:
    """A parsed log file: its name (as given) and its blocks in file order."""

    name: str
    blocks: tuple[LogBlock, ...]


@dataclass(frozen=True, order=True)
class LogFileName:
    """The parts of a log file's name; instances sort as Hudi orders the log files of a
    file slice (instant, then version, then write token)."""

    instant: str
    version: int
    write_token: str
    file_id: str
    suffix: str = ""


_LOG_NAME = re.compile(r"\A\.(?P<fid>.+)_(?P<instant>[^_]+)\.log\.(?P<ver>\d+)(?:_(?P<token>[0-9]+-[0-9]+-[0-9]+))?(?P<suffix>[-.]cdc)?\Z")


def parse_log_file_name(name: str) -> LogFileName | None:
    """``LogFileName`` of a log file's base name, or ``None`` when ``name`` is not one."""
    m = _LOG_NAME.match(name.rsplit("/", 1)[-1])
    if m is None:
        return None
    return LogFileName(m["instant"], int(m["ver"]), m["token"] or "", m["fid"], m["suffix"] or "")


class _Cursor:
    """Bounds-checked big-endian reads over a byte string, raising ``HudiLogFormatError``."""

    __slots__ = ("data", "pos", "end", "file")

    def __init__(self, data: bytes, pos: int, end: int, file: str) -> None:
        self.data, self.pos, self.end, self.file = data, pos, end, file

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise HudiLogFormatError(
                f"{self.file}: {what} at byte {self.pos} needs {n} bytes, the block has {self.end - self.pos} left"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def i32(self, what: str) -> int:
        return int(_I32.unpack(self.take(4, what))[0])

    def i64(self, what: str) -> int:
        return int(_I64.unpack(self.take(8, what))[0])


def _read_metadata(cur: _Cursor, what: str) -> dict[int, str]:
    count = cur.i32(f"{what} entry count")
    if count < 0 or count * 8 > cur.end - cur.pos:
        raise HudiLogFormatError(f"{cur.file}: {what} claims {count} entries at byte {cur.pos - 4}")
    out: dict[int, str] = {}
    for _ in range(count):
        key = cur.i32(f"{what} key")
        length = cur.i32(f"{what} value length")
        raw = cur.take(length, f"{what} value")
        try:
            out[key] = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise HudiLogFormatError(f"{cur.file}: {what} value of key {key} is not UTF-8 (byte {cur.pos - length})") from None
    return out


def _block_is_corrupt(data: bytes, size_pos: int, size: int) -> bool:
    """Hudi's ``isBlockCorrupted``: the block runs past the end, its trailing length does
    not match, or the next bytes are neither the next magic nor the end of the file."""
    start = size_pos + _SIZE_WIDTH
    end = start + size
    if size < _MIN_BLOCK_SIZE or end > len(data):
        return True
    (trailing,) = _I64.unpack_from(data, end - 8)
    if trailing - len(MAGIC) != size:
        return True
    after = data[end : end + len(MAGIC)]
    return len(after) == len(MAGIC) and after != MAGIC


def parse_log_file(data: bytes, name: str = "<log file>") -> LogFile:
    """Frame the blocks of a log file's bytes (see the module docstring)."""
    data = bytes(data)
    blocks: list[LogBlock] = []
    pos = 0
    n = len(data)
    while n - pos >= len(MAGIC):
        if data[pos : pos + len(MAGIC)] != MAGIC:
            raise HudiLogFormatError(f"{name}: no log block magic {MAGIC!r} at byte {pos}")
        size_pos = pos + len(MAGIC)
        size = int(_I64.unpack_from(data, size_pos)[0]) if n - size_pos >= 8 else -1
        if _block_is_corrupt(data, size_pos, size):
            nxt = data.find(MAGIC, size_pos)
            end = n if nxt < 0 else nxt
            blocks.append(LogBlock(name, pos, BlockType.CORRUPT, content=data[size_pos:end]))
            pos = end
            continue
        end = size_pos + _SIZE_WIDTH + size
        blocks.append(_read_block(_Cursor(data, size_pos + _SIZE_WIDTH, end, name), pos))
        pos = end
    return LogFile(name, tuple(blocks))


def _read_block(cur: _Cursor, offset: int) -> LogBlock:
    version = cur.i32("log format version")
    if version != 1:
        if version == 0:
            raise HudiLogUnsupportedError(f"{cur.file}: log format version 0 (Hudi before 0.4) at byte {offset}")
        raise HudiLogFormatError(f"{cur.file}: log format version {version} at byte {offset}")
    raw_type = cur.i32("block type")
    try:
        block_type = BlockType(raw_type)
    except ValueError:
        raise HudiLogFormatError(f"{cur.file}: unknown block type {raw_type} at byte {offset}") from None
    header = _read_metadata(cur, "header")
    content_length = cur.i64("content length")
    content = cur.take(content_length, "block content")
    footer = _read_metadata(cur, "footer")
    cur.i64("total block length")
    if cur.pos != cur.end:
        raise HudiLogFormatError(f"{cur.file}: {cur.end - cur.pos} stray bytes at the end of the block at byte {offset}")
    if block_type != BlockType.CORRUPT and HeaderKey.INSTANT_TIME not in header:
        raise HudiLogFormatError(f"{cur.file}: block at byte {offset} has no instant time in its header")
    return LogBlock(cur.file, offset, block_type, header, footer, content)


def read_log_files(storage: Storage, paths: Sequence[str]) -> list[LogFile]:
    """Read and frame the log files at ``paths`` (as ``storage`` names them), each named by
    its path; ``merge_file_slice`` orders them."""
    return [parse_log_file(storage.read(p), p) for p in paths]
