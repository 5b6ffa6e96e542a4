"""``shardpiece encode`` and invalid UTF-8 (the bad-row rule of every command, :mod:`tokenizer.bad_rows`): byte-level
models encode the bytes as they are; SentencePiece-style models stop at the first invalid line naming it, or skip or
keep (U+FFFD) it with ``--on-bad-row``, counted in one line on stderr. Models are trained on ``data/sample``."""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pytest

import jobs.encode
from jobs.cli import main
from tests.jobs.test_encode import FakeStream
from tests.tokenizer.sample_models import sample_lines
from tokenizer import Tokenizer
from tokenizer.packed import from_arrow

BYTE_LEVEL = ("bytepiece", "bpe byte_level")
SENTENCEPIECE_STYLE = ("unigram", "bpe sentencepiece")
CHOICES = ("pass --on-bad-row skip to drop such lines or --on-bad-row keep to encode them with U+FFFD replacements "
           "(either way they are counted on stderr)")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A model file of each family, trained on 100 lines of each sample: ``{family: path}``."""
    from tokenizer.trainers import bpe, bytepiece, unigram

    lines = sample_lines(100)
    trained = {
        "unigram": unigram.train_unigram_local(lines, unigram.UnigramSettings(vocab_size=1200)),
        "bpe sentencepiece": bpe.train_bpe_local(
            lines, bpe.BpeSettings(vocab_sizes=(1200,), pretokenizer="sentencepiece"))[1200],
        "bytepiece": bytepiece.train_bytepiece_local(
            lines, bytepiece.TrainSettings(vocab_sizes=(600,), min_count=2))[600],
        "bpe byte_level": bpe.train_bpe_local(lines, bpe.BpeSettings(vocab_sizes=(600,)))[600],
    }
    directory = tmp_path_factory.mktemp("models")
    paths = {}
    for family, model in trained.items():
        paths[family] = str(directory / f"{family.replace(' ', '-')}.model")
        model.save(paths[family])
    return paths


def corpus() -> tuple[list[bytes], list[int]]:
    """The first 4 lines of each sample with invalid UTF-8 at lines 5, 9 and 11 (from 1): a Chinese line cut inside
    its last character, a Latin-1 line, a Japanese line with a stray byte. Returns the lines and those numbers."""
    lines = sample_lines(4)
    assert len(lines) == 12 and lines[4].endswith("》".encode())
    lines[4] = lines[4][:-1]
    lines[8] = "naïve café, déjà vu".encode("latin-1")
    lines[10] = lines[10][:12] + b"\xff" + lines[10][12:]
    return lines, [5, 9, 11]


def _encode(model: str, path, *options: str) -> int:
    return main(["encode", "--model", model, "--input", str(path), "--output", str(path) + ".ids", *options])


def _ids(path) -> list[list[int]]:
    with open(str(path) + ".ids", "rb") as handle:
        return [[int(i) for i in line.split()] for line in handle.read().split(b"\n")[:-1]]


def test_the_invalid_lines_are_what_the_helper_finds():
    from tokenizer.bad_rows import invalid_utf8_mask

    lines, invalid = corpus()
    rows = pa.array(lines, pa.binary())
    assert [index + 1 for index in np.flatnonzero(invalid_utf8_mask(*from_arrow(rows)))] == invalid
    assert [line.decode() for n, line in enumerate(lines, 1) if n not in invalid]  # raises if one is invalid


@pytest.mark.parametrize("family", BYTE_LEVEL)
@pytest.mark.parametrize("policy", ["error", "skip", "keep"])
def test_byte_level_models_encode_invalid_utf8_as_its_bytes_under_every_policy(models, tmp_path, capsys, family,
                                                                               policy):
    lines, _ = corpus()
    source = tmp_path / "in.txt"
    source.write_bytes(b"\n".join(lines) + b"\n")
    assert _encode(models[family], source, "--on-bad-row", policy) == 0
    assert capsys.readouterr().err == ""
    tok = Tokenizer.load(models[family])
    assert [tok.decode_bytes(ids) for ids in _ids(source)] == lines


@pytest.mark.parametrize("family", SENTENCEPIECE_STYLE)
def test_sentencepiece_style_models_stop_at_the_first_invalid_line_naming_it(models, tmp_path, capsys,
                                                                            monkeypatch, family):
    monkeypatch.setattr(jobs.encode, "BATCH_LINES", 3)  # the first invalid line is in the second batch
    lines, invalid = corpus()
    source = tmp_path / "in.txt"
    source.write_bytes(b"\n".join(lines) + b"\n")
    expected = (f"shardpiece encode: error: {source}:{invalid[0]}: not valid UTF-8 (this model's normalizer works "
                f"on characters); {CHOICES}\n")
    for options in ([], ["--on-bad-row", "error"]):
        assert _encode(models[family], source, *options) == 2
        assert capsys.readouterr().err == expected
    monkeypatch.setattr(sys, "stdin", FakeStream(source.read_bytes()))
    monkeypatch.setattr(sys, "stdout", FakeStream())
    assert main(["encode", "--model", models[family]]) == 2
    assert capsys.readouterr().err == expected.replace(str(source), "<stdin>")


@pytest.mark.parametrize("family", SENTENCEPIECE_STYLE)
def test_sentencepiece_style_models_skip_or_keep_invalid_lines_and_count_them(models, tmp_path, capsys,
                                                                             monkeypatch, family):
    monkeypatch.setattr(jobs.encode, "BATCH_LINES", 3)
    lines, invalid = corpus()
    source = tmp_path / "in.txt"
    source.write_bytes(b"\n".join(lines) + b"\n")
    tok = Tokenizer.load(models[family])
    counted = f"shardpiece encode: 3 of {len(lines)} lines were not valid UTF-8 (the first: {source}:5): "

    assert _encode(models[family], source, "--on-bad-row", "skip") == 0
    assert capsys.readouterr().err == counted + "skipped (--on-bad-row skip), so the output has no line for them\n"
    valid = [line for n, line in enumerate(lines, 1) if n not in invalid]
    assert _ids(source) == [tok.encode(line) for line in valid]

    assert _encode(models[family], source, "--on-bad-row", "keep") == 0
    assert capsys.readouterr().err == counted + ("encoded with U+FFFD replacements (--on-bad-row keep), so decode "
                                                 "gives U+FFFD for their invalid bytes\n")
    kept = _ids(source)
    assert kept == [tok.encode(line.decode("utf-8", "replace")) for line in lines]
    assert kept[8] == tok.encode("na\ufffdve caf\ufffd, d\ufffdj\ufffd vu") and kept[0] == tok.encode(lines[0])


@pytest.mark.parametrize("family", SENTENCEPIECE_STYLE)
def test_valid_input_prints_nothing_on_stderr_under_every_policy(models, tmp_path, capsys, family):
    lines, invalid = corpus()
    source = tmp_path / "in.txt"
    source.write_bytes(b"\n".join(line for n, line in enumerate(lines, 1) if n not in invalid) + b"\n")
    for policy in ("error", "skip", "keep"):
        assert _encode(models[family], source, "--on-bad-row", policy) == 0
        assert capsys.readouterr().err == ""
        assert len(_ids(source)) == len(lines) - len(invalid)


def test_keep_replaces_invalid_utf8_as_tokenize_does():
    from pipelines.tokenize.options import MALFORMED, TEXT
    from pipelines.tokenize.task import classify_rows

    lines, _ = corpus()
    batch = pa.RecordBatch.from_pydict({TEXT: pa.array(lines, pa.binary()),
                                        MALFORMED: pa.array([False] * len(lines))})
    tokenized = classify_rows(batch, "keep", 1 << 20, str).texts.to_pylist()
    encoded, ending = jobs.encode.InvalidLines("keep", "in.txt").apply(lines, b"\n")
    assert [text.encode() for text in tokenized] == encoded and ending == b"\n"


@pytest.mark.parametrize("family", SENTENCEPIECE_STYLE)
def test_skipping_a_last_line_without_newline_leaves_the_kept_lines_newlines(models, tmp_path, capsys, family):
    lines, _ = corpus()
    source = tmp_path / "in.txt"
    source.write_bytes(b"\n".join(lines[:4]) + b"\n" + lines[4])  # line 5, invalid, has no newline
    assert _encode(models[family], source, "--on-bad-row", "skip") == 0
    assert "1 of 5 lines were not valid UTF-8 (the first: " in capsys.readouterr().err
    tok = Tokenizer.load(models[family])
    written = (tmp_path / "in.txt.ids").read_bytes()
    assert written.endswith(b"\n") and _ids(source) == [tok.encode(line) for line in lines[:4]]
