"""BPE training kernels: count distinct chunks, then learn merges incrementally over the chunk count table.

``count_spans`` deduplicates byte spans (pre-tokens) with an open-addressing hash table that compares bytes, so
counts are exact. ``learn_merges`` is the classic incremental BPE loop:

1. Every chunk (a *word*) is a sequence of symbol ids with a count. Pair counts (int64) live in a hash table keyed
   by ``left << 32 | right``; each pair keeps a list of the words it occurs in.
2. A max-heap holds ``(count, tie, key)`` entries, best = highest count; equal counts go to the pair of smaller
   ids (the smallest key), or, for SentencePiece-style training, to the merged piece with fewer characters, then
   the smaller string (SentencePiece's ``bpe_model_trainer.cc``; ``tie`` packs the length and first bytes, so
   most comparisons never read the strings). Entries go stale as counts change: a popped entry whose count differs from
   the table's is pushed again with the current count (if still >= ``min_count``) and the pop repeats.
3. Merging ``(a, b)`` into the new id ``z`` rewrites only the words on the pair's list, left to right without
   overlaps (``a a a`` with ``(a, a)`` -> ``z a``), and applies the pair-count changes of each occurrence:
   ``(a, b)``, ``(prev, a)``, ``(b, next)`` lose the word's count; ``(prev, z)``, ``(z, next)`` gain it. Each
   pair that gained is pushed on the heap once, with its count after the whole merge (not once per word: fewer
   stale heap entries; BENCHMARKS.md has the merge stage's times). The pair table starts small and doubles at half full,
   so it is sized by the distinct pairs and stays in cache longer.

Pairs that may not merge are never counted: the merged piece would be longer than ``max_piece_length`` units
(bytes or characters: ``symbol_lengths`` says), or it breaks SentencePiece's piece rules, given per symbol by
``symbol_first``/``symbol_last`` (script of the first / last character that has one, ``SCRIPT_ANY`` = none) and
``symbol_flags`` (``NO_SPACE``: holds no ``▁``; ``LEAD_SPACE``: one ``▁``, at its start; ``ALL_SPACE``: only ``▁``;
``FROZEN``: never merges). See :func:`pair_allowed`. Byte-level BPE passes ``SCRIPT_ANY`` and ``NO_SPACE`` for all.

Example (hand-checkable): words ``[0 1 0 1]`` x1 and ``[0 1]`` x2, first new id 2: pair counts (0,1)=4, (1,0)=1
-> merge (0,1) into 2 (count 4); then (2,2)=1 -> merge into 3 if ``min_count <= 1``.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.pretokenize import decode_char, next_pretoken_end, sentencepiece_chunk_end

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
NO_SPACE, LEAD_SPACE, ALL_SPACE, FROZEN = 1, 2, 4, 8
SCRIPT_ANY = -1


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
def _same_bytes(data, a, b, length):
    """Whether ``data[a:a + length] == data[b:b + length]`` (uint8 array, int64 positions)."""
    for k in range(length):
        if data[a + k] != data[b + k]:
            return False
    return True


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
            if slot_hash[j] == h and ends[other] - starts[other] == e - s and _same_bytes(data, starts[other], s,
                                                                                             e - s):
                counts[slot_rank[j]] += weights[i]
                break
            j = (j + 1) & mask
    return first[:distinct].copy(), counts[:distinct].copy()


MODE_SENTENCEPIECE = 3  # count_chunk_table's mode for SentencePiece-style chunks (1 and 2 are the regex patterns)
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

    ``mode`` 1 or 2: the GPT-2 / Llama-3 regex (``next_pretoken_end`` with ``char_class``); 3: SentencePiece-style
    chunks of space-escaped text (``sentencepiece_chunk_end`` with ``script``); 4, 5, 6: a chunk before each
    ``"▁"``, before each space, or whole documents (``split_before_end``; the unigram trainer's words). The
    open-addressing table starts small and doubles (a table sized to the data stays in cache). Returns
    ``(starts, ends, counts)`` (int64), one entry per distinct chunk in order of first occurrence:
    ``data[starts[k]:ends[k]]`` and its count.
    Example (mode 1): documents ``b"a a"``, ``b"a"`` -> chunks ``a`` x2, `` a`` x1: starts ``[0, 1]``, ends
    ``[1, 3]``, counts ``[2, 1]``.
    """
    bits = 12
    slots = np.full(np.int64(1) << bits, -1, np.int64)
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
            elif mode >= MODE_BEFORE_SPACE_SYMBOL:
                stop = split_before_end(mode, data, pos, end)
            else:
                stop = next_pretoken_end(char_class, mode, data, pos, end)
            h = _span_hash(data, pos, stop)
            mask = (np.int64(1) << bits) - 1
            j = np.int64((h * _GOLDEN) >> np.uint64(64 - bits))
            while True:
                k = slots[j]
                if k == -1:
                    break
                if (entry_hash[k] == h and entry_end[k] - entry_start[k] == stop - pos
                        and _same_bytes(data, entry_start[k], pos, stop - pos)):
                    break
                j = (j + 1) & mask
            if k >= 0:
                counts[k] += 1
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
                    slots = np.full(np.int64(1) << bits, -1, np.int64)
                    mask = (np.int64(1) << bits) - 1
                    for e in range(n):
                        t = np.int64((entry_hash[e] * _GOLDEN) >> np.uint64(64 - bits))
                        while slots[t] != -1:
                            t = (t + 1) & mask
                        slots[t] = e
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
def weighted_char_counts(data, offsets, weights, out):
    """Add ``weights[i]`` to ``out[cp]`` for every character ``cp`` of span ``data[offsets[i]:offsets[i + 1]]``
    (``out`` int64 of 0x110000); returns the summed weight of invalid UTF-8 bytes (not counted in ``out``).
    ``b"aba"`` with weight 2 -> ``out[97] += 4``, ``out[98] += 2``."""
    invalid = np.int64(0)
    for i in range(offsets.shape[0] - 1):
        pos = offsets[i]
        end = offsets[i + 1]
        w = weights[i]
        while pos < end:
            cp, length = decode_char(data, pos, end)
            if cp < 0:
                invalid += w
            else:
                out[cp] += w
            pos += length
    return invalid


