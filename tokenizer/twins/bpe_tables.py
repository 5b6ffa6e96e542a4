"""Twin of :mod:`tokenizer.kernels.bpe_tables`: the tables of SentencePiece-style BPE built with Python dicts of
piece bytes, one piece and one cut at a time (the kernels' results must be equal, array for array)."""

from __future__ import annotations

import numpy as np

from tokenizer.kernels.bpe_match import BYTE, NOT_USABLE, usable_prefix_tables
from tokenizer.kernels.bpe_ranked import build_pair_table, merge_ranks
from tokenizer.kernels.bpe_tables import _is_utf8, replayed_splits, single_symbol_tables
from tokenizer.kernels.double_array import DoubleArray
from tokenizer.twins.utf8 import ref_char_length


def _symbol_bounds(piece: bytes, byte_mode: bool) -> list[int]:
    """Where each symbol (a UTF-8 character, an invalid byte alone; a byte in ``byte_mode``) of ``piece`` starts,
    then ``len(piece)``. ``_symbol_bounds(b"a\xe4\xb8\xad", False)`` -> ``[0, 1, 4]``."""
    bounds, q = [], 0
    while q < len(piece):
        bounds.append(q)
        q += 1 if byte_mode else ref_char_length(piece, q)
    return bounds + [len(piece)]


def ref_build_piece_pairs(pieces: list[bytes], ids: np.ndarray, merge_score: np.ndarray, vocab_size: int,
                          byte_mode: bool, is_user_defined: np.ndarray, units: np.ndarray) -> tuple:
    """Twin of :func:`tokenizer.kernels.bpe_tables.build_piece_pairs` (the same arguments and results), with dicts
    of piece bytes: each piece cut into characters, each character that is no piece numbered as a pseudo symbol
    when first met, each cut into two symbols a merge."""
    symbol_of = {piece: int(i) for piece, i in zip(pieces, ids.tolist())}
    pseudo: dict[bytes, int] = {}
    symbols = dict(symbol_of)  # every piece and, as they are met, every pseudo character (the two never share a key)
    symbol_id = symbols.get  # its piece, else its pseudo character; None: neither

    left, right, merged = [], [], []
    join_left: list[int] = []
    join_right: list[int] = []
    merged_pieces: list[tuple[bytes, int, list[int], list[int]]] = []  # (piece, id, symbol bounds, symbols)
    for piece, z in zip(pieces, ids.tolist()):
        bounds = _symbol_bounds(piece, byte_mode)
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
    byte_piece, bmp_symbol = single_symbol_tables([*symbol_of.items(), *pseudo.items()], byte_mode)
    match = ref_piece_match_tables(symbol_of, pseudo, merged_pieces, rank_of, is_user_defined, byte_mode, pair_table,
                                   bits, units)
    return pair_table, bits, byte_piece, bmp_symbol, pseudo_units, bool(pseudo), match


def ref_piece_match_tables(symbol_of: dict[bytes, int], pseudo: dict[bytes, int], merged_pieces: list, rank_of,
                           is_user_defined: np.ndarray, byte_mode: bool, pair_table: np.ndarray, bits: int,
                           units: np.ndarray) -> list | None:
    """Twin of :func:`tokenizer.kernels.bpe_tables.piece_match_tables`: ``symbol_of``/``pseudo`` map the bytes of
    the matchable pieces and pseudo characters to their ids, ``merged_pieces`` holds ``(piece, id, symbol bounds,
    symbols)`` of each piece of two or more symbols."""
    if not symbol_of or (not byte_mode and not all(_is_utf8(piece) for piece in symbol_of)):
        return None
    symbols = {**symbol_of, **pseudo}
    size = max(symbols.values()) + 1
    created = np.full(size, NOT_USABLE, np.int64)
    created[[i for i in symbol_of.values() if not is_user_defined[i]] + list(pseudo.values())] = BYTE  # merged: below
    split_left, split_right = np.full(size, -1, np.int32), np.full(size, -1, np.int32)
    if merged_pieces:
        flat, bounds = _pack_symbols([symbols_ for *_, symbols_ in merged_pieces])
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


def _pack_symbols(sequences: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(flat int64, bounds int64)``: the sequences one after the other, sequence ``k`` at
    ``flat[bounds[k]:bounds[k + 1]]``. ``[[1, 2], [3]]`` -> ``([1, 2, 3], [0, 2, 3])``."""
    bounds = np.zeros(len(sequences) + 1, np.int64)
    np.cumsum([len(s) for s in sequences], out=bounds[1:])
    flat = np.fromiter((x for s in sequences for x in s), np.int64, count=int(bounds[-1]))
    return flat, bounds
