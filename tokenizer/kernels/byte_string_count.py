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
def argsort_byte_strings_kernel(data, starts, lengths):
    """Indices that sort the byte strings ``data[starts[i]:starts[i] + lengths[i]]`` (stable bottom-up merge sort)."""
    n = len(starts)
    order = np.arange(n, dtype=np.int64)
    buffer = np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                a = order[i]
                b = order[j]
                if _bytes_compare(data, starts[b], lengths[b], data, starts[a], lengths[a]) < 0:
                    buffer[k] = b
                    j += 1
                else:
                    buffer[k] = a
                    i += 1
                k += 1
            while i < mid:
                buffer[k] = order[i]
                i += 1
                k += 1
            while j < hi:
                buffer[k] = order[j]
                j += 1
                k += 1
            lo = hi
        order, buffer = buffer, order
        width *= 2
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
