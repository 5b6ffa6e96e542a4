"""``shardpiece train --on-bad-row error|skip|keep`` on small generated corpora: the first bad row named by file and
line (exit 2, one line on stderr), what ``skip`` and ``keep`` train on and count (summary and manifest), byte-level
models unaffected by invalid UTF-8, and the same model bytes and counts from both engines and every Spark reader."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.train.bad_rows import TrainBadRows, bad_row_report, first_bad_row, summary_text
from pipelines.read.shards import binary_buffers
from tests.pipelines.test_engines import corpus_lines
from tokenizer.bad_rows import invalid_utf8_mask

UNIGRAM = ["--algorithm", "unigram", "--vocab-size", "400"]
BPE_SP = ["--algorithm", "bpe", "--pretokenizer", "sentencepiece", "--vocab-size", "300"]
BPE_BYTES = ["--algorithm", "bpe", "--vocab-size", "400"]
BYTEPIECE = ["--algorithm", "bytepiece", "--min-count", "2", "--order", "4", "--vocab-size", "400"]
INVALID = {41: "caf\xe9 au lait".encode("latin-1"), 300: b"\xed\xa0\x80 an encoded surrogate"}  # line -> bytes


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, str]:
    """The same 600 clean documents as text, JSONL and Parquet, and copies with bad rows at known places:
    ``text``: invalid UTF-8 at lines 41 and 300; ``jsonl``: a blank line (14), a line that is not an object (21), a
    record without ``text`` (50), invalid UTF-8 in a document (line 90); ``parquet`` (binary column): invalid
    UTF-8 at rows 41 and 300, a null at row 500."""
    root = tmp_path_factory.mktemp("bad-rows")
    clean = [line.encode() for line in corpus_lines(600, seed=11)]
    paths = {"clean": root / "clean.txt", "text": root / "bad.txt", "clean_jsonl": root / "clean.jsonl",
             "jsonl": root / "bad.jsonl", "clean_parquet": root / "clean.parquet", "parquet": root / "bad.parquet"}
    paths["clean"].write_bytes(b"\n".join(clean) + b"\n")
    lines = list(clean)
    for number in sorted(INVALID):
        lines.insert(number - 1, INVALID[number])
    paths["text"].write_bytes(b"\n".join(lines) + b"\n")
    records = [json.dumps({"id": i, "text": line.decode()}, ensure_ascii=False).encode() for i, line in
               enumerate(clean)]
    paths["clean_jsonl"].write_bytes(b"\n".join(records) + b"\n")
    bad = list(records)
    bad.insert(13, b"   ")
    bad.insert(20, b"[1, 2, 3]")
    bad.insert(49, b'{"id": -1}')
    bad.insert(89, b'{"id": -2, "text": "caf\xe9 cr\xe8me"}')
    paths["jsonl"].write_bytes(b"\n".join(bad) + b"\n")
    pq.write_table(pa.table({"text": pa.array(clean, pa.binary())}), paths["clean_parquet"], row_group_size=250)
    rows = list(lines)
    rows.insert(499, None)
    pq.write_table(pa.table({"text": pa.array(rows, pa.binary())}), paths["parquet"], row_group_size=250)
    return {name: str(path) for name, path in paths.items()}


def train(flags: list[str], source: str, out, *extra: str, capsys=None) -> tuple[int, str | None, dict | None]:
    """``(exit code, model sha256, manifest)`` of ``shardpiece train`` in this process's ``main``."""
    from jobs.train import main

    model = out / "m.model"
    code = main(["train", *flags, "--input", source, "--output", str(model), "--holdout-fraction", "0.1",
                 "--work-dir", str(out / "work"), "--threads", "2", *extra])
    if code:
        return code, None, None
    manifest = json.loads((out / "m.model.manifest.json").read_text())
    return code, hashlib.sha256(model.read_bytes()).hexdigest(), manifest


def error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


