"""Lossless round trips with byte-level models and the identity normalizer."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer import Model, Tokenizer

PIECES = [b"  ", b"\n\n", b"th", b"the", " \u4e2d".encode(), "\u4e2d\u6587".encode(), "\U0001f600".encode()[:2],
          b"\x00\x00", b"ab\xff", "\u00e9".encode()]
UNIGRAM = Tokenizer(Model.byte_level(PIECES, [-2.0 - 0.1 * i for i in range(len(PIECES))]))
BPE = Tokenizer(Model.byte_level(PIECES[:3], [-1.0, -2.0, -1.5], algorithm="bpe"))
TEXT = st.text(alphabet=st.sampled_from(list("ab th\n\t\x00中文é😀👍🏽 ") + ["\u200d", "\u2581"]), max_size=60) | st.text()


@settings(max_examples=200, deadline=None)
@given(text=TEXT)
def test_text_round_trip(text):
    for tok in (UNIGRAM, BPE):
        assert tok.decode(tok.encode(text)) == text


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=80))
def test_bytes_round_trip_including_invalid_utf8(data):
    for tok in (UNIGRAM, BPE):
        assert tok.decode_bytes(tok.encode(data)) == data
        ids = tok.encode(data, alpha=0.5, seed=1) if tok is UNIGRAM else tok.encode(data, dropout=0.3, seed=1)
        assert tok.decode_bytes(ids) == data


def test_runs_and_a_one_megabyte_line():
    texts = ["\n" * 1000, " " * 777, "\x00" * 50, "😀" * 300, "mixed 中文 and English\n\nnext", ""]
    big = ("the 中文 test 😀\n" * 70000)[:1_000_000]
    for tok in (UNIGRAM, BPE):
        for text in texts + [big]:
            assert tok.decode(tok.encode(text)) == text
        batch = tok.encode_batch(texts + [big], num_threads=2)
        assert [tok.decode(ids) for ids in batch] == texts + [big]


def test_arrow_batch_matches_list_and_respects_slices_and_nulls():
    texts = ["the cat", None, "中文 😀", "", "\n\nthe"] * 50
    array = pa.array(texts, type=pa.string())[3:]
    expected = [None if t is None else UNIGRAM.encode(t) for t in texts[3:]]
    for kind in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
        for threads in (1, 2):
            out = UNIGRAM.encode_batch(array.cast(kind), num_threads=threads)
            assert out.type == pa.list_(pa.int32())
            assert out.to_pylist() == expected
    chunked = UNIGRAM.encode_batch(pa.chunked_array([array, array]))
    assert chunked.to_pylist() == expected + expected
    assert UNIGRAM.encode_batch(pa.array([], pa.string())).to_pylist() == []
    ids = np.asarray(UNIGRAM.encode_batch(pa.array(["the the"])).values)
    assert ids.dtype == np.int32
