"""Property: random sequences of append / delete / update on random tables (partitioned or
not, Variant column shredded or not, deletion vectors on or off) give the rows the same
operations give on a plain Python list; time travel to every version gives that version's
rows; every deletion vector decodes with ``pyroaring`` to its stated cardinality.

Conditions are three-valued as in Spark (a NULL condition does not match); the model
evaluates them the same way by hand.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap64

from varlake import Table
from varlake.delta.deletion_vectors import DeletionVector
from varlake.variant import Variant
from varlake.variant.z85 import z85_decode
from varlake.write.changes.set_exprs import variant_patch_functions

PATCH = "variant_set" in variant_patch_functions()

# --- conditions: SQL text and a Python evaluator -----------------------------------------------------------


def _cmp(op: str, a: Any, b: Any) -> bool | None:
    if a is None or b is None:
        return None
    return {"=": a == b, "<": a < b, ">": a > b}[op]


leaf = st.one_of(
    st.tuples(st.just("k"), st.sampled_from(["=", "<", ">"]), st.integers(-2, 12)),
    st.tuples(st.just("n"), st.sampled_from(["=", "<", ">"]), st.integers(-2, 12)),
    st.tuples(st.just("p"), st.just("="), st.sampled_from(["a", "b"])),
    st.tuples(st.just("knull"), st.just(""), st.just(0)),
)


def _sql_leaf(node: tuple) -> str:
    kind, op, value = node
    if kind == "k":
        return f"k {op} {value}"
    if kind == "n":
        return f"v:n::int {op} {value}"
    if kind == "p":
        return f"p = '{value}'"
    return "k IS NULL"


def _eval_leaf(node: tuple, row: dict) -> bool | None:
    kind, op, value = node
    if kind == "k":
        return _cmp(op, row["k"], value)
    if kind == "n":
        return _cmp(op, row["v"].get("n") if row["v"] is not None else None, value)
    if kind == "p":
        return _cmp("=", row["p"], value)
    return row["k"] is None


conditions = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.tuples(st.sampled_from(["AND", "OR"]), inner, inner), st.tuples(st.just("NOT"), inner)
    ),
    max_leaves=3,
)


def sql(node: tuple) -> str:
    if node[0] in ("AND", "OR"):
        return f"({sql(node[1])} {node[0]} {sql(node[2])})"
    if node[0] == "NOT":
        return f"(NOT {sql(node[1])})"
    return _sql_leaf(node)


def evaluate(node: tuple, row: dict) -> bool | None:
    if node[0] == "AND":
        a, b = evaluate(node[1], row), evaluate(node[2], row)
        return False if a is False or b is False else None if a is None or b is None else True
    if node[0] == "OR":
        a, b = evaluate(node[1], row), evaluate(node[2], row)
        return True if a is True or b is True else None if a is None or b is None else False
    if node[0] == "NOT":
        a = evaluate(node[1], row)
        return None if a is None else not a
    return _eval_leaf(node, row)


# --- operations ----------------------------------------------------------------------------------------------

rows_st = st.lists(
    st.tuples(st.one_of(st.none(), st.integers(0, 10)), st.sampled_from(["a", "b"]),
              st.one_of(st.none(), st.integers(0, 10)), st.sampled_from(["x", "yy"])),
    min_size=1, max_size=12,
)  # fmt: skip
updates = st.sampled_from(["k+1", "k=null", "p=b", "n=7", "v=obj"])
operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), rows_st),
        st.tuples(st.just("delete"), conditions),
        st.tuples(st.just("update"), conditions, updates),
    ),
    min_size=1,
    max_size=6,
)


def _set_of(kind: str) -> dict[str, str]:
    if kind == "k+1":
        return {"k": "k + 1"}
    if kind == "k=null":
        return {"k": "NULL"}
    if kind == "p=b":
        return {"p": "'b'"}
    if kind == "n=7":
        return {"v": "variant_set(v, '$.n', 7)" if PATCH else "parse_json('{\"n\": 7, \"s\": \"x\"}')"}
    return {"v": "parse_json('{\"s\": \"new\"}')", "k": "CAST(k * 2 AS int)"}


def _apply_set(kind: str, row: dict) -> dict:
    row = dict(row)
    if kind == "k+1":
        row["k"] = None if row["k"] is None else row["k"] + 1
    elif kind == "k=null":
        row["k"] = None
    elif kind == "p=b":
        row["p"] = "b"
    elif kind == "n=7":
        row["v"] = {**row["v"], "n": 7} if PATCH else {"n": 7, "s": "x"}
    else:
        row["v"] = {"s": "new"}
        row["k"] = None if row["k"] is None else row["k"] * 2
    return row


def _rows(table: Table, version: int | None = None) -> list[tuple]:
    out = []
    for r in table.scan(version=version).to_arrow().to_pylist():
        v = Variant(r["v"]["metadata"], r["v"]["value"]).to_python() if r["v"] is not None else None
        out.append((r["id"], r["k"], r["p"], json.dumps(v, sort_keys=True)))
    return sorted(out)


def _model_rows(model: list[dict]) -> list[tuple]:
    return sorted((r["id"], r["k"], r["p"], json.dumps(r["v"], sort_keys=True)) for r in model)


def _check_dvs(table: Table) -> None:
    """Every live DV decodes with pyroaring (independently of varlake's reader) to its cardinality."""
    root = Path(table.path)
    for add in table.files():
        if add.deletion_vector is None:
            continue
        dv = DeletionVector.parse(add.deletion_vector, add.path)
        if dv.inline:
            data = z85_decode(dv.path_or_inline)[: dv.size_in_bytes]
        else:
            raw = (root / dv.relative_path(table.log.root_location, add.path)).read_bytes()
            (size,) = struct.unpack(">I", raw[dv.offset : dv.offset + 4])
            data = raw[dv.offset + 4 : dv.offset + 4 + size]
        assert len(BitMap64.deserialize(data[4:])) == dv.cardinality
        assert json.loads(add.stats)["tightBounds"] is False


COUNTER = [0]


@settings(max_examples=30, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
@given(partitioned=st.booleans(), shredded=st.booleans(), dv=st.booleans(), ops=operations)
def test_row_changes_match_a_list_model(tmp_path: Path, partitioned: bool, shredded: bool, dv: bool, ops: list) -> None:
    COUNTER[0] += 1
    properties = {"delta.enableDeletionVectors": str(dv).lower(), "delta.enableVariantShredding": str(shredded).lower()}
    table = Table.create(tmp_path / f"t{COUNTER[0]}", "id bigint, k int, p string, v variant",
                         partition_by=["p"] if partitioned else [], properties=properties)  # fmt: skip
    model: list[dict] = []
    versions = {table.version: []}
    next_id = 0
    for op in ops:
        if op[0] == "append":
            new = []
            for k, p, n, s in op[1]:
                v = {"s": s} if n is None else {"n": n, "s": s}
                new.append({"id": next_id, "k": k, "p": p, "v": v})
                next_id += 1
            version = table.append(new)
            model = model + new
        elif op[0] == "delete":
            result = table.delete(sql(op[1]))
            kept = [r for r in model if evaluate(op[1], r) is not True]
            assert result.num_deleted_rows == len(model) - len(kept)
            model, version = kept, result.version
        else:
            result = table.update(sql(op[1]), _set_of(op[2]))
            changed = [_apply_set(op[2], r) if evaluate(op[1], r) is True else r for r in model]
            assert result.num_updated_rows == sum(evaluate(op[1], r) is True for r in model)
            model, version = changed, result.version
        if version is not None:
            versions[version] = model
        assert _rows(table) == _model_rows(model), (op, sql(op[1]) if op[0] != "append" else "")
    _check_dvs(table)
    for version, expected in versions.items():
        assert _rows(table, version) == _model_rows(expected), version
