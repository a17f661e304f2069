"""Delta's golden tables read to the rows (or raise the named errors) Delta's own tests expect.

The expectations live in ``tests/golden_expected.py`` and come from delta-io/delta's
generator and read suites. Tables that need a reader feature varlake does not have yet
are listed once, in ``PENDING_FEATURES``, and run as strict xfails: they turn into
failures (so the list is updated) as soon as the feature lands.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import varlake
from golden_expected import EXPECTED, SKIPPING_LITERALS, Expected, arrow_value, canonical
from varlake.errors import ConstraintViolationError, InvalidCommitError, UnsupportedFeatureError, VarlakeError, VersionNotFoundError

from golden_expected import GOLDEN  # noqa: E402 - one place says where the golden tables are

#: Golden table -> reader features it needs that varlake does not support yet.
PENDING_FEATURES: dict[str, tuple[str, ...]] = {}

pytestmark = pytest.mark.usefixtures("golden_tables")


def _param(name: str, *extra: Any) -> Any:
    marks = []
    if name in PENDING_FEATURES:
        needs = ", ".join(PENDING_FEATURES[name])
        marks.append(pytest.mark.xfail(strict=True, reason=f"needs reader feature(s) {needs}"))
    return pytest.param(name, *extra, marks=marks, id="-".join([name, *map(str, extra)]))


def rows_of(table: pa.Table) -> Counter:
    """The rows of ``table`` as a multiset of canonical tuples."""
    columns = [[arrow_value(v, f.type) for v in table.column(f.name).to_pylist()] for f in table.schema]
    return Counter(repr(canonical(tuple(r))) for r in zip(*columns))


def expected_rows(rows: list[tuple]) -> Counter:
    return Counter(repr(canonical(tuple(r))) for r in rows)


def assert_same_rows(actual: pa.Table, columns: tuple[str, ...], rows: list[tuple]) -> None:
    assert tuple(actual.column_names) == columns
    got, want = rows_of(actual), expected_rows(rows)
    if got != want:
        missing, extra = want - got, got - want
        pytest.fail(
            f"{sum(missing.values())} expected rows missing, {sum(extra.values())} unexpected rows; "
            f"missing e.g. {list(missing)[:3]}, unexpected e.g. {list(extra)[:3]}"
        )


def _read(name: str, exp: Expected, version: int | None = None) -> pa.Table:
    table = varlake.Table(GOLDEN / name)
    return table.scan(columns=exp.select, version=version).to_arrow()


def test_every_golden_table_has_an_expectation() -> None:
    tops = {name.split("/")[0] for name in EXPECTED}
    assert tops <= set(os.listdir(GOLDEN))
    assert set(PENDING_FEATURES) <= set(EXPECTED)


def test_tables_without_expectations_read_or_fail_by_name() -> None:
    """Any other table in the folder (Delta has more golden tables) reads, or fails with a
    named varlake error -- never a raw Python or Arrow exception."""
    tops = {name.split("/")[0] for name in EXPECTED}
    for name in sorted(set(os.listdir(GOLDEN)) - tops):
        try:
            varlake.Table(GOLDEN / name).scan().to_arrow()
        except VarlakeError:
            pass


@pytest.mark.parametrize("name", [_param(n) for n in sorted(EXPECTED)])
def test_golden_table_latest(name: str) -> None:
    exp = EXPECTED[name]
    if exp.error is not None:
        with pytest.raises(exp.error, match=exp.match):
            _read(name, exp)
        return
    assert exp.rows is not None
    if exp.version is not None:
        assert varlake.Table(GOLDEN / name).version == exp.version
    assert_same_rows(_read(name, exp), exp.columns, exp.rows())


@pytest.mark.parametrize(
    "name, version", [_param(n, v) for n in sorted(EXPECTED) for v in sorted(EXPECTED[n].versions)]
)
def test_golden_table_time_travel(name: str, version: int) -> None:
    exp = EXPECTED[name]
    columns, rows = exp.versions[version]
    actual = _read(name, exp, version)
    assert_same_rows(actual, columns, rows())
    assert varlake.Table(GOLDEN / name).snapshot(version).version == version


def test_latest_metadata_and_protocol_win() -> None:
    # LogReplaySuite 'fetches the latest protocol and metadata'
    table = varlake.Table(GOLDEN / "log-replay-latest-metadata-protocol")
    assert table.arrow_schema.names == ["col1", "col2"]
    assert (table.protocol.min_reader_version, table.protocol.min_writer_version) == (3, 7)
    old = table.snapshot(0)
    assert old.arrow_schema.names == ["col1"]
    assert (old.protocol.min_reader_version, old.protocol.min_writer_version) == (1, 2)


#: Columns whose statistics varlake does not use for skipping yet (sound, only slower).
#: Float/double files skip too: each holds one value, which proves it is not NaN.
_NOT_SKIPPED_YET: set[str] = set()


@pytest.mark.parametrize("column", sorted(SKIPPING_LITERALS))
def test_golden_data_skipping_all_types(column: str) -> None:
    table = varlake.Table(GOLDEN / "data-skipping-basic-stats-all-types")
    value, small, big = SKIPPING_LITERALS[column]
    hits = [f"{column} = {value}", f"{column} > {small}", f"{column} >= {value}", f"{column} < {big}", f"{column} <= {value}"]
    misses = [f"{column} = {small}", f"{column} > {value}", f"{column} >= {big}", f"{column} < {value}", f"{column} <= {small}"]
    for where in hits:
        assert len(table.scan(where).plan().tasks) == 1, where
        assert table.scan(where).to_arrow().num_rows == 1, where
    for where in misses:
        assert table.scan(where).to_arrow().num_rows == 0, where
        if column not in _NOT_SKIPPED_YET:
            assert len(table.scan(where).plan().tasks) == 0, where


def test_golden_data_skipping_with_stats_changing_across_versions() -> None:
    # ScanSuite 'data skipping - stats collected changing across versions'
    table = varlake.Table(GOLDEN / "data-skipping-change-stats-collected-across-versions")
    for where, files in {"col1 = 1": 1, "col2 = 1": 2, "col1 = 1 AND col2 = 1": 1}.items():
        assert len(table.scan(where).plan().tasks) == files, where
        assert table.scan(where).to_arrow().num_rows == 0, where
    assert table.scan("col1 = 0 AND col2 = 0").to_arrow().num_rows == 3


def test_time_travel_by_timestamp(tmp_path: Path) -> None:
    """DeltaTimeTravelSuite: commits stamped start, start+20min, start+40min (file mtimes)."""
    path = _writable_copy("time-travel-start-start20-start40", tmp_path / "t")
    start = 1540415658000
    for v, minutes in enumerate((0, 20, 40)):
        commit = path / "_delta_log" / f"{v:020d}.json"
        os.utime(commit, ns=((start + minutes * 60_000) * 1_000_000,) * 2)
    table = varlake.Table(path)
    minute = 60_000
    assert table.snapshot(timestamp=start).version == 0
    assert table.snapshot(timestamp=start + 19 * minute).version == 0
    assert table.snapshot(timestamp=start + 20 * minute).version == 1
    assert table.snapshot(timestamp=start + 39 * minute).version == 1
    assert table.snapshot(timestamp=start + 41 * minute).version == 2
    with pytest.raises(VersionNotFoundError):
        table.snapshot(timestamp=start - 1)


def _writable_copy(name: str, dest: Path) -> Path:
    shutil.copytree(GOLDEN / name, dest)
    for p in [dest, *dest.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return dest


def _commit(path: Path, version: int, *actions: dict) -> None:
    log = path / "_delta_log" / f"{version:020d}.json"
    log.write_text("".join(json.dumps(a) + "\n" for a in actions))


def _metadata(path: Path, configuration: dict[str, str], schema: str | None = None) -> dict:
    first = (path / "_delta_log" / f"{0:020d}.json").read_text().splitlines()
    meta = next(json.loads(line) for line in first if '"metaData"' in line)
    meta["metaData"]["configuration"] = configuration
    if schema is not None:
        meta["metaData"]["schemaString"] = schema
    return meta


def test_collated_table_reads_but_refuses_writes(tmp_path: Path) -> None:
    # collations-preview: the files hold plain strings (readable), but min/max statistics
    # and comparisons follow the collation, which varlake cannot honour when writing.
    table = varlake.Table(_writable_copy("collations-preview-table", tmp_path / "c"))
    assert table.scan().to_arrow().num_rows == 0
    row = pa.table({"id": [1], "utf8_binary_col": ["a"], "utf8_lcase_col": ["b"], "unicode_col": ["c"]})
    with pytest.raises(UnsupportedFeatureError, match="collations .*column 'utf8_lcase_col'"):
        table.append(row)


def test_append_only_golden_table(tmp_path: Path) -> None:
    path = _writable_copy("time-travel-start", tmp_path / "t")
    _commit(path, 1, _metadata(path, {"delta.appendOnly": "true"}))
    table = varlake.Table(path)
    table.append(pa.table({"id": pa.array([10], pa.int64())}))
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == list(range(11))
    with pytest.raises(InvalidCommitError, match="append-only"):
        table.overwrite(pa.table({"id": pa.array([0], pa.int64())}))
    assert table.scan().to_arrow().num_rows == 11


def test_check_constraints_and_invariants_are_not_bypassed(tmp_path: Path) -> None:
    path = _writable_copy("time-travel-start", tmp_path / "t")
    _commit(path, 1, {"protocol": {"minReaderVersion": 1, "minWriterVersion": 3}}, _metadata(path, {"delta.constraints.positive": "id > 0"}))
    with pytest.raises(ConstraintViolationError, match="CHECK constraint positive id > 0 violated"):  # honoured (write.constraints)
        varlake.Table(path).append(pa.table({"id": pa.array([-1], pa.int64())}))
    invariant = json.dumps({"expression": {"expression": "id > 0"}})
    schema = json.dumps(
        {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {"delta.invariants": invariant}}]}
    )
    _commit(path, 2, _metadata(path, {}, schema))
    with pytest.raises(ConstraintViolationError, match=r"EXPRESSION\(id > 0\) id > 0 violated"):
        varlake.Table(path).append(pa.table({"id": pa.array([-1], pa.int64())}))
    assert varlake.Table(path).scan().to_arrow().num_rows == 10  # nothing was written


def test_append_to_a_golden_table_keeps_its_rows(tmp_path: Path) -> None:
    path = _writable_copy("v2-checkpoint-json", tmp_path / "v2")
    table = varlake.Table(path)
    table.append(pa.table({"id": pa.array([100], pa.int64())}))
    assert sorted(varlake.Table(path).scan().to_arrow().column("id").to_pylist()) == [*range(10), 100]


def test_timestamp_millis_files(tmp_path: Path) -> None:
    """kernel-timestamp-TIMESTAMP_MILLIS (kept for acceptance) in miniature: the MICROS golden
    table with its data files rewritten as Parquet TIMESTAMP(MILLIS) reads to the same rows."""
    import pyarrow.parquet as pq

    path = _writable_copy("kernel-timestamp-TIMESTAMP_MICROS", tmp_path / "ms")
    for f in path.rglob("*.parquet"):
        pq.write_table(pq.read_table(f), f, coerce_timestamps="ms")
        assert pq.ParquetFile(f).schema_arrow.field("time").type.unit == "ms"
    exp = EXPECTED["kernel-timestamp-TIMESTAMP_MICROS"]
    assert exp.rows is not None
    assert_same_rows(varlake.Table(path).scan().to_arrow(), exp.columns, exp.rows())


def _add_file(path: Path, rel: str, data: pa.Table, partition: dict[str, str]) -> dict:
    import pyarrow.parquet as pq

    (path / rel).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(data, path / rel)
    size = (path / rel).stat().st_size
    return {"add": {"path": rel, "partitionValues": partition, "size": size, "modificationTime": 1, "dataChange": True}}


def _removes(path: Path) -> list[dict]:
    return [
        {"remove": {"path": a.path, "deletionTimestamp": 1, "dataChange": True}}
        for a in varlake.Table(path).files()
    ]


def test_time_travel_across_a_partition_change(tmp_path: Path) -> None:
    """time-travel-partition-changes-b in miniature: version 1 overwrites the table with
    overwriteSchema and a new partition column; version 0 keeps its own schema and layout."""
    path = _writable_copy("time-travel-partition-changes-a", tmp_path / "t")
    schema = json.dumps(
        {"type": "struct", "fields": [{"name": n, "type": "long", "nullable": True, "metadata": {}} for n in ("id", "part2")]}
    )
    meta = _metadata(path, {}, schema)
    meta["metaData"]["partitionColumns"] = ["part2"]
    adds = [
        _add_file(path, f"part2={p}/f.parquet", pa.table({"id": pa.array([i for i in range(10, 20) if i % 2 == p], pa.int64())}), {"part2": str(p)})
        for p in (0, 1)
    ]
    _commit(path, 1, meta, *_removes(path), *adds)
    table = varlake.Table(path)
    assert_same_rows(table.scan().to_arrow(), ("id", "part2"), [(i, i % 2) for i in range(10, 20)])
    assert table.partition_columns == ("part2",)
    assert_same_rows(table.scan(version=0).to_arrow(), ("id", "part5"), [(i, i % 5) for i in range(10)])
    assert table.snapshot(0).partition_columns == ("part5",)


def test_time_travel_across_a_schema_change(tmp_path: Path) -> None:
    """time-travel-schema-changes-b in miniature: version 1 appends with mergeSchema (a new
    column); old files read it as null, version 0 reads the old schema."""
    path = _writable_copy("time-travel-schema-changes-a", tmp_path / "t")
    schema = json.dumps(
        {"type": "struct", "fields": [{"name": n, "type": "long", "nullable": True, "metadata": {}} for n in ("id", "part")]}
    )
    ids = pa.array(range(10, 20), pa.int64())
    _commit(path, 1, _metadata(path, {}, schema), _add_file(path, "new.parquet", pa.table({"id": ids, "part": ids}), {}))
    table = varlake.Table(path)
    assert_same_rows(table.scan().to_arrow(), ("id", "part"), [(i, None) for i in range(10)] + [(i, i) for i in range(10, 20)])
    assert_same_rows(table.scan(version=0).to_arrow(), ("id",), [(i,) for i in range(10)])


def test_commit_info_with_arbitrary_operation_parameter_types() -> None:
    # TableChangesSuite: OPTIMIZE's commitInfo holds a boolean ("auto": false) among strings.
    history = varlake.Table(GOLDEN / "commit-info-containing-arbitrary-operationParams-types").history()
    assert [(h.version, h.operation) for h in history] == [(2, "OPTIMIZE"), (1, "WRITE"), (0, "CREATE TABLE AS SELECT")]
    assert history[0].operation_parameters["zOrderBy"] == '["id"]'
    assert history[0].operation_parameters["auto"] is False
