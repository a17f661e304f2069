"""Time and peak memory of ``parse_json`` on huge and over-limit JSON, versus input size.

    .venv/bin/python bench/json_limits.py [--cases str1,obj10k,...] [--repeat 3]

Each case runs in a fresh child process (so one case's garbage cannot skew the next):
it builds the text, parses it ``--repeat`` times without tracing (best CPU time of the
process reported, steadier than wall time on a shared machine),
then once more under ``tracemalloc`` for the peak of Python allocations made by the
parse (the input text itself is not counted). Columns: input size (MB of UTF-8), best
time, time per MB, peak memory, peak per MB of input, and the verdict (value/metadata
sizes, or the named error and whether it was refused before the whole text was read).
Linear growth shows as flat ``s/MB`` and ``peak/MB`` columns within a family (strings,
objects, arrays). The bounds themselves are the constants of
``varlake.variant.json_parse`` (Spark 4.3 / Jackson 2.21 defaults).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import tracemalloc


def _object(n: int) -> str:
    return "{" + ",".join(f'"k{i}":{i}' for i in range(n)) + "}"


# name -> (family, text builder)
CASES: dict[str, tuple[str, object]] = {
    "str1MB": ("string", lambda: '"' + "a" * 1_000_000 + '"'),
    "str10MB": ("string", lambda: '"' + "a" * 10_000_000 + '"'),
    "str50MB": ("string (over 20M-char limit)", lambda: '"' + "a" * 50_000_000 + '"'),
    "str50MB_in_array": ("string (over 20M-char limit)", lambda: '["' + "a" * 50_000_000 + '"]'),
    "strs10MB": ("array of 1 kB strings", lambda: "[" + ",".join(['"' + "a" * 1000 + '"'] * 10_000) + "]"),
    "strs50MB": ("array of 1 kB strings", lambda: "[" + ",".join(['"' + "a" * 1000 + '"'] * 50_000) + "]"),
    "obj10k": ("object", lambda: _object(10_000)),
    "obj100k": ("object", lambda: _object(100_000)),
    "obj1M": ("object", lambda: _object(1_000_000)),
    "ints100k": ("array of ints", lambda: "[" + ",".join(map(str, range(100_000))) + "]"),
    "ints1M": ("array of ints", lambda: "[" + ",".join(map(str, range(1_000_000))) + "]"),
    "objs100k": ("array of small objects", lambda: "[" + ",".join(f'{{"a":{i},"b":"x{i}"}}' for i in range(100_000)) + "]"),
    "objs1M": ("array of small objects", lambda: "[" + ",".join(f'{{"a":{i},"b":"x{i}"}}' for i in range(1_000_000)) + "]"),
    "depth10k": ("nesting (over 1000 levels)", lambda: "[" * 10_000 + "]" * 10_000),
    "depth1M": ("nesting (over 1000 levels)", lambda: "[" * 1_000_000 + "]" * 1_000_000),
    "number10M": ("number (over 1000 digits)", lambda: "[" + "1" * 10_000_000 + "]"),
    "keys100k_1kB": ("distinct 1 kB keys", lambda: "{" + ",".join(f'"{"k" * 1000}{i}":1' for i in range(100_000)) + "}"),
}
DEFAULT = ["str1MB", "str10MB", "str50MB", "str50MB_in_array", "strs10MB", "strs50MB", "obj10k", "obj100k",
           "obj1M", "ints100k", "ints1M", "objs100k", "objs1M", "depth10k", "depth1M", "number10M", "keys100k_1kB"]


def _verdict(text: str) -> str:
    from varlake.errors import VarlakeError
    from varlake.variant.json_parse import parse_json_parts

    try:
        metadata, value = parse_json_parts(text)
    except VarlakeError as exc:
        early = " early" if getattr(exc, "early", False) else ""
        return f"{type(exc).__name__}{early}: {str(exc)[:70]}"
    return f"ok: value {len(value):,} B, metadata {len(metadata):,} B"


def run_case(name: str, repeat: int) -> dict[str, object]:
    """Run one case in this process (the child side)."""
    text = CASES[name][1]()  # type: ignore[operator]
    megabytes = len(text.encode("utf-8")) / 1e6
    _verdict("0")  # imports, outside the timing
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        verdict = _verdict(text)
        best = min(best, time.process_time() - start)
    tracemalloc.start()
    _verdict(text)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"name": name, "family": CASES[name][0], "mb": megabytes, "seconds": best, "peak_mb": peak / 1e6,
            "verdict": verdict}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(DEFAULT), help="comma-separated: " + ", ".join(CASES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_case(args.child, args.repeat)))
        return
    print(f"{'case':18s} {'family':30s} {'input MB':>9s} {'cpu s':>8s} {'s/MB':>7s} {'peak MB':>8s} "
          f"{'peak/MB':>8s}  verdict")
    for name in args.cases.split(","):
        out = subprocess.run([sys.executable, __file__, "--child", name, "--repeat", str(args.repeat)],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        mb = max(r["mb"], 1e-6)
        print(f"{r['name']:18s} {r['family']:30s} {r['mb']:9.2f} {r['seconds']:8.3f} {r['seconds'] / mb:7.3f} "
              f"{r['peak_mb']:8.1f} {r['peak_mb'] / mb:8.2f}  {r['verdict']}", flush=True)


if __name__ == "__main__":
    main()