# ------------------------------------------------------------------------------------------------ the rule
def test_invalid_utf8_is_a_bad_row_for_sentencepiece_style_models_only():
    assert TrainBadRows.of({"algorithm": "unigram"}) == TrainBadRows("error", True)
    assert TrainBadRows.of({"algorithm": "bpe", "pretokenizer": "sentencepiece", "on_bad_row": "skip"}) == \
        TrainBadRows("skip", True)
    for options in ({"algorithm": "bytepiece"}, {"algorithm": "bpe", "pretokenizer": "byte_level"},
                    {"algorithm": "unigram", "unigram_variant": "byte"}):
        assert TrainBadRows.of(options) == TrainBadRows("error", False), options
    assert TrainBadRows("error", True).drops_invalid_utf8 and not TrainBadRows("keep", True).drops_invalid_utf8
    assert TrainBadRows("skip", False).kinds() == ("malformed",)


def test_invalid_utf8_mask_follows_sparks_rule():
    rows = pa.array([b"ok", b"\xe4\xb8", b"\xad", b"", "中".encode(), b"\xc0\x80", b"\xf4\x90\x80\x80"])
    assert invalid_utf8_mask(*binary_buffers(rows)).tolist() == [False, True, True, False, False, True, True]


def test_report_and_summary_say_what_became_of_each_kind():
    counts = {"malformed_rows": 3, "invalid_utf8_rows": 1, "null_rows": 2}
    assert bad_row_report(counts, TrainBadRows("keep", True)) == {
        "policy": "keep", "malformed": {"rows": 3, "action": "kept as empty documents"},
        "invalid_utf8": {"rows": 1, "action": "kept with U+FFFD replacements"},
        "null": {"rows": 2, "action": "skipped (no text to train on)"},
        "summary": "3 malformed JSON lines kept as empty documents; 1 document not valid UTF-8 kept with U+FFFD "
                   "replacements; 2 rows without text skipped"}
    byte_level = bad_row_report(counts, TrainBadRows("skip", False))  # invalid UTF-8 is no bad row here
    assert "invalid_utf8" not in byte_level and byte_level["malformed"]["action"] == "skipped"
    assert bad_row_report({"rows": 5}, TrainBadRows()) == {"policy": "error"}
    assert summary_text({"policy": "error"}) is None


def test_first_bad_row_counts_lines_and_rows_from_one(corpora, tmp_path):
    assert first_bad_row([corpora["text"]], "text", "text", ("invalid_utf8",)) == \
        ("invalid_utf8", corpora["text"], 41)
    assert first_bad_row(["file:" + corpora["text"]], "text", "text", ("malformed",)) is None
    # blank lines count as lines; a record without the field is no bad row
    assert first_bad_row([corpora["jsonl"]], "jsonl", "text", ("malformed", "invalid_utf8")) == \
        ("malformed", corpora["jsonl"], 21)
    assert first_bad_row([corpora["jsonl"]], "jsonl", "text", ("invalid_utf8",)) == \
        ("invalid_utf8", corpora["jsonl"], 90)
    assert first_bad_row([corpora["parquet"]], "parquet", "text", ("invalid_utf8",)) == \
        ("invalid_utf8", corpora["parquet"], 41)
    packed = tmp_path / "b.txt.gz"
    packed.write_bytes(gzip.compress(b"fine\n\n\xff\n"))
    assert first_bad_row([corpora["clean"], str(packed)], "text", "text", ("invalid_utf8",)) == \
        ("invalid_utf8", str(packed), 3)
    assert first_bad_row([str(tmp_path / "c.txt.bz2")], "text", "text", ("invalid_utf8",)) is None


# ------------------------------------------------------------------------------------------------ in this process
def test_invalid_utf8_for_unigram_stops_or_is_skipped_or_kept(corpora, tmp_path, capsys):
    code, _, _ = train(UNIGRAM, corpora["text"], tmp_path / "error")
    assert code == 2
    line = error_line(capsys)
    assert line.startswith(f"shardpiece train: error: {corpora['text']}, line 41: not valid UTF-8")
    assert "--on-bad-row skip" in line and "--on-bad-row keep" in line
    assert not (tmp_path / "error" / "m.model").exists()

    _, clean_hash, _ = train(UNIGRAM, corpora["clean"], tmp_path / "clean")
    _, skip_hash, skipped = train(UNIGRAM, corpora["text"], tmp_path / "skip", "--on-bad-row", "skip")
    out = capsys.readouterr().out
    assert skip_hash == clean_hash  # the same documents trained on
    assert skipped["bad_rows"] == {"policy": "skip", "invalid_utf8": {"rows": 2, "action": "skipped"},
                                   "summary": "2 documents not valid UTF-8 skipped"}
    assert skipped["read"]["invalid_utf8_rows"] == 2 and skipped["read"]["documents"] == 600
    assert "  bad rows          2 documents not valid UTF-8 skipped\n" in out
    assert skipped["config"]["on_bad_row"] == "skip"

    _, keep_hash, kept = train(UNIGRAM, corpora["text"], tmp_path / "keep", "--on-bad-row", "keep")
    assert keep_hash != skip_hash and kept["read"]["documents"] == 602
    assert kept["bad_rows"]["invalid_utf8"] == {"rows": 2, "action": "kept with U+FFFD replacements"}
    assert "bad rows          2 documents not valid UTF-8 kept with U+FFFD replacements" in capsys.readouterr().out


