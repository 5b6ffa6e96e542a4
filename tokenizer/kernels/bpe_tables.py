"""The tables of SentencePiece-style BPE's encoder (:func:`tokenizer.kernels.bpe.piece_bpe_into`), built once per
model from its matchable pieces: the pair table, the single-character lookups and the tables of piece matching.

Every piece is cut into *symbols* (UTF-8 characters, an invalid byte alone; bytes in ``byte_mode``). A character
inside a piece of two or more symbols that is no piece itself is a *pseudo* symbol, numbered ``vocab_size + k`` in
the order the pieces first show it. Each cut of a piece ``z`` into two symbols ``x + y`` (a prefix and a suffix
that are pieces, or single characters) is a merge ``(x, y) -> z``. The kernels here walk the packed pieces once
(:func:`_character_symbols`, :func:`_cut_symbols`); the slow twin with Python dicts is
:func:`tokenizer.twins.bpe_tables.ref_build_piece_pairs`.

Example (hand-checkable): pieces ``a``=0, ``ab``=1 (vocab size 2) miss ``b``: pseudo ``b`` = 2, and the one merge
is ``(0, 2) -> 1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.bpe_match import BYTE, NOT_USABLE, usable_prefix_tables
from tokenizer.kernels.bpe_ranked import build_pair_table, heap_merges, merge_ranks, pair_merge
from tokenizer.kernels.double_array import DoubleArray, exact_match
from tokenizer.kernels.utf8 import char_length
from tokenizer.packed import pack


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



@kernel
def _character_symbols(data, offsets, starts, ends, units, symbol, key):
    """For each symbol ``j`` of the pieces (``starts``/``ends`` of :func:`symbol_starts`): ``symbol[j]`` = the id
    of the piece equal to it (``units``: the pieces' double array), or -1; ``key[j]`` = its bytes as one int64
    (``length << 32`` | the bytes big-endian), equal for equal symbols. ``b"\xc3\xa9"`` -> key
    ``2 << 32 | 0xC3A9``."""
    j = 0
    for i in range(offsets.shape[0] - 1):
        base = offsets[i]
        stop = ends[i]
        while j < stop:
            start = base + starts[j]
            end = base + starts[j + 1] if j + 1 < stop else offsets[i + 1]
            symbol[j] = exact_match(units, data, start, end)
            value = np.int64(end - start) << 32
            for q in range(start, end):
                value |= np.int64(data[q]) << (8 * (end - 1 - q))
            key[j] = value
            j += 1


@kernel
def _cut_symbols(data, offsets, starts, ends, pieces, bounds, flat, units, left, right):
    """For the pieces ``pieces[k]`` of two or more symbols (their symbols ``flat[bounds[k]:bounds[k + 1]]``): at
    ``bounds[k] + c`` for each cut ``c`` (1 .. symbols - 1), ``left`` = the symbol of the prefix before symbol
    ``c`` and ``right`` = that of the suffix from it: a single character's own symbol, a longer part's piece id,
    -1 when the part is no piece. Pieces ``a``=0, ``b``=1, ``abb``=2: the cuts of ``abb`` give ``(0, -1)`` and
    ``(-1, 1)``."""
    for k in range(pieces.shape[0]):
        p = pieces[k]
        first = ends[p - 1] if p > 0 else 0
        n = bounds[k + 1] - bounds[k]
        base, stop = offsets[p], offsets[p + 1]
        for c in range(1, n):
            cut = base + starts[first + c]
            left[bounds[k] + c] = flat[bounds[k]] if c == 1 else exact_match(units, data, base, cut)
            right[bounds[k] + c] = flat[bounds[k] + n - 1] if c == n - 1 else exact_match(units, data, cut, stop)


@kernel
def _drop_out_of_order(order, created, split_left, split_right):
    """In ``order`` (the merged pieces by ``created`` rank, lowest first), make a piece NOT_USABLE when a part is
    not usable or was created at its rank or later (a merge out of score order below it). Pieces ``a``, ``b``
    (BYTE) and ``ab`` (rank 0) stay; with ``a`` NOT_USABLE, ``ab`` becomes NOT_USABLE too."""
    for z in order:
        a, b = created[split_left[z]], created[split_right[z]]
        if a == NOT_USABLE or b == NOT_USABLE or max(a, b) >= created[z]:
            created[z] = NOT_USABLE


def _symbol_bytes(key: int) -> bytes:
    """The bytes of a symbol key of :func:`_character_symbols`: ``_symbol_bytes(2 << 32 | 0xC3A9)`` ->
    ``b"\xc3\xa9"``."""
    length = key >> 32
    return (key & 0xFFFFFFFF).to_bytes(length, "big")


@dataclass
class PieceSymbols:
    """The pieces cut into symbols. ``multi`` (int64): the indexes of the pieces of two or more symbols, in order;
    their symbols ``flat[bounds[k]:bounds[k + 1]]`` (int64 ids: pieces, pseudo characters); ``left``/``right``
    (aligned with ``flat``): the symbols of each cut (:func:`_cut_symbols`); ``pseudo``: the pseudo characters'
    bytes, by id - ``vocab_size``."""

    multi: np.ndarray
    flat: np.ndarray
    bounds: np.ndarray
    left: np.ndarray
    right: np.ndarray
    pseudo: list[bytes]


def piece_symbols(pieces: list[bytes], vocab_size: int, byte_mode: bool, units: np.ndarray) -> PieceSymbols:
    """The :class:`PieceSymbols` of ``pieces`` (in the double array ``units``). Pieces ``[b"a", b"ab"]``, vocab
    size 2: ``multi == [1]``, ``flat == [0, 2]``, ``pseudo == [b"b"]``, cut 1: ``left 0, right 2``."""
    data, offsets = pack(pieces)
    starts = np.empty(max(len(data), 1), np.int64)
    ends = np.empty(len(pieces), np.int64)
    total = symbol_starts(data, offsets, byte_mode, starts, ends)
    symbol, key = np.empty(total, np.int64), np.empty(total, np.int64)
    _character_symbols(data, offsets, starts, ends, units, symbol, key)
    per_piece = np.diff(ends, prepend=0)
    multi = np.flatnonzero(per_piece >= 2)
    inside = np.repeat(per_piece >= 2, per_piece)
    flat = symbol[inside]
    unknown = flat < 0  # characters inside pieces that are no piece: pseudo, numbered in order of appearance
    distinct, first, which = np.unique(key[inside][unknown], return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    number = np.empty(len(distinct), np.int64)
    number[order] = np.arange(len(distinct))
    flat[unknown] = vocab_size + number[which.reshape(-1)]
    bounds = np.zeros(len(multi) + 1, np.int64)
    np.cumsum(per_piece[multi], out=bounds[1:])
    left, right = np.full(len(flat), -1, np.int64), np.full(len(flat), -1, np.int64)
    _cut_symbols(data, offsets, starts, ends, multi, bounds, flat, units, left, right)
    return PieceSymbols(multi, flat, bounds, left, right, [_symbol_bytes(int(k)) for k in distinct[order]])


def build_piece_pairs(pieces: list[bytes], ids: np.ndarray, merge_score: np.ndarray, vocab_size: int,
                      byte_mode: bool, is_user_defined: np.ndarray, units: np.ndarray) -> tuple:
    """The tables of :func:`tokenizer.kernels.bpe.piece_bpe_into` for the matchable ``pieces`` (their ``ids``;
    ``merge_score`` float32 and ``is_user_defined`` uint8 per vocabulary id; ``units`` their double array):
    ``(pair_table, bits, byte_piece, bmp_symbol, pseudo_units, has_pseudo, match)`` (``pair_table``:
    :func:`tokenizer.kernels.bpe_ranked.build_pair_table`, with every two characters that meet inside a piece as a
    :data:`~tokenizer.kernels.bpe_ranked.JOINABLE` pair when they are no merge; ``match``:
    :func:`piece_match_tables`'s).

    ``pseudo_units`` is a double array from each pseudo character to its id (``vocab_size + k``). Example:
    pieces ``[b"a", b"ab"]`` miss ``b``: pseudo ``b`` = vocab_size, pair ``(0, vocab_size) -> 1``.
    """
    ids = np.asarray(ids, np.int64)
    cut = piece_symbols(pieces, vocab_size, byte_mode, units)
    inner = np.ones(len(cut.flat), bool)
    inner[cut.bounds[:-1]] = False  # position bounds[k] + c holds cut c >= 1 of piece k
    merged_ids = np.repeat(ids[cut.multi], np.diff(cut.bounds))
    found = inner & (cut.left >= 0) & (cut.right >= 0)
    left, right, merged_ids = cut.left[found], cut.right[found], merged_ids[found]
    joins = inner.copy()  # characters that meet inside a piece: no cut between them
    distinct = np.unique(merge_score[merged_ids])[::-1] if len(merged_ids) else np.zeros(0, np.float32)
    rank = np.searchsorted(-distinct, -merge_score[merged_ids]) if len(merged_ids) else merged_ids
    rank_of = merge_ranks(merged_ids, rank, vocab_size + len(cut.pseudo))  # dense: equal scores, equal rank
    pair_table, bits = build_pair_table(left, right, merged_ids, rank_of,
                                        (cut.flat[np.roll(joins, -1)], cut.flat[joins]))
    pseudo_ids = list(range(vocab_size, vocab_size + len(cut.pseudo)))
    pseudo_units = DoubleArray.build(cut.pseudo, pseudo_ids).units if cut.pseudo else np.zeros(1, np.int32)
    byte_piece, bmp_symbol = single_symbol_tables(
        [*((p, i) for p, i in zip(pieces, ids.tolist()) if len(p) <= 3), *zip(cut.pseudo, pseudo_ids)], byte_mode)
    match = piece_match_tables(pieces, ids, vocab_size, cut, rank_of, is_user_defined, byte_mode, pair_table, bits,
                               units)
    return pair_table, bits, byte_piece, bmp_symbol, pseudo_units, bool(cut.pseudo), match


def single_symbol_tables(symbols, byte_mode: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(byte_piece int32 (256), bmp_symbol int32 (65536))``: the symbol id of each one-byte symbol and (outside
    ``byte_mode``) of each character of two or three bytes, by code point, -1 elsewhere, from ``(bytes, id)``
    pairs (later pairs win). ``[(b"a", 5), ("é".encode(), 7)]`` -> ``byte_piece[97] == 5``,
    ``bmp_symbol[0xE9] == 7``."""
    byte_piece = np.full(256, -1, np.int32)
    bmp_symbol = np.full(1 << 16, -1, np.int32)
    for char, i in symbols:
        if len(char) == 1:
            byte_piece[char[0]] = i
        elif not byte_mode and len(char) <= 3:
            text = char.decode("utf-8", "replace")
            if len(text) == 1 and text.encode("utf-8") == char:
                bmp_symbol[ord(text)] = i
    return byte_piece, bmp_symbol


def piece_match_tables(pieces: list[bytes], ids: np.ndarray, vocab_size: int, cut: PieceSymbols, rank_of,
                       is_user_defined: np.ndarray, byte_mode: bool, pair_table: np.ndarray, bits: int,
                       units: np.ndarray) -> list | None:
    """The tables with which :func:`tokenizer.kernels.bpe.piece_bpe_into` matches pieces in a long stretch
    (:func:`tokenizer.kernels.bpe_match.match_pieces`): ``[units, created, split_left, split_right, prefix_of,
    piece_length]``, per symbol id (pieces, then pseudo characters); ``units`` is a double array of the symbols
    when there are pseudo characters, else empty (the model's own ``units``, of its pieces, serves). ``None``
    where there is nothing to match (no matchable piece) or matching cannot stand for the merges: a piece whose
    bytes are no valid UTF-8 outside ``byte_mode``.

    ``pieces``/``ids``: the matchable pieces (ids below ``vocab_size``); ``cut``: their symbols
    (:func:`piece_symbols`); ``rank_of``: each id's merge rank. A piece is usable when replaying its own symbols
    gives it back (:func:`replayed_splits`: where its last merge splits it) and its merges come in the order of
    their scores: a part scores above what it makes, all the way down (the order
    :func:`tokenizer.kernels.bpe_match.compatible` reads), and no part is a USER_DEFINED piece (one is frozen before
    any merge, so nothing built on it stands in a stretch). Matching never keeps an unusable piece, and every
    sequence of usable pieces whose neighbours are compatible is the merges' own, so where the merges give a piece
    that is not usable, matching finds no sequence and gives way: the same ids. Pieces ``a``, ``b``, ``ab`` (rank
    0): ``created[ab] == 0``, ``split_left[ab] == a``, ``prefix_of[ab] == a``."""
    if not pieces or (not byte_mode and not all(_is_utf8(piece) for piece in pieces)):
        return None
    size = vocab_size + len(cut.pseudo) if cut.pseudo else int(ids.max()) + 1
    created = np.full(size, NOT_USABLE, np.int64)
    created[ids[is_user_defined[ids] == 0]] = BYTE  # merged pieces: below
    created[vocab_size:] = BYTE  # the pseudo characters
    split_left, split_right = np.full(size, -1, np.int32), np.full(size, -1, np.int32)
    if len(cut.multi):
        targets = ids[cut.multi]
        split = np.empty(len(cut.multi), np.int64)
        replayed_splits(pair_table, bits, cut.flat, cut.bounds, targets.astype(np.int32), split)
        created[targets] = NOT_USABLE
        ok = (split >= 0) & (is_user_defined[targets] == 0)
        at = cut.bounds[:-1][ok] + split[ok]
        created[targets[ok]] = rank_of[targets[ok]]
        split_left[targets[ok]], split_right[targets[ok]] = cut.left[at], cut.right[at]
        ranked = targets[created[targets] >= 0]
        _drop_out_of_order(ranked[np.argsort(created[ranked], kind="stable")], created, split_left, split_right)
    keys = list(pieces) + cut.pseudo
    values = np.concatenate([ids, np.arange(vocab_size, size)]).astype(np.int32)
    if cut.pseudo:
        units = DoubleArray.build(keys, values).units
    created = created.astype(np.int32)
    prefixes = usable_prefix_tables(units, created, keys, values, size)
    if prefixes is None:
        return None
    return [units if cut.pseudo else np.zeros(0, units.dtype), created, split_left, split_right, *prefixes]


def _is_utf8(piece: bytes) -> bool:
    """Whether ``piece`` is valid UTF-8: ``_is_utf8(b"\\xff")`` -> False."""
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


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
