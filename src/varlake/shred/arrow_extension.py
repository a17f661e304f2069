"""``arrow.parquet.variant``: Arrow's canonical extension type for Variant columns, and its pandas dtype.

The storage is a struct (fields found by name, in any order) of a ``metadata`` binary
and a ``value`` binary and/or a shredded ``typed_value`` (VariantShredding.md's layouts:
``shred.layout.recognise_layout`` checks them); the extension metadata is empty.
varlake hands Variants out unshredded (``struct<metadata: binary not null, value: binary
not null>``) and accepts every storage the spec allows. DuckDB reads a field tagged with
this name as ``VARIANT``.

Arrays of the type have ``to_variants()`` and ``to_json()``; a scalar has ``as_variant()``
(``as_py()`` still gives the storage's ``{"metadata", "value"}`` dict). ``Table.to_pandas()``
turns a column of this type into a ``VariantDtype`` column of ``Variant`` objects, and
``pa.Table.from_pandas`` turns it back (``__arrow_array__``). pandas is imported only when
a pandas conversion runs or ``VariantDtype`` is first used (the dtype name ``"variant"``
is known to pandas from then on).

pyarrow 26's own Parquet writer (``pq.write_table``, ``DataFrame.to_parquet``) crashes the
process (a segmentation fault) on any Python extension type of this name: it takes it for
its C++ Variant type. Write with ``varlake.write_parquet`` or ``Table.append``, which store
the storage (as a Parquet ``VARIANT`` group), or strip the type first
(``shred.variant_columns.without_variant_extension``). For the same reason the type is not
registered with pyarrow on import: registered, it is what pyarrow's Parquet reader makes of
every ``VARIANT`` group, so a plain ``pq.read_table`` then ``pq.write_table`` of any Variant
file would crash. ``register_variant_extension()`` registers it on request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from varlake.errors import InvalidShreddedLayoutError
from varlake.shred.layout import recognise_layout
from varlake.shred.unshred import UNSHREDDED_TYPE, unshred_variant
from varlake.variant.value import Variant

__all__ = [
    "VARIANT_EXTENSION_NAME",
    "VariantDtype",
    "VariantExtensionArray",
    "VariantExtensionScalar",
    "VariantExtensionType",
    "VariantPandasArray",
    "is_variant_extension",
    "register_variant_extension",
    "variants_of",
]

VARIANT_EXTENSION_NAME = "arrow.parquet.variant"


class VariantExtensionType(pa.ExtensionType):
    """The ``arrow.parquet.variant`` extension type over ``storage_type`` (unshredded by default);
    a storage the canonical spec does not allow raises ``InvalidShreddedLayoutError``."""

    def __init__(self, storage_type: pa.DataType = UNSHREDDED_TYPE) -> None:
        if storage_type != UNSHREDDED_TYPE:
            if not pa.types.is_struct(storage_type):
                raise InvalidShreddedLayoutError(
                    f"{VARIANT_EXTENSION_NAME}: the storage must be a struct, not {storage_type}"
                )
            recognise_layout(storage_type, f"{VARIANT_EXTENSION_NAME} storage")
        super().__init__(storage_type, VARIANT_EXTENSION_NAME)

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    def __hash__(self) -> int:  # types key caches (a schema's hash hashes its types)
        return hash((VARIANT_EXTENSION_NAME, self.storage_type))

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> "VariantExtensionType":
        return cls(storage_type)

    def __arrow_ext_class__(self) -> type:
        return VariantExtensionArray

    def __arrow_ext_scalar_class__(self) -> type:
        return VariantExtensionScalar

    def to_pandas_dtype(self) -> Any:
        return _pandas_classes()[0]()

    @property
    def shredded(self) -> bool:
        """Whether the storage has a ``typed_value`` (a shredded layout)."""
        return self.storage_type.get_field_index("typed_value") >= 0


def is_variant_extension(t: pa.DataType) -> bool:
    """Whether ``t`` is the ``arrow.parquet.variant`` extension type (any storage)."""
    return isinstance(t, pa.BaseExtensionType) and t.extension_name == VARIANT_EXTENSION_NAME


def _unshredded(arr: pa.Array) -> pa.StructArray:
    """The storage of a Variant extension array (or a bare storage struct), rebuilt as
    ``struct<metadata, value>`` when it is shredded."""
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    if storage.type.get_field_index("typed_value") >= 0:
        return unshred_variant(storage, where=f"{VARIANT_EXTENSION_NAME} array")
    return storage


def variants_of(arr: pa.Array | pa.ChunkedArray) -> list[Variant | None]:
    """Each row as a ``Variant`` (None for SQL NULL; a null ``value`` is the Variant null, as
    VariantShredding.md reads a missing top-level value). Headers are checked as the bytes
    are wrapped: ``MalformedVariantError``, or ``InvalidShreddedLayoutError`` for a row
    without metadata."""
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    out: list[Variant | None] = []
    for chunk in chunks:
        storage = _unshredded(chunk)
        valid = storage.is_valid().to_numpy(zero_copy_only=False)
        metas = storage.field("metadata").to_pylist()
        values = storage.field("value").to_pylist()
        for ok, m, v in zip(valid, metas, values):
            if not ok:
                out.append(None)
            elif m is None:
                raise InvalidShreddedLayoutError(f"{VARIANT_EXTENSION_NAME} array, row {len(out)}: a Variant without metadata")
            else:
                out.append(Variant(m, b"\x00" if v is None else v))
    return out


class VariantExtensionArray(pa.ExtensionArray):
    """An array of ``arrow.parquet.variant`` values."""

    def to_variants(self) -> list[Variant | None]:
        """Each row as a ``Variant`` (None for SQL NULL)."""
        return variants_of(self)

    def to_json(self, zone: str = "UTC") -> pa.StringArray:
        """Each row as Spark's JSON text (timestamps shown in ``zone``), null for SQL NULL."""
        return pa.array([None if v is None else v.to_json(zone) for v in variants_of(self)], pa.string())


