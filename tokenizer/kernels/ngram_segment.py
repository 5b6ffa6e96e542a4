"""Numba kernels of BytePiece training's n-gram language model: the model's lookup tables (packed n-gram key -> log
probability) and the Viterbi that segments chunks with it. Slow, obviously-correct twins live in
:mod:`tokenizer.twins.ngram_segment`; hypothesis tests check that each pair agrees.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.hash_table import EMPTY, hash_slot, table_bits
from tokenizer.kernels.ngram_count import NEG_INF, _key_byte, _pack_window


@kernel
def build_lookup_table_kernel(keys, values):
    """The n-gram model as lookup tables: ``(table, bits, unigrams, bigrams)``.

    ``unigrams`` float64[256] and ``bigrams`` float64[65536] (index ``b0 * 256 + b1``) hold the values of 1- and
    2-grams directly (``-inf`` when absent); longer keys live in ``table`` (int64, ``2 * 2**bits``): slot ``s``
    holds the key at ``2 s`` (or ``EMPTY``) and the float64 value's bits at ``2 s + 1`` (one cache line per
    probe); the slots and probing of :mod:`tokenizer.kernels.hash_table`, load factor at most 1/2.
    """
    unigrams = np.full(256, NEG_INF, dtype=np.float64)
    bigrams = np.full(65536, NEG_INF, dtype=np.float64)
    n_long = 0
    for idx in range(len(keys)):
        if (keys[idx] & 7) > 2:
            n_long += 1
    bits = table_bits(2 * n_long)
    size = np.int64(1) << bits
    mask = size - 1
    table = np.full(2 * size, EMPTY, dtype=np.int64)
    values = values.copy()
    value_bits = values.view(np.int64)
    for idx in range(len(keys)):
        key = keys[idx]
        length = key & 7
        if length == 1:
            unigrams[_key_byte(key, 0)] = values[idx]
        elif length == 2:
            bigrams[_key_byte(key, 0) * 256 + _key_byte(key, 1)] = values[idx]
        else:
            slot = hash_slot(key, bits)
            while table[2 * slot] != EMPTY and table[2 * slot] != key:
                slot = (slot + 1) & mask
            table[2 * slot] = key
            table[2 * slot + 1] = value_bits[idx]
    return table, bits, unigrams, bigrams


@kernel
def _lookup(table, bits, key):
    """The value of ``key`` in a :func:`build_lookup_table_kernel` table, as int64 bits; ``found`` False if absent."""
    mask = (len(table) >> 1) - 1
    slot = hash_slot(key, bits)
    while True:
        k = table[2 * slot]
        if k == key:
            return table[2 * slot + 1], True
        if k == EMPTY:
            return np.int64(0), False
        slot = (slot + 1) & mask


@kernel
def ngram_viterbi_kernel(data, offsets, order, ensure_unicode, table, bits, unigrams, bigrams):
    """Segment every chunk with BytePiece's n-gram model; returns piece end offsets (int64, one per piece).

    States ``j = 0..order-1``: the byte at position ``i`` is byte ``j + 1`` of its piece (``order - 1`` also for
    later bytes). Emission ``e[i, j] = log p(b_i | b_{i-j..i-1})`` from the (j+1)-gram (``-inf`` when pruned or
    ``i < j``; with ``ensure_unicode`` a piece never starts on a UTF-8 continuation byte 0x80..0xBF). Transitions:
    any state -> 0 (new piece), ``j -> j + 1``, ``order - 1 -> order - 1``. Scores are summed in float64 as
    ``(prev[k] + 0) + e[i, j]``; among equal scores the smallest predecessor state wins, and a state no path
    reaches gets predecessor 0 (numpy ``argmax`` semantics), so the result equals BytePiece's ``_tokenize`` exactly.
    A piece starts wherever the best path is in state 0. Example: with only 1-grams every byte is a piece.
    """
    max_len = 0
    for c in range(len(offsets) - 1):
        if offsets[c + 1] - offsets[c] > max_len:
            max_len = offsets[c + 1] - offsets[c]
    routes = np.zeros((max_len + 1, order), dtype=np.int8)
    prev = np.empty(order, dtype=np.float64)
    cur = np.empty(order, dtype=np.float64)
    emit = np.empty(order, dtype=np.float64)
    states = np.empty(max_len + 1, dtype=np.int8)
    ends = np.empty(len(data), dtype=np.int64)
    n_ends = 0
    last = order - 1
    scratch = np.zeros(1, dtype=np.int64)
    scratch_float = scratch.view(np.float64)
    for c in range(len(offsets) - 1):
        start = offsets[c]
        n = offsets[c + 1] - start
        if n == 0:
            continue
        for i in range(n):
            # emissions at position i
            for j in range(order):
                emit[j] = NEG_INF
            # (pruned n-gram: every longer context contains it as a suffix, so it is pruned too; stop looking)
            b_i = np.int64(data[start + i])
            emit[0] = unigrams[b_i]
            if i >= 1 and order >= 2:
                emit[1] = bigrams[np.int64(data[start + i - 1]) * 256 + b_i]
                if emit[1] != NEG_INF:
                    for j in range(2, min(order, i + 1)):
                        value, found = _lookup(table, bits, _pack_window(data, start + i - j, j + 1))
                        if not found:
                            break
                        scratch[0] = value
                        emit[j] = scratch_float[0]
            if ensure_unicode and 0x80 <= data[start + i] < 0xC0:
                emit[0] = NEG_INF
            if i == 0:
                for j in range(order):
                    prev[j] = emit[j]
                continue
            # state 0: from any state
            best = prev[0] + emit[0]
            arg = 0
            for k in range(1, order):
                s = prev[k] + emit[0]
                if s > best:
                    best = s
                    arg = k
            cur[0] = best
            routes[i - 1, 0] = arg
            for j in range(1, order):
                best = prev[j - 1] + emit[j]
                arg = j - 1
                if j == last and j >= 1:
                    s = prev[last] + emit[j]
                    if s > best:
                        best = s
                        arg = last
                if best == NEG_INF:
                    arg = 0
                cur[j] = best
                routes[i - 1, j] = arg
            for j in range(order):
                prev[j] = cur[j]
        # backtrack
        best = prev[0]
        arg = 0
        for j in range(1, order):
            if prev[j] > best:
                best = prev[j]
                arg = j
        states[n - 1] = arg
        for i in range(n - 1, 0, -1):
            states[i - 1] = routes[i - 1, states[i]]
        for i in range(1, n):
            if states[i] == 0:
                ends[n_ends] = start + i
                n_ends += 1
        ends[n_ends] = start + n
        n_ends += 1
    return ends[:n_ends].copy()
