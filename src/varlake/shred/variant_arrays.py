"""Column-at-a-time Variant encoding: Arrow arrays in, Arrow arrays of Variant bytes out.

Unshredding a million rows with a Python call per value is far too slow, so these
kernels build the encoded bytes with numpy over whole columns:

* ``primitive_bytes`` turns a typed Arrow column into Variant values: fixed-width
  types become a ``(rows, width)`` byte matrix (header byte + little-endian
  payload); strings and binaries get a per-row header joined to the payload by
  Arrow's ``binary_join_element_wise``.
* ``pack_arrays`` / ``pack_objects`` write container headers (counts, field ids,
  offsets with per-row widths) with a handful of scatter operations and append the
  already-encoded children, again with ``binary_join_element_wise``. Objects whose
  rows all have every field get their header and fixed-width values written into
  one byte matrix, so only variable-width values need the (slower) join.

Every function returns a plain ``pa.binary()`` array; offsets are int32, so the
callers work batch by batch (Parquet row groups) to stay below 2 GiB per array.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from varlake.errors import InvalidShreddedLayoutError
from varlake.variant import Variant
from varlake.shred.byte_parts import Fixed, Part, Var, join_parts, var
from varlake.shred.layout import LeafKind, PrimitiveLayout

__all__ = [
    "as_binary",
    "variant_array",
    "binary_lengths",
    "first_bytes",
    "array_parts",
    "pack_arrays",
    "pack_objects",
    "primitive_bytes",
    "primitive_parts",
    "uint_width",
    "validity",
    "with_validity",
]

_MAX_SHORT_STRING = 63
_TIME_LIMIT = 86_400_000_000

# (header byte, payload width, numpy dtype of the Arrow values buffer)
_FIXED: dict[LeafKind, tuple[int, int, str]] = {
    LeafKind.INT8: (0x0C, 1, "<i1"),
    LeafKind.INT16: (0x10, 2, "<i2"),
    LeafKind.INT32: (0x14, 4, "<i4"),
    LeafKind.INT64: (0x18, 8, "<i8"),
    LeafKind.DOUBLE: (0x1C, 8, "<f8"),
    LeafKind.FLOAT: (0x38, 4, "<f4"),
    LeafKind.DATE: (0x2C, 4, "<i4"),
    LeafKind.TIME: (0x44, 8, "<i8"),
    LeafKind.TIMESTAMP: (0x30, 8, "<i8"),
    LeafKind.TIMESTAMP_NTZ: (0x34, 8, "<i8"),
    LeafKind.TIMESTAMP_NANOS: (0x48, 8, "<i8"),
    LeafKind.TIMESTAMP_NTZ_NANOS: (0x4C, 8, "<i8"),
}
_DECIMAL_WIDTH = {LeafKind.DECIMAL4: (0x20, 4), LeafKind.DECIMAL8: (0x24, 8), LeafKind.DECIMAL16: (0x28, 16)}


# --- small array helpers -----------------------------------------------------------------


def validity(arr: pa.Array) -> np.ndarray:
    """Boolean numpy mask of non-null slots."""
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), dtype=bool)
    return pc.is_valid(arr).to_numpy(zero_copy_only=False)


def as_binary(arr: pa.Array) -> pa.Array:
    """The array as ``pa.binary()`` (large/view binaries and strings are cast)."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_binary(arr.type):
        return arr
    return arr.cast(pa.binary())


def _offsets(arr: pa.Array) -> np.ndarray:
    """int64 offsets (length n+1) of a binary/string array, honouring its slice offset."""
    buf = arr.buffers()[1]
    width = "<i8" if pa.types.is_large_binary(arr.type) or pa.types.is_large_string(arr.type) else "<i4"
    raw = np.frombuffer(buf, dtype=width, count=len(arr) + 1 + arr.offset)
    return raw[arr.offset :].astype(np.int64)


def binary_lengths(arr: pa.Array) -> np.ndarray:
    """Byte length per slot (0 for nulls) as int64 numpy."""
    if len(arr) == 0:
        return np.zeros(0, dtype=np.int64)
    offs = _offsets(arr)
    lengths = np.diff(offs)
    if arr.null_count:
        lengths = np.where(validity(arr), lengths, 0)
    return lengths


def first_bytes(arr: pa.Array) -> np.ndarray:
    """First byte of each slot as int16 numpy; -1 for nulls and empty values."""
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int16)
    offs = _offsets(arr)
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8) if arr.buffers()[2] is not None else np.zeros(0, np.uint8)
    starts = offs[:-1]
    ok = (np.diff(offs) > 0) & validity(arr)
    out = np.full(n, -1, dtype=np.int16)
    out[ok] = data[starts[ok]]
    return out


