"""Protocol and table features: what a new table declares, what varlake refuses to read/write."""

from __future__ import annotations

import uuid

import pytest

from varlake.delta import constants as C
from varlake.delta.actions import Metadata, Protocol
from varlake.delta.protocol import check_readable, check_writable, required_protocol, validate_metadata
from varlake.delta.schema import ArrayType, PrimitiveType, StructField, StructType, VariantType
from varlake.errors import InvalidCommitError, UnsupportedFeatureError

PLAIN = StructType((StructField("i", PrimitiveType("integer")), StructField("s", PrimitiveType("string"))))
NESTED_VARIANT = StructType((StructField("i", PrimitiveType("integer")), StructField("a", ArrayType(VariantType()))))


def _meta(schema: StructType = PLAIN, config: dict[str, str] | None = None, parts: tuple[str, ...] = ()) -> Metadata:
    return Metadata(str(uuid.uuid4()), schema.to_schema_string(), parts, config or {})


def test_plain_table_gets_legacy_protocol() -> None:
    assert required_protocol(PLAIN) == Protocol(1, 2)


def test_variant_anywhere_needs_reader3_writer7_variant_type() -> None:
    p = required_protocol(NESTED_VARIANT)
    assert (p.min_reader_version, p.min_writer_version) == (3, 7)
    assert p.reader_features == ("variantType",) and p.writer_features == ("variantType",)


def test_enable_variant_shredding_adds_feature() -> None:
    p = required_protocol(NESTED_VARIANT, {C.PROP_ENABLE_VARIANT_SHREDDING: "true"})
    assert p.reader_feature_set == p.writer_feature_set == {C.VARIANT_TYPE, C.VARIANT_SHREDDING}
    assert required_protocol(NESTED_VARIANT, {C.PROP_ENABLE_VARIANT_SHREDDING: "false"}).reader_feature_set == {
        C.VARIANT_TYPE
    }


def test_upgrade_keeps_old_features() -> None:
    p = required_protocol(NESTED_VARIANT, {}, current=Protocol(1, 2))
    assert p.writer_feature_set == {C.VARIANT_TYPE, C.APPEND_ONLY, C.INVARIANTS}
    same = Protocol(3, 7, ("variantType",), ("variantType",))
    assert required_protocol(NESTED_VARIANT, {}, current=same) is same
    w7 = Protocol(1, 7, None, ())
    assert required_protocol(PLAIN, {C.PROP_APPEND_ONLY: "true"}, current=w7) == Protocol(1, 7, None, ("appendOnly",))


def test_validate_metadata_demands_declared_features() -> None:
    with pytest.raises(InvalidCommitError, match="need table feature variantType"):
        validate_metadata(_meta(NESTED_VARIANT), Protocol(1, 2))
    shredding = _meta(NESTED_VARIANT, {C.PROP_ENABLE_VARIANT_SHREDDING: "true"})
    with pytest.raises(InvalidCommitError, match="variantShredding"):
        validate_metadata(shredding, Protocol(3, 7, ("variantType",), ("variantType",)))
    validate_metadata(
        shredding,
        Protocol(3, 7, ("variantType", "variantShredding-preview"), ("variantType", "variantShredding-preview")),
    )


def test_variant_partition_column_refused() -> None:
    schema = StructType((StructField("v", VariantType()), StructField("p", PrimitiveType("string"))))
    protocol = required_protocol(schema)
    validate_metadata(_meta(schema, parts=("p",)), protocol)
    with pytest.raises(InvalidCommitError, match="Variant column 'v' cannot be a partition column"):
        validate_metadata(_meta(schema, parts=("v",)), protocol)
    with pytest.raises(InvalidCommitError, match="'nope' is not a top-level column"):
        validate_metadata(_meta(schema, parts=("nope",)), protocol)


@pytest.mark.parametrize(
    "feature", ["catalogManaged"]  # deletionVectors, columnMapping and typeWidening are read now
)
def test_unsupported_reader_feature_is_named(feature: str) -> None:
    p = Protocol(3, 7, ("variantType", feature), ("variantType", feature))
    with pytest.raises(UnsupportedFeatureError, match=f"not supported by varlake: {feature}"):
        check_readable(p, _meta(), "t")


def test_unknown_feature_is_named() -> None:
    with pytest.raises(UnsupportedFeatureError, match="unknown reader table feature.*quantumStorage"):
        check_readable(Protocol(3, 7, ("quantumStorage",), ("quantumStorage",)), _meta())
    readable = Protocol(1, 7, None, ("fancyWriterThing",))
    check_readable(readable, _meta())
    with pytest.raises(UnsupportedFeatureError, match="unknown writer table feature.*fancyWriterThing"):
        check_writable(readable, _meta())


def test_versions_beyond_support() -> None:
    with pytest.raises(UnsupportedFeatureError, match="reader version 4"):
        check_readable(Protocol(4, 7, (), ()), _meta())
    with pytest.raises(UnsupportedFeatureError, match="writer version 8"):
        check_writable(Protocol(1, 8), _meta())


def test_legacy_column_mapping_only_when_used() -> None:
    check_readable(Protocol(2, 5), _meta())
    check_readable(Protocol(2, 5), _meta(config={C.PROP_COLUMN_MAPPING_MODE: "name"}))  # read now
    check_writable(Protocol(2, 5), _meta(config={C.PROP_COLUMN_MAPPING_MODE: "name"}))  # and written
    with pytest.raises(UnsupportedFeatureError, match="columnMapping"):
        check_writable(Protocol(2, 5), _meta(config={C.PROP_COLUMN_MAPPING_MODE: "sideways"}))


def test_writer_features_refused_only_when_active() -> None:
    p = Protocol(3, 7, ("variantType",), ("variantType", "invariants", "checkConstraints", "appendOnly"))
    check_writable(p, _meta(NESTED_VARIANT))
    # checkConstraints and invariants are honoured by the writers (varlake.write.staging.constraints)
    check_writable(p, _meta(NESTED_VARIANT, {"delta.constraints.positive": "i > 0"}))
    guarded = StructType(
        (
            StructField(
                "i", PrimitiveType("integer"), metadata={"delta.invariants": '{"expression":{"expression":"i > 3"}}'}
            ),
        )
    )
    check_writable(p, _meta(guarded))
    generated = StructType((StructField("i", PrimitiveType("integer"), metadata={C.COL_GENERATION_EXPRESSION: "1"}),))
    with pytest.raises(UnsupportedFeatureError, match="generatedColumns.*column 'i'"):
        check_writable(Protocol(3, 7, ("variantType",), ("variantType", "generatedColumns")), _meta(generated))
    with pytest.raises(UnsupportedFeatureError, match="rowTracking"):
        check_writable(Protocol(1, 7, None, ("rowTracking", "domainMetadata")), _meta())