def test_malformed_json_lines_for_every_algorithm(corpora, tmp_path, capsys):
    for name, flags in (("bpe", BPE_BYTES), ("bytepiece", BYTEPIECE)):
        assert train(flags, corpora["jsonl"], tmp_path / f"{name}-error")[0] == 2
        assert error_line(capsys).startswith(f"shardpiece train: error: {corpora['jsonl']}, line 21: not a JSON "
                                              "object; pass --on-bad-row skip")
    _, clean_hash, _ = train(BPE_BYTES, corpora["clean_jsonl"], tmp_path / "clean")
    for policy, action in (("skip", "skipped"), ("keep", "kept as empty documents")):
        _, model_hash, manifest = train(BPE_BYTES, corpora["jsonl"], tmp_path / policy, "--on-bad-row", policy)
        # byte-level BPE: invalid UTF-8 in a JSON line is no bad row (the reader decodes the line, U+FFFD)
        assert manifest["bad_rows"] == {
            "policy": policy, "malformed": {"rows": 1, "action": action},
            "null": {"rows": 1, "action": "skipped (no text to train on)"},
            "summary": f"1 malformed JSON line {action}; 1 row without text skipped"}
        assert manifest["read"]["malformed_rows"] == 1 and manifest["read"]["documents"] == 601
        assert f"bad rows          1 malformed JSON line {action}; 1 row without text skipped" in \
            capsys.readouterr().out
        if policy == "skip":
            skip_hash = model_hash
        else:
            assert model_hash == skip_hash  # an empty document teaches nothing
    assert skip_hash != clean_hash  # the line with invalid UTF-8 is trained on (as U+FFFD)


def test_a_json_document_with_invalid_utf8_is_a_bad_row_for_unigram(corpora, tmp_path, capsys):
    assert train(UNIGRAM, corpora["jsonl"], tmp_path / "e", "--on-bad-row", "error")[0] == 2
    assert f"{corpora['jsonl']}, line 21: not a JSON object" in error_line(capsys)  # the first bad row
    _, clean_hash, _ = train(UNIGRAM, corpora["clean_jsonl"], tmp_path / "clean")
    _, skip_hash, manifest = train(UNIGRAM, corpora["jsonl"], tmp_path / "skip", "--on-bad-row", "skip")
    assert skip_hash == clean_hash
    assert manifest["bad_rows"]["invalid_utf8"] == {"rows": 1, "action": "skipped"}


def test_rows_without_text_are_skipped_under_every_policy(tmp_path, capsys):
    source = tmp_path / "c.jsonl"
    lines = corpus_lines(400, seed=3)
    source.write_text("".join(json.dumps({"text": line}) + "\n" if i % 7 else '{"id": 1}\n'
                              for i, line in enumerate(lines)))
    code, _, manifest = train(BPE_BYTES, str(source), tmp_path / "out")
    assert code == 0 and manifest["bad_rows"]["null"]["rows"] == len(range(0, 400, 7))
    assert "rows without text skipped" in capsys.readouterr().out


def test_byte_level_models_keep_invalid_utf8_as_before(corpora, tmp_path):
    for name, flags in (("bytepiece", BYTEPIECE), ("bpe", BPE_BYTES),
                        ("unigram-byte", [*UNIGRAM, "--unigram-variant", "byte"])):
        code, default_hash, manifest = train(flags, corpora["text"], tmp_path / name)
        assert code == 0, name
        assert manifest["bad_rows"] == {"policy": "error"} and manifest["read"]["invalid_utf8_rows"] == 2
        assert manifest["read"]["documents"] == 602 and manifest["models"]["400"]["evaluation"]["lossless"]
        assert train(flags, corpora["text"], tmp_path / f"{name}-skip", "--on-bad-row", "skip")[1] == default_hash


