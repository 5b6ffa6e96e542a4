"""Pure-Python twins of :mod:`tokenizer.kernels.chunk_count` (recount with ``dict``s and ``bytes.split``; slow,
for tests).

    >>> ref_count_chunk_table([ref_split_before(b"a b a", b" "), ref_split_before(b" b", b" ")])
    ([b'a', b' b', b' a'], [1, 2, 1])
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


def ref_count_chunk_table(chunks_per_document: list[list[bytes]]) -> tuple[list[bytes], list[int]]:
    """Twin of ``count_chunk_table`` once the documents are split: distinct chunks in order of first occurrence
    and their counts."""
    counts: dict[bytes, int] = {}
    for chunks in chunks_per_document:
        for chunk in chunks:
            counts[chunk] = counts.get(chunk, 0) + 1
    return list(counts), list(counts.values())


def ref_split_before(document: bytes, delimiter: bytes | None) -> list[bytes]:
    """Twin of ``split_before_end`` over a whole document: a chunk starts at the start and before each
    ``delimiter`` (``None``: the document is one chunk); no empty chunks.
    ``ref_split_before(b"a b  c", b" ")`` -> ``[b"a", b" b", b" ", b" c"]``."""
    if not document:
        return []
    if delimiter is None:
        return [document]
    parts = document.split(delimiter)
    return ([parts[0]] if parts[0] else []) + [delimiter + p for p in parts[1:]]

