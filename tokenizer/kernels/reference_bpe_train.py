"""Pure-Python twins of :mod:`tokenizer.kernels.bpe_train` (recount everything at every step; slow, for tests).

    >>> ref_learn_merges([[0, 1, 0, 1], [0, 1]], [1, 2], [1, 1], 5, 1, 99)
    [(0, 1, 4), (2, 2, 1)]
"""

from __future__ import annotations


def ref_count_spans(spans: list[bytes], weights: list[int]) -> tuple[list[int], list[int]]:
    """``(first occurrence index, summed weight)`` of each distinct span, in order of first occurrence."""
    first: dict[bytes, int] = {}
    counts: dict[bytes, int] = {}
    for i, (span, weight) in enumerate(zip(spans, weights)):
        first.setdefault(span, i)
        counts[span] = counts.get(span, 0) + weight
    return list(first.values()), [counts[s] for s in first]


def ref_learn_merges(words: list[list[int]], counts: list[int], symbol_lengths: list[int], max_merges: int,
                     min_count: int, max_piece_length: int) -> list[tuple[int, int, int]]:
    """Merges ``(left, right, count)``: the most frequent adjacent pair (ties: smallest ``(left, right)``) whose
    merged length is at most ``max_piece_length``, replaced left to right without overlaps, until ``max_merges``
    or the best count is below ``min_count``."""
    words = [list(w) for w in words]
    lengths = list(symbol_lengths)
    merges = []
    while len(merges) < max_merges:
        pairs: dict[tuple[int, int], int] = {}
        for word, count in zip(words, counts):
            for left, right in zip(word, word[1:]):
                if lengths[left] + lengths[right] <= max_piece_length:
                    pairs[(left, right)] = pairs.get((left, right), 0) + count
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        if pairs[best] < min_count:
            break
        new_id = len(lengths)
        lengths.append(lengths[best[0]] + lengths[best[1]])
        merges.append((best[0], best[1], pairs[best]))
        for k, word in enumerate(words):
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(new_id)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            words[k] = out
    return merges
