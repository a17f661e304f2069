"""Logical hashes of Variant values, a column at a time, through the shredded form.

A Variant's hash is, in each of two independent 64-bit lanes, the sum (modulo 2**64) of one
term per node of its value tree: ``term(path, node)``, where ``path`` hashes the object
keys and array indices from the root and ``node`` is an object or array marker or the
canonical form of a primitive, with ``Variant.canonical``'s equivalence: exact numbers
meet as integers or normalised decimals (int8 ``1`` equals decimal ``1.00``), short and long
strings alike, everything else by ``Variant.canonical``. The (path, node) pairs determine
the value, so logically equal values hash alike and different ones differ but by 128-bit
chance; a sum does not depend on field order, field ids, offset widths or dictionaries.

Nor does it depend on how the value is shredded, so a column is first shredded (the
columnar shredder, ``shred.shred``) into a layout inferred from a sample of it: each typed
leaf is hashed as a whole column with numpy, and only what the layout leaves in residual
``value`` columns (and primitive types without a vectorised form) is walked in Python.
Every process computes the same hashes (no Python ``hash``; the layout does not matter).
"""

from __future__ import annotations

import hashlib
from decimal import Decimal
from struct import error as struct_error
from struct import unpack_from
from typing import Any

import numpy as np
import pyarrow as pa

from varlake.errors import ContentCheckError, VarlakeError
from varlake.shred.infer import infer_shredding_schema
from varlake.shred.layout import ArrayLayout, LeafKind, ObjectLayout, PrimitiveLayout, ValueLayout, recognise_layout
from varlake.shred.shred import shred
from varlake.shred.variant_arrays import primitive_bytes, validity
from varlake.variant import Variant
from varlake.variant import decoder as dec

__all__ = ["SAMPLE_ROWS", "variant_hashes"]

SAMPLE_ROWS = 1000  # rows the layout is inferred from (any layout gives the same hashes)

_M = (1 << 64) - 1
_U64 = np.uint64
_C1, _C2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_P_FIELD, _P_ITEM, _P_TERM = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_ROOT = (0x243F6A8885A308D3, 0x13198A2E03707344)
_OBJ = (0xA4093822299F31D0, 0x082EFA98EC4E6C89)
_ARR = (0x452821E638D01377, 0xBE5466CF34E90C6C)
_INT = (0xC0AC29B7C97C50DD, 0x3F84D5B5B5470917)
_NULL_ROW = (0x9216D5D98979FB1B, 0xD1310BA698DFB5AC)
_KEY_S = ("varlake-vstr-one", "varlake-vstr-two")  # pandas hash keys (16 characters)
_KEY_P = ("varlake-vprm-one", "varlake-vprm-two")
_INT_KINDS = {LeafKind.INT8, LeafKind.INT16, LeafKind.INT32, LeafKind.INT64}
_INT_WIDTHS = {3: 1, 4: 2, 5: 4, 6: 8}
_UINT_FORMATS = {1: "B", 2: "H", 4: "I"}
_LO, _HI = -(1 << 63), 1 << 63


def _mix(x: int) -> int:
    """splitmix64's finaliser on a Python int (``_mix_np`` on arrays: the same function)."""
    x ^= x >> 30
    x = (x * _C1) & _M
    x ^= x >> 27
    x = (x * _C2) & _M
    return x ^ (x >> 31)


def _mix_np(x: np.ndarray) -> np.ndarray:
    x = x ^ (x >> _U64(30))
    x = x * _U64(_C1)
    x = x ^ (x >> _U64(27))
    x = x * _U64(_C2)
    return x ^ (x >> _U64(31))


_KEY_HASHES: dict[bytes, tuple[int, int]] = {}


def _key_hash(key: bytes) -> tuple[int, int]:
    """Two 64-bit hashes of an object key's UTF-8 bytes."""
    found = _KEY_HASHES.get(key)
    if found is None:
        d = hashlib.blake2b(key, digest_size=16, person=b"varlake-key").digest()
        found = (int.from_bytes(d[:8], "little"), int.from_bytes(d[8:], "little"))
        if len(_KEY_HASHES) < 65536:
            _KEY_HASHES[key] = found
    return found


def _stable_canonical(c: Any) -> Any:
    """``Variant.canonical`` of a primitive made deterministic text-wise (numbers normalised)."""
    if isinstance(c, tuple) and len(c) == 2:
        family, value = c
        if isinstance(value, Decimal):
            value = int(value) if value == value.to_integral_value() else str(value.normalize())
        elif isinstance(value, float):
            value = repr(value) if value else "0.0"  # -0.0 == 0.0, as canonical forms compare
        return (str(family), value)
    return c


