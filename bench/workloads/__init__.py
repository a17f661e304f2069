"""Benchmark workloads: seeded generators and one query set written per storage dialect."""

from __future__ import annotations

from collections.abc import Callable

from workloads import events, tpch_nested
from workloads.spec import Dialect, Query, Source, Workload

#: workload name -> builder taking the seed (which picks generated data and query literals)
WORKLOADS: dict[str, Callable[[int], Workload]] = {
    "tpch_nested": tpch_nested.workload,
    "events": events.workload,
}

__all__ = ["WORKLOADS", "Dialect", "Query", "Source", "Workload", "events", "tpch_nested"]
