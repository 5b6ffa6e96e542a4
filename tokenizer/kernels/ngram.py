"""Numba kernels of BytePiece training: chunking, byte n-gram counting, n-gram Viterbi, piece counting, piece-trie
Viterbi (re-segmentation during pruning, EM statistics).

Every kernel takes numpy arrays and scalars. Texts are packed Arrow-style: ``data`` (uint8, all bytes) and
``offsets`` (int64, shape ``(n + 1,)``; text ``i`` is ``data[offsets[i]:offsets[i + 1]]``). Slow, obviously-correct
twins live in :mod:`tokenizer.kernels.reference_ngram`; hypothesis tests check that each pair agrees.

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
from tokenizer.kernels.unigram import log_add

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


# ---------------------------------------------------------------------------------------------------------- chunking
@kernel
def _decode_char(data, i, end):
    """(code point, byte length) of the UTF-8 character at ``data[i]``; an invalid sequence is one byte, cp -1."""
    b0 = np.int64(data[i])
    if b0 < 0x80:
        return b0, 1
    if b0 < 0xC2:
        return -1, 1
    if b0 < 0xE0:
        n = 2
        cp = b0 & 0x1F
    elif b0 < 0xF0:
        n = 3
        cp = b0 & 0x0F
    elif b0 < 0xF5:
        n = 4
        cp = b0 & 0x07
    else:
        return -1, 1
    if i + n > end:
        return -1, 1
    for t in range(1, n):
        b = np.int64(data[i + t])
        if b < 0x80 or b > 0xBF:
            return -1, 1
        cp = (cp << 6) | (b & 0x3F)
    if (n == 3 and cp < 0x800) or (n == 4 and (cp < 0x10000 or cp > 0x10FFFF)) or (0xD800 <= cp < 0xE000):
        return -1, 1
    return cp, n


@kernel
def chunk_offsets_kernel(data, offsets, max_chars, max_newlines, isolate_digits, is_digit):
    """Split each text into BytePiece chunks; returns the chunk offsets (int64, shape ``(n_chunks + 1,)``).

    Per text, repeatedly from the current position (this is BytePiece's ``normalize`` regex
    ``\\d|[^\\n\\d]{,M}\\n{1,100}|[^\\n\\d]{1,M}`` with ``M = max_chars`` (``M <= 0``: no limit); without
    ``isolate_digits`` the digit alternative is absent and ``\\d`` reads as nothing):

    - a digit character (``is_digit[cp] == 1``, only with ``isolate_digits``) is a chunk of its own;
    - else let ``r`` be the number of characters before the next newline or digit (or the text end): if ``r <= M``
      and a newline follows, the chunk is those ``r`` characters plus up to ``max_newlines`` newlines; if
      ``r <= M`` otherwise, the ``r`` characters; if ``r > M``, the next ``M`` characters.

    Characters are UTF-8 code points; an invalid byte counts as one (non-digit) character. Empty texts give no
    chunk. Example: ``b"ab\\n\\ncd"`` with ``max_chars=10000`` -> chunks ``b"ab\\n\\n"``, ``b"cd"`` -> ``[0, 4, 6]``.
    """
    n_texts = len(offsets) - 1
    out = np.empty(len(data) + 1, dtype=np.int64)
    n_out = 0
    out[0] = offsets[0] if n_texts >= 0 else 0
    for d in range(n_texts):
        pos = offsets[d]
        end = offsets[d + 1]
        while pos < end:
            cp, width = _decode_char(data, pos, end)
            if isolate_digits and cp >= 0 and is_digit[cp] == 1:
                pos += width
                n_out += 1
                out[n_out] = pos
                continue
            # run of characters that are neither newline nor (isolated) digit, at most max_chars + 1 of them
            q = pos
            r = 0
            nxt = -2  # -2: text end; else the code point that stopped the run
            while q < end:
                cp, width = _decode_char(data, q, end)
                if cp == 10 or (isolate_digits and cp >= 0 and is_digit[cp] == 1):
                    nxt = cp
                    break
                if max_chars > 0 and r == max_chars:
                    nxt = -3  # run longer than max_chars
                    break
                r += 1
                q += width
            if nxt == 10:
                k = 0
                while q < end and data[q] == 10 and k < max_newlines:
                    q += 1
                    k += 1
            pos = q
            n_out += 1
            out[n_out] = pos
    return out[:n_out + 1].copy()


# ---------------------------------------------------------------------------------------------------------- hashing
@kernel
def _hash_slot(key, bits):
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64(h >> np.uint64(64 - bits))


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


# ---------------------------------------------------------------------------------------------------------- n-gram LM
@kernel
def build_lookup_table_kernel(keys, values):
    """The n-gram model as lookup tables: ``(table, bits, unigrams, bigrams)``.

    ``unigrams`` float64[256] and ``bigrams`` float64[65536] (index ``b0 * 256 + b1``) hold the values of 1- and
    2-grams directly (``-inf`` when absent); longer keys live in ``table`` (int64, ``2 * 2**bits``): slot ``s``
    holds the key at ``2 s`` (``-1`` = empty) and the float64 value's bits at ``2 s + 1`` (one cache line per
    probe), linear probing, load factor at most 1/2.
    """
    unigrams = np.full(256, NEG_INF, dtype=np.float64)
    bigrams = np.full(65536, NEG_INF, dtype=np.float64)
    n_long = 0
    for idx in range(len(keys)):
        if (keys[idx] & 7) > 2:
            n_long += 1
    bits = 4
    while (np.int64(1) << bits) < 2 * n_long:
        bits += 1
    size = np.int64(1) << bits
    mask = size - 1
    table = np.full(2 * size, -1, dtype=np.int64)
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
            slot = _hash_slot(key, bits)
            while table[2 * slot] >= 0 and table[2 * slot] != key:
                slot = (slot + 1) & mask
            table[2 * slot] = key
            table[2 * slot + 1] = value_bits[idx]
    return table, bits, unigrams, bigrams


@kernel
def _lookup(table, bits, key):
    """The value of ``key`` in a :func:`build_lookup_table_kernel` table, as int64 bits; ``found`` False if absent."""
    mask = (len(table) >> 1) - 1
    slot = _hash_slot(key, bits)
    while True:
        k = table[2 * slot]
        if k == key:
            return table[2 * slot + 1], True
        if k < 0:
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


# ------------------------------------------------------------------------------------------------------ byte strings
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
def _hash_bytes(data, start, length):
    h = np.uint64(0xCBF29CE484222325)
    for t in range(length):
        h = (h ^ np.uint64(data[start + t])) * np.uint64(0x100000001B3)
    return h


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
    """Count equal byte strings ``data[starts[i]:ends[i]]``; returns ``(piece_data, piece_offsets, counts)`` of
    the distinct strings sorted by bytes. Example: ``b"ab", b"a", b"ab"`` -> ``b"aab"``, ``[0, 1, 3]``, ``[1, 2]``."""
    n = len(starts)
    bits = 4
    while (np.int64(1) << bits) < 2 * n:
        bits += 1
    size = np.int64(1) << bits
    mask = size - 1
    slot_item = np.full(size, -1, dtype=np.int64)
    slot_hash = np.zeros(size, dtype=np.uint64)
    slot_count = np.zeros(size, dtype=np.int64)
    n_distinct = 0
    for i in range(n):
        s = starts[i]
        ln = ends[i] - s
        h = _hash_bytes(data, s, ln)
        slot = np.int64(h >> np.uint64(64 - bits))
        while True:
            item = slot_item[slot]
            if item < 0:
                slot_item[slot] = i
                slot_hash[slot] = h
                slot_count[slot] = 1
                n_distinct += 1
                break
            if slot_hash[slot] == h and _bytes_compare(data, starts[item], ends[item] - starts[item], data, s, ln) == 0:
                slot_count[slot] += 1
                break
            slot = (slot + 1) & mask
    d_starts = np.empty(n_distinct, dtype=np.int64)
    d_lengths = np.empty(n_distinct, dtype=np.int64)
    d_counts = np.empty(n_distinct, dtype=np.int64)
    k = 0
    for slot in range(size):
        item = slot_item[slot]
        if item >= 0:
            d_starts[k] = starts[item]
            d_lengths[k] = ends[item] - starts[item]
            d_counts[k] = slot_count[slot]
            k += 1
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


# ---------------------------------------------------------------------------------------------------------- piece trie
@kernel
def build_piece_trie_kernel(piece_data, piece_offsets):
    """A byte trie of the pieces: transitions in an open-addressing table keyed ``node * 256 + byte``.

    Returns ``(edge_keys, edge_child, bits, node_piece)``: ``node_piece[node]`` is the index of the piece ending at
    that node, or -1. Node 0 is the root. Empty pieces are ignored.
    """
    n_pieces = len(piece_offsets) - 1
    total = len(piece_data)
    bits = 4
    while (np.int64(1) << bits) < 2 * total + 2:
        bits += 1
    size = np.int64(1) << bits
    mask = size - 1
    edge_keys = np.full(size, -1, dtype=np.int64)
    edge_child = np.zeros(size, dtype=np.int64)
    node_piece = np.full(total + 1, -1, dtype=np.int64)
    n_nodes = 1
    for p in range(n_pieces):
        node = 0
        for t in range(piece_offsets[p], piece_offsets[p + 1]):
            key = node * 256 + np.int64(piece_data[t])
            slot = _hash_slot(key, bits)
            while True:
                k = edge_keys[slot]
                if k == key:
                    node = edge_child[slot]
                    break
                if k < 0:
                    edge_keys[slot] = key
                    edge_child[slot] = n_nodes
                    node = n_nodes
                    n_nodes += 1
                    break
                slot = (slot + 1) & mask
        if piece_offsets[p + 1] > piece_offsets[p]:
            node_piece[node] = p
    return edge_keys, edge_child, bits, node_piece[:n_nodes].copy()


@kernel
def _child(edge_keys, edge_child, bits, node, byte):
    key = node * 256 + np.int64(byte)
    mask = len(edge_keys) - 1
    slot = _hash_slot(key, bits)
    while True:
        k = edge_keys[slot]
        if k == key:
            return edge_child[slot]
        if k < 0:
            return -1
        slot = (slot + 1) & mask


@kernel
def piece_viterbi_counts_kernel(data, offsets, weights, edge_keys, edge_child, bits, node_piece, piece_scores,
                                n_pieces, collect_pairs=False):
    """Segment each text with the unigram piece model (max sum of ``piece_scores``); add ``weights[i]`` to the count
    of every piece used in text ``i``. Returns ``(counts int64[n_pieces], n_tokens int64, n_unsegmentable, pairs)``;
    with ``collect_pairs``, ``pairs`` (int64) holds ``left_id << 32 | right_id`` for every two adjacent pieces of
    a segmentation (unsorted, one entry per occurrence), else it is empty.

    Ties: the piece with the earliest start wins (BytePiece's Aho-Corasick Viterbi visits the longest match first
    and updates only on a strictly better score). A text that no path covers adds nothing and is counted in
    ``n_unsegmentable``. Example: pieces ``a, b, ab`` with scores ``-1, -1, -1.5``: ``b"ab"`` -> ``ab``.
    """
    counts = np.zeros(n_pieces, dtype=np.int64)
    max_len = 0
    for c in range(len(offsets) - 1):
        if offsets[c + 1] - offsets[c] > max_len:
            max_len = offsets[c + 1] - offsets[c]
    best = np.empty(max_len + 1, dtype=np.float64)
    back = np.empty(max_len + 1, dtype=np.int64)
    back_piece = np.empty(max_len + 1, dtype=np.int64)
    n_tokens = 0
    n_bad = 0
    pairs = np.empty(len(data) if collect_pairs else 0, dtype=np.int64)
    n_pairs = 0
    for c in range(len(offsets) - 1):
        start = offsets[c]
        n = offsets[c + 1] - start
        best[0] = 0.0
        for e in range(1, n + 1):
            best[e] = NEG_INF
        for s in range(n):
            if best[s] == NEG_INF:
                continue
            node = 0
            for e in range(s + 1, n + 1):
                node = _child(edge_keys, edge_child, bits, node, data[start + e - 1])
                if node < 0:
                    break
                p = node_piece[node]
                if p >= 0:
                    score = best[s] + piece_scores[p]
                    if score > best[e]:
                        best[e] = score
                        back[e] = s
                        back_piece[e] = p
        if n > 0 and best[n] == NEG_INF:
            n_bad += 1
            continue
        e = n
        w = weights[c]
        while e > 0:
            counts[back_piece[e]] += w
            n_tokens += 1
            if collect_pairs and back[e] > 0:
                pairs[n_pairs] = (back_piece[back[e]] << 32) | back_piece[e]
                n_pairs += 1
            e = back[e]
    return counts, n_tokens, n_bad, pairs[:n_pairs].copy()


@kernel
def piece_forward_backward_kernel(data, offsets, weights, edge_keys, edge_child, bits, node_piece, piece_scores,
                                  n_pieces):
    """Expected piece counts under the unigram model (EM's E-step): for each text, the posterior probability of
    every piece occurrence (forward-backward over the piece lattice, log space) times ``weights[i]``, summed.

    Returns ``(expected float64[n_pieces], log_likelihood float64)``. Example: pieces ``a, b, ab`` with
    probabilities ``.5, .25, .25`` on ``b"ab"``: paths ``a|b`` (.125) and ``ab`` (.25): ``ab`` gets 2/3.
    """
    expected = np.zeros(n_pieces, dtype=np.float64)
    max_len = 0
    for c in range(len(offsets) - 1):
        if offsets[c + 1] - offsets[c] > max_len:
            max_len = offsets[c + 1] - offsets[c]
    alpha = np.empty(max_len + 1, dtype=np.float64)
    beta = np.empty(max_len + 1, dtype=np.float64)
    log_likelihood = 0.0
    for c in range(len(offsets) - 1):
        start = offsets[c]
        n = offsets[c + 1] - start
        if n == 0:
            continue
        alpha[0] = 0.0
        for e in range(1, n + 1):
            alpha[e] = NEG_INF
        for s in range(n):
            if alpha[s] == NEG_INF:
                continue
            node = 0
            for e in range(s + 1, n + 1):
                node = _child(edge_keys, edge_child, bits, node, data[start + e - 1])
                if node < 0:
                    break
                p = node_piece[node]
                if p >= 0:
                    alpha[e] = log_add(alpha[e], alpha[s] + piece_scores[p])
        if alpha[n] == NEG_INF:
            continue
        for s in range(n):
            beta[s] = NEG_INF
        beta[n] = 0.0
        for s in range(n - 1, -1, -1):
            node = 0
            for e in range(s + 1, n + 1):
                node = _child(edge_keys, edge_child, bits, node, data[start + e - 1])
                if node < 0:
                    break
                p = node_piece[node]
                if p >= 0:
                    beta[s] = log_add(beta[s], piece_scores[p] + beta[e])
        z = alpha[n]
        w = weights[c]
        log_likelihood += w * z
        for s in range(n):
            if alpha[s] == NEG_INF:
                continue
            node = 0
            for e in range(s + 1, n + 1):
                node = _child(edge_keys, edge_child, bits, node, data[start + e - 1])
                if node < 0:
                    break
                p = node_piece[node]
                if p >= 0 and beta[e] != NEG_INF:
                    expected[p] += w * np.exp(alpha[s] + piece_scores[p] + beta[e] - z)
    return expected, log_likelihood
