"""BPE training kernels: count distinct chunks, then learn merges incrementally over the chunk count table.

``count_spans`` deduplicates byte spans (pre-tokens) with an open-addressing hash table that compares bytes, so
counts are exact. ``learn_merges`` is the classic incremental BPE loop:

1. Every chunk (a *word*) is a sequence of symbol ids with a count. Pair counts (int64) live in a hash table keyed
   by ``left << 32 | right``; each pair keeps a list of the words it occurs in.
2. A max-heap holds ``(count, key)`` entries, best = highest count, then the smallest key (so ties go to the pair
   of smaller ids, deterministically). Entries go stale as counts change: a popped entry whose count differs from
   the table's is pushed again with the current count (if still >= ``min_count``) and the pop repeats.
3. Merging ``(a, b)`` into the new id ``z`` rewrites only the words on the pair's list, left to right without
   overlaps (``a a a`` with ``(a, a)`` -> ``z a``), and applies the pair-count changes of each occurrence:
   ``(a, b)``, ``(prev, a)``, ``(b, next)`` lose the word's count; ``(prev, z)``, ``(z, next)`` gain it.

Pairs whose merged piece would exceed ``max_piece_length`` bytes are never counted.

Example (hand-checkable): words ``[0 1 0 1]`` x1 and ``[0 1]`` x2, first new id 2: pair counts (0,1)=4, (1,0)=1
-> merge (0,1) into 2 (count 4); then (2,2)=1 -> merge into 3 if ``min_count <= 1``.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@kernel
def _slot_of(keys, key, bits):
    """Slot holding ``key`` or the empty slot (-1) where it belongs (linear probing)."""
    mask = (np.int64(1) << bits) - 1
    h = np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(64 - bits))
    while True:
        k = keys[h]
        if k == key or k == -1:
            return h
        h = (h + 1) & mask


@kernel
def _span_hash(data, start, end):
    h = np.uint64(14695981039346656037)
    for i in range(start, end):
        h = (h ^ np.uint64(data[i])) * np.uint64(1099511628211)
    return h


@kernel
def count_spans(data, starts, ends, weights):
    """Distinct byte spans ``data[starts[i]:ends[i]]`` with summed ``weights`` (int64).

    Returns ``(first, counts)``: ``first`` (int64) the index of each distinct span's first occurrence, in order
    of first occurrence, and ``counts`` (int64) their summed weights. Example: spans ``ab, c, ab`` with weights
    ``1, 1, 2`` -> ``first [0, 1]``, ``counts [3, 1]``.
    """
    n = starts.shape[0]
    bits = 4
    while (np.int64(1) << bits) < 2 * n + 16:
        bits += 1
    size = np.int64(1) << bits
    mask = size - 1
    slot_span = np.full(size, -1, np.int64)
    slot_hash = np.zeros(size, np.uint64)
    first = np.empty(n, np.int64)
    counts = np.zeros(n, np.int64)
    slot_rank = np.empty(size, np.int64)
    distinct = 0
    for i in range(n):
        s = starts[i]
        e = ends[i]
        h = _span_hash(data, s, e)
        j = np.int64((h * _GOLDEN) >> np.uint64(64 - bits))
        while True:
            other = slot_span[j]
            if other == -1:
                slot_span[j] = i
                slot_hash[j] = h
                slot_rank[j] = distinct
                first[distinct] = i
                counts[distinct] = weights[i]
                distinct += 1
                break
            if slot_hash[j] == h and ends[other] - starts[other] == e - s:
                os_ = starts[other]
                same = True
                for k in range(e - s):
                    if data[os_ + k] != data[s + k]:
                        same = False
                        break
                if same:
                    counts[slot_rank[j]] += weights[i]
                    break
            j = (j + 1) & mask
    return first[:distinct].copy(), counts[:distinct].copy()


@kernel
def _better(count_a, key_a, count_b, key_b):
    return count_a > count_b or (count_a == count_b and key_a < key_b)


@kernel
def _heap_push(heap_count, heap_key, size, count, key):
    i = size
    heap_count[i] = count
    heap_key[i] = key
    while i > 0:
        parent = (i - 1) >> 1
        if _better(heap_count[i], heap_key[i], heap_count[parent], heap_key[parent]):
            heap_count[i], heap_count[parent] = heap_count[parent], heap_count[i]
            heap_key[i], heap_key[parent] = heap_key[parent], heap_key[i]
            i = parent
        else:
            break
    return size + 1


@kernel
def _heap_pop(heap_count, heap_key, size):
    """Remove the best entry (left at index ``size - 1``); returns the new size."""
    size -= 1
    heap_count[0], heap_count[size] = heap_count[size], heap_count[0]
    heap_key[0], heap_key[size] = heap_key[size], heap_key[0]
    i = 0
    while True:
        best = i
        left = 2 * i + 1
        right = left + 1
        if left < size and _better(heap_count[left], heap_key[left], heap_count[best], heap_key[best]):
            best = left
        if right < size and _better(heap_count[right], heap_key[right], heap_count[best], heap_key[best]):
            best = right
        if best == i:
            break
        heap_count[i], heap_count[best] = heap_count[best], heap_count[i]
        heap_key[i], heap_key[best] = heap_key[best], heap_key[i]
        i = best
    return size


@kernel
def _grown(array, length):
    out = np.empty(length, array.dtype)
    out[:array.shape[0]] = array
    return out


@kernel
def learn_merges(symbols, word_offsets, word_counts, symbol_lengths, max_merges, min_count, max_piece_length):
    """Learn up to ``max_merges`` merges over words ``symbols[word_offsets[w]:word_offsets[w + 1]]``.

    ``symbols`` int32 (rewritten in place), ``word_offsets`` int64 (words + 1), ``word_counts`` int64 (words),
    ``symbol_lengths`` int64: byte length of each initial id; new ids start at ``symbol_lengths.shape[0]``.
    Stops early when the best pair count is below ``min_count``. Returns ``(left, right, count)`` int64 arrays,
    one entry per merge in order (merge ``m`` creates id ``symbol_lengths.shape[0] + m``).
    """
    n_words = word_offsets.shape[0] - 1
    first_id = symbol_lengths.shape[0]
    piece_len = np.zeros(first_id + max_merges, np.int64)
    piece_len[:first_id] = symbol_lengths
    word_len = np.empty(n_words, np.int64)
    longest = 1
    total = 0
    for w in range(n_words):
        word_len[w] = word_offsets[w + 1] - word_offsets[w]
        longest = max(longest, word_len[w])
        total += word_len[w]
    bits = 10
    while (np.int64(1) << bits) < 2 * total + 16:
        bits += 1
    keys = np.full(np.int64(1) << bits, -1, np.int64)
    pair_count = np.zeros(np.int64(1) << bits, np.int64)
    head = np.full(np.int64(1) << bits, -1, np.int64)
    used = 0
    rec_word = np.empty(total + 16, np.int64)
    rec_next = np.empty(total + 16, np.int64)
    n_rec = 0
    heap_count = np.empty(1024, np.int64)
    heap_key = np.empty(1024, np.int64)
    heap_size = 0
    stamp = np.zeros(n_words, np.int64)
    change_key = np.empty(5 * longest + 8, np.int64)
    change_delta = np.empty(5 * longest + 8, np.int64)
    out_left = np.empty(max_merges, np.int64)
    out_right = np.empty(max_merges, np.int64)
    out_count = np.empty(max_merges, np.int64)

    # initial pair counts: the same code path as merge updates (one change list per word)
    for w in range(n_words):
        c = word_counts[w]
        s = word_offsets[w]
        n_changes = 0
        for i in range(s, s + word_len[w] - 1):
            change_key[n_changes] = (np.int64(symbols[i]) << 32) | np.int64(symbols[i + 1])
            change_delta[n_changes] = c
            n_changes += 1
        for q in range(n_changes):
            key = change_key[q]
            left = key >> 32
            right = key & 0xFFFFFFFF
            if piece_len[left] + piece_len[right] > max_piece_length:
                continue
            if 2 * (used + 1) > keys.shape[0]:
                old_keys, old_count, old_head = keys, pair_count, head
                bits += 1
                keys = np.full(np.int64(1) << bits, -1, np.int64)
                pair_count = np.zeros(np.int64(1) << bits, np.int64)
                head = np.full(np.int64(1) << bits, -1, np.int64)
                for j in range(old_keys.shape[0]):
                    if old_keys[j] != -1:
                        t = _slot_of(keys, old_keys[j], bits)
                        keys[t] = old_keys[j]
                        pair_count[t] = old_count[j]
                        head[t] = old_head[j]
            t = _slot_of(keys, key, bits)
            if keys[t] == -1:
                keys[t] = key
                used += 1
            pair_count[t] += change_delta[q]
            if head[t] < 0 or rec_word[head[t]] != w:
                if n_rec == rec_word.shape[0]:
                    rec_word = _grown(rec_word, 2 * n_rec)
                    rec_next = _grown(rec_next, 2 * n_rec)
                rec_word[n_rec] = w
                rec_next[n_rec] = head[t]
                head[t] = n_rec
                n_rec += 1
    for j in range(keys.shape[0]):
        if keys[j] != -1 and pair_count[j] >= min_count:
            if heap_size == heap_count.shape[0]:
                heap_count = _grown(heap_count, 2 * heap_size)
                heap_key = _grown(heap_key, 2 * heap_size)
            heap_size = _heap_push(heap_count, heap_key, heap_size, pair_count[j], keys[j])

    merges = 0
    while merges < max_merges and heap_size > 0:
        heap_size = _heap_pop(heap_count, heap_key, heap_size)
        count = heap_count[heap_size]
        key = heap_key[heap_size]
        slot = _slot_of(keys, key, bits)
        current = pair_count[slot]
        if current != count:
            if current >= min_count:
                heap_size = _heap_push(heap_count, heap_key, heap_size, current, key)
            continue
        a = key >> 32
        b = key & 0xFFFFFFFF
        z = first_id + merges
        piece_len[z] = piece_len[a] + piece_len[b]
        out_left[merges] = a
        out_right[merges] = b
        out_count[merges] = count
        merges += 1
        r = head[slot]
        head[slot] = -1
        while r >= 0:
            w = rec_word[r]
            r_next = rec_next[r]
            if stamp[w] != merges:
                stamp[w] = merges
                c = word_counts[w]
                s = word_offsets[w]
                end = s + word_len[w]
                n_changes = 0
                rd = s
                wr = s
                while rd < end:
                    if rd + 1 < end and symbols[rd] == a and symbols[rd + 1] == b:
                        change_key[n_changes] = key
                        change_delta[n_changes] = -c
                        n_changes += 1
                        if wr > s:
                            prev = np.int64(symbols[wr - 1])
                            change_key[n_changes] = (prev << 32) | a
                            change_delta[n_changes] = -c
                            change_key[n_changes + 1] = (prev << 32) | z
                            change_delta[n_changes + 1] = c
                            n_changes += 2
                        if rd + 2 < end:
                            following = np.int64(symbols[rd + 2])
                            change_key[n_changes] = (b << 32) | following
                            change_delta[n_changes] = -c
                            change_key[n_changes + 1] = (z << 32) | following
                            change_delta[n_changes + 1] = c
                            n_changes += 2
                        symbols[wr] = z
                        wr += 1
                        rd += 2
                    else:
                        symbols[wr] = symbols[rd]
                        wr += 1
                        rd += 1
                word_len[w] = wr - s
                for q in range(n_changes):
                    ckey = change_key[q]
                    left = ckey >> 32
                    right = ckey & 0xFFFFFFFF
                    if piece_len[left] + piece_len[right] > max_piece_length:
                        continue
                    if 2 * (used + 1) > keys.shape[0]:
                        old_keys, old_count, old_head = keys, pair_count, head
                        bits += 1
                        keys = np.full(np.int64(1) << bits, -1, np.int64)
                        pair_count = np.zeros(np.int64(1) << bits, np.int64)
                        head = np.full(np.int64(1) << bits, -1, np.int64)
                        for j in range(old_keys.shape[0]):
                            if old_keys[j] != -1:
                                t = _slot_of(keys, old_keys[j], bits)
                                keys[t] = old_keys[j]
                                pair_count[t] = old_count[j]
                                head[t] = old_head[j]
                    t = _slot_of(keys, ckey, bits)
                    if keys[t] == -1:
                        keys[t] = ckey
                        used += 1
                    pair_count[t] += change_delta[q]
                    if change_delta[q] > 0:
                        if head[t] < 0 or rec_word[head[t]] != w:
                            if n_rec == rec_word.shape[0]:
                                rec_word = _grown(rec_word, 2 * n_rec)
                                rec_next = _grown(rec_next, 2 * n_rec)
                            rec_word[n_rec] = w
                            rec_next[n_rec] = head[t]
                            head[t] = n_rec
                            n_rec += 1
                        if pair_count[t] >= min_count:
                            if heap_size == heap_count.shape[0]:
                                heap_count = _grown(heap_count, 2 * heap_size)
                                heap_key = _grown(heap_key, 2 * heap_size)
                            heap_size = _heap_push(heap_count, heap_key, heap_size, pair_count[t], ckey)
            r = r_next
        slot = _slot_of(keys, key, bits)
        pair_count[slot] = 0
    return out_left[:merges].copy(), out_right[:merges].copy(), out_count[:merges].copy()
