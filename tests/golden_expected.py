"""Expected contents of Delta's golden tables (``../shared/testdata/delta/golden``).

Every expectation is taken from delta-io/delta, never from reading the table with
varlake: the rows are what ``connectors/golden-tables/.../GoldenTables.scala`` wrote
(its generator code is quoted in the comments) and what Delta's read suites assert
(kernel-defaults ``DeltaTableReadsSuite``, ``LogReplaySuite``, ``DeletionVectorSuite``,
``ParquetFileReaderSuite``; Spark ``DeletionVectorsSuite``; the v2 ``SparkGoldenTableTest``).

Value conventions (``canonical`` maps both sides to them): timestamps are microseconds
since the epoch (``timestamp_ntz`` as if UTC), dates are ``datetime.date``, decimals are
``Decimal``, a struct is a tuple of its field values, a list is a list, a map is a dict.
"""

from __future__ import annotations

import datetime as dt
import struct
from dataclasses import dataclass, field
from pathlib import Path
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any, Callable
from zoneinfo import ZoneInfo

from varlake.errors import (
    CorruptCheckpointError,
    CorruptCommitError,
    CorruptLogError,
    MissingCommitError,
    TableNotFoundError,
    UnsupportedFeatureError,
)

D = Decimal
I64_MAX = 2**63 - 1
I64_MIN = -(2**63)


@dataclass(frozen=True)
class Expected:
    """What reading one golden table must give."""

    columns: tuple[str, ...] = ()
    rows: Callable[[], list[tuple]] | None = None
    version: int | None = None  # latest version
    versions: dict[int, tuple[tuple[str, ...], Callable[[], list[tuple]]]] = field(default_factory=dict)
    select: tuple[str, ...] | None = None  # compare only these columns (Delta's readCols)
    error: type[Exception] | None = None
    match: str = ""
    source: str = ""  # the Delta test that asserts it


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def _micros(text: str, zone: str = "UTC") -> int:
    """``yyyy-mm-dd hh:mm:ss[.ffffff]`` in ``zone`` as microseconds since the epoch."""
    t = dt.datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone))
    return (t - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)


def _ids(*ranges: range) -> Callable[[], list[tuple]]:
    return lambda: [(i,) for r in ranges for i in r]


def _rows(rows: list[tuple]) -> Callable[[], list[tuple]]:
    return lambda: rows


# --- generators transcribed from GoldenTables.scala ----------------------------------


def _primitives() -> list[tuple]:
    # createRowWithNullValues() +: (0 until 10).map(createRow)
    rows = [tuple([None] * 10)]
    for i in range(10):
        rows.append((i, i, i, i, i % 2 == 0, float(i), float(i), str(i), bytes([i, i]), D(i)))
    return rows


def _array_complex() -> list[tuple]:
    out = []
    for i in range(10):
        d3 = [[[i] * 3, [i] * 3], [[i] * 3, [i] * 3]]
        out.append((i, d3, [d3, d3], [{str(i): i}, {str(i): i}], [(i,), (i,), (i,)]))
    return out


def _map() -> list[tuple]:
    return [
        (i, {i: i}, {i: i}, {i: i % 2 == 0}, {float(i): float(i)}, {str(i): D(i)}, {i: [(i,), (i,), (i,)]})
        for i in range(10)
    ]


def _byte(i: int) -> int:
    return (i + 128) % 256 - 128  # Scala i.byteValue() wraps


def _all_types_legacy() -> list[tuple]:
    """``generateAllTypesTable`` written with ``spark.sql.parquet.writeLegacyFormat`` (JVM in UTC).

    Delta's ParquetFileReaderSuite expects what Spark reads from the file. The file's
    array and map columns (legacy ``bag``/``array`` and ``key_value`` groups) hold only
    nulls: parquet-mr's own column statistics say null_count=200, num_values=0 for every
    leaf of them, so those six columns are expected null in all 200 rows.
    """
    return [row[:14] + (None,) * 6 for row in _all_types()]


