"""Numba kernels that count byte strings: distinct spans of a buffer counted by hash, sorted by bytes, and two such
sorted count tables merged (BytePiece training's piece counts, a monoid over partitions)."""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.chunk_count import count_spans


@kernel
def _bytes_compare(data_a, start_a, len_a, data_b, start_b, len_b):
    n = min(len_a, len_b)
    for t in range(n):
        x = data_a[start_a + t]
        y = data_b[start_b + t]
        if x != y:
            return -1 if x < y else 1
    if len_a == len_b:
        return 0
    return -1 if len_a < len_b else 1


@kernel
def _first_words(data, starts, lengths):
    """The first 8 bytes of each byte string as a big-endian uint64, zero-padded: words order as the strings do,
    except that equal words leave the order open. Example: ``b"ab"`` -> ``0x6162000000000000``."""
    words = np.empty(len(starts), dtype=np.uint64)
    for k in range(len(starts)):
        word = np.uint64(0)
        for t in range(8):
            word <<= np.uint64(8)
            if t < lengths[k]:
                word |= np.uint64(data[starts[k] + t])
        words[k] = word
    return words


#: :func:`argsort_words` sorts fewer words than this with numpy's merge sort (a radix pass costs a histogram of
#: 2**16 counts)
RADIX_SORT_MIN = 1 << 12


@kernel
def argsort_words(words):
    """Indices that sort ``words`` (uint64), stably (int64): an LSD radix sort on 16-bit digits (a pass whose digit
    is the same for every word is skipped), numpy's merge sort below :data:`RADIX_SORT_MIN` words. Example:
    ``[3, 1, 3, 2]`` -> ``[1, 3, 0, 2]``."""
    n = len(words)
    if n < RADIX_SORT_MIN:
        return np.argsort(words, kind="mergesort").astype(np.int64)
    order = np.arange(n, dtype=np.int64)
    moved = np.empty(n, dtype=np.int64)
    counts = np.empty(65537, dtype=np.int64)
    for shift in range(0, 64, 16):
        counts[:] = 0
        for k in range(n):
            counts[np.int64((words[k] >> np.uint64(shift)) & np.uint64(0xFFFF)) + 1] += 1
        if counts.max() == n:
            continue
        for d in range(65536):
            counts[d + 1] += counts[d]
        for k in range(n):
            item = order[k]
            d = np.int64((words[item] >> np.uint64(shift)) & np.uint64(0xFFFF))
            moved[counts[d]] = item
            counts[d] += 1
        order, moved = moved, order
    return order


@kernel
def _sort_run(data, starts, lengths, order, lo, hi, buffer):
    """Sort ``order[lo:hi]`` (indices of byte strings) by the strings' bytes, stably: insertion sort for a few,
    else bottom-up merge sort through ``buffer`` (int64, at least as long as ``order``)."""
    if hi - lo <= 16:
        for i in range(lo + 1, hi):
            a = order[i]
            j = i
            while j > lo and _bytes_compare(data, starts[a], lengths[a], data, starts[order[j - 1]],
                                            lengths[order[j - 1]]) < 0:
                order[j] = order[j - 1]
                j -= 1
            order[j] = a
        return
    source = order
    target = buffer
    width = 1
    passes = 0
    while width < hi - lo:
        left = lo
        while left < hi:
            mid = min(left + width, hi)
            right = min(left + 2 * width, hi)
            i = left
            j = mid
            k = left
            while i < mid and j < right:
                a = source[i]
                b = source[j]
                if _bytes_compare(data, starts[b], lengths[b], data, starts[a], lengths[a]) < 0:
                    target[k] = b
                    j += 1
                else:
                    target[k] = a
                    i += 1
                k += 1
            while i < mid:
                target[k] = source[i]
                i += 1
                k += 1
            while j < right:
                target[k] = source[j]
                j += 1
                k += 1
            left = right
        source, target = target, source
        width *= 2
        passes += 1
    if passes % 2 == 1:  # the sorted run is in buffer
        for k in range(lo, hi):
            order[k] = buffer[k]


