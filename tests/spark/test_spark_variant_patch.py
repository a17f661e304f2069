"""varlake's Variant patch functions give Spark 4.3's bytes, NULLs and errors.

A seeded generator makes ~2,400 cases: a document (random JSON through ``parse_json``, or a
hand-built non-canonical encoding: wide ids/offsets, the large header, long strings holding
short text, a dictionary with unused or repeated keys, object fields out of key order), a path
drawn from the document (existing, missing, beyond the end, through a scalar, ...), a value
(a Variant or a typed SQL value) and a second, maybe NULL, path for ``variant_delete``. One
DataFrame and one SELECT compute every function for every case in Spark; each cell is
compared byte for byte (value and metadata) with varlake. The ``try_`` forms cover the
errors in bulk (NULL exactly where varlake raises); the raising forms run in bulk on the
cases varlake accepts and one by one on a sample of failing cases, comparing error class
and message. Invalid paths and malformed documents are checked one query each;
``is_valid_variant`` runs over ~900 byte-mutated documents.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from decimal import Decimal
from typing import Any

import pytest

from varlake.errors import VarlakeError
from varlake.variant import Variant, parse_json
from varlake.variant.encoder import MetadataBuilder, encode_array, encode_object, encode_scalar, metadata_from_keys
from varlake.variant.functions import (
    cast_to_variant,
    is_valid_variant,
    try_variant_array_append,
    try_variant_insert,
    try_variant_set,
    variant_array_append,
    variant_delete,
    variant_insert,
    variant_set,
    variant_strip_nulls,
)

pytestmark = pytest.mark.spark

SEED = 20261124
N_CASES = 2400
KEYS = ["a", "b", "c", "d", "e", "a.b", "", "x y", "é", "k'", "[", "B", "aa"]

# value kinds: 0 a Variant, then typed SQL values cast by the function itself
VALUE_TYPES = [None, "bigint", "string", "double", "decimal(10,3)", "boolean", "date", "array<int>"]
VALUE_COLS = ["x", "xi", "xs", "xd", "xdec", "xb", "xdt", "xa"]


# --- generating cases ------------------------------------------------------------------------------


def _scalar(rng: random.Random) -> Any:
    k = rng.randrange(9)
    if k == 0:
        return None
    if k == 1:
        return rng.choice([True, False])
    if k == 2:
        return rng.choice([0, 1, -5, 127, 128, -129, 40000, 2**31, -(2**40)])
    if k == 3:
        return rng.choice([1.5, -0.25, 1e300, 3.0])
    if k == 4:
        return "".join(rng.choice("xyz é") for _ in range(rng.randrange(5)))
    if k == 5:
        return "long " * 14  # 70 bytes: a long string
    if k == 6:
        return Decimal(rng.choice(["1.25", "-0.001", "12345678901234.5"]))
    if k == 7:
        return rng.randrange(-3, 300)
    return rng.choice(["s", "t"])


def _json(rng: random.Random, depth: int = 0) -> Any:
    k = rng.randrange(10)
    if depth < 3 and k < 4:
        return {rng.choice(KEYS): _json(rng, depth + 1) for _ in range(rng.randrange(5))}
    if depth < 3 and k < 7:
        return [_json(rng, depth + 1) for _ in range(rng.randrange(5))]
    return _scalar(rng)


def _to_json_text(obj: Any) -> str:
    if isinstance(obj, Decimal):
        return str(obj)
    if isinstance(obj, dict):
        return "{" + ",".join(json.dumps(k) + ":" + _to_json_text(v) for k, v in obj.items()) + "}"
    if isinstance(obj, list):
        return "[" + ",".join(_to_json_text(v) for v in obj) + "]"
    return json.dumps(obj)


def _odd_scalar(obj: Any, rng: random.Random) -> bytes:
    """Scalars in encodings Spark never writes but must copy as they are."""
    if isinstance(obj, str) and rng.random() < 0.5:
        data = obj.encode()
        return bytes((0x40,)) + len(data).to_bytes(4, "little") + data  # long string form
    if isinstance(obj, int) and not isinstance(obj, bool) and -(2**31) <= obj < 2**31 and rng.random() < 0.5:
        return bytes((0x18,)) + obj.to_bytes(8, "little", signed=True)  # int64 for a small int
    return encode_scalar(obj)


def _odd(obj: Any, keys: MetadataBuilder, rng: random.Random) -> bytes:
    """A valid but non-canonical encoding: forced widths, the large header, scrambled field order."""
    if isinstance(obj, dict):
        fields = [(k, keys.add(k), _odd(v, keys, rng)) for k, v in obj.items()]
        body = encode_object(fields, id_size=rng.choice([None, 2, 4]), offset_size=rng.choice([None, 3, 4]),
                             large=rng.choice([None, True]))
        if 1 < len(fields) < 256 and rng.random() < 0.3:  # stored field order not by key (Spark reads it)
            return _unsorted(fields)
        return body
    if isinstance(obj, list):
        return encode_array([_odd(v, keys, rng) for v in obj], offset_size=rng.choice([None, 2, 4]),
                            large=rng.choice([None, True]))
    return _odd_scalar(obj, rng)


def _unsorted(fields: list[tuple[str, int, bytes]]) -> bytes:
    """An object whose ids/offsets are in insertion order instead of key order."""
    data = b"".join(f[2] for f in fields)
    offsets, at = [], 0
    for f in fields:
        offsets.append(at)
        at += len(f[2])
    offsets.append(at)
    return bytes((0x02 | (3 << 2) | (3 << 4), len(fields))) + b"".join(
        f[1].to_bytes(4, "little") for f in fields) + b"".join(o.to_bytes(4, "little") for o in offsets) + data


def make_doc(rng: random.Random) -> tuple[Any, Variant, str | None]:
    """``(python object, Variant, JSON text or None for a hand-built encoding)``."""
    obj = _json(rng)
    while not isinstance(obj, (dict, list)) and rng.random() < 0.85:  # mostly containers at the root
        obj = _json(rng)
    if rng.random() < 0.03:  # past 255 fields / elements: the large header and wider offsets
        obj = {f"k{i}": i for i in range(rng.randrange(250, 300))} if rng.random() < 0.5 else list(range(270))
    if rng.random() < 0.35:
        junk = rng.sample(["zz", "a", "q", "é", "x y", "b"], rng.randrange(3))
        keys = MetadataBuilder(junk)  # unused dictionary entries first
        body = _odd(obj, keys, rng)
        names = list(keys.keys)
        meta = metadata_from_keys(names, sorted_flag=False)
        return obj, Variant.trusted(meta, body), None
    text = _to_json_text(obj)
    return obj, parse_json(text), text


def _all_paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _all_paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _all_paths(v, prefix + (i,))
    return out


def path_text(segs: tuple, rng: random.Random) -> str:
    out = "$"
    for s in segs:
        if isinstance(s, int):
            out += f"[{s}]" if rng.random() < 0.9 else f"[0{s}]"
        elif s and "." not in s and "[" not in s and rng.random() < 0.6:
            out += "." + s
        elif "'" in s:
            out += f'["{s}"]'
        else:
            out += f"['{s}']"
    return out


def _at(obj: Any, segs: tuple) -> Any:
    for s in segs:
        obj = obj[s]
    return obj


def make_path(obj: Any, rng: random.Random) -> str:
    paths = _all_paths(obj)
    k = rng.randrange(8)
    containers = [p for p in paths if isinstance(_at(obj, p), (dict, list))]
    if k in (0, 1, 3, 4) and containers and rng.random() < 0.7:  # extend mostly from containers
        paths = containers
    segs = rng.choice(paths)
    if k == 0:
        segs = segs + (rng.choice(KEYS),)
    elif k == 1:
        segs = segs + (rng.randrange(6) if rng.random() < 0.9 else rng.randrange(250, 320),)
    elif k == 2 and segs:
        segs = segs[:-1] + (rng.choice(KEYS),)
    elif k == 3:
        segs = segs + (rng.choice(KEYS), rng.randrange(3))
    elif k == 4:
        segs = segs + (rng.randrange(8), rng.choice(KEYS))
    if not segs:
        segs = (rng.choice([rng.choice(KEYS), rng.randrange(4)]),)
    return path_text(segs, rng)


def make_value(rng: random.Random) -> tuple[int, Any, str]:
    """``(kind, value, SQL literal of the value)``."""
    kind = rng.choices(range(8), weights=[8, 1, 1, 1, 1, 1, 1, 1])[0]
    if kind == 0:
        text = "null" if rng.random() < 0.15 else _to_json_text(_json(rng, 1))
        return 0, parse_json(text), f"parse_json({sql_str(text)})"
    value = [
        None,
        rng.choice([0, 7, -300, 2**40]),
        rng.choice(["z", "", "long " * 15]),
        rng.choice([0.5, -1e10]),
        Decimal(rng.choice(["1.500", "-2.125", "0.000"])),
        rng.choice([True, False]),
        dt.date(2024, 2, rng.randrange(1, 29)),
        [rng.randrange(5) for _ in range(rng.randrange(3))],
    ][kind]
    return kind, value, sql_literal(kind, value)


def sql_str(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_literal(kind: int, value: Any) -> str:
    if kind == 2:
        return sql_str(value)
    if kind == 4:
        return f"CAST('{value}' AS DECIMAL(10,3))"
    if kind == 5:
        return "true" if value else "false"
    if kind == 6:
        return f"DATE'{value.isoformat()}'"
    if kind == 7:
        return f"CAST(array({', '.join(map(str, value))}) AS ARRAY<INT>)"
    return f"CAST({value!r} AS {VALUE_TYPES[kind].upper()})"


def make_cases() -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    cases = []
    for i in range(N_CASES):
        obj, doc, text = make_doc(rng)
        kind, value, literal = make_value(rng)
        cases.append({
            "id": i, "doc": doc, "json": text, "literal": literal, "p": make_path(obj, rng),
            "p2": "$" if rng.random() < 0.25 else make_path(obj, rng),
            "p3": None if rng.random() < 0.5 else make_path(obj, rng),
            "kind": kind, "value": value,
        })
    return cases


# --- running varlake ------------------------------------------------------------------------------


def outcome(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``("ok", metadata, value)``, ``None`` (SQL NULL) or ``("error", error class)``."""
    try:
        r = fn(*args, **kwargs)
    except VarlakeError as exc:
        text = str(exc)
        return ("error", text[1 : text.index("]")] if text.startswith("[") else type(exc).__name__, text)
    if r is None:
        return None
    if isinstance(r, bool):
        return r
    return ("ok", r.metadata, r.value)


