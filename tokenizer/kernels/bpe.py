"""SentencePiece-style BPE (with BPE-dropout), by a pair table: the encoder of SentencePiece-style BPE models.

The rule is SentencePiece's (``bpe::Model::SampleEncode``): the initial symbols are, at each position, the longest
USER_DEFINED piece that is a prefix (a *frozen* symbol, never merged), else one UTF-8 character (an invalid byte is
a one-byte character), or one byte in ``byte_mode``; then, repeatedly, the adjacent pair whose concatenation is the
best-scoring matchable piece (NORMAL or USER_DEFINED) is merged, the leftmost among equal scores; with dropout
probability ``p`` a pair that comes up is dropped instead (``p <= 0``: never, ``p >= 1``: always, else when a
uniform draw is ``< p``). Each final symbol becomes its piece id, or an unknown node
(:func:`tokenizer.kernels.unigram.emit_node`). Unlike SentencePiece, UNUSED pieces are never merged into
(SentencePiece merges and then re-splits them).

The same ids come from integer tables built once per model (:func:`build_piece_pairs`) instead of a lookup of each
concatenation:

* every split ``z = x + y`` of a matchable piece ``z`` into two *symbols* is a pair ``(x, y) -> z`` in the open
  addressing table of :mod:`tokenizer.kernels.bpe_ranked`, ranked by ``z``'s score (dense rank: equal scores, equal
  rank). A symbol is a matchable piece, or a single character that occurs inside some piece without being one (a
  *pseudo* symbol, id ``vocab_size + k``: it can merge, as SentencePiece merges any concatenation, but is emitted
  as unknown when it stays alone);
* the heap holds ``rank << 32 | byte position`` (lowest rank first, then leftmost), and the merge loop is merge
  replay's (:func:`tokenizer.kernels.bpe_ranked.merge_pending`);
* a long stretch of text is matched piece by piece instead, where the model's pieces allow it
  (:func:`piece_match_tables`, the rule of :mod:`tokenizer.kernels.bpe_match`).

Symbol values in ``sym``: a piece or pseudo id (>= 0); -1 an unknown character that no piece contains (it never
merges); ``-2 - id`` a frozen USER_DEFINED piece. Each merge pushes at most two entries, so the work is O(n log n)
whatever the text. The slow twin is :func:`tokenizer.twins.bpe.ref_bpe`.

Example (hand-checkable): pieces ``a``=0, ``b``=1, ``c``=2, ``ab``=3 (score -1), ``bc``=4 (score -1): the pairs
``(0, 1) -> 3`` and ``(1, 2) -> 4`` have the same rank, so ``"abc"`` merges the leftmost and gives ``[3, 2]``.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.bpe_match import BYTE, GIVE_WAY_AFTER, NOT_USABLE, match_pieces, usable_prefix_tables
from tokenizer.kernels.bpe_ranked import (SHORT_SYMBOLS, build_pair_table, heap_merges, merge_ranks, pair_merge,
                                         scan_merges)
from tokenizer.kernels.double_array import DoubleArray, exact_match, step, unit_value
from tokenizer.kernels.hash_table import EMPTY
from tokenizer.kernels.unigram import UNKNOWN_NODE, emit_node
from tokenizer.kernels.utf8 import char_length
from tokenizer.packed import pack

FROZEN_BASE = -2  # sym value of a frozen USER_DEFINED piece ``id``: FROZEN_BASE - id


@kernel
def symbol_starts(data, offsets, byte_mode, out, out_ends):
    """Start offsets of the symbols (UTF-8 characters, or bytes in ``byte_mode``) of each text
    ``data[offsets[i]:offsets[i + 1]]``, relative to the text, written one text after the other to ``out``;
    ``out_ends[i]`` = where text ``i``'s starts end in ``out``. One text ``b"a\\xe4\\xb8\\xad"`` -> ``[0, 1]``,
    end 2."""
    count = 0
    for i in range(offsets.shape[0] - 1):
        q = offsets[i]
        end = offsets[i + 1]
        while q < end:
            out[count] = q - offsets[i]
            count += 1
            q += 1 if byte_mode else char_length(data, q, end)
        out_ends[i] = count
    return count


def build_piece_pairs(pieces: list[bytes], ids: np.ndarray, merge_score: np.ndarray, vocab_size: int,
                      byte_mode: bool, is_user_defined: np.ndarray, units: np.ndarray) -> tuple:
    """The tables of :func:`piece_bpe_into` for the matchable ``pieces`` (their ``ids``; ``merge_score`` float32
    and ``is_user_defined`` uint8 per vocabulary id; ``units`` their double array): ``(pair_table, bits,
    byte_piece, bmp_symbol, pseudo_units, has_pseudo, match)`` (``pair_table``:
    :func:`tokenizer.kernels.bpe_ranked.build_pair_table`, with every two characters that meet inside a piece as a
    :data:`~tokenizer.kernels.bpe_ranked.JOINABLE` pair when they are no merge; ``match``:
    :func:`piece_match_tables`'s).

    ``pseudo_units`` is a double array from each pseudo character to its id (``vocab_size + k``). Example:
    pieces ``[b"a", b"ab"]`` miss ``b``: pseudo ``b`` = vocab_size, pair ``(0, vocab_size) -> 1``.
    """
    symbol_of = {piece: int(i) for piece, i in zip(pieces, ids.tolist())}
    data, offsets = pack(pieces)
    starts = np.empty(max(len(data), 1), np.int64)
    ends = np.empty(len(pieces), np.int64)
    symbol_starts(data, offsets, byte_mode, starts, ends)
    pseudo: dict[bytes, int] = {}
    symbols = dict(symbol_of)  # every piece and, as they are met, every pseudo character (the two never share a key)
    symbol_id = symbols.get  # its piece, else its pseudo character; None: neither

    left, right, merged = [], [], []
    join_left: list[int] = []
    join_right: list[int] = []
    merged_pieces: list[tuple[bytes, int, list[int], list[int]]] = []  # (piece, id, symbol bounds, symbols)
    k = 0
    for piece, z, stop in zip(pieces, ids.tolist(), ends.tolist()):
        bounds = starts[k:stop].tolist() + [len(piece)]
        k = stop
        if len(bounds) < 3:
            continue
        chars = [piece[a:b] for a, b in zip(bounds, bounds[1:])]
        for char in chars:
            if char not in symbols:
                pseudo[char] = symbols[char] = vocab_size + len(pseudo)
        char_ids = [symbols[char] for char in chars]
        merged_pieces.append((piece, z, bounds, char_ids))
        join_left.extend(char_ids[:-1])  # characters that meet inside a piece: no cut between them
        join_right.extend(char_ids[1:])
        for b in bounds[1:-1]:
            ix, iy = symbol_id(piece[:b]), symbol_id(piece[b:])
            if ix is not None and iy is not None:
                left.append(ix)
                right.append(iy)
                merged.append(z)
    merged_ids = np.array(merged, np.int64)
    distinct = np.unique(merge_score[merged_ids])[::-1] if len(merged_ids) else np.zeros(0, np.float32)
    rank = np.searchsorted(-distinct, -merge_score[merged_ids]) if len(merged_ids) else merged_ids
    rank_of = merge_ranks(merged_ids, rank, vocab_size + len(pseudo))  # dense: equal scores, equal rank
    pair_table, bits = build_pair_table(np.array(left, np.int64), np.array(right, np.int64), merged_ids, rank_of,
                                        (join_left, join_right))
    pseudo_units = DoubleArray.build(list(pseudo), list(pseudo.values())).units if pseudo else np.zeros(1, np.int32)
    byte_piece = np.full(256, -1, np.int32)
    bmp_symbol = np.full(1 << 16, -1, np.int32)
    for table in (symbol_of, pseudo):
        for char, i in table.items():
            if len(char) == 1:
                byte_piece[char[0]] = i
            elif not byte_mode and len(char) <= 3:
                text = char.decode("utf-8", "replace")
                if len(text) == 1 and text.encode("utf-8") == char:
                    bmp_symbol[ord(text)] = i
    match = piece_match_tables(symbol_of, pseudo, merged_pieces, rank_of, is_user_defined, byte_mode, pair_table,
                               bits, units)
    return pair_table, bits, byte_piece, bmp_symbol, pseudo_units, bool(pseudo), match


def piece_match_tables(symbol_of: dict[bytes, int], pseudo: dict[bytes, int], merged_pieces: list, rank_of,
                       is_user_defined: np.ndarray, byte_mode: bool, pair_table: np.ndarray, bits: int,
                       units: np.ndarray) -> list | None:
    """The tables with which :func:`piece_bpe_into` matches pieces in a long stretch
    (:func:`tokenizer.kernels.bpe_match.match_pieces`): ``[units, created, split_left, split_right, prefix_of,
    piece_length]``, per symbol id (pieces, then pseudo characters); ``units`` is a double array of the symbols
    when there are pseudo characters, else empty (the model's own ``units``, of its pieces, serves). ``None``
    where there is nothing to match (no matchable piece) or matching cannot stand for the merges: a piece whose
    bytes are no valid UTF-8 outside ``byte_mode``.

    ``symbol_of``/``pseudo``: bytes -> id of the matchable pieces and pseudo characters; ``merged_pieces``: ``(piece,
    id, symbol bounds, symbols)`` of each piece of two or more symbols; ``rank_of``: each id's merge rank. A piece
    is usable when replaying its own symbols gives it back (:func:`replayed_splits`: where its last merge splits
    it) and its merges come in the order of their scores: a part scores above what it makes, all the way down
    (the order :func:`tokenizer.kernels.bpe_match.compatible` reads), and no part is a USER_DEFINED piece (one is
    frozen before any merge, so nothing built on it stands in a stretch). Matching never keeps an unusable piece,
    and every sequence of usable pieces whose neighbours are compatible is the merges' own, so where the merges
    give a piece that is not usable, matching finds no sequence and gives way: the same ids. Pieces ``a``, ``b``,
    ``ab`` (rank 0): ``created[ab] == 0``, ``split_left[ab] == a``, ``prefix_of[ab] == a``."""
    if not symbol_of or (not byte_mode and not all(_is_utf8(piece) for piece in symbol_of)):
        return None
    symbols = {**symbol_of, **pseudo}
    size = max(symbols.values()) + 1
    created = np.full(size, NOT_USABLE, np.int64)
    created[[i for i in symbol_of.values() if not is_user_defined[i]] + list(pseudo.values())] = BYTE  # merged: below
    split_left, split_right = np.full(size, -1, np.int32), np.full(size, -1, np.int32)
    if merged_pieces:
        flat, bounds = pack_symbols([symbols_ for *_, symbols_ in merged_pieces])
        targets = np.array([z for _, z, _, _ in merged_pieces], np.int32)
        split = np.empty(len(merged_pieces), np.int64)
        replayed_splits(pair_table, bits, flat, bounds, targets, split)
        for (piece, z, char_bounds, _), at in zip(merged_pieces, split.tolist()):
            created[z] = NOT_USABLE
            if at >= 0 and not is_user_defined[z]:
                cut = char_bounds[at]
                created[z] = rank_of[z]
                split_left[z], split_right[z] = symbols[piece[:cut]], symbols[piece[cut:]]
        for z in sorted((z for _, z, _, _ in merged_pieces if created[z] >= 0), key=lambda z: created[z]):
            parts = created[split_left[z]], created[split_right[z]]
            if NOT_USABLE in parts or max(parts) >= created[z]:
                created[z] = NOT_USABLE  # a merge out of score order below it, or built on a USER_DEFINED piece
    keys = list(symbols)
    values = np.array([symbols[key] for key in keys], np.int32)
    if pseudo:
        units = DoubleArray.build(keys, values).units
    created = created.astype(np.int32)
    prefixes = usable_prefix_tables(units, created, keys, values, size)
    if prefixes is None:
        return None
    return [units if pseudo else np.zeros(0, units.dtype), created, split_left, split_right, *prefixes]


def _is_utf8(piece: bytes) -> bool:
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def pack_symbols(sequences: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(flat int64, bounds int64)``: the sequences one after the other, sequence ``k`` at
    ``flat[bounds[k]:bounds[k + 1]]``. ``[[1, 2], [3]]`` -> ``([1, 2, 3], [0, 2, 3])``."""
    bounds = np.zeros(len(sequences) + 1, np.int64)
    np.cumsum([len(s) for s in sequences], out=bounds[1:])
    flat = np.fromiter((x for s in sequences for x in s), np.int64, count=int(bounds[-1]))
    return flat, bounds


@kernel
def replayed_splits(pair_table, bits, symbols, bounds, targets, split):
    """For each piece ``k`` of two or more symbols (``symbols[bounds[k]:bounds[k + 1]]``, int64): replay its merges
    (:func:`tokenizer.kernels.bpe_ranked.heap_merges`); when they end as the one symbol ``targets[k]``,
    ``split[k]`` = the index of the symbol where the last merge joined its two parts, else -1. The last merge
    joins node 0 with the last node that ever stood right of it (``prv`` still names node 0 there). Symbols ``a``,
    ``b`` with the merge ``(a, b) -> ab``: split 1."""
    longest = 1
    for k in range(targets.shape[0]):
        longest = max(longest, bounds[k + 1] - bounds[k])
    sym, nxt, prv = np.empty(longest, np.int32), np.empty(longest, np.int32), np.empty(longest, np.int32)
    cand, heap = np.empty(longest, np.int64), np.empty(2 * longest, np.int64)
    rng_state = np.zeros(1, np.uint64)
    for k in range(targets.shape[0]):
        n = bounds[k + 1] - bounds[k]
        for i in range(n):
            sym[i] = symbols[bounds[k] + i]
        for i in range(n - 1):
            cand[i] = pair_merge(pair_table, bits, sym[i], sym[i + 1])
        heap_merges(pair_table, bits, sym, nxt, prv, cand, heap, n, 0.0, rng_state)
        split[k] = -1
        if nxt[0] == n and sym[0] == targets[k]:
            last = 1
            for j in range(2, n):
                if prv[j] == 0:
                    last = j
            split[k] = last


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
    :func:`piece_match_tables`: the same ids) or, where matching gives way, with the heap.
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