@kernel
def argsort_byte_strings_kernel(data, starts, lengths):
    """Indices that sort the byte strings ``data[starts[i]:starts[i] + lengths[i]]`` (int64; stable): by their
    first 8 bytes as one integer (:func:`_first_words`, :func:`argsort_words`), then each run of equal first
    words by all bytes (:func:`_sort_run`). Example: ``b"b", b"ab", b"a"`` -> ``[2, 1, 0]``."""
    n = len(starts)
    words = _first_words(data, starts, lengths)
    order = argsort_words(words)
    buffer = np.empty(n, dtype=np.int64)
    lo = 0
    while lo < n:
        hi = lo + 1
        while hi < n and words[order[hi]] == words[order[lo]]:
            hi += 1
        if hi - lo > 1:
            _sort_run(data, starts, lengths, order, lo, hi, buffer)
        lo = hi
    return order


@kernel
def count_byte_strings_kernel(data, starts, ends):
    """Count equal byte strings ``data[starts[i]:ends[i]]`` (:func:`tokenizer.kernels.chunk_count.count_spans`);
    returns ``(piece_data, piece_offsets, counts)`` of the distinct strings sorted by bytes. Example: ``b"ab", b"a",
    b"ab"`` -> ``b"aab"``, ``[0, 1, 3]``, ``[1, 2]``."""
    first, d_counts = count_spans(data, starts, ends, np.ones(len(starts), np.int64))
    n_distinct = first.shape[0]
    d_starts = np.empty(n_distinct, dtype=np.int64)
    d_lengths = np.empty(n_distinct, dtype=np.int64)
    for k in range(n_distinct):
        d_starts[k] = starts[first[k]]
        d_lengths[k] = ends[first[k]] - starts[first[k]]
    order = argsort_byte_strings_kernel(data, d_starts, d_lengths)
    total = 0
    for k in range(n_distinct):
        total += d_lengths[k]
    piece_data = np.empty(total, dtype=np.uint8)
    piece_offsets = np.zeros(n_distinct + 1, dtype=np.int64)
    counts = np.empty(n_distinct, dtype=np.int64)
    pos = 0
    for k in range(n_distinct):
        o = order[k]
        for t in range(d_lengths[o]):
            piece_data[pos + t] = data[d_starts[o] + t]
        pos += d_lengths[o]
        piece_offsets[k + 1] = pos
        counts[k] = d_counts[o]
    return piece_data, piece_offsets, counts


@kernel
def merge_byte_string_counts_kernel(data_a, offsets_a, counts_a, data_b, offsets_b, counts_b):
    """Merge two byte-string count tables, each sorted by bytes with distinct strings; equal strings add."""
    na = len(offsets_a) - 1
    nb = len(offsets_b) - 1
    out_data = np.empty(len(data_a) + len(data_b), dtype=np.uint8)
    out_offsets = np.zeros(na + nb + 1, dtype=np.int64)
    out_counts = np.empty(na + nb, dtype=np.int64)
    i = 0
    j = 0
    n = 0
    pos = 0
    while i < na or j < nb:
        if i < na and j < nb:
            cmp = _bytes_compare(data_a, offsets_a[i], offsets_a[i + 1] - offsets_a[i],
                                 data_b, offsets_b[j], offsets_b[j + 1] - offsets_b[j])
        elif i < na:
            cmp = -1
        else:
            cmp = 1
        if cmp <= 0:
            for t in range(offsets_a[i], offsets_a[i + 1]):
                out_data[pos] = data_a[t]
                pos += 1
            out_counts[n] = counts_a[i] + (counts_b[j] if cmp == 0 else 0)
            i += 1
            if cmp == 0:
                j += 1
        else:
            for t in range(offsets_b[j], offsets_b[j + 1]):
                out_data[pos] = data_b[t]
                pos += 1
            out_counts[n] = counts_b[j]
            j += 1
        n += 1
        out_offsets[n] = pos
    return out_data[:pos].copy(), out_offsets[:n + 1].copy(), out_counts[:n].copy()
