"""The fold over Delta types (``delta.schema.visit``, ``visit_with_partner``) against naive
recursions, on fixed and on random nested schemas."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.delta.schema import (
    ArrayType,
    ArrowTypePartner,
    DataType,
    DeltaTypePartner,
    MapType,
    PathVisitor,
    PrimitiveType,
    SchemaRebuilder,
    SchemaVisitor,
    SchemaWithPartnerVisitor,
    StructField,
    StructType,
    VariantType,
    iter_types,
    to_arrow_type,
    visit,
    visit_with_partner,
)
from varlake.write.staging.conform import fits_nullability, same_shape

_PRIMITIVES = st.sampled_from(["long", "integer", "string", "double", "boolean", "date", "timestamp", "decimal(10,2)"])
_LEAVES = st.one_of(_PRIMITIVES.map(PrimitiveType), st.just(VariantType()))
_NAMES = st.text(alphabet="abcxyz", min_size=1, max_size=3)


def _structs(children: st.SearchStrategy[DataType]) -> st.SearchStrategy[StructType]:
    fields = st.lists(
        st.tuples(_NAMES, children, st.booleans(), st.sampled_from([{}, {"comment": "c"}])),
        max_size=4,
        unique_by=lambda t: t[0],
    )
    return fields.map(lambda fs: StructType(tuple(StructField(n, t, nb, m) for n, t, nb, m in fs)))


_TYPES: st.SearchStrategy[DataType] = st.recursive(
    _LEAVES,
    lambda children: st.one_of(
        _structs(children),
        st.builds(ArrayType, children, st.booleans()),
        st.builds(MapType, _PRIMITIVES.map(PrimitiveType), children, st.booleans()),
    ),
    max_leaves=12,
)
_SCHEMAS = _structs(_TYPES)


def _naive_count(dtype: DataType, out: Counter[str]) -> Counter[str]:
    out[type(dtype).__name__] += 1
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            out["field"] += 1
            _naive_count(f.type, out)
    elif isinstance(dtype, ArrayType):
        _naive_count(dtype.element_type, out)
    elif isinstance(dtype, MapType):
        _naive_count(dtype.key_type, out)
        _naive_count(dtype.value_type, out)
    return out


def _naive_paths(dtype: DataType, path: tuple[str, ...], out: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    out.append(path)
    if isinstance(dtype, StructType):
        for f in dtype.fields:
            _naive_paths(f.type, (*path, f.name), out)
    elif isinstance(dtype, ArrayType):
        _naive_paths(dtype.element_type, (*path, "element"), out)
    elif isinstance(dtype, MapType):
        _naive_paths(dtype.key_type, (*path, "key"), out)
        _naive_paths(dtype.value_type, (*path, "value"), out)
    return out


def _has_not_null(dtype: DataType) -> bool:
    if isinstance(dtype, StructType):
        return any(not f.nullable or _has_not_null(f.type) for f in dtype.fields)
    if isinstance(dtype, ArrayType):
        return not dtype.contains_null or _has_not_null(dtype.element_type)
    if isinstance(dtype, MapType):
        return not dtype.value_contains_null or _has_not_null(dtype.value_type)
    return False


class _Count(SchemaVisitor[None]):
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def struct(self, struct: StructType, field_results: list[None]) -> None:
        self.counts["StructType"] += 1

    def field(self, field: StructField, type_result: None) -> None:
        self.counts["field"] += 1

    def array(self, array: ArrayType, element_result: None) -> None:
        self.counts["ArrayType"] += 1

    def map(self, map_type: MapType, key_result: None, value_result: None) -> None:
        self.counts["MapType"] += 1

    def primitive(self, primitive: PrimitiveType) -> None:
        self.counts["PrimitiveType"] += 1

    def variant(self, variant: VariantType) -> None:
        self.counts["VariantType"] += 1


class _Paths(PathVisitor[list[tuple[str, ...]]]):
    """Every node's path, collected children first and then put in pre-order by the parents."""

    def struct(self, struct: StructType, field_results: list[Any]) -> Any:
        return [tuple(self.path), *(p for r in field_results for p in r)]

    def field(self, field: StructField, type_result: Any) -> Any:
        return type_result

    def array(self, array: ArrayType, element_result: Any) -> Any:
        return [tuple(self.path), *element_result]

    def map(self, map_type: MapType, key_result: Any, value_result: Any) -> Any:
        return [tuple(self.path), *key_result, *value_result]

    def primitive(self, primitive: PrimitiveType) -> Any:
        return [tuple(self.path)]

    def variant(self, variant: VariantType) -> Any:
        return [tuple(self.path)]


@settings(max_examples=100, deadline=None)
@given(_SCHEMAS)
def test_identity_rebuild_equals_the_input(schema: StructType) -> None:
    rebuilt = visit(schema, SchemaRebuilder())
    assert rebuilt == schema
    assert rebuilt.to_schema_string() == schema.to_schema_string()


