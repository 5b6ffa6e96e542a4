"""SentencePiece-style BPE (with BPE-dropout), by a pair table: the encoder of SentencePiece-style BPE models.

The rule is SentencePiece's (``bpe::Model::SampleEncode``): the initial symbols are, at each position, the longest
USER_DEFINED piece that is a prefix (a *frozen* symbol, never merged), else one UTF-8 character (an invalid byte is
a one-byte character), or one byte in ``byte_mode``; then, repeatedly, the adjacent pair whose concatenation is the
best-scoring matchable piece (NORMAL or USER_DEFINED) is merged, the leftmost among equal scores; with dropout
probability ``p`` a pair that comes up is dropped instead (``p <= 0``: never, ``p >= 1``: always, else when a
uniform draw is ``< p``). Each final symbol becomes its piece id, or an unknown node
(:func:`tokenizer.kernels.unigram.emit_node`). Unlike SentencePiece, UNUSED pieces are never merged into
(SentencePiece merges and then re-splits them).

The same ids come from integer tables built once per model (:mod:`tokenizer.kernels.bpe_tables`) instead of a
lookup of each concatenation:

* every split ``z = x + y`` of a matchable piece ``z`` into two *symbols* is a pair ``(x, y) -> z`` in the open
  addressing table of :mod:`tokenizer.kernels.bpe_ranked`, ranked by ``z``'s score (dense rank: equal scores, equal
  rank). A symbol is a matchable piece, or a single character that occurs inside some piece without being one (a
  *pseudo* symbol, id ``vocab_size + k``: it can merge, as SentencePiece merges any concatenation, but is emitted
  as unknown when it stays alone);
* the heap holds ``rank << 32 | byte position`` (lowest rank first, then leftmost), and the merge loop is merge
  replay's (:func:`tokenizer.kernels.bpe_ranked.merge_pending`);
* a long stretch of text is matched piece by piece instead, where the model's pieces allow it
  (:func:`tokenizer.kernels.bpe_tables.piece_match_tables`, the rule of :mod:`tokenizer.kernels.bpe_match`).

Symbol values in ``sym``: a piece or pseudo id (>= 0); -1 an unknown character that no piece contains (it never
merges); ``-2 - id`` a frozen USER_DEFINED piece. Each merge pushes at most two entries, so the work is O(n log n)
whatever the text. The slow twin is :func:`tokenizer.twins.bpe.ref_bpe`.

Example (hand-checkable): pieces ``a``=0, ``b``=1, ``c``=2, ``ab``=3 (score -1), ``bc``=4 (score -1): the pairs
``(0, 1) -> 3`` and ``(1, 2) -> 4`` have the same rank, so ``"abc"`` merges the leftmost and gives ``[3, 2]``.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.bpe_match import GIVE_WAY_AFTER, match_pieces
from tokenizer.kernels.bpe_ranked import SHORT_SYMBOLS, heap_merges, pair_merge, scan_merges
from tokenizer.kernels.double_array import exact_match, step, unit_value
from tokenizer.kernels.hash_table import EMPTY
from tokenizer.kernels.unigram import UNKNOWN_NODE, emit_node
from tokenizer.kernels.utf8 import char_length

FROZEN_BASE = -2  # sym value of a frozen USER_DEFINED piece ``id``: FROZEN_BASE - id


@kernel(inline="always")
def _initial_symbol(units, byte_piece, bmp_symbol, pseudo_units, has_pseudo, data, q, length):
    """The symbol of the character ``data[q:q + length]``: its piece, else its pseudo id, else -1. Small enough to
    be compiled into its caller's loop (a call with array arguments costs more than the lookup); the rare
    four-byte character is looked up by :func:`_four_byte_symbol`."""
    if length == 1:
        return np.int64(byte_piece[data[q]])
    if length == 2:
        return np.int64(bmp_symbol[((np.int64(data[q]) & 0x1F) << 6) | (np.int64(data[q + 1]) & 0x3F)])
    if length == 3:
        return np.int64(bmp_symbol[((np.int64(data[q]) & 0x0F) << 12) | ((np.int64(data[q + 1]) & 0x3F) << 6)
                                   | (np.int64(data[q + 2]) & 0x3F)])
    return _four_byte_symbol(units, pseudo_units, has_pseudo, data, q)


@kernel
def _four_byte_symbol(units, pseudo_units, has_pseudo, data, q):
    """The symbol of the four-byte character at ``data[q]``: its piece, else its pseudo id, else -1."""
    symbol = np.int64(exact_match(units, data, q, q + 4))
    if symbol < 0 and has_pseudo:
        symbol = np.int64(exact_match(pseudo_units, data, q, q + 4))
    return symbol


@kernel
def user_defined_prefix(units, is_user_defined, data, pos, end):
    """``(length, piece)`` of the longest USER_DEFINED piece that ``data[pos:end]`` starts with, or ``(0, -1)``:
    such a prefix becomes one frozen symbol that never merges."""
    length = 0
    found = -1
    node = units[0]
    k = pos
    while k < end:
        node = step(units, node, data[k])
        if node < 0:
            break
        k += 1
        piece = unit_value(units, node)
        if piece >= 0 and is_user_defined[piece]:
            length = k - pos
            found = piece
    return length, found


@kernel
def piece_bpe_into(units, is_user_defined, has_user_defined, byte_piece, bmp_symbol, byte_mode, pseudo_units,
                   has_pseudo, vocab_size, pair_table, bits, unk_id, byte_fallback, byte_to_id, match, matching,
                   dropout, rng_state, data, start, end, sym, nxt, prv, starts, cand, heap, memo, steps, out, pos):
    """Encode ``data[start:end]``; ids to ``out[pos:]``; returns the new ``pos``, or -1 when unknown text has
    neither an unk piece nor byte fallback.

    ``byte_piece`` int32[256]: the symbol of each one-byte character (or byte in ``byte_mode``); ``bmp_symbol``
    int32[65536]: the symbol of each two- and three-byte character by code point (-1: none). Work buffers of
    length >= ``end - start + 1``: ``sym``, ``nxt``, ``prv``, ``starts`` (int32), ``cand`` (int64: the pending
    merge of each symbol, ``rank << 32 | merged`` or negative), ``heap`` (int64, twice the length); ``memo``: the
    memo of :func:`tokenizer.kernels.bpe_match.remembered_compatible`. ``steps[0]`` (int64) grows by the merges
    of the array scan, the entries popped from the heap and the candidates matching tried (tests bound it).
    ``dropout`` (float64) and ``rng_state`` (uint64[1]): BPE-dropout, see
    :func:`tokenizer.kernels.bpe_ranked.merge_pending`.

    The characters become symbols (``sym[j]`` starting at byte ``starts[j]``). Without dropout, the text is cut
    where two adjacent characters appear together in no piece (their pair is not in the pair table, not even as
    :data:`~tokenizer.kernels.bpe_ranked.JOINABLE`): no merge can cross such a cut, so each stretch between cuts
    is merged on its own (the same ids), by :func:`~tokenizer.kernels.bpe_ranked.scan_merges` up to
    :data:`~tokenizer.kernels.bpe_ranked.SHORT_SYMBOLS` symbols, else by matching pieces
    (:func:`tokenizer.kernels.bpe_match.match_pieces`, with ``matching`` and the tables ``match`` of
    :func:`~tokenizer.kernels.bpe_tables.piece_match_tables`: the same ids) or, where matching gives way, with the
    heap.
    """
    match_units, created, split_left, split_right, prefix_of, piece_length = match
    if match_units.shape[0] == 0:
        match_units = units
    n = end - start
    if n == 0:
        return pos
    count = 0
    q = 0
    while q < n:
        length, piece = user_defined_prefix(units, is_user_defined, data, start + q, end) if has_user_defined \
            else (0, -1)
        symbol = FROZEN_BASE - np.int64(piece)
        if length == 0:
            length = 1 if byte_mode else char_length(data, start + q, end)
            symbol = _initial_symbol(units, byte_piece, bmp_symbol, pseudo_units, has_pseudo, data, start + q,
                                     length)
        sym[count] = symbol
        starts[count] = q
        count += 1
        q += length
    starts[count] = n
    for j in range(count - 1):
        cand[j] = pair_merge(pair_table, bits, sym[j], sym[j + 1])
    cand[count - 1] = -1
    prev_unknown = False
    a = 0
    while a < count:
        b = count
        if dropout == 0.0:  # (with dropout, one stretch: the draws come in the order of the whole text's merges)
            b = a + 1
            while b < count and cand[b - 1] != EMPTY:
                b += 1
        top = -1
        if b - a > SHORT_SYMBOLS and matching and dropout == 0.0:  # (nxt, prv and heap are free until the heap)
            top = match_pieces(match_units, pair_table, bits, created, split_left, split_right, prefix_of,
                               piece_length, data, start + starts[a], start + starts[b], nxt, prv, heap, memo,
                               GIVE_WAY_AFTER, steps)
        if top >= 0:
            node_start = start + starts[a]
            for k in range(top):
                pos, prev_unknown = _emit_symbol(nxt[k], vocab_size, data, node_start, prv[k], unk_id, byte_fallback,
                                                 byte_to_id, out, pos, prev_unknown)
                if pos < 0:
                    return pos
                node_start = prv[k]
        elif b - a <= SHORT_SYMBOLS and dropout == 0.0:
            left, merges = scan_merges(pair_table, bits, sym[a:b], starts[a:b], b - a, cand[a:b])
            steps[0] += merges
            for j in range(a, a + left):
                stop = starts[j + 1] if j + 1 < a + left else starts[b]
                pos, prev_unknown = _emit_symbol(sym[j], vocab_size, data, start + starts[j], start + stop, unk_id,
                                                 byte_fallback, byte_to_id, out, pos, prev_unknown)
                if pos < 0:
                    return pos
        else:
            length = b - a
            seg_sym, seg_nxt = sym[a:b], nxt[a:b]
            steps[0] += heap_merges(pair_table, bits, seg_sym, seg_nxt, prv[a:b], cand[a:b], heap, length, dropout,
                                    rng_state)
            node = 0
            while node < length:
                stop = starts[a + seg_nxt[node]] if seg_nxt[node] < length else starts[b]
                pos, prev_unknown = _emit_symbol(seg_sym[node], vocab_size, data, start + starts[a + node],
                                                 start + stop, unk_id, byte_fallback, byte_to_id, out, pos,
                                                 prev_unknown)
                if pos < 0:
                    return pos
                node = seg_nxt[node]
        a = b
    return pos


@kernel
def _emit_symbol(symbol, vocab_size, data, node_start, node_end, unk_id, byte_fallback, byte_to_id, out, pos,
                 prev_unknown):
    """:func:`tokenizer.kernels.unigram.emit_node` for a merged symbol: a frozen USER_DEFINED piece, a piece, or
    (a pseudo or unknown character) an unknown node."""
    symbol = np.int64(symbol)
    if symbol <= FROZEN_BASE:
        piece = FROZEN_BASE - symbol
    elif 0 <= symbol < vocab_size:
        piece = symbol
    else:
        piece = UNKNOWN_NODE
    return emit_node(piece, data, node_start, node_end, unk_id, byte_fallback, byte_to_id, out, pos, prev_unknown)
