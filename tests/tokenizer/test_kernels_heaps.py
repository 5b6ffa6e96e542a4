"""The merge loops' heaps (tokenizer/kernels/heaps.py) against sorting, their obviously-correct twin."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer.kernels.heaps import min_heap_pop, min_heap_push, triple_heap_pop, triple_heap_push

OPERATIONS = st.lists(st.one_of(st.tuples(st.just("push"), st.integers(0, 50), st.integers(0, 5), st.integers(0, 9)),
                                st.just(("pop",))), max_size=80)


@settings(max_examples=200, deadline=None)
@given(OPERATIONS)
def test_min_heap_pops_the_smallest_key(operations):
    heap, size, kept = np.zeros(100, np.int64), 0, []
    for operation in operations:
        if operation[0] == "push":
            size = min_heap_push(heap, size, operation[1])
            kept.append(operation[1])
        elif size:
            assert heap[0] == min(kept)
            kept.remove(heap[0])
            size = min_heap_pop(heap, size)
    assert sorted(heap[:size].tolist()) == sorted(kept)


@settings(max_examples=200, deadline=None)
@given(OPERATIONS)
def test_triple_heap_pops_the_highest_count_then_smaller_tie_then_smaller_key(operations):
    counts, ties, keys = (np.zeros(100, np.int64) for _ in range(3))
    size, kept = 0, []
    for operation in operations:
        if operation[0] == "push":
            _, count, tie, key = operation
            size = triple_heap_push(counts, ties, keys, size, count, tie, key)
            kept.append((count, tie, key))
        elif size:
            best = min(kept, key=lambda entry: (-entry[0], entry[1], entry[2]))
            size = triple_heap_pop(counts, ties, keys, size)
            assert (counts[size], ties[size], keys[size]) == best  # the popped entry is left at the old end
            kept.remove(best)
    assert size == len(kept)