class VariantExtensionScalar(pa.ExtensionScalar):
    """One ``arrow.parquet.variant`` value; ``as_py()`` gives the storage dict."""

    def as_variant(self) -> Variant | None:
        """The value as a ``Variant`` (None for SQL NULL)."""
        return variants_of(pa.array([self.value], self.type.storage_type).cast(self.type))[0] if self.is_valid else None


def register_variant_extension() -> bool:
    """Register ``VariantExtensionType`` with pyarrow (opt-in; False if a type of that name
    already is): IPC, Flight, the C data interface and pyarrow's Parquet reader then give
    fields tagged ``arrow.parquet.variant`` (and Parquet ``VARIANT`` groups) this type.
    pyarrow 26 cannot then read part of a ``VARIANT`` group (a column projection into one
    fails), and its Parquet writer crashes on what it read (see the module docstring)."""
    try:
        pa.register_extension_type(VariantExtensionType())
    except pa.ArrowKeyError:
        return False
    return True


# --- pandas ------------------------------------------------------------------------------------------

_PANDAS: tuple[type, type] | None = None


def _pandas_classes() -> tuple[type, type]:
    """``(VariantDtype, VariantPandasArray)``, defined on first use (pandas loads only then)."""
    global _PANDAS
    if _PANDAS is None:
        _PANDAS = _define_pandas_classes()
    return _PANDAS


def __getattr__(name: str) -> Any:
    if name == "VariantDtype":
        return _pandas_classes()[0]
    if name == "VariantPandasArray":
        return _pandas_classes()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _as_variant(obj: Any) -> Variant | None:
    """A cell of a pandas Variant column: a ``Variant``, its ``{"metadata", "value"}`` bytes,
    None/NA (SQL NULL) or a Python value (encoded with ``Variant.from_python``)."""
    if obj is None or obj is pa.NA:
        return None
    if isinstance(obj, Variant):
        return obj
    if isinstance(obj, dict) and set(obj) == {"metadata", "value"}:
        return Variant(obj["metadata"], obj["value"])
    try:
        import pandas as pd

        if obj is pd.NA or obj is pd.NaT:
            return None
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, float) and obj != obj:
        return None
    return Variant.from_python(obj)


def _object_array(cells: Sequence[Any]) -> np.ndarray:
    """A 1-d object array of ``cells`` (numpy would unpack Variants, which are iterable)."""
    out = np.empty(len(cells), dtype=object)
    for i, cell in enumerate(cells):
        out[i] = cell
    return out


