"""A deterministic JSON corpus for the Spark oracle tests of the Variant codec.

``random_documents`` draws documents from a seeded ``random.Random`` (the same text on
every run and machine), writing the JSON text itself so that whitespace, escapes,
number spellings and key orders vary the way real input does. ``edge_cases`` holds
hand-written documents for every limit the codec has (short-string length, offset and
id widths, nesting depth, number length, int64/decimal(38) bounds) and for invalid or
trailing input. ``big_document`` is the single document whose value passes 16 MiB.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Iterator

SEED = 20_250_301

# Keys shared across documents so that dictionaries repeat; some are non-ASCII, one holds
# a character >= U+E000 and one a supplementary character (their UTF-8 and UTF-16 orders differ).
KEY_POOL = (
    "id", "name", "type", "value", "ts", "user", "tags", "a", "b", "B", "_", "", " ", "aa", "ab",
    "é", "ü", "z", "日本", "键", "ключ", "\u2028", "a\"b", "a\\b", "tab\there", "nl\nx", "\x01",
    "emoji\U0001f600", "payload", "nested", "k" * 70,
)
# Keys of which some pairs sort differently by UTF-8 bytes and by UTF-16 code units
# ("\ue000" < "\U00010000" in UTF-8, > in UTF-16); drawn rarely.
ORDER_SPLIT_KEYS = ("\U00010000", "\U0001f600x", "\ue000", "\uffff", "\ufb01x")

_WS = (" ", "\t", "\n", "\r", "  ", "\n  ")
_SHORT_ESCAPES = ('\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t")


class JsonWriter:
    """Random JSON text from one seeded ``random.Random``."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    # --- pieces -----------------------------------------------------------------------

    def ws(self) -> str:
        return self.r.choice(_WS) if self.r.random() < 0.15 else ""

    def char(self) -> str:
        """One character of a JSON string body, raw or escaped."""
        r = self.r
        k = r.random()
        if k < 0.55:
            return r.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.,:;!?#$%&'()*+<=>@[]^`{|}~")
        if k < 0.62:
            return r.choice(_SHORT_ESCAPES)
        if k < 0.67:  # escaped control character
            hexd = f"{r.randrange(0x20):04x}"
            return "\\u" + (hexd.upper() if r.random() < 0.5 else hexd)
        if k < 0.72:  # escaped BMP character (no surrogates)
            cp = r.choice([r.randrange(0x20, 0xD800), r.randrange(0xE000, 0x10000)])
            return f"\\u{cp:04X}" if r.random() < 0.5 else f"\\u{cp:04x}"
        if k < 0.75:  # escaped surrogate pair
            cp = r.randrange(0x10000, 0x110000) - 0x10000
            return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04X}"
        if k < 0.85:  # raw BMP: Latin, Greek, CJK, line separators, DEL/C1, private use, specials
            return chr(r.choice([
                r.randrange(0xA0, 0x250), r.randrange(0x370, 0x400), r.randrange(0x4E00, 0x9FFF),
                0x2028, 0x2029, 0x7F, r.randrange(0x80, 0xA0), 0xFEFF, r.randrange(0xE000, 0xF900), 0xFFFD,
            ]))
        return chr(r.randrange(0x10000, 0x110000) if r.random() < 0.5 else r.randrange(0x1F300, 0x1FAFF))

    def string(self, max_len: int = 12) -> str:
        r = self.r
        if r.random() < 0.1:  # around the 63-byte short-string limit
            n = r.randint(55, 70)
        else:
            n = r.randint(0, max_len)
        return '"' + "".join(self.char() for _ in range(n)) + '"'

    def integer(self) -> str:
        r = self.r
        k = r.random()
        if k < 0.1:
            return str(r.choice([127, 128, -128, -129, 32767, 32768, -32768, -32769, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1,
                                 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 0, 10**38 - 1, -(10**38) + 1, 10**38]))
        digits = r.randint(1, 40) if k < 0.3 else r.randint(1, 12)
        text = str(r.randrange(10 ** (digits - 1) if digits > 1 else 0, 10**digits))
        return ("-" if r.random() < 0.3 else "") + text

    def fraction(self) -> str:
        r = self.r
        whole = str(r.randrange(10 ** r.randint(0, 20))) if r.random() < 0.8 else "0"
        frac = "".join(r.choice("0123456789") for _ in range(r.randint(1, 25)))
        if r.random() < 0.2:
            frac += "0" * r.randint(1, 5)
        return ("-" if r.random() < 0.3 else "") + whole + "." + frac

    def exponent_number(self) -> str:
        r = self.r
        mant = str(r.randrange(1, 10 ** r.randint(1, 20)))
        if r.random() < 0.5:
            mant = mant[0] + "." + (mant[1:] or "0")
        exp = r.choice([0, 1, 2, 5, 10, 22, 23, 100, 300, 307, 308, 309, 320, 324, 400, r.randint(0, 350)])
        sign = "-" if r.random() < 0.3 else ""
        return f"{sign}{mant}{r.choice('eE')}{r.choice(['', '+', '-'])}{exp}"

    def number(self) -> str:
        k = self.r.random()
        if k < 0.45:
            return self.integer()
        if k < 0.8:
            return self.fraction()
        if k < 0.95:
            return self.exponent_number()
        return repr(self.r.uniform(-1e6, 1e6))

    def key(self) -> str:
        r = self.r
        k = r.random()
        if k < 0.02:
            return json.dumps(r.choice(ORDER_SPLIT_KEYS), ensure_ascii=r.random() < 0.5)
        if k < 0.85:
            return json.dumps(r.choice(KEY_POOL), ensure_ascii=r.random() < 0.3)
        return self.string(8)

    # --- documents -----------------------------------------------------------------------

    def value(self, depth: int) -> str:
        r = self.r
        k = r.random()
        if depth > 0 and k < 0.25:
            return self.obj(depth - 1)
        if depth > 0 and k < 0.42:
            return self.array(depth - 1)
        if k < 0.6:
            return self.string()
        if k < 0.88:
            return self.number()
        return r.choice(["true", "false", "null"])

    def obj(self, depth: int) -> str:
        r = self.r
        n = r.randint(0, 300) if r.random() < 0.02 else r.randint(0, 7)
        seen: set[str] = set()
        parts = []
        for _ in range(n):
            key = self.key()
            decoded = json.loads(key)
            if decoded in seen:  # no duplicate keys here: they get their own documents
                continue
            seen.add(decoded)
            parts.append(f"{self.ws()}{key}{self.ws()}:{self.ws()}{self.value(depth)}{self.ws()}")
        return "{" + ",".join(parts) + self.ws() + "}"

    def array(self, depth: int) -> str:
        r = self.r
        n = r.randint(0, 300) if r.random() < 0.02 else r.randint(0, 7)
        return "[" + ",".join(f"{self.ws()}{self.value(depth)}{self.ws()}" for _ in range(n)) + self.ws() + "]"

    def document(self) -> str:
        r = self.r
        root = r.random()
        if root < 0.55:
            body = self.obj(r.randint(0, 5))
        elif root < 0.75:
            body = self.array(r.randint(0, 4))
        else:
            body = self.value(0)
        return self.ws() + body + self.ws()

    def duplicate_key_document(self) -> str:
        """An object (maybe nested) with at least one repeated key."""
        r = self.r
        keys = [json.dumps(r.choice(KEY_POOL[:12])) for _ in range(r.randint(2, 8))]
        keys.append(r.choice(keys))
        r.shuffle(keys)
        inner = ",".join(f"{k}:{self.value(2)}" for k in keys)
        doc = "{" + inner + "}"
        return '{"outer":' + doc + ',"x":[' + doc + "]}" if r.random() < 0.3 else doc


