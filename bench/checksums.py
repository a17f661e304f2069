"""Cost of Parquet page checksums (CRC32) on write and on verified reads, in one run.

    .venv/bin/python bench/checksums.py [--rows 2000000] [--rounds 5]

varlake writes every data file with ``write_page_checksum=True`` and reads with
``page_checksum_verification=True`` (a flipped byte is a named error, never wrong values;
tests/io/test_page_checksums.py); varlake's Spark jobs set ``parquet.page.write-checksum.enabled``
and ``parquet.page.verify-checksum.enabled`` (varlake.spark.session, tests/spark/
test_spark_page_checksums.py). This measures both engines against the same data written and
read without checksums, rounds interleaved, medians reported. ``--no-spark`` skips Spark.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-spark", action="store_true")
    args = parser.parse_args()
    n = args.rows
    table = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "s": pa.array([f"s{i % 1000}" for i in range(n)]),
        "x": pa.array([i * 0.5 for i in range(n)]),
        "value": pa.array([b"\x0c\x01" + bytes([i % 251]) for i in range(n)], pa.binary()),
    })
    times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds + 1):  # the first round warms up and is dropped
            for crc in (False, True):
                path = os.path.join(tmp, f"{crc}.parquet")
                t0 = time.perf_counter()
                pq.write_table(table, path, compression="zstd", write_page_checksum=crc)
                written = time.perf_counter() - t0
                t0 = time.perf_counter()
                pq.read_table(path, page_checksum_verification=crc)
                times[crc].append((written, time.perf_counter() - t0))
    med = {crc: (statistics.median(w for w, _ in v[1:]), statistics.median(r for _, r in v[1:])) for crc, v in times.items()}
    print(f"{n:,} rows, median of {args.rounds} interleaved rounds")
    print(f"  write: {med[False][0]:.3f} s without, {med[True][0]:.3f} s with checksums: {med[True][0] / med[False][0]:.2f}x")
    print(f"  read:  {med[False][1]:.3f} s without, {med[True][1]:.3f} s verified:        {med[True][1] / med[False][1]:.2f}x")
    if not args.no_spark:
        spark_costs(n, args.rounds)


def spark_costs(n: int, rounds: int) -> None:
    """The same comparison for Spark's Parquet writer and its vectorized reader."""
    from varlake.spark.session.local import PARQUET_READ_OPTIONS, PARQUET_WRITE_OPTIONS, local_session

    spark = local_session("local[2]")
    df = spark.sql(
        f"SELECT id, concat('s', id % 1000) AS s, id * 0.5 AS x, parse_json(format_string('{{\"a\": %d}}', id)) AS v "
        f"FROM range({n})"
    )
    off_write = {k: "false" for k in PARQUET_WRITE_OPTIONS}
    off_read = {k: "false" for k in PARQUET_READ_OPTIONS}
    times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds + 1):
            for crc in (False, True):
                path = os.path.join(tmp, f"spark-{crc}-{r}")
                t0 = time.perf_counter()
                df.write.options(**(PARQUET_WRITE_OPTIONS if crc else off_write)).parquet(path, compression="zstd")
                written = time.perf_counter() - t0
                t0 = time.perf_counter()
                reader = spark.read.options(**(PARQUET_READ_OPTIONS if crc else off_read))
                reader.parquet(path).selectExpr("sum(id)", "max(s)", "sum(x)", "count(v)").collect()
                times[crc].append((written, time.perf_counter() - t0))
    med = {crc: (statistics.median(w for w, _ in v[1:]), statistics.median(r for _, r in v[1:])) for crc, v in times.items()}
    print(f"Spark, {n:,} rows, median of {rounds} interleaved rounds")
    print(f"  write: {med[False][0]:.3f} s without, {med[True][0]:.3f} s with checksums: {med[True][0] / med[False][0]:.2f}x")
    print(f"  read:  {med[False][1]:.3f} s without, {med[True][1]:.3f} s verified:        {med[True][1] / med[False][1]:.2f}x")


if __name__ == "__main__":
    main()
