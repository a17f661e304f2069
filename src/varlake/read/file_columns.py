"""What ``read.file_index`` decodes per file, done column-wise on the snapshot's Arrow
``add`` table when the files carry no deletion vector (the common case): the checked
relative paths, the groups of files by partition values, and ``AddFile`` objects built
only for the files a plan asks about.

Each answer equals the per-file one: a path is checked by ``delta.paths.relative_data_path``
unless it is plain (no ``%``, ``:``, ``\\``, ``.`` segment or empty segment, not absolute,
not under ``_delta_log``), when that check returns it unchanged; the first bad path in
file order raises, as before. A partition value is looked up in the ``partitionValues``
map as ``dict(map).get`` would (the last of repeated keys; absent and null told apart).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.delta.actions import AddFile
from varlake.delta.file_table import table_to_adds
from varlake.delta.paths import plain_paths, relative_data_path
from varlake.delta.snapshot import Snapshot

__all__ = ["LazyAdds", "partition_groups", "relative_paths"]

#: building every ``AddFile`` at once is cheaper per file than one by one beyond this share
_ALL_AT_ONCE = 0.05


class LazyAdds(Sequence[AddFile]):
    """The snapshot's ``AddFile``s by index, each built when first asked for (all at once,
    ``Snapshot.files``, once many are asked for or they already exist)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._table = snapshot.files_table
        self._built: dict[int, AddFile] = {}
        self._all: tuple[AddFile, ...] | None = snapshot.__dict__.get("files")

    def __len__(self) -> int:
        return self._table.num_rows

    def __getitem__(self, i: int) -> AddFile:  # type: ignore[override]
        if self._all is not None:
            return self._all[i]
        add = self._built.get(i)
        if add is None:
            if len(self._built) > _ALL_AT_ONCE * len(self):
                self._all = self._snapshot.files
                return self._all[i]
            add = self._built[i] = table_to_adds(self._table.slice(i, 1))[0]
        return add

    def prefetch(self, indexes: Sequence[int]) -> None:
        """Build the ``AddFile``s of ``indexes`` in one go (a plan's files, before their tasks)."""
        if self._all is not None:
            return
        wanted = [i for i in indexes if i not in self._built]
        if len(self._built) + len(wanted) > _ALL_AT_ONCE * len(self):
            self._all = self._snapshot.files
            return
        if wanted:
            for i, add in zip(wanted, table_to_adds(self._table.take(pa.array(wanted, pa.int64())))):
                self._built[i] = add

    def __iter__(self):  # type: ignore[no-untyped-def]
        if self._all is None:
            self._all = self._snapshot.files
        return iter(self._all)


def relative_paths(paths: pa.ChunkedArray, root_location: str) -> list[str]:
    """``relative_data_path`` of every logged path (errors as ``FileIndex`` raises them)."""
    out = paths.to_pylist()
    for i in np.flatnonzero(~plain_paths(paths)).tolist():
        path = out[i]
        out[i] = relative_data_path(path, root_location, f"add {path!r}")
    return out


def partition_groups(values: pa.ChunkedArray, keys: Sequence[str]) -> list[np.ndarray]:
    """File indexes (ascending) per distinct set of partition values ``keys`` (as the map
    names them), the groups in the order of their first file."""
    n = len(values)
    if n == 0:
        return []
    if not keys:
        return [np.arange(n, dtype=np.int64)]
    codes = np.empty((n, len(keys)), dtype=np.int64)
    radices = []
    for j, key in enumerate(keys):
        present = pc.is_valid(pc.map_lookup(values, key, "all")).to_numpy(zero_copy_only=False)
        found = pc.map_lookup(values, key, "last")
        encoded = found.combine_chunks().dictionary_encode() if isinstance(found, pa.ChunkedArray) else found.dictionary_encode()
        code = np.asarray(pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
        codes[:, j] = np.where(present, code, -2) + 2  # absent 0, null 1, values from 2
        radices.append(len(encoded.dictionary) + 2)
    if float(np.prod(np.array(radices, dtype=np.float64))) < 2.0**62:  # one integer per set of values
        packed = np.zeros(n, dtype=np.int64)
        for j, radix in enumerate(radices):
            packed = packed * radix + codes[:, j]
        _, first, inverse = np.unique(packed, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(codes, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    by_group = np.argsort(inverse, kind="stable")
    bounds = np.cumsum(np.bincount(inverse, minlength=len(first)))[:-1]
    groups = np.split(by_group, bounds)
    return [groups[g].astype(np.int64) for g in np.argsort(first, kind="stable").tolist()]
