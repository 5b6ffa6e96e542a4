"""Readers: text (plain, .gz, .zst), JSONL, Parquet; globs, directories, empty files, nulls, bad input."""

from __future__ import annotations

import gzip
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from pipelines.read.readers import (_list_hadoop, detect_format, list_input_files, list_local_files, read_corpus,
                                    split_lines)
from tokenizer.errors import ConfigError, InputError

pytestmark = pytest.mark.spark


def documents(corpus) -> list[bytes]:
    return sorted(row["text"] for row in corpus.documents.collect())


def test_split_lines_matches_spark_line_rules():
    assert split_lines(b"a\r\n\nb") == [b"a\r", b"", b"b"]
    assert split_lines(b"a\n") == [b"a"]
    assert split_lines(b"") == []
    assert split_lines(b"\n") == [b""]


def test_detect_format():
    assert detect_format(["a/x.txt", "b.txt.gz"]) == "text"
    assert detect_format(["x.jsonl.zst", "y.json"]) == "jsonl"
    assert detect_format(["part-0.parquet"]) == "parquet"
    with pytest.raises(InputError, match="--input-format"):
        detect_format(["a.txt", "b.parquet"])


def test_text_plain_gz_zst_glob_and_empty_files(spark, tmp_path):
    lines_a = ["english line", "第二行", "", "日本語の行"]
    (tmp_path / "a.txt").write_text("\n".join(lines_a) + "\n", encoding="utf-8")
    with gzip.open(tmp_path / "b.txt.gz", "wb") as handle:
        handle.write("gz one\ngz two".encode())
    (tmp_path / "c.txt.zst").write_bytes(zstandard.ZstdCompressor().compress(b"zst one\nzst two\n"))
    (tmp_path / "d.txt").write_bytes(b"")
    (tmp_path / "e.txt.zst").write_bytes(zstandard.ZstdCompressor().compress(b""))
    corpus = read_corpus(spark, [str(tmp_path / "*.t*")], partitions=3)
    expected = sorted(
        [line.encode() for line in lines_a if line] + [b"gz one", b"gz two", b"zst one", b"zst two"]
    )
    assert documents(corpus) == expected
    stats = corpus.compute_stats()
    assert (stats.files, stats.empty_files) == (5, 1)
    assert (stats.rows, stats.empty_rows, stats.null_rows, stats.documents) == (8, 1, 0, 7)
    assert stats.document_bytes == sum(len(d) for d in expected)
    assert corpus.documents.rdd.getNumPartitions() == 3


def test_directories_recurse_and_skip_hidden_files(spark, tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.txt").write_bytes(b"one\n")
    (tmp_path / "y.txt").write_bytes(b"two\n")
    (tmp_path / "_SUCCESS").write_bytes(b"marker\n")
    (tmp_path / ".hidden.txt").write_bytes(b"hidden\n")
    listed = list_input_files(spark, [str(tmp_path)])
    assert [f.rsplit("/", 1)[1] for f in listed.files] == ["x.txt", "y.txt"]
    assert documents(read_corpus(spark, [f"file://{tmp_path}"])) == [b"one", b"two"]


def test_local_listing_equals_hadoop_listing(spark, tmp_path):
    """The in-process lister gives Hadoop's path strings, sizes and millisecond mtimes, for files, directories
    (hidden and ``_`` names skipped inside them), globs (which keep hidden matches), relative paths and ``file:``
    URIs; specs it does not take are left to Hadoop."""
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / ".hid").mkdir()
    (tmp_path / "d" / "sub" / "x.txt").write_bytes(b"one\n")
    (tmp_path / "d" / ".hid" / "h.txt").write_bytes(b"h\n")
    (tmp_path / "d" / "_temporary.txt").write_bytes(b"t\n")
    (tmp_path / "d" / "empty.txt").write_bytes(b"")
    (tmp_path / "a.parquet").write_bytes(b"12345")
    (tmp_path / ".b.parquet").write_bytes(b"123")
    (tmp_path / "c-1.txt").write_bytes(b"c")
    specs = [str(tmp_path / "d"), f"file://{tmp_path}/d", f"file:{tmp_path}/a.parquet", str(tmp_path / "*.parquet"),
             str(tmp_path / "c-?.txt"), os.path.relpath(tmp_path / "d" / "sub"), f"{tmp_path}/d/../a.parquet", str(tmp_path / "d" / ".hid" / "h.txt")]
    for spec in specs:
        ours = list_local_files(spec)
        sizes, modified = {}, {}
        _list_hadoop(spark, [spec], sizes, modified)
        assert ours == {p: (sizes[p], modified[p]) for p in sizes}, spec
    assert list_local_files(str(tmp_path / "nothing-*.txt")) == {}
    for spec in ("hdfs://host/x", "s3a://bucket/x", str(tmp_path / "{a,b}.parquet"), str(tmp_path / "[ab].txt"),
                 str(tmp_path / "with space.txt"), "file://host/x", f"{tmp_path}//a.parquet"):
        assert list_local_files(spec) is None, spec
    listed = list_input_files(spark, [str(tmp_path / "d"), str(tmp_path / "{a,c-1}.*")])
    assert [f.rsplit("/", 1)[1] for f in listed.files] == ["a.parquet", "c-1.txt", "x.txt"]
    assert [f.rsplit("/", 1)[1] for f in listed.empty_files] == ["empty.txt"]
    assert listed.total_bytes == 4 + 5 + 1
    with pytest.raises(InputError, match="matches no file"):
        list_input_files(spark, [str(tmp_path / "missing.txt")])
    with pytest.raises(ConfigError, match=r"^--input nofs://b/a.txt: Spark has no filesystem for nofs:// on this "
                                          r"machine: use --engine beam"):
        list_input_files(spark, ["nofs://b/a.txt"])  # a scheme Hadoop has no filesystem for (Beam's FileSystems may)


