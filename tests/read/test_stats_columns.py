"""Integral bounds decoded column-wise by Arrow (``read.stats_columns``) equal the bounds
``delta.stats.file_stats`` decodes file by file, for any stats text a log may hold."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.delta.schema import parse_schema
from varlake.delta.stats import file_stats
from varlake.read.file_index import IntBounds
from varlake.read.stats_columns import integral_bounds

SCHEMA = parse_schema(json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "s", "type": {"type": "struct", "fields": [{"name": "n", "type": "integer", "nullable": True, "metadata": {}}]},
     "nullable": True, "metadata": {}}]}))  # fmt: skip
LONG = 2**63 - 1

ODD_TEXTS = [
    None, "", "  ", "null", "5", "[1]", '"x"', "{}", '{"minValues":null}', '{"minValues":5}',
    '{"minValues":{"id":1},"maxValues":{"id":9}}', '{"minValues":{"id":1.0},"maxValues":{"id":9}}',
    '{"minValues":{"id":1e2}}', '{"minValues":{"id":true}}', '{"minValues":{"id":"3"}}',
    f'{{"minValues":{{"id":{LONG + 1}}}}}', f'{{"minValues":{{"id":{-LONG - 1}}},"maxValues":{{"id":{LONG}}}}}',
    '{"minValues":{"id":1,"id":2}}', '{"minValues":{"id":1},"minValues":{"id":2}}',
    '{"minValues":{"id":1}}{"minValues":{"id":2}}', '{"minValues":{"id":1}}}{"v":{"minValues":{"id":7}}',
    '{"minValues":\n{"id":4}}', '{"minValues":{"id":4},\r"maxValues":{"id":5}}',
    '{"minValues":{"id":3},"x":"\\ud800"}', '{"minValues":{"id":3},"x":"\\ud83d\\ude00"}',
    '{"minValues":{"id":2},"deep":' + "[" * 1500 + "]" * 1500 + "}",
    '{"minValues":{"id":2},"deep":' + "[" * 300 + "]" * 300 + "}",
    '{"minValues":{"id":2},"x":NaN,"y":-Infinity}', '{"minValues":{"id":2},"x":1.5,"k":"\\ud83d\\ude00"}', '{"minValues":{"id":2},"x":1e999999}',
    '{"minValues":{"id":2}} /* c */', '{"minValues":{"id":-0}}', '{"minValues":{"id":01}}',
    '{"minValues":{"s":{"n":3}},"maxValues":{"s":5}}', '{"minValues":{"s":{"n":3}},"maxValues":{"s":{"n":4}}}',
    '{"minValues":{"id":2},"s":"\t"}', '\ufeff{"minValues":{"id":2}}', '{"minValues":{"id":2}}\x00',
]  # fmt: skip


def _python(texts: list[str | None], path: tuple[str, ...]) -> list[tuple[object, object]]:
    out = []
    for text in texts:
        s = file_stats(text, SCHEMA)
        out.append((s.min_values.get(path), s.max_values.get(path)))
    return out


def _same(texts: list[str | None], path: tuple[str, ...]) -> None:
    pairs = _python(texts, path)
    expected = IntBounds(pairs)
    columns = integral_bounds(pa.array(texts, pa.string()), path)
    got = IntBounds(pairs, columns)
    assert np.array_equal(got.has_lo, expected.has_lo) and np.array_equal(got.has_hi, expected.has_hi), texts
    assert np.array_equal(got.lo[got.has_lo], expected.lo[expected.has_lo]), texts
    assert np.array_equal(got.hi[got.has_hi], expected.hi[expected.has_hi]), texts


@pytest.mark.parametrize("text", ODD_TEXTS)
@pytest.mark.parametrize("path", [("id",), ("s", "n")])
def test_each_odd_text_alone_and_among_good_ones(text: str | None, path: tuple[str, ...]) -> None:
    good = '{"minValues":{"id":-4,"s":{"n":1}},"maxValues":{"id":40,"s":{"n":2}}}'
    _same([text], path)
    _same([good, text, None, good], path)


def test_good_texts_are_decoded_by_arrow() -> None:
    texts = ['{"numRecords":3,"minValues":{"id":%d},"maxValues":{"id":%d}}' % (i, i + 5) for i in range(50)]
    texts[7] = '{"minValues":\n{"id":4}}'  # a line break: left to Python, the others still by Arrow
    texts[9] = None
    columns = integral_bounds(pa.chunked_array([texts[:20], texts[20:]], pa.string()), ("id",))
    assert columns is not None
    lo, hi, has_lo, has_hi, odd = columns
    assert odd.tolist() == [i == 7 for i in range(50)]
    assert has_lo.tolist() == [i not in (7, 9) for i in range(50)]
    assert lo[10] == 10 and hi[10] == 15
    _same(texts, ("id",))


texts = st.one_of(
    st.none(),
    st.sampled_from(ODD_TEXTS),
    st.builds(
        lambda lo, hi, extra: json.dumps({"minValues": {"id": lo}, "maxValues": {"id": hi}, **extra}),
        st.one_of(st.none(), st.integers(-LONG - 2, LONG + 2), st.floats(allow_nan=False), st.booleans(), st.text(max_size=3)),
        st.one_of(st.none(), st.integers(-LONG - 2, LONG + 2)),
        st.dictionaries(st.text(max_size=3), st.one_of(st.integers(), st.text(max_size=3)), max_size=2),
    ),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(batch=st.lists(texts, max_size=8))
def test_any_batch_decodes_as_python_does(batch: list[str | None]) -> None:
    _same(batch, ("id",))
