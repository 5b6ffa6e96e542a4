"""Numba kernels over a fixed list of pieces (BytePiece training's pruning and EM), matched through a double array
of the pieces (:mod:`tokenizer.kernels.double_array`, its values the piece indices): the unigram Viterbi that counts
the pieces (and adjacent pairs) of each text's best segmentation, and forward-backward expected counts. Slow,
obviously-correct twins live in :mod:`tokenizer.twins.piece_lattice`; hypothesis tests check that each pair agrees.

Every kernel walks the pieces from each start ``s`` of a text with :func:`next_unit` (one read of ``units`` per
byte, in an array small enough for the caches where a hash trie probed a large table), so the pieces starting at
``s`` come shortest first and the lattice is visited in ``(s, e)`` order: the same sums and ties as any trie gives.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.double_array import HAS_VALUE, IS_LEAF, NO_NODE, PAYLOAD_SHIFT, TAG_MASK, unit_value_unbranched
from tokenizer.kernels.ngram_count import NEG_INF
from tokenizer.kernels.unigram import log_add


@kernel(inline="always")
def next_unit(units, node, byte):
    """The unit reached from ``node`` (a unit of the double array ``units``; ``units[0]`` is the root) along
    ``byte``, or NO_NODE (-1): :func:`tokenizer.kernels.double_array.step` with an unsigned slot index (no
    negative-index check). Pieces ``a``, ``ab``: from the root, ``a`` then ``b`` reach the unit of ``ab``."""
    if node & IS_LEAF:
        return NO_NODE
    unit = units[np.uint64((node >> PAYLOAD_SHIFT) + 1 + byte)]
    if (unit & TAG_MASK) != byte:
        return NO_NODE
    return unit


@kernel(inline="always")
def piece_at(units, unit):
    """The piece index of a unit :func:`next_unit` returned (>= 0), or -1 when no piece ends there."""
    if unit & HAS_VALUE:
        return unit_value_unbranched(units, unit)
    return NO_NODE


@kernel
def piece_viterbi_counts_kernel(data, offsets, weights, units, piece_scores, counts, collect_pairs=False):
    """Segment each text ``data[offsets[i]:offsets[i + 1]]`` (uint8; int64 ``(n + 1,)``) with the unigram piece
    model (max sum of ``piece_scores``, float64 per piece; pieces matched through the double array ``units``, whose
    values are piece indices); add ``weights[i]`` (int64) to ``counts[p]`` (int64, one per piece, the caller's) for
    every piece ``p`` used in text ``i``. Returns ``(n_tokens int64, n_unsegmentable, pairs)``; with
    ``collect_pairs``, ``pairs`` (int64) holds ``left_id << 32 | right_id`` for every two adjacent pieces of a
    segmentation (unsorted, one entry per occurrence), else it is empty.

    Ties: the piece with the earliest start wins (BytePiece's Aho-Corasick Viterbi visits the longest match first
    and updates only on a strictly better score). A text that no path covers adds nothing and is counted in
    ``n_unsegmentable``. Example: pieces ``a, b, ab`` with scores ``-1, -1, -1.5``: ``b"ab"`` -> ``ab``.
    """
    max_len = 0
    for c in range(len(offsets) - 1):
        if offsets[c + 1] - offsets[c] > max_len:
            max_len = offsets[c + 1] - offsets[c]
    best = np.empty(max_len + 1, dtype=np.float64)
    back = np.empty(max_len + 1, dtype=np.int64)
    back_piece = np.empty(max_len + 1, dtype=np.int64)
    n_tokens = 0
    n_bad = 0
    pairs = np.empty(len(data) if collect_pairs else 0, dtype=np.int64)
    n_pairs = 0
    root = units[0]
    for c in range(len(offsets) - 1):
        start = offsets[c]
        n = offsets[c + 1] - start
        best[0] = 0.0
        for e in range(1, n + 1):
            best[e] = NEG_INF
        for s in range(n):
            here = best[s]
            if here == NEG_INF:
                continue
            node = root
            for e in range(s + 1, n + 1):
                node = next_unit(units, node, data[start + e - 1])
                if node < 0:
                    break
                p = piece_at(units, node)
                if p >= 0:
                    score = here + piece_scores[p]
                    if score > best[e]:
                        best[e] = score
                        back[e] = s
                        back_piece[e] = p
        if n > 0 and best[n] == NEG_INF:
            n_bad += 1
            continue
        e = n
        w = weights[c]
        while e > 0:
            counts[back_piece[e]] += w
            n_tokens += 1
            if collect_pairs and back[e] > 0:
                pairs[n_pairs] = (back_piece[back[e]] << 32) | back_piece[e]
                n_pairs += 1
            e = back[e]
    return n_tokens, n_bad, pairs[:n_pairs].copy()


@kernel
def piece_forward_backward_kernel(data, offsets, weights, units, piece_scores, n_pieces):
    """Expected piece counts under the unigram model (EM's E-step): for each text, the posterior probability of
    every piece occurrence (forward-backward over the piece lattice, log space) times ``weights[i]``, summed.

    Returns ``(expected float64[n_pieces], log_likelihood float64)``. Example: pieces ``a, b, ab`` with
    probabilities ``.5, .25, .25`` on ``b"ab"``: paths ``a|b`` (.125) and ``ab`` (.25): ``ab`` gets 2/3.
    """
    expected = np.zeros(n_pieces, dtype=np.float64)
    max_len = 0
    for c in range(len(offsets) - 1):
        if offsets[c + 1] - offsets[c] > max_len:
            max_len = offsets[c + 1] - offsets[c]
    alpha = np.empty(max_len + 1, dtype=np.float64)
    beta = np.empty(max_len + 1, dtype=np.float64)
    log_likelihood = 0.0
    for c in range(len(offsets) - 1):
        start = offsets[c]
        n = offsets[c + 1] - start
        if n == 0:
            continue
        alpha[0] = 0.0
        for e in range(1, n + 1):
            alpha[e] = NEG_INF
        for s in range(n):
            if alpha[s] == NEG_INF:
                continue
            node = units[0]
            for e in range(s + 1, n + 1):
                node = next_unit(units, node, data[start + e - 1])
                if node < 0:
                    break
                p = piece_at(units, node)
                if p >= 0:
                    alpha[e] = log_add(alpha[e], alpha[s] + piece_scores[p])
        if alpha[n] == NEG_INF:
            continue
        for s in range(n):
            beta[s] = NEG_INF
        beta[n] = 0.0
        for s in range(n - 1, -1, -1):
            node = units[0]
            for e in range(s + 1, n + 1):
                node = next_unit(units, node, data[start + e - 1])
                if node < 0:
                    break
                p = piece_at(units, node)
                if p >= 0:
                    beta[s] = log_add(beta[s], piece_scores[p] + beta[e])
        z = alpha[n]
        w = weights[c]
        log_likelihood += w * z
        for s in range(n):
            if alpha[s] == NEG_INF:
                continue
            node = units[0]
            for e in range(s + 1, n + 1):
                node = next_unit(units, node, data[start + e - 1])
                if node < 0:
                    break
                p = piece_at(units, node)
                if p >= 0 and beta[e] != NEG_INF:
                    expected[p] += w * np.exp(alpha[s] + piece_scores[p] + beta[e] - z)
    return expected, log_likelihood
