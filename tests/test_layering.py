"""Imports point one way and never in a circle.

Data flows: errors/semantics -> codec -> shredding and expressions (siblings) -> io ->
delta log -> read -> write -> Table -> spark -> cli. Inside ``write/`` and ``spark/`` the
sub-packages follow the pipeline too (``SUBLEVELS``). Every ``import`` counts, wherever it
sits: at the top of a file, inside a function, or under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "varlake"
LEVELS = {
    "errors": -1,
    "semantics": -0.5,
    "variant": 0,
    "shred": 1,
    "expr": 1,
    "io": 2,
    "delta": 4,
    "hudi": 4,
    "read": 5,
    "write": 5.5,
    "table": 6,
    "spark": 7,
    "cli": 8,
    "demo": 9,
}


# Sub-packages of a package, in the order data flows through them; modules directly in the
# package (shared vocabulary such as ``spark/types.py``) sit at level 0 beside the first.
SUBLEVELS = {
    "write": {"staging": 1, "changes": 2, "maintenance": 3, "diagnostics": 4},
    "spark": {"session": 1, "reading": 2, "writing": 3, "changes": 4},
}


def _sublevel(module: str) -> tuple[str, float] | None:
    """``(package, level)`` of a module inside a package with ordered sub-packages; the
    package's ``__init__`` (its public face) sits above all of them."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "varlake" or parts[1] not in SUBLEVELS:
        return None
    order = SUBLEVELS[parts[1]]
    if len(parts) == 2:
        return parts[1], max(order.values()) + 1
    return parts[1], order.get(parts[2], 0)


def _level(module: str) -> float | None:
    parts = module.split(".")
    if parts[0] != "varlake" or len(parts) < 2:
        return None
    return LEVELS.get(parts[1])


def module_files(src: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at ``src`` (a package is its ``__init__``)."""
    out = {}
    for path in sorted(src.rglob("*.py")):
        parts = path.relative_to(src.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """``(imported module, line)`` for every import in ``path``, resolved to modules of ``modules``.

    ``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to package
    ``a.b`` (its ``__init__``); ``import a.b.c`` is an edge to ``a.b.c`` only (the parent
    packages run first, but an edge to each would make every package a cycle with its
    own modules). Relative imports are resolved against ``module``.
    """
    tree = ast.parse(path.read_text(), str(path))
    package = module if _is_package(path) else module.rpartition(".")[0]
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((a.name, node.lineno) for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:
                    found.append((sub, node.lineno))
                elif base in modules:
                    found.append((base, node.lineno))
    return found


def import_graph(src: Path) -> dict[str, dict[str, int]]:
    """Module -> {imported module: first line importing it}, self-imports left out."""
    modules = module_files(src)
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        edges: dict[str, int] = {}
        for target, line in imports_of(module, path, modules):
            if target != module:
                edges.setdefault(target, line)
        graph[module] = edges
    return graph


def import_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def describe_cycle(
    component: list[str], graph: dict[str, dict[str, int]], packages: frozenset[str] = frozenset()
) -> str:
    """The modules of one cycle and the imports that close it (a package is named ``pkg (__init__)``)."""

    def name(module: str) -> str:
        return f"{module} (__init__)" if module in packages else module

    members = set(component)
    edges = [
        f"    {name(src)} -> {name(dst)} (line {line})"
        for src in component
        for dst, line in sorted(graph[src].items())
        if dst in members
    ]
    return " <-> ".join(map(name, component)) + "\n" + "\n".join(edges)


def test_every_package_has_a_level() -> None:
    names = {p.stem if p.is_file() else p.name for p in SRC.iterdir() if not p.name.startswith("__")}
    unknown = sorted(n for n in names if n not in LEVELS)
    assert not unknown, f"add these to the layering map: {unknown}"


def test_imports_only_point_down_the_data_flow() -> None:
    bad = []
    modules = module_files(SRC)
    for module, path in modules.items():
        mine = _level(module)
        if mine is None:
            continue
        for target, line in imports_of(module, path, modules):
            theirs = _level(target)
            if theirs is not None and theirs > mine:
                bad.append(f"{module} (line {line}) imports {target}")
            elif theirs == mine and target.split(".")[1] != module.split(".")[1]:
                bad.append(f"{module} (line {line}) imports its sibling {target}")
    assert not bad, "imports against the data flow:\n" + "\n".join(bad)


def test_sub_packages_follow_the_pipeline() -> None:
    """``write/``: staging -> changes -> maintenance -> diagnostics; ``spark/``: session ->
    reading -> writing -> changes. A sub-package imports only those before it."""
    bad = []
    modules = module_files(SRC)
    for module, path in modules.items():
        mine = _sublevel(module)
        if mine is None:
            continue
        for target, line in imports_of(module, path, modules):
            theirs = _sublevel(target)
            if theirs is not None and theirs[0] == mine[0] and theirs[1] > mine[1]:
                bad.append(f"{module} (line {line}) imports {target}")
    assert not bad, "imports against the order of sub-packages:\n" + "\n".join(bad)


def test_every_sub_package_has_a_level() -> None:
    unknown = [
        f"{package}/{p.name}"
        for package, order in SUBLEVELS.items()
        for p in (SRC / package).iterdir()
        if p.is_dir() and not p.name.startswith("__") and p.name not in order
    ]
    assert not unknown, f"add these to SUBLEVELS: {unknown}"


def test_no_import_cycles() -> None:
    graph = import_graph(SRC)
    packages = frozenset(m for m, path in module_files(SRC).items() if _is_package(path))
    cycles = import_cycles(graph)
    assert not cycles, "import cycles (every import counts, TYPE_CHECKING and function-local too):\n" + "\n".join(
        describe_cycle(c, graph, packages) for c in cycles
    )


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_cycle_finder_sees_every_kind_of_import(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import A\nfrom pkg.g import G\n",
            "pkg/a.py": "from pkg import b\nA = 1\n",
            "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n",
            "pkg/c.py": "def f():\n    import pkg.d\n",
            "pkg/d.py": "from . import c\n",
            "pkg/e.py": "from pkg import A\n",  # a name, not a module: an edge to pkg/__init__.py
            "pkg/g.py": "import pkg\nG = pkg.A\n",  # back into its own package's __init__
            "pkg/sub/__init__.py": "",
            "pkg/sub/f.py": "from .. import b\nimport pkg.sub\n",  # no cycle: nothing imports f
        },
    )
    graph = import_graph(tmp_path / "pkg")
    assert graph["pkg"] == {"pkg.a": 1, "pkg.g": 2}
    assert graph["pkg.e"] == {"pkg": 1}
    assert graph["pkg.sub.f"] == {"pkg.b": 1, "pkg.sub": 2}
    cycles = import_cycles(graph)
    assert cycles == [["pkg", "pkg.g"], ["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"]]
    assert "pkg.b -> pkg.a (line 3)" in describe_cycle(cycles[1], graph)
    assert "pkg.g -> pkg (__init__) (line 1)" in describe_cycle(cycles[0], graph, frozenset({"pkg"}))


def test_the_cycle_finder_passes_a_clean_tree(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import A\n",
            "pkg/a.py": "from pkg.b import B\nA = B\n",
            "pkg/b.py": "B = 1\n",
            "pkg/c.py": "from pkg.a import A\nfrom pkg import b\n",
        },
    )
    assert import_cycles(import_graph(tmp_path / "pkg")) == []
