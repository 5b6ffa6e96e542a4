"""The shared hash-table convention (tokenizer/kernels/hash_table.py) against Python's set and dict."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer.kernels.hash_table import EMPTY, build_byte_trie, find_slot, hash_slot, table_bits, trie_child
from tokenizer.packed import pack


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


def test_trie_of_the_docstring_example():
    data, offsets = pack([b"a", b"ab"])
    edge_keys, edge_child, bits, node_value = build_byte_trie(data, offsets, np.array([7, 9], np.int32))
    assert trie_child(edge_keys, edge_child, bits, 0, ord("a")) == 1
    assert trie_child(edge_keys, edge_child, bits, 1, ord("b")) == 2
    assert trie_child(edge_keys, edge_child, bits, 0, ord("b")) == -1
    assert list(node_value) == [-1, 7, 9]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=6), max_size=40), st.lists(st.binary(max_size=8), max_size=20))
def test_byte_trie_walk_matches_a_dict_of_the_keys(keys, queries):
    values = np.arange(len(keys), dtype=np.int32)
    expected = {key: i for i, key in enumerate(keys) if key}  # the last of repeated keys wins; empty keys skipped
    data, offsets = pack(keys)
    edge_keys, edge_child, bits, node_value = build_byte_trie(data, offsets, values)
    for text in queries + keys:
        node = 0
        for end in range(1, len(text) + 1):
            node = trie_child(edge_keys, edge_child, bits, node, text[end - 1])
            prefix = text[:end]
            if node < 0:
                assert not any(key.startswith(prefix) for key in expected)
                break
            assert node_value[node] == expected.get(prefix, -1)