def spark_cell(cell: Any) -> Any:
    if cell is None:
        return None
    if isinstance(cell, bool):
        return cell
    return ("ok", bytes(cell.metadata), bytes(cell.value))


def _vt(case: dict[str, Any]) -> dict[str, Any]:
    return {"value_type": VALUE_TYPES[case["kind"]]} if case["kind"] else {}


def varlake_row(c: dict[str, Any]) -> dict[str, Any]:
    """Every function on one case; ``set``/``tset`` take typed values themselves (``value_type``),
    the others the value already cast to VARIANT (Spark: the ``xv`` column)."""
    v, p, x = c["doc"], c["p"], c["value"]
    xv = x if c["kind"] == 0 else cast_to_variant(x, VALUE_TYPES[c["kind"]])
    return {
        "set": outcome(variant_set, v, p, x, **_vt(c)),
        "tset": outcome(try_variant_set, v, p, x, **_vt(c)),
        "tset_nc": outcome(try_variant_set, v, p, xv, False),
        "ins": outcome(variant_insert, v, p, xv),
        "tins": outcome(try_variant_insert, v, p, xv),
        "app": outcome(variant_array_append, v, c["p2"], xv),
        "tapp": outcome(try_variant_array_append, v, c["p2"], xv),
        "del": outcome(variant_delete, v, p, c["p3"]),
        "strip": outcome(variant_strip_nulls, v),
        "strip_nc": outcome(variant_strip_nulls, v, False),
        "valid": outcome(is_valid_variant, v),
    }


