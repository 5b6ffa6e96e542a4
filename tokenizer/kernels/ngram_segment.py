"""Numba kernels of BytePiece training's n-gram language model: the model's lookup tables (packed n-gram key -> log
probability) and the Viterbi that segments chunks with it. Slow, obviously-correct twins live in
:mod:`tokenizer.twins.ngram_segment`; hypothesis tests check that each pair agrees.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.hash_table import EMPTY, hash_slot, prefetch, table_bits
from tokenizer.kernels.ngram_count import MAX_ORDER, NEG_INF, _key_byte


@kernel
def lookup_table_size(keys):
    """The length (int64 elements) of the ``table`` :func:`build_lookup_table_kernel` needs for the packed n-gram
    ``keys``: two per slot, at least twice as many slots as keys longer than 2 bytes. Example: 3 such keys ->
    ``table_bits(6) == 4``, 16 slots -> 32."""
    n_long = 0
    for idx in range(len(keys)):
        if (keys[idx] & 7) > 2:
            n_long += 1
    return np.int64(2) << table_bits(2 * n_long)


@kernel
def build_lookup_table_kernel(keys, values, table):
    """The n-gram model as lookup tables: ``(table, bits, unigrams, bigrams)``.

    ``keys`` int64 (packed n-grams, distinct), ``values`` float64 (their log probabilities); ``table`` int64 of
    :func:`lookup_table_size` elements, given by the caller (it can ask for huge pages: the table is far larger
    than the caches) and overwritten here. ``unigrams`` float64[256] and ``bigrams`` float64[65536] (index
    ``b0 * 256 + b1``) hold the values of 1- and 2-grams directly (``-inf`` when absent); longer keys live in
    ``table``, ``2**bits`` slots: slot ``s`` holds the key at ``2 s`` (or ``EMPTY``) and the float64 value's bits at
    ``2 s + 1`` (one cache line per probe); the slots and probing of :mod:`tokenizer.kernels.hash_table`, load
    factor at most 1/2. Example: keys ``a``, ``ab``, ``abc`` -> ``unigrams[97]``, ``bigrams[97 * 256 + 98]`` and
    one slot of ``table`` hold their values.

    Keys are inserted most frequent first (by :func:`_frequency_class`), so that the n-grams a segmentation looks
    up most sit in their home slot (one probe each; later keys take the slots after). With sorted, prefix-closed
    keys of log probabilities (an :class:`~tokenizer.trainers.bytepiece.ngrams.NgramModel`'s), a key's log count
    less the log total is the sum of the values along its prefixes (:func:`_log_count_estimates`); other keys only
    get a slower table, never other values.
    """
    unigrams = np.full(256, NEG_INF, dtype=np.float64)
    bigrams = np.full(65536, NEG_INF, dtype=np.float64)
    size = len(table) >> 1
    bits = 0
    while (np.int64(1) << bits) < size:
        bits += 1
    mask = size - 1
    table[:] = EMPTY
    values = values.copy()
    value_bits = values.view(np.int64)
    n_long = 0
    for idx in range(len(keys)):
        key = keys[idx]
        length = key & 7
        if length == 1:
            unigrams[_key_byte(key, 0)] = values[idx]
        elif length == 2:
            bigrams[_key_byte(key, 0) * 256 + _key_byte(key, 1)] = values[idx]
        else:
            n_long += 1
    # the long keys by frequency class (counting sort on a quarter of -log(c / total), in key order within one)
    estimates = _log_count_estimates(keys, values)
    classes = np.zeros(FREQUENCY_CLASSES + 1, dtype=np.int64)
    for idx in range(len(keys)):
        if (keys[idx] & 7) > 2:
            classes[_frequency_class(estimates[idx]) + 1] += 1
    for k in range(FREQUENCY_CLASSES):
        classes[k + 1] += classes[k]
    most_frequent_first = np.empty(n_long, dtype=np.int64)
    for idx in range(len(keys)):
        if (keys[idx] & 7) > 2:
            k = _frequency_class(estimates[idx])
            most_frequent_first[classes[k]] = idx
            classes[k] += 1
    for rank in range(n_long):
        idx = most_frequent_first[rank]
        key = keys[idx]
        slot = hash_slot(key, bits)
        while table[2 * slot] != EMPTY and table[2 * slot] != key:
            slot = (slot + 1) & mask
        table[2 * slot] = key
        table[2 * slot + 1] = value_bits[idx]
    return table, bits, unigrams, bigrams


#: frequency classes of :func:`build_lookup_table_kernel`'s insertion order: quarters of -log(c / total), the last
#: one for all rarer n-grams
FREQUENCY_CLASSES = 256


@kernel(inline="always")
def _frequency_class(estimate):
    """0 for the most frequent n-grams (``estimate`` = log(c / total) near 0), one class per factor e**0.25 less,
    ``FREQUENCY_CLASSES - 1`` at most. Example: -1.1 -> 4."""
    k = int(max(-estimate, 0.0) * 4.0)
    return min(k, FREQUENCY_CLASSES - 1)


@kernel
def _log_count_estimates(keys, values):
    """For sorted, prefix-closed packed n-gram ``keys`` with ``values`` ``log c(g) - log c(g[:-1])``: ``log c(g) -
    log c(b"")`` per key (float64), the sum of the values along the key's prefixes (in sorted order a key's longest
    proper prefix is the last key of that length before it). Example: ``a`` -2.0, ``ab`` -0.5 -> -2.0, -2.5."""
    out = np.empty(len(keys), dtype=np.float64)
    last = np.zeros(8, dtype=np.float64)  # the estimate of the last key of each length
    for idx in range(len(keys)):
        length = keys[idx] & 7
        out[idx] = values[idx] + (last[length - 1] if length > 1 else 0.0)
        last[length] = out[idx]
    return out


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


#: positions between the prefetch of a position's table slots and their probes (:func:`ngram_viterbi_kernel`)
PREFETCH_DISTANCE = 8

#: the Viterbi's score slots, at least MAX_ORDER (:func:`ngram_viterbi_kernel`)
STATES = 8
assert STATES >= MAX_ORDER

#: a position's route byte (:func:`ngram_viterbi_kernel`): state 0's predecessor in the low 3 bits, and this bit
#: when the last state's predecessor is the last state itself (else it is the state before)
_LAST_FROM_LAST = 8


@kernel(inline="always")
def _window_key(window, length):
    """The packed key (:mod:`tokenizer.kernels.ngram_count`) of the last ``length`` bytes shifted into ``window``
    (int64, newest byte lowest). Example: window ``0x616263`` (``abc``), length 2 -> the key of ``bc``."""
    low = (np.int64(1) << (8 * length)) - 1
    return ((window & low) << (3 + 8 * (7 - length))) | length


@kernel
def ngram_viterbi_kernel(data, offsets, order, ensure_unicode, table, bits, unigrams, bigrams):
    """Segment every chunk with BytePiece's n-gram model; returns piece end offsets (int64, one per piece).

    ``data`` uint8, ``offsets`` int64 ``(n_chunks + 1,)`` (consecutive chunks), ``order`` 1..7; ``table``,
    ``bits``, ``unigrams``, ``bigrams`` from :func:`build_lookup_table_kernel`.

    States ``j = 0..order-1``: the byte at position ``i`` is byte ``j + 1`` of its piece (``order - 1`` also for
    later bytes). Emission ``e[i, j] = log p(b_i | b_{i-j..i-1})`` from the (j+1)-gram (``-inf`` when pruned or
    ``i < j``; with ``ensure_unicode`` a piece never starts on a UTF-8 continuation byte 0x80..0xBF). Transitions:
    any state -> 0 (new piece), ``j -> j + 1``, ``order - 1 -> order - 1``. Scores are summed in float64 as
    ``(prev[k] + 0) + e[i, j]``; among equal scores the smallest predecessor state wins, and a state no path
    reaches gets predecessor 0 (numpy ``argmax`` semantics), so the result equals BytePiece's ``_tokenize`` exactly.
    A piece starts wherever the best path is in state 0; an empty chunk has no piece. Example: with only 1-grams
    every byte is a piece.

    How it runs (none of this changes a result):

    - The (j+1)-grams ending at a position are looked up for ``j = 2, 3, ...`` until one is absent: a pruned
      n-gram is a suffix of every longer one, so they are pruned too. Their keys come from a window of the chunk's
      last bytes; the slots of the n-grams ending :data:`PREFETCH_DISTANCE` positions later are prefetched (across
      chunk ends too: a wasted hint at worst), so that the table's cache misses overlap instead of queueing one
      behind the other.
    - Only two predecessors are stored per position (one route byte): state 0's, and whether the last state comes
      from itself. A state ``0 < j < order - 1`` comes from ``j - 1`` whenever its score is finite, and the path
      traced back never meets another state with score ``-inf``: it starts at a finite state or at state 0, a state
      0 of score ``-inf`` has predecessor 0 (all its candidates are ``-inf``), and a finite score has a finite
      predecessor.
    """
    max_len = 0
    for c in range(len(offsets) - 1):
        if offsets[c + 1] - offsets[c] > max_len:
            max_len = offsets[c + 1] - offsets[c]
    routes = np.empty(max_len + 1, dtype=np.uint8)
    # STATES slots whatever the order (loops of a constant length unroll); slots from order on stay -inf
    prev = np.full(STATES, NEG_INF, dtype=np.float64)
    cur = np.full(STATES, NEG_INF, dtype=np.float64)
    emit = np.full(STATES, NEG_INF, dtype=np.float64)
    ends = np.empty(offsets[-1] - offsets[0], dtype=np.int64)
    n_ends = 0
    last = order - 1
    value_bits = np.zeros(1, dtype=np.int64)
    value = value_bits.view(np.float64)
    # the window of the position PREFETCH_DISTANCE ahead (over the whole data, chunk ends ignored)
    ahead = np.int64(0)
    stop = offsets[-1]
    for p in range(offsets[0], min(offsets[0] + PREFETCH_DISTANCE, stop)):
        ahead = (ahead << 8) | np.int64(data[p])
    for c in range(len(offsets) - 1):
        start = offsets[c]
        n = offsets[c + 1] - start
        if n == 0:
            continue
        window = np.int64(0)
        for i in range(n):
            p = start + i + PREFETCH_DISTANCE
            if p < stop:
                ahead = (ahead << 8) | np.int64(data[p])
                for length in range(3, order + 1):
                    prefetch(table, 2 * hash_slot(_window_key(ahead, length), bits))
            b_i = np.int64(data[start + i])
            window = (window << 8) | b_i
            # emissions at position i: emit[j] for j < order (-inf where pruned), -inf beyond
            e0 = unigrams[b_i]
            if ensure_unicode and 0x80 <= b_i < 0xC0:
                e0 = NEG_INF
            if i == 0:
                prev[0] = e0
                for j in range(1, STATES):
                    prev[j] = NEG_INF
                continue
            for j in range(1, STATES):
                emit[j] = NEG_INF
            if order >= 2:
                emit[1] = bigrams[window & 0xFFFF]
                if emit[1] != NEG_INF:
                    for j in range(2, min(order, i + 1)):
                        value_bits[0], found = _lookup(table, bits, _window_key(window, j + 1))
                        if not found:
                            break
                        emit[j] = value[0]
            # state 0: from any state, the first of equal scores (the -inf slots from order on never win)
            best = prev[0] + e0
            arg = 0
            for k in range(1, STATES):
                s = prev[k] + e0
                if s > best:
                    best = s
                    arg = k
            cur[0] = best
            route = arg
            # state j from j - 1 (from order on: -inf + -inf), the last state also from itself
            for j in range(1, STATES):
                cur[j] = prev[j - 1] + emit[j]
            if last >= 1:
                s = prev[last] + emit[last]
                if s > cur[last]:
                    cur[last] = s
                    route |= _LAST_FROM_LAST
            routes[i] = route
            prev, cur = cur, prev
        # backtrack from the best final state, writing the chunk's piece ends backwards, then reversing them
        best = prev[0]
        state = 0
        for j in range(1, order):
            if prev[j] > best:
                best = prev[j]
                state = j
        first = n_ends
        ends[n_ends] = start + n
        n_ends += 1
        for i in range(n - 1, 0, -1):
            route = routes[i]
            if state == 0:
                ends[n_ends] = start + i
                n_ends += 1
                state = route & 7
            elif state == last:
                state = last if route & _LAST_FROM_LAST else last - 1
            else:
                state -= 1
        lo = first
        hi = n_ends - 1
        while lo < hi:
            ends[lo], ends[hi] = ends[hi], ends[lo]
            lo += 1
            hi -= 1
    return ends[:n_ends].copy()
