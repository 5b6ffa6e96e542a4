"""The in-process reader against Spark's read path: the same documents, held-out documents and ReadStats for text
(plain, .gz, .zst), JSONL and Parquet; the same errors; no pyspark imported."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from pipelines.inprocess.jsonl import java_double, java_malformed_length, json_field
from pipelines.inprocess.read import invalid_utf8_rows, list_local_inputs, read_local_corpus, spark_type_name
from pipelines.read.readers import ReadStats, _no_match, list_input_files, read_corpus, split_lines
from tokenizer.errors import ConfigError, InputError

FRACTION = 0.2


def random_lines(seed: int, count: int) -> list[str]:
    """Lines of words from a few scripts (enough documents that a 0.2 hold-out holds some out)."""
    rng = random.Random(seed)
    words = ["the", "tokenizer", "数据", "训练", "日本語", "Привет", "naïve", "😀", "ab\tc", "x"]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))) for _ in range(count)]


def spark_read(spark, inputs, **options):
    """``(sorted documents, sorted held-out documents, ReadStats)`` on Spark's path."""
    from pipelines.spark.train_engine import split_holdout

    corpus = read_corpus(spark, inputs, **options)
    stats = corpus.compute_stats()
    _, held = split_holdout(corpus.documents, FRACTION)
    return (sorted(bytes(row["text"]) for row in corpus.documents.collect()),
            sorted(bytes(row["text"]) for row in held.collect()), stats)


def assert_same_as_spark(spark, inputs, **options):
    local = read_local_corpus(inputs, holdout_fraction=FRACTION, **options)
    documents, held, stats = spark_read(spark, inputs, **options)
    training = [document for array in local.training for document in array.to_pylist()]
    assert sorted(training + local.held_out) == documents
    assert sorted(local.held_out) == held and held
    assert local.stats.to_dict() == stats.to_dict()
    assert all(array.null_count == 0 and len(array) for array in local.training)
    assert local.training_bytes == sum(map(len, training))
    return local, training


@pytest.mark.spark
def test_text_plain_gz_zst_bad_bytes_and_empty_files_as_spark(spark, tmp_path):
    generated = random_lines(1, 300)
    plain = ("\r\n".join(generated[:150]).encode() + b"\r\n\r\n\n"
             + b"bad \xff\xfe byte\n\x00nul\n\xe4\xb8\n\xad\n\xed\xa0\x80\n\xc0\x80\nlast line without newline")
    (tmp_path / "a.txt").write_bytes(plain)
    gz_body = "\n".join(generated[150:220]).encode()
    (tmp_path / "b.txt.gz").write_bytes(gzip.compress(gz_body + b"\n\n") + gzip.compress(b"second member\n"))
    (tmp_path / "c.txt.zst").write_bytes(zstandard.ZstdCompressor().compress("\n".join(generated[220:]).encode()))
    (tmp_path / "d.txt").write_bytes(b"")
    (tmp_path / "e.txt.gz").write_bytes(gzip.compress(b""))
    local, training = assert_same_as_spark(spark, [str(tmp_path / "*")])
    assert local.input_format == "text"
    assert [path.rsplit("/", 1)[1] for path in local.files] == ["a.txt", "b.txt.gz", "c.txt.zst", "e.txt.gz"]
    stats = local.stats
    assert (stats.files, stats.empty_files, stats.null_rows, stats.malformed_rows) == (5, 1, 0, 0)
    assert stats.invalid_utf8_rows == 5  # \xff\xfe, \xe4\xb8 and \xad (valid only together), a surrogate, overlong
    assert stats.empty_rows == 2  # a.txt's "\r\n\r\n\n" ends with a line "\r" (a document) and an empty one
    contents = [plain, gz_body + b"\n\nsecond member\n", "\n".join(generated[220:]).encode()]
    in_order = [line for content in contents for line in split_lines(content) if line]
    held = set(local.held_out)
    assert training == [line for line in in_order if line not in held]
    assert local.held_out == [line for line in in_order if line in held]
    batches = list(local.batches())
    assert batches and all(b.schema == pa.schema([("text", pa.binary())]) for b in batches)
    assert [b.num_rows for b in local.batches()] == [b.num_rows for b in batches]


