"""The per-call path of Tokenizer.encode (bound kernel arguments, per-thread buffers, SentencePiece normalization
fed straight to the encoder): the same ids as encode_batch and as sentencepiece, for every buffer situation."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings, strategies as st

from tokenizer import Model, Tokenizer
from tokenizer.interop.sentencepiece import load_sentencepiece

from sentencepiece_oracle import make_corpus, processor, train_model

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def nfkc_pair():
    blob = train_model(make_corpus(1500, seed=11), vocab_size=800)  # sentencepiece's defaults: nmt_nfkc
    return Tokenizer(load_sentencepiece(blob)), processor(blob)


def test_texts_that_outgrow_the_buffers(nfkc_pair):
    tok, sp = nfkc_pair
    texts = [
        "\ufdfa" * 300,          # NFKC: 3 bytes -> 33, more than the 4n + 144 bytes of the fast buffer
        "a b" * 400_000,         # 1.2 MB: buffers not kept
        "x",                     # and the small buffers still work afterwards
        "", " ", "ﬁ①", "\ufdfa",
    ]
    for text in texts:
        assert tok.encode(text) == sp.encode(text) == tok.encode_batch([text], num_threads=1)[0]
    assert tok.encode("abc", add_bos=False, add_eos=True) == sp.encode("abc") + [tok.eos_id]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=5))
def test_fast_path_equals_sentencepiece_and_batch(nfkc_pair, texts):
    tok, sp = nfkc_pair
    assert [tok.encode(t) for t in texts] == sp.encode(texts) == tok.encode_batch(texts, num_threads=1)


def test_threads_get_their_own_buffers(nfkc_pair):
    tok, _ = nfkc_pair
    texts = make_corpus(400, seed=5) + ["\ufdfa" * 50, "long " * 5000]
    expected = [tok.encode(t) for t in texts]
    results: dict[int, list] = {}

    def work(k):
        results[k] = [tok.encode(t) for t in (texts[k:] + texts[:k])]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for k in range(4):
        assert results[k] == expected[k:] + expected[:k]


@pytest.mark.parametrize("normalizer", ["identity", "nfc", "nfkc"])
def test_byte_level_models_per_call_equal_batch(normalizer):
    tok = Tokenizer(Model.byte_level([b"ab", b"\xef\xac\x81", b"fi"], [-1.0, -2.0, -1.5],
                                     normalizer={"name": normalizer}, specials=("<s>", "</s>")))
    texts = ["abﬁfi", "", "x" * 3000, "é", "ab" * 10]
    assert [tok.encode(t, add_bos=True, add_eos=True) for t in texts] == tok.encode_batch(texts, add_bos=True,
                                                                                          add_eos=True)
    if normalizer == "identity":  # any bytes
        assert tok.encode(b"\xff\xfeab") == [255, 254, 256]
