"""Test helper: the error condition Spark raised, for comparing errors across paths."""

from __future__ import annotations


def error_condition(exc: BaseException) -> str:
    """The innermost Spark error condition along the Java cause chain (wrappers such as
    FAILED_READ_FILE depend on where the failing expression ran, not on what failed)."""
    from py4j.protocol import Py4JJavaError

    found = [str(exc.getCondition())] if hasattr(exc, "getCondition") and exc.getCondition() else []
    cause = exc.java_exception if isinstance(exc, Py4JJavaError) else getattr(exc, "_origin", None)
    while cause is not None:
        try:
            condition = cause.getCondition()
        except Exception:  # noqa: BLE001 - not a SparkThrowable
            condition = None
        if condition:
            found.append(str(condition))
        cause = cause.getCause()
    return found[-1] if found else type(exc).__name__
