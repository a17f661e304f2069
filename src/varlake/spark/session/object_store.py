"""Spark on object stores: the S3A connector configured from the settings the Python side uses.

varlake's own reads and writes (the log, footers, deletion vectors) reach S3 through
``io.object_store`` with ``io.store_settings``; Spark's jobs reach the same objects through
Hadoop's S3A connector. ``s3a_conf`` turns the same settings (the ``AWS_*`` environment
overridden by ``storage_options``) into Spark confs, so the driver and every executor see
the store the table layer sees:

- ``spark.jars``: the connector's jars, fetched once into ``~/.cache/varlake/jars/s3a``
  by ``make tools`` (``tools/s3a.sh``); missing jars raise ``S3AConnectorMissingError``;
- ``spark.hadoop.fs.s3a.*`` from ``StoreSettings.s3a_properties`` (endpoint, path-style
  requests, credentials, region, retries), and ``fs.s3.impl`` = S3A, so ``s3://`` and
  ``s3a://`` name the same objects in Spark as in varlake;
- S3A's *magic* committer: each task writes its data file as a multipart upload straight
  to its final, unique name and the job commit completes the uploads -- no ``_temporary``
  directory, no rename (a copy on S3). varlake then commits the files to the Delta log.

``local_session(storage_options=...)`` applies these confs when it starts the JVM (jars and
committer are static). ``apply_storage_options`` sets per-bucket S3A settings on a running
classic session, for entry points given ``storage_options`` for one table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from varlake.errors import UnsupportedStorageError
from varlake.io.locations import parse_uri
from varlake.io.store_settings import StoreSettings
from varlake.spark.session.kind import is_classic

__all__ = [
    "COMMITTER_CONF",
    "S3AConnectorMissingError",
    "apply_storage_options",
    "check_s3a",
    "object_store_requested",
    "open_table",
    "reach",
    "s3a_conf",
    "s3a_jars",
]

#: The magic committer: data files written to their final names, no rename.
COMMITTER_CONF: dict[str, str] = {
    "spark.hadoop.fs.s3a.committer.name": "magic",
    "spark.hadoop.fs.s3a.committer.magic.enabled": "true",
    "spark.sql.sources.commitProtocolClass": "org.apache.spark.internal.io.cloud.PathOutputCommitProtocol",
    "spark.sql.parquet.output.committer.class": "org.apache.spark.internal.io.cloud.BindingParquetOutputCommitter",
    "spark.hadoop.mapreduce.outputcommitter.factory.scheme.s3a": "org.apache.hadoop.fs.s3a.commit.S3ACommitterFactory",
    "spark.hadoop.mapreduce.outputcommitter.factory.scheme.s3": "org.apache.hadoop.fs.s3a.commit.S3ACommitterFactory",
}

#: Environment variables that say "this process talks to S3" (``local_session`` adds S3A then).
_S3_ENV = ("AWS_ACCESS_KEY_ID", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT", "AWS_PROFILE", "AWS_SESSION_TOKEN")


class S3AConnectorMissingError(UnsupportedStorageError):
    """Spark needs Hadoop's S3A connector for ``s3://`` tables and its jars are not cached."""


def jars_dir() -> Path:
    """Where ``tools/s3a.sh`` puts the S3A jars: ``$VARLAKE_CACHE/jars/s3a`` (default ``~/.cache/varlake``)."""
    cache = Path(os.environ.get("VARLAKE_CACHE", Path.home() / ".cache" / "varlake"))
    return cache / "jars" / "s3a"


def s3a_jars() -> list[str]:
    """The cached S3A connector jars (absolute paths, sorted); ``S3AConnectorMissingError``
    telling the user to run ``make tools`` when there are none."""
    folder = jars_dir()
    jars = sorted(str(p) for p in folder.glob("*.jar")) if folder.is_dir() else []
    if not any(Path(j).name.startswith("hadoop-aws-") for j in jars):
        raise S3AConnectorMissingError(
            f"Spark needs Hadoop's S3A connector for s3:// tables and it is not in {folder}: "
            "run `make tools` (or tools/s3a.sh) to fetch it once"
        )
    return jars