@kernel
def chars_to_symbols(data, offsets, char_symbol):
    """Rewrite spans of UTF-8 bytes as symbol ids: a character with ``char_symbol[cp] >= 0`` becomes that id, any
    other byte stays its own id (0-255). Returns ``(symbols int32, symbol offsets int64)`` per span.
    With ``char_symbol[0xE9] = 300``: ``b"\xc3\xa9t"`` -> ``[300, 116]``."""
    symbols = np.empty(offsets[-1] - offsets[0], np.int32)
    out_offsets = np.zeros(offsets.shape[0], np.int64)
    w = 0
    for i in range(offsets.shape[0] - 1):
        pos = offsets[i]
        end = offsets[i + 1]
        while pos < end:
            cp, length = decode_char(data, pos, end)
            if cp >= 0 and char_symbol[cp] >= 0:
                symbols[w] = char_symbol[cp]
                pos += length
            else:
                symbols[w] = data[pos]
                pos += 1
            w += 1
        out_offsets[i + 1] = w
    return symbols[:w].copy(), out_offsets


@kernel
def _merged_prefix(piece_data, piece_start, piece_end, a, b):
    """The first 7 bytes of piece ``a`` + piece ``b`` as a big-endian int64, zero-padded (``b"ab"`` ->
    ``0x61620000000000``): a string order (ties on it need :func:`_merged_order`)."""
    out = np.int64(0)
    taken = 0
    for piece in (a, b):
        for i in range(piece_start[piece], piece_end[piece]):
            if taken == 7:
                return out
            out |= np.int64(piece_data[i]) << (8 * (6 - taken))
            taken += 1
    return out


@kernel
def _merged_order(piece_len, piece_data, piece_start, piece_end, key_x, key_y):
    """SentencePiece's order of two merge candidates with equal counts: -1 when ``x`` (``left << 32 | right``)
    goes first, 1 when ``y`` does, 0 when the merged pieces are the same string. Fewer characters first, then the
    smaller string (bytes, as ``std::string``; UTF-8 byte order is code point order). ``x = ("a", "b")``,
    ``y = ("a", "a")`` -> 1 (``aa`` < ``ab``)."""
    ax = key_x >> 32
    bx = key_x & 0xFFFFFFFF
    ay = key_y >> 32
    by = key_y & 0xFFFFFFFF
    length_x = piece_len[ax] + piece_len[bx]
    length_y = piece_len[ay] + piece_len[by]
    if length_x != length_y:
        return -1 if length_x < length_y else 1
    i = piece_start[ax]
    end_i = piece_end[ax]
    j = piece_start[ay]
    end_j = piece_end[ay]
    part_x = 0
    part_y = 0
    while True:
        if i == end_i and part_x == 0:
            i = piece_start[bx]
            end_i = piece_end[bx]
            part_x = 1
        if j == end_j and part_y == 0:
            j = piece_start[by]
            end_j = piece_end[by]
            part_y = 1
        done_x = i == end_i
        done_y = j == end_j
        if done_x or done_y:
            if done_x and done_y:
                return 0
            return -1 if done_x else 1
        if piece_data[i] != piece_data[j]:
            return -1 if piece_data[i] < piece_data[j] else 1
        i += 1
        j += 1


