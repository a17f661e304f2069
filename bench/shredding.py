"""Shredded Parquet: write throughput, full-read throughput, and one-path projection I/O.

Run ``python bench/shredding.py [--rows N] [--workload clicks|jetstream]`` (default 1,000,000
click events of ~20 fields, nested objects and arrays of objects, from a fixed seed; or the
Jetstream-shaped events of ``bench/workloads/events.py``, whose records are mostly partially
shredded). In one run it measures:

* inference on a 100k-row sample, then shred+write of the whole table with that schema,
  against writing the same table unshredded (the baseline);
* a full read back to unshredded Variants (``varlake.io.parquet_read.read_parquet``) of
  both files, and pyarrow's raw read of the unshredded file;
* bytes read and time for one perfectly shredded path (``$.user.country``) against a
  full read of the Variant column, counted at the file object. Target: <= 10% of bytes;
* ``Table.append`` into a table with shredding on (schema inference from the first
  10,000 rows, shredding, Parquet, commit) and ``Table.scan().to_arrow()`` of that table
  (every Variant reassembled), on the current paths (``shred.columnar`` for the append,
  the byte-parts rebuild ``shred.unshred_parts`` for the read) against the ones they
  replaced (``shred.shred_rows`` and the row-by-row ``infer.collect``; for the read the
  level-array rebuild ``shred.unshred_reference`` and, before it, the per-chunk rebuild
  that concatenated its batches), in the same run: one untimed warm-up each, then
  ``--repeat`` interleaved runs; medians of wall and of process CPU time, with the load
  average (the machine is shared). Targets: append >= 100k rows/s, read >= 500k rows/s.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import varlake.io.parquet_read as parquet_read  # noqa: E402
from varlake.io.parquet_read import read_parquet  # noqa: E402
from varlake.shred import columnar, infer, nested  # noqa: E402
from varlake.shred import shred as shred_module  # noqa: E402
from varlake.table import Table  # noqa: E402
from varlake.io.parquet_write import write_parquet  # noqa: E402
from varlake.shred.infer import infer_shredding_schema  # noqa: E402
from varlake.variant import Variant  # noqa: E402
from varlake.variant import encoder as enc  # noqa: E402
from varlake.variant.constants import PrimitiveType  # noqa: E402

T = TypeVar("T")
WORDS = ("alpha", "beta", "gamma", "delta", "click", "view", "purchase", "error", "mobile", "web")


_KEYS = ("event_id", "ts", "type", "user", "id", "name", "country", "premium", "age", "device", "os", "version",
         "screen", "w", "h", "geo", "lat", "lon", "amount", "session", "tags", "items", "sku", "qty", "price", "ok",
         "latency_ms", "referrer")


def _dec(unscaled: int, scale: int) -> bytes:
    """A decimal as parse_json would store it (narrowest of decimal4/8)."""
    kind = PrimitiveType.DECIMAL4 if abs(unscaled) < 10**9 else PrimitiveType.DECIMAL8
    return enc.encode_decimal_as(unscaled, scale, kind)


class _Events:
    """Encodes click-stream events straight to Variant bytes (two metadata dictionaries:
    with and without the optional ``referrer``), so generation does not dominate the run."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        full = enc.MetadataBuilder(_KEYS)
        short = enc.MetadataBuilder(_KEYS[:-1])
        self.meta = {True: full.build(), False: short.build()}
        self.ids = dict(full.ids)

    def event(self, i: int) -> Variant:
        r = self.r
        k = self.ids
        s = enc.encode_string
        n = enc.encode_int
        items = [
            enc.encode_object([
                ("sku", k["sku"], s(f"SKU-{r.randrange(10**6):06d}")),
                ("qty", k["qty"], n(r.randint(1, 9))),
                ("price", k["price"], _dec(r.randint(100, 99999), 2)),
            ])
            for _ in range(r.randint(0, 3))
        ]
        fields = [
            ("event_id", k["event_id"], n(r.getrandbits(40))),
            ("ts", k["ts"], n(1_700_000_000_000 + i * 137)),
            ("type", k["type"], s(r.choice(WORDS[4:8]))),
            ("user", k["user"], enc.encode_object([
                ("id", k["id"], n(r.randrange(10**6))),
                ("name", k["name"], s(f"user{r.randrange(10**5)}")),
                ("country", k["country"], s(r.choice(("DE", "FR", "US", "JP", "BR")))),
                ("premium", k["premium"], enc.encode_bool(r.random() < 0.2)),
                ("age", k["age"], n(r.randint(18, 90))),
            ])),
            ("device", k["device"], enc.encode_object([
                ("os", k["os"], s(r.choice(("ios", "android", "web")))),
                ("version", k["version"], s(f"{r.randint(1, 20)}.{r.randint(0, 9)}")),
                ("screen", k["screen"], enc.encode_object([
                    ("w", k["w"], n(r.choice((390, 1080, 1920)))),
                    ("h", k["h"], n(r.choice((844, 1920, 1080)))),
                ])),
            ])),
            ("geo", k["geo"], enc.encode_object([
                ("lat", k["lat"], _dec(r.randint(-9000000, 9000000), 5)),
                ("lon", k["lon"], _dec(r.randint(-18000000, 18000000), 5)),
            ])),
            ("amount", k["amount"], _dec(r.randint(0, 100000), 2)),
            ("session", k["session"], s(f"{r.getrandbits(64):016x}")),
            ("tags", k["tags"], enc.encode_array([s(w) for w in r.sample(WORDS[:4], r.randint(0, 3))])),
            ("items", k["items"], enc.encode_array(items)),
            ("ok", k["ok"], enc.encode_bool(r.random() < 0.9)),
            ("latency_ms", k["latency_ms"], n(r.randint(1, 5000))),
        ]
        referrer = r.random() < 0.5
        if referrer:
            fields.append(("referrer", k["referrer"], s(r.choice(("google", "direct", "ads")))))
        return Variant(self.meta[referrer], enc.encode_object(fields))