# --- Spark side -------------------------------------------------------------------------------------

SCHEMA = ("id INT, v VARIANT, p STRING, p2 STRING, p3 STRING, k INT, x VARIANT, xi BIGINT, xs STRING, "
          "xd DOUBLE, xdec DECIMAL(10,3), xb BOOLEAN, xdt DATE, xa ARRAY<INT>")


def _row(c: dict[str, Any]) -> tuple:
    from pyspark.sql.types import VariantVal

    vals: list[Any] = [None] * 8
    x = c["value"]
    vals[c["kind"]] = VariantVal(x.value, x.metadata) if c["kind"] == 0 else x
    return (c["id"], VariantVal(c["doc"].value, c["doc"].metadata), c["p"], c["p2"], c["p3"], c["kind"], *vals)


def _by_kind(fn: str, tail: str = "", path: str = "p") -> str:
    """``fn(v, path, <the value column of this row's kind>[, tail])`` for every kind."""
    arms = " ".join(f"WHEN {k} THEN {fn}(v, {path}, {col}{tail})" for k, col in enumerate(VALUE_COLS))
    return f"CASE k {arms} END"


XV = "CASE k " + " ".join(f"WHEN {k} THEN {'x' if k == 0 else f'CAST({col} AS VARIANT)'}"
                          for k, col in enumerate(VALUE_COLS)) + " END"
