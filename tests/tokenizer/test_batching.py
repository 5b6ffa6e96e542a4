"""How a batch is cut for several threads, and the Arrow result it comes back as (tokenizer.batching)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer.batching import _ranges
from tests.tokenizer.sample_models import sample_texts


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 1 << 18), min_size=1, max_size=60), st.integers(2, 8))
def test_parallel_ranges_cover_every_document_once_in_order(sizes, threads):
    """The document ranges of a parallel batch (cut by the texts' sizes, or their UTF-8 bounds for a list):
    consecutive, none empty, from the first document to the last, at most one per thread."""
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    ranges = _ranges(memoryview(bounds), min(threads, len(sizes)))
    assert ranges[0][0] == 0 and ranges[-1][1] == len(sizes)
    assert all(begin < end for begin, end in ranges)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert len(ranges) <= threads
    assert _ranges(memoryview(np.arange(7, dtype=np.int32) * 1_000_000), 2) == [(0, 3), (3, 6)]


def test_a_batch_past_int32_offsets_comes_back_as_a_large_list(tokenizers, monkeypatch):
    """Past 2**31 ids the Arrow result is a large_list<int32> (int64 offsets): forced here through the offsets'
    dtype, on one and two threads, with nulls; the same lists as the list<int32> result."""
    import pyarrow as pa

    import tokenizer.batching as batching

    tok = tokenizers["unigram"]
    lines = sample_texts(600)
    texts = pa.array([None if i % 7 == 0 else lines[i % len(lines)] for i in range(3000)], pa.string())
    expected = tok.encode_batch(texts, num_threads=1)
    assert expected.type == pa.list_(pa.int32())
    monkeypatch.setattr(batching, "offsets_dtype", lambda ids_count: np.int64)
    for threads in (1, 2):
        got = tok.encode_batch(texts, num_threads=threads)
        assert got.type == pa.large_list(pa.int32()) and got.null_count == expected.null_count == 429
        assert got.to_pylist() == expected.to_pylist()


def test_a_few_short_texts_are_encoded_text_by_text_as_in_a_longer_list(tokenizers):
    """A list of at most FEW_TEXTS texts and FEW_TEXTS_LENGTH characters in all is encoded text by text (as
    encode() does): the same ids, with bos/eos too, as the same texts at the head of a list long enough for the
    batch path, for every kind of model, str and bytes; a bad text is named as the batch path names it."""
    import pytest

    from tokenizer import InputError
    from tokenizer.batching import FEW_TEXTS, FEW_TEXTS_LENGTH

    texts = [text[:200] for text in sample_texts(3)][:FEW_TEXTS - 2] + ["", "bytes: é".encode()]
    assert len(texts) <= FEW_TEXTS and sum(map(len, texts)) <= FEW_TEXTS_LENGTH
    longer = texts + ["filler"] * FEW_TEXTS
    for name, tok in tokenizers.items():
        ends = {"add_bos": tok.model.bos_id >= 0, "add_eos": tok.model.eos_id >= 0}
        for options in ({}, ends):
            few = tok.encode_batch(texts, num_threads=1, **options)
            assert few == tok.encode_batch(longer, num_threads=1, **options)[:len(texts)], name
            assert few == [tok.encode(text, **options) for text in texts] and any(few), name
    tok = tokenizers["unigram"]
    for batch in (["fine", "a\ud800"], ["fine", "a\ud800"] + ["filler"] * FEW_TEXTS):
        with pytest.raises(InputError, match="surrogate"):
            tok.encode_batch(batch)
    for batch in (["fine", 3], ["fine", 3] + ["filler"] * FEW_TEXTS):
        with pytest.raises(TypeError, match="str or bytes"):
            tok.encode_batch(batch)
