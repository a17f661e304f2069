"""The Hudi timeline, properties, file names and commit metadata, one piece at a time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hudi_tables import hudi_tables  # noqa: F401

from varlake.errors import CorruptHudiTimelineError, HudiInstantNotFoundError, TableNotFoundError, UnsupportedHudiFeatureError
from varlake.hudi import load_properties, load_timeline, open_snapshot
from varlake.hudi.commit_metadata import parse_commit_metadata
from varlake.hudi.file_groups import parse_base_name, parse_log_name
from varlake.hudi.properties import HudiProperties, parse_properties
from varlake.hudi.timeline import COMPLETED, INFLIGHT, REQUESTED, parse_instant_name
from varlake.io.storage import LocalStorage


def test_instant_names_of_both_layouts() -> None:
    assert parse_instant_name("20240707001301554.commit", ".hoodie").state == COMPLETED
    inflight = parse_instant_name("20240707001301554.inflight", ".hoodie")
    assert (inflight.action, inflight.state) == ("commit", INFLIGHT)
    req = parse_instant_name("20260307135709297.clustering.requested", ".hoodie/timeline")
    assert (req.action, req.state) == ("clustering", REQUESTED)
    done = parse_instant_name("20260307135709297_20260307135709818.replacecommit", ".hoodie/timeline")
    assert (done.timestamp, done.completion_time, done.state) == ("20260307135709297", "20260307135709818", COMPLETED)
    assert done.file == ".hoodie/timeline/20260307135709297_20260307135709818.replacecommit"
    for other in ("hoodie.properties", "archived", "20240707001301554.unknownaction", "abc.commit", "123.commit"):
        assert parse_instant_name(other, ".hoodie") is None


def test_java_properties_escapes() -> None:
    text = "#comment\n! also\na.b=x\\:y\\=z\nspaced : value \\\n  continued\nunicode=\\u00e9\nempty=\n"
    assert parse_properties(text) == {"a.b": "x:y=z", "spaced": "value continued", "unicode": "\u00e9", "empty": ""}


def test_properties_of_each_version(hudi_tables: dict[str, Path]) -> None:
    v6 = load_properties(LocalStorage(), str(hudi_tables["cow/v6_simplekeygen_nonhivestyle_overwritetable"]))
    assert (v6.version, v6.timeline_layout, v6.timeline_folder, v6.is_mor) == (6, 1, "", False)
    assert (v6.record_key_fields, v6.partition_fields, v6.ordering_fields) == (("id",), ("byteField",), ("longField",))
    assert (v6.key_generator, v6.hive_style_partitioning) == ("SIMPLE", False)
    v9 = load_properties(LocalStorage(), str(hudi_tables["mor/avro/v9_txns_complex_nometa"]))
    assert (v9.version, v9.timeline_layout, v9.timeline_folder, v9.is_mor) == (9, 2, "timeline", True)
    assert v9.ordering_fields == ("txn_ts",)
    assert v9.history_folder == "timeline/history"


def test_refusals_name_the_feature() -> None:
    for raw, feature in (
        ({"hoodie.table.version": "5"}, "table version 5"),
        ({"hoodie.table.version": "9", "hoodie.table.base.file.format": "ORC"}, "ORC base files"),
        ({"hoodie.table.version": "6", "hoodie.bootstrap.base.path": "/x"}, "bootstrap"),
    ):
        with pytest.raises(UnsupportedHudiFeatureError, match=feature):
            HudiProperties(raw).check_readable("t")


def test_file_names() -> None:
    base = parse_base_name("4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0_0-95-135_20240707001302376.parquet", "10")
    assert (base.path, base.file_id, base.instant) == (
        "10/4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0_0-95-135_20240707001302376.parquet",
        "4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0",
        "20240707001302376",
    )
    log = parse_log_name(".c06fe141-9f11-46fb-aa70-d7f9d2dcca2f-0_20260307135833781.log.1_0-24-53", "region=eu")
    assert (log.file_id, log.instant, log.version, log.write_token) == (
        "c06fe141-9f11-46fb-aa70-d7f9d2dcca2f-0", "20260307135833781", 1, "0-24-53"
    )
    assert parse_log_name(".abc-0_20260307135833781.log.1_0-24-53.cdc", "") is None
    assert parse_base_name("part-0000.parquet", "") is None
    assert parse_base_name("abc_1-2-3_20240707001302376.txt", "") is None


def test_commit_metadata_json_and_avro(hudi_tables: dict[str, Path]) -> None:
    for name, action in (("cow/v6_simplekeygen_nonhivestyle_overwritetable", "replacecommit"), ("cow/v9_txns_simple_nometa", "replacecommit")):
        root = str(hudi_tables[name])
        props = load_properties(LocalStorage(), root)
        timeline = load_timeline(LocalStorage(), root, props)
        replaces = [i for i in timeline.completed_writes if i.action == action]
        md = timeline.metadata(replaces[0])
        assert md.write_stats and all(s.file_id and s.path for s in md.write_stats)
        assert md.replaced(), name
        assert md.schema is not None and json.loads(md.schema)["type"] == "record"


def test_bad_commit_metadata_is_named() -> None:
    for data in (b"{not json", b"[1, 2]", b"Obj\x01garbage", json.dumps({"partitionToWriteStats": {"p": [{"path": "x"}]}}).encode()):
        with pytest.raises(CorruptHudiTimelineError):
            parse_commit_metadata(data, "t/.hoodie/1.commit")
    assert parse_commit_metadata(b"", "t").write_stats == ()


def test_missing_table_and_instants(hudi_tables: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        open_snapshot(LocalStorage(), str(tmp_path))
    root = str(hudi_tables["cow/v8_nonpartitioned"])
    with pytest.raises(HudiInstantNotFoundError):
        open_snapshot(LocalStorage(), root, "20000101000000000")
    with pytest.raises(HudiInstantNotFoundError):
        open_snapshot(LocalStorage(), root, "yesterday")
    snap = open_snapshot(LocalStorage(), root, "2025-07-13 01:05:36.861")
    assert snap.instant.timestamp == "20250713010536861"


def test_pending_and_rolled_back_instants_do_not_count(hudi_tables: dict[str, Path], tmp_path: Path) -> None:
    """A base file of an inflight commit is not read; nor is one of a commit a completed
    rollback names."""
    import shutil

    src = hudi_tables["cow/v6_simplekeygen_hivestyle_no_metafields"]
    root = tmp_path / "t"
    shutil.copytree(src, root)
    before = open_snapshot(LocalStorage(), str(root))
    files = {s.base.path for s in before.slices}
    part = root / "byteField=20"
    stray = part / "3345afaa-7014-49b3-bfd7-8b89385e6c87-0_0-1-1_20240707001304000.parquet"
    shutil.copy(part / "3345afaa-7014-49b3-bfd7-8b89385e6c87-0_1-35-79_20240426205419518.parquet", stray)
    (root / ".hoodie" / "20240707001304000.inflight").write_text("")
    assert {s.base.path for s in open_snapshot(LocalStorage(), str(root)).slices} == files
    (root / ".hoodie" / "20240707001304000.commit").write_text(json.dumps({"partitionToWriteStats": {}}))
    assert stray.name in {Path(s.base.path).name for s in open_snapshot(LocalStorage(), str(root)).slices}
    (root / ".hoodie" / "20240707001305000.rollback").write_text(json.dumps({"commitsRollback": ["20240707001304000"]}))
    assert {s.base.path for s in open_snapshot(LocalStorage(), str(root)).slices} == files
