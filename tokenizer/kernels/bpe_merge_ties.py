"""The tie values of BPE training's merge candidates (the middle of the ``(count, tie, key)`` entries of
:func:`tokenizer.kernels.heaps.triple_heap_push`), which reproduce SentencePiece's order of equal counts: fewer
characters, then the smaller string."""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel


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