def _define_pandas_classes() -> tuple[type, type]:
    import pandas as pd
    from pandas.api.extensions import ExtensionArray, ExtensionDtype, register_extension_dtype, take

    @register_extension_dtype
    class VariantDtype(ExtensionDtype):
        """pandas dtype ``"variant"``: cells are ``Variant`` objects, None for SQL NULL."""

        name = "variant"
        type = Variant
        kind = "O"
        na_value = None

        @classmethod
        def construct_array_type(cls) -> type:
            return VariantPandasArray

        def __from_arrow__(self, array: pa.Array | pa.ChunkedArray) -> "VariantPandasArray":
            return VariantPandasArray(_object_array(variants_of(array)))

    class VariantPandasArray(ExtensionArray):
        """A pandas column of ``Variant`` objects (None for SQL NULL); converts to Arrow as
        ``arrow.parquet.variant``."""

        def __init__(self, values: np.ndarray) -> None:
            self._data = values

        @classmethod
        def _from_sequence(cls, scalars: Sequence[Any], *, dtype: Any = None, copy: bool = False) -> "VariantPandasArray":
            return cls(_object_array([_as_variant(s) for s in scalars]))

        @classmethod
        def _from_factorized(cls, values: np.ndarray, original: "VariantPandasArray") -> "VariantPandasArray":
            return cls._from_sequence(values)

        @property
        def dtype(self) -> VariantDtype:
            return VariantDtype()

        def __len__(self) -> int:
            return len(self._data)

        def __getitem__(self, item: Any) -> Any:
            if isinstance(item, (int, np.integer)):
                return self._data[item]
            item = pd.api.indexers.check_array_indexer(self, item)
            return type(self)(self._data[item])

        def __setitem__(self, key: Any, value: Any) -> None:
            if isinstance(key, (int, np.integer)):  # one cell: a list is a Variant array
                self._data[key] = _as_variant(value.tolist() if isinstance(value, np.ndarray) else value)
                return
            key = pd.api.indexers.check_array_indexer(self, key)
            if pd.api.types.is_list_like(value) and not isinstance(value, (Variant, dict)):
                value = _object_array([_as_variant(v) for v in value])
            else:
                value = _as_variant(value)
            self._data[key] = value

        def __eq__(self, other: Any) -> Any:  # type: ignore[override]
            if isinstance(other, (pd.Series, pd.Index, pd.DataFrame)):
                return NotImplemented
            if isinstance(other, VariantPandasArray):
                others: Any = other._data
            elif pd.api.types.is_list_like(other) and not isinstance(other, (Variant, dict)):
                others = list(other)
            else:
                others = [other] * len(self)
            return np.array([a is not None and a == b for a, b in zip(self._data, others)], dtype=bool)

        @property
        def nbytes(self) -> int:
            return sum(len(v.metadata) + len(v.value) for v in self._data if v is not None)

        def isna(self) -> np.ndarray:
            return np.array([v is None for v in self._data], dtype=bool)

        def take(self, indices: Sequence[int], *, allow_fill: bool = False, fill_value: Any = None) -> "VariantPandasArray":
            out = take(self._data, indices, allow_fill=allow_fill, fill_value=_as_variant(fill_value))
            return type(self)(out)

        def copy(self) -> "VariantPandasArray":
            return type(self)(self._data.copy())

        @classmethod
        def _concat_same_type(cls, to_concat: Sequence["VariantPandasArray"]) -> "VariantPandasArray":
            return cls(np.concatenate([a._data for a in to_concat]) if to_concat else _object_array([]))

        def _values_for_factorize(self) -> tuple[np.ndarray, Any]:
            return self._data, None

        def __arrow_array__(self, type: pa.DataType | None = None) -> pa.Array:
            from varlake.shred.variant_arrays import variant_array

            storage = variant_array(list(self._data))
            if type is not None and not is_variant_extension(type):
                return storage.cast(type)  # a plain storage struct was asked for
            return pa.ExtensionArray.from_storage(VariantExtensionType(), storage)

        def to_json(self, zone: str = "UTC") -> list[str | None]:
            """Each cell as Spark's JSON text (None for SQL NULL)."""
            return [None if v is None else v.to_json(zone) for v in self._data]

    for cls in (VariantDtype, VariantPandasArray):  # picklable as this module's names (``__getattr__``)
        cls.__module__ = __name__
        cls.__qualname__ = cls.__name__
    return VariantDtype, VariantPandasArray
