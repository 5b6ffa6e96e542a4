"""The figures ``shardpiece evaluate`` reports (:func:`tokenizer.evaluation.measure`) on hand-checkable texts, the
word unit, and how ``--model`` values are read."""

from __future__ import annotations

import pytest

from tokenizer import Model, Tokenizer
from tokenizer.errors import ConfigError, ModelFileError
from tokenizer.evaluation import (LONGEST_MEAN_WORD, count_words, describe_model, load_evaluated_model, measure,
                                  split_tiktoken_pattern)


def test_measure_a_byte_level_model_by_hand():
    figures = measure(Tokenizer(Model.byte_level([b"ab"], [-1.0])), [b"ab cd", b"abab"])
    assert (figures["bytes"], figures["tokens"], figures["words"], figures["word_unit"]) == (9, 6, 3, "word")
    # ids: ab, " ", c, d | ab, ab
    assert figures["bytes_per_token"] == 1.5 and figures["tokens_per_word"] == 2.0
    assert figures["vocab_used"] == 4 / 257 and figures["unknown_rate"] == 0.0 and figures["round_trip"] is True
    assert figures["encode_mb_per_s"] > 0 and figures["documents"] == 2


def test_measure_no_text():
    figures = measure(Tokenizer(Model.byte_level([], [])), [])
    assert figures["bytes_per_token"] is None and figures["tokens_per_word"] is None
    assert figures["vocab_used"] == 0.0 and figures["round_trip"] is True


def test_byte_fallback_counts_as_unknown_and_a_lossy_model_fails_the_round_trip(tokenizers):
    unigram = tokenizers["unigram"]  # trained with SentencePiece's defaults: byte fallback off, spaces collapsed
    figures = measure(unigram, ["a  b".encode(), "\U0001F600".encode()])
    assert figures["round_trip"] is False
    assert figures["unknown_rate"] > 0  # the emoji is the unknown piece


def test_word_unit():
    assert count_words([b"ab cd", b" e\tf\n"]) == (4, "word")
    long_word = "x" * (LONGEST_MEAN_WORD + 1)
    assert count_words([long_word.encode()]) == (LONGEST_MEAN_WORD + 1, "character")
    assert count_words(["日本語の文です".encode()]) == (1, "word")  # one word of 7 characters: not long enough
    assert count_words(["これは日本語の文章です".encode()] * 2) == (22, "character")


def test_model_values(tmp_path, tokenizers):
    assert split_tiktoken_pattern("cl.tiktoken:cl100k") == ("cl.tiktoken", "cl100k")
    assert split_tiktoken_pattern("C:/models/bp.model") == ("C:/models/bp.model", None)
    from tokenizer.interop.huggingface import save_huggingface

    save_huggingface(tokenizers["bpe byte_level"].model, str(tmp_path / "hf"))
    loaded = load_evaluated_model(str(tmp_path / "hf"))
    assert loaded.encode("Tokenizers split text.") == tokenizers["bpe byte_level"].encode("Tokenizers split text.")
    assert describe_model(loaded.model)["format"] == "tokenizer.json"
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelFileError, match="a folder without a tokenizer.json"):
        load_evaluated_model(str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="--tiktoken-pattern"):
        load_evaluated_model(str(tmp_path / "x.tiktoken"))
    assert describe_model(tokenizers["bytepiece"].model) == {
        "algorithm": "bytepiece", "format": "shardpiece", "vocab_size": tokenizers["bytepiece"].vocab_size}