@kernel
def _better(count_x, tie_x, key_x, count_y, tie_y, key_y):
    return count_x > count_y or (count_x == count_y and (tie_x < tie_y or (tie_x == tie_y and key_x < key_y)))


@kernel
def _heap_push(heap_count, heap_tie, heap_key, size, count, tie, key):
    i = size
    heap_count[i] = count
    heap_tie[i] = tie
    heap_key[i] = key
    while i > 0:
        parent = (i - 1) >> 1
        if _better(heap_count[i], heap_tie[i], heap_key[i], heap_count[parent], heap_tie[parent], heap_key[parent]):
            heap_count[i], heap_count[parent] = heap_count[parent], heap_count[i]
            heap_tie[i], heap_tie[parent] = heap_tie[parent], heap_tie[i]
            heap_key[i], heap_key[parent] = heap_key[parent], heap_key[i]
            i = parent
        else:
            break
    return size + 1


@kernel
def _heap_pop(heap_count, heap_tie, heap_key, size):
    """Remove the best entry (left at index ``size - 1``); returns the new size."""
    size -= 1
    heap_count[0], heap_count[size] = heap_count[size], heap_count[0]
    heap_tie[0], heap_tie[size] = heap_tie[size], heap_tie[0]
    heap_key[0], heap_key[size] = heap_key[size], heap_key[0]
    i = 0
    while True:
        best = i
        left = 2 * i + 1
        right = left + 1
        if left < size and _better(heap_count[left], heap_tie[left], heap_key[left], heap_count[best],
                                   heap_tie[best], heap_key[best]):
            best = left
        if right < size and _better(heap_count[right], heap_tie[right], heap_key[right], heap_count[best],
                                    heap_tie[best], heap_key[best]):
            best = right
        if best == i:
            break
        heap_count[i], heap_count[best] = heap_count[best], heap_count[i]
        heap_tie[i], heap_tie[best] = heap_tie[best], heap_tie[i]
        heap_key[i], heap_key[best] = heap_key[best], heap_key[i]
        i = best
    return size


@kernel
def _tie_value(exact, piece_len, piece_data, piece_start, piece_end, key):
    """Heap tie value of the pair ``key``: 0 without ``exact``, else the merged piece's character count (capped
    at 127) in the top byte over :func:`_merged_prefix`, so that comparing two values orders them as
    SentencePiece does unless they are equal or both capped."""
    if not exact:
        return np.int64(0)
    a = key >> 32
    b = key & 0xFFFFFFFF
    length = min(piece_len[a] + piece_len[b], 127)
    return (np.int64(length) << 56) | _merged_prefix(piece_data, piece_start, piece_end, a, b)


@kernel
def _grown(array, length):
    out = np.empty(length, array.dtype)
    out[:array.shape[0]] = array
    return out


@kernel
def pair_allowed(length, first, last, flags, a, b, max_piece_length):
    """May pieces ``a`` and ``b`` merge? (SentencePiece's ``IsValidSentencePiece`` for the concatenation of two
    valid pieces, with allow_whitespace_only_pieces and split_by_whitespace.) Neither is ``FROZEN``; the lengths
    add up to at most ``max_piece_length``; ``▁`` only leads (``▁`` + ``ab``) or the result is all ``▁``; the last
    script of ``a`` and the first of ``b`` agree unless one is ``SCRIPT_ANY``."""
    fa = flags[a]
    fb = flags[b]
    if (fa | fb) & FROZEN:
        return False
    if length[a] + length[b] > max_piece_length:
        return False
    both_space = (fa & ALL_SPACE) != 0 and (fb & ALL_SPACE) != 0
    space_leads = (fb & NO_SPACE) != 0 and (fa & (NO_SPACE | LEAD_SPACE)) != 0
    if not (both_space or space_leads):
        return False
    return last[a] == SCRIPT_ANY or first[b] == SCRIPT_ANY or last[a] == first[b]


