"""Conformance with the shared shredded-Variant files (apache/parquet-testing, written by Iceberg).

Every case of ``cases.json`` is read with ``read_parquet`` straight from
``../shared/testdata``:

* valid cases must equal their expected ``.variant.bin`` (metadata bytes then value
  bytes) logically, row by row (``null`` rows must read as SQL NULL);
* cases with ``error_message`` must raise a ``VarlakeError``;
* ``INVALID``-named cases may raise or read; what varlake does is pinned in
  ``INVALID_DECISIONS`` with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from varlake.errors import InvalidShreddedLayoutError, VarlakeError
from varlake.io.parquet_read import read_parquet
from varlake.shred import UNSHREDDED_TYPE
from varlake.shred.arrow_extension import VariantExtensionType
from varlake.variant import Variant

CASES_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "testdata" / "parquet-testing" / "shredded_variant"


def _cases() -> list[dict[str, Any]]:
    return json.loads((CASES_DIR / "cases.json").read_text())


CASES = _cases()
VALID = [c for c in CASES if "error_message" not in c and "INVALID" not in c["parquet_file"]]
ERRORS = [c for c in CASES if "error_message" in c]
INVALID = [c for c in CASES if "INVALID" in c["parquet_file"]]

# INVALID cases: the spec lets readers fail or read; varlake fails whenever the same
# field is defined both in a shredded column and in the residual object, because the
# two sources disagree and any choice would silently drop data.
INVALID_DECISIONS: dict[int, tuple[str, str]] = {
    43: (
        "raise",
        "testPartiallyShreddedObjectMissingFieldConflict: residual value object holds field 'b', which is also a "
        "shredded field (missing in this row); reading would have to either drop the residual's 'b' (Iceberg's "
        "answer) or contradict the shredded column, so varlake raises",
    ),
    125: (
        "raise",
        "testPartiallyShreddedObjectFieldConflict: field 'b' is present both in typed_value.b and in the residual "
        "value object; the spec says engines should fail",
    ),
}


def _read_rows(case: dict[str, Any], testdata: Path) -> list[dict[str, bytes] | None]:
    path = testdata / "parquet-testing" / "shredded_variant" / case["parquet_file"]
    table = read_parquet(path)
    column = table.column("var")
    assert column.type == VariantExtensionType(UNSHREDDED_TYPE)
    return column.to_pylist()


def _expected_files(case: dict[str, Any]) -> list[str | None]:
    return case.get("variant_files") or [case["variant_file"]]


def test_case_list_is_complete() -> None:
    """Every case is in exactly one group, and every INVALID case has a decision."""
    assert len(VALID) + len(ERRORS) + len(INVALID) == len(CASES) == 92
    assert {c["case_number"] for c in INVALID} == set(INVALID_DECISIONS)


@pytest.mark.parametrize("case", VALID, ids=lambda c: f"case-{c['case_number']:03d}-{c['test']}")
def test_valid_case_reads_expected_variant(case: dict[str, Any], testdata: Path) -> None:
    rows = _read_rows(case, testdata)
    expected = _expected_files(case)
    assert len(rows) == len(expected)
    for i, name in enumerate(expected):
        if name is None:
            assert rows[i] is None, f"row {i} should be SQL NULL"
            continue
        want = Variant.from_bytes((testdata / "parquet-testing" / "shredded_variant" / name).read_bytes())
        assert rows[i] is not None, f"row {i} is NULL, expected {want}"
        got = Variant(rows[i]["metadata"], rows[i]["value"])
        got.validate()
        assert got == want, f"row {i}: got {got}, expected {want}"


@pytest.mark.parametrize("case", ERRORS, ids=lambda c: f"case-{c['case_number']:03d}-{c['test']}")
def test_error_case_raises(case: dict[str, Any], testdata: Path) -> None:
    with pytest.raises(VarlakeError) as info:
        _read_rows(case, testdata)
    message = str(info.value)
    # the message locates the problem: file, column and path (and the row for data errors)
    assert case["parquet_file"] in message and "'var'" in message and "path $" in message


@pytest.mark.parametrize("case", INVALID, ids=lambda c: f"case-{c['case_number']:03d}-{c['test']}")
def test_invalid_case_follows_decision(case: dict[str, Any], testdata: Path) -> None:
    decision, reason = INVALID_DECISIONS[case["case_number"]]
    assert decision == "raise", reason
    with pytest.raises(InvalidShreddedLayoutError, match=r"row 0, path \$: field 'b' is both shredded and present"):
        _read_rows(case, testdata)


def test_error_messages_name_the_unsupported_type(testdata: Path) -> None:
    base = testdata / "parquet-testing" / "shredded_variant"
    with pytest.raises(InvalidShreddedLayoutError, match=r"INTEGER\(32,false\)"):
        read_parquet(base / "case-127.parquet")
    with pytest.raises(InvalidShreddedLayoutError, match=r"fixed_len_byte_array\(4\)"):
        read_parquet(base / "case-137.parquet")
    with pytest.raises(InvalidShreddedLayoutError, match=r"row 0, path \$\[\*\]: both value and typed_value"):
        read_parquet(base / "case-040.parquet")
    with pytest.raises(InvalidShreddedLayoutError, match=r"row 0, path \$: non-object value next to shredded object"):
        read_parquet(base / "case-128.parquet")