BULK = {
    "tset": _by_kind("try_variant_set"),
    "tset_nc": "try_variant_set(v, p, xv, false)",
    "tins": "try_variant_insert(v, p, xv)",
    "tapp": "try_variant_array_append(v, p2, xv)",
    "del": "variant_delete(v, p, p3)",
    "strip": "variant_strip_nulls(v)",
    "strip_nc": "variant_strip_nulls(v, false)",
    "valid": "is_valid_variant(v)",
}
RAISING = {"set": ("tset", _by_kind("variant_set")), "ins": ("tins", "variant_insert(v, p, xv)"),
           "app": ("tapp", "variant_array_append(v, p2, xv)")}


@pytest.fixture(scope="module")
def cases() -> list[dict[str, Any]]:
    return make_cases()


@pytest.fixture(scope="module")
def expected(cases) -> list[dict[str, Any]]:
    return [varlake_row(c) for c in cases]


@pytest.fixture(scope="module")
def case_view(spark, cases) -> str:
    spark.createDataFrame([_row(c) for c in cases], SCHEMA).selectExpr("*", f"{XV} AS xv") \
        .createOrReplaceTempView("vl_patch_cases")
    return "vl_patch_cases"


def _spark_error(spark, sql: str) -> tuple[str, str] | None:
    try:
        spark.sql(sql).collect()
    except Exception as exc:  # noqa: BLE001 - any Spark error is compared by its class
        cond = getattr(exc, "getCondition", lambda: None)() or ""
        return cond, str(exc)
    return None


def test_enough_cases_and_outcomes(expected) -> None:
    """The generator reaches every outcome: successes, NULLs of try_, each error class."""
    assert len(expected) >= 2000
    kinds = {(name, r[name][0] if isinstance(r[name], tuple) else r[name])
             for r in expected for name in ("set", "ins", "app", "tset", "tins")}
    for want in [("set", "ok"), ("set", "error"), ("ins", "ok"), ("ins", "error"), ("app", "ok"), ("app", "error"),
                 ("tset", None), ("tins", None)]:
        assert want in kinds
    classes = {r[n][1] for r in expected for n in ("set", "ins", "app") if r[n] and r[n][0] == "error"}
    assert {"VARIANT_PATH_TYPE_MISMATCH", "VARIANT_DUPLICATE_KEY"} <= classes


def test_bulk_try_forms_delete_strip_valid_match_spark(spark, case_view, cases, expected) -> None:
    """≥ 2,000 cases × 8 functions in one SELECT: bytes, NULLs and validity agree exactly."""
    rows = spark.sql("SELECT id, " + ", ".join(f"{e} AS {n}" for n, e in BULK.items())
                     + f" FROM {case_view} ORDER BY id").collect()
    assert len(rows) == len(cases)
    bad = []
    for row, exp in zip(rows, expected):
        for name in BULK:
            got = spark_cell(row[name])
            want = exp[name]
            if got != want:
                bad.append((row["id"], name, cases[row["id"]]["p"], want, got))
    assert not bad, f"{len(bad)} mismatches, first: {bad[:5]}"


def test_raising_forms_agree_where_varlake_succeeds(spark, case_view, expected) -> None:
    """variant_set / variant_insert / variant_array_append on every case varlake accepts: same bytes;
    and varlake raises exactly where the try_ form is NULL in Spark (checked in the bulk test)."""
    for name, (try_name, expr) in RAISING.items():
        ok_ids = [i for i, r in enumerate(expected) if r[name] and r[name][0] == "ok"]
        assert len(ok_ids) > 300
        rows = spark.sql(f"SELECT id, {expr} AS r FROM {case_view} WHERE id IN ({','.join(map(str, ok_ids))}) "
                         "ORDER BY id").collect()
        assert [r["id"] for r in rows] == ok_ids
        for r in rows:
            assert spark_cell(r["r"]) == expected[r["id"]][name], (name, r["id"])
        for r in expected:  # a raising form fails exactly where its try_ form gives NULL (or raises too)
            if r[name] and r[name][0] == "error" and r[try_name] is not None:
                assert r[try_name][0] == "error" and r[try_name][1] == r[name][1], (name, r)


