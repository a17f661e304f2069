"""MERGE (``Table.merge``, ``varlake.write.changes.merge``): Delta's clause semantics checked against
a plain Python model of the same clauses, with and without deletion vectors, partitioned or
not, Variant columns included; plus the errors Delta raises."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from varlake import Table, parse_json
from varlake.errors import (
    AmbiguousColumnError,
    AppendOnlyTableError,
    ConstraintViolationError,
    MergeCardinalityError,
    UnknownColumnError,
)

DV_ON = {"delta.enableDeletionVectors": "true"}
DV_OFF = {"delta.enableDeletionVectors": "false"}
SCHEMA = "id bigint, name string, n int, v variant, part string"


def make(root: Path, rows: list[dict[str, Any]], properties: dict[str, str], partitioned: bool = False, files: int = 2) -> Table:
    Table.create(root, SCHEMA, partition_by=["part"] if partitioned else (), properties=properties)
    table = Table(root)
    size = max(1, -(-len(rows) // files))
    for start in range(0, len(rows), size):
        table.append([_stored(r) for r in rows[start : start + size]])
    return table


def _stored(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    out["v"] = None if row.get("v") is None else parse_json(json.dumps(row["v"]))
    return out


def rows_of(table: Table, version: int | None = None) -> list[tuple[Any, ...]]:
    got = Table(table.path).scan(version=version).to_arrow().to_pylist()
    out = []
    for r in got:
        v = r["v"]
        text = None if v is None else json.loads(parse_json_from(v))
        out.append((r["id"], r["name"], r["n"], json.dumps(text, sort_keys=True) if text is not None else None, r["part"]))
    return sorted(out, key=repr)


def parse_json_from(v: dict[str, bytes]) -> str:
    from varlake import Variant

    return Variant(v["metadata"], v["value"]).to_json()


def model_rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(
        ((r["id"], r["name"], r["n"], json.dumps(r["v"], sort_keys=True) if r.get("v") is not None else None, r["part"]) for r in rows),
        key=repr,
    )


def base_rows(n: int = 12) -> list[dict[str, Any]]:
    return [{"id": i, "name": f"n{i}", "n": i * 10, "v": {"a": i, "tag": f"t{i % 3}"}, "part": f"p{i % 2}"} for i in range(n)]


@pytest.mark.parametrize("props", [DV_ON, DV_OFF], ids=["dv", "cow"])
@pytest.mark.parametrize("partitioned", [False, True])
def test_upsert(tmp_path: Path, props: dict[str, str], partitioned: bool) -> None:
    target = base_rows()
    table = make(tmp_path / "t", target, props, partitioned)
    source = [
        {"id": 3, "name": "three", "n": 3, "v": parse_json('{"a": 33}'), "part": "p1"},
        {"id": 5, "name": "five", "n": 5, "v": None, "part": "p1"},
        {"id": 100, "name": "new", "n": 1, "v": parse_json('{"b": [1]}'), "part": "p0"},
    ]
    result = (
        table.merge(source, on="t.id = s.id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert (result.num_updated_rows, result.num_inserted_rows, result.num_deleted_rows) == (2, 1, 0)
    expected = [r for r in target if r["id"] not in (3, 5)] + [
        {"id": 3, "name": "three", "n": 3, "v": {"a": 33}, "part": "p1"},
        {"id": 5, "name": "five", "n": 5, "v": None, "part": "p1"},
        {"id": 100, "name": "new", "n": 1, "v": {"b": [1]}, "part": "p0"},
    ]
    assert rows_of(table) == model_rows(expected)
    assert rows_of(table, result.version - 1) == model_rows(target)  # time travel
    if props is DV_ON and not partitioned:
        assert result.num_deletion_vectors_added >= 1


def test_conditional_clauses_first_true_wins(tmp_path: Path) -> None:
    target = base_rows()
    table = make(tmp_path / "t", target, DV_ON)
    source = [{"id": i, "delta": i % 4} for i in range(0, 16, 2)]
    result = (
        table.merge(source, on="t.id = s.id")
        .when_matched_delete(condition="s.delta = 0")
        .when_matched_update({"n": "t.n + s.delta", "name": "'upd'"}, condition="s.delta = 2")
        .when_matched_update({"name": "'other'"})
        .when_not_matched_insert({"id": "s.id", "name": "'ins'", "n": "s.delta", "part": "'p9'"}, condition="s.id > 12")
        .when_not_matched_by_source_update({"n": "t.n * 2"}, condition="t.id > 9")
        .when_not_matched_by_source_delete(condition="t.id = 1")
        .execute()
    )
    model = []
    for r in target:
        i = r["id"]
        if i % 2 == 0 and i < 16:
            delta = i % 4
            if delta == 0:
                continue
            model.append({**r, "n": r["n"] + delta, "name": "upd"})
        elif i > 9:
            model.append({**r, "n": r["n"] * 2})
        elif i == 1:
            continue
        else:
            model.append(r)
    model.append({"id": 14, "name": "ins", "n": 2, "v": None, "part": "p9"})
    assert rows_of(table) == model_rows(model)
    assert result.num_inserted_rows == 1


def test_multiple_source_rows_for_one_target_row(tmp_path: Path) -> None:
    table = make(tmp_path / "t", base_rows(4), DV_ON)
    source = [{"id": 1, "name": "a"}, {"id": 1, "name": "b"}]
    with pytest.raises(MergeCardinalityError, match="MULTIPLE_SOURCE_ROW"):
        table.merge(source, on="t.id = s.id").when_matched_update({"name": "s.name"}).execute()
    assert Table(table.path).version == 2  # nothing committed
    # an unconditional DELETE as the only matched clause accepts duplicates
    result = table.merge(source, on="t.id = s.id").when_matched_delete().execute()
    assert result.num_deleted_rows == 1 and sorted(r[0] for r in rows_of(table)) == [0, 2, 3]


def test_names_and_errors(tmp_path: Path) -> None:
    table = make(tmp_path / "t", base_rows(4), DV_ON)
    with pytest.raises(AmbiguousColumnError, match="qualify"):
        table.merge([{"id": 1}], on="id = id").when_matched_delete().execute()
    with pytest.raises(UnknownColumnError, match="neither"):
        table.merge([{"id": 1}], on="t.id = s.id AND nope = 1").when_matched_delete().execute()
    with pytest.raises(UnknownColumnError, match="lacks"):
        table.merge([{"id": 1}], on="t.id = s.id").when_matched_update_all().execute()
    # bare names resolve to the side that has them; another alias pair works
    result = (
        table.merge([{"key": 2, "label": "two"}], on="id = key", source_alias="src", target_alias="tgt")
        .when_matched_update({"name": "label"})
        .execute()
    )
    assert result.num_updated_rows == 1 and [r[1] for r in rows_of(table) if r[0] == 2] == ["two"]


def test_variant_paths_in_conditions_and_sets(tmp_path: Path) -> None:
    table = make(tmp_path / "t", base_rows(6), DV_ON)
    source = [{"tag": "t1", "bump": 5}]
    table.merge(source, on="t.v:tag::string = s.tag").when_matched_update({"n": "t.v:a::int + s.bump"}).execute()
    got = {r[0]: r[2] for r in rows_of(table)}
    assert got == {0: 0, 1: 6, 2: 20, 3: 30, 4: 9, 5: 50}


def test_append_only_accepts_insert_only_merge(tmp_path: Path) -> None:
    table = make(tmp_path / "t", base_rows(3), {"delta.appendOnly": "true"})
    with pytest.raises(AppendOnlyTableError):
        table.merge([{"id": 1}], on="t.id = s.id").when_matched_delete().execute()
    result = table.merge([{"id": 1}, {"id": 9}], on="t.id = s.id").when_not_matched_insert({"id": "s.id"}).execute()
    assert result.num_inserted_rows == 1 and sorted(r[0] for r in rows_of(table)) == [0, 1, 2, 9]


def test_constraints_checked_on_merged_rows(tmp_path: Path) -> None:
    table = make(tmp_path / "t", base_rows(3), {**DV_ON, "delta.constraints.n_positive": "n >= 0"})
    with pytest.raises(ConstraintViolationError):
        table.merge([{"id": 1, "n": -5}], on="t.id = s.id").when_matched_update({"n": "s.n"}).execute()
    assert sorted(r[2] for r in rows_of(table)) == [0, 10, 20]


def test_skipping_leaves_unrelated_files_untouched(tmp_path: Path) -> None:
    table = make(tmp_path / "t", base_rows(40), DV_ON, files=8)
    before = {f.path for f in Table(table.path).files()}
    result = table.merge([{"id": 37, "name": "x"}], on="t.id = s.id").when_matched_update({"name": "s.name"}).execute()
    after = {f.path for f in Table(table.path).files()}
    assert result.num_files_scanned == 1 and result.num_files_skipped == 7
    assert len(before - after) <= 1  # only the file holding id 37 changed (re-added with a DV)


# --- property: random merges against a Python model ------------------------------------------------

CLAUSE_SETS = [
    ("upsert", lambda b: b.when_matched_update({"name": "s.name", "n": "s.n"}).when_not_matched_insert({"id": "s.id", "name": "s.name", "n": "s.n", "part": "'px'"})),
    ("delete_matched", lambda b: b.when_matched_delete(condition="s.n > 2")),
    ("sync", lambda b: b.when_matched_update({"n": "t.n + s.n"}).when_not_matched_by_source_delete(condition="t.n < 30")),
    ("insert_only", lambda b: b.when_not_matched_insert({"id": "s.id", "name": "s.name", "n": "s.n", "part": "'px'"}, condition="s.n <> 3")),
]


def model_merge(target: list[dict[str, Any]], source: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    out = []
    matched_sources = set()
    for r in target:
        hits = [s for s in source if s["id"] == r["id"]]
        for s in hits:
            matched_sources.add(id(s))
        if kind == "upsert" and hits:
            out.append({**r, "name": hits[0]["name"], "n": hits[0]["n"]})
        elif kind == "delete_matched" and hits and hits[0]["n"] > 2:
            continue
        elif kind == "sync" and hits:
            out.append({**r, "n": r["n"] + hits[0]["n"]})
        elif kind == "sync" and not hits and r["n"] < 30:
            continue
        else:
            out.append(r)
    for s in source:
        if id(s) in matched_sources:
            continue
        if kind == "upsert" or (kind == "insert_only" and s["n"] != 3):
            out.append({"id": s["id"], "name": s["name"], "n": s["n"], "v": None, "part": "px"})
    return out


@settings(max_examples=25, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    keys=st.lists(st.integers(0, 30), min_size=0, max_size=14, unique=True),
    src=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 5)), min_size=0, max_size=8, unique_by=lambda t: t[0]),
    kind=st.sampled_from([name for name, _ in CLAUSE_SETS]),
    dv=st.booleans(),
    partitioned=st.booleans(),
)
def test_random_merges_match_the_model(tmp_path_factory: pytest.TempPathFactory, keys, src, kind, dv, partitioned) -> None:
    root = tmp_path_factory.mktemp("m") / "t"
    target = [{"id": k, "name": f"n{k}", "n": k * 3, "v": {"k": k}, "part": f"p{k % 3}"} for k in keys]
    table = make(root, target, DV_ON if dv else DV_OFF, partitioned, files=3)
    source = [{"id": i, "name": f"s{i}", "n": n} for i, n in src]
    builder = table.merge(source, on="t.id = s.id")
    builder = dict(CLAUSE_SETS)[kind](builder)
    version_before = Table(root).version
    builder.execute()
    assert rows_of(table) == model_rows(model_merge(target, source, kind))
    assert rows_of(table, version_before) == model_rows(target)


# --- Delta's conflict matrix, the rows that apply to a MERGE ------------------------------------------


@pytest.mark.parametrize(
    ("winner", "isolation", "error"),
    [
        ("insert", "WriteSerializable", None),
        ("insert", "Serializable", "ConcurrentAppendError"),
        ("delete", "WriteSerializable", "ConcurrentDeleteDeleteError"),
        ("update", "WriteSerializable", "ConcurrentDeleteDeleteError"),
        ("merge", "WriteSerializable", "ConcurrentDeleteDeleteError"),
        ("merge", "Serializable", "ConcurrentDeleteDeleteError"),
    ],
)
def test_merge_conflict_matrix(tmp_path: Path, winner: str, isolation: str, error: str | None) -> None:
    from varlake import errors
    from varlake.write.changes.rows import commit_change

    table = make(tmp_path / "t", base_rows(8), {**DV_ON, "delta.isolationLevel": isolation}, files=1)
    ours = table.merge([{"id": 1, "name": "ours"}, {"id": 50, "name": "new"}], on="t.id = s.id")
    ours = ours.when_matched_update({"name": "s.name"}).when_not_matched_insert({"id": "s.id", "name": "s.name"})
    staged = ours.stage()
    if winner == "insert":
        table.append([_stored({"id": 50, "name": "theirs", "n": 0, "v": None, "part": "p0"})])  # blind, matches the key
    elif winner == "delete":
        table.delete("id = 2")
    elif winner == "update":
        table.update({"n": "0"}, where="id = 3")
    else:
        table.merge([{"id": 4, "name": "m"}], on="t.id = s.id").when_matched_update({"name": "s.name"}).execute()
    version = Table(table.path).version
    if error is None:
        assert commit_change(table, staged).version == version + 1
    else:
        with pytest.raises(getattr(errors, error)):
            commit_change(table, staged)
        assert Table(table.path).version == version
        # a retry re-plans on the new snapshot and succeeds
        again = table.merge([{"id": 1, "name": "ours"}], on="t.id = s.id").when_matched_update({"name": "s.name"})
        assert again.execute().num_updated_rows == 1


def test_insert_only_merges_do_not_conflict_with_each_other_at_write_serializable(tmp_path: Path) -> None:
    from varlake.write.changes.rows import commit_change

    table = make(tmp_path / "t", base_rows(4), DV_ON, files=1)
    first = table.merge([{"id": 10}], on="t.id = s.id").when_not_matched_insert({"id": "s.id"}).stage()
    second = table.merge([{"id": 11}], on="t.id = s.id").when_not_matched_insert({"id": "s.id"}).stage()
    commit_change(table, first)
    commit_change(table, second)  # neither removed a file; their inserts are disjoint from what the other read
    assert sorted(r[0] for r in rows_of(table)) == [0, 1, 2, 3, 10, 11]