def random_documents(n: int, seed: int = SEED) -> list[str]:
    """``n`` seeded random JSON documents (valid, no duplicate keys)."""
    w = JsonWriter(seed)
    return [w.document() for _ in range(n)]


def duplicate_key_documents(n: int, seed: int = SEED + 1) -> list[str]:
    w = JsonWriter(seed)
    return [w.duplicate_key_document() for _ in range(n)]


# --- hand-written edge cases ------------------------------------------------------------------


def _nest(depth: int, kind: str) -> str:
    if kind == "array":
        return "[" * depth + "1" + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def _mixed_nest(depth: int) -> str:
    out, close = [], []
    for i in range(depth):
        if i % 2:
            out.append('{"k":')
            close.append("}")
        else:
            out.append("[")
            close.append("]")
    return "".join(out) + "null" + "".join(reversed(close))


def _sized_string(n_bytes: int, unit: str) -> str:
    """A JSON string of exactly ``n_bytes`` UTF-8 bytes built from ``unit`` plus ASCII filler."""
    size = len(unit.encode("utf-8"))
    count = n_bytes // size
    return json.dumps(unit * count + "x" * (n_bytes - count * size), ensure_ascii=False)


def edge_cases() -> list[tuple[str, str]]:
    """``(name, text)`` pairs; names say what each case checks."""
    cases: list[tuple[str, str]] = []
    add = lambda name, text: cases.append((name, text))  # noqa: E731

    # scalars and literals
    for lit in ["null", "true", "false", "0", "-0", "1", "-1", '""', "{}", "[]", "[[]]", "{\"\":{}}", "[{}]", " [ ] ", "\n{\n}\n"]:
        add(f"scalar {lit!r}", lit)
    # integers at every width boundary and beyond int64
    for v in [127, 128, -128, -129, 32767, 32768, -32768, -32769, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1,
              2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**18, 10**19, 10**37, 10**38 - 1, 10**38, -(10**38) + 1, -(10**38)]:
        add(f"int {v}", str(v))
    # decimals: precision/scale limits of decimal4/8/16, trailing zeros, zeros
    for t in ["0.0", "-0.0", "0.000", "-0.000", "1.0", "1.50", "0.1", "-0.001", "123456789.0", "1234567890.5", "0.000000001",
              "0.0000000001", "12345678.9", "999999999", "9.99999999", "999999999999999999.0", "0.123456789012345678",
              "0." + "0" * 37 + "1", "0." + "0" * 38 + "1", "1" * 38 + ".0", "1" * 39 + ".0", "1" * 19 + "." + "1" * 19,
              "1" * 20 + "." + "1" * 19, "-" + "9" * 38, "9" * 37 + ".9", "0." + "9" * 38, "0." + "9" * 39, "1" + "0" * 37 + ".0",
              "123.4560000", "-0.00000000000000000000000000000000000000"]:
        add(f"decimal {t[:50]}", t)
    # doubles: exponents, overflow, underflow, the E-notation thresholds of Double.toString
    for t in ["1e0", "1E0", "1e+0", "1e-0", "1.5e3", "-2.5E-3", "1e7", "1e6", "9999999e0", "1e-3", "0.9e-3", "1e23", "2e23",
              "1e22", "5e-324", "4.9e-324", "2.4e-324", "1e-400", "-1e-400", "1.7976931348623157e308", "1.7976931348623158e308",
              "1e308", "1e309", "-1e309", "2.2250738585072014e-308", "2.225073858507201e-308", "123456789012345678901234567890e-5",
              "0e0", "-0e0", "0.0e5", "1.00000000000000011e0", "9007199254740993e0", "1e" + "0" * 20 + "5", "0.1e1", "3.14159265358979323846e0"]:
        add(f"double {t[:50]}", t)
    # number-length limit of Jackson (1000 digits), in and out of containers
    for name, t in [("int 1000 digits", "1" * 1000), ("int 1001 digits", "1" * 1001), ("neg int 1000 digits", "-" + "1" * 1000),
                    ("fraction 1000 digits", "0." + "1" * 1000), ("fraction 1001 digits", "0." + "1" * 1001),
                    ("int+fraction 1001 at end", "1" * 500 + "." + "1" * 501), ("int+fraction 1001 in array", "[" + "1" * 500 + "." + "1" * 501 + "]"),
                    ("int+fraction 1000 in array", "[" + "1" * 500 + "." + "1" * 500 + "]"),
                    ("mantissa+exponent 1000", "1." + "1" * 997 + "e11"), ("mantissa+exponent 1001", "1." + "1" * 998 + "e11"),
                    ("int+exponent 1001 at end", "1" * 600 + "e" + "1" * 401), ("int+exponent 1001 then space", "1" * 600 + "e" + "1" * 401 + " "),
                    ("zero fraction 1001 in array", "[0." + "1" * 1000 + "]"), ("zero fraction exponent 1001", "[0." + "1" * 999 + "e1]"),
                    ("exponent 1000 digits", "1e" + "1" * 1000), ("exponent 1001 digits", "1e" + "1" * 1001),
                    ("int 1000 digits in object", '{"n":' + "1" * 1000 + "}"), ("int 1001 digits in object", '{"n":' + "1" * 1001 + "}")]:
        add(name, t)
    # strings: escapes, unicode, control characters, the 63-byte short-string limit
    add("escapes", r'"\" \\ \/ \b \f \n \r \t"')
    add("unicode escapes", r'"\u0041\u00e9\u00E9\u4e2d\uFFFF\u2028\u2029\u007f\u0080"')
    add("control escapes", '"' + "".join(f"\\u{i:04x}" for i in range(32)) + '"')
    add("surrogate pair escape", r'"\ud83d\ude00 \uD800\uDC00 \uDBFF\uDFFF"')
    add("raw supplementary", '"\U0001f600\U00010000\U0010ffff"')
    add("raw separators", '"\u2028\u2029\ufeff\x7f\x80\x9f"')
    add("lone high surrogate", r'"\ud800"')
    add("lone low surrogate", r'"\udc00"')
    add("reversed surrogates", r'"\udc00\ud800"')
    add("surrogate in key", r'{"\ud800":1}')
    add("raw control char", '"a\x01b"')
    add("raw newline in string", '"a\nb"')
    add("raw tab in string", '"a\tb"')
    add("bad escape", r'"\x41"')
    add("short unicode escape", r'"\u12"')
    add("unterminated string", '"abc')
    for n in (62, 63, 64, 65):
        add(f"ascii string {n} bytes", _sized_string(n, "a"))
        add(f"2-byte chars {n} bytes", _sized_string(n, "é"))
        add(f"3-byte chars {n} bytes", _sized_string(n, "中"))
        add(f"4-byte chars {n} bytes", _sized_string(n, "\U0001f600"))
        add(f"key of {n} bytes", "{" + _sized_string(n, "é") + ":1}")
    add("multibyte crossing 63", json.dumps("x" * 61 + "中", ensure_ascii=False))
    add("multibyte crossing 64", json.dumps("x" * 62 + "中", ensure_ascii=False))
    add("long key 50000", '{"' + "k" * 50000 + '":1}')
    add("long key 50001", '{"' + "k" * 50001 + '":1}')
    # containers: widths of offsets and ids, large counts
    add("array 255 elements", json.dumps(list(range(255))))
    add("array 256 elements", json.dumps(list(range(256))))
    add("array 70000 elements", json.dumps([0] * 70000))
    add("object 255 fields", json.dumps({f"f{i:03d}": i for i in range(255)}))
    add("object 256 fields", json.dumps({f"f{i:03d}": i for i in range(256)}))
    add("object 300 fields reversed", json.dumps({f"f{i:03d}": i for i in reversed(range(300))}))
    add("value 255 bytes", json.dumps(["x" * 248]))
    add("value 256 bytes", json.dumps(["x" * 249]))
    add("value 300 bytes", json.dumps({"a": "x" * 290}))
    add("value 65535 bytes", json.dumps(["x" * 65_528]))
    add("value 65536 bytes", json.dumps(["x" * 65_529]))
    add("value 70000 bytes object", json.dumps({"a": "x" * 70_000, "b": [1, 2]}))
    add("dictionary 256 keys", json.dumps([{f"k{i}": i} for i in range(256)]))
    add("dictionary 300 keys in one object", json.dumps({f"key{i}": None for i in range(300)}))
    add("dictionary strings over 255 bytes", json.dumps({("k" * 30) + str(i): i for i in range(10)}))
    add("dictionary strings over 65535 bytes", json.dumps({("key" * 10) + str(i): i for i in range(2200)}))
    add("dictionary 65537 keys", json.dumps({f"{i:x}": 0 for i in range(65_537)}))
    add("field ids over 255", json.dumps([{f"a{i}": 0 for i in range(300)}, {"a299": 1, "a0": 2}]))
    add("shared keys", '[{"a":1,"b":2},{"b":3,"a":4},{"c":{"a":5}}]')
    add("insertion order vs sorted", '{"zebra":1,"apple":2,"Mango":3,"_x":4,"10":5,"9":6}')
    add("utf8 vs utf16 key order", '{"\ue000":1,"\U00010000":2,"a":3}')
    add("utf8 vs utf16 nested keys", '[{"\uffff":{"\U0001f600":1,"\ufb01":2}},{"x\ue000":0,"x\U00010000":1}]')
    add("empty key", '{"":1,"a":{"":2}}')
    add("keys differing by case", '{"a":1,"A":2,"aA":3,"Aa":4}')
    # nesting
    for d in (1, 2, 100, 999, 1000, 1001):
        add(f"array depth {d}", _nest(d, "array"))
        add(f"object depth {d}", _nest(d, "object"))
    add("mixed depth 1000", _mixed_nest(1000))
    add("mixed depth 1001", _mixed_nest(1001))
    add("empty containers nested", '{"a":[],"b":{},"c":[[],{}],"d":[{"e":[]}]}')
    # duplicate keys (default: rejected)
    add("duplicate key", '{"a":1,"a":2}')
    add("duplicate key nested", '{"x":{"a":1,"b":2,"a":3}}')
    # trailing content after the first value
    for t in ['{"a":1} x', '{"a":1}{"b":2}', "[1]]", "[1] [2]", '"x" y', '"x"y', "1 2", "1 ,", "1,", "1]", "1x", "1 x",
              "true false", "truex", "true]", "true,", "true ", "null1", "null_", "null$", "null\u00bd", "null\u20ac",
              "false\U0001d400", "true\u0301", "{}garbage", "[]\x00", "123\x00", "1\t", "1\r\n", "0 1", "-1 ", "1.5x",
              "1.5 x", "0x10", "1e5x", '"a"\x00', "nulll", "{} // comment", "{}  \n  ]"]:
        add(f"trailing {t!r}", t)
    # invalid JSON
    for t in ["", " ", "\n", "{", "[", "}", "]", "[1,]", "[,1]", '{"a"}', '{"a":}', '{"a" 1}', '{a:1}', "{'a':1}", "'a'",
              "NaN", "Infinity", "-Infinity", "+1", ".5", "1.", "01", "-01", "00", "1e", "1e+", "-", "--1", "1.e5",
              "tru", "True", "NULL", "nul", "/*c*/1", "# c\n1", "\ufeff{}", "\f1", "\u00a01", '{"a":1,}', "[1 2]",
              '{"a":1 "b":2}', "[\"a\",]", "{\"a\":1}}", "\"\\uZZZZ\"", "[-]", "[1e]", "[.1]", "[01]", "{\"a\":01}"]:
        add(f"invalid {t!r}", t)
    return cases


