"""Slow, obviously-correct pure-Python twins of :mod:`tokenizer.kernels.unigram_train` (tests compare the two).

Lattices are enumerated path by path: fine for the short texts of the tests, hopeless for a corpus.

    >>> import math
    >>> e = ref_expected_counts({b"a": math.log(.5), b"b": math.log(.25), b"ab": math.log(.25)}, [b"ab"], [1])
    >>> {k: round(v, 6) for k, v in e.items()}
    {b'a': 0.333333, b'b': 0.333333, b'ab': 0.666667}
"""

from __future__ import annotations

import math

from tokenizer.twins.unigram import ref_log_add
from tokenizer.twins.utf8 import ref_char_length

UNK = None


def _edges(scores: dict[bytes, float], text: bytes, start: int, unk_score: float, byte_mode: bool):
    """Edges ``(end, piece or UNK, score)`` from ``start``: active pieces shortest first, then the unknown node when
    no single-unit piece starts here."""
    unit = 1 if byte_mode else ref_char_length(text, start)
    edges = [(end, text[start:end], scores[text[start:end]]) for end in range(start + 1, len(text) + 1)
             if text[start:end] in scores and scores[text[start:end]] != -math.inf]
    if not any(end - start == unit for end, _, _ in edges):
        edges.append((start + unit, UNK, unk_score))
    return edges


def _paths(scores, text, unk_score, byte_mode=False):
    """Every segmentation of ``text`` as a list of ``(piece or UNK, score, start, end)``."""
    def walk(start):
        if start == len(text):
            yield []
            return
        for end, piece, score in _edges(scores, text, start, unk_score, byte_mode):
            for rest in walk(end):
                yield [(piece, score, start, end)] + rest
    return list(walk(0))


def ref_expected_counts(scores, chunks, weights, unk_score=-100.0, byte_mode=False) -> dict:
    """Expected counts of pieces (float) summed over chunks, by enumerating every path."""
    out: dict = {}
    for text, weight in zip(chunks, weights):
        paths = _paths(scores, text, unk_score, byte_mode)
        probs = [math.exp(sum(s for _, s, _, _ in p)) for p in paths]
        z = sum(probs)
        for path, prob in zip(paths, probs):
            for piece, _, _, _ in path:
                if piece is not UNK:
                    out[piece] = out.get(piece, 0.0) + weight * prob / z
    return out


def ref_expected_counts_dp(scores, chunks, weights, unk_score=-100.0, byte_mode=False) -> tuple[dict, float]:
    """Expected counts (float) and ``sum(weight * log Z)`` by forward-backward in log space, position by position:
    the same numbers as :func:`ref_expected_counts` for texts of any length (no path enumeration, no
    underflow)."""
    out: dict = {}
    objective = 0.0
    for text, weight in zip(chunks, weights):
        n = len(text)
        edges = {s: _edges(scores, text, s, unk_score, byte_mode) for s in range(n)}
        alpha = [-math.inf] * (n + 1)
        alpha[0] = 0.0
        for s in range(n):
            if alpha[s] != -math.inf:
                for end, _, score in edges[s]:
                    alpha[end] = ref_log_add(alpha[end], alpha[s] + score)
        beta = [-math.inf] * (n + 1)
        beta[n] = 0.0
        for s in range(n - 1, -1, -1):
            if alpha[s] != -math.inf:
                for end, _, score in edges[s]:
                    beta[s] = ref_log_add(beta[s], score + beta[end])
        log_z = alpha[n]
        objective += weight * log_z
        for s in range(n):
            if alpha[s] == -math.inf:
                continue
            for end, piece, score in edges[s]:
                if piece is not UNK and beta[end] != -math.inf:
                    out[piece] = out.get(piece, 0.0) + weight * math.exp(alpha[s] + score + beta[end] - log_z)
    return out, objective


def ref_best_score(scores, text, unk_score=-100.0, byte_mode=False, excluded: bytes | None = None) -> float:
    """Score of the best path (optionally never using the whole-text node of piece ``excluded``)."""
    best = -math.inf
    for path in _paths(scores, text, unk_score, byte_mode):
        if excluded is not None and len(path) == 1 and path[0][0] == excluded:
            continue
        best = max(best, sum(s for _, s, _, _ in path))
    return best


def ref_valid_piece(symbols: list[str], split_by_whitespace=True, treat_whitespace_as_suffix=False,
                    allow_whitespace_only_pieces=False, split_by_number=True, split_by_unicode_script=True,
                    split_digits=False, script_of=None, forbidden=frozenset()) -> bool:
    """SentencePiece's piece rules on a list of characters; ``script_of(c)`` gives a script name, ``"INHERITED"``
    or ``None`` (any)."""
    if not symbols:
        return False
    all_ws = all(c == "\u2581" for c in symbols)
    prev = None
    for pos, c in enumerate(symbols):
        if c in forbidden:
            return False
        if c == "\u2581":
            if not allow_whitespace_only_pieces or not all_ws:
                last = len(symbols) - 1
                if treat_whitespace_as_suffix:
                    if (split_by_whitespace and pos < last) or (not split_by_whitespace and pos < last and pos == 0):
                        return False
                elif (split_by_whitespace and pos > 0) or (not split_by_whitespace and 0 < pos == last):
                    return False
            continue
        script = script_of(c)
        if script == "INHERITED":
            script = prev
        digit = c in "0123456789" or "\uff10" <= c <= "\uff19"
        if not split_by_number and digit:
            script = None
        if split_digits and digit and len(symbols) > 1:
            return False
        if split_by_unicode_script and script is not None and prev is not None and prev != script:
            return False
        prev = script
    return True


def ref_pruning_losses(order, freq, status, alt_offsets, alt_ids, sentence_total, total, log_total) -> list:
    """Twin of ``pruning_losses``: the loss per position of ``order``, None where the kernel writes NaN."""
    out = []
    for i, k in enumerate(order):
        f = float(freq[k])
        if f == 0.0 or status[i] != 2:
            out.append(None)
            continue
        alternatives = list(alt_ids[alt_offsets[i]:alt_offsets[i + 1]])
        logsum_alt = math.log(total + f * (len(alternatives) - 1))
        logprob_alt = 0.0
        for a in alternatives:
            logprob_alt += math.log((float(freq[a]) if a >= 0 else 0.0) + f) - logsum_alt
        out.append((f / sentence_total) * ((math.log(f) - log_total) - logprob_alt))
    return out


def ref_digamma(x: float) -> float:
    """Twin of :func:`tokenizer.kernels.unigram_train.digamma`: digamma by recurrence to x >= 7 and the asymptotic
    series, as SentencePiece computes it (the same float operations in the same order)."""
    result = 0.0
    while x < 7:
        result -= 1 / x
        x += 1
    x -= 0.5
    xx = 1.0 / x
    xx2 = xx * xx
    xx4 = xx2 * xx2
    return result + math.log(x) + xx2 / 24 - 7 * xx4 / 960 + 31 * xx4 * xx2 / 8064 - 127 * xx4 * xx4 / 30720


def ref_positions_by_symbol(text, first_symbol: int, group_sizes: list[int]) -> list[int]:
    """Twin of ``positions_by_symbol``: positions sorted by (symbol, position), for the symbols ``first_symbol +
    g`` whose group ``g`` has room, the first ``group_sizes[g]`` of each."""
    out = []
    for group, room in enumerate(group_sizes):
        out += [p for p in range(len(text)) if int(text[p]) == first_symbol + group][:room]
    return out
