"""Writes to column-mapped tables through ``Table`` (PROTOCOL.md "Writer Requirements for
Column Mapping"): new tables get ids, ``col-<uuid>`` physical names, ``maxColumnId`` and the
``columnMapping`` protocol; data files hold physical names (nested too) with Parquet field ids
in both modes; statistics and partition values are keyed by physical names; Variant groups
are unmapped inside. Oracles: ``deltalake`` (reads name-mode tables), ``pyarrow.parquet``
footers, and appends to copies of Delta's own mapped golden tables next to Delta's files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from golden_expected import GOLDEN
from mapped_writes import ID, PHYSICAL, check_add, check_footer, same_layout
from varlake import Table, Variant
from varlake.delta import constants as C
from varlake.delta.actions import Metadata, Protocol
from varlake.delta.column_mapping import assign_column_mapping, mapping_signature
from varlake.delta.ddl import parse_ddl
from varlake.delta.protocol import legacy_writer_features, required_protocol
from varlake.errors import ColumnMappingError, CommitConflictError, InvalidCommitError
from varlake.write import PendingWrite, commit_write

golden = pytest.mark.usefixtures("golden_tables")

NESTED = "id bigint, s struct<a: int, t: struct<b: string>>, l array<struct<x: int>>, m map<string, struct<y: bigint>>"
NESTED_ROWS = [
    {"id": 1, "s": {"a": 1, "t": {"b": "x"}}, "l": [{"x": 3}, {"x": 4}], "m": [("k", {"y": 7})]},
    {"id": 2, "s": None, "l": None, "m": None},
    {"id": 3, "s": {"a": None, "t": None}, "l": [], "m": [("j", None)]},
]


#: deletion vectors (on by default for new tables) off: deltalake 1.6 refuses them
NO_DV = {C.PROP_ENABLE_DELETION_VECTORS: "false"}


def _mapped(root: Path, ddl: str, mode: str = "name", partition_by: tuple[str, ...] = (), **props: str) -> Table:
    return Table.create(root, ddl, partition_by, {C.PROP_COLUMN_MAPPING_MODE: mode, **NO_DV, **props})


def _rows(table: Table, version: int | None = None) -> list[dict[str, Any]]:
    return sorted(table.scan(version=version).to_arrow().to_pylist(), key=lambda r: r["id"])


def _maps_as_lists(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "m": None if r["m"] is None else [tuple(kv) for kv in r["m"]]} for r in rows]


def _deltalake_rows(root: Path) -> list[dict[str, Any]]:
    """The table as delta-rs reads it (its query engine honours name-mode mapping)."""
    import deltalake

    table = deltalake.DeltaTable(str(root))
    result = deltalake.QueryBuilder().register("t", table).execute("SELECT * FROM t").read_all()
    return sorted(pa.table(result).to_pylist(), key=lambda r: r["id"])


def _add_actions(root: Path, version: int) -> list[dict[str, Any]]:
    lines = (root / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    return [json.loads(line)["add"] for line in lines if line.startswith('{"add"')]


# --- creating ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["name", "id"])
def test_create_assigns_ids_physical_names_and_protocol(tmp_path: Path, mode: str) -> None:
    table = _mapped(tmp_path / "t", NESTED, mode)
    fields = []

    def walk(dtype: Any) -> None:
        for f in getattr(dtype, "fields", ()):
            fields.append(f)
            walk(f.type)
        for child in ("element_type", "key_type", "value_type"):
            if hasattr(dtype, child):
                walk(getattr(dtype, child))

    walk(table.schema)
    assert [f.name for f in fields] == ["id", "s", "a", "t", "b", "l", "x", "m", "y"]
    assert sorted(f.metadata[ID] for f in fields) == list(range(1, 10))
    names = [f.metadata[PHYSICAL] for f in fields]
    assert len(set(names)) == 9 and all(n.startswith("col-") and len(n) == 40 for n in names)
    assert table.properties["delta.columnMapping.maxColumnId"] == "9"
    assert table.protocol == Protocol(2, 5)  # as Delta creates a mapped table needing nothing newer


def test_create_with_table_features_lists_column_mapping(tmp_path: Path) -> None:
    table = _mapped(tmp_path / "t", "id bigint, v variant")
    p = table.protocol
    assert (p.min_reader_version, p.min_writer_version) == (3, 7)
    assert C.COLUMN_MAPPING in p.reader_feature_set and C.COLUMN_MAPPING in p.writer_feature_set


def test_create_refuses_an_unknown_mode(tmp_path: Path) -> None:
    with pytest.raises(ColumnMappingError, match="sideways"):
        _mapped(tmp_path / "t", "id bigint", "sideways")
    assert not (tmp_path / "t" / "_delta_log").exists()


def test_property_driven_features_on_create(tmp_path: Path) -> None:
    """``delta.constraints.*`` -> checkConstraints (legacy writer 3, as Delta); with table
    features needed anyway it is listed; CDF -> writer 4; appendOnly stays writer 2."""
    t = Table.create(tmp_path / "c", "id bigint", properties={"delta.constraints.pos": "id > 0", **NO_DV})
    assert t.protocol == Protocol(1, 3) and C.CHECK_CONSTRAINTS in legacy_writer_features(3)
    v = Table.create(tmp_path / "v", "id bigint, v variant", properties={"delta.constraints.pos": "id > 0"})
    assert C.CHECK_CONSTRAINTS in v.protocol.writer_feature_set
    f = Table.create(tmp_path / "f", "id bigint", properties={"delta.enableChangeDataFeed": "true", **NO_DV})
    assert f.protocol == Protocol(1, 4)
    assert Table.create(tmp_path / "a", "id bigint", properties={"delta.appendOnly": "true", **NO_DV}).protocol == Protocol(1, 2)
    dv = Table.create(tmp_path / "d", "id bigint", properties={"delta.appendOnly": "true", "delta.constraints.pos": "id > 0"})
    assert {C.APPEND_ONLY, C.CHECK_CONSTRAINTS, C.DELETION_VECTORS} <= dv.protocol.writer_feature_set
    both = {"delta.constraints.pos": "id > 0", C.PROP_COLUMN_MAPPING_MODE: "name"}
    assert required_protocol(parse_ddl("id bigint"), both) == Protocol(2, 5)
    with pytest.raises(Exception, match="pos"):  # and the constraint is honoured
        t.append([{"id": -1}])


# --- data files -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["name", "id"])
def test_files_hold_physical_names_field_ids_and_physical_stats(tmp_path: Path, mode: str) -> None:
    root = tmp_path / "t"
    table = _mapped(root, NESTED, mode)
    table.append(NESTED_ROWS)
    (add,) = table.files()
    check_footer(table.data_file(add), table.schema)
    stats = check_add(add, table.schema)
    s_phys = table.schema.field("s").metadata[PHYSICAL]
    assert stats["nullCount"][s_phys]  # nested stats under physical names too
    assert _maps_as_lists(_rows(Table(root))) == _maps_as_lists(NESTED_ROWS)


def test_deltalake_reads_what_varlake_wrote(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _mapped(root, "id bigint, s struct<a: int, b: string>, l array<struct<x: int>>")
    rows = [{"id": i, "s": {"a": i, "b": str(i)}, "l": [{"x": i}]} for i in range(5)]
    table.append(rows[:3])
    table.append(rows[3:])
    assert _deltalake_rows(root) == rows == _rows(table)


def test_partitioned_mapped_table(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = _mapped(root, "id bigint, p string, q int, s struct<a: int>", partition_by=("p", "q"))
    rows = [{"id": i, "p": "ab"[i % 2], "q": i % 3 if i != 5 else None, "s": {"a": i}} for i in range(8)]
    table.append(rows)
    p_phys, q_phys = (table.schema.field(c).metadata[PHYSICAL] for c in ("p", "q"))
    for add in table.files():
        check_add(add, table.schema, ("p", "q"))
        assert add.path.startswith(f"{p_phys}=")  # directories by physical name, as Delta writes them
        check_footer(table.data_file(add), table.schema, ("p", "q"))
    assert _rows(table) == rows
    assert _deltalake_rows(root) == rows
    assert len(table.scan("p = 'a'").plan().skipped_by_partition) == 3
    assert sorted(r["id"] for r in table.scan("q IS NULL").to_arrow().to_pylist()) == [5]
    assert {q_phys, p_phys} == set(table.files()[0].partition_values)


@pytest.mark.parametrize("mode", ["name", "id"])
def test_variant_columns_map_only_their_own_name(tmp_path: Path, mode: str) -> None:
    """Shredded and unshredded Variants (top level and in a struct): the group's fields keep
    their names; path statistics keyed by the physical column still skip files and never drop."""
    root = tmp_path / "t"
    table = _mapped(root, "id bigint, v variant, n struct<w: variant>", mode, **{"delta.enableVariantShredding": "true"})
    batches = [
        [{"id": i, "v": Variant.from_python({"a": i, "b": "x"}), "n": {"w": _raw({"c": i})}} for i in range(0, 5)],
        [{"id": i, "v": Variant.from_python({"a": i, "b": "y"}), "n": {"w": _raw({"c": i})}} for i in range(10, 15)],
        [{"id": 20, "v": None, "n": None}],
    ]
    for batch in batches:
        table.append(batch)
    for add in table.files():
        arrow = check_footer(table.data_file(add), table.schema)
        check_add(add, table.schema)
    v_field = arrow.field(table.schema.field("v").metadata[PHYSICAL])
    assert v_field.type.get_field_index("typed_value") >= 0  # shredded under the physical column
    assert Table(root).shredding_schemas()  # the stored shredding schema is keyed logically
    every = table.scan().to_arrow().to_pylist()
    assert sorted(r["id"] for r in every) == [0, 1, 2, 3, 4, 10, 11, 12, 13, 14, 20]
    for where, ids in [
        ("v:a::int >= 10", [10, 11, 12, 13, 14]),
        ("v:a::int = 3", [3]),
        ("n.w:c::int < 2", [0, 1]),
        ("v:b::string = 'x'", [0, 1, 2, 3, 4]),
    ]:
        scan = table.scan(where)
        assert sorted(r["id"] for r in scan.to_arrow().to_pylist()) == ids, where
        assert scan.plan().skipped, where  # the physical path stats are used


def _raw(value: Any) -> dict[str, bytes]:
    v = Variant.from_python(value)
    return {"metadata": v.metadata, "value": v.value}


def test_skipping_never_drops_live_rows(tmp_path: Path) -> None:
    table = _mapped(tmp_path / "t", "id bigint, s struct<a: int, b: string>, k string", "id", partition_by=("k",))
    for start in range(0, 40, 10):
        table.append([{"id": i, "s": {"a": i * 2, "b": f"b{i:02}"}, "k": "kx"[i % 2]} for i in range(start, start + 10)])
    every = _rows(table)
    skipped = 0
    for where, keep in [
        ("id >= 30", lambda r: r["id"] >= 30),
        ("s.a < 10", lambda r: r["s"]["a"] < 10),
        ("s.b = 'b15'", lambda r: r["s"]["b"] == "b15"),
        ("k = 'x' AND id < 12", lambda r: r["k"] == "x" and r["id"] < 12),
        ("id IS NULL OR s.a > 70", lambda r: r["s"]["a"] > 70),
    ]:
        scan = table.scan(where)
        assert _rows_of(scan) == [r for r in every if keep(r)], where
        skipped += len(scan.plan().skipped)
    assert skipped >= 12


def _rows_of(scan: Any) -> list[dict[str, Any]]:
    return sorted(scan.to_arrow().to_pylist(), key=lambda r: r["id"])


def test_time_travel_and_overwrite(tmp_path: Path) -> None:
    table = _mapped(tmp_path / "t", "id bigint, s struct<a: int>")
    table.append([{"id": 1, "s": {"a": 1}}])
    table.append([{"id": 2, "s": {"a": 2}}])
    table.overwrite([{"id": 3, "s": None}])
    assert [r["id"] for r in _rows(table, 1)] == [1]
    assert [r["id"] for r in _rows(table, 2)] == [1, 2]
    assert _rows(table) == [{"id": 3, "s": None}]
    table.checkpoint()
    assert _rows(Table(table.path), 2) == [{"id": 1, "s": {"a": 1}}, {"id": 2, "s": {"a": 2}}]


def test_row_changes_on_a_mapped_table(tmp_path: Path) -> None:
    """DELETE (deletion vectors) and UPDATE (new files through ``Table.stage``) keep the
    mapped layout; deltalake is not asked (it refuses deletion vectors)."""
    table = Table.create(tmp_path / "t", "id bigint, s struct<a: int>, p string", ["p"], {C.PROP_COLUMN_MAPPING_MODE: "id"})
    table.append([{"id": i, "s": {"a": i}, "p": "xy"[i % 2]} for i in range(10)])
    table.delete("id < 3")
    table.update(where="s.a = 5", set={"id": "id + 100"})
    assert [r["id"] for r in _rows(table)] == [3, 4, 6, 7, 8, 9, 105]
    for add in table.files():
        check_add(add, table.schema, ("p",))
        check_footer(table.data_file(add), table.schema, ("p",))
    assert [r["id"] for r in _rows(table, 1)] == list(range(10))


# --- schema evolution -------------------------------------------------------------------------


def test_new_columns_get_fresh_ids_and_names(tmp_path: Path) -> None:
    table = _mapped(tmp_path / "t", "id bigint, s struct<a: int>")
    table.append([{"id": 1, "s": {"a": 1}}])
    old = table.snapshot()
    grown = parse_ddl("id bigint, s struct<a: int, z: string>, extra double")
    # keep the existing fields' mapping, as an engine evolving the schema does
    kept = {f.name: f for f in old.schema.fields}
    s_old = kept["s"]
    from varlake.delta.schema import StructField, StructType

    s_new = StructField("s", StructType((s_old.type.fields[0], grown.field("s").type.fields[1])), True, s_old.metadata)
    draft = StructType((kept["id"], s_new, grown.field("extra")))
    with pytest.raises(InvalidCommitError, match="no integer delta.columnMapping.id|physicalName"):
        table.commit_files([Metadata(old.metadata.id, draft.to_schema_string(), configuration=dict(old.properties))], "append")
    schema, cfg = assign_column_mapping(draft, old.properties)
    assert cfg["delta.columnMapping.maxColumnId"] == "5"
    assert schema.field("extra").metadata[ID] in (4, 5) and schema.field("s").type.field("z").metadata[ID] in (4, 5)
    assert mapping_signature(schema)[:1] == mapping_signature(old.schema)[:1]
    assert len({f.metadata[PHYSICAL] for f in schema.fields}) == 3
    new_meta = Metadata(old.metadata.id, schema.to_schema_string(), configuration=cfg, created_time=old.metadata.created_time)
    table.commit_files([new_meta], "append")
    table.append([{"id": 2, "s": {"a": 2, "z": "zz"}, "extra": 1.5}])
    assert _rows(Table(table.path)) == [
        {"id": 1, "s": {"a": 1, "z": None}, "extra": None},
        {"id": 2, "s": {"a": 2, "z": "zz"}, "extra": 1.5},
    ]
    newest = max(table.files(), key=lambda a: a.modification_time)
    check_footer(table.data_file(newest), table.schema)


def test_concurrently_created_table_with_other_mapping_conflicts(tmp_path: Path) -> None:
    root = tmp_path / "t"
    schema, cfg = assign_column_mapping(parse_ddl("id bigint"), {C.PROP_COLUMN_MAPPING_MODE: "name", **NO_DV})
    _mapped(root, "id bigint")  # the winner: other physical names
    pending = PendingWrite(str(root), "append", schema, (), (), snapshot=None, create_properties=cfg)
    with pytest.raises(CommitConflictError, match="column-mapping"):
        commit_write(Table(root).log, pending)


# --- Delta's own mapped tables ----------------------------------------------------------------


def _golden_copy(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(GOLDEN / name, root)
    return root


@golden
@pytest.mark.parametrize(
    "name", ["table-with-columnmapping-mode-name", "data-skipping-basic-stats-all-types-columnmapping-id", "dv-with-columnmapping"]
)
def test_appends_to_delta_tables_match_deltas_files(tmp_path: Path, name: str) -> None:
    root = _golden_copy(name, tmp_path)
    table = Table(root)
    before = table.scan().to_arrow()
    delta_file = table.data_file(table.files()[0])
    version = table.append(before.slice(0, 2))
    after = Table(root).scan().to_arrow()
    assert sorted(map(repr, after.to_pylist())) == sorted(map(repr, before.to_pylist() + before.slice(0, 2).to_pylist()))
    ours = [a for a in table.files() if a.path in {x["path"] for x in _add_actions(root, version)}]
    assert ours
    parts = tuple(table.partition_columns)
    theirs = pq.read_schema(delta_file)
    for add in ours:
        check_add(add, table.schema, parts)
        mine = check_footer(table.data_file(add), table.schema, parts)
        # the same fields as the file Delta wrote: physical names and field ids at every level
        assert same_layout(mine, theirs)
    assert sorted(map(repr, Table(root).scan(version=version - 1).to_arrow().to_pylist())) == sorted(map(repr, before.to_pylist()))


@golden
def test_golden_name_mode_append_read_by_deltalake(tmp_path: Path) -> None:
    root = _golden_copy("table-with-columnmapping-mode-name", tmp_path)
    table = Table(root)
    cols = ["ByteType", "IntegerType", "StringType", "nested_struct", "array_of_structs"]
    table.append(table.scan(columns=None).to_arrow().slice(0, 1))
    import deltalake

    dt = deltalake.DeltaTable(str(root))
    query = f"SELECT {', '.join(cols)} FROM t"
    theirs = pa.table(deltalake.QueryBuilder().register("t", dt).execute(query).read_all()).to_pylist()
    mine = Table(root).scan(columns=cols).to_arrow().to_pylist()
    assert len(mine) == 7 and sorted(map(repr, theirs)) == sorted(map(repr, mine))
