"""``.tiktoken`` files as byte-level BPE models: a byte-level BPE model trained on the sample, written as a
``.tiktoken`` file and read back, gives tiktoken's own ids (tiktoken.Encoding over the same ranks and pattern) and
its source model's segmentation; bad files and unsupported patterns fail with the fix."""

from __future__ import annotations

import base64

import pytest

from tests.tokenizer.sample_models import sample_lines, sample_texts
from tokenizer import Tokenizer
from tokenizer.errors import ConfigError, ModelFileError
from tokenizer.interop.tiktoken_files import (TIKTOKEN_PATTERN_TEXT, load_tiktoken, merge_split,
                                              model_from_tiktoken_ranks, read_tiktoken_ranks, tiktoken_file_text)

SINGLE_BYTES = {bytes([b]): b for b in range(256)}


def test_merge_split_replays_the_lower_ranks():
    ranks = {b"a": 0, b"b": 1, b"c": 2, b"ab": 3, b"abc": 4, b"bc": 5, b"ca": 6}
    assert merge_split(ranks, b"abc") == 2  # ab (3) then ab + c
    assert merge_split(ranks, b"ab") == 1
    assert merge_split({**ranks, b"cab": 7}, b"cab") == 1  # ab (3) before ca (6): c + ab
    assert merge_split({**ranks, b"acb": 7}, b"acb") is None  # neither ac nor cb is a token: an UNUSED piece


def test_a_hand_written_file(tmp_path):
    path = tmp_path / "tiny.tiktoken"
    lines = [base64.b64encode(bytes([b])) + b" %d" % b for b in range(256)] + [b"YWI= 256", b"", b"YWJj 257"]
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert read_tiktoken_ranks(path)[b"ab"] == 256
    tokenizer = Tokenizer(load_tiktoken(path, "gpt2"))
    assert tokenizer.vocab_size == 258 and tokenizer.id_to_piece(256) == b"ab"
    assert tokenizer.encode("abc ab") == [257, 32, 256]  # pre-tokens "abc" (a token) and " ab" (" " + "ab")
    assert tokenizer.decode_bytes(tokenizer.encode("abc ab")) == b"abc ab"


@pytest.mark.parametrize("pattern, ours", [("gpt2", "gpt2"), ("cl100k", "llama3"), ("o200k", "o200k")])
def test_tiktoken_gives_the_same_ids(pattern, ours, tmp_path):
    tiktoken = pytest.importorskip("tiktoken")
    from tokenizer.trainers import bpe

    model = bpe.train_bpe_local(sample_lines(200), bpe.BpeSettings(vocab_sizes=(800,), pattern=ours))[800]
    path = tmp_path / "m.tiktoken"
    path.write_bytes(tiktoken_file_text(model))
    loaded = Tokenizer(load_tiktoken(path, pattern))
    encoding = tiktoken.Encoding(name="m", pat_str=TIKTOKEN_PATTERN_TEXT[pattern], special_tokens={},
                                 mergeable_ranks=read_tiktoken_ranks(path))
    source = Tokenizer(model)
    texts = sample_texts(300)
    assert [loaded.encode(t) for t in texts] == [encoding.encode_ordinary(t) for t in texts]
    assert [[source.id_to_piece(i) for i in source.encode(t)] for t in texts] == \
           [[loaded.id_to_piece(i) for i in loaded.encode(t)] for t in texts]


def test_bad_files_and_patterns_say_the_fix(tmp_path):
    path = tmp_path / "bad.tiktoken"
    path.write_bytes(b"YQ== 0\nnot a line\n")
    with pytest.raises(ModelFileError, match="line 2 .* is not 'BASE64TOKEN RANK'"):
        read_tiktoken_ranks(path)
    with pytest.raises(ModelFileError, match="cannot read the file"):
        read_tiktoken_ranks(tmp_path / "missing.tiktoken")
    with pytest.raises(ModelFileError, match="repeated or leaves a gap"):
        model_from_tiktoken_ranks({**SINGLE_BYTES, b"ab": 300}, "gpt2")
    with pytest.raises(ModelFileError, match="single bytes"):
        model_from_tiktoken_ranks({b"a": 0}, "gpt2")
    with pytest.raises(ConfigError, match="unknown tiktoken pattern 'p50k': use one of gpt2, cl100k, o200k"):
        model_from_tiktoken_ranks(SINGLE_BYTES, "p50k")


def test_only_byte_level_bpe_models_are_written(tokenizers):
    with pytest.raises(ConfigError, match="--to huggingface or --to sentencepiece"):
        tiktoken_file_text(tokenizers["unigram"].model)