@settings(max_examples=100, deadline=None)
@given(_SCHEMAS)
def test_a_counting_visitor_matches_a_naive_count(schema: StructType) -> None:
    counter = _Count()
    visit(schema, counter)
    assert counter.counts == _naive_count(schema, Counter())


@settings(max_examples=100, deadline=None)
@given(_SCHEMAS)
def test_paths_and_pre_order_match_a_naive_walk(schema: StructType) -> None:
    paths = _Paths()
    assert visit(schema, paths) == _naive_paths(schema, (), [])
    assert paths.path == []  # every hook pair balanced
    assert len(list(iter_types(schema))) == sum(_naive_count(schema, Counter()).values()) - _naive_count(schema, Counter())["field"]


@settings(max_examples=100, deadline=None)
@given(_SCHEMAS, _SCHEMAS)
def test_partner_visits_agree_with_equality(a: StructType, b: StructType) -> None:
    def strip(dtype: DataType) -> DataType:
        class _Bare(SchemaRebuilder):
            def field(self, field: StructField, type_result: Any) -> Any:
                return StructField(field.name, type_result)

            def array(self, array: ArrayType, element_result: Any) -> Any:
                return ArrayType(element_result)

            def map(self, map_type: MapType, key_result: Any, value_result: Any) -> Any:
                return MapType(key_result, value_result)

        return visit(dtype, _Bare())

    assert same_shape(a, a) and fits_nullability(a, a)
    assert same_shape(a, b) == (strip(a) == strip(b))
    assert fits_nullability(strip(a), a) == (not _has_not_null(a))  # all-nullable fits iff nothing is NOT NULL
    assert fits_nullability(a, strip(a))  # anything fits an all-nullable type


def test_hooks_run_around_each_child_in_order() -> None:
    events: list[str] = []

    class _Log(SchemaVisitor[None]):
        def before_field(self, field: StructField) -> None:
            events.append(f"+{field.name}")

        def after_field(self, field: StructField) -> None:
            events.append(f"-{field.name}")

        def before_element(self, array: ArrayType) -> None:
            events.append("+element")

        def after_element(self, array: ArrayType) -> None:
            events.append("-element")

        def before_key(self, map_type: MapType) -> None:
            events.append("+key")

        def after_key(self, map_type: MapType) -> None:
            events.append("-key")

        def before_value(self, map_type: MapType) -> None:
            events.append("+value")

        def after_value(self, map_type: MapType) -> None:
            events.append("-value")

        def primitive(self, primitive: PrimitiveType) -> None:
            events.append(primitive.name)

        def variant(self, variant: VariantType) -> None:
            events.append("variant")

    schema = StructType(
        (
            StructField("a", ArrayType(PrimitiveType("long"))),
            StructField("m", MapType(PrimitiveType("string"), VariantType())),
        )
    )
    visit(schema, _Log())
    assert events == ["+a", "+element", "long", "-element", "-a", "+m", "+key", "string", "-key", "+value", "variant", "-value", "-m"]


def test_arrow_partners_follow_structs_by_name_and_part_where_shapes_do() -> None:
    seen: dict[str, Any] = {}

    class _Record(SchemaWithPartnerVisitor[Any, None]):
        def primitive(self, primitive: PrimitiveType, partner: Any) -> None:
            seen[primitive.name] = partner

    dtype = StructType(
        (
            StructField("x", PrimitiveType("long")),
            StructField("l", ArrayType(PrimitiveType("integer"))),
            StructField("m", MapType(PrimitiveType("string"), PrimitiveType("double"))),
            StructField("gone", PrimitiveType("date")),
        )
    )
    arrow = pa.struct([("m", pa.map_(pa.string(), pa.float64())), ("l", pa.int32()), ("x", pa.int64())])
    visit_with_partner(dtype, arrow, _Record(), ArrowTypePartner())
    assert seen == {"long": pa.int64(), "integer": None, "string": pa.string(), "double": pa.float64(), "date": None}
    assert to_arrow_type(dtype).field("m").type == pa.map_(pa.string(), pa.float64())


def test_delta_partners_pair_fields_by_position() -> None:
    accessor = DeltaTypePartner()
    s = StructType((StructField("a", PrimitiveType("long")),))
    assert accessor.field_partner(s, 0, StructField("z", PrimitiveType("long"))) is s.fields[0]
    assert accessor.field_partner(s, 1, StructField("b", PrimitiveType("long"))) is None
    assert accessor.element_partner(PrimitiveType("long")) is None


def test_not_a_delta_type_is_refused() -> None:
    with pytest.raises(TypeError, match="not a Delta type"):
        visit("long", SchemaRebuilder())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a Delta type"):
        visit_with_partner("long", None, SchemaWithPartnerVisitor(), DeltaTypePartner())  # type: ignore[arg-type]
