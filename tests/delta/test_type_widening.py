"""Type widening (PROTOCOL.md "Type Widening"): the allowed changes, validation of
``delta.typeChanges``, and reads of files written before a widening giving the exact values
in the wider type (hand-built tables: narrow files, widened schema)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import varlake
from handmade_tables import add, commit, field, metadata, protocol, struct
from varlake.delta.schema import parse_schema
from varlake.delta.type_widening import is_widening, validate_type_changes
from varlake.errors import UnsupportedTypeChangeError

ALLOWED = [
    ("byte", "short"), ("byte", "integer"), ("byte", "long"), ("short", "integer"), ("short", "long"),
    ("integer", "long"), ("float", "double"), ("byte", "double"), ("short", "double"), ("integer", "double"),
    ("date", "timestamp_ntz"), ("decimal(5,2)", "decimal(7,3)"), ("decimal(5,2)", "decimal(6,2)"),
    ("decimal(10,2)", "decimal(38,2)"), ("integer", "decimal(10,0)"), ("byte", "decimal(12,2)"),
    ("long", "decimal(20,0)"), ("long", "decimal(25,5)"), ("short", "decimal(11,1)"),
]  # fmt: skip
REFUSED = [
    ("long", "integer"), ("string", "integer"), ("integer", "string"), ("long", "double"), ("double", "float"),
    ("timestamp_ntz", "date"), ("date", "timestamp"), ("decimal(5,2)", "decimal(6,4)"), ("decimal(5,2)", "decimal(4,2)"),
    ("integer", "decimal(9,0)"), ("long", "decimal(19,0)"), ("integer", "decimal(11,2)"), ("float", "decimal(38,10)"),
    ("boolean", "integer"), ("integer", "float"),
]  # fmt: skip


@pytest.mark.parametrize(("src", "dst"), ALLOWED)
def test_allowed_widenings(src: str, dst: str) -> None:
    assert is_widening(src, dst)


@pytest.mark.parametrize(("src", "dst"), REFUSED)
def test_refused_changes(src: str, dst: str) -> None:
    assert not is_widening(src, dst)


def _schema_with_change(src: str, dst: str, field_path: str | None = None, dtype: Any = None) -> str:
    change = {"fromType": src, "toType": dst, "tableVersion": 1}
    if field_path is not None:
        change["fieldPath"] = field_path
    import json

    return json.dumps(struct(field("c", dtype if dtype is not None else dst, **{"delta.typeChanges": [change]})))


@pytest.mark.parametrize(("src", "dst"), [("long", "integer"), ("string", "integer"), ("double", "float")])
def test_unsupported_type_change_is_a_named_error(src: str, dst: str) -> None:
    with pytest.raises(UnsupportedTypeChangeError, match=f"field 'c'.*unsupported type change {src} -> {dst}"):
        validate_type_changes(parse_schema(_schema_with_change(src, dst)), "t")


def test_nested_type_change_paths() -> None:
    validate_type_changes(parse_schema(_schema_with_change("integer", "long", "element", {"type": "array", "elementType": "long", "containsNull": True})))
    bad = _schema_with_change("long", "integer", "value", {"type": "map", "keyType": "string", "valueType": "integer", "valueContainsNull": True})
    with pytest.raises(UnsupportedTypeChangeError, match=r"\(value\): unsupported type change long -> integer"):
        validate_type_changes(parse_schema(bad))
    nowhere = _schema_with_change("integer", "long", "element", "long")
    with pytest.raises(UnsupportedTypeChangeError, match="fieldPath 'element'"):
        validate_type_changes(parse_schema(nowhere))


TW_PROTOCOL = protocol(3, 7, ["typeWidening"], ["typeWidening"])


def test_table_with_unsupported_type_change_is_refused(tmp_path: Path) -> None:
    import json

    root = tmp_path / "t"
    schema = json.loads(_schema_with_change("string", "integer"))
    commit(root, 0, TW_PROTOCOL, metadata(schema), add(root, "f.parquet", pa.table({"c": pa.array([1], pa.int32())})))
    with pytest.raises(UnsupportedTypeChangeError, match="string -> integer"):
        varlake.Table(root).scan().to_arrow()


def test_file_type_not_a_widening_is_named(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema = struct(field("c", "integer"), field("d", "decimal(12,1)"))
    data = pa.table({"c": ["1"], "d": pa.array([Decimal("1.25")], pa.decimal128(10, 2))})
    commit(root, 0, protocol(1, 2), metadata(schema), add(root, "f.parquet", data))
    with pytest.raises(UnsupportedTypeChangeError, match="f.parquet: column 'c'.*holds string, the table says integer"):
        varlake.Table(root).scan(columns=["c"]).to_arrow()
    with pytest.raises(UnsupportedTypeChangeError, match="column 'd'.*decimal\\(10,2\\).*decimal\\(12,1\\)"):
        varlake.Table(root).scan(columns=["d"]).to_arrow()


def test_writes_to_widened_tables_use_the_wide_type(tmp_path: Path) -> None:
    root = tmp_path / "t"
    commit(root, 0, TW_PROTOCOL, metadata(struct(field("c", "long"))), add(root, "f.parquet", pa.table({"c": pa.array([1], pa.int32())})))
    table = varlake.Table(root)
    table.append(pa.table({"c": pa.array([2**40], pa.int64())}))  # writers may write widened tables
    assert sorted(table.scan().to_arrow().column("c").to_pylist()) == [1, 2**40]
    assert table.snapshot().metadata == table.snapshot(0).metadata  # no type (or typeChanges) is touched


# --- property: narrow files read as the exact widened values ------------------------------------

_ARROW = {
    "byte": pa.int8(), "short": pa.int16(), "integer": pa.int32(), "long": pa.int64(), "float": pa.float32(),
    "double": pa.float64(), "date": pa.date32(), "timestamp_ntz": pa.timestamp("us"),
}  # fmt: skip
_BOUNDS = {"byte": 7, "short": 15, "integer": 31, "long": 63}


def _narrow_values(src: str) -> st.SearchStrategy[Any]:
    if src in _BOUNDS:
        b = _BOUNDS[src]
        return st.integers(-(2**b), 2**b - 1)
    if src == "float":
        return st.floats(width=32, allow_nan=False)
    if src == "date":
        return st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))
    p, s = map(int, src[len("decimal(") : -1].split(","))
    return st.decimals(min_value=-(10 ** (p - s)) + 1, max_value=10 ** (p - s) - 1, places=s, allow_nan=False, allow_infinity=False)


def _arrow_type(name: str) -> pa.DataType:
    if name.startswith("decimal("):
        p, s = map(int, name[len("decimal(") : -1].split(","))
        return pa.decimal128(p, s)
    return _ARROW[name]


def _widened(value: Any, dst: str) -> Any:
    """The exact value in the wider type, computed independently of the reader."""
    if value is None:
        return None
    if dst == "timestamp_ntz":
        return dt.datetime.combine(value, dt.time())
    if dst.startswith("decimal("):
        _, s = map(int, dst[len("decimal(") : -1].split(","))
        return Decimal(value).quantize(Decimal(1).scaleb(-s))
    if dst == "double":
        return float(value)
    return value


_PAIRS = ALLOWED


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(data=st.data(), pair=st.sampled_from(_PAIRS))
def test_narrow_files_read_widened_exactly(tmp_path_factory: Any, data: Any, pair: tuple[str, str]) -> None:
    src, dst = pair
    values = data.draw(st.lists(st.one_of(st.none(), _narrow_values(src)), min_size=1, max_size=6))
    root = tmp_path_factory.mktemp("tw")
    changes = [{"fromType": src, "toType": dst, "tableVersion": 1}]
    elem_changes = [{"fromType": src, "toType": dst, "tableVersion": 1, "fieldPath": "element"}]
    schema = struct(
        field("c", dst, **{"delta.typeChanges": changes}),
        field("a", {"type": "array", "elementType": dst, "containsNull": True}, **{"delta.typeChanges": elem_changes}),
        field("s", struct(field("n", dst, **{"delta.typeChanges": changes}))),
    )  # fmt: skip
    t = _arrow_type(src)
    narrow = pa.table(
        {
            "c": pa.array(values, t),
            "a": pa.array([values] + [None] * (len(values) - 1), pa.list_(t)),
            "s": pa.array([{"n": v} for v in values], pa.struct([("n", t)])),
        }
    )
    widened = [_widened(v, dst) for v in values]
    commit(root, 0, TW_PROTOCOL, metadata(schema, {"delta.enableTypeWidening": "true"}), add(root, "narrow.parquet", narrow))
    out = varlake.Table(root).scan().to_arrow()
    assert out.schema.field("c").type == _arrow_type(dst)
    assert out.column("c").to_pylist() == widened
    assert out.column("a").to_pylist()[0] == widened
    assert [r["n"] for r in out.column("s").to_pylist()] == widened


def _retyped(table: varlake.Table, column: str, new_type: str, changes: list | None = None) -> Any:
    import dataclasses
    import json

    snap = table.snapshot()
    doc = json.loads(snap.metadata.schema_string)
    for f in doc["fields"]:
        if f["name"] == column:
            f["type"] = new_type
            if changes is not None:
                f["metadata"] = {**f.get("metadata", {}), "delta.typeChanges": changes}
    return dataclasses.replace(snap.metadata, schema_string=json.dumps(doc))


def test_a_commit_may_not_retype_a_column_files_still_hold(tmp_path: Path) -> None:
    """PROTOCOL.md: a data file column in the schema must keep its type (unless widened under
    the typeWidening feature): a raw metadata commit that retypes one is refused."""
    from varlake.errors import UnsupportedTypeChangeError

    table = varlake.Table.create(tmp_path / "t", "id int, s string")
    table.append([{"id": 1, "s": "a"}])
    for new_type, changes in (("string", None), ("long", None), ("long", [{"fromType": "integer", "toType": "long"}])):
        with pytest.raises(UnsupportedTypeChangeError, match="'id' changes type integer -> "):
            table.commit_files([_retyped(table, "id", new_type, changes)], "append")
    assert table.version == 1 and table.scan().to_arrow().column("id").to_pylist() == [1]
    # an overwrite that removes every old file may retype (Delta's overwriteSchema)
    table.commit_files([_retyped(table, "id", "string")], "overwrite")
    assert table.schema.field("id").type.name == "string"


def test_a_recorded_widening_may_be_committed_on_a_type_widening_table(tmp_path: Path) -> None:
    root = tmp_path / "t"
    commit(root, 0, TW_PROTOCOL, metadata(struct(field("c", "integer"))), add(root, "f.parquet", pa.table({"c": pa.array([7], pa.int32())})))
    table = varlake.Table(root)
    with pytest.raises(UnsupportedTypeChangeError):  # a widening, but not recorded
        table.commit_files([_retyped(table, "c", "long")], "append")
    table.commit_files([_retyped(table, "c", "long", [{"fromType": "integer", "toType": "long"}])], "append")
    table.append(pa.table({"c": pa.array([2**40], pa.int64())}))
    assert sorted(table.scan().to_arrow().column("c").to_pylist()) == [7, 2**40]
