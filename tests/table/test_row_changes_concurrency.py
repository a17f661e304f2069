"""Processes mixing appends, deletes and updates on one table: every committed change is
visible, none is lost, every failure is a named conflict (a ``CommitConflictError``).

Each worker owns the rows with ``w`` = its number (some of them in files shared by every
worker, so changes do collide) and keeps a model of them: a change that committed is
applied to the model, one that failed with a conflict is not. At the end the table's rows
of each worker are exactly its model.
"""

from __future__ import annotations

import multiprocessing
import random
from pathlib import Path

import pytest

from varlake import Table
from varlake.errors import CommitConflictError

WORKERS = 3
OPERATIONS = 8


def _worker(root: str, w: int, results) -> None:  # pragma: no cover - runs in a child process
    rnd = random.Random(w)
    table = Table(root)
    model = {i: (i % 10) for i in range(w, 60, WORKERS)}  # id -> k: the shared files' rows of w
    next_id = 1000 * (w + 1)
    outcome = {"committed": 0, "conflicts": 0, "other": []}
    for step in range(OPERATIONS):
        kind = rnd.choice(["append", "delete", "update"])
        retries = step % 2
        try:
            if kind == "append":
                rows = [{"id": next_id + j, "w": w, "k": rnd.randrange(10)} for j in range(3)]
                table.append(rows)
                next_id += 3
                model.update({r["id"]: r["k"] for r in rows})
            elif kind == "delete":
                bound = rnd.randrange(10)
                result = table.delete(f"w = {w} AND k = {bound}", retries=retries)
                model = {i: k for i, k in model.items() if k != bound}
                assert result.version is None or result.num_deleted_rows >= 0
            else:
                bound = rnd.randrange(10)
                table.update(f"w = {w} AND k > {bound}", {"k": "k - 1"}, retries=retries)
                model = {i: (k - 1 if k > bound else k) for i, k in model.items()}
            outcome["committed"] += 1
        except CommitConflictError:
            outcome["conflicts"] += 1
        except Exception as exc:  # noqa: BLE001 -- reported to the test
            outcome["other"].append(repr(exc))
    outcome["model"] = sorted(model.items())
    results.put((w, outcome))


@pytest.mark.parametrize("dv", ["true", "false"])
def test_concurrent_changes_are_never_lost(tmp_path: Path, dv: str) -> None:
    root = tmp_path / "t"
    table = Table.create(root, "id bigint, w int, k int", properties={"delta.enableDeletionVectors": dv})
    for start in (0, 30):  # two files every worker has rows in
        table.append([{"id": i, "w": i % WORKERS, "k": i % 10} for i in range(start, start + 30)])
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    processes = [context.Process(target=_worker, args=(str(root), w, results)) for w in range(WORKERS)]
    for p in processes:
        p.start()
    outcomes = dict(results.get(timeout=120) for _ in processes)
    for p in processes:
        p.join(timeout=60)
    rows = Table(root).scan().to_arrow().to_pylist()
    for w, outcome in outcomes.items():
        assert outcome["other"] == [], outcome["other"]
        got = sorted((r["id"], r["k"]) for r in rows if r["w"] == w)
        assert got == [tuple(x) for x in outcome["model"]], w
    assert sum(o["committed"] for o in outcomes.values()) >= WORKERS
