"""Slow, obviously-correct Python twin of :mod:`tokenizer.kernels.ngram_count` (for tests only): BytePiece's dict
counting of every byte n-gram.

    >>> sorted(ref_count_ngrams([b"aab"], 2).items())
    [(b'a', 2), (b'aa', 1), (b'ab', 1), (b'b', 1)]
"""

from __future__ import annotations


def ref_count_ngrams(chunks: list[bytes], order: int) -> dict[bytes, int]:
    """Every byte n-gram of length 1..order inside each chunk, counted."""
    counts: dict[bytes, int] = {}
    for chunk in chunks:
        for i in range(len(chunk)):
            for n in range(1, order + 1):
                if i + n <= len(chunk):
                    gram = chunk[i:i + n]
                    counts[gram] = counts.get(gram, 0) + 1
    return counts



def ref_sort_keys(keys: list[int]) -> list[int]:
    """Non-negative int64 keys in increasing order."""
    return sorted(keys)
