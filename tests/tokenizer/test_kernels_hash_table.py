"""The shared hash-table convention (tokenizer/kernels/hash_table.py) against Python's set and dict."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer.kernels.hash_table import EMPTY, find_slot, hash_slot, table_bits


def test_table_bits_is_the_smallest_power_of_two_at_least_sixteen():
    assert [table_bits(n) for n in (0, 16, 17, 32, 33)] == [4, 4, 5, 5, 6]


def test_home_slot_is_within_the_table():
    keys = np.arange(0, 10_000, 7, dtype=np.int64)
    assert all(0 <= hash_slot(k, 6) < 64 for k in keys)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**62), max_size=60), st.lists(st.integers(0, 2**62), max_size=20))
def test_find_slot_inserts_and_finds_like_a_set(inserted, queried):
    bits = int(table_bits(2 * len(inserted) + 2))
    keys = np.full(1 << bits, EMPTY, np.int64)
    for key in inserted:
        slot = find_slot(keys, bits, key)
        keys[slot] = key
    assert sorted(k for k in keys if k != EMPTY) == sorted(set(inserted))
    for key in queried + inserted:
        slot = find_slot(keys, bits, key)
        assert (keys[slot] == key) == (key in set(inserted))
        assert keys[slot] in (key, EMPTY)
