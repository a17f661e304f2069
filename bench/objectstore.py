"""Cost on an object store: varlake against delta-rs (``deltalake``) on the same S3 tables (MinIO).

    .venv/bin/python bench/objectstore.py [--quick] [--runs 5] [--scan-runs 2] [--writer delta-rs|varlake]
                                          [--out bench] [--render-only]

Starts its own MinIO (``bench/minio_server.py``; objects kept in ``bench/.cache/objectstore``, so
the shared table is built and uploaded once) and a counting HTTP proxy in its own process in
front of it (``bench/request_counter.py``: neutral for both libraries, it counts requests by
method and kind of key and forwards every byte unchanged).

The shared table is written by delta-rs (so it has neither deletion vectors nor shredding, which
delta-rs refuses): ``--commits`` appends (1,000; ``--quick``: 100) of 100 rows in 10 partitions
(``part`` = ``p0``..``p9``), so 10 files a commit (10,000 files), with a checkpoint every
``delta.checkpointInterval`` commits (100; quick: 20) left by delta-rs's post-commit hook, and a
tail of half an interval of JSON commits after the last checkpoint (``build_local``). ``id``
grows with the commit, so its statistics skip files. Measured for each library, on the same table:

- ``load``: open the table and load its snapshot (the live files) from nothing;
- ``plan``: the file list for ``part = 'pK' AND id >= a AND id < b`` on a loaded table (delta-rs:
  ``file_uris(file_pruning_predicate=...)``; varlake: ``scan().where(...).plan()``);
- ``selective scan``: the rows of such a predicate as Arrow (delta-rs: ``scan(predicate=...)``);
- ``full scan``: every row as Arrow;
- ``append``: 100 rows (10 files) appended to a small table of 10 commits (each run a table of its
  own), the table opened beforehand (not measured). ``commit requests`` are the requests beyond
  the data files' PUTs.

Time: medians of ``--runs`` runs straight to MinIO (no proxy), after a warm-up, the two libraries
alternating, the literals (``K``, ``a``, ``b``) varied per run; the ratio is varlake / delta-rs.
Requests: one more run of each through the proxy. Targets (issue 30): load and plan within 1.5x
of delta-rs's time; no request for a file skipped (data files read = files planned); a commit at
most 3 requests beyond its data files. Writes ``OBJECTSTORE.md`` and ``objectstore.json`` (quick:
``OBJECTSTORE_QUICK.md``, ``objectstore_quick.json``; ``--writer varlake``: ``..._VARLAKE_WRITTEN``)
into ``--out``, with the causes of varlake's extra requests and time (``causes``: traced and
profiled, see there).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

import pyarrow as pa  # noqa: E402
from deltalake import DeltaTable, write_deltalake  # noqa: E402
from minio_server import MinioServer, RequestCounter  # noqa: E402

from varlake.read.layout import clear_caches  # noqa: E402
from varlake.table import Table  # noqa: E402

CACHE = HERE / ".cache" / "objectstore"
BUCKET = "bench"
PARTS = 10
ROWS_PER_FILE = 10
ROWS_PER_COMMIT = PARTS * ROWS_PER_FILE
TARGET_RATIO = 1.5
TARGET_COMMIT_REQUESTS = 3


def commit_rows(commit: int) -> pa.Table:
    ids = [commit * ROWS_PER_COMMIT + j for j in range(ROWS_PER_COMMIT)]
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "part": pa.array([f"p{j // ROWS_PER_FILE}" for j in range(ROWS_PER_COMMIT)]),
        "x": pa.array([(i * 7919) % 100_000 for i in ids], pa.int64()),
        "s": pa.array([f"s{i % 13}" for i in ids]),
    })  # fmt: skip


def build_local(folder: Path, commits: int, interval: int) -> None:
    """The shared table on local disk, written by delta-rs (kept: built once per size).

    delta-rs's post-commit hook leaves a checkpoint every ``interval`` commits; the last
    ``interval // 2`` commits are made without it, a checkpoint written by hand before them, so
    a snapshot load reads a checkpoint and a tail of ``interval // 2`` JSON commits (as a table
    between two checkpoints does, on average)."""
    from deltalake import PostCommitHookProperties

    done = folder / "_complete"
    if done.exists():
        return
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    config = {"delta.checkpointInterval": str(interval)}
    tail = commits - interval // 2
    write_deltalake(str(folder), commit_rows(0), partition_by=["part"], mode="append", configuration=config)
    dt = DeltaTable(str(folder))
    for c in range(1, commits):
        hooks = PostCommitHookProperties(create_checkpoint=c < tail)
        write_deltalake(dt, commit_rows(c), mode="append", post_commithook_properties=hooks)
        if c == tail - 1:
            dt.create_checkpoint()
        if c % 100 == 0:
            print(f"  built {c} of {commits} commits ({time.perf_counter() - started:.0f} s)", flush=True)
    done.write_text(str(commits))


def build_local_varlake(folder: Path, commits: int, interval: int) -> None:
    """The same table written by varlake (``--writer varlake``): a create and ``commits - 1``
    appends of the same rows; varlake checkpoints every ``interval`` versions itself."""
    done = folder / "_complete"
    if done.exists():
        return
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    table = Table.create(folder, "id bigint, part string, x bigint, s string", partition_by=["part"],
                         properties={"delta.checkpointInterval": str(interval)})  # fmt: skip
    for c in range(commits - 1):
        table.append(commit_rows(c))
        if c % 100 == 0:
            print(f"  built {c} of {commits} commits ({time.perf_counter() - started:.0f} s)", flush=True)
    done.write_text(str(commits))


def log_shape(folder: Path) -> dict[str, int]:
    """The latest version, the last checkpoint's and the JSON tail after it (local copy)."""
    names = [p.name for p in (folder / "_delta_log").iterdir()]
    latest = max(int(n[:20]) for n in names if n.endswith(".json") and n[:20].isdigit())
    checkpoints = sorted({int(n[:20]) for n in names if ".checkpoint" in n and n.endswith(".parquet")})
    last = checkpoints[-1] if checkpoints else -1
    return {"latest_version": latest, "checkpoints": len(checkpoints), "last_checkpoint": last, "json_tail": latest - last}


