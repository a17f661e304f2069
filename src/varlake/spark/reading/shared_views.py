"""Table reads shared by the queries of a Spark application as global temporary views
(``SharedReads``), built in session clones that read Variant groups as structs
(``clone_session``)."""

from __future__ import annotations

import atexit
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from varlake.spark.reading.frames import all_shredded, table_frame
from varlake.spark.reading.mapped_read import FIELD_ID_READ
from varlake.spark.reading.planner import PathUse, TablePlan
from varlake.spark.session.local import is_classic

__all__ = ["IGNORE_VARIANT_ANNOTATION", "SHARED_READS", "SharedReads", "clone_session"]


IGNORE_VARIANT_ANNOTATION = "spark.sql.parquet.ignoreVariantAnnotation"


def clone_session(spark: Any) -> Any:
    """A clone of ``spark`` (confs, views, functions) that reads Variant groups as structs
    and id-mode columns by field id on request (Spark reads a relation with the confs of
    the session it was built in, whichever session runs the query). On Spark Connect the
    server clones the caller's server-side session (``cloneSession``)."""
    from pyspark.sql import SparkSession

    if is_classic(spark):
        session = SparkSession(spark.sparkContext, spark._jsparkSession.cloneSession())
    else:
        session = spark.cloneSession()
        _close_at_exit(session.client)
    session.conf.set(IGNORE_VARIANT_ANNOTATION, "true")
    session.conf.set(FIELD_ID_READ, "true")  # only fields that carry parquet.field.id are matched by id
    return session


def _close_at_exit(client: Any) -> None:
    """At exit, close a Connect clone's channel instead of running the client's own exit
    RPCs: those are retried for minutes when the server is already gone, holding up the
    process; the server drops the idle clone session by itself."""
    import atexit

    atexit.unregister(client._on_exit)
    atexit.register(client.close)


class SharedReads:
    """Table reads shared by the queries of one Spark application, as global temporary views.

    Building a table's read (the Parquet relation of each file group, its projection, the
    union) costs tens of milliseconds of JVM calls -- a third of a short query's time -- and
    is the same for every query that plans the same files the same way. So each read is
    built once, in a session clone with the caller's confs and ``ignoreVariantAnnotation``
    (the relation keeps that session for reading), and registered as a global temporary
    view, which each query's SQL names directly. The key is everything
    the read depends on: the Spark application, the caller's confs (a hash of all of them),
    the table's location and schema, and per file group its kind, files, partition values
    and leaf types, plus the derived columns. Files in a Delta table never change, so a key
    never goes stale; the least recently used views are dropped beyond ``capacity``.

    On Spark Connect a DataFrame is a plan the server analyses again at each action, so
    it names the view rather than holding its read: a view some live result still uses
    (``hold``; tracked through its plan object, which every DataFrame derived from the
    result shares) is retired instead of dropped, and dropped by a later ``view`` call once
    no such plan is left.
    """

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self._views: OrderedDict[tuple[Any, ...], tuple[str, str]] = OrderedDict()
        self._readers: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()
        self._users: dict[tuple[str, str], weakref.WeakSet[Any]] = {}
        self._retired: list[tuple[Any, tuple[str, str]]] = []

    @staticmethod
    def context(spark: Any) -> tuple[Any, ...]:
        """The application and a hash of the caller's confs (one JVM call, or one Connect
        round trip; the Connect server's confs include its application id)."""
        if is_classic(spark):
            jconf = spark._jsparkSession.conf().getAll()
            return (spark.sparkContext.applicationId, jconf.hashCode(), jconf.size())
        confs = dict(spark.conf.getAll)
        return ("connect", confs.get("spark.app.id"), hash(frozenset(confs.items())), len(confs))

    @staticmethod
    def _plan_key(plan: TablePlan, derived: Mapping[PathUse, str]) -> tuple[Any, ...]:
        groups = tuple(
            (g.kind, tuple((t.relative_path, t.add.key[1]) for t in g.tasks), g.partition_values, g.leaf_types, g.proven)
            for g in plan.groups  # a file's deletion vector (key[1]) changes what its read returns
        )
        flagged = not all_shredded(plan)  # whether the view has the flag column
        derived_key = tuple(sorted(derived.items(), key=lambda kv: kv[1]))
        return (plan.table.open_file(""), plan.schema.to_schema_string(), groups, flagged, derived_key, plan.keep_apart)

    def view(self, spark: Any, plan: TablePlan, derived: Mapping[PathUse, str]) -> tuple[str, str]:
        """``(database, name)`` of the global view holding ``plan``'s read (built if new)."""
        context = self.context(spark)
        key = (context, self._plan_key(plan, derived))
        with self._lock:
            self._sweep()
            name = self._views.get(key)
            if name is not None:
                self._views.move_to_end(key)
                return name
            reader = self._readers.get(context)
            if reader is None:
                reader = self._readers[context] = clone_session(spark)
            local = f"__varlake_read_{uuid.uuid4().hex}"
            table_frame(reader, plan, derived).createOrReplaceGlobalTempView(local)
            database = reader.conf.get("spark.sql.globalTempDatabase", "global_temp")
            name = self._views[key] = (database, local)
            while len(self._views) > self.capacity:
                self._drop(*self._views.popitem(last=False))
            return name

    def hold(self, views: Sequence[tuple[str, str]], result: Any) -> None:
        """Keep ``views`` while ``result`` (a Connect DataFrame) or one derived from it lives."""
        plan = getattr(result, "_plan", None)
        if plan is None:
            return
        with self._lock:
            for view in views:
                self._users.setdefault(view, weakref.WeakSet()).add(plan)

    def _in_use(self, view: tuple[str, str]) -> bool:
        users = self._users.get(view)
        if users is not None and not len(users):
            del self._users[view]
            return False
        return users is not None

    def _sweep(self) -> None:
        """Drop the retired views no live result uses any more."""
        kept = []
        for reader, view in self._retired:
            if self._in_use(view):
                kept.append((reader, view))
            else:
                self._drop_view(reader, view)
        self._retired = kept

    def _drop(self, key: tuple[Any, ...], view: tuple[str, str]) -> None:
        context = key[0]
        reader = self._readers.get(context)
        if not any(k[0] == context for k in self._views):
            self._readers.pop(context, None)
        if reader is None:
            return
        if self._in_use(view):
            self._retired.append((reader, view))
        else:
            self._drop_view(reader, view)

    @staticmethod
    def _drop_view(reader: Any, view: tuple[str, str]) -> None:
        try:
            reader.catalog.dropGlobalTempView(view[1])
        except Exception:  # its Spark application has stopped: nothing left to drop
            return

    def __len__(self) -> int:
        return len(self._views)

    @property
    def views(self) -> list[tuple[str, str]]:
        """``(database, name)`` of every shared read, least recently used first."""
        return list(self._views.values())

    def clear(self) -> None:
        """Drop every shared read (DataFrames made from them keep working)."""
        with self._lock:
            while self._views:
                self._drop(*self._views.popitem(last=False))


SHARED_READS = SharedReads()


@atexit.register
def _close_connect_readers() -> None:
    """Close the Spark Connect session clones ``SHARED_READS`` holds while the interpreter is
    whole: closed later, by their finalizers, their gRPC channels can hang the process's exit."""
    for reader in list(SHARED_READS._readers.values()):
        if not is_classic(reader):
            try:
                reader.client.close()
            except Exception:  # the server may be gone already  # noqa: BLE001
                pass
