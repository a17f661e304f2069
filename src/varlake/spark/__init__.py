"""varlake on PySpark: write DataFrames into tables, ingest JSON, plan reads, change rows.

Sub-packages by job, in the order data flows through them: ``session`` (local and
cluster sessions, Spark Connect, confs), ``reading`` (read plans, SQL analysis and
rewrites, ``read``, ``explain``), ``writing`` (``write``, ``ingest_json``, and
``write_stream``/``ingest_stream`` committing each micro-batch exactly once) and
``changes`` (``delete``, ``update``, ``merge``, ``sql`` for queries and
``DELETE``/``UPDATE``/``MERGE`` statements, ``optimize``). ``types`` converts Spark <->
Delta schemas and ``uris`` names files as Spark does, for all of them.
"""

from varlake.spark.writing.ingest import IngestResult, ingest_json
from varlake.spark.session.local import local_session, spark_conf
from varlake.spark.writing.writer import WriteResult, write

__all__ = ["IngestResult", "WriteResult", "ingest_json", "local_session", "spark_conf", "write"]
from varlake.spark.reading.explain import Explanation, explain
from varlake.spark.reading.reader import read

__all__ += ["Explanation", "explain", "read"]
from varlake.spark.changes.dml import SparkMergeBuilder, delete, merge, sql, update

__all__ += ["SparkMergeBuilder", "delete", "merge", "sql", "update"]
from varlake.spark.writing.stream import ingest_stream, write_stream

__all__ += ["ingest_stream", "write_stream"]
from varlake.spark.changes.optimize import optimize  # noqa: E402 -- OPTIMIZE with Spark (the function shadows the module name)

__all__ += ["optimize"]
