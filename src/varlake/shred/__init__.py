"""Arrow kernels for shredded Variants: layouts, unshredding, path projection.

The file reader built on them, ``read_parquet``, lives one layer down the data
flow in ``varlake.io.parquet_read`` (it needs the Parquet footer); ``shred`` may
not import ``io`` (tests/test_layering.py), so it is not re-exported here.
"""

from __future__ import annotations

from varlake.shred.layout import (
    ArrayLayout,
    LeafKind,
    ObjectLayout,
    PrimitiveLayout,
    ValueLayout,
    VariantLayout,
    recognise_layout,
)
from varlake.shred.nested import LIST_ELEMENT, MAP_VALUE, unshred_nested, unshredded_type
from varlake.shred.project import project_path
from varlake.shred.unshred import UNSHREDDED_TYPE, unshred_variant

__all__ = [
    "UNSHREDDED_TYPE",
    "LIST_ELEMENT",
    "MAP_VALUE",
    "ArrayLayout",
    "LeafKind",
    "ObjectLayout",
    "PrimitiveLayout",
    "ValueLayout",
    "VariantLayout",
    "project_path",
    "recognise_layout",
    "unshred_nested",
    "unshred_variant",
    "unshredded_type",
]

