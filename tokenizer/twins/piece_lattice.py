"""Slow, obviously-correct Python twins of :mod:`tokenizer.kernels.piece_lattice` (for tests only): the piece
Viterbi as a plain dynamic program and the expected counts by enumerating every segmentation.

    >>> ref_piece_viterbi(b"abc", {b"a": -1.0, b"bc": -1.0, b"ab": -1.0, b"c": -1.5})
    [b'a', b'bc']
"""

from __future__ import annotations

import math


def ref_piece_viterbi(text: bytes, scores: dict[bytes, float]) -> list[bytes] | None:
    """Best segmentation of ``text`` into pieces of ``scores`` (max sum); ties go to the earliest-starting last
    piece, as BytePiece's Aho-Corasick Viterbi does. ``None`` when no segmentation exists."""
    n = len(text)
    best = [0.0] + [-math.inf] * n
    back = [0] * (n + 1)
    for e in range(1, n + 1):
        for s in range(e):  # earliest start first, update only when strictly better
            piece = text[s:e]
            if piece in scores and best[s] != -math.inf:
                value = best[s] + scores[piece]
                if value > best[e]:
                    best[e], back[e] = value, s
    if n and best[n] == -math.inf:
        return None
    out, e = [], n
    while e > 0:
        out.append(text[back[e]:e])
        e = back[e]
    return out[::-1]


def ref_piece_expected_counts(text: bytes, probs: dict[bytes, float]) -> dict[bytes, float]:
    """Posterior expected count of each piece in ``text`` by enumerating every segmentation (tiny texts only)."""
    n = len(text)
    paths: list[tuple[float, list[bytes]]] = []

    def walk(s: int, acc: float, used: list[bytes]) -> None:
        if s == n:
            paths.append((acc, list(used)))
            return
        for e in range(s + 1, n + 1):
            piece = text[s:e]
            if piece in probs:
                used.append(piece)
                walk(e, acc * probs[piece], used)
                used.pop()

    walk(0, 1.0, [])
    z = sum(p for p, _ in paths)
    expected: dict[bytes, float] = {}
    for p, used in paths:
        for piece in used:
            expected[piece] = expected.get(piece, 0.0) + p / z
    return expected

