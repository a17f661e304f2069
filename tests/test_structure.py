"""Where things are decided: a table's storage is chosen once, in ``varlake.table``
(``locate``), and handed down; ``write/`` and ``read/`` see a table only through the
``TableHandle`` contract, never ``varlake.table`` itself."""

from __future__ import annotations

import ast
from pathlib import Path

from test_layering import SRC, imports_of, module_files

#: files (relative to the package) that may construct a ``LocalStorage``
STORAGE_CHOOSERS = ("table.py",)
STORAGE_HOME = "io"


def storage_constructions(src: Path) -> list[str]:
    """``file:line`` of every ``LocalStorage(...)`` call outside ``io/`` and ``table.py``."""
    found = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        if rel.parts[0] == STORAGE_HOME or rel.as_posix() in STORAGE_CHOOSERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                fn = node.func
                name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else None
                if name == "LocalStorage":
                    found.append(f"{rel.as_posix()}:{node.lineno}")
    return found


def table_imports_below_table(src: Path) -> list[str]:
    """Modules under ``write/`` or ``read/`` that import ``<package>.table``."""
    modules = module_files(src)
    package = src.name
    bad = []
    for module, path in modules.items():
        parts = module.split(".")
        if len(parts) < 2 or parts[1] not in ("write", "read"):
            continue
        for target, line in imports_of(module, path, modules):
            if target == f"{package}.table":
                bad.append(f"{module} (line {line})")
    return bad


def test_storage_is_chosen_only_by_the_table() -> None:
    found = storage_constructions(SRC)
    assert not found, "LocalStorage() constructed below varlake.table (take the table's storage):\n" + "\n".join(found)


def test_write_and_read_never_import_the_table() -> None:
    bad = table_imports_below_table(SRC)
    assert not bad, "write/ and read/ import varlake.table (use write.staging.handle.TableHandle):\n" + "\n".join(bad)


def test_the_checks_see_what_they_forbid(tmp_path: Path) -> None:
    src = tmp_path / "pkg"
    files = {
        "__init__.py": "",
        "table.py": "from pkg.io.storage import LocalStorage\nS = LocalStorage()\n",
        "io/__init__.py": "",
        "io/storage.py": "class LocalStorage: ...\nDEFAULT = LocalStorage()\n",
        "write/__init__.py": "",
        "write/a.py": "from pkg.io import storage\ns = storage.LocalStorage()\n",
        "write/b.py": "def f():\n    from pkg.table import S\n    return S\n",
        "read/__init__.py": "",
        "read/c.py": "import pkg.table\n",
        "read/d.py": "from pkg import table\n",
        "spark/__init__.py": "",
        "spark/e.py": "from pkg.io.storage import LocalStorage as L\nfrom pkg.table import S\nx = LocalStorage\n",
    }
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    assert storage_constructions(src) == ["write/a.py:2"]
    assert table_imports_below_table(src) == ["pkg.read.c (line 1)", "pkg.read.d (line 1)", "pkg.write.b (line 2)"]