def test_the_command_line_error_is_one_line_and_exit_2(corpora, tmp_path):
    """Through the console entry point in a fresh process: exit 2, one line on stderr naming file and line."""
    result = subprocess.run(
        [sys.executable, "-m", "jobs.cli", "train", *BPE_SP, "--input", corpora["jsonl"], "--output",
         str(tmp_path / "m.model"), "--quiet"], capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert result.returncode == 2
    assert result.stderr.splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith(f"shardpiece train: error: {corpora['jsonl']}, line 21: not a JSON object; "
                                    "pass --on-bad-row skip to drop such rows or --on-bad-row keep to keep them")
    assert not (tmp_path / "m.model").exists()


def test_a_bad_config_value_names_the_choices(tmp_path, capsys):
    from jobs.train import main

    assert main(["train", "--input", "x.txt", "--vocab-size", "300", "--output", str(tmp_path / "m.model"),
                 "--set", "on_bad_row=drop"]) == 2
    assert "on_bad_row 'drop': use one of error, skip, keep" in error_line(capsys)


# ------------------------------------------------------------------------------------------------ both engines
SPARK_READERS = {  # input -> the Spark runs that read it (the in-task pyarrow reader, Spark's reader)
    "text": [("--master", "local[2]"), ("--master", "local[2]", "--reader", "spark")],
    "jsonl": [("--master", "local[2]",)],
    "parquet": [("--master", "local[2]"), ("--master", "local[2]", "--reader", "spark")],
}


@pytest.mark.spark
@pytest.mark.parametrize("policy", ["skip", "keep"])
def test_engines_train_the_same_bytes_and_count_the_same_rows(spark, corpora, tmp_path, policy):
    for input_format, runs in SPARK_READERS.items():
        source = corpora[input_format]
        _, expected_hash, expected = train(UNIGRAM, source, tmp_path / f"{input_format}-here", "--on-bad-row", policy)
        assert expected["engine"] == "in-process" and expected["bad_rows"]["invalid_utf8"]["rows"] == \
            {"text": 2, "jsonl": 1, "parquet": 2}[input_format]
        for index, extra in enumerate(runs):
            _, model_hash, manifest = train(UNIGRAM, source, tmp_path / f"{input_format}-{index}", "--on-bad-row",
                                            policy, *extra)
            assert manifest["engine"] == "spark"
            assert manifest["reader"] == ("spark" if "--reader" in extra or input_format == "jsonl"
                                          else "pyarrow in the tasks")
            assert model_hash == expected_hash, (input_format, extra)
            assert manifest["bad_rows"] == expected["bad_rows"], (input_format, extra)
            assert manifest["training_documents"] == expected["training_documents"], (input_format, extra)


@pytest.mark.spark
def test_spark_errors_name_the_file_and_line(spark, corpora, tmp_path, capsys):
    for input_format, runs in SPARK_READERS.items():
        for index, extra in enumerate(runs):
            assert train(UNIGRAM, corpora[input_format], tmp_path / f"{input_format}-{index}", *extra)[0] == 2
            line = error_line(capsys)
            expected = {"text": "line 41: not valid UTF-8", "jsonl": "line 21: not a JSON object",
                        "parquet": "row 41: not valid UTF-8"}[input_format]
            assert line.startswith(f"shardpiece train: error: {corpora[input_format]}, {expected}"), (extra, line)


@pytest.mark.spark
def test_a_file_this_process_cannot_open_is_named_without_a_line(spark, corpora, tmp_path, capsys):
    """A ``.bz2`` file (read by Spark's Hadoop codec only): Spark names the file holding the bad row."""
    source = tmp_path / "c.jsonl.bz2"
    source.write_bytes(bz2.compress(open(corpora["jsonl"], "rb").read()))
    assert train(BPE_BYTES, str(source), tmp_path / "out", "--master", "local[2]")[0] == 2
    line = error_line(capsys)
    assert line.startswith(f"shardpiece train: error: {source} (no line number: this process finds it in local "
                           "plain, .gz and .zst files only): 1 malformed JSON line (not a JSON object); pass "
                           "--on-bad-row skip"), line