def uint_width(values: np.ndarray) -> np.ndarray:
    """Bytes (1-4) the spec's writers use for an unsigned id/offset (Spark's choice)."""
    return (1 + (values > 0xFF) + (values > 0xFFFF) + (values > 0xFFFFFF)).astype(np.int64)


def put_uint(buf: np.ndarray, pos: np.ndarray, values: np.ndarray, widths: np.ndarray | int) -> None:
    """Write little-endian unsigned ints of per-row width (1-4 bytes) at ``pos``."""
    values = values.astype(np.int64, copy=False)
    for b in range(4):  # bytes are cast before the scatter: numpy scatters uint8 into uint8 far faster
        if isinstance(widths, (int, np.integer)):
            if b >= widths:
                break
            buf[pos + b] = ((values >> (8 * b)) & 0xFF).astype(np.uint8)
            continue
        m = widths > b
        if b == 0 or m.all():
            buf[pos + b] = ((values >> (8 * b)) & 0xFF).astype(np.uint8)
        elif m.any():
            buf[pos[m] + b] = ((values[m] >> (8 * b)) & 0xFF).astype(np.uint8)
        else:
            break


def _uniform(widths: np.ndarray) -> np.ndarray | int:
    """A per-row width array collapsed to one int when all rows agree (cheaper writes)."""
    if len(widths) and widths.min() == widths.max():
        return int(widths[0])
    return widths


def _take(widths: np.ndarray | int, rows: np.ndarray) -> np.ndarray | int:
    return widths if isinstance(widths, int) else widths[rows]


def _binary_array(offsets: np.ndarray, data: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """A ``pa.binary()`` array from int64 offsets, a uint8 data buffer and a validity mask."""
    n = len(offsets) - 1
    if offsets[-1] > 2**31 - 1:
        raise InvalidShreddedLayoutError(f"a batch of {n} Variant values exceeds 2 GiB; read smaller row groups")
    vbuf = None
    null_count = 0
    if valid is not None and not valid.all():
        vbuf = pa.py_buffer(np.packbits(valid, bitorder="little"))
        null_count = int(n - valid.sum())
    return pa.Array.from_buffers(
        pa.binary(), n, [vbuf, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)], null_count
    )


def _values_view(arr: pa.Array, dtype: str) -> np.ndarray:
    """The values buffer of a fixed-width array as numpy (nulls hold arbitrary values)."""
    buf = arr.buffers()[1]
    if buf is None:  # an all-null array may have no values buffer
        return np.zeros(len(arr), dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=arr.offset + len(arr))[arr.offset :]


def _join(parts: list[pa.Array]) -> pa.Array:
    """Element-wise concatenation of binary arrays (null if any part is null)."""
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, b"")


# --- primitives -----------------------------------------------------------------------------


def primitive_bytes(arr: pa.Array, leaf: PrimitiveLayout, where: str = "") -> pa.Array:
    """Variant value bytes for every slot of a shredded primitive column (null stays null)."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    out = join_parts(primitive_parts(arr, leaf, where), len(arr))
    if arr.null_count and out.null_count != arr.null_count:
        out = with_validity(out, validity(arr))
    return out


def with_validity(arr: pa.Array, valid: np.ndarray) -> pa.Array:
    """A binary array's bytes with ``valid`` as its validity (null where False)."""
    if valid.all():
        return arr
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    if arr.offset:
        arr = pa.concat_arrays([arr])  # rebased to offset 0 so the bitmap lines up
    return pa.Array.from_buffers(pa.binary(), len(arr), [bitmap, *arr.buffers()[1:]], int((~valid).sum()))


