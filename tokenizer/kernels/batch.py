"""The encoder's entry points: many texts packed Arrow-style (one uint8 data buffer plus offsets) -> flat ids plus
offsets, one entry per segmentation rule, all with one signature::

    entry(units, scores, ints, small, longs, data, offsets, valid, doc_begin, doc_end, claims, resume_at,
          resume_end, bos_id, eos_id, wide, narrow, out_ids, out_offsets, cuts)
        -> (total_ids, failed_document, stopped_at, stopped_end)

``units .. longs`` is the model's record (:func:`tokenizer.kernels.tables.pack_record`; each entry lists its
tables), ``wide`` and ``narrow`` the work arrays (:func:`work_sizes`: ``wide`` of the score dtype for Viterbi,
int64 for BPE; ``narrow`` int32), sized for the segments an entry encodes on its own (:func:`segment_end`, as
``cuts`` says: :func:`cut_marker`, whose type chooses, so each way of cutting is compiled apart). Few array
arguments keep a call's fixed cost small (:mod:`tokenizer.kernels.tables`).

Each entry encodes documents ``doc_begin .. doc_end - 1`` (``data[offsets[i]:offsets[i + 1]]``; offsets int32 or
int64, absolute into ``data``, so a sliced Arrow array passes its offsets buffer from ``array.offset`` on) and
writes every id into ``out_ids`` (int32, room for the range's byte count plus two per document) and
``out_offsets[j]`` (int64, ``doc_end - doc_begin + 1``) = where document ``doc_begin + j`` starts in ``out_ids``.
``valid`` (uint8, one per document, or empty for "all valid") marks nulls: a null document gets no ids, not even
bos/eos. ``bos_id``/``eos_id`` >= 0 are added around every valid document. ``claims`` (int64) is empty, or the
word of a range shared with other threads (:mod:`tokenizer.kernels.claims`): the entry then encodes it claim by
claim and stops at its final limit (nothing is written for the documents past it). Returns ``(total_ids, -1, -1, -1)``;
``(-1, failing_document, -1, -1)`` when a document holds unknown text that the model can represent neither by an
unk piece nor by byte fallback; or ``(ids_written, document, start, end)`` when the segment ``data[start:end]`` of
``document`` is longer than the work arrays hold: nothing is written past them, and a call with ``doc_begin =
document``, ``resume_at = start``, ``resume_end = end`` and arrays for ``end - start`` bytes goes on from there,
that segment taken as it was found, not looked for again (a pre-token of a long run costs a pass over its bytes
to find its end; ``resume_at`` and ``resume_end`` -1: documents from their start). Each entry is its rule's
``*_documents`` kernel run by :func:`by_claims`: the same arguments less ``claims``, plus ``base``, the index in
``out_ids`` of its first id (``out_offsets`` count from it).

Example (hand-checkable): data ``b"abab"``, offsets ``[0, 2, 4]``, pieces ``a``=0, ``b``=1, ``ab``=2 (higher
score) -> out_ids ``[2, 2]``, out_offsets ``[0, 1, 2]``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba.extending import overload

from tokenizer.kernels import kernel
from tokenizer.kernels.bpe import piece_bpe_into
from tokenizer.kernels.bpe_match import GIVE_WAY_AFTER, MATCH_ABOVE, MEMO_WORDS, matched_bpe_into
from tokenizer.kernels.bpe_ranked import CACHE_WORDS, cache_ids, cached_ids, ranked_bpe_into
from tokenizer.kernels.bpe_superword import superword_document_into
from tokenizer.kernels.claims import next_claim
from tokenizer.kernels.double_array import exact_match
from tokenizer.kernels.pretokenize import next_pretoken_end
from tokenizer.kernels.tables import part
from tokenizer.kernels.unigram import NEWLINE, viterbi_bytes_into, viterbi_chars_into

VITERBI, PIECE_BPE, RANKED_BPE = 0, 1, 2
ZEROED_WORDS = 2 * (CACHE_WORDS + MEMO_WORDS)  # the end of a BPE ``wide`` array that starts zeroed


def work_sizes(rule: int, longest: int) -> tuple[int, int]:
    """``(wide, narrow)`` item counts of the work arrays for segments (:func:`segment_end`) of up to
    ``longest`` bytes (``n = longest + 1`` positions): Viterbi one score and two int32 per position; BPE three
    int64 (pending merge, two heap slots) and four int32, plus an int64 step counter and a random state, the
    pre-token cache and the memo of compatible pairs, and a second cache and memo for the words of a superword
    model (:mod:`tokenizer.kernels.bpe_superword`) (:data:`ZEROED_WORDS` int64 at the end, zeroed by the
    caller)."""
    n = longest + 1
    if rule == VITERBI:
        return n, 2 * n
    return 3 * n + 2 + ZEROED_WORDS, 4 * n


@kernel(inline="always")
def next_word_start(data, p, end):
    """Where the next word of ``data[p:end]`` starts: the next "▁" (UTF-8 ``e2 96 81``) after a character that is
    not one, or ``end``. ``"▁a▁▁b"`` from 0 -> 4 (bytes)."""
    k = p + 1
    while k + 2 < end:
        if data[k] == 0xE2 and data[k + 1] == 0x96 and data[k + 2] == 0x81:
            if not (k - 3 >= p and data[k - 3] == 0xE2 and data[k - 2] == 0x96 and data[k - 1] == 0x81):
                return k
            k += 3
        else:
            k += 1
    return end


@kernel(inline="always")
def next_line_end(data, p, end):
    """Where the chunk of ``data[p:end]`` that starts at ``p`` ends: after the line and the run of newlines that
    ends it (BytePiece's chunks), or ``end``. ``b"ab\\n\\ncd"`` from 0 -> 4; ``b"\\n\\ncd"`` from 0 -> 2."""
    k = p
    while k < end and data[k] != NEWLINE:
        k += 1
    while k < end and data[k] == NEWLINE:
        k += 1
    return k


#: how an entry cuts documents into the segments it encodes on its own (its ``cuts`` argument: :func:`cut_marker`)
WHOLE, PRETOKENS, WORDS, LINES = range(4)
#: the integer type of an entry's ``cuts`` for each way of cutting: compiled code chooses its way by the type, so
#: each way compiles apart and a model compiles only its own (the pre-tokenizer is most of an entry's compile
#: time); a plain int (int64) is no way and is refused
CUT_TYPES = (np.uint8, np.uint16, np.uint32, np.int8)


def cut_marker(cuts: int):
    """The ``cuts`` argument of the entries for a way of cutting: ``cut_marker(LINES)`` -> ``np.int8(3)``."""
    return CUT_TYPES[cuts](cuts)


def cuts_of(pattern: int, words: bool, lines: bool) -> int:
    """The way of cutting of a model's segments: ``cuts_of(0, False, True)`` -> :data:`LINES`."""
    return PRETOKENS if pattern > 0 else (WORDS if words else (LINES if lines else WHOLE))


def segment_end(cuts, char_class, pattern, data, p, end):
    """End of the segment of ``data[p:end]`` (``p < end``) that an entry encodes on its own, so the one its work
    arrays must hold: with ``cuts`` :data:`PRETOKENS` the regex pre-token of ``pattern``, :data:`WORDS` the word
    (:func:`next_word_start`), :data:`LINES` the line and its newlines (:func:`next_line_end`), :data:`WHOLE` the
    rest of the document. Compiled code chooses by the type of ``cuts`` (:func:`cut_marker`) and compiles that way
    only (:func:`_segment_end_compiled`)."""
    if cuts == PRETOKENS:
        return next_pretoken_end(char_class, pattern, data, p, end)
    if cuts == WORDS:
        return next_word_start(data, p, end)
    if cuts == LINES:
        return next_line_end(data, p, end)
    return end


@overload(segment_end, inline="always")
def _segment_end_compiled(cuts, char_class, pattern, data, p, end):
    """:func:`segment_end` for the way of cutting that the type of ``cuts`` names (:data:`CUT_TYPES`)."""
    kind = next((k for k, kind_type in enumerate(CUT_TYPES) if cuts == numba.from_dtype(np.dtype(kind_type))), None)
    if kind == PRETOKENS:
        return lambda cuts, char_class, pattern, data, p, end: next_pretoken_end(char_class, pattern, data, p, end)
    if kind == WORDS:
        return lambda cuts, char_class, pattern, data, p, end: next_word_start(data, p, end)
    if kind == LINES:
        return lambda cuts, char_class, pattern, data, p, end: next_line_end(data, p, end)
    if kind == WHOLE:
        return lambda cuts, char_class, pattern, data, p, end: end
    return None  # not a marker: refused, so no entry compiles every way of cutting


@kernel(borrows=True)
def viterbi_documents(units, scores, ints, small, longs, data, offsets, valid, doc_begin, doc_end, resume_at,
                      resume_end, base, bos_id, eos_id, wide, narrow, out_ids, out_offsets, cuts):
    """Best unigram segmentation (:func:`tokenizer.kernels.unigram.viterbi_bytes_into` in byte mode, else
    :func:`~tokenizer.kernels.unigram.viterbi_chars_into`) of each segment
    (:func:`segment_end`: ``cuts`` :data:`PRETOKENS` a regex pre-token of ``pattern``, :data:`LINES` a line and its
    newlines, which no piece may span with ``split_after_newlines``, where no text is unknown, as unknown nodes
    merge across lines; :data:`WHOLE` the document). Tables: 0 units (of the reversed pieces: a byte double array
    in byte mode, else a character one), 1 two_bytes (byte mode: its two-byte steps); 2 piece_score, 3 unk_score
    (one score); 4 byte_to_id (int32[256]); 5 pages, 6 blocks (int32: the character trie's char ids; empty in byte
    mode); 7 char_class (uint8); 8 flags (int64: byte_mode, split_after_newlines, unk_id, byte_fallback, pattern)."""
    piece_units = part(units, longs, 0)
    two_bytes = part(units, longs, 1)
    piece_score = part(scores, longs, 2)
    unk_score = part(scores, longs, 3)[0]
    byte_to_id = part(ints, longs, 4)
    pages = part(ints, longs, 5)
    blocks = part(ints, longs, 6)
    char_class = part(small, longs, 7)
    flags = part(longs, longs, 8)
    byte_mode, split_after_newlines, unk_id = flags[0] != 0, flags[1] != 0, flags[2]
    byte_fallback, pattern = flags[3] != 0, flags[4]
    n = wide.shape[0]
    best_score, best_start, best_id = wide, narrow[:n], narrow[n:2 * n]
    blocked_lines = split_after_newlines and cuts != LINES  # else each line is a segment of its own
    pos = base
    out_offsets[0] = base
    check_valid = valid.shape[0] > 0
    for i in range(doc_begin, doc_end):
        if check_valid and valid[i] == 0:
            out_offsets[i - doc_begin + 1] = pos
            continue
        p = offsets[i]
        known_end = -1
        if i == doc_begin and resume_at >= 0:
            p = resume_at  # the rest of a document an earlier call stopped in: its bos is written
            known_end = resume_end  # (where its first segment ends: found by that call)
        elif bos_id >= 0:
            out_ids[pos] = bos_id
            pos += 1
        stop = offsets[i + 1]
        while p < stop:
            q = known_end if known_end > p else segment_end(cuts, char_class, pattern, data, p, stop)
            known_end = -1
            if q - p >= n:
                return pos, i, p, q
            if byte_mode:
                pos = viterbi_bytes_into(piece_units, two_bytes, piece_score, blocked_lines, data, p, q, best_score,
                                         best_start, best_id, out_ids, pos)
            else:
                pos = viterbi_chars_into(piece_units, pages, blocks, piece_score, blocked_lines, unk_id, byte_fallback,
                                         byte_to_id, unk_score, data, p, q, best_score, best_start, best_id, out_ids,
                                         pos)
            if pos < 0:
                return -1, i, -1, -1
            p = q
        if eos_id >= 0:
            out_ids[pos] = eos_id
            pos += 1
        out_offsets[i - doc_begin + 1] = pos
    return pos, -1, -1, -1


@kernel(inline="always")
def bpe_work(wide, narrow):
    """The BPE work arrays carved from ``wide`` (int64) and ``narrow`` (int32), as :func:`work_sizes` sizes them:
    ``(sym, nxt, prv, starts, cand, heap, steps, rng_state, cache, memo, word_cache, word_memo)`` (``rng_state``
    a uint64 view of one word). Compiled into its caller, as :func:`tokenizer.kernels.tables.part` is."""
    n = narrow.shape[0] // 4
    tail = 3 * n + 2 + CACHE_WORDS
    words = tail + MEMO_WORDS + CACHE_WORDS
    return (narrow[:n], narrow[n:2 * n], narrow[2 * n:3 * n], narrow[3 * n:4 * n], wide[:n], wide[n:3 * n],
            wide[3 * n:3 * n + 1], wide[3 * n + 1:3 * n + 2].view(np.uint64), wide[3 * n + 2:tail],
            wide[tail:tail + MEMO_WORDS], wide[tail + MEMO_WORDS:words], wide[words:words + MEMO_WORDS])


@kernel(inline="always")
def piece_bpe_model(units, scores, ints, small, longs):
    """``(model, words)``: the model arguments of :func:`tokenizer.kernels.bpe.piece_bpe_into`, in its order, read
    from a :func:`piece_bpe_entry` record, and the record's ``words`` flag. Tables: 0 units, 1 pseudo_units,
    2 match units (empty: ``units``); 3 byte_piece, 4 bmp_symbol, 5 byte_to_id, 6 created, 7 split_left,
    8 split_right, 9 prefix_of, 10 piece_length (int32; 6-10 empty without ``matching``); 11 is_user_defined
    (uint8); 12 pair_table, 13 flags (int64: has_user_defined, byte_mode, has_pseudo, vocab_size, bits, unk_id,
    byte_fallback, words, matching)."""
    flags = part(longs, longs, 13)
    match = (part(units, longs, 2), part(ints, longs, 6), part(ints, longs, 7), part(ints, longs, 8),
             part(ints, longs, 9), part(ints, longs, 10))
    model = (part(units, longs, 0), part(small, longs, 11), flags[0] != 0, part(ints, longs, 3),
             part(ints, longs, 4), flags[1] != 0, part(units, longs, 1), flags[2] != 0, flags[3],
             part(longs, longs, 12), flags[4], flags[5], flags[6] != 0, part(ints, longs, 5), match, flags[8] != 0)
    return model, flags[7] != 0


@kernel(borrows=True)
def piece_bpe_documents(units, scores, ints, small, longs, data, offsets, valid, doc_begin, doc_end, resume_at,
                        resume_end, base, bos_id, eos_id, wide, narrow, out_ids, out_offsets, cuts):
    """SentencePiece-style BPE (:func:`tokenizer.kernels.bpe.piece_bpe_into`, no dropout); the tables as
    :func:`piece_bpe_model` reads them.

    With ``words`` set (no matchable piece has a character other than "▁" right before a "▁", and "▁" is a piece:
    :meth:`tokenizer.compiled.CompiledModel.piece_bpe_record`), no merge can cross the start of a run of "▁", so
    each text is encoded word by word (a word: its "▁" run and what follows up to the next run) through the
    pre-token cache of :func:`tokenizer.kernels.bpe_ranked.cached_ids`: the same ids, most words looked up."""
    model, words = piece_bpe_model(units, scores, ints, small, longs)
    # rng_state: never drawn from (no dropout here)
    sym, nxt, prv, starts, cand, heap, steps, rng_state, cache, memo, _, _ = bpe_work(wide, narrow)
    capacity = sym.shape[0]
    pos = base
    out_offsets[0] = base
    check_valid = valid.shape[0] > 0
    for i in range(doc_begin, doc_end):
        if check_valid and valid[i] == 0:
            out_offsets[i - doc_begin + 1] = pos
            continue
        p = offsets[i]
        known_end = -1
        if i == doc_begin and resume_at >= 0:
            p = resume_at  # the rest of a document an earlier call stopped in: its bos is written
            known_end = resume_end  # (where its first segment ends: found by that call)
        elif bos_id >= 0:
            out_ids[pos] = bos_id
            pos += 1
        stop = offsets[i + 1]
        while p < stop:
            # (no char classes are read: cuts is never PRETOKENS)
            q = known_end if known_end > p else segment_end(cuts, small, 0, data, p, stop)
            known_end = -1
            if q - p >= capacity:
                return pos, i, p, q
            hit = cached_ids(cache, data, p, q, out_ids, pos) if words else -1
            if hit >= 0:
                pos = hit
            else:
                first = pos
                pos = piece_bpe_into(*model, 0.0, rng_state, data, p, q, sym, nxt, prv, starts, cand, heap, memo,
                                     steps, out_ids, pos)
                if pos < 0:
                    return -1, i, -1, -1
                if words:
                    cache_ids(cache, data, p, q, out_ids, first, pos)
            p = q
        if eos_id >= 0:
            out_ids[pos] = eos_id
            pos += 1
        out_offsets[i - doc_begin + 1] = pos
    return pos, -1, -1, -1


@kernel(borrows=True)
def ranked_bpe_documents(units, scores, ints, small, longs, data, offsets, valid, doc_begin, doc_end, resume_at,
                         resume_end, base, bos_id, eos_id, wide, narrow, out_ids, out_offsets, cuts):
    """Regex pre-split (pattern 0: none) plus merge replay (:func:`tokenizer.kernels.bpe_ranked.ranked_bpe_into`;
    with ``matching``, a pre-token of more than :data:`~tokenizer.kernels.bpe_match.MATCH_ABOVE` bytes by
    :func:`tokenizer.kernels.bpe_match.matched_bpe_into`: the same ids); with ``ignore_merges`` a pre-token that
    is itself a piece is emitted whole, as ``tokenizers`` does. A superword model's documents go to
    :func:`tokenizer.kernels.bpe_superword.superword_document_into` instead (the same ids). Tables: 0 units;
    1 byte_to_id, 2 created, 3 split_left, 4 split_right, 5 prefix_of, 6 piece_length (int32, empty without
    ``matching``), 7-11 the same for the word table (empty but for a superword model); 12 char_class (uint8);
    13 pair_table, 14 flags (int64: pattern, bits, ignore_merges, matching, word_bits, phrase_bits), 15
    word_table, 16 phrase_table, 17 meeting (empty but for a superword model: :func:`tokenizer.kernels.
    bpe_superword.superword_tables`). ``cuts`` is read from ``pattern`` (it takes the argument for the entries'
    one signature)."""
    piece_units = part(units, longs, 0)
    byte_to_id = part(ints, longs, 1)
    match = (part(ints, longs, 2), part(ints, longs, 3), part(ints, longs, 4), part(ints, longs, 5),
             part(ints, longs, 6))
    char_class = part(small, longs, 12)
    pair_table = part(longs, longs, 13)
    flags = part(longs, longs, 14)
    pattern, bits, ignore_merges, matching = flags[0], flags[1], flags[2] != 0, flags[3] != 0
    # rng_state: never drawn from (no dropout here)
    sym, nxt, prv, starts, cand, heap, steps, rng_state, cache, memo, word_cache, word_memo = bpe_work(wide, narrow)
    capacity = sym.shape[0]
    word_table, phrase_table, meeting = part(longs, longs, 15), part(longs, longs, 16), part(longs, longs, 17)
    superword = meeting.shape[0] > 0
    words = (word_table, flags[4], byte_to_id, piece_units, part(ints, longs, 7), part(ints, longs, 8),
             part(ints, longs, 9), part(ints, longs, 10), part(ints, longs, 11), word_cache, word_memo)
    work = (sym, nxt, prv, cand, heap, steps, rng_state)
    pos = base
    out_offsets[0] = base
    check_valid = valid.shape[0] > 0
    for i in range(doc_begin, doc_end):
        if check_valid and valid[i] == 0:
            out_offsets[i - doc_begin + 1] = pos
            continue
        p = offsets[i]
        known_end = -1
        if i == doc_begin and resume_at >= 0:
            p = resume_at  # the rest of a document an earlier call stopped in: its bos is written
            known_end = resume_end  # (where its first segment ends: found by that call)
        elif bos_id >= 0:
            out_ids[pos] = bos_id
            pos += 1
        stop = offsets[i + 1]
        if superword:
            pos, p, q = superword_document_into(words, meeting, phrase_table, flags[5], cache, char_class, data, p,
                                                stop, known_end, capacity, work, out_ids, pos)
            if p >= 0:
                return pos, i, p, q
            p = stop
        while p < stop:
            # (inlined, not segment_end's call: this rule cuts at pre-tokens, pattern 0 aside, so every ranked
            # model compiles the pre-tokenizer anyway, and a call per pre-token would cost)
            q = known_end if known_end > p else (next_pretoken_end(char_class, pattern, data, p, stop) if pattern > 0
                                                 else stop)
            known_end = -1
            if q - p >= capacity:
                return pos, i, p, q
            hit = cached_ids(cache, data, p, q, out_ids, pos)
            if hit >= 0:
                pos = hit
                p = q
                continue
            if ignore_merges:
                whole = exact_match(piece_units, data, p, q)
                if whole >= 0:
                    out_ids[pos] = whole
                    pos += 1
                    p = q
                    continue
            first = pos
            pos = -1
            if matching and q - p > MATCH_ABOVE:
                pos = matched_bpe_into(piece_units, pair_table, bits, *match, data, p, q, sym, nxt, prv, memo,
                                       GIVE_WAY_AFTER, steps, out_ids, first)
            if pos < 0:
                pos = ranked_bpe_into(pair_table, bits, byte_to_id, data, p, q, sym, nxt, prv, cand,
                                      heap, steps, rng_state, out_ids, first)
            cache_ids(cache, data, p, q, out_ids, first, pos)
            p = q
        if eos_id >= 0:
            out_ids[pos] = eos_id
            pos += 1
        out_offsets[i - doc_begin + 1] = pos
    return pos, -1, -1, -1


@kernel(inline="always")
def by_claims(documents, units, scores, ints, small, longs, data, offsets, valid, doc_begin, doc_end, claims,
              resume_at, resume_end, bos_id, eos_id, wide, narrow, out_ids, out_offsets, cuts):
    """An entry run by ``documents`` (one of the ``*_documents`` kernels, given the first id's index ``base``):
    in one call without claims, else claim by claim (each a call, so the documents' loop stays as it compiles
    alone), up to the range's final limit. (One call site: the kernel is compiled into the entry once.)"""
    pos = doc_begin - doc_begin  # (an int64 value: a literal 0 would compile ``documents`` once more)
    out_offsets[0] = 0
    first = doc_begin
    while True:
        end = doc_end if claims.shape[0] == 0 else next_claim(claims, offsets, first)
        if end <= first:
            return pos, -1, -1, -1
        pos, failed, stopped, stopped_end = documents(units, scores, ints, small, longs, data, offsets, valid, first,
                                                      end, resume_at, resume_end, pos, bos_id, eos_id, wide, narrow,
                                                      out_ids, out_offsets[first - doc_begin:], cuts)
        if failed >= 0 or claims.shape[0] == 0:
            return pos, failed, stopped, stopped_end
        resume_at = resume_end = -1
        first = end


@kernel(borrows=True)
def viterbi_entry(units, scores, ints, small, longs, data, offsets, valid, doc_begin, doc_end, claims, resume_at,
                  resume_end, bos_id, eos_id, wide, narrow, out_ids, out_offsets, cuts):
    """The unigram entry: :func:`viterbi_documents` :func:`by_claims`."""
    return by_claims(viterbi_documents, units, scores, ints, small, longs, data, offsets, valid, doc_begin,
                     doc_end, claims, resume_at, resume_end, bos_id, eos_id, wide, narrow, out_ids, out_offsets,
                     cuts)


@kernel(borrows=True)
def piece_bpe_entry(units, scores, ints, small, longs, data, offsets, valid, doc_begin, doc_end, claims,
                    resume_at, resume_end, bos_id, eos_id, wide, narrow, out_ids, out_offsets, cuts):
    """The SentencePiece-style BPE entry: :func:`piece_bpe_documents` :func:`by_claims`."""
    return by_claims(piece_bpe_documents, units, scores, ints, small, longs, data, offsets, valid, doc_begin,
                     doc_end, claims, resume_at, resume_end, bos_id, eos_id, wide, narrow, out_ids, out_offsets,
                     cuts)


@kernel(borrows=True)
def ranked_bpe_entry(units, scores, ints, small, longs, data, offsets, valid, doc_begin, doc_end, claims,
                     resume_at, resume_end, bos_id, eos_id, wide, narrow, out_ids, out_offsets, cuts):
    """The ranked-merges BPE entry: :func:`ranked_bpe_documents` :func:`by_claims`."""
    return by_claims(ranked_bpe_documents, units, scores, ints, small, longs, data, offsets, valid, doc_begin,
                     doc_end, claims, resume_at, resume_end, bos_id, eos_id, wide, narrow, out_ids, out_offsets,
                     cuts)


ENTRIES = {VITERBI: viterbi_entry, PIECE_BPE: piece_bpe_entry, RANKED_BPE: ranked_bpe_entry}


def flags(*values) -> np.ndarray:
    """The int64 flags table of a record: ``flags(True, 3)`` -> ``array([1, 3])``."""
    return np.array([int(v) for v in values], np.int64)
