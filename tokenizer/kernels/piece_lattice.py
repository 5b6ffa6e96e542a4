"""Numba kernels over a fixed list of pieces (BytePiece training's pruning and EM), matched through a byte trie of
the pieces (:func:`tokenizer.kernels.hash_table.build_byte_trie`): the unigram Viterbi that counts the pieces (and
adjacent pairs) of each text's best segmentation, and forward-backward expected counts. Slow, obviously-correct
twins live in :mod:`tokenizer.twins.piece_lattice`; hypothesis tests check that each pair agrees.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.hash_table import trie_child
from tokenizer.kernels.ngram_count import NEG_INF
from tokenizer.kernels.unigram import log_add


@kernel
def piece_viterbi_counts_kernel(data, offsets, weights, edge_keys, edge_child, bits, node_piece, piece_scores,
                                n_pieces, collect_pairs=False):
    """Segment each text with the unigram piece model (max sum of ``piece_scores``); add ``weights[i]`` to the count
    of every piece used in text ``i``. Returns ``(counts int64[n_pieces], n_tokens int64, n_unsegmentable, pairs)``;
    with ``collect_pairs``, ``pairs`` (int64) holds ``left_id << 32 | right_id`` for every two adjacent pieces of
    a segmentation (unsorted, one entry per occurrence), else it is empty.

    Ties: the piece with the earliest start wins (BytePiece's Aho-Corasick Viterbi visits the longest match first
    and updates only on a strictly better score). A text that no path covers adds nothing and is counted in
    ``n_unsegmentable``. Example: pieces ``a, b, ab`` with scores ``-1, -1, -1.5``: ``b"ab"`` -> ``ab``.
    """
    counts = np.zeros(n_pieces, dtype=np.int64)
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
    for c in range(len(offsets) - 1):
        start = offsets[c]
        n = offsets[c + 1] - start
        best[0] = 0.0
        for e in range(1, n + 1):
            best[e] = NEG_INF
        for s in range(n):
            if best[s] == NEG_INF:
                continue
            node = 0
            for e in range(s + 1, n + 1):
                node = trie_child(edge_keys, edge_child, bits, node, data[start + e - 1])
                if node < 0:
                    break
                p = node_piece[node]
                if p >= 0:
                    score = best[s] + piece_scores[p]
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
    return counts, n_tokens, n_bad, pairs[:n_pairs].copy()


@kernel
def piece_forward_backward_kernel(data, offsets, weights, edge_keys, edge_child, bits, node_piece, piece_scores,
                                  n_pieces):
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
            node = 0
            for e in range(s + 1, n + 1):
                node = trie_child(edge_keys, edge_child, bits, node, data[start + e - 1])
                if node < 0:
                    break
                p = node_piece[node]
                if p >= 0:
                    alpha[e] = log_add(alpha[e], alpha[s] + piece_scores[p])
        if alpha[n] == NEG_INF:
            continue
        for s in range(n):
            beta[s] = NEG_INF
        beta[n] = 0.0
        for s in range(n - 1, -1, -1):
            node = 0
            for e in range(s + 1, n + 1):
                node = trie_child(edge_keys, edge_child, bits, node, data[start + e - 1])
                if node < 0:
                    break
                p = node_piece[node]
                if p >= 0:
                    beta[s] = log_add(beta[s], piece_scores[p] + beta[e])
        z = alpha[n]
        w = weights[c]
        log_likelihood += w * z
        for s in range(n):
            if alpha[s] == NEG_INF:
                continue
            node = 0
            for e in range(s + 1, n + 1):
                node = trie_child(edge_keys, edge_child, bits, node, data[start + e - 1])
                if node < 0:
                    break
                p = node_piece[node]
                if p >= 0 and beta[e] != NEG_INF:
                    expected[p] += w * np.exp(alpha[s] + piece_scores[p] + beta[e] - z)
    return expected, log_likelihood