def object_store_requested(storage_options: Mapping[str, Any] | None, env: Mapping[str, str] | None = None) -> bool:
    """True when ``storage_options`` are given or the environment names S3 credentials or an
    endpoint: then ``local_session`` configures S3A."""
    env = os.environ if env is None else env
    return bool(storage_options) or any(env.get(name) for name in _S3_ENV)


def s3a_conf(
    storage_options: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None, master: str = "local[*]"
) -> dict[str, str]:
    """Spark confs for S3A from the same settings ``io.object_store`` uses (environment, then
    ``storage_options``): jars, ``spark.hadoop.fs.s3a.*``, ``fs.s3.impl`` and the magic
    committer. Holds credentials when they were given: keep it out of logs.

    The jars: ``spark.jars`` for a ``local`` master (one JVM); for a cluster master the
    driver's and executors' class paths (``spark.{driver,executor}.extraClassPath``), so
    that the ~700 MB SDK bundle is not copied to every executor: run ``make tools`` on each
    worker machine (same cache path), or ship them with ``conf={"spark.jars": ...}``."""
    settings = StoreSettings("s3", storage_options, os.environ if env is None else env)
    jars = s3a_jars()
    if master.startswith("local"):
        conf = {"spark.jars": ",".join(jars)}
    else:
        conf = {"spark.driver.extraClassPath": os.pathsep.join(jars), "spark.executor.extraClassPath": os.pathsep.join(jars)}
    conf.update({f"spark.hadoop.{k}": v for k, v in settings.s3a_properties().items()})
    conf.update(COMMITTER_CONF)
    return conf


def apply_storage_options(spark: Any, uri: str, storage_options: Mapping[str, Any] | None) -> None:
    """Give a running classic session's Hadoop configuration the S3A settings of
    ``storage_options`` for ``uri``'s bucket only (``fs.s3a.bucket.<bucket>.*``), so that
    Spark's jobs reach the table as varlake does. A no-op without options, for other
    stores, and on Spark Connect (configure the server). S3A caches a file system per bucket:
    settings reach a bucket Spark has not used yet in this session."""
    if not storage_options:
        return
    parsed = parse_uri(uri)
    if parsed.scheme != "s3":
        return
    if not is_classic(spark):
        return
    props = StoreSettings("s3", storage_options, {}).s3a_properties()
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in props.items():
        if key.startswith("fs.s3a.") and not key.startswith("fs.s3a.impl"):
            hadoop.set(f"fs.s3a.bucket.{parsed.bucket}.{key[len('fs.s3a.'):]}", value)


def check_s3a(spark: Any, uri: str) -> None:
    """Raise ``S3AConnectorMissingError`` when ``uri`` is an ``s3://`` (``s3a://``) location
    and the classic session ``spark`` was started without the S3A connector (start it with
    ``varlake.spark.local_session(storage_options=...)``, or ``s3a_conf``'s confs)."""
    if parse_uri(uri).scheme != "s3":
        return
    if not is_classic(spark):
        return  # a Connect server has its own confs: Spark names what is missing
    impl = spark.sparkContext._jsc.hadoopConfiguration().get("fs.s3.impl")
    if impl != "org.apache.hadoop.fs.s3a.S3AFileSystem":
        s3a_jars()  # names `make tools` when the jars are missing
        raise S3AConnectorMissingError(
            f"{uri}: this Spark session was started without the S3A connector; start it with "
            "varlake.spark.local_session(storage_options=...) or the confs of "
            "varlake.spark.session.object_store.s3a_conf()"
        )


def reach(spark: Any, uri: str, storage_options: Mapping[str, Any] | None) -> None:
    """Before a Spark job on the table at ``uri``: the session can reach it (``check_s3a``),
    with ``storage_options`` applied to its bucket (``apply_storage_options``)."""
    check_s3a(spark, uri)
    apply_storage_options(spark, uri, storage_options)


def open_table(spark: Any, source: Any, storage_options: Mapping[str, Any] | None = None) -> Any:
    """The ``Table`` an entry point was given: a ``Table`` as it is, else the one at the path
    or URI ``source`` (storage chosen by ``varlake.table.locate`` from the environment and
    ``storage_options``); either way checked reachable by ``spark`` (``reach``)."""
    from varlake.table import Table

    table = source if isinstance(source, Table) else Table(source, storage_options=storage_options)
    reach(spark, table.path, None if isinstance(source, Table) else storage_options)
    return table
