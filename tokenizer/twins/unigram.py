"""Slow, obviously-correct pure-Python twins of the unigram segmentation kernels of :mod:`tokenizer.kernels.unigram`
(Viterbi, sampling, UTF-8 character length); the BPE twins (:mod:`tokenizer.twins.bpe`) share the lattice helpers.

Each twin takes plain Python data (a ``dict`` of piece bytes -> id instead of a double array) and returns the ids.
Float rounding is mimicked with numpy scalars where the kernels depend on it (float32 stored path scores).

    >>> ref_viterbi({b"a": 0, b"b": 1, b"ab": 2}, [-1.0, -1.0, -1.5], b"ab", byte_mode=False)
    [2]
"""

from __future__ import annotations

from tokenizer.twins.utf8 import ref_char_length

import math

import numpy as np

from tokenizer.twins.random import ref_next_float64

UNKNOWN_NODE = -2


def ref_log_add(a: float, b: float) -> float:
    """Twin of :func:`tokenizer.kernels.unigram.log_add`: ``log(exp(a) + exp(b))``, ``-inf`` the log of 0.
    ``ref_log_add(0.0, 0.0)`` -> ``log(2)``."""
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


def _blocked(data: bytes, start: int, k: int, split_after_newlines: bool) -> bool:
    return split_after_newlines and k > start and data[k - 1] == 10 and data[k] != 10


def _edges(pieces, score, data, s, byte_mode, split_after_newlines, unk_score):
    """Lattice edges ``(end, id, score)`` leaving ``s``: pieces shortest first, then the unknown node if needed."""
    mblen = 1 if byte_mode else ref_char_length(data, s)
    edges = []
    for end in range(s + 1, len(data) + 1):
        if _blocked(data, s, end - 1, split_after_newlines):
            break
        piece = data[s:end]
        if piece in pieces:
            edges.append((end, pieces[piece], score[pieces[piece]]))
    if not any(end - s == mblen for end, _, _ in edges):
        edges.append((s + mblen, UNKNOWN_NODE, unk_score))
    return edges, mblen


def _starts(data: bytes, byte_mode: bool) -> list[int]:
    starts, s = [], 0
    while s < len(data):
        starts.append(s)
        s += 1 if byte_mode else ref_char_length(data, s)
    return starts


def ref_emit(nodes, data, unk_id, byte_fallback, byte_to_id) -> list[int] | None:
    """Ids of path nodes ``(start, end, id)``; unknown nodes -> BYTE ids or one unk per run. None = unrepresentable."""
    out, prev_unknown = [], False
    for start, end, node in nodes:
        if node != UNKNOWN_NODE:
            out.append(node)
            prev_unknown = False
            continue
        if byte_fallback:
            ids = [byte_to_id[b] for b in data[start:end]]
            if min(ids) < 0:
                return None
            out.extend(ids)
        elif not prev_unknown:
            if unk_id < 0:
                return None
            out.append(unk_id)
        prev_unknown = True
    return out


# ---------------------------------------------------------------------------------------------------- unigram
def ref_viterbi(pieces, score, data, *, byte_mode, split_after_newlines=False, unk_score=-10.0,
                score_dtype=np.float32, unk_id=-1, byte_fallback=False, byte_to_id=None):
    """Twin of :func:`tokenizer.kernels.unigram.viterbi_chars_into` (``byte_mode=False``) and
    :func:`~tokenizer.kernels.unigram.viterbi_bytes_into` (``byte_mode=True``): the whole lattice, then a forward DP.

    ``score`` maps id -> lattice score; every path score is summed and stored as a ``score_dtype`` scalar.
    """
    byte_to_id = byte_to_id if byte_to_id is not None else [-1] * 256
    n = len(data)
    best = {0: (score_dtype(0.0), 0, 0)}  # end -> (score, start, id)
    for s in _starts(data, byte_mode):
        here = best[s][0]
        edges, _ = _edges(pieces, score, data, s, byte_mode, split_after_newlines, unk_score)
        for end, node, w in edges:
            if node == UNKNOWN_NODE:
                with np.errstate(over="ignore"):  # unk_score is near FLT_MAX when no NORMAL piece exists
                    candidate = score_dtype(unk_score) + here
                better = end not in best or candidate > best[end][0]
            else:
                candidate = score_dtype(w) + here
                better = end not in best or candidate > best[end][0]
            if better:
                best[end] = (score_dtype(candidate), s, node)
    nodes, end = [], n
    while end > 0:
        _, s, node = best[end]
        nodes.append((s, end, node))
        end = s
    return ref_emit(nodes[::-1], data, unk_id, byte_fallback, byte_to_id)


def ref_sample(pieces, score, data, *, alpha, seed_state, byte_mode, split_after_newlines=False,
               unk_score=-10.0, unk_id=-1, byte_fallback=False, byte_to_id=None):
    """Twin of :func:`tokenizer.kernels.unigram.sample_into` (same draws from ``seed_state``, a [int] list)."""
    byte_to_id = byte_to_id if byte_to_id is not None else [-1] * 256
    n = len(data)
    beta = {n: 0.0}
    for s in reversed(_starts(data, byte_mode)):
        edges, _ = _edges(pieces, score, data, s, byte_mode, split_after_newlines, unk_score)
        terms = [alpha * w + beta[end] for end, _, w in edges if beta.get(end, -math.inf) != -math.inf]
        total = -math.inf
        for t in terms:
            total = ref_log_add(total, t)
        beta[s] = total
    nodes, s = [], 0
    while s < n:
        edges, _ = _edges(pieces, score, data, s, byte_mode, split_after_newlines, unk_score)
        u = ref_next_float64(seed_state)
        cumulative, chosen = 0.0, None
        for end, node, w in edges:
            if beta.get(end, -math.inf) == -math.inf:
                continue
            chosen = (end, node)
            cumulative += math.exp(alpha * w + beta[end] - beta[s])
            if u < cumulative:
                break
        nodes.append((s, chosen[0], chosen[1]))
        s = chosen[0]
    return ref_emit(nodes, data, unk_id, byte_fallback, byte_to_id)
