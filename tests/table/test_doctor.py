"""``Table.doctor()``: coverage per Variant path (typed / residual / missing) on tables with
known contents, type conflicts, drifted files, schema suggestions, deletion vectors and
sampling -- and the shares cross-checked against DuckDB reading the same files."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, replace
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from varlake import Table, parse_json
from varlake.cli import app
from varlake.errors import TableError
from varlake.write import ENABLE_SHREDDING, SHREDDING_PROPERTY
from varlake.write.diagnostics.doctor import sample_rows
from varlake.write.diagnostics.report import DoctorReport, path_text


def _table(root: Path, *, shredding: bool = True, ddl: str | None = None) -> Table:
    props = {}
    if shredding:
        props[ENABLE_SHREDDING] = "true"
    if ddl is not None:
        props[SHREDDING_PROPERTY + "v"] = ddl
    return Table.create(root, "id int, v variant", properties=props)


def _append(table: Table, docs: list[str | None], start: int = 0) -> None:
    table.append([{"id": start + i, "v": None if d is None else parse_json(d)} for i, d in enumerate(docs)])


def _set_properties(table: Table, **props: str) -> None:
    """Commit a metaData change setting table properties (files unchanged)."""
    snap = table.snapshot()
    cfg = {**snap.metadata.configuration, **props}
    table.commit_files([replace(snap.metadata, configuration=cfg)], "append", snap)


def _set_shredding(table: Table, ddl: str) -> None:
    """Store ``ddl`` as v's shredding schema and turn shredding on (files unchanged)."""
    _set_properties(table, **{ENABLE_SHREDDING: "true", SHREDDING_PROPERTY + "v": ddl})


def _counts(report: DoctorReport, path: str, column: str = "v") -> tuple[int, int, int, int, int, int]:
    p = report.column(column).path(path)
    return p.slots, p.typed, p.residual, p.absent, p.variant_null, p.sql_null


