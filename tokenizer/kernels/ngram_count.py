"""Numba kernels of BytePiece training's n-gram count: the packed int64 n-gram keys, every n-gram of chunks counted
by sorting the longest one per position and expanding prefixes, and exact merges of two count tables.

Every kernel takes numpy arrays and scalars. Texts are packed Arrow-style: ``data`` (uint8, all bytes) and
``offsets`` (int64, shape ``(n + 1,)``; text ``i`` is ``data[offsets[i]:offsets[i + 1]]``). Slow,
obviously-correct twins live in :mod:`tokenizer.twins.ngram_count`; hypothesis tests check that each pair
agrees.

N-gram keys
-----------
A byte n-gram of length ``1 <= n <= 7`` is packed into one non-negative int64: byte ``t`` (0-based) sits at bit
``3 + 8 * (6 - t)`` and the length sits in the low 3 bits::

    key = sum(b[t] << (3 + 8 * (6 - t)) for t in range(n)) | n        # always < 2**59

so sorting keys as signed integers sorts the n-grams by their bytes, a prefix before its extensions
(``b"a" < b"a\\x00" < b"ab" < b"b"``). Example: ``pack_ngram(b"ab") == (0x61 << 51) | (0x62 << 43) | 2``.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel

MAX_ORDER = 7
NEG_INF = -np.inf

_BYTE_SHIFT = np.array([3 + 8 * (6 - t) for t in range(MAX_ORDER)], dtype=np.int64)


def pack_ngram(gram: bytes) -> int:
    """The int64 key of ``gram`` (1..7 bytes). ``pack_ngram(b"a") == (97 << 51) | 1``."""
    if not 1 <= len(gram) <= MAX_ORDER:
        raise ValueError(f"an n-gram key holds 1..{MAX_ORDER} bytes, got {len(gram)}")
    key = 0
    for t, b in enumerate(gram):
        key |= b << int(_BYTE_SHIFT[t])
    return key | len(gram)


def unpack_ngram(key: int) -> bytes:
    """The bytes of an n-gram key: ``unpack_ngram(pack_ngram(b"xyz")) == b"xyz"``."""
    key = int(key)
    return bytes((key >> int(_BYTE_SHIFT[t])) & 0xFF for t in range(key & 7))


@kernel
def _pack_window(data, i, n):
    key = np.int64(0)
    for t in range(n):
        key |= np.int64(data[i + t]) << (3 + 8 * (6 - t))
    return key | n


@kernel
def maximal_ngram_keys_kernel(data, offsets, order):
    """The key of the n-gram of length ``min(order, bytes left in the chunk)`` at every position of every chunk
    (int64, one per byte, in text order). Example: chunk ``b"abc"``, order 2 -> keys of ``ab``, ``bc``, ``c``."""
    out = np.empty(offsets[-1] - offsets[0], dtype=np.int64)
    n = 0
    for c in range(len(offsets) - 1):
        end = offsets[c + 1]
        for i in range(offsets[c], end):
            length = end - i
            if length > order:
                length = order
            out[n] = _pack_window(data, i, length)
            n += 1
    return out


RADIX_BITS = 11  # bits per pass of sort_keys_kernel: a histogram of 2,048 counts stays in the cache


@kernel
def sort_keys_kernel(keys, scratch):
    """Sort non-negative int64 ``keys`` in place (``scratch``: int64, at least as long), a least-significant-digit
    radix sort of :data:`RADIX_BITS` bits per pass that skips the digits every key shares (packed n-gram keys
    leave the top bits and, below order 7, the last byte's bits zero). Example: ``[5, 3, 5, 0]`` ->
    ``[0, 3, 5, 5]``."""
    n = len(keys)
    if n < 2:
        return
    all_ones = np.int64(-1)
    any_one = np.int64(0)
    for i in range(n):
        all_ones &= keys[i]
        any_one |= keys[i]
    varying = all_ones ^ any_one
    radix = 1 << RADIX_BITS
    mask = np.int64(radix - 1)
    counts = np.empty(radix, np.int64)
    source, target = keys, scratch
    in_scratch = False
    for shift in range(0, 63, RADIX_BITS):
        if (varying >> shift) & mask == 0:
            continue
        counts[:] = 0
        for i in range(n):
            counts[(source[i] >> shift) & mask] += 1
        start = np.int64(0)
        for digit in range(radix):
            count = counts[digit]
            counts[digit] = start
            start += count
        for i in range(n):
            digit = (source[i] >> shift) & mask
            target[counts[digit]] = source[i]
            counts[digit] += 1
        source, target = target, source
        in_scratch = not in_scratch
    if in_scratch:
        keys[:] = scratch[:n]


@kernel
def run_length_counts_kernel(sorted_keys):
    """``(distinct keys, counts)`` of a sorted int64 array: ``[3, 3, 5] -> ([3, 5], [2, 1])``."""
    keys = np.empty(len(sorted_keys), dtype=np.int64)
    counts = np.empty(len(sorted_keys), dtype=np.int64)
    m = -1
    for i in range(len(sorted_keys)):
        if m < 0 or sorted_keys[i] != keys[m]:
            m += 1
            keys[m] = sorted_keys[i]
            counts[m] = 1
        else:
            counts[m] += 1
    return keys[:m + 1].copy(), counts[:m + 1].copy()


@kernel
def _key_byte(key, t):
    return (key >> (3 + 8 * (6 - t))) & 0xFF


@kernel
def _key_prefix(key, length):
    low = 3 + 8 * (7 - length)
    return ((key >> low) << low) | length


@kernel
def expand_prefixes_kernel(keys, counts):
    """From sorted maximal n-gram counts, the counts of every prefix (all n-grams of lengths 1..order).

    ``keys`` sorted ascending and distinct. A prefix's count is the sum of the counts of the keys it begins, so one
    pass with a stack of open prefixes suffices; output slots are assigned in pre-order, which is sorted order.
    Example: ``{ab: 2, ac: 1, c: 1}`` -> ``{a: 3, ab: 2, ac: 1, c: 1}``.
    """
    total = 0
    for k in keys:
        total += k & 7
    out_keys = np.empty(total, dtype=np.int64)
    out_counts = np.zeros(total, dtype=np.int64)
    slot_of_length = np.zeros(MAX_ORDER + 1, dtype=np.int64)
    n_out = 0
    prev = np.int64(0)
    prev_len = 0
    for idx in range(len(keys)):
        key = keys[idx]
        length = key & 7
        lcp = 0
        limit = min(length, prev_len)
        while lcp < limit and _key_byte(key, lcp) == _key_byte(prev, lcp):
            lcp += 1
        for ln in range(lcp + 1, length + 1):
            out_keys[n_out] = _key_prefix(key, ln)
            slot_of_length[ln] = n_out
            n_out += 1
        c = counts[idx]
        for ln in range(1, length + 1):
            out_counts[slot_of_length[ln]] += c
        prev = key
        prev_len = length
    return out_keys[:n_out].copy(), out_counts[:n_out].copy()


@kernel
def merge_sorted_counts_kernel(keys_a, counts_a, keys_b, counts_b):
    """Merge two count tables with sorted distinct int64 keys: equal keys add. ``{1: 2, 3: 1} + {3: 4} ->
    {1: 2, 3: 5}``."""
    out_keys = np.empty(len(keys_a) + len(keys_b), dtype=np.int64)
    out_counts = np.empty(len(keys_a) + len(keys_b), dtype=np.int64)
    i = 0
    j = 0
    n = 0
    while i < len(keys_a) and j < len(keys_b):
        if keys_a[i] < keys_b[j]:
            out_keys[n] = keys_a[i]
            out_counts[n] = counts_a[i]
            i += 1
        elif keys_b[j] < keys_a[i]:
            out_keys[n] = keys_b[j]
            out_counts[n] = counts_b[j]
            j += 1
        else:
            out_keys[n] = keys_a[i]
            out_counts[n] = counts_a[i] + counts_b[j]
            i += 1
            j += 1
        n += 1
    while i < len(keys_a):
        out_keys[n] = keys_a[i]
        out_counts[n] = counts_a[i]
        i += 1
        n += 1
    while j < len(keys_b):
        out_keys[n] = keys_b[j]
        out_counts[n] = counts_b[j]
        j += 1
        n += 1
    return out_keys[:n].copy(), out_counts[:n].copy()