def upload(server: MinioServer, folder: Path, key: str) -> None:
    """Copy the local table to ``s3://bench/<key>`` once (a marker object says it is complete)."""
    import obstore
    from obstore.store import S3Store

    store = S3Store(BUCKET, endpoint=server.endpoint, access_key_id=server.options()["AWS_ACCESS_KEY_ID"],
                    secret_access_key=server.options()["AWS_SECRET_ACCESS_KEY"], region="us-east-1",
                    client_options={"allow_http": True})  # fmt: skip
    marker = f"{key}.complete"
    try:
        obstore.head(store, marker)
        return
    except FileNotFoundError:
        pass
    files = [p for p in folder.rglob("*") if p.is_file() and p.name != "_complete"]
    print(f"  uploading {len(files)} objects to s3://{BUCKET}/{key}", flush=True)

    def put(path: Path) -> None:
        obstore.put(store, f"{key}/{path.relative_to(folder).as_posix()}", path.read_bytes())

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, files))
    obstore.put(store, marker, b"1")


class Peer:
    """One library's operations; ``options`` chooses the endpoint (straight or through the proxy)."""

    name = ""

    def open(self, uri: str, options: dict[str, str]) -> Any: ...
    def load(self, uri: str, options: dict[str, str]) -> int: ...
    def plan(self, table: Any, pred: str) -> int: ...
    def scan(self, table: Any, pred: str | None) -> int: ...
    def append(self, table: Any, data: pa.Table) -> None: ...


class Varlake(Peer):
    name = "varlake"

    def open(self, uri, options):
        table = Table(uri, storage_options=options)
        table.snapshot()
        return table

    def load(self, uri, options):
        clear_caches()
        return Table(uri, storage_options=options).snapshot().num_files

    def plan(self, table, pred):
        return len(table.scan().where(pred).plan().tasks)

    def scan(self, table, pred):
        scan = table.scan() if pred is None else table.scan().where(pred)
        return scan.to_arrow().num_rows

    def append(self, table, data):
        table.append(data)