def test_a_path_always_int_is_fully_typed(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    _append(t, ['{"a": %d}' % i for i in range(10)])
    report = t.doctor()
    v = report.column("v")
    assert v.schema == "a bigint"
    a = v.path("$.a")
    assert (a.slots, a.typed, a.residual, a.missing) == (10, 10, 0, 0)
    assert (a.typed_share, a.residual_share, a.missing_share) == (1.0, 0.0, 0.0)
    assert a.in_schema and a.schema_type == "bigint" and dict(a.types) == {"integer": 10}
    assert _counts(report, "$") == (10, 10, 0, 0, 0, 0)
    assert [p.path for p in v.paths] == ["$", "$.a"]
    assert v.conflicts == () and v.suggestions == () and report.drifted_files == ()
    assert v.suggested_schema == "a bigint"
    assert (v.scalar_values, v.typed_scalars, v.typed_scalar_share) == (10, 10, 1.0)
    assert (report.files, report.rows, report.rows_analyzed, report.sampled, report.deleted_rows) == (1, 10, 10, False, 0)


def test_half_int_half_string_is_a_conflict_with_half_residual(tmp_path: Path) -> None:
    t = _table(tmp_path / "t", ddl="a bigint")
    _append(t, ['{"a": %d}' % i if i % 2 == 0 else '{"a": "s%d"}' % i for i in range(10)])
    report = t.doctor()
    v = report.column("v")
    assert v.schema == "a bigint"  # no family holds 99% of the values: the stored type stays
    a = v.path("$.a")
    assert (a.typed, a.residual, a.missing) == (5, 5, 0)
    assert (a.typed_share, a.residual_share) == (0.5, 0.5)
    (conflict,) = v.conflicts
    assert conflict.path == "$.a"
    assert dict(conflict.types) == {"integer": 5, "string": 5}
    ((file, types),) = conflict.files
    assert file == t.files()[0].path and dict(types) == {"integer": 5, "string": 5}
    assert v.suggested_schema is None  # the data would shred nothing at $.a
    assert (v.scalar_values, v.typed_scalars, v.typed_scalar_share) == (10, 5, 0.5)


def test_int_in_one_file_string_in_another(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    _append(t, ['{"a": %d}' % i for i in range(6)])
    first = t.files()[0].path
    _append(t, ['{"a": "s%d"}' % i for i in range(4)], start=6)
    second = next(f.path for f in t.files() if f.path != first)
    report = t.doctor()
    v = report.column("v")
    assert v.schema == "a string"  # re-inferred for the second batch
    assert _counts(report, "$.a") == (10, 10, 0, 0, 0, 0)  # each file holds its own type typed
    (conflict,) = v.conflicts
    assert dict(conflict.types) == {"integer": 6, "string": 4}
    assert {p: dict(ty) for p, ty in conflict.files} == {first: {"integer": 6}, second: {"string": 4}}
    (drifted,) = report.drifted_files
    assert drifted.path == first and drifted.rows == 6
    assert drifted.columns == (("v", "leaf-types", "a bigint", "a string"),)
    assert "leaf-types" in drifted.reason
    before = t.doctor(version=1)  # time travel: the first write alone
    assert (before.version, before.rows, before.column("v").schema, before.drifted_files) == (1, 6, "a bigint", ())
    assert before.column("v").conflicts == ()


def test_missing_values_absent_variant_null_and_sql_null(tmp_path: Path) -> None:
    t = _table(tmp_path / "t", ddl="a bigint")
    docs = ['{"a": 1}', '{"a": 2}', '{"a": 3}', '{"a": 4}', '{"a": null}', '{"a": null}', '{"b": "x"}', '{"b": "y"}', "null", None]
    _append(t, docs)
    report = t.doctor()
    v = report.column("v")
    assert v.schema == "a bigint, b string"
    # slots, typed, residual, absent, variant null, SQL null
    assert _counts(report, "$") == (10, 8, 0, 0, 1, 1)
    assert _counts(report, "$.a") == (10, 4, 0, 3, 2, 1)  # absent: the two b-only rows and the JSON null
    assert _counts(report, "$.b") == (10, 2, 0, 7, 0, 1)
    a = v.path("$.a")
    assert a.missing == 6 and a.missing_share == 0.6 and a.typed_share == 0.4
    assert dict(a.types) == {"integer": 4}  # Variant nulls are not a type
    assert v.conflicts == ()


def test_paths_under_arrays_count_elements(tmp_path: Path) -> None:
    t = _table(tmp_path / "t", ddl="tags array<struct<k: string>>")
    docs = ['{"tags": [{"k": "x"}, {"k": 1}, {}]}', '{"tags": [{"k": "y"}]}', '{"tags": []}', '{"other": 1}']
    _append(t, docs)
    report = t.doctor()
    assert report.column("v").schema == "tags array<struct<k: string>>, other bigint"
    assert _counts(report, "$.tags") == (4, 3, 0, 1, 0, 0)
    assert _counts(report, "$.tags[*]") == (4, 4, 0, 0, 0, 0)  # 4 elements, every one a typed object
    assert _counts(report, "$.tags[*].k") == (4, 2, 1, 1, 0, 0)  # "x", "y" typed; 1 residual; {} absent
    (conflict,) = report.column("v").conflicts
    assert conflict.path == "$.tags[*].k" and dict(conflict.types) == {"string": 2, "integer": 1}


def test_unshredded_file_in_a_shredded_table_is_drifted(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    _set_properties(t, **{ENABLE_SHREDDING: "false"})  # this write's file is unshredded
    _append(t, ['{"a": %d, "b": "x%d"}' % (i, i) for i in range(10)])
    unshredded = t.files()[0].path
    _set_shredding(t, "a bigint")
    _append(t, ['{"a": %d}' % i for i in range(10)], start=10)
    report = t.doctor()
    v = report.column("v")
    assert v.schema == "a bigint"
    assert _counts(report, "$.a") == (20, 10, 10, 0, 0, 0)  # the unshredded file holds its a in value
    assert _counts(report, "$.b") == (20, 0, 10, 10, 0, 0)
    assert _counts(report, "$") == (20, 10, 10, 0, 0, 0)
    (drifted,) = report.drifted_files
    assert drifted.path == unshredded and drifted.columns == (("v", "unshredded", None, "a bigint"),)
    # b is in half the rows, always a string: the data would shred it, the schema lacks it
    assert v.suggested_schema == "a bigint, b string"
    (add,) = v.suggestions
    assert (add.kind, add.path, add.type, add.current_type, add.typed_share) == ("add", "$.b", "string", None, 0.0)


def test_a_path_the_schema_lacks_is_suggested(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    _append(t, ['{"a": %d, "b": "x", "c": {"d": %d}}' % (i, i) for i in range(10)])
    _append(t, ['{"a": %d}' % i for i in range(10)], start=10)  # b and c leave the stored schema
    report = t.doctor()
    v = report.column("v")
    assert v.schema == "a bigint"
    assert [(s.kind, s.path, s.type) for s in v.suggestions] == [("add", "$.b", "string"), ("add", "$.c.d", "bigint")]
    assert _counts(report, "$.b") == (20, 10, 0, 10, 0, 0)  # typed in the older file
    assert not v.path("$.b").in_schema
    (drifted,) = report.drifted_files
    assert drifted.columns[0][1] == "other-layout"


def test_nearly_empty_and_retyped_leaves(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    _append(t, ['{"a": %d, "n": "x"}' % i if i else '{"a": 0, "z": 1, "n": "x"}' for i in range(40)])
    _set_shredding(t, "a bigint, n bigint, z bigint")
    report = t.doctor()
    v = report.column("v")
    z = v.path("$.z")
    assert (z.in_schema, z.slots, z.typed, z.residual, z.absent) == (True, 40, 0, 1, 39)  # the file predates z
    kinds = [(s.kind, s.path, s.type, s.current_type) for s in v.suggestions]
    assert kinds == [("retype", "$.n", "string", "bigint"), ("drop", "$.z", None, "bigint")]
    # typed means typed in the file's own layout: the file shreds n as a string
    assert (v.path("$.n").typed, v.path("$.n").residual) == (40, 0)
    assert report.drifted_files[0].columns[0][1] == "other-layout"
    # a threshold of 0 flags nothing as nearly empty
    assert [s.kind for s in t.doctor(empty_threshold=0.0).column("v").suggestions] == ["retype"]


def test_deleted_rows_are_not_counted(tmp_path: Path) -> None:
    t = _table(tmp_path / "t", ddl="a bigint")
    _append(t, ['{"a": %d}' % i if i < 6 else '{"a": "s"}' for i in range(10)])
    assert t.doctor().column("v").path("$.a").residual == 4
    t.delete("id >= 6")
    assert t.files()[0].deletion_vector is not None
    report = t.doctor()
    assert (report.rows, report.deleted_rows, report.rows_analyzed) == (6, 4, 6)
    assert _counts(report, "$.a") == (6, 6, 0, 0, 0, 0)
    assert report.column("v").conflicts == ()
    # footers cannot leave deleted rows out
    assert (report.column("v").footer_rows, report.column("v").path("$.a").footer_typed) == (10, 6)


def test_sample_spreads_over_files(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    for k in range(3):
        _append(t, ['{"a": %d}' % i for i in range(10)], start=10 * k)
    report = t.doctor(sample=15)
    assert (report.rows, report.rows_analyzed, report.sampled) == (30, 15, True)
    assert _counts(report, "$.a") == (15, 15, 0, 0, 0, 0)
    # the footer pass covers every row whatever the sample
    assert (report.column("v").footer_rows, report.column("v").path("$.a").footer_typed) == (30, 30)
    assert report.to_dict() == t.doctor(sample=15).to_dict()  # deterministic
    assert t.doctor(sample=None).rows_analyzed == 30


def test_report_is_frozen_and_json_ready(tmp_path: Path) -> None:
    t = _table(tmp_path / "t")
    _append(t, ['{"a": 1, "b": [true]}', '{"a": "x"}'])
    report = t.doctor()
    with pytest.raises(FrozenInstanceError):
        report.rows = 3  # type: ignore[misc]
    doc = json.loads(json.dumps(report.to_dict()))
    assert list(doc) == [
        "table", "version", "files", "rows", "deleted_rows", "rows_analyzed", "sampled", "empty_threshold",
        "columns", "drifted_files", "optimize", "notes",
    ]  # fmt: skip
    (column,) = doc["columns"]
    assert list(column) == [
        "column", "schema", "suggested_schema", "rows_analyzed", "footer_rows", "scalar_values", "typed_scalars",
        "typed_scalar_share", "paths", "conflicts", "suggestions",
    ]  # fmt: skip
    assert list(column["paths"][0]) == [
        "path", "in_schema", "schema_type", "slots", "typed", "residual", "missing", "absent", "variant_null",
        "sql_null", "typed_share", "residual_share", "missing_share", "types", "footer_typed",
    ]  # fmt: skip
    for p in column["paths"]:
        assert p["typed"] + p["residual"] + p["missing"] == p["slots"]


def test_table_without_variant_columns_and_bad_arguments(tmp_path: Path) -> None:
    plain = Table.create(tmp_path / "plain", "id int")
    plain.append([{"id": 1}])
    report = plain.doctor()
    assert report.columns == () and report.rows == 1
    t = _table(tmp_path / "t")
    for bad in (0, -1, True, 1.5):
        with pytest.raises(TableError, match="sample"):
            t.doctor(sample=bad)  # type: ignore[arg-type]
    with pytest.raises(TableError, match="empty_threshold"):
        t.doctor(empty_threshold=2)
    empty = t.doctor()
    assert empty.rows == 0 and empty.column("v").paths == ()


def test_path_text() -> None:
    assert path_text(()) == "$"
    assert path_text(("a", None, "b_1")) == "$.a[*].b_1"
    assert path_text(("odd key", "it's", "1x")) == "$['odd key']['it\\'s']['1x']"


# --- cross-check against DuckDB ------------------------------------------------------------------------------

_DUCK_TYPES = {"INT8": "integer", "INT16": "integer", "INT32": "integer", "INT64": "integer", "VARCHAR": "string",
               "BOOL_TRUE": "boolean", "BOOL_FALSE": "boolean", "DOUBLE": "double"}  # fmt: skip


def test_shares_match_duckdb(tmp_path: Path) -> None:
    """Typed counts from the Parquet footers (DuckDB's ``parquet_metadata``: rows minus the
    typed leaf's nulls), non-null values by type from DuckDB's own Variant reader."""
    t = _table(tmp_path / "t")
    _append(t, ['{"a": %d, "b": "x", "c": true}' % i for i in range(30)])
    _append(t, ['{"a": %d, "b": %d}' % (i, i) if i % 3 else '{"a": "s", "c": false}' for i in range(25)], start=30)
    _append(t, ['{"a": null, "b": "y"}', "null", None, '{"c": 1.5}', "[1, 2]"] * 3, start=60)
    report = t.doctor(sample=None)
    files = [t.data_file(a) for a in t.files()]
    con = duckdb.connect()
    for key in ("a", "b", "c"):
        typed = con.sql(
            f"SELECT coalesce(sum(row_group_num_rows - stats_null_count), 0) FROM parquet_metadata({files!r}) "
            f"WHERE path_in_schema = 'v, typed_value, {key}, typed_value'"
        ).fetchall()[0][0]
        by_type = dict(
            con.sql(
                f"SELECT variant_typeof(variant_extract(v, '{key}')) t, count(*) FROM read_parquet({files!r}, union_by_name=true) "
                "WHERE variant_typeof(variant_extract(v, '{key}')) <> 'VARIANT_NULL' GROUP BY t".replace("{key}", key)
            ).fetchall()
        )
        p = report.column("v").path(f"$.{key}")
        types: dict[str, int] = {}
        for name, n in by_type.items():
            ours = "decimal" if name.startswith("DECIMAL") else _DUCK_TYPES[name]
            types[ours] = types.get(ours, 0) + n
        assert p.typed == typed, key
        assert p.footer_typed == typed, key  # no sampling, no deletion vector: the footer pass agrees
        assert p.residual == sum(by_type.values()) - typed, key
        assert p.missing == report.rows - sum(by_type.values()), key
        assert dict(p.types) == types, key
        assert p.typed_share == round(typed / report.rows, 6)
    assert report.rows == 70
    a = report.column("v").path("$.a")
    assert a.typed > 0 and a.residual > 0 and a.variant_null > 0 and a.sql_null > 0  # every kind of count is checked


def test_optimize_section_is_the_optimize_plan_and_clears_after_optimize(tmp_path: Path) -> None:
    from varlake.write.maintenance.optimize import plan_optimize

    t = _table(tmp_path / "t")
    _set_properties(t, **{ENABLE_SHREDDING: "false"})
    _append(t, ['{"a": %d}' % i for i in range(10)])
    unshredded = t.files()[0].path
    _set_shredding(t, "a bigint")
    _append(t, ['{"a": %d}' % i for i in range(10)], start=10)
    report = t.doctor()
    reshred = {"estimated_reshred_bytes_saved", "reshred_files", "reshred_files_sampled", "reshred_sample_rows", "estimated_total_bytes_saved"}
    assert {k: v for k, v in report.optimize.items() if k not in reshred} == plan_optimize(t).summary()
    assert reshred <= set(report.optimize) and report.optimize["reshred_files"] == report.optimize["reshred_files_sampled"] == 1
    assert "layout" in report.optimize["reasons"][unshredded]
    assert report.optimize["files_to_rewrite"] == 2 and report.optimize["drifted_files"] == 1
    assert _counts(report, "$.a") == (20, 10, 10, 0, 0, 0)
    t.optimize()
    after = t.doctor()
    assert after.drifted_files == () and after.optimize["files_to_rewrite"] == 0
    assert _counts(after, "$.a") == (20, 20, 0, 0, 0, 0)  # re-shredded into the stable schema


def test_sampled_rows_are_found_across_row_groups(tmp_path: Path) -> None:
    """25 rows in row groups of 4, a string at odd rows: a sample holds exactly the strings of
    the rows ``sample_rows`` picks, found through the row groups that hold them."""
    from varlake.io.parquet_write import write_parquet
    from varlake.shred.variant_arrays import variant_array
    from varlake.write import add_action, file_facts

    t = _table(tmp_path / "t", ddl="a bigint")
    data = pa.table({"id": pa.array(range(25), pa.int32()),
                     "v": variant_array([parse_json('{"a": %d}' % i if i % 2 == 0 else '{"a": "s%d"}' % i) for i in range(25)])})  # fmt: skip
    rel = "part-00000-handmade.parquet"
    result = write_parquet(data, tmp_path / "t" / rel, shredding={"v": "a bigint"}, row_group_size=4)
    assert result.metadata.num_row_groups == 7
    (facts,) = file_facts(t.storage, [(rel, f"{t.path}/{rel}")], t.schema.to_schema_string(), 32, footers={rel: result.metadata})
    t.commit_files([add_action(facts, {})], "append")
    assert _counts(t.doctor(sample=None), "$.a") == (25, 13, 12, 0, 0, 0)
    for n in (1, 5, 6, 11, 24):
        chosen = sample_rows(np.arange(25, dtype=np.int64), n, 0)
        odd = int((chosen % 2).sum())
        assert len(chosen) == n == len(set(chosen.tolist()))
        sampled = t.doctor(sample=n)
        assert _counts(sampled, "$.a") == (n, n - odd, odd, 0, 0, 0)
        assert dict(sampled.column("v").path("$.a").types) == {k: c for k, c in (("integer", n - odd), ("string", odd)) if c}
    assert 0 < int((sample_rows(np.arange(25, dtype=np.int64), 11, 0) % 2).sum()) < 11  # both kinds were sampled


def test_sample_rows() -> None:
    live = np.array([2, 3, 5, 7, 11], dtype=np.int64)
    assert sample_rows(live, 9).tolist() == [2, 3, 5, 7, 11]
    assert sample_rows(live, 0).tolist() == []
    picked = sample_rows(live, 3, seed=4)
    assert len(picked) == 3 and set(picked.tolist()) <= set(live.tolist()) and picked.tolist() == sorted(picked.tolist())
    assert picked.tolist() == sample_rows(live, 3, seed=4).tolist()


def test_mixed_layouts_before_and_after_optimize(tmp_path: Path) -> None:
    """Files under an older schema, unshredded, with other leaf types and in the stable layout
    (tests/optimize_tables.py): each file's typed share follows its own layout; after
    optimize every value is typed and no file drifts."""
    from optimize_tables import STABLE, mixed_table

    t = mixed_table(tmp_path / "t")
    report = t.doctor()
    assert report.column("v").schema == STABLE
    kinds = {f.path: f.columns[0][1] for f in report.drifted_files}
    assert kinds == {"older.parquet": "older-schema", "plain.parquet": "unshredded", "types.parquet": "leaf-types"}
    types_file = next(f for f in report.drifted_files if f.path == "types.parquet")
    assert types_file.differences == ("v $.a: string in the file, bigint in the table's schema",)
    older = next(f for f in report.drifted_files if f.path == "older.parquet")
    assert older.differences == (
        "v $.b: string in the table's schema, not in the file",
        "v $.c.d: bigint in the table's schema, not in the file",
    )
    # a: typed in older + the two appended files; in value in plain, and in types (an int
    # does not fit its string column). b and c.d: typed in types + appended.
    assert _counts(report, "$.a") == (500, 300, 200, 0, 0, 0)
    assert _counts(report, "$.b") == (500, 300, 200, 0, 0, 0)
    assert _counts(report, "$.c.d") == (500, 300, 200, 0, 0, 0)
    assert report.column("v").conflicts == () and report.column("v").suggestions == ()
    assert (report.column("v").scalar_values, report.column("v").typed_scalar_share) == (1500, 0.6)
    assert {p for p, why in report.optimize["reasons"].items() if "layout" in why} == set(kinds)
    t.optimize()
    after = t.doctor()
    assert after.drifted_files == () and after.column("v").typed_scalar_share == 1.0
    for path in ("$", "$.a", "$.b", "$.c", "$.c.d"):
        assert _counts(after, path) == (500, 500, 0, 0, 0, 0), path


@pytest.mark.spark
def test_a_spark_shredded_file_is_drifted(tmp_path: Path, spark) -> None:
    from optimize_tables import add_file
    from spark_files import spark_shredded_file

    t = _table(tmp_path / "t", ddl="a bigint")
    _append(t, ['{"a": %d}' % i for i in range(4)])
    spark_shredded_file(spark, tmp_path / "t" / "spark.parquet", [(i, '{"a": "s%d", "b": %d}' % (i, i)) for i in range(6)], "a string, b int")
    t.commit_files([add_file(t, "spark.parquet")], "append")
    report = t.doctor()
    (drifted,) = report.drifted_files
    assert drifted.path == "spark.parquet" and drifted.columns[0][1] == "spark-layout"
    assert _counts(report, "$.a") == (10, 10, 0, 0, 0, 0)  # ints typed in varlake's file, strings in Spark's
    assert _counts(report, "$.b") == (10, 6, 0, 4, 0, 0)
    (conflict,) = report.column("v").conflicts
    assert {p: dict(ty) for p, ty in conflict.files} == {t.files()[0].path: {"integer": 4}, "spark.parquet": {"string": 6}}


def test_invalid_variant_bytes_are_a_note_not_a_crash(tmp_path: Path) -> None:
    from optimize_tables import add_file

    t = _table(tmp_path / "t", ddl="a bigint")
    _append(t, ['{"a": %d}' % i for i in range(3)])
    bad = pa.table({
        "id": pa.array([7, 8], pa.int32()),
        "v": pa.StructArray.from_arrays(
            [pa.array([b"\x01\x00\x00", b"\x01\x00\x00"], pa.binary()), pa.array([b"\xff\xff", b"\x0c"], pa.binary())],
            fields=[pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary(), nullable=False)],
        ),
    })  # fmt: skip
    pq.write_table(bad, tmp_path / "t" / "bad.parquet")
    t.commit_files([add_file(t, "bad.parquet")], "append")
    report = t.doctor()
    (note,) = report.notes
    assert "bad.parquet" in note and "not analysed" in note
    assert (report.rows, report.column("v").rows_analyzed) == (5, 3)
    assert _counts(report, "$.a") == (3, 3, 0, 0, 0, 0)


def test_column_mapped_table_with_a_variant_inside_a_struct(tmp_path: Path) -> None:
    from varlake.shred.variant_arrays import variant_array

    props = {"delta.columnMapping.mode": "name", ENABLE_SHREDDING: "true"}
    t = Table.create(tmp_path / "t", "id int, v variant, s struct<w: variant>", properties=props)
    w = variant_array([parse_json('{"b": "x"}') if i % 2 else None for i in range(6)])
    t.append(pa.table({
        "id": pa.array(range(6), pa.int32()),
        "v": variant_array([parse_json('{"a": %d}' % i) for i in range(6)]),
        "s": pa.StructArray.from_arrays([w], names=["w"]),
    }))  # fmt: skip
    report = t.doctor()
    assert [c.column for c in report.columns] == ["v", "s.w"]
    assert report.column("s.w").schema == "b string"
    assert _counts(report, "$.a") == (6, 6, 0, 0, 0, 0)
    assert _counts(report, "$.b", "s.w") == (6, 3, 0, 0, 0, 3)
    assert report.column("s.w").path("$.b").footer_typed == 3
    assert report.drifted_files == () and report.notes == ()


def test_a_table_without_shredding_says_so(tmp_path: Path) -> None:
    t = Table.create(tmp_path / "t", "id int, v variant")
    _append(t, ['{"a": %d}' % i for i in range(4)])
    report = t.doctor()
    assert report.notes == (f"shredding is off ({ENABLE_SHREDDING} is not true): new files are written unshredded",)
    assert _counts(report, "$.a") == (4, 0, 4, 0, 0, 0)
    assert [(s.kind, s.path, s.type) for s in report.column("v").suggestions] == [("add", "$.a", "bigint")]
    assert report.drifted_files == ()  # unshredded is this table's layout


def test_a_missing_data_file_is_a_named_error(tmp_path: Path) -> None:
    from varlake.errors import DataFileMissingError

    t = _table(tmp_path / "t")
    _append(t, ['{"a": 1}'])
    Path(t.data_file(t.files()[0])).unlink()
    with pytest.raises(DataFileMissingError, match="missing"):
        t.doctor()
    result = CliRunner().invoke(app, ["doctor", t.path])
    assert result.exit_code == 1 and "missing" in result.output and "Traceback" not in result.output


# --- cross-check against a plain-Python walk (hypothesis) ----------------------------------------------------

_KEYS = st.sampled_from(["a", "b", "c"])
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["x", "y"]))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)), max_leaves=6)
_DOCS = st.one_of(st.none(), st.dictionaries(_KEYS, _VALUES, max_size=3), _VALUES)


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    return {int: "integer", str: "string", dict: "object", list: "array"}[type(value)]


