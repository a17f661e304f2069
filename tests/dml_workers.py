"""Workers for the concurrent-DML test: processes mixing appends, deletes, updates and merges
on one table; each records the operations it committed (version and parameters) so the test
can replay them in version order on a Python model of the table.

Every operation is a deterministic function of the table's rows, so under ``Serializable``
isolation (commit order = serial order) the model replayed in version order must equal the
table. A worker that loses a race must get a named ``CommitConflictError``; anything else
it gets is recorded as a failure.
"""

from __future__ import annotations

import json
import random
import time
import traceback
from pathlib import Path
from typing import Any

SCHEMA = "id bigint, n bigint, w int"


def create(root: Path) -> None:
    from varlake import Table

    Table.create(root, SCHEMA, properties={"delta.isolationLevel": "Serializable", "delta.enableDeletionVectors": "true"})
    Table(root).append([{"id": i, "n": 0, "w": -1} for i in range(200)])


def worker(root: str, worker_id: int, seconds: float, log_path: str, seed: int) -> None:
    from varlake import Table
    from varlake.errors import CommitConflictError

    rng = random.Random(seed)
    table = Table(root)
    next_id = 1_000_000 * (worker_id + 1)
    deadline = time.monotonic() + seconds
    with open(log_path, "a", encoding="utf-8") as log:
        while time.monotonic() < deadline:
            kind = rng.choice(["append", "append", "delete", "update", "merge"])
            record: dict[str, Any] = {"kind": kind, "worker": worker_id}
            try:
                if kind == "append":
                    ids = list(range(next_id, next_id + rng.randint(1, 20)))
                    next_id += len(ids)
                    record["ids"] = ids
                    version = table.append([{"id": i, "n": 0, "w": worker_id} for i in ids])
                elif kind == "delete":
                    r = rng.randrange(13)
                    record["r"] = r
                    version = table.delete(f"id % 13 = {r} AND n < 3").version
                elif kind == "update":
                    r = rng.randrange(7)
                    record["r"] = r
                    version = table.update({"n": "n + 1"}, where=f"id % 7 = {r}").version
                else:
                    keys = rng.sample(range(0, 220), 5) + [next_id]
                    next_id += 1
                    record["keys"] = keys
                    source = [{"id": k, "n": 100, "w": worker_id} for k in keys]
                    version = (
                        table.merge(source, on="t.id = s.id")
                        .when_matched_update({"n": "t.n + 10"})
                        .when_not_matched_insert_all()
                        .execute()
                        .version
                    )
            except CommitConflictError as exc:
                log.write(json.dumps({"conflict": type(exc).__name__, "kind": kind}) + "\n")
                continue
            except Exception:  # noqa: BLE001 -- recorded, the test fails on it
                log.write(json.dumps({"failure": traceback.format_exc(), "kind": kind}) + "\n")
                continue
            if version is not None:
                record["version"] = version
                log.write(json.dumps(record) + "\n")
            log.flush()


def replay(records: list[dict[str, Any]], initial: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """The model: id -> (n, w) after applying ``records`` in version order."""
    rows = dict(initial)
    for rec in sorted(records, key=lambda r: r["version"]):
        kind = rec["kind"]
        if kind == "append":
            for i in rec["ids"]:
                rows[i] = (0, rec["worker"])
        elif kind == "delete":
            rows = {i: v for i, v in rows.items() if not (i % 13 == rec["r"] and v[0] < 3)}
        elif kind == "update":
            rows = {i: ((v[0] + 1, v[1]) if i % 7 == rec["r"] else v) for i, v in rows.items()}
        else:
            for k in rec["keys"]:
                rows[k] = (rows[k][0] + 10, rows[k][1]) if k in rows else (100, rec["worker"])
    return rows
