"""BPE training: kernels vs twins, the chunk-count monoid, models (layout, nesting, lossless), settings errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tokenizer import Tokenizer
from tokenizer.errors import ConfigError
from tokenizer.kernels.bpe_train import count_spans, learn_merges
from tokenizer.kernels.reference_bpe_train import ref_count_spans, ref_learn_merges
from tokenizer.trainers import bpe

words_strategy = st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=9), min_size=1, max_size=6)


def run_kernel(words, counts, lengths, max_merges, min_count, max_len):
    symbols = np.array([s for w in words for s in w], np.int32)
    offsets = np.zeros(len(words) + 1, np.int64)
    offsets[1:] = np.cumsum([len(w) for w in words])
    left, right, merged = learn_merges(symbols, offsets, np.array(counts, np.int64), np.array(lengths, np.int64),
                                       max_merges, min_count, max_len)
    return list(zip(left.tolist(), right.tolist(), merged.tolist()))


def test_learn_merges_docstring_example():
    assert run_kernel([[0, 1, 0, 1], [0, 1]], [1, 2], [1, 1], 5, 1, 99) == [(0, 1, 4), (2, 2, 1)]


@settings(max_examples=200, deadline=None)
@given(words=words_strategy, data=st.data())
def test_learn_merges_matches_twin(words, data):
    counts = data.draw(st.lists(st.integers(1, 5), min_size=len(words), max_size=len(words)))
    lengths = data.draw(st.lists(st.integers(1, 2), min_size=4, max_size=4))
    max_merges = data.draw(st.integers(0, 12))
    min_count = data.draw(st.integers(1, 3))
    max_len = data.draw(st.integers(2, 9))
    assert run_kernel(words, counts, lengths, max_merges, min_count, max_len) == ref_learn_merges(
        words, counts, lengths, max_merges, min_count, max_len)


@settings(max_examples=100, deadline=None)
@given(spans=st.lists(st.binary(max_size=3), max_size=12), data=st.data())
def test_count_spans_matches_twin(spans, data):
    weights = data.draw(st.lists(st.integers(1, 9), min_size=len(spans), max_size=len(spans)))
    blob = b"".join(spans)
    ends = np.cumsum([len(s) for s in spans]).astype(np.int64)
    starts = ends - np.array([len(s) for s in spans], np.int64)
    first, counts = count_spans(np.frombuffer(blob, np.uint8), starts, ends, np.array(weights, np.int64))
    assert (first.tolist(), counts.tolist()) == ref_count_spans(spans, weights)


def table(result):
    return sorted(zip(bpe.sort_chunks(*result)[0], bpe.sort_chunks(*result)[1].tolist()))


@pytest.mark.parametrize("pretokenizer", ["byte_level", "sentencepiece"])
@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.text(alphabet="ab c\n中'", max_size=12), max_size=6), cut=st.integers(0, 6))
def test_chunk_counts_are_a_monoid(pretokenizer, texts, cut):
    s = bpe.BpeSettings(pretokenizer=pretokenizer)
    whole = bpe.count_chunks(*bpe.pack_texts(texts), s)
    parts = bpe.merge_chunk_counts(bpe.count_chunks(*bpe.pack_texts(texts[:cut]), s),
                                   bpe.count_chunks(*bpe.pack_texts(texts[cut:]), s))
    assert table(whole) == table(parts)
    assert table(bpe.merge_chunk_counts(bpe.empty_chunk_counts(), whole)) == table(whole)


def test_sentencepiece_chunks():
    s = bpe.BpeSettings(pretokenizer="sentencepiece")
    text, starts, ends = bpe.chunk_spans(*bpe.pack_texts(["a  bc\n\nd"]), s)
    chunks = [bytes(text[a:b]).decode() for a, b in zip(starts, ends)]
    assert chunks == ["a", "▁", "▁bc", "\n\n", "d"]


CORPUS = ["the cat sat on the mat", "the dog's bone", "  indented\tline\n", "中文中文 テキスト", "x" * 30] * 3


@pytest.mark.parametrize("pretokenizer,pattern", [("byte_level", "gpt2"), ("byte_level", "llama3"),
                                                  ("sentencepiece", "gpt2")])
def test_models_are_nested_and_lossless(pretokenizer, pattern):
    s = bpe.BpeSettings(vocab_sizes=(280, 300), pretokenizer=pretokenizer, pattern=pattern)
    models = bpe.train_bpe_local(CORPUS, s)
    small, large = models[280], models[300]
    assert small.vocab_size <= 280 and large.vocab_size <= 300
    assert small.pieces[:-3] == large.pieces[:small.vocab_size - 3]
    assert small.pieces[:256] == [bytes([b]) for b in range(256)]
    assert large.algorithm == "bpe" and large.pieces[-3:] == [b"<pad>", b"<s>", b"</s>"]
    tok = Tokenizer(large)
    for text in CORPUS + ["unseen ✓ text\x00", ""]:
        ids = tok.encode(text)
        assert tok.decode(ids) == text
    assert len(tok.encode(CORPUS[0])) < len(CORPUS[0])


def test_byte_level_model_replays_merges():
    model = bpe.train_bpe_local(["abab ab"] * 4, bpe.BpeSettings(vocab_sizes=(262,), special_tokens=()))[262]
    tok = Tokenizer(model)
    assert [tok.id_to_piece(i) for i in tok.encode("abab ab")] == [b"abab", b" ab"]


def test_same_model_for_any_document_order():
    s = bpe.BpeSettings(vocab_sizes=(300,))
    assert bpe.train_bpe_local(CORPUS, s)[300] == bpe.train_bpe_local(CORPUS[::-1], s)[300]


@pytest.mark.parametrize("kwargs", [{"vocab_sizes": (100,)}, {"pattern": "gpt4"}, {"pretokenizer": "bert"},
                                    {"min_count": 0}, {"max_piece_length": 1}, {"special_tokens": ("a", "a")}])
def test_bad_settings(kwargs):
    with pytest.raises(ConfigError):
        bpe.BpeSettings(**kwargs).validate()