def _values_at(doc: object, segments: tuple) -> list:
    found = [doc]
    for s in segments:
        step = []
        for v in found:
            if s is None and isinstance(v, list):
                step.extend(v)
            elif s is not None and isinstance(v, dict) and s in v:
                step.append(v[s])
        found = step
    return found


def _typed_at(group: dict | None, segments: tuple, out: dict) -> None:
    """Walk one physical ``value``/``typed_value`` group as pyarrow gives it (dicts and lists)."""
    if group is None or group.get("typed_value") is None:
        return
    typed = group["typed_value"]
    out[segments] = out.get(segments, 0) + 1
    if isinstance(typed, dict):
        for key, child in typed.items():
            _typed_at(child, segments + (key,), out)
    elif isinstance(typed, list):
        for element in typed:
            _typed_at(element, segments + (None,), out)


def _segments(path: str) -> tuple:
    out: list = []
    for part in path[1:].replace("[*]", ".[*]").split("."):
        if part:
            out.append(None if part == "[*]" else part)
    return tuple(out)


@settings(max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(_DOCS, min_size=1, max_size=8), min_size=1, max_size=3))
def test_counts_match_a_plain_walk(tmp_path_factory, batches: list) -> None:
    """Every count of every path equals a walk over the decoded rows (values, nulls, types)
    and over each file's physical groups read by pyarrow (typed)."""
    t = _table(tmp_path_factory.mktemp("doctor") / "t")
    rows: list = []
    for batch in batches:
        _append(t, [None if d is None else json.dumps(d) for d in batch], start=len(rows))
        rows.extend(batch)
    report = t.doctor(sample=None)
    typed: dict = {}
    for add in t.files():
        column = pq.read_table(t.data_file(add), columns=["v"]).column("v").combine_chunks()
        column = column.storage if isinstance(column.type, pa.BaseExtensionType) else column
        for row in column.to_pylist():
            _typed_at(row, (), typed)
    sql_null = sum(d is None for d in rows)
    v = report.column("v")
    assert v.rows_analyzed == len(rows)
    reported = set()
    for p in v.paths:
        segments = _segments(p.path)
        reported.add(segments)
        values = [x for d in rows if d is not None for x in _values_at(d, segments)]
        if None in segments:
            last = max(i for i, s in enumerate(segments) if s is None)
            slots, nulls_sql = len([x for d in rows if d is not None for x in _values_at(d, segments[: last + 1])]), 0
        else:
            slots, nulls_sql = len(rows), sql_null
        types: dict = {}
        for x in values:
            if x is not None:
                types[_type_name(x)] = types.get(_type_name(x), 0) + 1
        assert (p.slots, p.sql_null, p.variant_null) == (slots, nulls_sql, sum(x is None for x in values)), p.path
        assert p.absent == slots - nulls_sql - len(values), p.path
        assert p.typed == typed.get(segments, 0), p.path
        assert p.residual == len(values) - p.variant_null - p.typed, p.path
        assert dict(p.types) == types, p.path
    seen = {s for d in rows if d is not None for s in _paths_of(d, ())}
    assert seen <= reported


