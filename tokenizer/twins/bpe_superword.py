"""Twin of :mod:`tokenizer.kernels.bpe_superword`: what its ids are defined as, the coarse ``superword`` split
(:func:`tokenizer.twins.pretokenize.ref_superword_chunks`) and merge replay
(:func:`tokenizer.twins.bpe.ref_ranked_bpe`) on each chunk.

    >>> ref_superword_bpe({(1, 0): (2, 0), (0, 2): (3, 1)}, [0, 1], bytes([0, 1, 0]))  # 1+0, then 0+2
    [3]
"""

from __future__ import annotations

from tokenizer.twins.bpe import ref_ranked_bpe
from tokenizer.twins.pretokenize import ref_superword_chunks


def ref_superword_bpe(merges: dict[tuple[int, int], tuple[int, int]], byte_to_id, data: bytes) -> list[int]:
    """Ids of ``data`` for a superword model's merges ``{(left id, right id): (merged id, rank)}``."""
    return [i for chunk in ref_superword_chunks(data) for i in ref_ranked_bpe(merges, byte_to_id, chunk)]
