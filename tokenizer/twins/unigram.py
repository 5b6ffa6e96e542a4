"""Slow, obviously-correct pure-Python twins of the segmentation kernels (tests compare the two).

Each twin takes plain Python data (a ``dict`` of piece bytes -> id instead of a double array) and returns the ids.
Float rounding is mimicked with numpy scalars where the kernels depend on it (float32 stored path scores).

    >>> ref_common_prefix_search({b"a": 7, b"ab": 8, b"b": 9}, b"abc", 0)
    [(7, 1), (8, 2)]
"""

from __future__ import annotations

import math

import numpy as np

UNKNOWN_NODE = -2
MASK64 = 0xFFFFFFFFFFFFFFFF


# ---------------------------------------------------------------------------------------------------- helpers
def splitmix64_next(state: list[int]) -> int:
    """Twin of :func:`tokenizer.kernels.random.next_uint64`; ``state`` is a one-element list of int."""
    state[0] = (state[0] + 0x9E3779B97F4A7C15) & MASK64
    z = state[0]
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def splitmix64_float(state: list[int]) -> float:
    return (splitmix64_next(state) >> 11) / float(1 << 53)


def ref_char_length(data: bytes, pos: int) -> int:
    """Length of the UTF-8 character at ``pos``: the k in 1..4 for which ``data[pos:pos+k]`` decodes to exactly
    one character, else 1 (an invalid byte)."""
    for k in range(1, 5):
        chunk = data[pos:pos + k]
        if len(chunk) < k:
            break
        try:
            if len(chunk.decode("utf-8")) == 1:
                return k
        except UnicodeDecodeError:
            continue
    return 1


def ref_common_prefix_search(pieces: dict[bytes, int], data: bytes, start: int) -> list[tuple[int, int]]:
    """Every ``(id, length)`` with ``data[start:start+length]`` a key of ``pieces``, shortest first."""
    return [(pieces[data[start:end]], end - start) for end in range(start + 1, len(data) + 1)
            if data[start:end] in pieces]


def ref_units_prefixes(units, data: bytes, start: int) -> list[tuple[int, int]]:
    """Twin of :func:`tokenizer.kernels.double_array.common_prefix_search` that reads the compact units with the
    layout spelled out field by field (see that module): every ``(id, length)`` of a key prefixing ``data[start:]``.
    """
    found = []
    node = int(units[0])
    for k in range(start, len(data)):
        if node >> 10 & 1:                      # IS_LEAF: no children
            break
        base = node >> 11
        child = int(units[base + 1 + data[k]])
        if child & 0x1FF != data[k]:            # tag: the byte leading here (256 = no node)
            break
        node = child
        if child >> 9 & 1:                      # HAS_VALUE
            value = child >> 11 if child >> 10 & 1 else int(units[child >> 11]) >> 11
            found.append((value, k - start + 1))
    return found


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
    """Twin of :func:`tokenizer.kernels.unigram.viterbi_into`: build the whole lattice, then a forward DP.

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
            total = t if total == -math.inf else max(total, t) + math.log1p(math.exp(-abs(total - t)))
        beta[s] = total
    nodes, s = [], 0
    while s < n:
        edges, _ = _edges(pieces, score, data, s, byte_mode, split_after_newlines, unk_score)
        u = splitmix64_float(seed_state)
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


# ---------------------------------------------------------------------------------------------------- bpe
def ref_bpe(pieces, score, user_defined, data, *, byte_mode, unk_id=-1, byte_fallback=False, byte_to_id=None,
            dropout=0.0, seed_state=None):
    """Twin of :func:`tokenizer.kernels.bpe.bpe_into` with a plain set of live pairs instead of a heap.

    ``user_defined`` is the set of USER_DEFINED piece bytes. Each step takes the live pair with the highest score
    (ties: leftmost), drops it with probability ``dropout`` or merges it.
    """
    byte_to_id = byte_to_id if byte_to_id is not None else [-1] * 256
    symbols = []  # [start, end, frozen]
    q = 0
    while q < len(data):
        ud = [end for end in range(q + 1, len(data) + 1) if data[q:end] in user_defined]
        if ud:
            symbols.append([q, max(ud), True])
        else:
            symbols.append([q, q + (1 if byte_mode else ref_char_length(data, q)), False])
        q = symbols[-1][1]

    def pair(i, j):
        a, b = symbols[i], symbols[j]
        if a[2] or b[2] or data[a[0]:b[1]] not in pieces:
            return None
        return (score[pieces[data[a[0]:b[1]]]], a[0])

    live = {}  # (i, j) -> (score, start of left)
    for i in range(len(symbols) - 1):
        p = pair(i, i + 1)
        if p is not None:
            live[(i, i + 1)] = p
    alive = list(range(len(symbols)))  # indices of current symbols, in order
    while live:
        (i, j), _ = max(live.items(), key=lambda item: (item[1][0], -item[1][1]))
        del live[(i, j)]
        if dropout > 0.0 and (dropout >= 1.0 or splitmix64_float(seed_state) < dropout):
            continue
        symbols[i][1] = symbols[j][1]
        k = alive.index(j)
        alive.pop(k)
        live = {key: v for key, v in live.items() if j not in key and i not in key}
        k -= 1  # position of i
        if k > 0:
            p = pair(alive[k - 1], i)
            if p is not None:
                live[(alive[k - 1], i)] = p
        if k + 1 < len(alive):
            p = pair(i, alive[k + 1])
            if p is not None:
                live[(i, alive[k + 1])] = p
    nodes = []
    for i in alive:
        s, e, _ = symbols[i]
        nodes.append((s, e, pieces.get(data[s:e], UNKNOWN_NODE)))
    return ref_emit(nodes, data, unk_id, byte_fallback, byte_to_id)


def ref_ranked_bpe(merges: dict[tuple[int, int], tuple[int, int]], byte_to_id, data: bytes) -> list[int]:
    """Twin of :func:`tokenizer.kernels.bpe_ranked.ranked_bpe_into`: merge replay in one pre-token, the slow way
    (scan every adjacent pair, merge the lowest rank, the leftmost of equal ranks; until no pair is a merge).
    ``merges``: ``{(left id, right id): (merged id, rank)}``.

    >>> ref_ranked_bpe({(1, 2): (3, 0), (0, 1): (4, 1), (4, 2): (5, 2)}, [0, 1, 2], bytes([0, 1, 2]))
    [0, 3]
    """
    symbols = [int(byte_to_id[b]) for b in data]
    while len(symbols) > 1:
        ranked = [(merges[pair][1], i) for i, pair in enumerate(zip(symbols, symbols[1:])) if pair in merges]
        if not ranked:
            break
        _, i = min(ranked)
        symbols[i:i + 2] = [merges[(symbols[i], symbols[i + 1])][0]]
    return symbols