def jetstream_events(n: int) -> list[Variant]:
    """``n`` Jetstream-shaped events (``workloads.events``, one part), parsed from their JSON.

    Their ``commit.record`` differs by collection, so an inferred schema leaves most rows
    a residual object next to the shredded fields (partially shredded objects)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from workloads.events import _part_lines

    from varlake.variant.json_parse import parse_json_parts

    return [Variant(*parse_json_parts(line)) for line in _part_lines(2026, 0, 1, n)]


def variant_column(variants: list[Variant]) -> pa.StructArray:
    return pa.StructArray.from_arrays(
        [pa.array([v.metadata for v in variants], pa.binary()), pa.array([v.value for v in variants], pa.binary())],
        fields=[pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary(), nullable=False)],
    )


class CountingFile(io.RawIOBase):
    """A read-only file that counts the bytes handed out (what a reader really fetched)."""

    def __init__(self, path: Path) -> None:
        self.f = open(path, "rb")  # noqa: SIM115 - closed in close()
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.f.seek(offset, whence)

    def tell(self) -> int:
        return self.f.tell()

    def readinto(self, buf: Any) -> int:
        n = self.f.readinto(buf)
        self.bytes_read += n or 0
        return n  # type: ignore[no-any-return]

    def read(self, size: int = -1) -> bytes:
        data = self.f.read(size)
        self.bytes_read += len(data)
        return data

    def close(self) -> None:
        self.f.close()
        super().close()


def timed(fn: Callable[[], T], repeat: int = 1) -> tuple[T, float]:
    best = float("inf")
    result: Any = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return result, best


def counted_read(path: Path, **kw: Any) -> tuple[pa.Table, int, float]:
    def run() -> tuple[pa.Table, int]:
        f = CountingFile(path)
        try:
            return read_parquet(f, **kw), f.bytes_read
        finally:
            f.close()

    (table, nbytes), seconds = timed(run, repeat=3)
    return table, nbytes, seconds


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise columnar.Fallback


def _rewrite_per_chunk(column: Any, paths: Any, *, source: str = "<data>", name: str = "column", row_offset: int = 0) -> Any:
    """The read path before: every chunk rebuilt on its own and its batches concatenated."""
    if not isinstance(column, pa.ChunkedArray) or paths != [()]:
        return nested.unshred_nested(column, paths, source=source, name=name, row_offset=row_offset)
    chunks, offset = [], row_offset
    for chunk in column.chunks:
        chunks.append(nested._rewrite(chunk, paths, source, (name,), offset))
        offset += len(chunk)
    return pa.chunked_array(chunks, type=nested.unshredded_type(column.type, paths))


@contextlib.contextmanager
def row_by_row() -> Iterator[None]:
    """The paths before last session's: shredding and inference row by row, the read per
    chunk with the level-array rebuild."""
    saved = (shred_module.shred_columnar, infer.collect_columnar, parquet_read.unshred_nested, nested.unshred_variant)
    shred_module.shred_columnar = _refuse  # type: ignore[assignment]
    infer.collect_columnar = _refuse  # type: ignore[assignment]
    parquet_read.unshred_nested = _rewrite_per_chunk  # type: ignore[assignment]
    nested.unshred_variant = functools.partial(saved[3], reference=True)  # type: ignore[assignment]
    skip = parquet_read._without_null_values
    parquet_read._without_null_values = lambda *a: None  # type: ignore[assignment]
    try:
        yield
    finally:
        shred_module.shred_columnar, infer.collect_columnar, parquet_read.unshred_nested, nested.unshred_variant = saved
        parquet_read._without_null_values = skip  # type: ignore[assignment]


def _read_reference(t: Table) -> pa.Table:
    """``Table.scan().to_arrow()`` as it was before the byte-parts path: every Variant
    rebuilt by the reference path (``unshred_variant(..., reference=True)``) and every
    leaf read, all-null residual columns included."""
    saved = nested.unshred_variant, parquet_read._without_null_values
    nested.unshred_variant = functools.partial(saved[0], reference=True)  # type: ignore[assignment]
    parquet_read._without_null_values = lambda *a: None  # type: ignore[assignment]  # read every leaf, as before
    try:
        return t.scan().to_arrow()
    finally:
        nested.unshred_variant, parquet_read._without_null_values = saved  # type: ignore[assignment]


def table_paths(data: pa.Table, repeat: int, tmp: str) -> None:
    """``Table.append`` and ``Table.scan().to_arrow()`` with shredding: the current paths
    against the previous ones, interleaved in one run."""
    n = data.num_rows
    props = {"delta.enableVariantShredding": "true"}
    labels = ("append new", "append old", "read new", "read previous", "read old")
    times: dict[str, list[float]] = {k: [] for k in labels}
    cpu: dict[str, list[float]] = {k: [] for k in labels}
    loads = [os.getloadavg()[0]]
    check: dict[str, pa.Table] = {}

    def clock(key: str, run: int, fn: Callable[[], T]) -> T:
        start, start_cpu = time.perf_counter(), time.process_time()
        out = fn()
        if run:  # run 0 is the warm-up
            times[key].append(time.perf_counter() - start)
            cpu[key].append(time.process_time() - start_cpu)
        return out

    for run in range(repeat + 1):
        for label, ctx in (("new", contextlib.nullcontext()), ("old", row_by_row())):
            with ctx:
                t = Table.create(f"{tmp}/t_{label}_{run}", "id bigint, v variant", properties=props)
                clock(f"append {label}", run, lambda: t.append(data))
                back = clock(f"read {label}", run, lambda: t.scan().to_arrow())
            assert back.num_rows == n
            if label == "new":
                previous = clock("read previous", run, lambda: _read_reference(t))
                assert previous.num_rows == n
                if run == 0:
                    check["previous"] = previous
            if run == 0:
                check[label] = back
            loads.append(os.getloadavg()[0])
    new = check["new"].sort_by("id")
    step = max(1, n // 2000)
    for other in ("old", "previous"):
        ref = check[other].sort_by("id")
        for i in range(0, n, step):
            a, b = new.column("v")[i], ref.column("v")[i]
            a = a.value if hasattr(a, "value") and not isinstance(a, pa.StructScalar) else a
            b = b.value if hasattr(b, "value") and not isinstance(b, pa.StructScalar) else b
            got = Variant(a["metadata"].as_py(), a["value"].as_py())
            assert got == Variant(b["metadata"].as_py(), b["value"].as_py()), (other, i)
            got.validate()
    print(f"\n== Table.append / Table.scan().to_arrow() with shredding, {n:,} rows, median of {repeat} interleaved runs ==")
    print(f"load average (1 min) during the runs: min {min(loads):.1f}, median {statistics.median(loads):.1f}, max {max(loads):.1f} on {os.cpu_count()} cores")
    print("rows per second of wall time and of process CPU time (CPU time: what the run costs without the other load)")
    rows = (
        ("append", "append new", "column-at-a-time (shred.columnar)", 100_000),
        ("", "append old", "row by row (shred.shred_rows)", None),
        ("read", "read new", "byte parts (shred.unshred_parts)", 500_000),
        ("", "read previous", "level arrays (shred.unshred_reference)", None),
        ("", "read old", "per-chunk rebuild, concatenated", None),
    )
    for what, key, name, target in rows:
        wall, proc = statistics.median(times[key]), statistics.median(cpu[key])
        base = "append new" if key.startswith("append") else "read new"
        ratio = "" if key == base else f"   new is {statistics.median(cpu[key]) / statistics.median(cpu[base]):.2f}x faster by CPU, {wall / statistics.median(times[base]):.2f}x by wall"
        goal = f"   (target {target:,} rows/s)" if target else ""
        print(f"{what:6s} {name:42s} wall {n / wall:10,.0f} rows/s   CPU {n / proc:10,.0f} rows/s{goal}{ratio}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--path", default="$.user.country")
    ap.add_argument("--table-rows", type=int, default=200_000, help="rows appended in the Table section (0: skip it)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of each path in the Table section")
    ap.add_argument("--only-table", action="store_true", help="run only the Table section")
    ap.add_argument("--workload", choices=("clicks", "jetstream"), default="clicks",
                    help="clicks: this file's click events (default); jetstream: bench/workloads/events.py's firehose events")
    args = ap.parse_args()
    n = args.rows

    if args.workload == "jetstream":
        variants, t_gen = timed(lambda: jetstream_events(n))
    else:
        gen = _Events(2026)
        variants, t_gen = timed(lambda: [gen.event(i) for i in range(n)])
    column = variant_column(variants)
    table = pa.table({"id": pa.array(range(n), pa.int64()), "v": column})
    variant_mb = (column.field("metadata").nbytes + column.field("value").nbytes) / 1e6
    del variants
    print(f"generated {n:,} events ({variant_mb:.0f} MB of Variant bytes) in {t_gen:.1f} s")

    if args.table_rows:
        with tempfile.TemporaryDirectory() as tmp:
            table_paths(table.slice(0, args.table_rows), args.repeat, tmp)
    if args.only_table:
        return

    step = max(1, n // 100_000)
    schema, t_infer = timed(lambda: infer_shredding_schema(column.take(pa.array(range(0, n, step)))))
    assert schema is not None
    print(f"inferred {len(schema.leaves())} typed leaves from {len(range(0, n, step)):,} rows in {t_infer:.2f} s")

    with tempfile.TemporaryDirectory() as tmp:
        plain_path = Path(tmp) / "plain.parquet"
        shred_path = Path(tmp) / "shredded.parquet"
        plain, t_plain = timed(lambda: write_parquet(table, plain_path))
        shredded, t_shred = timed(lambda: write_parquet(table, shred_path, shredding={"v": schema}))
        print("\n== write ==")
        print(f"unshredded write : {n / t_plain:12,.0f} rows/s  {variant_mb / t_plain:7.1f} MB/s  file {plain.size / 1e6:7.1f} MB  ({plain.metadata.num_row_groups} row groups)")
        print(f"shred + write    : {n / t_shred:12,.0f} rows/s  {variant_mb / t_shred:7.1f} MB/s  file {shredded.size / 1e6:7.1f} MB  ({shredded.metadata.num_row_groups} row groups)")
        print(f"shred+write / unshredded write time: {t_shred / t_plain:.1f}x")

        print("\n== full read (to unshredded Variants) ==")
        _, t_raw = timed(lambda: pq.read_table(plain_path), repeat=3)
        back_plain, t_read_plain = timed(lambda: read_parquet(plain_path), repeat=3)
        back, t_read = timed(lambda: read_parquet(shred_path), repeat=3)
        assert back.num_rows == n and back_plain.num_rows == n
        print(f"pyarrow raw, unshredded file : {n / t_raw:12,.0f} rows/s")
        print(f"varlake, unshredded file     : {n / t_read_plain:12,.0f} rows/s")
        print(f"varlake, shredded file       : {n / t_read:12,.0f} rows/s  ({t_read / t_read_plain:.1f}x the unshredded read time)")
        sample = [0, n // 2, n - 1]
        for i in sample:
            a = back.column("v")[i].as_py()
            b = table.column("v")[i].as_py()
            assert Variant(a["metadata"], a["value"]) == Variant(b["metadata"], b["value"]), f"row {i} differs"

        print(f"\n== one path ({args.path}) vs the whole Variant column ==")
        _, full_bytes, t_full = counted_read(shred_path, columns=["v"])
        proj, proj_bytes, t_proj = counted_read(shred_path, columns=[], paths={"v": [args.path]})
        _, plain_proj_bytes, t_plain_proj = counted_read(plain_path, columns=[], paths={"v": [args.path]})
        got = proj.column(f"v:{args.path}")
        assert got.null_count == 0 and len(got) == n
        print(f"full Variant read, shredded file : {full_bytes / 1e6:8.1f} MB  {t_full:6.2f} s")
        print(f"path projection, shredded file   : {proj_bytes / 1e6:8.1f} MB  {t_proj:6.2f} s  "
              f"-> {100 * proj_bytes / full_bytes:.1f}% of the bytes (target <= 10%), {t_full / t_proj:.1f}x faster")
        print(f"path projection, unshredded file : {plain_proj_bytes / 1e6:8.1f} MB  {t_plain_proj:6.2f} s")


if __name__ == "__main__":
    main()
