"""The benchmark's generated JSON Lines, cached between runs by workload, scale, seed and
generator code (``harness.cached_source`` is this module's ``cached_source``)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from workloads.spec import Source, Workload


def _generator_fingerprint(workload: Workload) -> str:
    """A hash of the code that generates the workload's documents (its module and ``spec.py``),
    so a changed generator never reuses stale JSON."""
    digest = hashlib.sha256()
    for module in (workload.generate.__module__, Source.__module__):
        file = getattr(sys.modules.get(module), "__file__", None)
        digest.update(Path(file).read_bytes() if file else module.encode())
    return digest.hexdigest()[:12]


def cached_source(
    workload: Workload,
    scale: float,
    seed: int,
    out_dir: Path,
    cache_dir: Path | None = None,
    log: Callable[[str], None] = print,
) -> Source:
    """The workload's JSON Lines at ``scale`` and ``seed``.

    With ``cache_dir``, they are generated once into ``cache_dir/<workload>-scale<s>-seed<n>-<code
    hash>/`` (with a ``source.json`` manifest; the entry is renamed into place whole) and reused by later runs while the
    files are intact and the generator's code is unchanged; entries of the same workload, scale
    and seed made by other generator code are removed. Without it, they go to ``out_dir``.
    The ``details`` of the returned source say ``cache`` ``hit`` or ``miss``."""
    if cache_dir is None:
        source = workload.generate(out_dir, scale, seed)
        return Source(source.paths, source.rows, source.bytes, source.seconds, {**source.details, "cache": "off"})
    stem = f"{workload.name}-scale{scale:g}-seed{seed}"
    entry = cache_dir / f"{stem}-{_generator_fingerprint(workload)}"
    manifest = entry / "source.json"
    if manifest.is_file():
        try:
            m = json.loads(manifest.read_text())
            paths = tuple(entry / name for name in m["files"])
            if [p.stat().st_size for p in paths] == m["sizes"]:
                return Source(paths, m["rows"], m["bytes"], m["seconds"], {**m["details"], "cache": "hit"})
        except (OSError, ValueError, KeyError, TypeError):
            pass
        log(f"[{workload.name}] cache entry {entry.name} is incomplete or changed: generating again")
    cache_dir.mkdir(parents=True, exist_ok=True)
    for stale in cache_dir.glob(f"{stem}-*"):
        shutil.rmtree(stale, ignore_errors=True)
    partial = cache_dir / f".partial-{entry.name}-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    source = workload.generate(partial, scale, seed)
    (partial / manifest.name).write_text(json.dumps({
        "files": [str(p.relative_to(partial)) for p in source.paths], "sizes": [p.stat().st_size for p in source.paths],
        "rows": source.rows, "bytes": source.bytes, "seconds": round(source.seconds, 3),
        "details": dict(source.details)}, indent=1) + "\n")
    try:
        partial.rename(entry)  # the entry appears whole, manifest included, or not at all
    except OSError:  # another run made the same entry meanwhile: keep theirs
        shutil.rmtree(partial, ignore_errors=True)
        if manifest.is_file():
            return cached_source(workload, scale, seed, out_dir, cache_dir, log)
        raise
    paths = tuple(entry / p.relative_to(partial) for p in source.paths)
    return Source(paths, source.rows, source.bytes, source.seconds, {**source.details, "cache": "miss"})
