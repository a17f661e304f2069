"""Collated string columns (the ``collations`` feature): readable, but a filter on a column
whose collation is not UTF8_BINARY is refused by name, never evaluated byte-wise."""

from __future__ import annotations

import pytest

from golden_expected import GOLDEN
from varlake import Table
from varlake.errors import UnsupportedFeatureError

TABLE = GOLDEN / "collations-preview-table"


@pytest.mark.parametrize(("column", "collation"), [("utf8_lcase_col", "UTF8_LCASE"), ("unicode_col", "icu.UNICODE")])
def test_filter_on_a_collated_column_is_refused(column: str, collation: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=f"{column}.*{collation}"):
        Table(TABLE).scan(f"{column} = 'a' OR id > 0").to_arrow()


def test_binary_collation_and_other_columns_filter() -> None:
    table = Table(TABLE)
    assert table.scan("utf8_binary_col = 'a' AND id > 0").to_arrow().num_rows == 0
    assert table.scan().to_arrow().column_names == ["id", "utf8_binary_col", "utf8_lcase_col", "unicode_col"]