def _all_types() -> list[tuple]:
    """``generateAllTypesTable`` rows as the generator builds them (JVM in UTC)."""
    rows = []
    for i in range(200):
        if i % 63 != 0:
            nested = (None, None) if i % 19 == 0 else (str(i), (i,) if i % 23 != 0 else None)
        else:
            nested = None
        if i % 25 != 0:
            prims = [] if i % 29 == 0 else [i, None, i + 1]
        else:
            prims = None
        if i % 8 != 0:
            single, double, with_nulls = [i], [i + 10, i + 20], [None, i + 200]
            arrays = {
                0: [single, single, with_nulls],
                1: [single, double, []],
                2: [with_nulls],
                3: [[None]],
                4: [None],
                5: [[]],
                6: [],
            }[i % 7]
        else:
            arrays = None
        structs = [(i,), None] if i % 10 != 0 else None
        if i % 28 != 0:
            map_prims = {} if i % 30 == 0 else {i: i + 2 if i % 29 != 0 else None, (i + 2 if i % 27 != 0 else i + 3): i + 9}
        else:
            map_prims = None
        map_rows = {i + 1: (i * 20,) if i % 10 == 0 else None} if i % 25 != 0 else None
        if i % 30 != 0:
            if i % 24 == 0:
                map_arrays = {}
            else:
                val1 = [i, None, i + 1] if i % 4 == 0 else []
                val2 = [] if i % 7 == 0 else [None]
                map_arrays = {i: val1, i + 1: val2}
        else:
            map_arrays = None
        rows.append(
            (
                _byte(i) if i % 72 != 0 else None,
                i if i % 56 != 0 else None,
                i if i % 23 != 0 else None,
                i + 1 if i % 25 != 0 else None,
                _f32(i * 0.234) if i % 28 != 0 else None,
                i * 234234.23 if i % 54 != 0 else None,
                D(i * 123.52).quantize(D("0.01"), ROUND_HALF_UP) if i % 67 != 0 else None,
                i % 2 == 0 if i % 87 != 0 else None,
                str(i) if i % 57 != 0 else None,
                str(i).encode() if i % 59 != 0 else None,
                dt.date(1970, 1, 1) + dt.timedelta(days=(i * 20000000) // 86400000) if i % 61 != 0 else None,
                i * 23423523 * 1000 if i % 62 != 0 else None,
                i * 234234 * 1_000_000 + 200 if i % 69 != 0 else None,  # ofEpochSecond(.., 200012 ns)
                nested,
                prims,
                arrays,
                structs,
                map_prims,
                map_rows,
                map_arrays,
            )
        )
    return rows


def _decimal_type() -> list[tuple]:
    """``parquet-decimal-type``; expected values as in ParquetFileReaderSuite."""

    def expand(n: Decimal) -> Decimal:
        return n.scaleb(5) + n

    rows = []
    for i in range(99998):
        if i % 85 == 0:
            n = D(i)
            rows.append((i, n.scaleb(-1), n, n))
        else:
            n = D(-i if i % 33 == 0 else i)
            rows.append((i, n.scaleb(-1), expand(n).scaleb(-5), expand(expand(expand(n))).scaleb(-5)))
    return rows


class _JavaRandom:
    """``java.util.Random`` (the 48-bit LCG) -- enough for ``new BigInteger(bits, rnd)``."""

    def __init__(self, seed: int) -> None:
        self.seed = (seed ^ 0x5DEECE66D) & ((1 << 48) - 1)

    def next_int(self) -> int:
        self.seed = (self.seed * 0x5DEECE66D + 0xB) & ((1 << 48) - 1)
        return self.seed >> 16  # next(32), as unsigned bits

    def next_bytes(self, n: int) -> bytearray:
        out = bytearray()
        while len(out) < n:
            r = self.next_int()
            for _ in range(min(n - len(out), 4)):
                out.append(r & 0xFF)
                r >>= 8
        return out

    def big_integer(self, bits: int) -> int:
        raw = self.next_bytes((bits + 7) // 8)
        if raw:
            raw[0] &= (1 << (8 - (8 * len(raw) - bits))) - 1
        return int.from_bytes(bytes(raw), "big")


def _decimal_various() -> list[tuple]:
    """``decimal-various-scale-precision``: fields step the scale by 6, the generated values by 3,
    so Spark's positional ``Row`` puts value k into field k, rounding HALF_UP to the field's
    scale and nulling what overflows its precision (``CheckOverflow``, nullOnOverflow)."""
    precisions = (0, 4, 7, 12, 15, 18, 25, 35, 38)
    fields = [(p, s) for p in precisions for s in range(0, p, 6)]
    with localcontext() as ctx:
        ctx.prec = 100
        return _decimal_various_rows(precisions, fields)


def _decimal_various_rows(precisions: tuple[int, ...], fields: list[tuple[int, int]]) -> list[tuple]:
    rnd = _JavaRandom(27)
    rows = []
    for i in range(3):
        values: list[Decimal | None] = []
        for p in precisions:
            for s in range(0, p, 3):
                if i == 0:
                    values.append(None)
                else:
                    v = D(rnd.big_integer(p)).scaleb(-s)
                    values.append(v if i == 1 else -v)
        row = []
        for (p, s), v in zip(fields, values):
            if v is None:
                row.append(None)
                continue
            q = v.quantize(D(1).scaleb(-s), ROUND_HALF_UP)
            row.append(q if abs(q) < D(10) ** (p - s) else None)
        rows.append(tuple(row))
    return rows


def _cm_all_types() -> list[tuple]:
    """``generateCMIcebegCompatTableHelper`` rows as DeltaTableReadsSuite expects them."""
    rows = []
    for i in range(5):
        rows.append(
            (
                i, i, i, i, float(i), float(i), D(i), i % 2 == 0, str(i), str(i).encode(),
                dt.date(2021, 11, 18),
                i * 1000,
                (str(i), (i,)),
                [i, i + 1],
                [[i, i + 1], [i + 2, i + 3]],
                [{i: [2, 3], i + 1: [4, 5]}],
                [(i,), (i,)],
                ([i, i + 1], {(i, i + 1): (i + 2,)}),
                {i: i + 1, i + 2: i + 3},
                {i + 1: (i * 20,)},
                {i: [i, None, i + 1], i + 1: []},
                {i: {i: i}, i + 1: {i + 2: i}},
            )
        )
    rows.append(tuple([None] * 22))
    return rows


_CM_COLUMNS = (
    "ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType", "decimal",
    "BooleanType", "StringType", "BinaryType", "DateType", "TimestampType", "nested_struct",
    "array_of_prims", "array_of_arrays", "array_of_map_of_arrays", "array_of_structs",
    "struct_of_arrays_maps_of_structs", "map_of_prims", "map_of_rows", "map_of_arrays", "map_of_maps",
)  # fmt: skip

_ALL_TYPES_COLUMNS = (
    "ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType", "decimal",
    "BooleanType", "StringType", "BinaryType", "DateType", "TimestampType", "TimestampNTZType",
    "nested_struct", "array_of_prims", "array_of_arrays", "array_of_structs", "map_of_prims",
    "map_of_rows", "map_of_arrays",
)  # fmt: skip

# writeBasicTimestampTable in UTC; DeltaTableReadsSuite.utcTableExpectedResult
_UTC_TIMESTAMPS = [
    (0, 1577866150001000, 1580544550000000),
    (1, 1633075760000000, 915181200000000),
    (2, 1633075760000000, 946717200000000),
    (3, -31536000000000, -31536000000000),
    (4, None, None),
]

# DeltaTableReadsSuite.expectedTimestampNtzTestRows
_TIMESTAMP_NTZ = [
    (0, 1637202600123456, 1637202600123456),
    (1, 1373043660123456, 1637202600123456),
    (2, None, 1637202600123456),
    (3, 1637202600123456, 1373043660123456),
    (4, 1373043660123456, 1373043660123456),
    (5, None, 1373043660123456),
    (6, 1637202600123456, None),
    (7, 1373043660123456, None),
    (8, None, None),
]

# writeBasicStatsAllTypesTable: the generator's JVM was in PST (the logged stats say
# "as_timestamp":"2000-01-01T00:00:00.000-08:00"), so the instant is 08:00 UTC.
_STATS_ALL_TYPES = [
    (0, 0, 0, 0, 0.0, 0.0, "0", dt.date(2000, 1, 1), _micros("2000-01-01 00:00:00", "America/Los_Angeles"), D(0))
]
_STATS_ALL_TYPES_COLUMNS = (
    "as_int", "as_long", "as_byte", "as_short", "as_float", "as_double", "as_string", "as_date",
    "as_timestamp", "as_big_decimal",
)  # fmt: skip


def _date_types(zone: str) -> Expected:
    # TimeZone.setDefault(zone); Row(Timestamp.valueOf("2020-01-01 08:09:10"), Date.valueOf("2020-01-01"))
    return Expected(
        ("timestamp", "date"),
        _rows([(_micros("2020-01-01 08:09:10", zone), dt.date(2020, 1, 1))]),
        version=0,
        source="GoldenTables.scala data-reader-date-types-$timeZoneId (standalone DeltaDataReaderSuite)",
    )


def _snapshot(n: int, tag: int) -> list[tuple]:
    return [(x, f"data-{tag}-{x}") for x in range(n)]


_SNAPSHOT_VERSIONS = {
    0: (("col1", "col2"), lambda: _snapshot(10, 0)),
    1: (("col1", "col2"), lambda: _snapshot(10, 0) + _snapshot(10, 1)),
    2: (("col1", "col2"), lambda: _snapshot(10, 2)),
    3: (("col1", "col2"), lambda: _snapshot(10, 2) + _snapshot(20, 3)),
    4: (("col1", "col2"), lambda: _snapshot(20, 3)),
}

_DELETES_CHECKPOINT = [r for r in (range(0, 5), range(10, 15), range(20, 25), range(30, 35), range(40, 45))]

#: Table directory (relative to the golden root) -> what reading it must give.
EXPECTED: dict[str, Expected] = {
    "124-decimal-decode-bug": Expected(("large_decimal",), _rows([(D(1000000),)]), version=0),
    "basic-decimal-table": Expected(
        ("part", "col1", "col2", "col3"),
        _rows(
            [
                (D("234.00000"), D("1.00"), D("2.00000"), D("3.0000000000")),
                (D("2342222.23454"), D("111.11"), D("22222.22222"), D("3333333333.3333333333")),
                (D("0.00004"), D("0.00"), D("0.00000"), D("0E-10")),
                (D("-2342342.23423"), D("-999.99"), D("-99999.99999"), D("-9999999999.9999999999")),
            ]
        ),
        version=0,
        source="DeltaTableReadsSuite 'end to end: reading basic-decimal-table'",
    ),
    "basic-dv-no-checkpoint": Expected(
        ("id",), _ids(range(2, 10)), version=1, source="DeletionVectorSuite (kernel)"
    ),
    "basic-with-inserts-deletes-checkpoint": Expected(
        ("id",),
        _ids(*_DELETES_CHECKPOINT, range(50, 66)),
        version=13,
        versions={
            4: (("id",), _ids(range(50))),
            7: (("id",), _ids(range(0, 5), range(10, 15), range(20, 25), range(30, 50))),
            10: (("id",), _ids(*_DELETES_CHECKPOINT, range(50, 60))),
            12: (("id",), _ids(*_DELETES_CHECKPOINT, range(50, 80))),
        },
        source="GoldenTables.scala basic-with-inserts-deletes-checkpoint",
    ),
    "basic-with-inserts-overwrite-restore": Expected(
        ("id",),
        _ids(range(200)),
        version=3,
        versions={
            0: (("id",), _ids(range(100))),
            1: (("id",), _ids(range(200))),
            2: (("id",), _ids(range(500, 1000))),
        },
        source="LogReplaySuite 'simple end to end with restore'",
    ),
    "basic-with-vacuum-protocol-check-feature": Expected(
        ("id", "str"),
        lambda: [(x, f"val={x}") for x in range(100)],
        version=1,
        versions={0: (("id", "str"), lambda: [(x, f"val={x}") for x in range(100)])},
        source="DeltaTableReadsSuite 'simple end to end with vacuum protocol check feature'",
    ),
    # metaData without schemaString (GoldenTables: Metadata() of an old Delta); Spark's v2
    # reader refuses them too ("Root node at key schemaString is null"), SparkGoldenTableTest.
    "canonicalized-paths-normal-b": Expected(error=CorruptCommitError, match="schemaString"),
    "canonicalized-paths-special-b": Expected(error=CorruptCommitError, match="schemaString"),
    "collations-preview-table": Expected(
        ("id", "utf8_binary_col", "utf8_lcase_col", "unicode_col"),
        _rows([]),
        version=0,
        source="DeltaTableWritesSuite (golden table with collated columns, no rows)",
    ),
    "commit-info-containing-arbitrary-operationParams-types": Expected(
        ("id", "month"),
        _rows([(1, 1), (2, 2)]),
        version=2,
        versions={0: (("id", "month"), _rows([(1, 1)])), 1: (("id", "month"), _rows([(1, 1), (2, 2)]))},
        source="GoldenTables.scala (CTAS 1,1; INSERT 2,2; OPTIMIZE ZORDER)",
    ),
    "corrupted-last-checkpoint-kernel": Expected(
        ("id",),
        _ids(range(100)),
        version=11,
        versions={5: (("id",), _ids(*[range(10)] * 6)), 10: (("id",), _ids(*[range(10)] * 11))},
        source="DeltaTableReadsSuite 'handle corrupted _last_checkpoint file'",
    ),
    "data-reader-array-complex-objects": Expected(
        ("i", "3d_int_list", "4d_int_list", "list_of_maps", "list_of_records"),
        _array_complex,
        version=0,
        source="DeltaTableReadsSuite 'table with complex array types'",
    ),
    "data-reader-date-types-America/Los_Angeles": _date_types("America/Los_Angeles"),
    "data-reader-date-types-Etc/GMT+9": _date_types("Etc/GMT+9"),
    "data-reader-date-types-JST": _date_types("Asia/Tokyo"),  # Java's "JST"
    "data-reader-date-types-UTC": _date_types("UTC"),
    "data-reader-map": Expected(
        ("i", "a", "b", "c", "d", "e", "f"), _map, version=0, source="DeltaTableReadsSuite 'table with complex map types'"
    ),
    "data-reader-nullable-field-invalid-schema-key": Expected(
        ("array_can_contain_null",), _rows([([None, None, None],)]), version=0
    ),
    "data-reader-primitives": Expected(
        (
            "as_int", "as_long", "as_byte", "as_short", "as_boolean", "as_float", "as_double",
            "as_string", "as_binary", "as_big_decimal",
        ),  # fmt: skip
        _primitives,
        version=0,
        source="DeltaTableReadsSuite 'table primitives'",
    ),
    "data-reader-timestamp_ntz-id-mode": Expected(
        ("id", "tsNtz", "tsNtzPartition"), _rows(_TIMESTAMP_NTZ), source="DeltaTableReadsSuite timestamp_ntz"
    ),
    "data-skipping-basic-stats-all-types": Expected(_STATS_ALL_TYPES_COLUMNS, _rows(_STATS_ALL_TYPES), version=0),
    "data-skipping-basic-stats-all-types-columnmapping-id": Expected(
        _STATS_ALL_TYPES_COLUMNS, _rows(_STATS_ALL_TYPES), version=0
    ),
    "data-skipping-change-stats-collected-across-versions": Expected(
        ("col1", "col2"),
        _rows([(0, 0)] * 3),
        version=4,
        versions={0: (("col1", "col2"), _rows([(0, 0)])), 2: (("col1", "col2"), _rows([(0, 0)] * 2))},
    ),
    "decimal-various-scale-precision": Expected(
        tuple(f"decimal_{p}_{s}" for p in (4, 7, 12, 15, 18, 25, 35, 38) for s in range(0, p, 6)),
        _decimal_various,
        version=0,
        source="GoldenTables.scala (java.util.Random(27)); DeltaTableReadsSuite compares with Spark",
    ),
    "deltalog-commit-info": Expected(error=CorruptCommitError, match="schemaString"),
    "deltalog-invalid-protocol-version": Expected(
        error=UnsupportedFeatureError, match="reader version 99", source="DeltaTableReadsSuite"
    ),
    "deltalog-state-reconstruction-from-checkpoint-missing-protocol": Expected(
        error=CorruptCheckpointError, match="protocol", source="SparkGoldenTableTest: DELTA_STATE_RECOVER_ERROR"
    ),
    "deltalog-state-reconstruction-without-protocol": Expected(
        error=CorruptLogError, match="no protocol", source="LogReplaySuite 'missing protocol should fail'"
    ),
    "dv-with-columnmapping": Expected(
        ("part", "col1", "col2"),
        lambda: [(x % 10, x, f"foo{x % 5}") for x in range(50) if not (x % 2 == 0 and x < 30)],
        source="DeletionVectorSuite (kernel) dv-with-columnmapping",
    ),
    "kernel-timestamp-INT96": Expected(("id", "part", "time"), _rows(_UTC_TIMESTAMPS), version=0),
    "kernel-timestamp-TIMESTAMP_MICROS": Expected(("id", "part", "time"), _rows(_UTC_TIMESTAMPS), version=0),
    "kernel-timestamp-partition-col-ISO8601": Expected(
        ("str", "ts"),
        _rows([("2024-01-01 10:00:00", 1704103200000000), ("2024-01-02 12:30:00", 1704198600000000)]),
        version=0,
    ),
    "log-replay-latest-metadata-protocol": Expected(
        ("col1", "col2"),
        lambda: [(x, None) for x in range(20)] + [(x, x % 2) for x in range(20)],
        version=2,
        versions={
            0: (("col1",), _ids(range(20))),
            1: (("col1", "col2"), lambda: [(x, None) for x in range(20)] + [(x, x % 2) for x in range(20)]),
        },
        source="LogReplaySuite 'fetches the latest protocol and metadata'",
    ),
    "log-replay-special-characters-a": Expected(("intCol",), _rows([]), version=1, source="LogReplaySuite"),
    "log-store-listFrom": Expected(error=TableNotFoundError, match="no Delta table"),
    "multi-part-checkpoint": Expected(
        ("id",), _ids(range(1), range(30)), version=1, versions={0: (("id",), _ids(range(1)))}
    ),
    "only-checkpoint-files": Expected(
        ("id",),
        _ids(range(5, 10), range(20)),
        version=2,
        versions={0: (("id",), _ids(range(10))), 1: (("id",), _ids(range(5, 10)))},
        source="LogReplaySuite 'end to end only checkpoint files'",
    ),
    "parquet-all-types-legacy-format": Expected(_ALL_TYPES_COLUMNS, _all_types_legacy, version=0),
    "parquet-decimal-type": Expected(("id", "col1", "col2", "col3"), _decimal_type, version=0),
    "snapshot-data1": Expected(
        ("col1", "col2"), _SNAPSHOT_VERSIONS[1][1], version=1, versions={0: _SNAPSHOT_VERSIONS[0]}
    ),
    "snapshot-data2-deleted": Expected(
        ("col1", "col2"), _SNAPSHOT_VERSIONS[4][1], version=4, versions={v: _SNAPSHOT_VERSIONS[v] for v in range(4)}
    ),
    "snapshot-repartitioned": Expected(("col1", "col2"), _SNAPSHOT_VERSIONS[4][1], version=5, versions=dict(_SNAPSHOT_VERSIONS)),
    "table-with-columnmapping-mode-name": Expected(_CM_COLUMNS, _cm_all_types, source="DeltaTableReadsSuite"),
    "table-with-dv-small": Expected(
        ("value",),
        _ids(range(1, 9)),
        version=1,
        versions={0: (("value",), _ids(range(10)))},
        source="DeletionVectorsSuite (Spark) table2",
    ),
    "time-travel-partition-changes-a": Expected(("id", "part5"), lambda: [(i, i % 5) for i in range(10)], version=0),
    "time-travel-schema-changes-a": Expected(("id",), _ids(range(10)), version=0),
    "time-travel-start": Expected(("id",), _ids(range(10)), version=0),
    "time-travel-start-start20-start40": Expected(
        ("id",),
        _ids(range(30)),
        version=2,
        versions={0: (("id",), _ids(range(10))), 1: (("id",), _ids(range(20)))},
    ),
    "type-widening-nested": Expected(
        ("struct", "map", "array"),
        _rows([((1,), {2: 3}, [4, 5]), ((I64_MAX,), {I64_MAX: I64_MAX}, [I64_MAX, I64_MIN])]),
        select=("struct", "map", "array"),
        source="DeltaTableReadsSuite 'table with type widening to nested types'",
    ),
    "v2-checkpoint-json": Expected(
        ("id",),
        _ids(range(10)),
        version=2,
        versions={0: (("id",), _rows([])), 1: (("id",), _rows([]))},
        source="GoldenTables.scala v2-checkpoint-$ckptFormat",
    ),
    "versions-not-contiguous": Expected(
        error=MissingCommitError, match="version 1", source="DeltaTableReadsSuite 'versions are not contiguous'"
    ),
}


def canonical(value: Any) -> Any:
    """A hashable, order-insensitive-for-maps form of a value (expected or read)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return (value - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)
    if isinstance(value, Decimal):
        return ("dec", str(value.normalize()) if value else "0")
    if isinstance(value, dict):
        return ("map", tuple(sorted(((canonical(k), canonical(v)) for k, v in value.items()), key=repr)))
    if isinstance(value, (list, tuple)):
        return tuple(canonical(v) for v in value)
    return value


# --- shared by the golden-table tests ---------------------------------------------------------

#: Delta's golden tables as ../shared/testdata holds them
GOLDEN = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "delta" / "golden"


def spark_plain(value: Any) -> Any:
    """A value PySpark collected, as the expectations hold it (Rows as tuples, bytes, hashable keys)."""
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, dt.datetime):
        raise AssertionError("timestamps must be selected as unix_micros")
    if isinstance(value, dict):
        return {hashable(spark_plain(k)): spark_plain(v) for k, v in value.items()}
    if isinstance(value, tuple):  # pyspark Row (a struct)
        return tuple(spark_plain(v) for v in value)
    if isinstance(value, list):
        return [spark_plain(v) for v in value]
    return value


def hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def canonical_rows(rows: list[tuple]) -> list[str]:
    """Rows in an order-insensitive, comparable form."""
    return sorted(repr(canonical(tuple(r))) for r in rows)


def arrow_value(value: Any, dtype: Any) -> Any:
    """A ``to_pylist`` value in the conventions of the expectations (struct -> tuple, map -> dict)."""
    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_struct(dtype):
        return tuple(arrow_value(value[f.name], f.type) for f in dtype)
    if pa.types.is_map(dtype):
        return {hashable(arrow_value(k, dtype.key_type)): arrow_value(v, dtype.item_type) for k, v in value}
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return [arrow_value(v, dtype.value_type) for v in value]
    return value


#: Delta's ScanSuite "basic data skipping for all types": column -> (the value in the table,
#: a smaller literal, a bigger literal)
SKIPPING_LITERALS = {
    "as_int": ("0", "-1", "1"),
    "as_long": ("0", "-1", "1"),
    "as_byte": ("0", "-1", "1"),
    "as_short": ("0", "-1", "1"),
    "as_float": ("0", "-1", "1"),
    "as_double": ("0", "-1", "1"),
    "as_string": ("'0'", "'!'", "'1'"),
    "as_date": ("DATE'2000-01-01'", "DATE'1999-01-01'", "DATE'2000-01-02'"),
    "as_big_decimal": ("0", "-1", "1"),
}
