"""Twin of :mod:`tokenizer.kernels.claims`: the claims word as a pair of Python ints, one thread.

    >>> offsets = [1024 * k for k in range(11)]
    >>> ref_next_claim((0, 10), offsets, 0)
    (4, (4, 10))
    >>> ref_steal_documents((4, 10), offsets, 1024)
    ((7, 10), (4, 7))
"""

from __future__ import annotations

CLAIM_BYTES = 4096


def ref_next_claim(word: tuple[int, int], offsets, first: int):
    """``(end, new word)`` as :func:`tokenizer.kernels.claims.next_claim` returns and leaves them."""
    claimed, limit = word
    if first < claimed:
        return claimed, word
    if first >= limit:
        return first, word
    end = first + 1
    while end < limit and offsets[end] - offsets[first] < CLAIM_BYTES:
        end += 1
    return end, (end, limit)


def ref_steal_documents(word: tuple[int, int], offsets, least_bytes: int):
    """``((begin, end), new word)`` as :func:`tokenizer.kernels.claims.steal_documents`: the documents from the
    first that starts at or past the middle byte of the unclaimed ones (never the first of them, never past the
    last)."""
    claimed, limit = word
    if limit - claimed < 2 or offsets[limit] - offsets[claimed] < 2 * least_bytes:
        return (0, 0), word
    middle = offsets[claimed] + (offsets[limit] - offsets[claimed]) // 2
    begin = next((d for d in range(claimed + 1, limit) if offsets[d] >= middle), limit - 1)
    return (begin, limit), (claimed, begin)
