"""Merge replay (byte-level BPE) kernel vs its twin, its bucket per rank vs its heap, and its work on long
repetitive pre-tokens: linear in the number of entries (counted by the kernel itself, no timing), for runs of one
character, of a two-character pattern, of one CJK character, of whitespace, and random or invalid-UTF-8 bytes."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer.kernels.bpe_ranked import (BUCKETS_ABOVE, FILTER_EXTRA_BITS, JOINABLE, bucket_merges, build_pair_table,
                                          filtered_pair_merge, heap_merges, merge_ranks, pair_merge, ranked_bpe_into)
from tokenizer.kernels.hash_table import hash_slot
from tokenizer.twins.bpe import ref_ranked_bpe

IDENTITY = np.arange(256, dtype=np.int32)


def merge_table(pairs: list[tuple[int, int]]):
    """Merges in rank order: merge m makes id 256 + m. Returns the kernel's tables and the twin's dict."""
    left = np.array([a for a, _ in pairs], np.int64)
    right = np.array([b for _, b in pairs], np.int64)
    merged = np.arange(256, 256 + len(pairs), dtype=np.int64)
    twin: dict[tuple[int, int], tuple[int, int]] = {}
    for m, pair in enumerate(pairs):
        twin.setdefault(pair, (256 + m, m))
    return build_pair_table(left, right, merged, merge_ranks(merged, np.arange(len(pairs)), 256 + len(pairs))), twin


def encode(tables, data: bytes) -> tuple[list[int], int]:
    """``(ids, steps)`` of one pre-token through the kernel."""
    pair_table, bits = tables
    n = len(data) + 1
    sym, nxt, prv, cand, heap, steps = (np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n, np.int32),
                                        np.empty(n, np.int64), np.empty(2 * n, np.int64), np.zeros(1, np.int64))
    out = np.empty(len(data) + 1, np.int32)
    end = ranked_bpe_into(pair_table, bits, IDENTITY, np.frombuffer(data, np.uint8), 0, len(data), sym, nxt,
                          prv, cand, heap, steps, np.zeros(1, np.uint64), out, 0)
    return out[:end].tolist(), int(steps[0])


@st.composite
def merges_and_text(draw, most_merges: int = 12, longest_text: int = 40):
    """A random merge table over a few bytes (merge m makes id 256 + m) and a text of those bytes."""
    alphabet = draw(st.lists(st.sampled_from(list(b"ab \xe4\xb8\xad\xff")), min_size=1, max_size=4, unique=True))
    ids = list(alphabet)
    pairs = []
    for _ in range(draw(st.integers(0, most_merges))):
        pair = (draw(st.sampled_from(ids)), draw(st.sampled_from(ids)))
        pairs.append(pair)
        ids.append(256 + len(pairs) - 1)
    text = bytes(draw(st.lists(st.sampled_from(alphabet), max_size=longest_text)))
    return pairs, text


@settings(max_examples=400, deadline=None)
@given(merges_and_text())
def test_kernel_equals_twin(case):
    pairs, text = case
    tables, twin = merge_table(pairs)
    ids, _ = encode(tables, text)
    assert ids == ref_ranked_bpe(twin, IDENTITY, text)


def doubling_merges(unit: bytes, levels: int = 12) -> list[tuple[int, int]]:
    """Merges that build ``unit``, then ``unit`` x2, x4, ... (what BPE learns from long runs)."""
    pairs: list[tuple[int, int]] = []
    current = unit[0]
    for byte in unit[1:]:
        pairs.append((current, byte))
        current = 256 + len(pairs) - 1
    for _ in range(levels):
        pairs.append((current, current))
        current = 256 + len(pairs) - 1
    return pairs


WORST_CASES = {
    "one character": (b"a", lambda n: b"a" * n),
    "two-character pattern": (b"ab", lambda n: b"ab" * (n // 2)),
    "one CJK character": ("中".encode(), lambda n: "中".encode() * (n // 3)),
    "whitespace": (b" ", lambda n: b" " * n),
    "random bytes": (b"ab", lambda n: random.Random(n).randbytes(n)),
    "invalid UTF-8": (b"\xff\xfe", lambda n: b"\xff\xfe\xc3" * (n // 3)),
}


def test_work_is_linear_on_long_repetitive_pretokens():
    for name, (unit, make) in WORST_CASES.items():
        tables, twin = merge_table(doubling_merges(unit))
        small, large = make(20_000), make(200_000)
        small_ids, small_steps = encode(tables, small)
        large_ids, large_steps = encode(tables, large)
        # every merge pops one heap entry and pushes at most two, so at most 3n entries are ever popped
        assert small_steps <= 3 * len(small) and large_steps <= 3 * len(large), name
        assert large_steps <= 1.5 * 10 * max(small_steps, 1), (name, small_steps, large_steps)
        if name == "one character":
            assert len(small_ids) < 20 and len(large_ids) < 120  # long runs became long pieces
        assert ref_ranked_bpe(twin, IDENTITY, small[:3000]) == encode(tables, small[:3000])[0], name
        assert len(large) > BUCKETS_ABOVE and large_ids == merged_symbols(heap_merges, tables, large)[0], name


def merged_symbols(merge, tables, data: bytes):
    """``(symbols, entries taken)`` after ``merge`` (heap_merges or bucket_merges) over the bytes of ``data``, or
    None where it gave way (-1)."""
    pair_table, bits = tables
    n = len(data)
    sym = np.frombuffer(data, np.uint8).astype(np.int32)
    nxt, prv, pool = np.empty(n, np.int32), np.empty(n, np.int32), np.empty(2 * n, np.int64)
    cand = np.array([pair_merge(pair_table, bits, sym[i], sym[i + 1]) for i in range(n - 1)] + [-1], np.int64)
    if merge is heap_merges:
        taken = heap_merges(pair_table, bits, sym, nxt, prv, cand, pool, n, 0.0, np.zeros(1, np.uint64))
    else:
        taken = bucket_merges(pair_table, bits, sym, nxt, prv, cand, pool, n)
    if taken < 0:
        return None
    symbols, node = [], 0
    while node < n:
        symbols.append(int(sym[node]))
        node = nxt[node]
    return symbols, taken


@settings(max_examples=400, deadline=None)
@given(merges_and_text(most_merges=16, longest_text=120), st.booleans(), st.data())
def test_bucket_merges_equal_the_heap_and_the_twin(case, later_parts, data):
    """A bucket per rank gives the heap's symbols, taking as many entries, whenever every merge's parts exist
    before it (it never gives way then, unless the merges list repeats a pair); with merges whose parts may be
    made later (pairs of lower rank can then appear) it gives the heap's symbols or gives way."""
    pairs, text = case
    if later_parts:  # some parts renamed to ids of later merges
        made = 256 + len(pairs)
        pairs = [(a if data.draw(st.booleans()) else data.draw(st.integers(256, max(256, made - 1))), b)
                 for a, b in pairs]
    tables, twin = merge_table(pairs)
    if not text:
        return
    heap = merged_symbols(heap_merges, tables, text)
    assert heap[0] == ref_ranked_bpe(twin, IDENTITY, text)
    buckets = merged_symbols(bucket_merges, tables, text)
    if not later_parts and len(set(pairs)) == len(pairs):
        assert buckets is not None
    assert buckets is None or buckets == heap


