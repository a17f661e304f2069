"""Partition paths, hive-style and plain, and tables that drop partition columns from
their data files: the values come from the paths, typed by the table's schema, and prune."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hudi_tables import hudi_tables, rows  # noqa: F401

import varlake
from varlake.errors import HudiError, UnsupportedHudiFeatureError
from varlake.hudi import read_snapshot
from varlake.hudi.partitions import partition_types, partition_values
from varlake.hudi.properties import HudiProperties
from varlake.io.storage import LocalStorage


def _props(**raw: str) -> HudiProperties:
    return HudiProperties({k.replace("_", "."): v for k, v in raw.items()})


def test_partition_values_of_each_key_generator() -> None:
    hive = HudiProperties({"hoodie.table.partition.fields": "a,b", "hoodie.datasource.write.hive_style_partitioning": "true",
                           "hoodie.table.keygenerator.type": "COMPLEX"})
    assert partition_values("a=1/b=x", hive, "t") == {"a": "1", "b": "x"}
    assert partition_values("a=__HIVE_DEFAULT_PARTITION__/b=x", hive, "t") == {"a": None, "b": "x"}
    plain = HudiProperties({"hoodie.table.partition.fields": "a", "hoodie.datasource.write.partitionpath.urlencode": "true"})
    assert partition_values("x%2Fy", plain, "t") == {"a": "x/y"}
    assert partition_values("", HudiProperties({"hoodie.table.keygenerator.type": "NON_PARTITION"}), "t") == {}
    with pytest.raises(HudiError, match="segments"):
        partition_values("1/2", plain, "t")
    with pytest.raises(HudiError, match="is not a="):
        partition_values("b=1/a=2", hive, "t")
    ts = HudiProperties({"hoodie.table.partition.fields": "ts", "hoodie.table.keygenerator.type": "TIMESTAMP"})
    with pytest.raises(UnsupportedHudiFeatureError, match="timestamp-based key generator"):
        partition_values("2024/01/15/09", ts, "t")


def test_partition_types_from_the_avro_schema() -> None:
    schema = '{"type":"record","name":"r","fields":[{"name":"a","type":["int","null"]},{"name":"d","type":["null",{"type":"int","logicalType":"date"}]}]}'
    props = HudiProperties({"hoodie.table.partition.fields": "a,d,z"})
    assert partition_types(props, schema) == {"a": "integer", "d": "date", "z": "string"}


def _dropping(src: Path, dest: Path, column: str) -> Path:
    """A copy of ``src`` whose base files leave out ``column``, declared dropped."""
    shutil.copytree(src, dest)
    for f in dest.rglob("*.parquet"):
        if ".hoodie" in f.parts:
            continue
        table = pq.read_table(f)
        pq.write_table(table.drop_columns([column]), f)
    props = dest / ".hoodie" / "hoodie.properties"
    text = props.read_text().replace("hoodie.datasource.write.drop.partition.columns=false", "hoodie.datasource.write.drop.partition.columns=true")
    props.write_text(text)
    return dest


@pytest.mark.parametrize("name", ["cow/v6_simplekeygen_hivestyle_no_metafields", "cow/v8_simplekeygen_nonhivestyle", "mor/parquet/v6_simplekeygen_hivestyle_no_metafields"])
def test_dropped_partition_columns_come_from_the_paths(hudi_tables: dict[str, Path], tmp_path: Path, name: str) -> None:
    src = hudi_tables[name]
    root = _dropping(src, tmp_path / "t", "byteField")
    want = read_snapshot(LocalStorage(), str(src))
    assert rows(read_snapshot(LocalStorage(), str(root))) == rows(want)
    table = varlake.Table(root)
    assert table.partition_columns == ("byteField",)
    assert rows(table.scan().to_arrow()) == rows(want)
    scan = table.scan(filter="byteField = 20")
    assert len(scan.plan().skipped_by_partition) >= 2
    assert rows(scan.to_arrow()) == rows(want.filter(want.column("byteField").to_numpy() == 20))
