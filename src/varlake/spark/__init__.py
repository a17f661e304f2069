"""varlake on PySpark: write DataFrames into tables, ingest JSON, plan reads, change rows.

Write side: ``write`` (``writer``), ``ingest_json`` (``ingest``), session helpers
(``session``) and Spark <-> Delta schema conversion (``types``). Row-level changes:
``delete``, ``update``, ``merge`` (``dml``); ``sql`` runs queries (``reader``) and
``DELETE``/``UPDATE``/``MERGE`` statements (``dml``). Streaming: ``write_stream`` and
``ingest_stream`` commit each micro-batch exactly once (``stream``).
"""

from varlake.spark.ingest import IngestResult, ingest_json
from varlake.spark.session import local_session, spark_conf
from varlake.spark.writer import WriteResult, write

__all__ = ["IngestResult", "WriteResult", "ingest_json", "local_session", "spark_conf", "write"]
from varlake.spark.explain import Explanation, explain
from varlake.spark.reader import read

__all__ += ["Explanation", "explain", "read"]
from varlake.spark.dml import SparkMergeBuilder, delete, merge, sql, update

__all__ += ["SparkMergeBuilder", "delete", "merge", "sql", "update"]
from varlake.spark.stream import ingest_stream, write_stream

__all__ += ["ingest_stream", "write_stream"]
from varlake.spark.optimize import optimize  # noqa: E402 -- OPTIMIZE with Spark (the function shadows the module name)

__all__ += ["optimize"]
