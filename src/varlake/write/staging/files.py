"""Data files -> ``add`` actions: where a new file goes, and its ``AddFile`` with Delta
statistics and its layout facts (the ``varlake.layout`` tags, ``io.layout_tag``, so that
planners need not read the footer) read from its Parquet footer, size and time from the writer
(else from ``Storage``).

Both engines use it: ``Table`` for the files varlake's Parquet writer made, the Spark
writer for the files Spark's made (on the executors when there are many).
"""

from __future__ import annotations

import json
import unicodedata
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from varlake.delta import config
from varlake.delta.actions import AddFile
from varlake.delta.schema import StructType, parse_schema
from varlake.delta.stats import stats_json
from varlake.io.date_leaves import ReadColumns
from varlake.io.layout_tag import layout_tags
from varlake.io.storage import Storage
from varlake.semantics import partition_values

__all__ = [
    "NUM_INDEXED_COLS",
    "FileFacts",
    "add_action",
    "file_facts",
    "new_data_file",
    "num_indexed_cols",
    "stats_for",
]

NUM_INDEXED_COLS = config.PROP_NUM_INDEXED_COLS
#: relative path, size, mtime ms, rows, stats JSON, the ``add.tags`` of its layout as a JSON object
#: (``io.layout_tag``; text, so that executors can send it back as a string column)
FileFacts = tuple[str, int, int, int, str, str | None]


def num_indexed_cols(properties: Mapping[str, str]) -> int:
    """``delta.dataSkippingNumIndexedCols`` (default 32); a bad value is a named error."""
    return config.num_indexed_cols(properties)


def new_data_file(root: str, partition_columns: Sequence[str], texts: Sequence[str | None]) -> str:
    """A fresh data file's path relative to ``root``: ``col=value/.../part-<uuid>.c000.zstd.parquet``
    (checked to stay inside the root)."""
    name = f"part-{uuid.uuid4()}.c000.zstd.parquet"
    folder = partition_values.directory(partition_columns, texts)
    relative = f"{folder}/{name}" if folder else name
    partition_values.inside_root(root, relative, "new data file")
    return relative


def file_facts(
    storage: Storage,
    items: Iterable[tuple[str, str]],
    schema_json: str,
    indexed: int,
    footers: Mapping[str, Any] | None = None,
    known: Mapping[str, tuple[int, int]] | None = None,
) -> Iterator[FileFacts]:
    """Size, mtime, row count, Delta stats and layout tags of each ``(relative, storage path)`` file.

    Size and time come from ``known`` (``relative -> (size, mtime ms)``: the writer knows the
    bytes it put, and takes the time from its clock as delta-rs and Delta Spark do; no request)
    or else from ``storage.info``; the footer from ``footers`` (already at hand)
    or read through ``storage.open_read``, and so do the values of the string leaves whose
    footer bounds are ISO dates (``io.date_leaves``, for the tags). Runs on the driver or,
    through an RDD, on executors.
    """
    import pyarrow.parquet as pq

    schema = parse_schema(schema_json)
    for relative, path in items:
        facts = (known or {}).get(relative)
        if facts is None:
            info = storage.info(path)
            facts = (info.size, info.mtime_ms)
        size, mtime = facts
        meta = (footers or {}).get(relative)
        if meta is None:
            with storage.open_read(path) as handle:
                meta = pq.read_metadata(handle)
        # from the same footer (no second read); string leaves whose bounds are ISO dates are read
        tags = layout_tags(meta, path, _columns_of(storage, path))
        stats = stats_json(meta, schema, indexed)
        yield relative, size, mtime, meta.num_rows, stats, json.dumps(tags) if tags else None


def _columns_of(storage: Storage, path: str) -> ReadColumns:
    """Reads named leaf columns of the data file at ``path`` (``io.date_leaves``)."""

    def read(columns: list[str]) -> Iterator[Any]:
        import pyarrow.parquet as pq

        with storage.open_read(path) as handle:
            parquet = pq.ParquetFile(handle)
            for group in range(parquet.num_row_groups):
                yield parquet.read_row_group(group, columns=columns)

    return read


#: Characters a logged path keeps as they are: those a URI path allows that Hadoop's
#: ``Path.toUri`` leaves alone (``=`` of partition directories above all); non-ASCII letters
#: stay too (``logged_path``). ``quote``'s default escaped ``=`` as ``%3D`` and ``ü`` as
#: ``%C3%BC``: the same URI, but delta-spark's VACUUM compares the text with the files it
#: lists and deleted every such live file (issue 31).
PATH_SAFE = "/!$&'()*+,;=@"


def logged_path(relative: str) -> str:
    """A data file's relative path as Delta (Hadoop's ``Path.toUri().toString()``) logs it:
    URI-quoted, but ``=`` and the other ``PATH_SAFE`` characters, and non-ASCII characters
    other than spaces and controls, as they are."""
    out = []
    for ch in relative:
        if ord(ch) > 127 and unicodedata.category(ch) not in ("Cc", "Cf", "Zs", "Zl", "Zp", "Cs"):
            out.append(ch)
        else:
            out.append(quote(ch, safe=PATH_SAFE))
    return "".join(out)


def add_action(facts: FileFacts | tuple[str, int, int, int, str], values: Mapping[str, str | None]) -> AddFile:
    """The ``add`` of a new data file (its relative path URI-quoted, as Delta logs paths),
    its layout facts under ``tags`` (``io.layout_tag``) when ``facts`` carry them."""
    relative, size, mtime, _rows, stats = facts[:5]
    tags = json.loads(facts[5]) if len(facts) > 5 and facts[5] else None
    return AddFile(
        path=logged_path(relative),
        size=size,
        partition_values=dict(values),
        modification_time=mtime,
        data_change=True,
        stats=stats,
        tags=tags,
    )


def stats_for(storage: Storage, root: str, relative: str, schema: StructType, indexed: int) -> str:
    """Delta stats of the data file at ``relative`` in the table at ``root``."""
    (facts,) = file_facts(storage, [(relative, f"{root}/{relative}")], schema.to_schema_string(), indexed)
    return facts[4]