def _paths_of(doc: object, prefix: tuple) -> set:
    out = {prefix}
    if isinstance(doc, dict):
        for k, v in doc.items():
            out |= _paths_of(v, prefix + (k,))
    elif isinstance(doc, list):
        for v in doc:
            out |= _paths_of(v, prefix + (None,))
    return out


def test_defaults_agree() -> None:
    """``Table.doctor`` and ``varlake doctor`` spell the module's defaults."""
    import inspect

    from varlake.cli import doctor as doctor_command
    from varlake.write.diagnostics.doctor import DEFAULT_EMPTY_THRESHOLD, DEFAULT_SAMPLE

    table = inspect.signature(Table.doctor).parameters
    assert (table["sample"].default, table["empty_threshold"].default) == (DEFAULT_SAMPLE, DEFAULT_EMPTY_THRESHOLD)
    cli = inspect.signature(doctor_command).parameters
    assert (cli["sample"].default.default, cli["empty_threshold"].default.default) == (DEFAULT_SAMPLE, DEFAULT_EMPTY_THRESHOLD)


def test_an_invalid_stored_schema_is_a_note(tmp_path: Path) -> None:
    t = _table(tmp_path / "t", ddl="a bigint")
    _append(t, ['{"a": %d}' % i for i in range(3)])
    _set_properties(t, **{SHREDDING_PROPERTY + "v": "a map<string, int>"})
    report = t.doctor()
    assert any("not valid DDL" in n for n in report.notes)
    assert any("maps cannot be shredded" in n for n in report.notes)  # neither optimize nor drift can run
    assert report.column("v").schema is None
    assert _counts(report, "$.a") == (3, 3, 0, 0, 0, 0)