class DeltaRs(Peer):
    name = "delta-rs"

    def open(self, uri, options):
        return DeltaTable(uri, storage_options=options)

    def load(self, uri, options):
        dt = DeltaTable(uri, storage_options=options)
        return dt.version()

    def plan(self, table, pred):
        return len(table.file_uris(file_pruning_predicate=pred))

    def scan(self, table, pred):
        return table.scan(predicate=pred).read_all().num_rows

    def append(self, table, data):
        write_deltalake(table, data, mode="append")


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 commits (1,000 files), checkpoint every 20")
    parser.add_argument("--commits", type=int, default=None)
    parser.add_argument("--interval", type=int, default=None, help="delta.checkpointInterval of the shared table")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--scan-runs", type=int, default=2, help="timed runs of the full scan")
    parser.add_argument("--writer", choices=("delta-rs", "varlake"), default="delta-rs", help="who writes the shared table")
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--render-only", action="store_true", help="rewrite the .md from the .json of an earlier run")
    args = parser.parse_args(argv)
    if args.render_only:
        stem = out_stem(args)
        results = json.loads((args.out / f"{stem}.json").read_text())
        local = CACHE / "tables" / table_key(results["table"]["commits"], results["table"]["checkpoint_interval"], args.writer)
        if "json_tail" not in results["table"] and (local / "_complete").exists():
            results["table"].update(log_shape(local))
            (args.out / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
        (args.out / f"{stem.upper()}.md").write_text(render(results, quick=args.quick))
        return 0
    commits = args.commits or (100 if args.quick else 1000)
    interval = args.interval or (20 if args.quick else 100)
    files = commits * PARTS if args.writer == "delta-rs" else (commits - 1) * PARTS  # varlake: a create, then appends
    key = table_key(commits, interval, args.writer)

    print(f"shared table: {commits} commits, {files} files, checkpoint every {interval}", flush=True)
    (build_local if args.writer == "delta-rs" else build_local_varlake)(CACHE / "tables" / key, commits, interval)
    server = MinioServer.start(CACHE / "minio")
    counter = RequestCounter.start(server.port)
    try:
        server.ensure_bucket(BUCKET)
        upload(server, CACHE / "tables" / key, key)
        results = run(server, counter, key, commits, args)
    finally:
        counter.stop()
        server.stop()
    results["table"] = {"commits": commits, "files": files, "checkpoint_interval": interval, "rows": files * ROWS_PER_FILE,
                        "writer": args.writer, **log_shape(CACHE / "tables" / key)}
    results["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "deltalake": __import__("deltalake").__version__, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}  # fmt: skip
    stem = out_stem(args)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
    md = render(results, quick=args.quick)
    (args.out / f"{stem.upper()}.md").write_text(md)
    print(md)
    return 0


def table_key(commits: int, interval: int, writer: str) -> str:
    return f"shared-{commits}x{PARTS}-i{interval}-tail" + ("-varlake" if writer == "varlake" else "")


def out_stem(args: Any) -> str:
    """objectstore, objectstore_quick, objectstore_varlake_written, ..."""
    return "objectstore" + ("_quick" if args.quick else "") + ("_varlake_written" if args.writer == "varlake" else "")


def run(server: MinioServer, counter: RequestCounter, key: str, commits: int, args: Any) -> dict[str, Any]:
    uri = f"s3://{BUCKET}/{key}"
    direct, proxied = server.options(), server.options(counter.endpoint)
    peers: list[Peer] = [Varlake(), DeltaRs()]
    rng = random.Random(30)
    max_id = commits * ROWS_PER_COMMIT
    span = max(ROWS_PER_COMMIT * 20, max_id // 50)  # 20 commits' ids (2% of the table at full size)

    def predicate() -> str:
        lo = rng.randrange(0, max_id - span)
        return f"part = 'p{rng.randrange(PARTS)}' AND id >= {lo} AND id < {lo + span}"

    out: dict[str, Any] = {"ops": {}}

    def timed(op: str, runs: int, body: Callable[[Peer, dict[str, str], Any], Any],
              setup: Callable[[Peer, dict[str, str], object], Any], warm: bool = True) -> None:
        """Warm-up, then ``runs`` alternating timed runs (straight to MinIO), then one counted
        run each. ``setup(peer, options, round)`` prepares a run (not timed); both peers get the
        same round key, so literals drawn per round are the same for both."""
        times: dict[str, list[float]] = {p.name: [] for p in peers}
        for p in peers if warm else ():  # warm-up
            body(p, direct, setup(p, direct, "warm"))
        for r in range(runs):
            for p in peers if r % 2 == 0 else peers[::-1]:
                state = setup(p, direct, r)
                started = time.perf_counter()
                body(p, direct, state)
                times[p.name].append(time.perf_counter() - started)
        requests: dict[str, Any] = {}
        for p in peers:
            state = setup(p, proxied, "count")
            counter.reset()
            answer = body(p, proxied, state)
            requests[p.name] = counter.read(reset=True)
            requests[p.name]["answer"] = answer
        entry: dict[str, Any] = {name: {"seconds": median(ts), "runs": ts, "requests": requests[name]} for name, ts in times.items()}
        entry["ratio"] = entry["varlake"]["seconds"] / entry["delta-rs"]["seconds"]
        out["ops"][op] = entry
        print(f"{op:<15} varlake {entry['varlake']['seconds'] * 1e3:8.1f} ms  delta-rs {entry['delta-rs']['seconds'] * 1e3:8.1f} ms"
              f"  ratio {entry['ratio']:.2f}  requests {requests['varlake']['total']} / {requests['delta-rs']['total']}", flush=True)

    preds: dict[tuple[str, object], str] = {}

    def pred_for(op: str, r: object) -> str:
        if (op, r) not in preds:
            preds[(op, r)] = predicate()
        return preds[(op, r)]

    timed("load", args.runs, lambda p, o, _: p.load(uri, o), lambda p, o, r: None)

    opened: dict[tuple[str, str], Any] = {}

    def table_for(p: Peer, o: dict[str, str]) -> Any:
        k = (p.name, o["AWS_ENDPOINT_URL"])
        if k not in opened:
            opened[k] = p.open(uri, o)
        return opened[k]

    timed("plan", args.runs, lambda p, o, s: p.plan(s[0], s[1]), lambda p, o, r: (table_for(p, o), pred_for("plan", r)))
    timed("selective scan", args.runs, lambda p, o, s: p.scan(s[0], s[1]),
          lambda p, o, r: (table_for(p, o), pred_for("scan", r)))
    timed("full scan", args.scan_runs, lambda p, o, s: p.scan(s, None), lambda p, o, r: table_for(p, o),
          warm=False)  # the plan and selective scans warmed the same tables

    def fresh_target(p: Peer, o: dict[str, str], r: object) -> Any:
        target = f"s3://{BUCKET}/append-{uuid.uuid4().hex[:12]}"
        write_deltalake(target, commit_rows(0), partition_by=["part"], mode="append", storage_options=direct,
                        configuration={"delta.checkpointInterval": "100"})  # no checkpoint due: the commit alone
        dt = DeltaTable(target, storage_options=direct)
        for c in range(1, 10):
            write_deltalake(dt, commit_rows(c), mode="append")
        return p.open(target, o)

    timed("append", args.runs, lambda p, o, s: p.append(s, commit_rows(rng.randrange(10, 10_000))), fresh_target)
    for name in ("varlake", "delta-rs"):
        req = out["ops"]["append"][name]["requests"]
        # requests beyond writing the data files (their PUTs, multipart parts): everything else
        # the append made, the data files' HEADs after writing them included
        data_puts = sum(n for k, n in req["requests"].items() if k in ("PUT data", "POST multipart", "PUT multipart"))
        req["commit_requests"] = req["total"] - data_puts
        req["requests_per_data_file"] = sum(n for k, n in req["requests"].items() if k.endswith(" data") and not k.startswith("PUT"))
    return out


def render(results: dict[str, Any], quick: bool) -> str:
    t, ops = results["table"], results["ops"]
    lines = [
        "# Cost on an object store: varlake against delta-rs" + (" (quick)" if quick else "")
        + (", on a table varlake wrote" if t.get("writer") == "varlake" else ""),
        "",
        "Written by `bench/objectstore.py`" + (" --quick" if quick else "")
        + (" --writer varlake" if t.get("writer") == "varlake" else "") + f" on {results['machine']['date']} "
        f"({results['machine']['cpus']} CPUs shared with other jobs; deltalake {results['machine']['deltalake']}; MinIO on loopback). "
        f"Shared table, written by {t.get('writer', 'delta-rs')}: {t['commits']:,} commits, {t['files']:,} files, {t['rows']:,} rows, "
        f"10 partitions, a checkpoint every {t['checkpoint_interval']} commits"
        + (f" ({t['checkpoints']} checkpoints; the last at version {t['last_checkpoint']}, then {t['json_tail']} JSON commits)" if "json_tail" in t else "")
        + ". Times: medians, straight to MinIO; "
        "requests: one run through the counting proxy (`bench/request_counter.py`). Ratio = varlake / delta-rs "
        "(medians; and of each library's fastest run, as the machine's load varies). "
        "Run: `make bench-objectstore` (`QUICK=1`: the 1,000-file table); `bench/objectstore.py --writer varlake` "
        "for the same table written by varlake.",
        "",
        "| operation | varlake ms | delta-rs ms | ratio | ratio of best runs | varlake requests | delta-rs requests |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for op, e in ops.items():
        v, d = e["varlake"], e["delta-rs"]
        best = min(v["runs"]) / min(d["runs"])
        lines.append(f"| {op} | {v['seconds'] * 1e3:.1f} | {d['seconds'] * 1e3:.1f} | {e['ratio']:.2f} | {best:.2f} | "
                     f"{v['requests']['total']} | {d['requests']['total']} |")
    lines += ["", "Requests by kind (method, kind of key):", ""]
    for op, e in ops.items():
        for name in ("varlake", "delta-rs"):
            r = e[name]["requests"]
            kinds = ", ".join(f"{k} {n}" for k, n in r["requests"].items())
            extra = f"; data files read {r['data_files_read']}" if r["data_files_read"] else ""
            extra += f"; data files written {r['data_files_written']}" if r["data_files_written"] else ""
            lines.append(f"- {op}, {name}: {kinds or 'none'}{extra}; {r['bytes_down'] / 1e3:.0f} kB down")
    lines += ["", "## Targets", ""]
    for op in ("load", "plan"):
        ratio = ops[op]["ratio"]
        lines.append(f"- {op} within {TARGET_RATIO}x of delta-rs: {ratio:.2f}x -> {'met' if ratio <= TARGET_RATIO else 'MISSED'}")
    sel = ops["selective scan"]["varlake"]["requests"]
    planned = ops["selective scan"]["delta-rs"]["requests"]["data_files_read"]
    lines.append(f"- no request per skipped file: the selective scan read {sel['data_files_read']} data files of "
                 f"{t['files']:,} (delta-rs: {planned}); planning made "
                 f"{ops['plan']['varlake']['requests']['requests'].get('GET data', 0) + ops['plan']['varlake']['requests']['requests'].get('GET data-range', 0)} "
                 "data-file requests")
    a, d = ops["append"]["varlake"]["requests"], ops["append"]["delta-rs"]["requests"]
    per_file = a["requests_per_data_file"]
    commit = a["commit_requests"] - per_file
    lines.append(f"- a commit <= {TARGET_COMMIT_REQUESTS} requests beyond its data files: the commit itself "
                 f"{commit} (delta-rs {d['commit_requests'] - d['requests_per_data_file']}) -> "
                 f"{'met' if commit <= TARGET_COMMIT_REQUESTS else 'MISSED'}; but staging adds {per_file} request(s) "
                 f"on the {a['data_files_written']} data files beyond their PUTs (delta-rs {d['requests_per_data_file']}), so "
                 f"the append makes {a['commit_requests']} requests beyond the data files' PUTs (delta-rs {d['commit_requests']}) -> "
                 f"{'met' if a['commit_requests'] <= TARGET_COMMIT_REQUESTS else 'MISSED'} counted that way")
    lines += ["", "## Where varlake's requests and time go", "", *causes(ops), ""]
    return "\n".join(lines) + "\n"


def causes(ops: dict[str, Any]) -> list[str]:
    """The causes of varlake's extra requests, from the counts of this run (by kind of key),
    and what in ``src/`` makes them (profiled with the counter and cProfile; see the report of
    issue 30)."""
    out = []
    load = ops["load"]["varlake"]["requests"]["requests"]
    out.append(f"- load: {load.get('GET list', 0)} listings and {load.get('GET log-last-checkpoint', 0)} read(s) of "
               "`_last_checkpoint`: `Table.__init__` runs `log.latest_version()` (`_last_checkpoint`, then a listing "
               "from the checkpoint it names), and the first `snapshot()` keeps that listing and lists only from the "
               "version it found on, to see commits made since (`delta/log_store.py` `_since_opened`; before: a second "
               "`_last_checkpoint` read and a second listing from the checkpoint). `ObjectStorage.for_uri` builds one "
               "obstore client (`_make_store`, ~10 ms of CPU here); the one for conditional creates is built at the "
               "first commit (before: both at every open).")
    plan = ops["plan"]["varlake"]["requests"]["requests"]
    out.append(f"- plan: {sum(plan.values())} request(s) (a listing: `plan()` re-checks for a newer version; "
               "`table.scan(snapshot=...)` plans a snapshot the caller holds without it). The work per live file "
               "(path check, deletion vector, partition values, statistics) is done once per snapshot "
               "(`read/file_index.py`); a plan folds the filter once per set of partition values, drops files by "
               "integral min/max with numpy, checks the rest one by one and builds tasks only for the files read "
               "(the skipped ones' when asked): O(files kept) after the first plan of a snapshot. Before that change "
               "it was Python work on every file each plan (`bench/plan_many_files.py`: 10,000 files, 93 ms a plan "
               "before, 1.5 ms after, delta-rs 8 ms).")
    for op in ("selective scan", "full scan"):
        r = ops[op]["varlake"]["requests"]
        files = max(r["data_files_read"], 1)
        heads = r["requests"].get("HEAD data", 0)
        ranges = r["requests"].get("GET data-range", 0) + r["requests"].get("GET data", 0)
        d = ops[op]["delta-rs"]["requests"]
        d_ranges = d["requests"].get("GET data-range", 0) + d["requests"].get("GET data", 0)
        out.append(f"- {op}: {heads} HEADs ({heads / files:.1f} a file) and {ranges / files:.1f} ranged GETs a file "
                   f"(delta-rs: {d['requests'].get('HEAD data', 0)} HEADs, {d_ranges / max(d['data_files_read'], 1):.1f} GETs a file). "
                   "How: `read_source` hands `open_read` the log's `add.size` (no HEAD); a file of up to 8 MB "
                   "is fetched in one GET and served from memory, a larger one by ranges with its last 256 kB (the "
                   "footer) fetched once; each file is opened once for its footer, data and row-group checks; "
                   "`read_tasks` fetches the next 8 files ahead in a thread pool, results kept in order. (Before: "
                   "1 HEAD and 6 ranged GETs a file -- a HEAD for the size, the footer twice, the whole file twice "
                   "through a `BufferedReader` refilled from offset 0 -- read one file after another.)")
    a = ops["append"]["varlake"]["requests"]
    out.append(f"- append: {a['commit_requests']} requests beyond the data files' PUTs: "
               + ", ".join(f"{k} {n}" for k, n in a["requests"].items() if k != "PUT data")
               + ". The commit is the listing that refreshes the snapshot before staging and the PUT of the "
               "commit (put-if-absent). `file_facts` takes the size and time the Arrow writer already knows, and "
               "`delta/log_store.py` `adopt_state` records the commit's path and size without a HEAD (before: a HEAD "
               "of every data file just written and of the commit file).")
    return out


if __name__ == "__main__":
    sys.exit(main())
