"""Unigram segmentation kernels: Viterbi (best path) and exact sampling, over the bytes of one text.

Shared arguments (built once per model by :class:`tokenizer.core.Tokenizer`):

- ``units``: the double array's compact units (:mod:`tokenizer.kernels.double_array`) of the *matchable*
  pieces only (NORMAL and USER_DEFINED; never UNUSED, CONTROL, UNKNOWN or BYTE).
- ``piece_score``: shape ``(vocab_size,)``, float32 (SentencePiece-compatible models) or float64 (models with
  exact log-count scores, e.g. BytePiece's): the lattice score of each matchable piece; for USER_DEFINED pieces
  SentencePiece's bonus ``len * max_score - 0.1``.
- ``byte_mode``: every single byte is a matchable piece, so segments may start at any byte and no text is unknown.
  Otherwise segments start at UTF-8 character boundaries (an invalid byte counts as a one-byte character) and a
  character with no one-character piece gets an *unknown node* scored ``unk_score`` (``min NORMAL score - 10``).
- ``split_after_newlines``: no piece may span a position that follows a ``\\n`` and precedes another byte
  (BytePiece encodes each ``line + its newlines`` chunk separately).
- ``unk_id``, ``byte_fallback``, ``byte_to_id`` (int32[256], the BYTE piece of each byte or ``unk_id``): how
  unknown nodes become ids (see :func:`emit_node`).

Viterbi gives SentencePiece's ``EncodeOptimized`` ids: there, start positions go in increasing order, matches in
increasing length, and a candidate replaces the best path ending at the same position only if strictly better, so
the first best found wins ties (for a given end, the longest last piece). The kernels here walk back from each
end over a trie of the reversed pieces (:func:`viterbi_bytes_into` in byte mode; :func:`viterbi_chars_into`, over
characters, otherwise) and keep the longest of equal candidates: the same choice. Sampling walks ``units``
forward. Path scores are summed and stored in the dtype of ``piece_score``/``best_score`` (float32 like
SentencePiece, whose ids this then reproduces exactly; float64 like BytePiece); pass ``unk_score`` as that dtype.

Example (hand-checkable): pieces ``a``=0 (score -1), ``b``=1 (-1), ``ab``=2 (-2.5): ``"ab"`` -> ``[0, 1]``
(-2 beats -2.5); with ``ab`` at -2.0 the paths tie and the first one found, ``ab`` (from start 0), stays: ``[2]``.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.char_trie import CHAR_HAS_VALUE, CHAR_IS_LEAF, CHAR_PAYLOAD_SHIFT, CHAR_TAG_MASK, char_ids_into
from tokenizer.kernels.double_array import (HAS_VALUE, IS_LEAF, PAYLOAD_SHIFT, TAG_MASK, step, unit_value,
                                            unit_value_unbranched)
from tokenizer.kernels.random import next_float64
from tokenizer.kernels.utf8 import char_length

UNKNOWN_NODE = -2          # node id of an unknown character inside the kernels
ERROR_NO_UNKNOWN_PIECE = -1  # returned when text is unknown and the model has no unk piece nor byte fallback
NEWLINE = 10


@kernel
def emit_node(node_id, data, node_start, node_end, unk_id, byte_fallback, byte_to_id, out, pos, prev_unknown):
    """Write the ids of one path node at ``out[pos:]``; returns ``(new_pos, node_was_unknown)``.

    A known node writes its id. An unknown node writes, with byte fallback, the BYTE piece of each of its bytes;
    without, ``unk_id`` once per run of consecutive unknown nodes (SentencePiece merges such runs into one unknown
    piece). Returns ``(ERROR_NO_UNKNOWN_PIECE, True)`` when an id would be -1 (no unk piece and no fallback).
    """
    if node_id != UNKNOWN_NODE:
        out[pos] = node_id
        return pos + 1, False
    if byte_fallback:
        for k in range(node_start, node_end):
            i = byte_to_id[data[k]]
            if i < 0:
                return ERROR_NO_UNKNOWN_PIECE, True
            out[pos] = i
            pos += 1
        return pos, True
    if prev_unknown:
        return pos, True
    if unk_id < 0:
        return ERROR_NO_UNKNOWN_PIECE, True
    out[pos] = unk_id
    return pos + 1, True


@kernel
def _blocked(data, start, k, split_after_newlines):
    """True when a piece starting at ``start`` may not take the byte at ``k`` (it follows a newline run)."""
    return split_after_newlines and k > start and data[k - 1] == NEWLINE and data[k] != NEWLINE


@kernel(inline="always")
def _kept(score, first, piece, candidate, start, value):
    """The best path ending here, ``(score, first, piece)``, once the piece ``value`` starting at ``start`` (with
    path score ``candidate``) is weighed: the walks back meet candidates longest last, so ``>=`` keeps the longest
    of equal scores, the one SentencePiece's forward search finds first. Selects, not branches: ``(-1.0, 2, 7)``
    and a candidate -1.0 from start 1 piece 9 -> ``(-1.0, 1, 9)``."""
    better = candidate >= score
    return (candidate if better else score), (start if better else first), (value if better else piece)


@kernel
def viterbi_bytes_into(units, two_bytes, piece_score, split_after_newlines, data, start, end, best_score, best_start,
                       best_id, out, pos):
    """Best segmentation of ``data[start:end]`` for a model in byte mode (every byte is a piece, so nothing is
    unknown); writes its ids at ``out[pos:]`` and returns the new ``pos``. An empty range writes nothing.

    ``units`` is the double array of the *reversed* pieces: the best path ending at each position ``e`` is found by
    walking back from ``e``, over the pieces that end there, keeping the best of ``piece score + best score at its
    start`` in registers and storing it once (no store per candidate, no branch on a comparison). Candidates come
    longest last; ``>=`` keeps the longest of equal scores, the piece SentencePiece's forward search finds first.
    ``two_bytes`` (:func:`tokenizer.kernels.double_array.fill_two_byte_steps` of ``units``) gives the node two
    bytes back in one read. Work buffers (length >= ``end - start + 1``): ``best_score`` of ``piece_score``'s
    dtype, ``best_start`` and ``best_id`` int32. ``out`` int32 needs room for ``end - start`` ids.

    The hot loop indexes with ``np.uint64(i)`` (every such ``i`` is >= 0): Numba adds a negative-index wraparound
    test to each signed index, and dropping it made this kernel faster (same ids; ``benchmarks/encode.py``).
    """
    n = end - start
    root_children = (units[0] >> PAYLOAD_SHIFT) + 1
    best_score[0] = 0.0
    for e in range(1, n + 1):
        # the last byte alone is a piece (byte mode): the first candidate
        last = np.int64(data[np.uint64(start + e - 1)])
        piece = unit_value_unbranched(units, units[np.uint64(root_children + last)])
        score = piece_score[np.uint64(piece)] + best_score[np.uint64(e - 1)]
        first = e - 1
        k = e - 2
        if k >= 0 and not (split_after_newlines and _blocked(data, start + k, start + k + 1, True)):
            # the last two bytes in one read, not two dependent ones (NO_NODE: no piece ends with them)
            unit = two_bytes[np.uint64(last * 256 + np.int64(data[np.uint64(start + k)]))]
            while unit >= 0:
                if unit & HAS_VALUE:
                    value = unit_value_unbranched(units, unit)
                    score, first, piece = _kept(score, first, piece, piece_score[np.uint64(value)] +
                                                best_score[np.uint64(k)], k, value)
                    if unit & IS_LEAF:
                        break
                k -= 1
                if k < 0 or (split_after_newlines and _blocked(data, start + k, start + k + 1, True)):
                    break
                c = data[np.uint64(start + k)]
                child = units[np.uint64((unit >> PAYLOAD_SHIFT) + 1 + c)]
                if (child & TAG_MASK) != c:
                    break
                unit = child
        best_score[np.uint64(e)] = score
        best_start[np.uint64(e)] = first
        best_id[np.uint64(e)] = piece
    count = 0
    e = n
    while e > 0:
        count += 1
        e = best_start[np.uint64(e)]
    e = n
    for i in range(count - 1, -1, -1):
        out[np.uint64(pos + i)] = best_id[np.uint64(e)]
        e = best_start[np.uint64(e)]
    return pos + count


@kernel
def viterbi_chars_into(units, pages, blocks, piece_score, split_after_newlines, unk_id, byte_fallback, byte_to_id,
                       unk_score, data, start, end, best_score, best_start, best_id, out, pos):
    """Best segmentation of ``data[start:end]`` for a model not in byte mode; writes its ids at ``out[pos:]`` and
    returns the new ``pos``, or ``ERROR_NO_UNKNOWN_PIECE`` (-1) when unknown text cannot be represented. An empty
    range writes nothing.

    Pieces start and end at characters, so the lattice positions are characters and ``units``, ``pages`` and
    ``blocks`` are a :mod:`tokenizer.kernels.char_trie` of the *reversed* pieces: as in
    :func:`viterbi_bytes_into`, the best path ending at each character is found walking back over the pieces that
    end there. A character with no one-character piece also ends an unknown node (``unk_score``), which, the last
    candidate of SentencePiece's forward search, wins only when strictly better. ``out[pos:]`` holds the char ids
    of the text until the path is known, and ``best_start`` is turned around in place (the node starting at
    character ``s`` ends at ``best_start[s]``) before the ids are written; the byte offsets of the characters are
    read back only for unknown nodes that fall back to bytes. Work buffers and ``out`` as in
    :func:`viterbi_bytes_into`.
    """
    m = char_ids_into(pages, blocks, data, start, end, out, pos)
    newline = blocks[np.int64(pages[0]) * 256 + NEWLINE]  # -1 when no key holds a newline
    root = units[0]
    best_score[0] = 0.0
    for e in range(1, m + 1):
        node = root
        k = e - 1
        score = -np.inf
        first = np.int64(-1)
        piece = np.int64(UNKNOWN_NODE)
        single = False
        while k >= 0:
            c = out[np.uint64(pos + k)]
            if split_after_newlines and k < e - 1 and c == newline and out[np.uint64(pos + k + 1)] != newline:
                break
            unit = units[np.uint64((node >> CHAR_PAYLOAD_SHIFT) + 1 + c)]  # c = -1 reads the value slot: no tag
            if (unit & CHAR_TAG_MASK) != c:
                break
            node = unit
            if unit & CHAR_HAS_VALUE:
                if unit & CHAR_IS_LEAF:
                    value = unit >> CHAR_PAYLOAD_SHIFT
                else:
                    value = units[np.uint64(unit >> CHAR_PAYLOAD_SHIFT)] >> CHAR_PAYLOAD_SHIFT
                single = single or k == e - 1
                score, first, piece = _kept(score, first, piece, piece_score[np.uint64(value)] +
                                            best_score[np.uint64(k)], k, value)
                if unit & CHAR_IS_LEAF:
                    break
            k -= 1
        if not single:  # no one-character piece ends here: the unknown node does
            unknown = unk_score + best_score[np.uint64(e - 1)]
            if first < 0 or unknown > score:
                score = unknown
                first = e - 1
                piece = UNKNOWN_NODE
        best_score[np.uint64(e)] = score
        best_start[np.uint64(e)] = first
        best_id[np.uint64(e)] = piece
    if m == 0:
        return pos
    e = m
    s = best_start[m]
    while True:  # turn the path around: best_start[s] becomes the end of the node that starts at s
        before = best_start[s]
        best_start[s] = e
        if s == 0:
            break
        e = s
        s = before
    prev_unknown = False
    s = 0
    scanned, byte = 0, start  # character ``scanned`` starts at ``data[byte]`` (advanced only for byte fallback)
    while s < m:
        e = best_start[np.uint64(s)]
        node_id = best_id[np.uint64(e)]
        node_start = node_end = byte
        if node_id == UNKNOWN_NODE and byte_fallback:
            while scanned < s:
                byte += char_length(data, byte, end)
                scanned += 1
            node_start, node_end = byte, byte + char_length(data, byte, end)
        pos, prev_unknown = emit_node(node_id, data, node_start, node_end, unk_id, byte_fallback, byte_to_id, out,
                                      pos, prev_unknown)
        if pos < 0:
            return pos
        s = e
    return pos


@kernel
def log_add(a, b):
    """``log(exp(a) + exp(b))`` without overflow; ``-inf`` is the log of 0. ``log_add(0.0, 0.0)`` -> ``log(2)``."""
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a < b:
        a, b = b, a
    return a + np.log1p(np.exp(b - a))


@kernel
def _edges(units, piece_score, byte_mode, split_after_newlines, unk_score, data, start, end, s,
           edge_end, edge_id, edge_score):
    """Lattice edges leaving relative position ``s``: fills ``edge_*`` (shortest first, then the unknown node)."""
    mblen = 1 if byte_mode else char_length(data, start + s, end)
    count = 0
    has_single = False
    node = units[0]
    k = start + s
    while k < end:
        if _blocked(data, start + s, k, split_after_newlines):
            break
        node = step(units, node, data[k])
        if node < 0:
            break
        k += 1
        piece = unit_value(units, node)
        if piece >= 0:
            edge_end[count] = k - start
            edge_id[count] = piece
            edge_score[count] = piece_score[piece]
            count += 1
            if k - start - s == mblen:
                has_single = True
    if not has_single:
        edge_end[count] = s + mblen
        edge_id[count] = UNKNOWN_NODE
        edge_score[count] = unk_score
        count += 1
    return count, mblen


@kernel
def sample_into(units, piece_score, byte_to_id, byte_mode, split_after_newlines, unk_id,
                byte_fallback, unk_score, alpha, rng_state, data, start, end, beta, starts, edge_end, edge_id,
                edge_score, out, pos):
    """One segmentation of ``data[start:end]`` drawn with probability proportional to ``exp(alpha * score)``.

    Exact: backward filtering (``beta[s]`` = log-sum over every path from ``s`` to the end of
    ``exp(alpha * path score)``, in float64), then forward sampling (leave ``s`` by edge ``(s, e)`` with probability
    ``exp(alpha * w + beta[e] - beta[s])``), one uniform draw from ``rng_state`` per piece. ``alpha=0`` samples
    every segmentation uniformly; large ``alpha`` approaches the Viterbi path. Work buffers: ``beta`` float64 and
    ``starts`` int32 (length >= n + 1), ``edge_*`` (int32, int32, float64; length >= longest piece + 1).
    Writes ids at ``out[pos:]``; returns the new ``pos`` or ``ERROR_NO_UNKNOWN_PIECE``.
    """
    n = end - start
    n_starts = 0
    s = 0
    while s < n:
        starts[n_starts] = s
        n_starts += 1
        s += 1 if byte_mode else char_length(data, start + s, end)
    for e in range(n + 1):
        beta[e] = -np.inf
    beta[n] = 0.0
    for i in range(n_starts - 1, -1, -1):
        s = starts[i]
        count, mblen = _edges(units, piece_score, byte_mode, split_after_newlines, unk_score, data,
                              start, end, s, edge_end, edge_id, edge_score)
        total = -np.inf
        for j in range(count):
            b = beta[edge_end[j]]
            if b != -np.inf:
                total = log_add(total, alpha * edge_score[j] + b)
        beta[s] = total
    s = 0
    prev_unknown = False
    while s < n:
        count, mblen = _edges(units, piece_score, byte_mode, split_after_newlines, unk_score, data,
                              start, end, s, edge_end, edge_id, edge_score)
        u = next_float64(rng_state)
        cumulative = 0.0
        chosen = -1
        for j in range(count):
            b = beta[edge_end[j]]
            if b == -np.inf:
                continue
            chosen = j
            cumulative += np.exp(alpha * edge_score[j] + b - beta[s])
            if u < cumulative:
                break
        e = edge_end[chosen]
        pos, prev_unknown = emit_node(edge_id[chosen], data, start + s, start + e, unk_id, byte_fallback,
                                      byte_to_id, out, pos, prev_unknown)
        if pos < 0:
            return pos
        s = e
    return pos
