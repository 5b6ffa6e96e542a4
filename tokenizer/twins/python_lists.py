"""Twin of :mod:`tokenizer.kernels.python_lists`: the lists built with Python slicing.

    >>> ref_build_id_lists([5, 6, 7], [0, 2, 2, 3], list(range(8)))
    [[5, 6], [], [7]]
"""

from __future__ import annotations


def ref_build_id_lists(ids, offsets, objects: list) -> list[list]:
    """Twin of :func:`tokenizer.kernels.python_lists.build_id_lists`, on the objects themselves instead of their
    addresses: ``[objects[i] for i in ids[offsets[k]:offsets[k + 1]]]`` for each ``k``."""
    ids, offsets = [int(i) for i in ids], [int(o) for o in offsets]
    return [[objects[i] for i in ids[a:b]] for a, b in zip(offsets, offsets[1:])]
