"""Numba kernels that count chunks exactly, for the BPE and unigram trainers: distinct byte spans with summed weights
(:func:`count_spans`), documents pre-tokenized and their distinct chunks counted in one pass
(:func:`count_chunk_table`, with the chunk rules of its ``MODE_*`` constants), and spans gathered into packed arrays.
The open-addressing tables compare bytes, so counts are exact. Their pure-Python twins are in
:mod:`tokenizer.twins.chunk_count`.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.hash_table import EMPTY, hash_slot, table_bits
from tokenizer.kernels.pretokenize import next_pretoken_end, sentencepiece_chunk_end

@kernel
def _span_hash(data, start, end):
    h = np.uint64(14695981039346656037)
    for i in range(start, end):
        h = (h ^ np.uint64(data[i])) * np.uint64(1099511628211)
    return h


@kernel
def _same_bytes(data, a, b, length):
    """Whether ``data[a:a + length] == data[b:b + length]`` (uint8 array, int64 positions)."""
    for k in range(length):
        if data[a + k] != data[b + k]:
            return False
    return True


@kernel
def _span_slot(slots, bits, entry_hash, entry_start, entry_end, data, h, start, end):
    """The slot of ``slots`` (int64 entry numbers, ``2**bits``, :mod:`tokenizer.kernels.hash_table`'s slots) whose
    entry's bytes are ``data[start:end]`` (hash ``h``), or the empty slot where that entry belongs."""
    mask = (np.int64(1) << bits) - 1
    j = hash_slot(h, bits)
    while True:
        k = slots[j]
        if k == EMPTY:
            return j
        if (entry_hash[k] == h and entry_end[k] - entry_start[k] == end - start
                and _same_bytes(data, entry_start[k], start, end - start)):
            return j
        j = (j + 1) & mask


@kernel
def _span_slots(entry_hash, n, bits):
    """The slots of entries ``0..n-1`` (hashes ``entry_hash``, all distinct spans) in a table of ``2**bits``."""
    slots = np.full(np.int64(1) << bits, EMPTY, np.int64)
    mask = (np.int64(1) << bits) - 1
    for e in range(n):
        j = hash_slot(entry_hash[e], bits)
        while slots[j] != EMPTY:
            j = (j + 1) & mask
        slots[j] = e
    return slots


@kernel
def count_spans(data, starts, ends, weights):
    """Distinct byte spans ``data[starts[i]:ends[i]]`` with summed ``weights`` (int64).

    Returns ``(first, counts)``: ``first`` (int64) the index of each distinct span's first occurrence, in order
    of first occurrence, and ``counts`` (int64) their summed weights. Example: spans ``ab, c, ab`` with weights
    ``1, 1, 2`` -> ``first [0, 1]``, ``counts [3, 1]``.
    """
    n = starts.shape[0]
    bits = table_bits(2 * n + 16)
    slots = np.full(np.int64(1) << bits, EMPTY, np.int64)
    entry_hash = np.empty(n, np.uint64)
    entry_start = np.empty(n, np.int64)
    entry_end = np.empty(n, np.int64)
    first = np.empty(n, np.int64)
    counts = np.zeros(n, np.int64)
    distinct = 0
    for i in range(n):
        h = _span_hash(data, starts[i], ends[i])
        j = _span_slot(slots, bits, entry_hash, entry_start, entry_end, data, h, starts[i], ends[i])
        if slots[j] == EMPTY:
            slots[j] = distinct
            entry_hash[distinct] = h
            entry_start[distinct] = starts[i]
            entry_end[distinct] = ends[i]
            first[distinct] = i
            distinct += 1
        counts[slots[j]] += weights[i]
    return first[:distinct].copy(), counts[:distinct].copy()


MODE_SENTENCEPIECE = 3  # count_chunk_table's mode for SentencePiece-style chunks (1, 2, 8: the regex patterns)
MODE_BEFORE_SPACE_SYMBOL = 4  # a chunk starts at the document start and before each "▁" (E2 96 81)
MODE_BEFORE_SPACE = 5  # a chunk starts at the document start and before each space (0x20)
MODE_WHOLE_DOCUMENT = 6  # each (non-empty) document is one chunk


@kernel
def split_before_end(mode, data, pos, end):
    """End (exclusive) of the chunk at ``data[pos]`` (``pos < end``) when chunks start before each delimiter:
    ``"▁"`` (bytes E2 96 81) for ``MODE_BEFORE_SPACE_SYMBOL``, the space for ``MODE_BEFORE_SPACE``; the whole rest
    for ``MODE_WHOLE_DOCUMENT``. The chunk ends at the next delimiter that starts after ``pos`` and lies wholly
    before ``end`` (neither delimiter overlaps itself, so this is ``bytes.split`` with the delimiter kept at the
    front of each later part). Example (space): ``b"ab c"`` from 0 -> 2, from 2 -> 4."""
    if mode == MODE_BEFORE_SPACE:
        stop = pos + 1
        while stop < end and data[stop] != 0x20:
            stop += 1
        return stop
    if mode == MODE_BEFORE_SPACE_SYMBOL:
        stop = pos + 1
        while stop + 2 < end:
            if data[stop] == 0xE2 and data[stop + 1] == 0x96 and data[stop + 2] == 0x81:
                return stop
            stop += 1
        return end
    return end


@kernel
def count_chunk_table(mode, char_class, script, data, offsets):
    """Pre-tokenize the documents ``data[offsets[i]:offsets[i + 1]]`` and count the distinct chunks, in one pass.

    ``mode`` 1, 2, 8 or 16/17: the GPT-2 / Llama-3 / o200k regex or superword BPE's coarse splits
    (``next_pretoken_end`` with ``char_class``); 3: SentencePiece-style chunks of space-escaped text
    (``sentencepiece_chunk_end`` with ``script``); 4, 5, 6: a chunk before each ``"▁"``, before each space, or whole
    documents (``split_before_end``; the unigram trainer's words). The open-addressing table starts small and doubles
    (a table sized to the data stays in cache). Returns ``(starts, ends, counts)`` (int64), one entry per distinct
    chunk in order of first occurrence: ``data[starts[k]:ends[k]]`` and its count.
    Example (mode 1): documents ``b"a a"``, ``b"a"`` -> chunks ``a`` x2, `` a`` x1: starts ``[0, 1]``, ends
    ``[1, 3]``, counts ``[2, 1]``.
    """
    bits = 12
    slots = np.full(np.int64(1) << bits, EMPTY, np.int64)
    capacity = 1024
    entry_hash = np.empty(capacity, np.uint64)
    entry_start = np.empty(capacity, np.int64)
    entry_end = np.empty(capacity, np.int64)
    counts = np.empty(capacity, np.int64)
    n = 0
    for d in range(offsets.shape[0] - 1):
        pos = offsets[d]
        end = offsets[d + 1]
        while pos < end:
            if mode == MODE_SENTENCEPIECE:
                stop = sentencepiece_chunk_end(script, data, pos, end)
            elif MODE_BEFORE_SPACE_SYMBOL <= mode <= MODE_WHOLE_DOCUMENT:
                stop = split_before_end(mode, data, pos, end)
            else:
                stop = next_pretoken_end(char_class, mode, data, pos, end)
            h = _span_hash(data, pos, stop)
            j = _span_slot(slots, bits, entry_hash, entry_start, entry_end, data, h, pos, stop)
            if slots[j] != EMPTY:
                counts[slots[j]] += 1
            else:
                if n == capacity:
                    capacity *= 2
                    entry_hash = _grown(entry_hash, capacity)
                    entry_start = _grown(entry_start, capacity)
                    entry_end = _grown(entry_end, capacity)
                    counts = _grown(counts, capacity)
                entry_hash[n] = h
                entry_start[n] = pos
                entry_end[n] = stop
                counts[n] = 1
                slots[j] = n
                n += 1
                if 2 * n > slots.shape[0]:
                    bits += 1
                    slots = _span_slots(entry_hash, n, bits)
            pos = stop
    return entry_start[:n].copy(), entry_end[:n].copy(), counts[:n].copy()


@kernel
def gather_spans(data, starts, ends):
    """``(packed bytes uint8, offsets int64)`` of the spans ``data[starts[k]:ends[k]]``, in order.
    ``gather_spans(b"abc", [2, 0], [3, 2])`` -> ``(b"cab", [0, 1, 3])``."""
    n = starts.shape[0]
    offsets = np.zeros(n + 1, np.int64)
    for k in range(n):
        offsets[k + 1] = offsets[k] + ends[k] - starts[k]
    out = np.empty(offsets[n], np.uint8)
    for k in range(n):
        base = offsets[k]
        s = starts[k]
        for q in range(ends[k] - s):
            out[base + q] = data[s + q]
    return out, offsets


@kernel
def _grown(array, length):
    out = np.empty(length, array.dtype)
    out[:array.shape[0]] = array
    return out
