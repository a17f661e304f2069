"""Background jobs in the delta-spark oracle: its requests are synchronous, so a test that
wants delta-spark to commit *while* varlake commits starts a thread inside the oracle
(``start``), does varlake's writes, then waits for the thread (``wait``).

The job is Python run in the oracle's scope (``spark``, ``DeltaTable``, ``retrying``); it
defines ``_job()`` whose return value (JSON-able) is the job's result.  ``retrying(sql)``
runs a statement again after a Delta concurrency exception (``ConcurrentXxxException``, or
an error class ``DELTA_CONCURRENT_*``), as a delta-spark user's retry loop does, and
returns the refusals it met: their class names and error classes.
"""

from __future__ import annotations

import time

from oracles.delta_spark import DeltaSpark

_SETUP = r'''
import threading as _threading
import re as _re
import traceback as _traceback
if "_jobs" not in globals():
    _jobs = {}

    def _start_job(name, fn):
        state = {"done": False, "result": None, "error": None}
        _jobs[name] = state

        def body():
            try:
                state["result"] = fn()
            except Exception as exc:  # noqa: BLE001 -- reported to the test
                state["error"] = type(exc).__name__ + ": " + str(exc)[:1500]
            finally:
                state["done"] = True

        _threading.Thread(target=body, name="job-" + name, daemon=True).start()

    def refusal(exc):
        """The Delta concurrency refusal ``exc`` is (class name, error class), or None."""
        text = str(exc)
        names = set(_re.findall(r"(Concurrent\w+Exception|MetadataChangedException|ProtocolChangedException)", type(exc).__name__ + " " + text))
        classes = set(_re.findall(r"DELTA_(?:CONCURRENT|METADATA_CHANGED|PROTOCOL_CHANGED)\w*", text))
        if not names and not classes:
            return None
        return [sorted(names)[0] if names else type(exc).__name__, sorted(classes)[0] if classes else ""]

    def retrying(statement, attempts=20):
        """Run ``statement``; after a concurrency refusal run it again (at most ``attempts``)."""
        refusals = []
        for _ in range(attempts):
            try:
                spark.sql(statement).collect()
                return refusals
            except Exception as exc:  # noqa: BLE001 -- only refusals are retried
                seen = refusal(exc)
                if seen is None:
                    raise
                refusals.append(seen)
        raise RuntimeError(f"gave up after {attempts} refusals: {refusals}")
result = True
'''


def start(oracle: DeltaSpark, name: str, code: str) -> None:
    """Run ``code`` (which defines ``_job()``) in a thread of the oracle; returns at once."""
    oracle.run(_SETUP)
    oracle.run(code + f"\n_start_job({name!r}, _job)\nresult = True\n")


def wait(oracle: DeltaSpark, name: str, timeout: float = 900.0):
    """The result of job ``name`` once it finished; its failure as an AssertionError."""
    deadline = time.monotonic() + timeout
    while True:
        state = oracle.run(f"result = dict(_jobs[{name!r}])")
        if state["done"]:
            if state["error"]:
                raise AssertionError(f"delta-spark job {name}: {state['error']}")
            return state["result"]
        if time.monotonic() > deadline:
            raise AssertionError(f"delta-spark job {name} did not finish in {timeout:.0f} s")
        time.sleep(0.2)


def done(oracle: DeltaSpark, name: str) -> bool:
    return bool(oracle.run(f"result = _jobs[{name!r}]['done']"))
