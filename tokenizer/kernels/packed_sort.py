"""Sorting byte strings by their bytes without making a Python object per string: :func:`argsort_spans` orders
spans ``data[starts[i]:ends[i]]`` (packed strings: ``starts = offsets[:-1]``, ``ends = offsets[1:]``) and
:func:`gather_distinct` copies them out in that order with the counts of equal strings summed. Together they make
the canonical (sorted, distinct) chunk tables the trainers fit.

A most-significant-digit sort with 7-byte digits: each pending segment of the order (strings equal on their first
``depth`` bytes) is sorted by one uint64 per string, ``(the next 7 bytes big-endian, zero-padded) << 4 | (bytes
left, capped at 8)``, with a stable sort, and each run still equal with more than 7 bytes left becomes a segment
at ``depth + 7``. Equal padded bytes and a count under 8 mean the shorter string is a prefix of the longer (its
padding matches the other's zero bytes), so the count orders them as bytes order does. Small segments use an
insertion sort on the whole remaining bytes. Equal strings keep their index order. The work is O(total bytes +
n log n); the slow twins are in :mod:`tokenizer.twins.packed_sort`.

Example (hand-checkable): ``[b"b", b"ab", b"a", b"a\\x00"]`` -> ``[2, 3, 1, 0]`` (``a < a\\x00 < ab < b``); with
``b"a"`` twice, counts 1 and 2, :func:`gather_distinct` gives one ``b"a"`` with count 3.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel

INSERTION_SORT_MAX = 16  # segments up to this size are insertion-sorted on their whole remaining bytes


@kernel
def _digit(data, start, stop, depth):
    """``data[start + depth:stop]``'s next 7 bytes big-endian, zero-padded, then 4 bits: how many bytes are left,
    capped at 8 (uint64). Example: ``b"ab"`` at depth 0 -> ``0x6162_0000_0000_00_2``."""
    key = np.uint64(0)
    for k in range(7):
        p = start + depth + k
        key = (key << np.uint64(8)) | (np.uint64(data[p]) if p < stop else np.uint64(0))
    return (key << np.uint64(4)) | np.uint64(min(max(stop - start - depth, 0), 8))


@kernel
def _less(data, starts, ends, a, b, depth):
    """Whether string ``a`` sorts before string ``b`` (their first ``depth`` bytes being equal); equal strings by
    index."""
    pa, stop_a = starts[a] + depth, ends[a]
    pb, stop_b = starts[b] + depth, ends[b]
    while pa < stop_a and pb < stop_b:
        if data[pa] != data[pb]:
            return data[pa] < data[pb]
        pa += 1
        pb += 1
    if pa == stop_a and pb == stop_b:
        return a < b
    return pa == stop_a


@kernel
def argsort_spans(data, starts, ends, order):
    """Fill ``order`` (int64[n]) with the indices of the strings ``data[starts[i]:ends[i]]`` (``data`` uint8,
    ``starts`` and ``ends`` int64[n]) in bytes order, equal strings by index. See the module docstring."""
    n = starts.shape[0]
    for i in range(n):
        order[i] = i
    if n < 2:
        return
    keys = np.empty(n, np.uint64)
    moved = np.empty(n, np.int64)
    stack = np.empty(3 * (n // 2 + 1), np.int64)  # pending segments are disjoint and hold >= 2 strings each
    stack[0], stack[1], stack[2] = 0, n, 0
    size = 1
    while size > 0:
        size -= 1
        lo, hi, depth = stack[3 * size], stack[3 * size + 1], stack[3 * size + 2]
        if hi - lo <= INSERTION_SORT_MAX:
            for i in range(lo + 1, hi):
                item = order[i]
                j = i - 1
                while j >= lo and _less(data, starts, ends, item, order[j], depth):
                    order[j + 1] = order[j]
                    j -= 1
                order[j + 1] = item
            continue
        for i in range(lo, hi):
            keys[i] = _digit(data, starts[order[i]], ends[order[i]], depth)
        by_key = np.argsort(keys[lo:hi], kind="mergesort")
        for k in range(hi - lo):
            moved[k] = order[lo + by_key[k]]
        for k in range(hi - lo):
            order[lo + k] = moved[k]
            keys[lo + k] = _digit(data, starts[moved[k]], ends[moved[k]], depth)
        i = lo
        while i < hi:
            j = i + 1
            while j < hi and keys[j] == keys[i]:
                j += 1
            if j - i > 1 and (keys[i] & np.uint64(15)) == 8:
                stack[3 * size], stack[3 * size + 1], stack[3 * size + 2] = i, j, depth + 7
                size += 1
            i = j


@kernel
def _equal(data, a_start, a_end, b_start, b_end):
    if a_end - a_start != b_end - b_start:
        return False
    for k in range(a_end - a_start):
        if data[a_start + k] != data[b_start + k]:
            return False
    return True


@kernel
def gather_distinct(data, starts, ends, counts, order):
    """``(data uint8, offsets int64, counts int64)``: the strings ``data[starts[i]:ends[i]]`` in ``order`` (sorted:
    :func:`argsort_spans`), packed, each run of equal strings once with its ``counts`` (int64) summed."""
    n = order.shape[0]
    keep = np.zeros(n, np.bool_)
    total = 0
    distinct = 0
    for k in range(n):
        i = order[k]
        if k == 0 or not _equal(data, starts[order[k - 1]], ends[order[k - 1]], starts[i], ends[i]):
            keep[k] = True
            total += ends[i] - starts[i]
            distinct += 1
    out = np.empty(total, np.uint8)
    offsets = np.zeros(distinct + 1, np.int64)
    summed = np.zeros(distinct, np.int64)
    j = -1
    for k in range(n):
        i = order[k]
        if keep[k]:
            j += 1
            base = offsets[j]
            for q in range(ends[i] - starts[i]):
                out[base + q] = data[starts[i] + q]
            offsets[j + 1] = base + ends[i] - starts[i]
        summed[j] += counts[i]
    return out, offsets, summed


@kernel
def strictly_increasing(data, starts, ends):
    """Whether the strings ``data[starts[i]:ends[i]]`` are in bytes order with no two equal (a table already
    canonical needs neither a sort nor a copy)."""
    for i in range(starts.shape[0] - 1):
        if not _less(data, starts, ends, i, i + 1, 0) or _equal(data, starts[i], ends[i], starts[i + 1], ends[i + 1]):
            return False
    return True
