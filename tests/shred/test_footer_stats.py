"""Delta Variant statistics from Parquet footers."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from varlake.errors import ShreddingError
from varlake.io.parquet_write import write_parquet
from varlake.shred.shred import variant_array
from varlake.shred.stats import MAX_CODE_POINT, delta_stats, string_bounds, utf16_prefix, variant_footer_stats
from varlake.variant import Variant, decode_variant_stat, parse_json
from varlake.variant.constants import PrimitiveType

TABLE = "delta/variant-stats-no-checkpoint"


def _add_stats(testdata: Path) -> tuple[Path, dict]:
    table = testdata / TABLE
    adds = [json.loads(line)["add"] for line in (table / "_delta_log/00000000000000000001.json").read_text().splitlines() if '"add"' in line]
    assert len(adds) == 1
    return table / adds[0]["path"], json.loads(adds[0]["stats"])


def test_delta_testdata_stats_are_reproduced_from_the_footer(testdata: Path) -> None:
    data_file, expected = _add_stats(testdata)
    stats = variant_footer_stats(data_file)
    assert set(stats) == {("v",), ("nv", "v")}
    ours = delta_stats(stats)
    for kind in ("minValues", "maxValues"):
        assert decode_variant_stat(ours[kind]["v"]) == decode_variant_stat(expected[kind]["v"])
        assert decode_variant_stat(ours[kind]["nv"]["v"]) == decode_variant_stat(expected[kind]["nv"]["v"])
    assert ours["nullCount"] == {"v": expected["nullCount"]["v"], "nv": expected["nullCount"]["nv"]}
    # Same primitive types as Delta wrote (int64 stays int64, strings stay strings).
    mine = stats[("v",)].min_values
    theirs = decode_variant_stat(expected["minValues"]["v"])
    assert mine is not None
    assert {k: x.primitive_type for k, x in mine.items()} == {k: x.primitive_type for k, x in theirs.items()}


def _write(tmp_path: Path, rows: list[object], ddl: str, **kw: object) -> Path:
    path = tmp_path / "f.parquet"
    variants = [None if r is None else Variant.from_python(r) for r in rows]
    write_parquet(pa.table({"v": variant_array(variants)}), path, shredding={"v": ddl}, **kw)  # type: ignore[arg-type]
    return path


def _py(v: Variant | None) -> dict | None:
    return None if v is None else v.to_python()


def test_bounds_per_path_with_types_kept(tmp_path: Path) -> None:
    ts = dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone.utc)
    rows = [
        {"i8": 5, "i64": 10**12, "d": Decimal("1.25"), "day": dt.date(2024, 1, 2), "ts": ts, "ntz": dt.datetime(2020, 1, 1), "s": "m", "o": {"x": -3}},
        {"i8": -7, "i64": -1, "d": Decimal("-9.50"), "day": dt.date(1999, 12, 31), "ts": ts + dt.timedelta(days=1), "ntz": dt.datetime(2021, 1, 1), "s": "a", "o": {"x": 4}},
        None,
        {"s": "z"},
    ]
    path = _write(tmp_path, rows, "i8 tinyint, i64 bigint, d decimal(10,2), day date, ts timestamp, ntz timestamp_ntz, s string, o struct<x: int>")
    st = variant_footer_stats(path)[("v",)]
    assert st.null_count == 1
    assert _py(st.min_values) == {
        "$['i8']": -7, "$['i64']": -1, "$['d']": Decimal("-9.50"), "$['day']": dt.date(1999, 12, 31), "$['ts']": ts,
        "$['ntz']": dt.datetime(2020, 1, 1), "$['s']": "a", "$['o']['x']": -3,
    }
    assert _py(st.max_values) == {
        "$['i8']": 5, "$['i64']": 10**12, "$['d']": Decimal("1.25"), "$['day']": dt.date(2024, 1, 2), "$['ts']": ts + dt.timedelta(days=1),
        "$['ntz']": dt.datetime(2021, 1, 1), "$['s']": "z", "$['o']['x']": 4,
    }
    assert st.min_values is not None
    types = {k: x.primitive_type for k, x in st.min_values.items()}
    assert types["$['i8']"] == PrimitiveType.INT8 and types["$['o']['x']"] == PrimitiveType.INT32
    assert types["$['d']"] == PrimitiveType.DECIMAL8 and types["$['ts']"] == PrimitiveType.TIMESTAMP
    assert types["$['ntz']"] == PrimitiveType.TIMESTAMP_NTZ and types["$['day']"] == PrimitiveType.DATE


def test_a_path_with_any_unshredded_value_gets_no_stats(tmp_path: Path) -> None:
    rows = [{"a": 1, "b": 1}, {"a": "text", "b": 2}, {"a": None, "b": 3}]
    st = variant_footer_stats(_write(tmp_path, rows, "a bigint, b bigint"))[("v",)]
    assert _py(st.min_values) == {"$['b']": 1} and _py(st.max_values) == {"$['b']": 3}


def test_conservative_exclusions(tmp_path: Path) -> None:
    rows = [{"arr": [1, 2], "objs": [{"k": 1}], "flag": True, "bin": b"x", "dbl": 1.5, "n": 1}]
    path = _write(tmp_path, rows, "arr array<bigint>, objs array<struct<k: int>>, flag boolean, bin binary, dbl double, n int")
    st = variant_footer_stats(path)[("v",)]
    assert _py(st.min_values) == {"$['n']": 1}


def test_bounds_merge_across_row_groups_and_skip_empty_groups(tmp_path: Path) -> None:
    rows: list[object] = [{"a": i, "s": f"k{i:03d}"} for i in range(10)] + [{"other": 1}] * 5 + [{"a": -4, "s": "b"}]
    path = _write(tmp_path, rows, "a int, s string", row_group_size=5)
    assert pq.read_metadata(path).num_row_groups == 4
    st = variant_footer_stats(path)[("v",)]
    assert _py(st.min_values) == {"$['a']": -4, "$['s']": "b"}
    assert _py(st.max_values) == {"$['a']": 9, "$['s']": "k009"}


def test_one_unshredded_value_in_any_row_group_disqualifies_the_path(tmp_path: Path) -> None:
    rows: list[object] = [{"a": i} for i in range(10)] + [{"a": "late"}]
    st = variant_footer_stats(_write(tmp_path, rows, "a int", row_group_size=5))[("v",)]
    assert st.min_values is None and st.max_values is None


def test_long_strings_are_cut_and_the_max_stays_an_upper_bound(tmp_path: Path) -> None:
    long_a = "a" * 40
    long_b = "b" * 50
    path = _write(tmp_path, [{"s": long_a}, {"s": long_b}], "s string")
    st = variant_footer_stats(path)[("v",)]
    assert _py(st.min_values) == {"$['s']": "a" * 32}
    assert _py(st.max_values) == {"$['s']": "b" * 32 + MAX_CODE_POINT}
    assert _py(st.max_values)["$['s']"] > long_b  # type: ignore[index]
    top = MAX_CODE_POINT * 40
    path = _write(tmp_path, [{"s": "a"}, {"s": top}], "s string")
    st = variant_footer_stats(path)[("v",)]
    assert _py(st.min_values) == {"$['s']": "a"}
    assert st.max_values is None  # no upper bound within 32 characters exists


def test_string_bound_helpers() -> None:
    assert utf16_prefix("ab\U0001f600c", 3) == "ab"  # never splits a surrogate pair
    assert utf16_prefix("ab\U0001f600c", 4) == "ab\U0001f600"
    assert string_bounds("abc", "abd", 32) == ("abc", "abd")
    assert string_bounds("x" * 33, "y" * 33, 32) == ("x" * 32, "y" * 32 + MAX_CODE_POINT)


def test_keys_use_delta_escaping(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"it's": 1, "back\\slash": 2, "tab\t": 3}], "`it's` int, `back\\slash` int, `tab\t` int")
    st = variant_footer_stats(path)[("v",)]
    assert st.min_values is not None
    assert sorted(st.min_values.keys()) == sorted(["$['it\\'s']", "$['back\\\\slash']", "$['tab\\t']"])


def test_unshredded_and_nested_columns(tmp_path: Path) -> None:
    docs = [parse_json('{"a": 1}'), None, parse_json('{"a": 3}')]
    inner = pa.StructArray.from_arrays([variant_array(docs)], names=["v"], mask=pa.array([False, False, True]))
    path = tmp_path / "f.parquet"
    write_parquet(pa.table({"u": variant_array(docs), "nv": inner}), path, shredding={"nv.v": "a int"})
    stats = variant_footer_stats(path)
    assert stats[("u",)].null_count == 1 and stats[("u",)].min_values is None
    nested = stats[("nv", "v")]
    assert nested.null_count == 2  # null Variant plus null parent struct
    assert _py(nested.min_values) == {"$['a']": 1} and _py(nested.max_values) == {"$['a']": 1}
    frag = delta_stats(stats)
    assert frag["nullCount"] == {"u": 1, "nv": {"v": 2}}
    assert "u" not in frag["minValues"] and decode_variant_stat(frag["minValues"]["nv"]["v"]) == nested.min_values


def test_top_level_typed_leaf_uses_the_root_path(tmp_path: Path) -> None:
    path = _write(tmp_path, [3, 9, -2], "bigint")
    st = variant_footer_stats(path)[("v",)]
    assert _py(st.min_values) == {"$": -2} and _py(st.max_values) == {"$": 9}


def test_bad_requests(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"x": [1]}), path)
    assert variant_footer_stats(path) == {}
    with pytest.raises(ShreddingError):
        variant_footer_stats(path, columns=["x"])
    with pytest.raises(ShreddingError):
        variant_footer_stats(tmp_path / "missing.parquet")