def _events(n: int, start: int = 0) -> list[str]:
    return [
        '{"user": {"id": %d, "name": "user-%d"}, "kind": "%s", "n": %d, "score": %d.5}'
        % (i % 997, i % 997, ("click", "view", "buy")[i % 3], i, i % 100)
        for i in range(start, start + n)
    ]


def test_the_reshred_estimate_is_near_what_optimize_saves(tmp_path: Path) -> None:
    """Unshredded files re-shredded into the table's layout: the doctor's estimate of the bytes
    saved (footers and layout) is within a factor 2 of what optimize then saves."""
    t = _table(tmp_path / "t")
    _set_properties(t, **{ENABLE_SHREDDING: "false"})
    for k in range(3):  # three unshredded files of 4,000 events
        _append(t, _events(4000, 4000 * k), start=4000 * k)
    _set_shredding(t, "kind string, n bigint, score decimal(5,1), user struct<id: bigint, name: string>")
    report = t.doctor()
    o = report.optimize
    assert o["reshred_files"] == 3 and o["reshred_files_sampled"] == 3 and o["reshred_sample_rows"] > 0
    assert all(f.estimated_bytes_saved is not None and f.estimated_bytes_saved > 0 for f in report.drifted_files)
    assert o["estimated_reshred_bytes_saved"] == sum(f.estimated_bytes_saved for f in report.drifted_files)
    assert o["estimated_total_bytes_saved"] == o["estimated_bytes_saved"] + o["estimated_reshred_bytes_saved"]
    result = t.optimize()
    actual = result.bytes_removed - result.bytes_added
    assert actual > 0 and 0.5 * actual <= o["estimated_total_bytes_saved"] <= 2 * actual, (o, actual)
    after = t.doctor().optimize
    assert after["reshred_files"] == 0 and after["estimated_reshred_bytes_saved"] == 0  # in layout: nothing to save


def test_a_table_in_layout_estimates_no_reshred_saving(tmp_path: Path) -> None:
    t = _table(tmp_path / "t", ddl="kind string, n bigint")
    _append(t, _events(500))
    _append(t, _events(500, 500), start=500)
    o = t.doctor().optimize
    assert (o["reshred_files"], o["estimated_reshred_bytes_saved"]) == (0, 0)
    assert o["estimated_total_bytes_saved"] == o["estimated_bytes_saved"]
