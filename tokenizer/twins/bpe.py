"""Twins of :mod:`tokenizer.kernels.bpe` (SentencePiece-style BPE, with dropout) and
:mod:`tokenizer.kernels.bpe_ranked` (merge replay, byte-level BPE).

Each twin takes plain Python data (a ``dict`` of piece bytes -> id, a ``dict`` of merges) and returns the ids.
"""

from __future__ import annotations

from tokenizer.twins.random import ref_next_float64
from tokenizer.twins.unigram import UNKNOWN_NODE, ref_emit
from tokenizer.twins.utf8 import ref_char_length


def ref_bpe(pieces, score, user_defined, data, *, byte_mode, unk_id=-1, byte_fallback=False, byte_to_id=None,
            dropout=0.0, seed_state=None):
    """Twin of :func:`tokenizer.kernels.bpe.piece_bpe_into` with a plain set of live pairs instead of a heap.

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
        if dropout > 0.0 and (dropout >= 1.0 or ref_next_float64(seed_state) < dropout):
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

