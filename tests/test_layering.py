"""Imports point one way: codec -> shredding -> io -> expressions -> delta log -> read planners -> Table -> spark -> cli."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "varlake"
LEVELS = {"errors": -1, "variant": 0, "shred": 1, "io": 2, "expr": 3, "delta": 4, "read": 5, "table": 6, "spark": 7, "cli": 8, "demo": 9}


def _level(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "varlake" or len(parts) < 2:
        return None
    return LEVELS.get(parts[1])


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


def test_every_package_has_a_level() -> None:
    names = {p.stem if p.is_file() else p.name for p in SRC.iterdir() if not p.name.startswith("__")}
    unknown = sorted(n for n in names if n not in LEVELS)
    assert not unknown, f"add these to the layering map: {unknown}"


def test_imports_only_point_down_the_data_flow() -> None:
    bad = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        mine = _level(".".join(rel.parts))
        if mine is None:
            continue
        for target in _imports(path):
            theirs = _level(target)
            if theirs is not None and theirs > mine:
                bad.append(f"{rel} imports {target}")
    assert not bad, "imports against the data flow:\n" + "\n".join(bad)
