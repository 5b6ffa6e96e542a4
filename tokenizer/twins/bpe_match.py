"""Twins of :mod:`tokenizer.kernels.bpe_match`, by the definitions the kernels stand for: two pieces are compatible
when merge replay of their bytes together gives them back, and matching's ids are merge replay's ids."""

from __future__ import annotations

from tokenizer.twins.bpe import ref_ranked_bpe


def ref_compatible(merges: dict[tuple[int, int], tuple[int, int]], byte_to_id, pieces: list[bytes], a: int,
                   b: int) -> bool:
    """Twin of :func:`tokenizer.kernels.bpe_match.compatible`: merge replay of ``pieces[a] + pieces[b]`` gives
    ``[a, b]``. ``merges`` as :func:`tokenizer.twins.bpe.ref_ranked_bpe` takes them.

    >>> ref_compatible({(0, 1): (3, 0)}, [0, 1, 2], [b"\\x00", b"\\x01", b"\\x02", b"\\x00\\x01"], 0, 1)
    False
    """
    return ref_ranked_bpe(merges, byte_to_id, pieces[a] + pieces[b]) == [a, b]


def ref_matched_bpe(merges: dict[tuple[int, int], tuple[int, int]], byte_to_id, data: bytes) -> list[int]:
    """Twin of :func:`tokenizer.kernels.bpe_match.matched_bpe_into` (where it does not give way): merge replay's
    ids, :func:`tokenizer.twins.bpe.ref_ranked_bpe`.

    >>> ref_matched_bpe({(1, 2): (3, 0)}, [0, 1, 2], bytes([0, 1, 2]))
    [0, 3]
    """
    return ref_ranked_bpe(merges, byte_to_id, data)
