"""BPE training's merge kernel: learn merges incrementally over the chunk count table.

The chunks are counted first (:mod:`tokenizer.kernels.chunk_count`: ``count_spans`` deduplicates byte spans
(pre-tokens) with an open-addressing hash table that compares bytes, so counts are exact). ``learn_merges`` is the
classic incremental BPE loop:

1. Every chunk (a *word*) is a sequence of symbol ids with a count. Pair counts (int64) live in a hash table keyed
   by ``left << 32 | right``; each pair keeps a list of the words it occurs in.
2. A heap (:func:`tokenizer.kernels.heaps.triple_heap_push`) holds ``(count, tie, key)`` entries, best = highest
   count; equal counts go to the pair of smaller ids (the smallest key), or, for SentencePiece-style training, to the
   merged piece with fewer characters, then the smaller string (SentencePiece's ``bpe_model_trainer.cc``; ``tie``
   packs the length and first bytes, so most comparisons never read the strings). Entries go stale as counts change:
   a popped entry whose count differs from the table's is pushed again with the current count (if still >=
   ``min_count``) and the pop repeats.
3. Merging ``(a, b)`` into the new id ``z`` rewrites only the words on the pair's list, left to right without
   overlaps (``a a a`` with ``(a, a)`` -> ``z a``), and applies the pair-count changes of each occurrence:
   ``(a, b)``, ``(prev, a)``, ``(b, next)`` lose the word's count; ``(prev, z)``, ``(z, next)`` gain it. Each
   pair that gained is pushed on the heap once, with its count after the whole merge (not once per word: fewer
   stale heap entries; BENCHMARKS.md has the merge stage's times). The pair table starts small and doubles at half
   full, so it is sized by the distinct pairs and stays in cache longer.

Pairs that may not merge are never counted: the merged piece would be longer than ``max_piece_length`` units
(bytes or characters: ``symbol_lengths`` says), or it breaks SentencePiece's piece rules, given per symbol by
``symbol_first``/``symbol_last`` (script of the first / last character that has one, ``SCRIPT_ANY`` = none) and
``symbol_flags`` (``NO_SPACE``: holds no ``▁``; ``LEAD_SPACE``: one ``▁``, at its start; ``ALL_SPACE``: only ``▁``;
``FROZEN``: never merges). See :func:`tokenizer.kernels.bpe_pair_rules.pair_allowed`. Byte-level BPE passes
``SCRIPT_ANY`` and ``NO_SPACE`` for all.

Example (hand-checkable): words ``[0 1 0 1]`` x1 and ``[0 1]`` x2, first new id 2: pair counts (0,1)=4, (1,0)=1
-> merge (0,1) into 2 (count 4); then (2,2)=1 -> merge into 3 if ``min_count <= 1``.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.bpe_merge_ties import _merged_order, _tie_value
from tokenizer.kernels.bpe_pair_rules import SCRIPT_ANY, _set_merged, pair_allowed
from tokenizer.kernels.chunk_count import _grown
from tokenizer.kernels.hash_table import EMPTY, find_slot
from tokenizer.kernels.heaps import triple_heap_pop, triple_heap_push


@kernel
def _rehashed(keys, pair_count, head, mark, bits):
    """The pair table at twice the size (``bits + 1``), every entry moved with its count, list head and mark."""
    bits += 1
    new_keys = np.full(np.int64(1) << bits, EMPTY, np.int64)
    new_count = np.zeros(np.int64(1) << bits, np.int64)
    new_head = np.full(np.int64(1) << bits, -1, np.int64)
    new_mark = np.zeros(np.int64(1) << bits, np.int64)
    for j in range(keys.shape[0]):
        if keys[j] != EMPTY:
            t = find_slot(new_keys, bits, keys[j])
            new_keys[t] = keys[j]
            new_count[t] = pair_count[j]
            new_head[t] = head[j]
            new_mark[t] = mark[j]
    return new_keys, new_count, new_head, new_mark, bits


@kernel
def learn_merges(symbols, word_offsets, word_counts, symbol_lengths, symbol_first, symbol_last, symbol_flags,
                 max_merges, min_count, max_piece_length, symbol_bytes, symbol_byte_offsets, sentencepiece_ties):
    """Learn up to ``max_merges`` merges over words ``symbols[word_offsets[w]:word_offsets[w + 1]]``.

    ``symbols`` int32 (rewritten in place), ``word_offsets`` int64 (words + 1), ``word_counts`` int64 (words),
    ``symbol_lengths`` int64: length of each initial id (bytes or characters); ``symbol_first``/``symbol_last``
    int64 and ``symbol_flags`` int64 per initial id (see the module docstring); new ids start at
    ``symbol_lengths.shape[0]``. ``symbol_bytes`` (uint8) and ``symbol_byte_offsets`` (int64, initial ids + 1):
    the string of each initial id. Equal pair counts go to the pair of smaller ids, or with
    ``sentencepiece_ties`` as in SentencePiece's ``bpe_model_trainer.cc``: the merged piece with fewer units
    (``symbol_lengths``), then the smaller string, then smaller ids (the same string from two pairs).
    Stops early when the best pair count is below ``min_count``. Returns ``(left, right, count)`` int64 arrays,
    one entry per merge in order (merge ``m`` creates id ``symbol_lengths.shape[0] + m``).
    """
    n_words = word_offsets.shape[0] - 1
    first_id = symbol_lengths.shape[0]
    piece_len = np.zeros(first_id + max_merges, np.int64)
    piece_len[:first_id] = symbol_lengths
    piece_first = np.full(first_id + max_merges, SCRIPT_ANY, np.int64)
    piece_first[:first_id] = symbol_first
    piece_last = np.full(first_id + max_merges, SCRIPT_ANY, np.int64)
    piece_last[:first_id] = symbol_last
    piece_flags = np.zeros(first_id + max_merges, np.int64)
    piece_flags[:first_id] = symbol_flags
    piece_start = np.zeros(first_id + max_merges, np.int64)
    piece_end = np.zeros(first_id + max_merges, np.int64)
    piece_start[:first_id] = symbol_byte_offsets[:-1]
    piece_end[:first_id] = symbol_byte_offsets[1:]
    piece_data = np.empty(symbol_bytes.shape[0] + 64 * max_merges + 16, np.uint8)
    piece_data[:symbol_bytes.shape[0]] = symbol_bytes
    data_used = symbol_bytes.shape[0]
    exact = sentencepiece_ties
    deferred_count = np.empty(16, np.int64)
    deferred_tie = np.empty(16, np.int64)
    deferred_key = np.empty(16, np.int64)
    word_len = np.empty(n_words, np.int64)
    longest = 1
    total = 0
    for w in range(n_words):
        word_len[w] = word_offsets[w + 1] - word_offsets[w]
        longest = max(longest, word_len[w])
        total += word_len[w]
    bits = 16  # grown (doubled) at half full: sized by the distinct pairs, not the symbols
    keys = np.full(np.int64(1) << bits, EMPTY, np.int64)
    pair_count = np.zeros(np.int64(1) << bits, np.int64)
    head = np.full(np.int64(1) << bits, -1, np.int64)
    mark = np.zeros(np.int64(1) << bits, np.int64)  # the merge that last put the pair on ``touched``
    touched = np.empty(1024, np.int64)  # pairs that gained count in this merge, pushed once when it is done
    used = 0
    rec_word = np.empty(total + 16, np.int64)
    rec_next = np.empty(total + 16, np.int64)
    n_rec = 0
    heap_count = np.empty(1024, np.int64)
    heap_key = np.empty(1024, np.int64)
    heap_tie = np.empty(1024, np.int64)
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
            if not pair_allowed(piece_len, piece_first, piece_last, piece_flags, left, right, max_piece_length):
                continue
            if 2 * (used + 1) > keys.shape[0]:
                keys, pair_count, head, mark, bits = _rehashed(keys, pair_count, head, mark, bits)
            t = find_slot(keys, bits, key)
            if keys[t] == EMPTY:
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
        if keys[j] != EMPTY and pair_count[j] >= min_count:
            if heap_size == heap_count.shape[0]:
                heap_count = _grown(heap_count, 2 * heap_size)
                heap_tie = _grown(heap_tie, 2 * heap_size)
                heap_key = _grown(heap_key, 2 * heap_size)
            tie = _tie_value(exact, piece_len, piece_data, piece_start, piece_end, keys[j])
            heap_size = triple_heap_push(heap_count, heap_tie, heap_key, heap_size, pair_count[j], tie, keys[j])

    merges = 0
    while merges < max_merges and heap_size > 0:
        heap_size = triple_heap_pop(heap_count, heap_tie, heap_key, heap_size)
        count = heap_count[heap_size]
        tie = heap_tie[heap_size]
        key = heap_key[heap_size]
        slot = find_slot(keys, bits, key)
        current = pair_count[slot]
        if current != count:
            if current >= min_count:
                heap_size = triple_heap_push(heap_count, heap_tie, heap_key, heap_size, current, tie, key)
            continue
        if exact:
            # the heap orders equal counts by tie value; the entries right behind with the same count and tie (or
            # both lengths capped) are the candidates only the strings can order: take the best, defer the rest
            n_deferred = 0
            capped = (tie >> 56) == 127
            while heap_size > 0 and heap_count[0] == count and (
                    heap_tie[0] == tie or (capped and (heap_tie[0] >> 56) == 127)):
                heap_size = triple_heap_pop(heap_count, heap_tie, heap_key, heap_size)
                other_tie = heap_tie[heap_size]
                other_key = heap_key[heap_size]
                other_current = pair_count[find_slot(keys, bits, other_key)]
                if other_current != count and other_current < min_count:
                    continue  # stale and too rare now
                if n_deferred == deferred_key.shape[0]:
                    deferred_count = _grown(deferred_count, 2 * n_deferred)
                    deferred_tie = _grown(deferred_tie, 2 * n_deferred)
                    deferred_key = _grown(deferred_key, 2 * n_deferred)
                deferred_count[n_deferred] = other_current  # stale: lower now (a higher count is in front)
                deferred_tie[n_deferred] = other_tie
                deferred_key[n_deferred] = other_key
                if other_current == count and other_key != key and _merged_order(
                        piece_len, piece_data, piece_start, piece_end, other_key, key) < 0:
                    deferred_tie[n_deferred] = tie
                    deferred_key[n_deferred] = key
                    tie = other_tie
                    key = other_key
                n_deferred += 1
            for q in range(n_deferred):
                if heap_size == heap_count.shape[0]:
                    heap_count = _grown(heap_count, 2 * heap_size)
                    heap_tie = _grown(heap_tie, 2 * heap_size)
                    heap_key = _grown(heap_key, 2 * heap_size)
                heap_size = triple_heap_push(heap_count, heap_tie, heap_key, heap_size, deferred_count[q],
                                             deferred_tie[q], deferred_key[q])
            slot = find_slot(keys, bits, key)
        a = key >> 32
        b = key & 0xFFFFFFFF
        z = first_id + merges
        _set_merged(piece_len, piece_first, piece_last, piece_flags, a, b, z)
        grow = data_used + (piece_end[a] - piece_start[a]) + (piece_end[b] - piece_start[b])
        if grow > piece_data.shape[0]:
            piece_data = _grown(piece_data, 2 * grow)
        piece_start[z] = data_used
        for part in (a, b):
            for i in range(piece_start[part], piece_end[part]):
                piece_data[data_used] = piece_data[i]
                data_used += 1
        piece_end[z] = data_used
        out_left[merges] = a
        out_right[merges] = b
        out_count[merges] = count
        merges += 1
        r = head[slot]
        head[slot] = -1
        n_touched = 0
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
                    if not pair_allowed(piece_len, piece_first, piece_last, piece_flags, left, right,
                                        max_piece_length):
                        continue
                    if 2 * (used + 1) > keys.shape[0]:
                        keys, pair_count, head, mark, bits = _rehashed(keys, pair_count, head, mark, bits)
                    t = find_slot(keys, bits, ckey)
                    if keys[t] == EMPTY:
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
                        if mark[t] != merges:
                            mark[t] = merges
                            if n_touched == touched.shape[0]:
                                touched = _grown(touched, 2 * n_touched)
                            touched[n_touched] = ckey
                            n_touched += 1
            r = r_next
        slot = find_slot(keys, bits, key)
        pair_count[slot] = 0
        # one heap entry per pair that gained, at its count after the whole merge (entries pushed at counts that
        # then fell are stale and corrected when popped; a pair's best entry is never below its count)
        for q in range(n_touched):
            ckey = touched[q]
            current = pair_count[find_slot(keys, bits, ckey)]
            if current >= min_count:
                if heap_size == heap_count.shape[0]:
                    heap_count = _grown(heap_count, 2 * heap_size)
                    heap_tie = _grown(heap_tie, 2 * heap_size)
                    heap_key = _grown(heap_key, 2 * heap_size)
                tie = _tie_value(exact, piece_len, piece_data, piece_start, piece_end, ckey)
                heap_size = triple_heap_push(heap_count, heap_tie, heap_key, heap_size, current, tie, ckey)
    return out_left[:merges].copy(), out_right[:merges].copy(), out_count[:merges].copy()