def _words(raw: np.ndarray, width: int) -> list[tuple[np.ndarray, int]]:
    """``Fixed`` pieces holding the first ``width`` bytes (4, 8 or 16) of each row of the
    C-contiguous ``(n, k)`` uint8 matrix ``raw`` (k >= width): strided views, no copy."""
    step = 8 if width >= 8 else 4
    words = np.ascontiguousarray(raw).view(f"<u{step}")
    return [(words[:, j], step) for j in range(width // step)]


def _length_prefixed_parts(header_short: int | None, header_long: int, payload: pa.Array) -> list[Part]:
    """Strings/binaries: a 1-byte short header (if allowed and it fits) or header + u32
    length, then the payload (null where the column is null)."""
    payload = as_binary(payload)
    n = len(payload)
    body = var(payload)
    lengths = body.lengths
    if n and int(lengths.max()) > 0xFFFFFFFF:
        raise InvalidShreddedLayoutError("string/binary value longer than 4 GiB")
    if header_short is None:
        return [Fixed(n, [(header_long, 1), (lengths, 4)]), body]
    short = lengths <= _MAX_SHORT_STRING
    if short.all():  # the common case: one header byte per row
        return [Fixed(n, [((lengths << 2) | header_short, 1)]), body]
    sizes = np.where(short, 1, 5)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    data = np.zeros(int(offsets[-1]), dtype=np.uint8)
    starts = offsets[:-1]
    data[starts[short]] = (lengths[short] << 2) | header_short
    long_rows = ~short
    data[starts[long_rows]] = header_long
    put_uint(data, starts[long_rows] + 1, lengths[long_rows], 4)
    return [Var(_binary_array(offsets, data), sizes), body]


def primitive_parts(arr: pa.Array, leaf: PrimitiveLayout, where: str = "") -> list[Part]:
    """``primitive_bytes`` as byte parts (``shred.byte_parts``): one matrix for fixed-width
    kinds (views of the values, no copy), a header and the payload for strings and
    binaries. Where ``arr`` is null the fixed bytes are arbitrary and the payload is null."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    kind = leaf.kind
    n = len(arr)
    if n and arr.null_count == n:  # absent everywhere: no bytes are used (buffers may be missing)
        return [Fixed(n, [(0, 1)])]
    if kind in _FIXED:
        header, width, dtype = _FIXED[kind]
        values = _values_view(arr, dtype)
        if kind == LeafKind.TIME:
            bad = validity(arr) & ((values < 0) | (values >= _TIME_LIMIT))
            if bad.any():
                raise InvalidShreddedLayoutError(f"{where}: time of day {int(values[bad][0])} us is out of range")
        return [Fixed(n, [(header, 1), (values.view(f"<u{width}"), width)])]
    if kind == LeafKind.BOOLEAN:
        bits = np.unpackbits(np.frombuffer(arr.buffers()[1], dtype=np.uint8), bitorder="little")[arr.offset : arr.offset + n]
        return [Fixed(n, [(np.where(bits.astype(bool), 0x04, 0x08).astype(np.uint8), 1)])]
    if kind in _DECIMAL_WIDTH:
        header, width = _DECIMAL_WIDTH[kind]
        src_width = arr.type.byte_width
        raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=(arr.offset + n) * src_width)
        raw = raw.reshape(-1, src_width)[arr.offset :]
        if src_width > width:  # the unscaled value must fit the narrower width
            words = np.ascontiguousarray(raw).view("<i8")
            low = words[:, 0]
            fits = words[:, 1] == (low >> 63) if src_width == 16 else np.ones(n, dtype=bool)
            if width == 4:
                fits &= (low >= -(2**31)) & (low < 2**31)
            overflow = ~fits
            if overflow.any() and (overflow := overflow & validity(arr)).any():
                row = int(np.flatnonzero(overflow)[0])
                raise InvalidShreddedLayoutError(
                    f"{where}: decimal value {arr[row].as_py()} exceeds the column's precision {arr.type.precision}"
                )
        return [Fixed(n, [(header, 1), (leaf.scale, 1), *_words(raw, width)])]
    if kind == LeafKind.UUID:
        storage = arr.storage if isinstance(arr.type, pa.BaseExtensionType) else arr
        raw = np.frombuffer(storage.buffers()[1], dtype=np.uint8, count=(storage.offset + n) * 16)
        return [Fixed(n, [(0x50, 1), *_words(raw.reshape(-1, 16)[storage.offset :], 16)])]
    if kind == LeafKind.STRING:
        return _length_prefixed_parts(0x01, 0x40, arr)
    if kind == LeafKind.BINARY:
        return _length_prefixed_parts(None, 0x3C, arr)
    raise InvalidShreddedLayoutError(f"{where}: no encoder for {kind}")  # pragma: no cover - enum is closed


# --- containers -------------------------------------------------------------------------------


def _row_data(elements: pa.Array, bounds: np.ndarray) -> pa.Array:
    """Binary array whose row ``i`` is the concatenated bytes of elements ``bounds[i]:bounds[i+1]``.

    Zero-copy: it reuses the elements' data buffer with gathered offsets.
    """
    offs = _offsets(elements) if len(elements) else np.zeros(1, dtype=np.int64)
    row_offsets = offs[bounds]
    data_buf = elements.buffers()[2] if len(elements) else None
    if data_buf is None:
        data_buf = pa.py_buffer(b"")
    if row_offsets[-1] > 2**31 - 1:
        raise InvalidShreddedLayoutError("a batch of Variant arrays exceeds 2 GiB; read smaller row groups")
    return pa.Array.from_buffers(pa.binary(), len(bounds) - 1, [None, pa.py_buffer(row_offsets.astype(np.int32)), data_buf])


def pack_arrays(counts: np.ndarray, elements: pa.Array) -> pa.Array:
    """Variant arrays: row ``i`` holds the next ``counts[i]`` encoded values of ``elements``.

    ``elements`` is a non-null binary array of already-encoded values in row order.
    """
    return join_parts(array_parts(counts, elements), len(counts))


def array_parts(counts: np.ndarray, elements: pa.Array) -> list[Part]:
    """``pack_arrays`` as two byte parts (``shred.byte_parts``): the headers, then each
    row's elements (a zero-copy view of ``elements``' bytes)."""
    elements = as_binary(elements)
    n = len(counts)
    counts = counts.astype(np.int64, copy=False)
    bounds = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    sizes = binary_lengths(elements)
    csum = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=csum[1:])
    data_size = csum[bounds[1:]] - csum[bounds[:-1]]
    osz = _uniform(uint_width(data_size))
    large = counts > 0xFF
    cb = _uniform(np.where(large, 4, 1))
    hlen = 1 + cb + (counts + 1) * osz
    hoff = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(hlen, out=hoff[1:])
    buf = np.zeros(int(hoff[-1]), dtype=np.uint8)
    start = hoff[:-1]
    buf[start] = 0x03 | ((osz - 1) << 2) | (large.astype(np.int64) << 4)
    put_uint(buf, start + 1, counts, cb)
    offs_start = start + 1 + cb
    # per-element offset, relative to its row's first element
    row_of = np.repeat(np.arange(n, dtype=np.int64), counts)
    row_first = bounds[:-1][row_of]
    index_in_row = np.arange(len(sizes), dtype=np.int64) - row_first
    rel = csum[:-1] - csum[row_first]
    elem_osz = _take(osz, row_of)
    put_uint(buf, offs_start[row_of] + index_in_row * elem_osz, rel, elem_osz)
    put_uint(buf, offs_start + counts * osz, data_size, osz)
    return [Var(_binary_array(hoff, buf), np.asarray(hlen, dtype=np.int64)), var(_row_data(elements, bounds))]


def _fixed_width(enc: pa.Array, lengths: np.ndarray) -> int | None:
    """The common byte width of every value of ``enc``, if they all have one."""
    if not len(lengths) or enc.null_count or lengths.min() != lengths.max():
        return None
    return int(lengths[0])


def _uniform_objects(
    n: int, fields: list[tuple[np.ndarray, np.ndarray, pa.Array]], lengths: list[np.ndarray], osz: int, isz: int, cb: int
) -> pa.Array:
    """Objects where every row has every field and one id/offset width.

    The header is a ``(rows, size)`` byte matrix written column by column (no
    scatter). Values may sit in any order after the header (only ids must be sorted),
    so fixed-width values are copied into the same matrix right after it and only
    variable-width ones (strings, containers) are appended with a join.
    """
    k = len(fields)
    widths = [_fixed_width(as_binary(enc), ln) for (_, _, enc), ln in zip(fields, lengths)]
    order = [j for j in range(k) if widths[j] is not None] + [j for j in range(k) if widths[j] is None]
    header = 1 + cb + k * isz + (k + 1) * osz
    fixed_total = sum(w for w in widths if w is not None)
    out = np.empty((n, header + fixed_total), dtype=np.uint8)
    out[:, 0] = 0x02 | ((osz - 1) << 2) | ((isz - 1) << 4) | ((1 if k > 0xFF else 0) << 6)
    for b in range(cb):
        out[:, 1 + b] = (k >> (8 * b)) & 0xFF
    at = 1 + cb
    for _, fid, _ in fields:
        for b in range(isz):
            out[:, at + b] = (fid >> (8 * b)) & 0xFF
        at += isz
    starts: list[np.ndarray | int] = [0] * k
    cum: np.ndarray | int = 0
    data_at = header
    for j in order:
        starts[j] = cum
        cum = cum + lengths[j]
        w = widths[j]
        if w is not None and w:
            enc = as_binary(fields[j][2])
            offs = _offsets(enc)
            raw = np.frombuffer(enc.buffers()[2], dtype=np.uint8, count=int(offs[-1]))[int(offs[0]) :]
            out[:, data_at : data_at + w] = raw.reshape(n, w)
            data_at += w
    for j in range(k):
        _put_columns(out, 1 + cb + k * isz + j * osz, starts[j], osz, n)
    _put_columns(out, 1 + cb + k * isz + k * osz, cum, osz, n)
    size = header + fixed_total
    parts = [_binary_array(np.arange(0, (n + 1) * size, size, dtype=np.int64), out.reshape(-1))]
    parts += [as_binary(fields[j][2]) for j in order if widths[j] is None]
    return _join(parts)


def _put_columns(out: np.ndarray, at: int, values: np.ndarray | int, width: int, n: int) -> None:
    """Little-endian ``values`` (one per row, or one for all) into columns ``at:at+width``."""
    vals = np.asarray(values, dtype=np.int64)
    for b in range(width):
        out[:, at + b] = (vals >> (8 * b)) & 0xFF


def pack_objects(
    n: int,
    fields: list[tuple[np.ndarray, np.ndarray, pa.Array]],
) -> pa.Array:
    """Variant objects built from shredded fields.

    ``fields`` holds ``(present, field_id, encoded)`` per shredded key, already sorted by
    the key's UTF-8 bytes (the order the spec requires for field ids): ``present`` a
    bool mask, ``field_id`` the key's id in each row's metadata, ``encoded`` the
    field's Variant bytes (ignored where not present). Values are laid out in the same
    sorted order, so offsets grow with the ids.
    """
    count = np.zeros(n, dtype=np.int64)
    data_size = np.zeros(n, dtype=np.int64)
    max_id = np.zeros(n, dtype=np.int64)
    lengths = []
    for present, fid, enc in fields:
        ln = np.where(present, binary_lengths(enc), 0)
        lengths.append(ln)
        count += present
        data_size += ln
        np.maximum(max_id, np.where(present, fid, 0), out=max_id)
    osz = _uniform(uint_width(data_size))
    isz = _uniform(uint_width(max_id))
    large = count > 0xFF
    cb = _uniform(np.where(large, 4, 1))
    if isinstance(osz, int) and isinstance(isz, int) and isinstance(cb, int) and all(p.all() for p, _, _ in fields):
        return _uniform_objects(n, fields, lengths, osz, isz, cb)
    hlen = 1 + cb + count * isz + (count + 1) * osz
    hoff = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(hlen, out=hoff[1:])
    buf = np.zeros(int(hoff[-1]), dtype=np.uint8)
    start = hoff[:-1]
    buf[start] = 0x02 | ((osz - 1) << 2) | ((isz - 1) << 4) | (large.astype(np.int64) << 6)
    put_uint(buf, start + 1, count, cb)
    ids_start = start + 1 + cb
    offs_start = ids_start + count * isz
    index = np.zeros(n, dtype=np.int64)
    cum = np.zeros(n, dtype=np.int64)
    for (present, fid, _), ln in zip(fields, lengths):
        if present.all():
            put_uint(buf, ids_start + index * isz, fid, isz)
            put_uint(buf, offs_start + index * osz, cum, osz)
        else:
            rows = np.flatnonzero(present)
            if len(rows):
                put_uint(buf, ids_start[rows] + index[rows] * _take(isz, rows), fid[rows], _take(isz, rows))
                put_uint(buf, offs_start[rows] + index[rows] * _take(osz, rows), cum[rows], _take(osz, rows))
        index += present
        cum += ln
    put_uint(buf, offs_start + count * osz, data_size, osz)
    parts = [_binary_array(hoff, buf)]
    for present, _, enc in fields:
        enc = as_binary(enc)
        if present.all() and enc.null_count == 0:
            parts.append(enc)
            continue
        keep = pa.array(present, pa.bool_())
        parts.append(pc.if_else(keep, enc.fill_null(b""), pa.scalar(b"", pa.binary())))
    return _join(parts)


def variant_array(values: Sequence[Any]) -> pa.StructArray:
    """Values as the unshredded Arrow ``struct<metadata, value>`` of Variants: a ``Variant``,
    a ``{"metadata", "value"}`` mapping of its bytes, any other Python value (encoded with
    ``Variant.from_python``), or None (a NULL struct)."""
    metas: list[bytes] = []
    vals: list[bytes] = []
    mask: list[bool] = []
    for v in values:
        if v is None:
            metas.append(b"\x01\x00\x00")
            vals.append(b"\x00")
            mask.append(True)
            continue
        if isinstance(v, Mapping) and set(v) == {"metadata", "value"}:
            metas.append(v["metadata"])
            vals.append(v["value"])
        else:
            variant = v if isinstance(v, Variant) else Variant.from_python(v)
            metas.append(variant.metadata)
            vals.append(variant.value)
        mask.append(False)
    fields = [pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary(), nullable=False)]
    return pa.StructArray.from_arrays(
        [pa.array(metas, pa.binary()), pa.array(vals, pa.binary())], fields=fields, mask=pa.array(mask, pa.bool_())
    )

