"""Slow, obviously-correct Python twins of BytePiece training's kernels (for tests only): chunking
(:mod:`tokenizer.kernels.bytepiece_chunk`), n-gram counts (:mod:`tokenizer.kernels.ngram_count`), the n-gram
Viterbi (:mod:`tokenizer.kernels.ngram_segment`) and the piece Viterbi and expected counts
(:mod:`tokenizer.kernels.piece_lattice`).

Each function mirrors BytePiece's own formulation (regex chunking, dict counting, numpy Viterbi) so that the tests
compare the fast kernels against the algorithm as BytePiece writes it.
"""

from __future__ import annotations

import math
import re

import numpy as np


def chunk_text_reference(text: str, max_chars: int, isolate_digits: bool, max_newlines: int = 100) -> list[str]:
    """BytePiece's chunking regex on a str (``max_chars <= 0``: unbounded)."""
    if max_chars > 0:
        if isolate_digits:
            regex = r"\d|[^\n\d]{,%d}\n{1,%d}|[^\n\d]{1,%d}" % (max_chars, max_newlines, max_chars)
        else:
            regex = r".{,%d}\n{1,%d}|.{1,%d}" % (max_chars, max_newlines, max_chars)
    else:
        if isolate_digits:
            regex = r"\d|[^\n\d]*\n{1,%d}|[^\n\d]+" % max_newlines
        else:
            regex = r".*\n{1,%d}|.+" % max_newlines
    return re.findall(regex, text)


def count_ngrams_reference(chunks: list[bytes], order: int) -> dict[bytes, int]:
    """Every byte n-gram of length 1..order inside each chunk, counted."""
    counts: dict[bytes, int] = {}
    for chunk in chunks:
        for i in range(len(chunk)):
            for n in range(1, order + 1):
                if i + n <= len(chunk):
                    gram = chunk[i:i + n]
                    counts[gram] = counts.get(gram, 0) + 1
    return counts


def ngram_log_probs_reference(counts: dict[bytes, int], order: int, min_count: int) -> dict[bytes, float]:
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


def ngram_viterbi_reference(chunk: bytes, log_probs: dict[bytes, float], order: int, ensure_unicode: bool
                            ) -> list[bytes]:
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


def piece_viterbi_reference(text: bytes, scores: dict[bytes, float]) -> list[bytes] | None:
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


def piece_expected_counts_reference(text: bytes, probs: dict[bytes, float]) -> dict[bytes, float]:
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