@kernel
def _set_merged(length, first, last, flags, a, b, z):
    """Attributes of the new piece ``z = a + b`` (an allowed pair)."""
    length[z] = length[a] + length[b]
    first[z] = first[a] if first[a] != SCRIPT_ANY else first[b]
    last[z] = last[b] if last[b] != SCRIPT_ANY else last[a]
    if (flags[a] & ALL_SPACE) != 0 and (flags[b] & ALL_SPACE) != 0:
        flags[z] = ALL_SPACE
    else:
        flags[z] = flags[a] & (NO_SPACE | LEAD_SPACE)


@kernel
def _rehashed(keys, pair_count, head, mark, bits):
    """The pair table at twice the size (``bits + 1``), every entry moved with its count, list head and mark."""
    bits += 1
    new_keys = np.full(np.int64(1) << bits, -1, np.int64)
    new_count = np.zeros(np.int64(1) << bits, np.int64)
    new_head = np.full(np.int64(1) << bits, -1, np.int64)
    new_mark = np.zeros(np.int64(1) << bits, np.int64)
    for j in range(keys.shape[0]):
        if keys[j] != -1:
            t = _slot_of(new_keys, keys[j], bits)
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
    keys = np.full(np.int64(1) << bits, -1, np.int64)
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
                heap_tie = _grown(heap_tie, 2 * heap_size)
                heap_key = _grown(heap_key, 2 * heap_size)
            tie = _tie_value(exact, piece_len, piece_data, piece_start, piece_end, keys[j])
            heap_size = _heap_push(heap_count, heap_tie, heap_key, heap_size, pair_count[j], tie, keys[j])

    merges = 0
    while merges < max_merges and heap_size > 0:
        heap_size = _heap_pop(heap_count, heap_tie, heap_key, heap_size)
        count = heap_count[heap_size]
        tie = heap_tie[heap_size]
        key = heap_key[heap_size]
        slot = _slot_of(keys, key, bits)
        current = pair_count[slot]
        if current != count:
            if current >= min_count:
                heap_size = _heap_push(heap_count, heap_tie, heap_key, heap_size, current, tie, key)
            continue
        if exact:
            # the heap orders equal counts by tie value; the entries right behind with the same count and tie (or
            # both lengths capped) are the candidates only the strings can order: take the best, defer the rest
            n_deferred = 0
            capped = (tie >> 56) == 127
            while heap_size > 0 and heap_count[0] == count and (
                    heap_tie[0] == tie or (capped and (heap_tie[0] >> 56) == 127)):
                heap_size = _heap_pop(heap_count, heap_tie, heap_key, heap_size)
                other_tie = heap_tie[heap_size]
                other_key = heap_key[heap_size]
                other_current = pair_count[_slot_of(keys, other_key, bits)]
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
                heap_size = _heap_push(heap_count, heap_tie, heap_key, heap_size, deferred_count[q], deferred_tie[q],
                                       deferred_key[q])
            slot = _slot_of(keys, key, bits)
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
                        if mark[t] != merges:
                            mark[t] = merges
                            if n_touched == touched.shape[0]:
                                touched = _grown(touched, 2 * n_touched)
                            touched[n_touched] = ckey
                            n_touched += 1
            r = r_next
        slot = _slot_of(keys, key, bits)
        pair_count[slot] = 0
        # one heap entry per pair that gained, at its count after the whole merge (entries pushed at counts that
        # then fell are stale and corrected when popped; a pair's best entry is never below its count)
        for q in range(n_touched):
            ckey = touched[q]
            current = pair_count[_slot_of(keys, ckey, bits)]
            if current >= min_count:
                if heap_size == heap_count.shape[0]:
                    heap_count = _grown(heap_count, 2 * heap_size)
                    heap_tie = _grown(heap_tie, 2 * heap_size)
                    heap_key = _grown(heap_key, 2 * heap_size)
                tie = _tie_value(exact, piece_len, piece_data, piece_start, piece_end, ckey)
                heap_size = _heap_push(heap_count, heap_tie, heap_key, heap_size, current, tie, ckey)
    return out_left[:merges].copy(), out_right[:merges].copy(), out_count[:merges].copy()
