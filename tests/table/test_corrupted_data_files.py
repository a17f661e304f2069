"""A corrupted data file reads right or fails with a named error naming it (issue 11 item 8).

Bit flips anywhere in a file varlake wrote (pages, page headers, footer, magic), and
truncations, read through ``Table.scan``: never a raw exception, never other values.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from varlake import Table
from varlake.errors import VarlakeError


def _table(tmp_path: Path) -> tuple[Table, Path, list[dict]]:
    t = Table.create(tmp_path / "t", "id bigint, s string, v variant")
    t.append([{"id": i, "s": f"s{i % 13}", "v": {"a": i, "b": [i, f"x{i % 7}"], "c": {"d": i * 0.5}}} for i in range(800)])
    (add,) = t.files()
    return t, tmp_path / "t" / add.path, t.scan().to_arrow().to_pylist()


def _read(root: Path) -> list[dict]:
    return Table(root).scan().to_arrow().to_pylist()


def test_bit_flips_anywhere_in_a_data_file(tmp_path: Path) -> None:
    table, data_file, expected = _table(tmp_path)
    clean = data_file.read_bytes()
    rng = random.Random(3)
    named = wrong = 0
    # Every footer byte region gets flips too: the last 2 KiB hold the footer and magic.
    spots = [rng.randrange(len(clean)) for _ in range(150)] + [len(clean) - 1 - rng.randrange(min(2048, len(clean))) for _ in range(150)]
    for at in spots:
        broken = bytearray(clean)
        broken[at] ^= 1 << rng.randrange(8)
        data_file.write_bytes(bytes(broken))
        try:
            got = _read(table.path)
        except VarlakeError as exc:
            assert data_file.name in str(exc), str(exc)
            named += 1
            continue
        wrong += got != expected
    data_file.write_bytes(clean)
    assert wrong <= 3, f"{wrong} of {len(spots)} flips read as other values"  # < 1%
    assert named > len(spots) // 2


@pytest.mark.parametrize("keep", [0, 3, 4, 8, 100, -9, -8, -4, -1])
def test_truncated_data_file(tmp_path: Path, keep: int) -> None:
    table, data_file, _ = _table(tmp_path)
    clean = data_file.read_bytes()
    data_file.write_bytes(clean[:keep] if keep >= 0 else clean[:keep])
    with pytest.raises(VarlakeError, match=data_file.name):
        _read(table.path)
