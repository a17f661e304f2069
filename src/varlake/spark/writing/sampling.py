"""Sample input lines on the driver, before the ingest's one Spark pass.

The shredding schema of an ingest must be known before Spark writes a single file, and
a Spark ``sample`` would scan (and parse) the whole input once more just to pick a few
thousand lines. Instead the driver reads a few lines straight from the files: spread over
the files (every file when there are fewer files than wanted lines, else evenly spaced
ones) and, in uncompressed files, over the file too (lines taken after evenly spaced byte
offsets), so a schema learnt from the sample sees the variety of the whole input.

Compressed files are read from their start with Python's codec (gzip, bzip2, xz,
deflate); codecs Python lacks (snappy, lz4, zstd) are sampled by Spark with a ``limit``,
which reads only the first split it needs. Sampling is best effort: a file that cannot
be read here (truncated, vanished) just gives fewer lines, and the ingest's Spark job
reports the real error.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import math
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

__all__ = ["PYTHON_CODECS", "sample_lines"]

CHUNKS_PER_FILE = 8


def _deflate(path: str) -> IO[bytes]:
    """Hadoop's ``.deflate`` codec is a zlib stream."""
    with open(path, "rb") as f:
        data = zlib.decompressobj().decompress(f.read(1 << 22))
    return io.BytesIO(data)


PYTHON_CODECS: dict[str, Callable[[str], IO[bytes]]] = {
    ".gz": lambda p: gzip.open(p, "rb"),
    ".bz2": lambda p: bz2.open(p, "rb"),
    ".xz": lambda p: lzma.open(p, "rb"),
    ".deflate": _deflate,
}
SPARK_ONLY_CODECS = (".snappy", ".lz4", ".zst", ".zstd", ".br")


def _strip(line: bytes) -> bytes:
    """A line without its separator (Spark's text source drops ``\\n``, ``\\r\\n`` and ``\\r``)."""
    return line.rstrip(b"\n").rstrip(b"\r")


def _head(stream: IO[bytes], count: int) -> Iterator[bytes]:
    for _ in range(count):
        line = stream.readline()
        if not line:
            return
        yield _strip(line)


def _spread(path: str, count: int) -> list[bytes]:
    """About ``count`` lines of an uncompressed file: the file is cut into equal byte
    ranges and each gives the first lines that start inside it (so none is taken twice)."""
    size = os.path.getsize(path)
    chunks = max(1, min(CHUNKS_PER_FILE, count))
    per_chunk = math.ceil(count / chunks)
    out: list[bytes] = []
    with open(path, "rb") as f:
        for k in range(chunks):
            start, end = size * k // chunks, size * (k + 1) // chunks
            f.seek(max(start - 1, 0))
            if start and f.read(1) != b"\n":
                f.readline()  # a line that started in the previous range
            taken = 0
            while taken < per_chunk and f.tell() < end:
                line = f.readline()
                if not line:
                    break
                out.append(_strip(line))
                taken += 1
    return out


def _file_lines(path: str, count: int, whole: bool) -> list[bytes] | None:
    """Lines of one file, or None when only Spark can decode it."""
    lower = path.lower()
    if lower.endswith(SPARK_ONLY_CODECS):
        return None
    opener = next((o for ext, o in PYTHON_CODECS.items() if lower.endswith(ext)), None)
    try:
        if whole:
            with (opener(path) if opener else open(path, "rb")) as f:
                return [f.read()]
        if opener is None:
            return _spread(path, count)
        with opener(path) as f:
            return list(_head(f, count))
    except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError):
        return []  # unreadable here: the Spark job will say why


def sample_lines(
    files: Sequence[str], rows: int, *, whole_files: bool = False, spark_reader: Callable[[list[str], int], list[bytes]] | None = None
) -> list[bytes]:
    """About ``rows`` raw input lines (whole documents with ``whole_files``) from ``files``.

    ``spark_reader(files, n)`` reads up to ``n`` lines of files whose codec Python lacks.
    """
    if not files or rows <= 0:
        return []
    if len(files) > rows:
        step = len(files) / rows
        picked = [files[int(i * step)] for i in range(rows)]
    else:
        picked = list(files)
    per_file = 1 if whole_files else max(1, math.ceil(rows / len(picked)))
    out: list[bytes] = []
    spark_files: list[str] = []
    for path in picked:
        lines = _file_lines(path, per_file, whole_files)
        if lines is None:
            spark_files.append(path)
        else:
            out.extend(lines)
    if spark_files and spark_reader is not None:
        out.extend(spark_reader(spark_files, per_file * len(spark_files)))
    return out


def spark_line_reader(spark: Any, whole_files: bool, to_hadoop_path: Callable[[str], str]) -> Callable[[list[str], int], list[bytes]]:
    """A ``spark_reader`` for ``sample_lines``: the first lines Spark's text source gives."""

    def read(files: list[str], n: int) -> list[bytes]:
        from pyspark.sql import functions as F

        reader = spark.read.format("text")
        if whole_files:
            reader = reader.option("wholetext", "true")
        try:
            rows = reader.load([to_hadoop_path(f) for f in files]).select(F.col("value").cast("binary")).limit(n).collect()
        except Exception:  # best effort, as for the files read in Python
            return []
        return [bytes(r[0]) for r in rows]

    return read
