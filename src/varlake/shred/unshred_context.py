"""State shared by every level of one batch's unshredding: the rows' metadata and where we are.

Object levels need each shredded key's field id in every row's metadata; rows usually
share a handful of distinct metadata dictionaries, so ids are looked up once per
distinct dictionary and gathered per row, or given as one number when every
dictionary of the batch agrees.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.errors import InvalidShreddedLayoutError, VariantError
from varlake.variant.decoder import metadata_view

__all__ = ["NULL_VARIANT", "ReconstructContext", "children_by_name"]

NULL_VARIANT = b"\x00"


@functools.lru_cache(maxsize=4096)
def _keymap(metadata: bytes) -> dict[str, int]:
    """``key -> field id`` of a metadata dictionary (the first id of a repeated key), parsed
    once per process: batches and files share a handful of dictionaries. Read only."""
    km: dict[str, int] = {}
    for i, k in enumerate(metadata_view(metadata).keys()):
        km.setdefault(k, i)
    return km


@dataclass
class ReconstructContext:
    """Per-batch state shared by all levels: the rows' metadata and where we are (for errors)."""

    metadata: pa.Array
    where: str = "Variant column"
    row_offset: int = 0
    _codes: np.ndarray | None = field(default=None, repr=False)
    _distinct: list[bytes] = field(default_factory=list, repr=False)
    _keymaps: list[dict[str, int]] | None = field(default=None, repr=False)
    _key_ids: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _rows_codes: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def error(self, row: int, path: str, message: str) -> InvalidShreddedLayoutError:
        return InvalidShreddedLayoutError(f"{self.where}, row {self.row_offset + int(row)}, path {path}: {message}")

    def _encode(self) -> None:
        if self._codes is not None:
            return
        enc = pc.dictionary_encode(self.metadata)
        self._codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        self._distinct = enc.dictionary.to_pylist()

    def keymap(self, code: int) -> dict[str, int]:
        """``key -> field id`` of one distinct metadata dictionary."""
        if self._keymaps is None:
            self._encode()
            self._keymaps = [None] * len(self._distinct)  # type: ignore[list-item]
        km = self._keymaps[code]
        if km is None:
            try:
                km = _keymap(self._distinct[code])
            except (VariantError, UnicodeDecodeError) as exc:
                row = int(np.flatnonzero(self._codes == code)[0])  # type: ignore[operator]
                raise self.error(row, "$", f"invalid Variant metadata ({exc})") from None
            self._keymaps[code] = km
        return km

    def distinct(self) -> list[bytes]:
        """The batch's distinct metadata dictionaries (``codes()`` indexes them)."""
        self._encode()
        return self._distinct

    def codes(self) -> np.ndarray:
        self._encode()
        return self._codes  # type: ignore[return-value]

    def _table(self, key: str) -> np.ndarray:
        table = self._key_ids.get(key)
        if table is None:
            self._encode()
            table = np.array([self.keymap(c).get(key, -1) for c in range(len(self._distinct))], dtype=np.int64)
            self._key_ids[key] = table
        return table

    def key_ids(self, key: str, rows: np.ndarray) -> np.ndarray:
        """Field id of ``key`` in the metadata of each of ``rows`` (-1 where absent)."""
        table = self._table(key)
        if len(table) == 0:
            return np.full(len(rows), -1, dtype=np.int64)
        return table[self.row_codes(rows)]

    def row_codes(self, rows: np.ndarray) -> np.ndarray:
        """``codes()`` at ``rows`` (the last rows asked for are remembered: a level's fields
        all ask for the same rows)."""
        cached = self._rows_codes
        if cached is not None and cached[0] is rows:
            return cached[1]
        codes = self.codes()[rows]
        self._rows_codes = (rows, codes)
        return codes

    def shared_key_id(self, key: str) -> int | None:
        """The field id of ``key`` when every row of the batch has it under the same id."""
        table = self._table(key)  # one entry per distinct metadata of the batch (each is used)
        if len(table) == 0:
            return None
        first = int(table[0])
        return first if first >= 0 and bool((table == first).all()) else None

    def metadata_bytes(self, row: int) -> bytes:
        self._encode()
        return self._distinct[int(self.codes()[row])]


def children_by_name(group: pa.Array | None) -> dict[str, pa.Array]:
    """Children of a struct array with the struct's own nulls pushed down into them."""
    if group is None:
        return {}
    if pa.types.is_dictionary(group.type):
        group = group.dictionary_decode()
    names = [group.type.field(i).name for i in range(group.type.num_fields)]
    return dict(zip(names, group.flatten()))