class _Emitted:
    """Nodes found in Python: per kind the rows, path hashes and payloads (hashed later in bulk)."""

    def __init__(self) -> None:
        self.rows: dict[str, list[int]] = {"i": [], "s": [], "p": [], "o": [], "a": []}
        self.p0: dict[str, list[int]] = {k: [] for k in self.rows}
        self.p1: dict[str, list[int]] = {k: [] for k in self.rows}
        self.payload: dict[str, list[Any]] = {"i": [], "s": [], "p": []}

    def add(self, kind: str, row: int, p0: int, p1: int, payload: Any = None) -> None:
        self.rows[kind].append(row)
        self.p0[kind].append(p0)
        self.p1[kind].append(p1)
        if kind in self.payload:
            self.payload[kind].append(payload)


class _Walker:
    """The Python walk of Variant bytes (residuals), emitting the same terms as the columns."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.keys: dict[bytes, list[tuple[int, int]]] = {}
        self.out = _Emitted()

    def key_hashes(self, metadata: bytes) -> list[tuple[int, int]]:
        found = self.keys.get(metadata)
        if found is None:
            view = dec.metadata_view(metadata)
            found = [_key_hash(view.key_bytes(i)) for i in range(view.size)]
            if len(self.keys) < 4096:
                self.keys[metadata] = found
        return found

    def value(self, row: int, metadata: bytes, value: bytes, p0: int, p1: int, fields_only: bool = False) -> None:
        """Emit the value (``fields_only``: only the fields of the object) at ``value[0:]``."""
        if not value or not metadata:
            raise ContentCheckError(f"{self.where}: row {row} has a null or empty Variant metadata or value")
        try:
            keys = self.key_hashes(metadata)
            if fields_only:
                self._fields(row, metadata, keys, value, 0, p0, p1)
            else:
                self._node(row, metadata, keys, value, 0, p0, p1)
        except (VarlakeError, IndexError, ValueError, struct_error, RecursionError) as exc:
            raise ContentCheckError(f"{self.where}: a Variant value cannot be decoded: {exc}") from None

    def _fields(self, row: int, metadata: bytes, keys: list[tuple[int, int]], value: bytes, pos: int, p0: int, p1: int) -> None:
        header = value[pos]
        vh = header >> 2
        osz, isz = (vh & 0x3) + 1, ((vh >> 2) & 0x3) + 1
        if (vh >> 4) & 1:
            n, at = int.from_bytes(value[pos + 1 : pos + 5], "little"), pos + 5
        else:
            n, at = value[pos + 1], pos + 2
        ids = _uints(value, at, n, isz)
        offs_at = at + n * isz
        offs = _uints(value, offs_at, n, osz)
        data = offs_at + (n + 1) * osz
        for i, o in zip(ids, offs):
            k0, k1 = keys[i]
            self._node(row, metadata, keys, value, data + o, _mix((p0 * _P_FIELD + k0) & _M), _mix((p1 * _P_FIELD + k1) & _M))

    def _node(self, row: int, metadata: bytes, keys: list[tuple[int, int]], value: bytes, pos: int, p0: int, p1: int) -> None:
        out = self.out
        header = value[pos]
        basic = header & 0x03
        if basic == 1:
            n = header >> 2
            out.add("s", row, p0, p1, value[pos + 1 : pos + 1 + n])
        elif basic == 2:
            out.add("o", row, p0, p1)
            self._fields(row, metadata, keys, value, pos, p0, p1)
        elif basic == 3:
            out.add("a", row, p0, p1)
            vh = header >> 2
            osz = (vh & 0x3) + 1
            if (vh >> 2) & 1:
                n, at = int.from_bytes(value[pos + 1 : pos + 5], "little"), pos + 5
            else:
                n, at = value[pos + 1], pos + 2
            data = at + (n + 1) * osz
            for i, o in enumerate(_uints(value, at, n, osz)):
                self._node(row, metadata, keys, value, data + o, _mix((p0 * _P_ITEM + i + 1) & _M), _mix((p1 * _P_ITEM + i + 1) & _M))
        else:
            self.primitive(row, metadata, value, pos, p0, p1)

    def primitive(self, row: int, metadata: bytes, value: bytes, pos: int, p0: int, p1: int) -> None:
        out = self.out
        t = value[pos] >> 2
        width = _INT_WIDTHS.get(t)
        if width is not None:
            if pos + 1 + width > len(value):
                raise IndexError(f"an integer runs past the end of the value at {pos}")
            out.add("i", row, p0, p1, int.from_bytes(value[pos + 1 : pos + 1 + width], "little", signed=True))
        elif t == 16:
            n = int.from_bytes(value[pos + 1 : pos + 5], "little")
            if pos + 5 + n > len(value):
                raise IndexError(f"a string runs past the end of the value at {pos}")
            out.add("s", row, p0, p1, value[pos + 5 : pos + 5 + n])
        elif t in (0, 1, 2):
            out.add("p", row, p0, p1, b"NTF"[t : t + 1])
        elif t in (8, 9, 10):
            unscaled, scale = dec.read_decimal(value, pos)
            whole, rest = divmod(unscaled, 10**scale)
            if rest:
                out.add("p", row, p0, p1, b"E" + str(Decimal(unscaled).scaleb(-scale).normalize()).encode())
            elif _LO <= whole < _HI:
                out.add("i", row, p0, p1, whole)
            else:
                out.add("p", row, p0, p1, b"I%d" % whole)
        else:
            end = pos + dec.value_size(value, pos)
            if end > len(value):
                raise IndexError(f"a value runs past the end at {pos}")
            sub = Variant(metadata, value[pos:end])
            out.add("p", row, p0, p1, b"P" + repr(_stable_canonical(sub.canonical())).encode("utf-8", "surrogatepass"))


def _uints(value: bytes, at: int, n: int, size: int) -> Any:
    """``n`` little-endian unsigned integers of ``size`` bytes from ``at`` (bounds checked)."""
    end = at + n * size
    if end > len(value):
        raise IndexError(f"{n} integers of {size} bytes at {at} run past the end of the value")
    if size == 1:
        return value[at:end]
    fmt = _UINT_FORMATS.get(size)
    if fmt is not None:
        return unpack_from(f"<{n}{fmt}", value, at)
    return [int.from_bytes(value[at + k * size : at + (k + 1) * size], "little") for k in range(n)]


def _bytes_hashes(values: np.ndarray, keys: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    from pandas.util import hash_array

    return (
        hash_array(values, hash_key=keys[0], categorize=False),
        hash_array(values, hash_key=keys[1], categorize=False),
    )


def _int_hashes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u = values.astype(np.int64, copy=False).view(_U64)
    return _mix_np(u ^ _U64(_INT[0])), _mix_np(u ^ _U64(_INT[1]))


class _Columns:
    """The vectorised walk of a shredded Variant column, adding each node's term to its row."""

    def __init__(self, n: int, metadata: pa.Array, where: str) -> None:
        self.acc = (np.zeros(n, dtype=_U64), np.zeros(n, dtype=_U64))
        self.metadata = metadata
        self._metas: list[bytes] | None = None
        self.walker = _Walker(where)
        self.where = where

    def metas(self) -> list[bytes]:
        if self._metas is None:
            self._metas = self.metadata.to_pylist()
        return self._metas

    def add(self, rows: np.ndarray, ph: tuple[np.ndarray, np.ndarray], dh: tuple[Any, Any], unique: bool) -> None:
        for lane in (0, 1):
            d = dh[lane] if isinstance(dh[lane], np.ndarray) else _U64(dh[lane])
            term = _mix_np(ph[lane] * _U64(_P_TERM) + d)
            if unique:
                self.acc[lane][rows] += term
            else:
                np.add.at(self.acc[lane], rows, term)

    def python(self, rows: np.ndarray, ph: tuple[np.ndarray, np.ndarray], values: pa.Array, fields_only: bool) -> None:
        """Walk ``values`` (Variant bytes, one per slot) in Python."""
        metas = self.metas()
        walk = self.walker.value
        for row, p0, p1, v in zip(rows.tolist(), ph[0].tolist(), ph[1].tolist(), values.to_pylist()):
            walk(row, metas[row], v, p0, p1, fields_only)

    def node(self, node: ValueLayout, value: pa.Array | None, typed: pa.Array | None, rows: np.ndarray,
             ph: tuple[np.ndarray, np.ndarray], sel: np.ndarray, unique: bool, null_if_missing: bool) -> None:  # fmt: skip
        vvalid = validity(value) & sel if value is not None else np.zeros(len(rows), dtype=bool)
        t = node.typed
        tvalid = validity(typed) & sel if t is not None and typed is not None else np.zeros(len(rows), dtype=bool)
        if tvalid.any():
            if isinstance(t, ObjectLayout):
                self._object(t, value, typed, rows, ph, tvalid, vvalid, unique)
            elif isinstance(t, ArrayLayout):
                self._array(t, typed, rows, ph, tvalid, unique)  # type: ignore[arg-type]
            else:
                self._primitive(t, typed, rows, ph, tvalid, unique)  # type: ignore[arg-type]
        rest = vvalid & ~tvalid
        if rest.any():
            idx = np.flatnonzero(rest)
            self.python(rows[idx], (ph[0][idx], ph[1][idx]), value.take(pa.array(idx)), False)  # type: ignore[union-attr]
        if null_if_missing:
            missing = sel & ~tvalid & ~vvalid
            if missing.any():
                idx = np.flatnonzero(missing)
                self.add(rows[idx], (ph[0][idx], ph[1][idx]), _NULL_VALUE, unique)

    def _object(self, t: ObjectLayout, value: pa.Array | None, typed: pa.Array, rows: np.ndarray,
                ph: tuple[np.ndarray, np.ndarray], obj: np.ndarray, vvalid: np.ndarray, unique: bool) -> None:  # fmt: skip
        idx = np.flatnonzero(obj)
        self.add(rows[idx], (ph[0][idx], ph[1][idx]), _OBJ, unique)
        partial = obj & vvalid
        if partial.any():  # residual fields next to the shredded ones
            pidx = np.flatnonzero(partial)
            self.python(rows[pidx], (ph[0][pidx], ph[1][pidx]), value.take(pa.array(pidx)), True)  # type: ignore[union-attr]
        kids = _children(typed)
        for key, layout in t.fields:
            k0, k1 = _key_hash(key.encode("utf-8"))
            child = (_mix_np(ph[0] * _U64(_P_FIELD) + _U64(k0)), _mix_np(ph[1] * _U64(_P_FIELD) + _U64(k1)))
            group = _children(kids.get(key))
            self.node(layout, group.get("value"), group.get("typed_value"), rows, child, obj, unique, False)

    def _array(self, t: ArrayLayout, typed: pa.Array, rows: np.ndarray, ph: tuple[np.ndarray, np.ndarray],
               arr: np.ndarray, unique: bool) -> None:  # fmt: skip
        idx = np.flatnonzero(arr)
        self.add(rows[idx], (ph[0][idx], ph[1][idx]), _ARR, unique)
        offsets = typed.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        starts = offsets[:-1][idx]
        counts = offsets[1:][idx] - starts
        total = int(counts.sum())
        if not total:
            return
        slot = np.repeat(idx, counts)
        first = np.repeat(np.cumsum(counts) - counts, counts)
        position = np.arange(total, dtype=np.int64) - first
        elements = typed.values.take(pa.array(np.repeat(starts, counts) + position))
        item = (position + 1).astype(_U64)
        eph = (_mix_np(ph[0][slot] * _U64(_P_ITEM) + item), _mix_np(ph[1][slot] * _U64(_P_ITEM) + item))
        kids = _children(elements)
        ones = np.ones(total, dtype=bool)
        self.node(t.element, kids.get("value"), kids.get("typed_value"), rows[slot], eph, ones, False, True)

    def _primitive(self, t: PrimitiveLayout, typed: pa.Array, rows: np.ndarray, ph: tuple[np.ndarray, np.ndarray],
                   prim: np.ndarray, unique: bool) -> None:  # fmt: skip
        if prim.all():
            values = typed
        else:
            idx = np.flatnonzero(prim)
            values = typed.take(pa.array(idx))
            rows, ph = rows[idx], (ph[0][idx], ph[1][idx])
        if pa.types.is_dictionary(values.type):
            values = values.dictionary_decode()
        if t.kind in _INT_KINDS:
            self.add(rows, ph, _int_hashes(values.cast(pa.int64()).to_numpy(zero_copy_only=False)), unique)
        elif t.kind == LeafKind.STRING:
            raw = np.asarray(values.cast(pa.binary()).to_numpy(zero_copy_only=False), dtype=object)
            self.add(rows, ph, _bytes_hashes(raw, _KEY_S), unique)
        elif t.kind == LeafKind.BOOLEAN:
            truth = np.asarray(values.to_numpy(zero_copy_only=False), dtype=bool)
            self.add(rows, ph, tuple(np.where(truth, _U64(_TRUE[lane]), _U64(_FALSE[lane])) for lane in (0, 1)), unique)  # type: ignore[arg-type]
        else:  # decimals, floats, dates, times, binaries, UUIDs: through their Variant bytes
            try:
                encoded = primitive_bytes(values, t, self.where).to_pylist()
            except VarlakeError as exc:
                raise ContentCheckError(f"{self.where}: a shredded value cannot be read: {exc}") from None
            metas = self.metas()
            walker = self.walker
            for row, p0, p1, v in zip(rows.tolist(), ph[0].tolist(), ph[1].tolist(), encoded):
                try:
                    walker.primitive(row, metas[row], v, 0, p0, p1)
                except (VarlakeError, IndexError, ValueError, struct_error) as exc:
                    raise ContentCheckError(f"{self.where}: a Variant value cannot be decoded: {exc}") from None

    def flush(self) -> None:
        """Add the terms of the nodes the Python walk found."""
        out = self.walker.out
        for kind in ("o", "a", "i", "s", "p"):
            if not out.rows[kind]:
                continue
            rows = np.asarray(out.rows[kind], dtype=np.int64)
            ph = (np.asarray(out.p0[kind], dtype=_U64), np.asarray(out.p1[kind], dtype=_U64))
            if kind == "o":
                dh: tuple[Any, Any] = _OBJ
            elif kind == "a":
                dh = _ARR
            elif kind == "i":
                dh = _int_hashes(np.asarray(out.payload["i"], dtype=np.int64))
            else:
                dh = _bytes_hashes(np.asarray(out.payload[kind], dtype=object), _KEY_S if kind == "s" else _KEY_P)
            self.add(rows, ph, dh, False)
        self.walker.out = _Emitted()