FUNCTION_OF = {"set": "variant_set", "ins": "variant_insert", "app": "variant_array_append"}


def test_errors_match_spark_one_by_one(spark, cases, expected) -> None:
    """A sample of failing cases per function and error class, written as literal SQL (Spark folds
    it while planning, so an error costs no failed job): same error class and message."""
    rng = random.Random(SEED + 1)
    checked = 0
    for name, fn in FUNCTION_OF.items():
        by_class: dict[str, list[int]] = {}
        for i, r in enumerate(expected):
            if r[name] and r[name][0] == "error" and cases[i]["json"] is not None:
                by_class.setdefault(r[name][1], []).append(i)
        for cls, ids in by_class.items():
            for i in rng.sample(ids, min(6, len(ids))):
                c = cases[i]
                path = c["p2"] if name == "app" else c["p"]
                sql = f"SELECT {fn}(parse_json({sql_str(c['json'])}), {sql_str(path)}, {c['literal']})"
                err = _spark_error(spark, sql)
                assert err is not None, (sql, expected[i][name])
                assert err[0] == cls, (sql, err)
                assert err[1].startswith(expected[i][name][2]), (err[1], expected[i][name][2])
                checked += 1
    assert checked >= 15


INVALID_PATHS = ["$", "", "a", "$.", "$..a", "$a", " $.a", "$[-1]", "$[*]", "$[ 1 ]", "$['a]", "$[2147483648]",
                 "$.a[", "$[1e2]", "$['a'b']", "$.a..b"]


def test_invalid_paths_raise_invalid_variant_path(spark) -> None:
    doc = "parse_json('{\"a\": [1, {\"b\": 2}]}')"
    v = parse_json('{"a": [1, {"b": 2}]}')
    for n, p in enumerate(INVALID_PATHS):
        lit = sql_str(p)
        calls = [("variant_set", f"variant_set({doc}, {lit}, 1)", lambda: variant_set(v, p, 1))]
        if n % 2 == 0:
            calls.append(("variant_delete", f"variant_delete({doc}, {lit})", lambda: variant_delete(v, p)))
        if n % 4 == 1:
            calls.append(("try_variant_insert", f"try_variant_insert({doc}, {lit}, 1)",
                          lambda: try_variant_insert(v, p, 1)))
        if n % 4 == 2:
            calls.append(("variant_array_append", f"variant_array_append({doc}, {lit}, 1)",
                          lambda: variant_array_append(v, p, 1)))
        for fn, sql, ours in calls:
            err = _spark_error(spark, "SELECT " + sql)
            mine = outcome(ours)
            assert err is not None and err[0] == "INVALID_VARIANT_PATH", (fn, p, err)
            assert mine[0] == "error" and mine[1] == "INVALID_VARIANT_PATH", (fn, p, mine)
            assert err[1].startswith(mine[2]), (err[1], mine[2])
    # the root path is fine for variant_array_append
    assert outcome(variant_array_append, parse_json("[1]"), "$", 2)[2] == bytes.fromhex("03020002040c010c02")


MALFORMED = [
    ("0101000161", "02010500020c01"),        # field id outside the dictionary
    ("010000", "20"),                        # decimal4 cut short
    ("010000", "4c"),                        # timestamp_ntz nanos: unknown to Spark 4.3
    ("0101000161", "02020000000202040c010c02"),  # the same key twice
    ("02", "0c01"),                          # metadata version 0
    ("0101000161", "0301000a"),              # array offset past the end
    ("0101000161", "0201000002ff"),          # object value with an unknown type id
    ("0102000161", "02010000020c01"),        # dictionary offsets past the end
]
MALFORMED_CALLS = {
    "variant_set(v, '$.b', 1)": lambda d: variant_set(d, "$.b", 1),
    "try_variant_set(v, '$.b', 1)": lambda d: try_variant_set(d, "$.b", 1),
    "try_variant_insert(v, '$.a', 1)": lambda d: try_variant_insert(d, "$.a", 1),
    "try_variant_array_append(v, '$', 1)": lambda d: try_variant_array_append(d, "$", 1),
    "variant_delete(v, '$.a')": lambda d: variant_delete(d, "$.a"),
    "variant_strip_nulls(v)": lambda d: variant_strip_nulls(d),
    "is_valid_variant(v)": lambda d: is_valid_variant(d),
}


