"""Slow, obviously-correct Python twins of :mod:`tokenizer.kernels.ngram_segment` (for tests only): BytePiece's
n-gram log probabilities (``prune_ngrams``) and its n-gram Viterbi (``Trainer._tokenize``).

Each function mirrors BytePiece's own formulation (dict counting, numpy Viterbi) so that the tests compare the fast
kernels against the algorithm as BytePiece writes it. The other BytePiece twins:
:mod:`tokenizer.twins.bytepiece_chunk`, :mod:`tokenizer.twins.ngram_count`, :mod:`tokenizer.twins.piece_lattice`.
"""

from __future__ import annotations

import numpy as np


def ref_ngram_log_probs(counts: dict[bytes, int], order: int, min_count: int) -> dict[bytes, float]:
    """BytePiece's ``prune_ngrams``: missing single bytes get count 1 (and the total grows by one each); n-grams of
    length >= 2 below ``min_count`` are dropped; ``log p(gram) = log c(gram) - log c(gram[:-1])`` with
    ``c(b"")`` = total."""
    counts = dict(counts)
    total = sum(v for k, v in counts.items() if len(k) == 1)
    for b in range(256):
        if bytes([b]) not in counts:
            counts[bytes([b])] = 1
            total += 1
    logs = {k: np.log(v) for k, v in counts.items() if len(k) == 1 or (len(k) <= order and v >= min_count)}
    out = {}
    for k, v in logs.items():
        out[k] = v - (np.log(total) if len(k) == 1 else logs[k[:-1]])
    return out


def ref_ngram_viterbi(chunk: bytes, log_probs: dict[bytes, float], order: int, ensure_unicode: bool) -> list[bytes]:
    """BytePiece's ``Trainer._tokenize``, written with numpy as it does."""
    n = len(chunk)
    trans = np.full((order, order), -np.inf)
    for i in range(order):
        trans[i, 0] = 0
        trans[i, min(i + 1, order - 1)] = 0
    nodes = np.full((n, order), -np.inf)
    for j in range(order):
        for i in range(j, n):
            nodes[i, j] = log_probs.get(chunk[i - j:i + 1], -np.inf)
    if ensure_unicode:
        array = np.frombuffer(chunk, dtype=np.uint8)
        nodes[(array >= 128) & (array < 192), 0] -= np.inf
    routes = np.zeros((max(n - 1, 0), order), dtype=np.int32)
    for i in range(1, n):
        scores = nodes[i - 1][:, None] + trans + nodes[i]
        routes[i - 1] = scores.argmax(0)
        nodes[i] = scores.max(0)
    route = [nodes[-1].argmax()]
    for i in range(1, n):
        route.append(routes[-i][route[-1]])
    route = np.array(route[::-1])
    starts = list(np.where(route == 0)[0]) + [n]
    return [chunk[s:e] for s, e in zip(starts, starts[1:])]
