"""No module imports another module's ``_private`` names.

A leading underscore marks a name as its module's own business; a name another module
needs is promoted to a public one in the module that owns it. Every ``from x import _name``
whose source is another module fails here -- the importing package's own ``__init__``
counts as another module too. Importing a public name under a private alias
(``import x as _x``) is fine, and so are dunders.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "varlake"

#: (importing module, imported module, name) left as they are, with the reason.
ALLOWED: dict[tuple[str, str, str], str] = {}


def _module_name(path: Path, src: Path) -> tuple[str, str]:
    """``(module, package)`` of a file of the package at ``src``."""
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(src: Path = SRC) -> list[tuple[str, str, str, int]]:
    """``(module, source module, name, line)`` of every cross-module import of a ``_private`` name."""
    found = []
    for path in sorted(src.rglob("*.py")):
        module, package = _module_name(path, src)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    if _is_private(alias.name) and source != module:
                        found.append((module, source, alias.name, node.lineno))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    private = [p for p in alias.name.split(".") if _is_private(p)]
                    if private and alias.name.startswith("varlake"):
                        found.append((module, alias.name, private[0], node.lineno))
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    bad = [
        f"{module} (line {line}) imports {name} from {source}"
        for module, source, name, line in private_imports()
        if (module, source, name) not in ALLOWED
    ]
    assert not bad, "promote these to public names in the module that owns them:\n" + "\n".join(bad)


def test_the_allow_list_is_not_stale() -> None:
    live = {(m, s, n) for m, s, n, _ in private_imports()}
    stale = sorted(set(ALLOWED) - live)
    assert not stale, f"no longer imported, drop from ALLOWED: {stale}"


def test_the_check_sees_relative_and_package_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "varlake" / "pkg"
    pkg.mkdir(parents=True)
    (tmp_path / "varlake" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("_shared = 1\n")
    (pkg / "a.py").write_text("_own = 1\nfrom .b import _helper\nfrom . import _shared\nfrom varlake.pkg.a import _own\n")
    (pkg / "b.py").write_text("from varlake.pkg.a import public as _alias\n_helper = 2\n")
    found = {(m, s, n) for m, s, n, _ in private_imports(tmp_path / "varlake")}
    assert found == {("varlake.pkg.a", "varlake.pkg.b", "_helper"), ("varlake.pkg.a", "varlake.pkg", "_shared")}