def test_malformed_documents_fail_like_spark(spark) -> None:
    """Per malformed document: every call varlake answers runs in one query (same answers); of the
    calls varlake refuses, a few run alone (a failed Spark job each), two per error class."""
    from pyspark.sql.types import VariantVal

    rows = [(i, VariantVal(bytes.fromhex(v), bytes.fromhex(m))) for i, (m, v) in enumerate(MALFORMED)]
    spark.createDataFrame(rows, "id INT, v VARIANT").createOrReplaceTempView("vl_patch_bad")
    rng = random.Random(SEED + 3)
    seen: dict[str, int] = {}  # error class -> failing Spark jobs spent on it (two each at most)
    for i, (m, val) in enumerate(MALFORMED):
        doc = Variant.trusted(bytes.fromhex(m), bytes.fromhex(val))
        mine = {sql: outcome(fn, doc) for sql, fn in MALFORMED_CALLS.items()}
        ok = [sql for sql, o in mine.items() if not (isinstance(o, tuple) and o[0] == "error")]
        if ok:
            row = spark.sql("SELECT " + ", ".join(f"{sql} AS c{n}" for n, sql in enumerate(ok))
                            + f" FROM vl_patch_bad WHERE id = {i}").collect()[0]
            for n, sql in enumerate(ok):
                assert spark_cell(row[f"c{n}"]) == mine[sql], (i, sql, mine[sql], row[f"c{n}"])
        bad = [sql for sql in mine if sql not in ok and seen.get(mine[sql][1], 0) < 2]
        for sql in rng.sample(bad, min(1, len(bad))):
            err = _spark_error(spark, f"SELECT {sql} AS r FROM vl_patch_bad WHERE id = {i}")
            assert err is not None and mine[sql][1] == err[0], (i, sql, mine[sql], err)
            seen[mine[sql][1]] = seen.get(mine[sql][1], 0) + 1
    assert {"MALFORMED_VARIANT", "UNKNOWN_PRIMITIVE_TYPE_IN_VARIANT", "VARIANT_DUPLICATE_KEY"} <= set(seen)


def _mutants(cases: list[dict[str, Any]]) -> list[tuple[bytes, bytes]]:
    rng = random.Random(SEED + 2)
    out = []
    for c in rng.sample(cases, 900):
        m, v = bytearray(c["doc"].metadata), bytearray(c["doc"].value)
        target = v if rng.random() < 0.8 or len(m) < 2 else m
        for _ in range(rng.randrange(1, 3)):
            op = rng.randrange(4)
            if op == 0 and target:
                target[rng.randrange(len(target))] = rng.randrange(256)
            elif op == 1 and target:
                del target[rng.randrange(len(target)):]
            elif op == 2:
                target.insert(rng.randrange(len(target) + 1), rng.randrange(256))
            elif target:
                target[rng.randrange(len(target))] ^= 1 << rng.randrange(8)
        if not v:
            v = bytearray(b"\x00")
        out.append((bytes(m), bytes(v)))
    return out


def test_is_valid_variant_on_mutated_bytes(spark, cases) -> None:
    """~900 byte-mutated documents: Spark's is_valid_variant and varlake's agree on every one."""
    from pyspark.sql.types import VariantVal

    mutants = _mutants(cases)
    rows = [(i, VariantVal(v, m)) for i, (m, v) in enumerate(mutants)]
    got = spark.createDataFrame(rows, "id INT, v VARIANT").selectExpr("id", "is_valid_variant(v) AS ok") \
        .orderBy("id").collect()
    mine = [is_valid_variant((m, v)) for m, v in mutants]
    diffs = [(i, mutants[i], mine[i], r["ok"]) for i, r in enumerate(got) if r["ok"] != mine[i]]
    assert not diffs, diffs[:5]
    assert 100 < sum(mine) < len(mine) - 100  # both outcomes well represented
