r"""Merge replay for superword models (coarse pre-split ``superword``), in two levels and without a second pass over
the text: the ids of :mod:`tokenizer.kernels.bpe_ranked` for every coarse chunk, built from the cached ids of its
words.

Replay merges the lowest rank first and no merge takes a part that a later merge makes (what training produces;
:func:`tokenizer.kernels.bpe_match.build_match_tables` checks it), so it applies every merge below a rank ``T``
before any other: the replay of a chunk is the replay of the merges from ``T`` on (the *phrase table*) over the
pieces that the merges below ``T`` (the *word table*) give it. And a merge of the word table can join two pieces
across a position only if it joins a piece ending in the byte before it to one starting with the byte after it: where
no merge of the word table does (the *meeting* table of 65,536 bits, :func:`meeting_bytes`), the word table's replay
of the chunk is the replay of the two sides apart. A superword model's ``T`` is where its first stage ends
(:func:`word_level_merges`): no merge below it joins a letter to the space after it, so the chunk falls apart into
its words, and a word's first-level ids come from a pre-token cache like byte-level BPE's.

One pass over a document: its GPT-2 pre-tokens (only a partition: the ids do not depend on it) are read in order;
a pre-token inside which no coarse match starts and that starts none (:func:`inside_a_stretch`: a word, a single
punctuation character, a contraction) adds its word ids to the current stretch (the unmatched text between two
coarse matches); any other pre-token hands over to the coarse split itself
(:func:`tokenizer.kernels.superword_split.superword_match_end`), which finds where the stretch ends and the match
after it; the stretch then gets its second level, the match is encoded as a chunk of its own
(:func:`chunk_into`), and the pass goes on after it. A pre-token whose first byte meets the byte before it in the
meeting table taints the stretch, which is then encoded again as one chunk (the same ids, as the table allows).

Work: the GPT-2 split, a cache lookup per word and a table lookup per two neighbouring ids of a stretch, where
:mod:`tokenizer.kernels.batch`'s other path splits the text twice and replays every chunk past the cache's key length
from its bytes (``benchmarks/superword.py``). The twin is that path: the coarse split
(:func:`tokenizer.twins.superword_split`) and merge replay (:func:`tokenizer.twins.bpe.ref_ranked_bpe`) per chunk.

Example (hand-checkable): bytes ``a``, `` `` (space); merges ``(" ", a) -> " a"`` rank 0, ``(a, " a") -> "a a"``
rank 1; ``T = 1``. ``"a a"`` is one stretch: the words ``a`` and `` a`` give ``[a]`` and ``[" a"]`` (no merge of
rank 0 ends in ``a`` and starts with a space: the cut is free); the second level merges ``(a, " a")``:
``["a a"]``, as replaying ``"a a"`` from its bytes gives.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.bpe_match import matched_bpe_into
from tokenizer.kernels.bpe_ranked import (SHORT_SYMBOLS, cache_ids, cached_ids, filtered_pair_merge, heap_merges,
                                          ranked_bpe_into, scan_merges)
from tokenizer.kernels.char_classes import LETTER, OTHER, class_at
from tokenizer.kernels.pretokenize import PATTERN_GPT2, next_pretoken_end
from tokenizer.kernels.superword_split import PATTERN_SUPERWORD, superword_match_end

WORD_MATCH_ABOVE = 8  # a word of more bytes than this is matched (bpe_match) before it is replayed
WORD_PATIENCE = 64  # matched_bpe_into's patience for a word


@kernel(inline="always")
def meet_in_a_merge(meeting, last, first):
    """Whether some merge of the word table joins a piece ending in byte ``last`` to one starting with byte
    ``first`` (``meeting``: int64, 1024 words, bit ``last << 8 | first``: :func:`meeting_bytes`)."""
    at = (np.int64(last) << 8) | np.int64(first)
    return (meeting[at >> 6] >> (at & 63)) & 1 != 0


@kernel(inline="always")
def word_into(words, data, start, end, work, out, pos):
    """The word table's ids of ``data[start:end]`` at ``out[pos:]``; returns the new ``pos``. ``words`` is
    ``(word_table, word_bits, byte_to_id, units, created, split_left, split_right, prefix_of, piece_length,
    word_cache, word_memo)`` (the word table's merges and :func:`tokenizer.kernels.bpe_match.matched_bpe_into`'s
    tables for them; its pre-token cache and memo), ``work`` ``(sym, nxt, prv, cand, heap, steps, rng_state)``."""
    table, bits, byte_to_id, units, created, split_left, split_right, prefix_of, piece_length, cache, memo = words
    sym, nxt, prv, cand, heap, steps, rng_state = work
    hit = cached_ids(cache, data, start, end, out, pos)
    if hit >= 0:
        return hit
    stop = -1
    if end - start > WORD_MATCH_ABOVE:
        stop = matched_bpe_into(units, table, bits, created, split_left, split_right, prefix_of, piece_length, data,
                                start, end, sym, nxt, prv, memo, WORD_PATIENCE, steps, out, pos)
    if stop < 0:
        stop = ranked_bpe_into(table, bits, byte_to_id, data, start, end, sym, nxt, prv, cand, heap, steps,
                               rng_state, out, pos)
    cache_ids(cache, data, start, end, out, pos, stop)
    return stop


@kernel(borrows=True)
def words_into(words, meeting, data, start, end, work, out, pos):
    """The word table's ids of ``data[start:end]``, word by word: cut wherever the meeting table lets the bytes
    apart (:func:`meet_in_a_merge`); returns the new ``pos``."""
    first = start
    for k in range(start + 1, end + 1):
        if k == end or not meet_in_a_merge(meeting, data[k - 1], data[k]):
            pos = word_into(words, data, first, k, work, out, pos)
            first = k
    return pos


@kernel(borrows=True)
def phrases_into(phrase_table, phrase_bits, work, out, first, stop):
    """Replay the phrase table's merges over the ids ``out[first:stop]`` (a chunk's word-table ids) in place;
    returns the new end."""
    sym, nxt, prv, cand, heap, steps, rng_state = work
    count = stop - first
    if count < 2:
        return stop
    merges = False
    for j in range(count):
        sym[j] = out[first + j]
    for j in range(count - 1):
        cand[j] = filtered_pair_merge(phrase_table, phrase_bits, sym[j], sym[j + 1])
        merges |= cand[j] >= 0
    if not merges:
        return stop
    if count <= SHORT_SYMBOLS:
        for j in range(count):
            nxt[j] = j
        count, done = scan_merges(phrase_table, phrase_bits, sym, nxt, count, cand)
        steps[0] += done
        for j in range(count):
            out[first + j] = sym[j]
        return first + count
    steps[0] += heap_merges(phrase_table, phrase_bits, sym, nxt, prv, cand, heap, count, 0.0, rng_state)
    pos = first
    node = 0
    while node < count:
        out[pos] = sym[node]
        pos += 1
        node = nxt[node]
    return pos


@kernel(borrows=True)
def chunk_into(words, meeting, phrase_table, phrase_bits, cache, data, start, end, work, out, pos):
    """The ids of the coarse chunk ``data[start:end]`` (through the pre-token ``cache`` of whole chunks); returns
    the new ``pos``."""
    hit = cached_ids(cache, data, start, end, out, pos)
    if hit >= 0:
        return hit
    stop = words_into(words, meeting, data, start, end, work, out, pos)
    stop = phrases_into(phrase_table, phrase_bits, work, out, pos, stop)
    cache_ids(cache, data, start, end, out, pos, stop)
    return stop


@kernel(inline="always")
def inside_a_stretch(char_class, data, start, end):
    r"""Whether the GPT-2 pre-token ``data[start:end]`` lies inside a stretch of the ``superword`` split when the
    text before it does: no coarse match starts in it (a word `` ?\p{L}+``, one punctuation character after an
    optional space, a contraction ``'s``), since a match needs a digit, two punctuation characters or whitespace
    that is no single space before a word. ``b" the"`` and ``b","`` -> True; ``b" 12"``, ``b"!!"``, ``b"\n"`` ->
    False."""
    first = start
    if data[start] == 32 and end - start > 1:
        first = start + 1
    byte = data[first]
    if byte < 0x80:
        klass = np.int64(char_class[byte])
        width = 1
    else:
        klass, width = class_at(char_class, data, first, end)
    if klass == LETTER:
        return True
    if klass != OTHER:
        return False
    if first + width == end:
        return True
    return byte == 39 and first == start and data[start + 1] < 0x80 and char_class[data[start + 1]] == LETTER


@kernel(borrows=True)
def stretch_end(char_class, data, pos, end):
    """Where the ``superword`` split's next match starts at or after ``pos`` (``end`` for none)."""
    while pos < end and superword_match_end(char_class, data, pos, end, PATTERN_SUPERWORD) < 0:
        _, width = class_at(char_class, data, pos, end)
        pos += width
    return pos


@kernel(borrows=True)
def superword_document_into(words, meeting, phrase_table, phrase_bits, cache, char_class, data, start, stop,
                            known_end, capacity, work, out, pos):
    """Encode ``data[start:stop]`` (the rest of one document) as the ``superword`` split and merge replay would
    (see the module docstring); ids to ``out[pos:]``. ``known_end > start``: ``data[start:known_end]`` is one
    chunk (found by an earlier call). Returns ``(pos, -1, -1)``, or ``(ids written, chunk start, chunk end)`` when
    a chunk holds ``capacity`` bytes or more (the work arrays' length): nothing is written from its first id on."""
    sym, nxt, prv, cand, heap, steps, rng_state = work
    p = start
    if known_end > start:
        pos = chunk_into(words, meeting, phrase_table, phrase_bits, cache, data, start, known_end, work, out, pos)
        p = known_end
    chunk_start = p
    chunk_first = pos
    tainted = False
    while p < stop:
        q = next_pretoken_end(char_class, PATTERN_GPT2, data, p, stop)
        if q - chunk_start >= capacity:  # the stretch may be too long: find its end, the caller goes on there
            return chunk_first, chunk_start, stretch_end(char_class, data, p, stop)
        if inside_a_stretch(char_class, data, p, q):
            tainted |= p > chunk_start and meet_in_a_merge(meeting, data[p - 1], data[p])
            pos = word_into(words, data, p, q, work, out, pos)
            p = q
            continue
        m = stretch_end(char_class, data, p, stop)
        if m - chunk_start >= capacity:
            return chunk_first, chunk_start, m
        if m > p:
            tainted |= p > chunk_start and meet_in_a_merge(meeting, data[p - 1], data[p])
            pos = words_into(words, meeting, data, p, m, work, out, pos)
        if tainted:
            pos = words_into(words, meeting, data, chunk_start, m, work, out, chunk_first)
        pos = phrases_into(phrase_table, phrase_bits, work, out, chunk_first, pos)
        if m < stop:
            e = superword_match_end(char_class, data, m, stop, PATTERN_SUPERWORD)
            if e - m >= capacity:
                return pos, m, e
            pos = chunk_into(words, meeting, phrase_table, phrase_bits, cache, data, m, e, work, out, pos)
            m = e
        p = m
        chunk_start = m
        chunk_first = pos
        tainted = False
    if tainted:
        pos = words_into(words, meeting, data, chunk_start, stop, work, out, chunk_first)
    return phrases_into(phrase_table, phrase_bits, work, out, chunk_first, pos), -1, -1


def meeting_bytes(pieces: list[bytes], left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The table of :func:`meet_in_a_merge` (int64, 1024) for merges ``(left[m], right[m])`` of ids whose bytes are
    ``pieces[id]``: a merge of ``b"ab"`` and ``b"cd"`` sets bit ``ord("b") << 8 | ord("c")``."""
    meeting = np.zeros(1024, np.int64)
    if len(left):
        at = np.unique(np.array([pieces[a][-1] << 8 | pieces[b][0] for a, b in zip(left.tolist(), right.tolist())],
                                np.int64))
        np.bitwise_or.at(meeting, at >> 6, np.left_shift(np.int64(1), at & 63))
    return meeting


def word_level_merges(pieces: list[bytes]) -> int:
    """``T``: how many of the merges, whose pieces in rank order are ``pieces``, come before the first one whose
    piece is valid UTF-8 and more than one GPT-2 pre-token (a piece of part of a character splits byte by byte, so
    it says nothing). ``[b"th", b"\\xe4\\xbb", b" the", b" of the"]`` -> 3. Any ``T`` gives the same ids (see the
    module docstring); this one leaves the word table the merges that stay inside words."""
    from tokenizer.kernels.pretokenize import char_class_table, pretokenize_batch
    from tokenizer.packed import pack

    if not pieces:
        return 0
    data, offsets = pack(pieces)
    counts = np.zeros(len(pieces), np.int64)
    pretokenize_batch(char_class_table(), np.int64(PATTERN_GPT2), data, np.asarray(offsets, np.int64),
                      np.zeros(len(data) + 1, np.int64), counts)
    for k in np.flatnonzero(counts != 1).tolist():
        try:
            pieces[k].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return k
    return len(pieces)


def superword_tables(encoder, pieces: list[bytes], units: np.ndarray) -> tuple | None:
    """``(word_table, word_bits, phrase_table, phrase_bits, meeting, word_match)`` for
    :func:`superword_document_into`, for a byte-level BPE model of pattern ``superword`` (``encoder``: its
    :class:`tokenizer.kernels.bpe_ranked.ByteLevelEncoder`, ``pieces`` its pieces, ``units`` their double array);
    ``word_match`` is :func:`tokenizer.kernels.bpe_match.build_match_tables`'s five tables for the word table.
    ``None`` for another pattern, a model that merges across words from its first merge or not at all after its
    words, or merges that matching cannot stand for (then the chunks are replayed whole)."""
    from tokenizer.kernels.bpe_match import build_match_tables
    from tokenizer.kernels.bpe_ranked import build_pair_table, merge_ranks

    if encoder.pattern != PATTERN_SUPERWORD or encoder.ignore_merges:
        return None
    left, right, merged = encoder.merges
    words = word_level_merges([pieces[i] for i in merged.tolist()])
    if words == 0 or words == len(merged):
        return None
    tables = []
    for ranks in (np.arange(words), np.arange(words, len(merged))):
        tables.extend(build_pair_table(left[ranks], right[ranks], merged[ranks],
                                       merge_ranks(merged[ranks], ranks, len(pieces))))
    word_match = build_match_tables(units, pieces, merged[:words], left[:words], right[:words], encoder.byte_to_id,
                                    tables[0], tables[1])
    if word_match is None:
        return None
    return (*tables, meeting_bytes(pieces, left[:words], right[:words]), word_match)
