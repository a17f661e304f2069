"""varlake.spark.writing.sampling: driver-side line samples spread over files and byte ranges."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from varlake.spark.writing.sampling import sample_lines


def _write(path: Path, lines: list[bytes], sep: bytes = b"\n") -> str:
    path.write_bytes(sep.join(lines) + sep)
    return str(path)


def test_lines_come_from_across_a_file_never_cut_or_twice(tmp_path: Path) -> None:
    lines = [b'{"i": %d, "pad": "%s"}' % (i, b"x" * (i % 37)) for i in range(10_000)]
    path = _write(tmp_path / "a.jsonl", lines)
    got = sample_lines([path], 800)
    assert 700 <= len(got) <= 800
    assert set(got) <= set(lines) and len(set(got)) == len(got)
    ids = sorted(int(line.split(b",")[0].split(b":")[1]) for line in got)
    assert ids[0] < 200 and ids[-1] > 8_700  # the start and the end of the file both sampled


def test_every_file_contributes_and_crlf_is_stripped(tmp_path: Path) -> None:
    files = [_write(tmp_path / f"f{k}.jsonl", [b'{"f": %d, "n": %d}' % (k, n) for n in range(50)], b"\r\n") for k in range(5)]
    got = sample_lines(files, 100)
    assert {line.split(b",")[0] for line in got} == {b'{"f": %d' % k for k in range(5)}
    assert not any(line.endswith(b"\r") for line in got)


def test_more_files_than_lines_picks_evenly_spaced_files(tmp_path: Path) -> None:
    files = [_write(tmp_path / f"f{k:03d}.jsonl", [b"%d" % k]) for k in range(100)]
    got = sample_lines(files, 10)
    assert got == [b"%d" % k for k in range(0, 100, 10)]


def test_compressed_files_are_read_from_their_start(tmp_path: Path) -> None:
    lines = [b'{"n": %d}' % n for n in range(1000)]
    data = b"\n".join(lines) + b"\n"
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(data))
    (tmp_path / "b.jsonl.bz2").write_bytes(bz2.compress(data))
    (tmp_path / "c.jsonl.xz").write_bytes(lzma.compress(data))
    files = [str(tmp_path / n) for n in ("a.jsonl.gz", "b.jsonl.bz2", "c.jsonl.xz")]
    assert sample_lines(files, 30) == lines[:10] * 3


def test_truncated_or_foreign_codecs_do_not_fail_sampling(tmp_path: Path) -> None:
    data = gzip.compress(b'{"a": 1}\n' * 10_000)
    (tmp_path / "cut.jsonl.gz").write_bytes(data[: len(data) // 2])
    (tmp_path / "x.jsonl.snappy").write_bytes(b"not really snappy")
    asked: list[list[str]] = []
    got = sample_lines(
        [str(tmp_path / "cut.jsonl.gz"), str(tmp_path / "x.jsonl.snappy")], 20_000,
        spark_reader=lambda files, n: asked.append(files) or [b"from spark"],
    )
    assert got[-1] == b"from spark" and asked == [[str(tmp_path / "x.jsonl.snappy")]]
    assert all(line == b'{"a": 1}' for line in got[:-1])


def test_whole_files_are_one_document_each(tmp_path: Path) -> None:
    (tmp_path / "one.json").write_bytes(b'{\n  "a": 1\n}\n')
    (tmp_path / "two.json.gz").write_bytes(gzip.compress(b"[1,\n2]"))
    got = sample_lines([str(tmp_path / "one.json"), str(tmp_path / "two.json.gz")], 10, whole_files=True)
    assert got == [b'{\n  "a": 1\n}\n', b"[1,\n2]"]


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(st.binary(min_size=0, max_size=40).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b"")), min_size=1, max_size=300),
    rows=st.integers(1, 400),
)
def test_samples_are_whole_lines_of_the_file(lines: list[bytes], rows: int) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = _write(Path(d) / "x.jsonl", lines)
        got = sample_lines([path], rows)
    assert all(line in lines for line in got)
    assert len(got) <= min(rows + 8, len(lines))