def _children(group: pa.Array | None) -> dict[str, pa.Array]:
    """A struct's children with its own nulls pushed down into them."""
    if group is None:
        return {}
    if pa.types.is_dictionary(group.type):
        group = group.dictionary_decode()
    return {group.type.field(i).name: child for i, child in enumerate(group.flatten())}


def _constant(payload: bytes) -> tuple[int, int]:
    a, b = _bytes_hashes(np.array([payload], dtype=object), _KEY_P)
    return int(a[0]), int(b[0])


_NULL_VALUE = _constant(b"N")
_TRUE = _constant(b"T")
_FALSE = _constant(b"F")


def _layout(array: pa.StructArray) -> Any:
    """A shredding schema for ``array`` inferred from an evenly spread sample (None: none)."""
    n = len(array)
    sample = array if n <= SAMPLE_ROWS else array.take(pa.array(np.linspace(0, n - 1, SAMPLE_ROWS).astype(np.int64)))
    try:
        return infer_shredding_schema(sample)
    except VarlakeError:
        return None  # malformed values: the Python walk reports them


def variant_hashes(array: pa.Array, where: str = "Variant column") -> tuple[np.ndarray, np.ndarray]:
    """Two ``uint64`` lanes of the logical hash of every Variant of a ``struct<metadata, value>``
    array, or of a shredded Variant group (a NULL Variant hashes to a constant); see the
    module doc."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if isinstance(array.type, pa.BaseExtensionType):  # arrow.parquet.variant: its struct storage
        array = array.storage
    n = len(array)
    valid = validity(array)
    with np.errstate(over="ignore"):
        root = (np.full(n, _ROOT[0], dtype=_U64), np.full(n, _ROOT[1], dtype=_U64))
        rows = np.arange(n, dtype=np.int64)
        already = array.type.get_field_index("typed_value") >= 0  # a shredded group: hashed as it is
        schema = _layout(array) if valid.any() and not already else None
        shredded = array if already else None
        if schema is not None:
            try:
                shredded = shred(array, schema)
            except (VarlakeError, pa.ArrowException):
                shredded = None  # the Python walk reports what is malformed
        if shredded is None:
            metadata = array.field("metadata")
            cols = _Columns(n, metadata, where)
            idx = np.flatnonzero(valid)
            cols.python(rows[idx], (root[0][idx], root[1][idx]), array.field("value").take(pa.array(idx)), False)
        else:
            kids = _children(shredded)
            cols = _Columns(n, kids["metadata"], where)
            layout = recognise_layout(shredded.type, where)
            cols.node(layout.root, kids.get("value"), kids.get("typed_value"), rows, root, valid, True, True)
        cols.flush()
        out = []
        for lane in (0, 1):
            h = _mix_np(cols.acc[lane] ^ _U64(_ROOT[lane]))
            out.append(np.where(valid, h, _U64(_NULL_ROW[lane])).astype(_U64))
    return out[0], out[1]
