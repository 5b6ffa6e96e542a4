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