def big_document() -> tuple[str, str]:
    """The one document over 16 MiB: 4-byte offsets in both an object and an array."""
    return ("value over 16 MiB", '{"big":["' + "x" * (16 * 1024 * 1024 + 10) + '"],"small":[1,2,3]}')


@functools.lru_cache(maxsize=1)
def corpus(n_random: int = 2200) -> tuple[tuple[str, str], ...]:
    """Edge cases and seeded random documents, without the big one."""
    docs = list(edge_cases())
    docs += [(f"random {i}", t) for i, t in enumerate(random_documents(n_random))]
    return tuple(docs)


def iter_keys(text: str) -> Iterator[list[str]]:
    """Key lists of every object in ``text`` (valid JSON)."""
    stack: list[list[str]] = []

    def hook(pairs: list[tuple[str, object]]) -> dict:
        stack.append([k for k, _ in pairs])
        return {}

    json.loads(text, object_pairs_hook=hook)
    yield from stack


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def utf16_order_differs(text: str) -> bool:
    """Whether some object of ``text`` sorts its keys differently by UTF-8 bytes and by UTF-16
    code units (Spark orders field ids by the latter; the spec and varlake by the former)."""
    if not any(ord(ch) >= 0xE000 for ch in text) and "\\u" not in text.lower():
        return False
    try:
        for keys in iter_keys(text):
            if sorted(keys, key=lambda k: k.encode("utf-8", "surrogatepass")) != sorted(keys, key=_utf16_key):
                return True
    except (ValueError, RecursionError):
        return False
    return False
