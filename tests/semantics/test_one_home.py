"""Spark's semantics live in ``varlake.semantics`` only: no second copy elsewhere, and the
package sits at the bottom (stdlib, pyarrow and ``varlake.errors`` only)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "varlake"

# Fingerprints of a rule's implementation: each may appear only under semantics/.
FINGERPRINTS = {
    "SHORT_IDS table": re.compile(r'"PST"\s*:\s*"America/Los_Angeles"'),
    "ZoneOffset.of parsing": re.compile(r"def _offset_zone|ZoneInfo\("),
    "Double.toString digits": re.compile(r"_N_5_BITS|def _fd_digits|def java_double"),
    "decimal text": re.compile(r"def (plain_decimal|decimal_text)\b"),
    "string -> date/timestamp": re.compile(r"def (string_to_date|string_to_timestamp|parse_timestamp_string)\b|_DATE_RE|_TS_RE"),
    "type aliases": re.compile(r'"long"\s*:\s*"bigint"|"bigint"\s*:\s*"long"|"int"\s*:\s*"integer"'),
    "identifier quoting (if needed)": re.compile(r"def (quote_identifier|quote_name)\b"),
    "Jackson string escaping": re.compile(r"def quote\(text"),
    "calendar arithmetic": re.compile(r"def (days_from_civil|civil_from_days)\b"),
    "identifier back-quoting": re.compile(r"""replace\(\s*["']`["']\s*,\s*["']``["']\s*\)"""),
    "partition directories (Hive NULL)": re.compile(r"__HIVE_DEFAULT_PARTITION__"),
    "Java float text by repr": re.compile(r"def _float_text|def java_double_text\b.*\n\s+(?!return java)"),
}


def test_no_second_copy_of_a_spark_rule() -> None:
    found = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "semantics":
            continue
        text = path.read_text()
        for rule, pattern in FINGERPRINTS.items():
            if pattern.search(text):
                found.append(f"{rel}: {rule}")
    assert not found, "Spark rules outside varlake.semantics:\n" + "\n".join(found)


def test_semantics_imports_only_the_bottom_layer() -> None:
    bad = []
    for path in (SRC / "semantics").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            for name in names:
                if name.startswith("varlake") and not (name == "varlake.errors" or name.startswith("varlake.semantics")):
                    bad.append(f"{path.name} imports {name}")
    assert not bad, bad
