"""How a batch is cut for several threads (tokenizer.batching)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer.batching import _ranges


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