JSONL_LINES = [
    '{"text": "first", "id": 1}', '{"text": null, "id": 2}', '{"id": 3}', "not json", "", "   ", "\t",
    '{"text": "引号\\"与\\\\n换行\\n 😀", "id": 4}', '{"text": 12.50}', '{"text": 1e2}', '{"text": -0}',
    '{"text": {"k": [1, "é😀", null, true]}}', '{"text": true}', "{'text': 'single quoted'}",
    '{"text": "escaped \\\' quote"}', '{"text": ""}', '{"text": "a"} trailing text', '{"text": null, "text": "second"}',
    "[1, 2]", '{"text": "\\ud800"}', '{"text": "crlf"}\r', "\r", '{"text": "x", }', '{}', '{"text": "\\u00e9\\t"}',
]


@pytest.mark.spark
def test_jsonl_as_spark(spark, tmp_path):
    generated = [json.dumps({"text": line, "n": i}, ensure_ascii=i % 2 == 0) for i, line in
                 enumerate(random_lines(2, 300))]
    body = "\n".join(generated[:200] + JSONL_LINES).encode() + b'\n{"text": "bad utf \xff \xed\xa0\x80 x"}\n'
    (tmp_path / "a.jsonl").write_bytes(body)
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress("\n".join(generated[200:250]).encode()))
    (tmp_path / "c.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress("\n".join(generated[250:]).encode()))
    (tmp_path / "d.jsonl").write_bytes(b"")
    local, training = assert_same_as_spark(spark, [str(tmp_path)])
    stats = local.stats
    assert local.input_format == "jsonl"
    assert (stats.malformed_rows, stats.null_rows, stats.empty_rows) == (5, 4, 1)  # "\t" and "\r": malformed
    for document in [b"first", b"100.0", b"0", '{"k":[1,"é\\uD83D\\uDE00",null,true]}'.encode(), b"single quoted",
                     b"escaped ' quote", b"a", b"second", b"crlf", "bad utf \ufffd \ufffd x".encode()]:
        assert document in training + local.held_out


@pytest.mark.spark
def test_parquet_string_and_binary_columns_as_spark(spark, tmp_path):
    generated = random_lines(3, 300)
    body = [None if i % 17 == 0 else "" if i % 23 == 0 else line for i, line in enumerate(generated)]
    pq.write_table(pa.table({"body": body[:200], "n": list(range(200))}), tmp_path / "a.parquet", row_group_size=32)
    pq.write_table(pa.table({"body": pa.array(body[200:], pa.large_string()), "n": list(range(100))}),
                   tmp_path / "b.parquet", row_group_size=40)
    (tmp_path / "c.parquet").write_bytes(b"")
    pq.write_table(pa.table({"body": pa.array(["dict", None, "dict"]).dictionary_encode()}), tmp_path / "m.parquet")
    pq.write_table(pa.table({"n": [1, 2]}), tmp_path / "z.parquet")  # no column: null rows, as Spark reads it
    local, _ = assert_same_as_spark(spark, [str(tmp_path / "*.parquet")], text_column="body")
    assert pq.ParquetFile(tmp_path / "a.parquet").metadata.num_row_groups == 7
    assert (local.stats.null_rows, local.stats.empty_rows) == (body.count(None) + 3, body.count(""))
    raw = [None, b"\xffraw", b"", b"\xe4\xb8", b"\xad"] + [line.encode() for line in generated[:100]]
    pq.write_table(pa.table({"body": pa.array(raw, pa.binary())}), tmp_path / "binary.parquet", row_group_size=30)
    local, _ = assert_same_as_spark(spark, [str(tmp_path / "binary.parquet")], text_column="body")
    assert (local.stats.null_rows, local.stats.empty_rows, local.stats.invalid_utf8_rows) == (1, 1, 3)


@pytest.mark.spark
def test_missing_column_field_and_wrong_type_raise_spark_errors(spark, tmp_path):
    pq.write_table(pa.table({"body": ["x"], "n": [1]}), tmp_path / "a.parquet")
    (tmp_path / "a.jsonl").write_text('{"content": "x", "id": 1}\nnot json\n{"id": 2}\n', encoding="utf-8")
    cases = [([str(tmp_path / "a.parquet")], {}), ([str(tmp_path / "a.parquet")], {"text_column": "n"}),
             ([str(tmp_path / "a.jsonl")], {})]
    for inputs, options in cases:
        with pytest.raises(InputError) as spark_error:
            read_corpus(spark, inputs, **options).compute_stats()
        with pytest.raises(InputError) as local_error:
            read_local_corpus(inputs, **options)
        assert str(local_error.value) == str(spark_error.value)
    assert "'content', 'id'" in str(local_error.value) and "--text-column" in str(local_error.value)


def test_unknown_glob_non_local_inputs_and_bad_holdout_fraction(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"a\n")
    missing = str(tmp_path / "nothing-*.txt")
    with pytest.raises(InputError, match="matches no file") as error:
        read_local_corpus([str(tmp_path / "a.txt"), missing])
    assert str(error.value) == str(_no_match(missing))
    assert list_local_inputs(["s3a://bucket/shards/"]) is None
    assert list_local_inputs([str(tmp_path / "a.txt"), "hdfs://nn/corpus/part-*"]) is None
    with pytest.raises(ConfigError, match=r"--master local\[\*\]"):
        read_local_corpus(["s3a://bucket/shards/"])
    for fraction in (0.6, -0.1):
        with pytest.raises(ConfigError, match="outside 0..0.5"):
            read_local_corpus([str(tmp_path / "a.txt")], holdout_fraction=fraction)
    (tmp_path / "b.txt.bz2").write_bytes(b"BZh9")
    with pytest.raises(ConfigError, match=r"codec only Spark.*--master local\[\*\]"):
        read_local_corpus([str(tmp_path / "b.txt.bz2")])
    with pytest.raises(InputError, match="unknown input format"):
        read_local_corpus([str(tmp_path / "a.txt")], input_format="csv")


@pytest.mark.spark
def test_listing_equals_spark_listing(spark, tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "sub" / "x.txt").write_bytes(b"one\n")
    (tmp_path / "d" / "_SUCCESS").write_bytes(b"")
    (tmp_path / "d" / ".hidden.txt").write_bytes(b"h\n")
    (tmp_path / "d" / "empty.txt").write_bytes(b"")
    (tmp_path / "a.txt").write_bytes(b"abc\n")
    specs = [str(tmp_path / "d"), f"file://{tmp_path}/a.txt", str(tmp_path / "?.txt")]
    files, empty = list_local_inputs(specs)
    listed = list_input_files(spark, specs)
    assert ["file:" + path for path, _ in files] == listed.files
    assert ["file:" + path for path in empty] == listed.empty_files
    assert [size for _, size in files] == [listed.sizes[name] for name in listed.files]


def test_only_empty_files_and_no_holdout(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(b"")
    corpus = read_local_corpus([str(tmp_path / "a.jsonl")])
    assert corpus.stats == ReadStats(files=1, empty_files=1)
    assert (corpus.training, corpus.held_out, corpus.input_format) == ([], [], "jsonl")
    (tmp_path / "b.txt").write_bytes(b"a\n\nb\xff\n")
    corpus = read_local_corpus([str(tmp_path / "b.txt")])
    assert [array.to_pylist() for array in corpus.training] == [[b"a", b"b\xff"]] and corpus.held_out == []
    stats = corpus.stats
    assert (stats.rows, stats.empty_rows, stats.invalid_utf8_rows, stats.documents) == (3, 1, 1, 2)
    assert (stats.document_bytes, stats.input_bytes) == (3, 6)


def test_utf8_check_rows_and_java_decoder_rule():
    assert invalid_utf8_rows(pa.array([b"ok", b"\xe4\xb8", b"\xad"])) == 2
    assert invalid_utf8_rows(pa.array([b"ok", "中".encode(), b""])) == 0
    assert invalid_utf8_rows(pa.array([b"\xed\xa0\x80", b"\xc0\x80", b"\xf4\x90\x80\x80", b"a\x00"])) == 3
    assert [java_malformed_length(b"\xed\xa0\x80", 0), java_malformed_length(b"\xe4\xb8x", 0),
            java_malformed_length(b"\xe0\x80\x80", 0), java_malformed_length(b"\xf0\x9f\x98", 0)] == [3, 2, 1, 3]
    assert json_field(b'{"text": "\xed\xa0\x80|\xed\xa0x"}', "text")[0] == "\ufffd|\ufffdx".encode()


def test_json_values_as_spark_writes_them():
    """Values checked against Spark 4's get_json_object and json_object_keys."""
    cases = {
        b'{"text": 1.50}': b"1.5", b'{"text": 0.00012}': b"1.2E-4", b'{"text": 123456789.0}': b"1.23456789E8",
        b'{"text": 1E400}': b'"Infinity"', b'{"text": 9999999.0}': b"9999999.0", b'{"text": -0.0e5}': b"-0.0",
        b'{"text": {"\\"q": "\\u0000\\t\\u001f\\u007f"}}': b'{"\\"q":"\\u0000\\t\\u001F\x7f"}',
        b'{"text": ["\\ud800", "\\ud83d\\ude00"]}': b'["\\uD800","\\uD83D\\uDE00"]', b'{"text": "\\ud83d\\ude00"}':
        "😀".encode(), b'{"text": "x", "text": "y"}': b"x", b"{'text': \"d'q\"}": b"d'q",
        b'{"text": 12345678901234567890123}': b"12345678901234567890123",
    }
    for line, value in cases.items():
        assert json_field(line, "text")[0] == value, line
    for line in [b'{"text": NaN}', b'{"text": 01}', b'{"text": "\\x"}', b'{text: 1}', b'\x0b{}', b'{"a": 1,}',
                 b'{"text": ' + b"1" * 1001 + b"}", b'{"a": ' + b"[" * 1000 + b"]" * 1000 + b"}"]:
        assert json_field(line, "text") == (None, None), line
    assert json_field(b'{"a": ' + b"[" * 999 + b"]" * 999 + b', "text": 1}', "text") == (b"1", ["a", "text"])
    assert json_field(b'{"text": "\\ud800"}', "text") == (None, ["text"])
    assert [java_double(x) for x in (100.0, 1e-3, 1e7, 1e20, -1.5e-7)] == ["100.0", "0.001", "1.0E7", "1.0E20",
                                                                            "-1.5E-7"]


def test_spark_type_names():
    assert [spark_type_name(t) for t in (pa.int64(), pa.large_string(), pa.binary(), pa.decimal128(10, 2),
                                          pa.list_(pa.int32()), pa.timestamp("us"))] == [
        "bigint", "string", "binary", "decimal(10,2)", "array<int>", "timestamp_ntz"]


def test_import_loads_no_pyspark():
    code = "import pipelines.inprocess.read, sys; assert not any(m.startswith('pyspark') for m in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


@pytest.mark.spark
def test_dropping_invalid_utf8_documents_as_spark(spark, tmp_path):
    """Training's bad-row rule ``skip`` for a character model: both readers drop the same documents (before the
    held-out split) and count them the same; JSONL judges a document by its line's bytes."""
    from pipelines.train.bad_rows import TrainBadRows

    skip = TrainBadRows("skip", invalid_utf8=True)
    generated = random_lines(7, 200)
    bad = [b"bad \xff byte", b"\xe4\xb8", b"\xed\xa0\x80"]
    (tmp_path / "a.txt").write_bytes(b"\n".join([line.encode() for line in generated] + bad) + b"\n")
    local, training = assert_same_as_spark(spark, [str(tmp_path / "a.txt")], bad_rows=skip)
    assert (local.stats.invalid_utf8_rows, local.stats.documents) == (3, 200)
    assert not set(bad) & set(training + local.held_out)
    records = [json.dumps({"text": line}).encode() for line in generated] + \
        [b'{"text": "caf\xe9"}', b'{"n": 1, "note": "\xff"}', b"not json \xff"]
    (tmp_path / "b.jsonl").write_bytes(b"\n".join(records) + b"\n")
    local, _ = assert_same_as_spark(spark, [str(tmp_path / "b.jsonl")], bad_rows=skip)
    assert (local.stats.invalid_utf8_rows, local.stats.null_rows, local.stats.malformed_rows) == (1, 1, 1)
    assert local.stats.documents == 200
    raw = [None, *bad, *(line.encode() for line in generated)]
    pq.write_table(pa.table({"text": pa.array(raw, pa.binary())}), tmp_path / "c.parquet", row_group_size=30)
    local, _ = assert_same_as_spark(spark, [str(tmp_path / "c.parquet")], bad_rows=skip)
    assert (local.stats.invalid_utf8_rows, local.stats.null_rows, local.stats.documents) == (3, 1, 200)