def test_a_long_pretoken_of_merges_that_do_not_rank_upwards_goes_to_the_heap():
    """Above BUCKETS_ABOVE bytes, merges whose parts come later (``aa`` made at rank 1, ``(aa, a)`` at rank 0):
    the buckets give way and the pre-token's ids are the heap's."""
    pairs = [(257, 97), (97, 97)]  # rank 0 joins "aa" (made by rank 1) and "a"
    tables, twin = merge_table(pairs)
    text = b"a" * (BUCKETS_ABOVE + 1001)
    assert merged_symbols(bucket_merges, tables, text) is None
    assert encode(tables, text)[0] == merged_symbols(heap_merges, tables, text)[0]
    assert encode(tables, text[:40])[0] == ref_ranked_bpe(twin, IDENTITY, text[:40])


def test_a_pretoken_without_any_merge_is_its_bytes_with_no_work_arrays_touched():
    # bytes that no merge joins (invalid UTF-8 beside merges of letters): the ids are the bytes, no heap entry is
    # taken and the linked-list arrays stay as they were (a long run of them costs one pass, not the merge loop)
    tables, twin = merge_table([(97, 98), (256, 97)])
    data = b"\xff\xfe\xc3" * 10_000
    pair_table, bits = tables
    n = len(data)
    sym, nxt, prv = np.empty(n, np.int32), np.full(n, -7, np.int32), np.full(n, -7, np.int32)
    cand, heap, steps = np.empty(n, np.int64), np.full(2 * n, -7, np.int64), np.zeros(1, np.int64)
    out = np.empty(n, np.int32)
    end = ranked_bpe_into(pair_table, bits, IDENTITY, np.frombuffer(data, np.uint8), 0, n, sym, nxt, prv, cand,
                          heap, steps, np.zeros(1, np.uint64), out, 0)
    assert out[:end].tolist() == list(data) and steps[0] == 0
    assert (nxt == -7).all() and (prv == -7).all() and (heap == -7).all()
    assert encode(tables, b"\xffabab\xfe")[0] == ref_ranked_bpe(twin, IDENTITY, b"\xffabab\xfe") == [255, 256, 256, 254]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 600), st.integers(0, 600)), max_size=300), st.randoms(use_true_random=False))
def test_the_merge_filter_answers_every_pair_as_the_slots_do(pairs, rng):
    # the filter rules out only pairs that are no merge: a merge is always found, a pair that is none (or only
    # joinable) is negative either way; and most pairs that are none are answered by the filter alone
    merged = np.arange(1000, 1000 + len(pairs), dtype=np.int64)
    left, right = np.array([a for a, _ in pairs], np.int64), np.array([b for _, b in pairs], np.int64)
    joinable = ([7, 8], [9, 10])
    pair_table, bits = build_pair_table(left, right, merged, merge_ranks(merged, np.arange(len(pairs)), 2000),
                                        joinable)
    assert len(pair_table) == (2 << bits) + (1 << (bits + FILTER_EXTRA_BITS - 6))
    asked = pairs + [(rng.randrange(600), rng.randrange(600)) for _ in range(500)] + list(zip(*joinable))
    passed = 0  # pairs that are no merge but whose bit is set (the slots probed)
    for a, b in asked:
        merge = pair_merge(pair_table, bits, a, b)
        filtered = filtered_pair_merge(pair_table, bits, a, b)
        assert filtered == merge if merge >= 0 else filtered < 0
        bit = int(hash_slot((a << 32) | b, bits + FILTER_EXTRA_BITS))
        passed += merge < 0 and (int(pair_table[(2 << bits) + (bit >> 6)]) >> (bit & 63)) & 1
    assert passed < len(asked) // 8
    if (7, 9) not in pairs:  # (a merge too, it keeps its merge)
        assert filtered_pair_merge(pair_table, bits, 7, 9) in (-1, JOINABLE)
    filter_words = pair_table[2 << bits:]
    set_bits = sum(bin(int(word) & (2**64 - 1)).count("1") for word in filter_words)
    assert set_bits <= len(set(pairs))