def test_invalid_utf8_bytes_are_kept_and_counted(spark, tmp_path):
    raw = b"valid\nbad \xff\xfe byte\r\n\x00nul\n"
    (tmp_path / "bad.txt").write_bytes(raw)
    corpus = read_corpus(spark, [str(tmp_path / "bad.txt")])
    assert documents(corpus) == sorted([b"valid", b"bad \xff\xfe byte\r", b"\x00nul"])
    assert corpus.compute_stats().invalid_utf8_rows == 1


def test_jsonl_field_nulls_and_malformed_lines(spark, tmp_path):
    rows = [{"text": "first", "id": 1}, {"text": None, "id": 2}, {"id": 3}, {"text": "引号\"与\\n换行\n"}]
    body = "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\nnot json\n\n"
    (tmp_path / "a.jsonl").write_text(body, encoding="utf-8")
    (tmp_path / "b.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(b'{"text": "from zst"}\n'))
    corpus = read_corpus(spark, [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl.zst")])
    assert documents(corpus) == sorted([b"first", "引号\"与\\n换行\n".encode(), b"from zst"])
    stats = corpus.compute_stats()
    assert (stats.rows, stats.null_rows, stats.malformed_rows, stats.documents) == (6, 2, 1, 3)


def test_jsonl_missing_field_names_field_and_option(spark, tmp_path):
    (tmp_path / "a.jsonl").write_text('{"content": "x", "id": 1}\n', encoding="utf-8")
    corpus = read_corpus(spark, [str(tmp_path / "a.jsonl")])
    with pytest.raises(InputError, match=r"no field 'text'.*'content', 'id'.*--text-column"):
        corpus.compute_stats()


def test_parquet_string_and_binary_columns(spark, tmp_path):
    pq.write_table(pa.table({"body": ["p1", None, "", "p2"], "n": [1, 2, 3, 4]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"body": pa.array([b"\xffraw"], pa.binary()), "n": [5]}), tmp_path / "b.parquet")
    corpus = read_corpus(spark, [str(tmp_path)], text_column="body", partitions=2)
    assert documents(corpus) == sorted([b"p1", b"p2", b"\xffraw"])
    stats = corpus.compute_stats()
    assert (stats.rows, stats.null_rows, stats.empty_rows, stats.invalid_utf8_rows) == (5, 1, 1, 1)


def test_parquet_missing_column_and_wrong_type(spark, tmp_path):
    pq.write_table(pa.table({"body": ["x"], "n": [1]}), tmp_path / "a.parquet")
    with pytest.raises(InputError, match=r"no column 'text'.*'body', 'n'.*--text-column"):
        read_corpus(spark, [str(tmp_path / "a.parquet")])
    with pytest.raises(InputError, match=r"'n' has type bigint"):
        read_corpus(spark, [str(tmp_path / "a.parquet")], text_column="n")


def test_no_match_and_corrupt_zstd_are_clear_errors(spark, tmp_path):
    with pytest.raises(InputError, match="matches no file"):
        read_corpus(spark, [str(tmp_path / "nothing-*.txt")])
    (tmp_path / "broken.txt.zst").write_bytes(b"definitely not zstd")
    corpus = read_corpus(spark, [str(tmp_path / "broken.txt.zst")])
    with pytest.raises(Exception, match="not a valid zstd file"):
        corpus.documents.collect()
