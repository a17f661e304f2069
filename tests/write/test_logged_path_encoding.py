"""Data file paths are logged as Hadoop's ``Path.toUri`` writes them: ``=`` of a partition
directory stays as it is, a space is ``%20``, the ``%`` of a Hive-escaped directory name is
``%25``, non-ASCII letters stay as they are. With ``=`` (or ``ü``) escaped as ``%3D`` delta-spark's VACUUM deleted every live file of a
partitioned varlake table (issue 31: tests/interop/test_delta_spark_reads_varlake.py)."""

from __future__ import annotations

from urllib.parse import unquote

import varlake
from varlake.write.staging.files import add_action


def test_partition_directories_keep_their_equals_sign(tmp_path):
    t = varlake.Table.create(tmp_path / "t", "id bigint, p string, q int", partition_by=["p", "q"])
    t.append([{"id": 1, "p": "p 9", "q": 1}, {"id": 2, "p": "a=b", "q": None}, {"id": 3, "p": "100%", "q": 2}])
    paths = sorted(f.path.rsplit("/", 1)[0] for f in t.files())
    assert paths == ["p=100%2525/q=2", "p=a%253Db/q=__HIVE_DEFAULT_PARTITION__", "p=p%209/q=1"]
    for f in t.files():
        assert (tmp_path / "t" / unquote(f.path)).is_file()
    assert sorted(r["p"] for r in t.scan().to_arrow().to_pylist()) == ["100%", "a=b", "p 9"]


def test_add_action_quotes_only_what_a_uri_path_must():
    add = add_action(("x=1/y=a b/c?d#e%f/ünï 😀\u00a0/part.parquet", 1, 0, 0, "{}"), {})
    assert add.path == "x=1/y=a%20b/c%3Fd%23e%25f/ünï%20😀%C2%A0/part.parquet"
    assert unquote(add.path) == "x=1/y=a b/c?d#e%f/ünï 😀\u00a0/part.parquet"
