"""varlake.spark.ingest_json: every line lands in the table or the quarantine, exactly once.

Mixed good and bad lines (invalid JSON and UTF-8, duplicate keys, nesting over 1000,
blank lines) in plain and gzip files; line numbers that stay exact when a file spans
several Spark splits; extracted and partition columns; the count guard.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

from varlake import Table, Variant, parse_json
from varlake.errors import StorageFileNotFoundError, TableNotFoundError
from varlake.spark import ingest_json, spark_conf
from varlake.spark.writing import ingest as ingest_module
from varlake.spark.writing.ingest import IngestError, bad_line_reason, resolve_inputs

pytestmark = pytest.mark.spark

GOOD = [b'{"a": 1, "k": "x"}', b'{"a": 2, "k": "y", "n": {"z": [1, 2]}}', b"null", b"42", b'"caf\xc3\xa9"', b'{"a":3,"k":"x"} ']
BAD = {
    b'{"a": 1, "a": 2}': "duplicate key",
    b'{"s": "bad \xff\xfe byte"}': "invalid UTF-8",
    b"{broken": "invalid JSON",
    b"[" * 1001 + b"]" * 1001: "too deep",
    b"": "blank line",
    b"   ": "blank line",
}


def _mixed_lines() -> list[bytes]:
    lines: list[bytes] = []
    bad = list(BAD)
    for i in range(30):
        lines.append(GOOD[i % len(GOOD)])
        if i % 5 == 2:
            lines.append(bad[(i // 5) % len(bad)])
    return lines


def _json_of(line: bytes) -> str:
    return parse_json(line.decode("utf-8")).to_json()


def _table_docs(path: Path, column: str = "doc") -> list[str]:
    return sorted(Variant(r[column]["metadata"], r[column]["value"]).to_json() for r in Table(path).scan().to_arrow().to_pylist())


def test_every_line_is_written_or_quarantined_with_file_line_and_reason(any_spark: Any, tmp_path: Path) -> None:
    lines = _mixed_lines()
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    (src / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    with gzip.open(src / "sub" / "b.jsonl.gz", "wb") as f:
        f.write(b"\r\n".join(lines))  # CRLF and no final newline
    (src / "_ignored.jsonl").write_bytes(b"{broken\n")
    result = ingest_json(any_spark, src, tmp_path / "t")
    n_bad = sum(1 for line in lines if line in BAD)
    assert result.files == 2 and result.consistent
    assert (result.read, result.written, result.quarantined) == (2 * len(lines), 2 * (len(lines) - n_bad), 2 * n_bad)
    assert _table_docs(tmp_path / "t") == sorted(_json_of(line) for line in lines if line not in BAD for _ in range(2))

    q = Table(str(tmp_path / "t") + "_quarantine").scan().to_arrow().to_pylist()
    expected = {
        (name, no, line)
        for name in (str(src / "a.jsonl"), str(src / "sub" / "b.jsonl.gz"))
        for no, line in enumerate(lines, 1)
        if line in BAD
    }
    assert {(r["file"], r["line"], r["raw"]) for r in q} == expected
    for r in q:
        assert r["kind"] == BAD[r["raw"]], r
        assert r["ingest_id"] == result.ingest_id and r["text"] == r["raw"].decode("utf-8", "replace")
    reasons = {r["kind"]: r["reason"] for r in q}
    assert reasons["duplicate key"] == "duplicate object key 'a'"
    assert reasons["invalid UTF-8"].startswith("invalid UTF-8: byte 0xff at offset 11")
    assert "deeper than 1000" in reasons["too deep"]
    assert result.reasons == {k: 2 * sum(1 for line in lines if BAD.get(line) == k) for k in set(BAD.values())}


def test_line_numbers_stay_exact_across_file_splits(spark: Any, tmp_path: Path) -> None:
    src = tmp_path / "big.jsonl"
    bad_at = {7, 4096, 9999, 15000}
    with src.open("wb") as f:
        for i in range(1, 15001):
            f.write(b"{oops %d\n" % i if i in bad_at else b'{"i": %d, "pad": "%s"}\n' % (i, b"x" * (i % 50)))
    with spark_conf(spark, {"spark.sql.files.maxPartitionBytes": str(64 * 1024)}):
        assert spark.read.text(str(src)).rdd.getNumPartitions() > 4  # the file really is split
        result = ingest_json(spark, [src], tmp_path / "t", shredding="off")
    assert (result.read, result.written, result.quarantined) == (15000, 15000 - len(bad_at), len(bad_at))
    q = Table(str(tmp_path / "t") + "_quarantine").scan().to_arrow().to_pylist()
    assert sorted((r["line"], r["raw"]) for r in q) == [(i, b"{oops %d" % i) for i in sorted(bad_at)]
    ids = sorted(json.loads(d)["i"] for d in _table_docs(tmp_path / "t"))
    assert ids == [i for i in range(1, 15001) if i not in bad_at]


def test_extracted_and_partition_columns(any_spark: Any, tmp_path: Path) -> None:
    src = tmp_path / "ev.jsonl"
    docs = [{"kind": ["commit", "identity"][i % 2], "time_us": 1_700_000_000_000_000 + i, "n": i} for i in range(40)]
    docs[5]["n"] = "not a number"
    src.write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    result = ingest_json(
        any_spark, str(src), tmp_path / "t",
        columns={"kind": "$.kind::string", "n": "$.n::int", "ts": "timestamp_micros(event:time_us::bigint)"},
        partition_by=["kind"], doc_column="event",
    )
    t = Table(tmp_path / "t")
    assert t.partition_columns == ("kind",) and t.schema.names == ("event", "kind", "n", "ts")
    assert result.extracted_nulls == {"kind": 0, "n": 1, "ts": 0}
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["ts"])
    assert [r["kind"] for r in rows] == [d["kind"] for d in docs]
    assert [r["n"] for r in rows] == [None if i == 5 else i for i in range(40)]
    assert t.properties.get("varlake.shredding.event")  # shredded with a stored schema
    assert result.layout == {"event": t.properties["varlake.shredding.event"]}
    assert len(t.files("kind = 'commit'")) < len(t.files())


def test_counts_that_do_not_add_up_commit_nothing(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "x.jsonl"
    src.write_bytes(b'{"a": 1}\n{bad\n{"a": 2}\n[oops\n')
    real = ingest_module._quarantine_rows

    def lossy(*args: Any) -> Any:
        return real(*args).where("line > 2")  # drops a bad line on the way

    monkeypatch.setattr(ingest_module, "_quarantine_rows", lossy)
    with pytest.raises(IngestError, match="do not add up"):
        ingest_json(spark, src, tmp_path / "t")
    for path in (tmp_path / "t", Path(str(tmp_path / "t") + "_quarantine")):
        with pytest.raises(TableNotFoundError):
            Table(path)


def test_whole_file_documents(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "one.json").write_text(json.dumps({"a": [1, 2], "b": {"c": True}}, indent=2))
    (tmp_path / "in" / "two.json").write_text("{\n  \"a\": 3\n}\n")
    (tmp_path / "in" / "bad.json").write_text("{\n  \"a\": \n")
    result = ingest_json(spark, tmp_path / "in", tmp_path / "t", multiline=True)
    assert (result.read, result.written, result.quarantined) == (3, 2, 1)
    assert _table_docs(tmp_path / "t") == sorted(['{"a":[1,2],"b":{"c":true}}', '{"a":3}'])


def test_resolve_inputs(tmp_path: Path) -> None:
    (tmp_path / "d" / ".hidden").mkdir(parents=True)
    for name in ("d/x.jsonl", "d/y.json.gz", "d/.hidden/z.jsonl", "d/_SUCCESS", "w[1].jsonl"):
        (tmp_path / name).write_text("{}\n")
    found = resolve_inputs([tmp_path / "d", str(tmp_path / "d" / "*.jsonl"), tmp_path / "w[1].jsonl"])
    assert found == [str(tmp_path / "d" / "x.jsonl"), str(tmp_path / "d" / "y.json.gz"), str(tmp_path / "w[1].jsonl")]
    with pytest.raises(StorageFileNotFoundError, match="no input file matches"):
        resolve_inputs(str(tmp_path / "nope" / "*.jsonl"))
    with pytest.raises(StorageFileNotFoundError, match="does not exist"):
        resolve_inputs(tmp_path / "missing.jsonl")


def test_glob_characters_in_file_names_reach_spark_literally(spark: Any, tmp_path: Path) -> None:
    src = tmp_path / "w[1]{a,b}.jsonl"
    src.write_text('{"a": 1}\n')
    result = ingest_json(spark, src, tmp_path / "t")
    assert (result.read, result.written) == (1, 1)


def test_reasons_name_what_is_wrong() -> None:
    assert bad_line_reason(b'{"a": 1, "a": 2}') == ("duplicate key", "duplicate object key 'a'")
    kind, reason = bad_line_reason(b'{"a": "\xc3"}')
    assert kind == "invalid UTF-8" and "offset 7" in reason
    assert bad_line_reason(b"\t ")[0] == "blank line"
    assert bad_line_reason(b'{"a": 1}', False)[0] == "invalid UTF-8"
    kind, reason = bad_line_reason(b'["' + b"x" * 20_000_001 + b'"]')
    assert kind == "too large" and "exceeds Jackson's limit" in reason
    assert bad_line_reason(b'{"a": 1}')[0] == "rejected by Spark"


def test_values_over_the_size_limit_are_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    import varlake.variant.json_parse as json_parse

    monkeypatch.setattr(json_parse, "SIZE_LIMIT", 64)  # Spark's is 128 MiB; the check is the same
    kind, reason = bad_line_reason(b'["' + b"x" * 100 + b'"]')
    assert kind == "too large" and "size limit" in reason


def test_missing_input_fails_before_spark_runs(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(StorageFileNotFoundError):
        ingest_json(spark, tmp_path / "nothing.jsonl", tmp_path / "t")
    with pytest.raises(IngestError, match="partition columns"):
        ingest_json(spark, tmp_path, tmp_path / "t", partition_by=["kind"])
    assert not os.path.exists(tmp_path / "t")


def test_all_lines_bad_creates_an_empty_table(spark: Any, tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_bytes(b"{\n]\n")
    result = ingest_json(spark, src, tmp_path / "t")
    assert (result.read, result.written, result.quarantined) == (2, 0, 2)
    assert Table(tmp_path / "t").files() == [] and len(Table(tmp_path / "t").scan().to_arrow()) == 0


def test_a_corrupt_gzip_fails_the_ingest_and_writes_nothing(spark: Any, tmp_path: Path) -> None:
    data = gzip.compress(b'{"a": 1}\n' * 1000)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "ok.jsonl").write_bytes(b'{"a": 1}\n')
    (tmp_path / "in" / "cut.jsonl.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(IngestError, match=r"cut\.jsonl\.gz.*Unexpected end of input stream"):
        ingest_json(spark, tmp_path / "in", tmp_path / "t")
    assert not (tmp_path / "t").exists()


def test_clean_input_is_read_once_and_only_files_with_bad_lines_are_read_again(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "in"
    src.mkdir()
    (src / "clean.jsonl").write_bytes(b'{"a": 1}\n' * 50)
    calls: list[list[str]] = []
    real = ingest_module._line_frame

    def spy(spark_: Any, files: Any, multiline: bool) -> Any:
        calls.append(list(files))
        return real(spark_, files, multiline)

    monkeypatch.setattr(ingest_module, "_line_frame", spy)
    result = ingest_json(spark, src, tmp_path / "t")
    assert (result.read, result.written, result.quarantined, calls) == (50, 50, 0, [])
    (src / "dirty.jsonl").write_bytes(b'{"a": 2}\n{oops\n{"a": 3}\n')
    (src / "clean.jsonl").unlink()
    (src / "clean2.jsonl").write_bytes(b'{"a": 4}\n' * 10)
    result = ingest_json(spark, src, tmp_path / "t")
    assert (result.read, result.written, result.quarantined) == (13, 12, 1)
    assert calls == [[str(src / "dirty.jsonl")]]
    q = Table(str(tmp_path / "t") + "_quarantine").scan().to_arrow().to_pylist()
    assert [(r["file"], r["line"], r["raw"]) for r in q] == [(str(src / "dirty.jsonl"), 2, b"{oops")]


def test_missing_line_counters_commit_nothing() -> None:
    class Never:
        def isCompleted(self) -> bool:
            return False

    class Jo:
        def future(self) -> Never:
            return Never()

    class Observation:
        _jo = Jo()

    with pytest.raises(IngestError, match="line counters of the Spark job are missing.*no line counts after"):
        ingest_module._observed(Observation(), "id-1", timeout=0.05)
