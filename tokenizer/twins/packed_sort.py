"""The twin of :mod:`tokenizer.kernels.packed_sort`: Python's stable sort with the strings as keys."""

from __future__ import annotations


def ref_argsort_spans(data: bytes, starts: list[int], ends: list[int]) -> list[int]:
    """Indices of the strings ``data[starts[i]:ends[i]]`` in bytes order, equal strings by index:
    ``ref_argsort_spans(b"bab", [0, 1], [1, 3])`` -> ``[1, 0]``."""
    items = [bytes(data[a:b]) for a, b in zip(starts, ends)]
    return sorted(range(len(items)), key=items.__getitem__)


def ref_gather_distinct(data: bytes, starts: list[int], ends: list[int], counts: list[int]) -> dict[bytes, int]:
    """Each distinct string of the spans with its summed count, in bytes order:
    ``ref_gather_distinct(b"aab", [0, 1, 2], [1, 2, 3], [1, 2, 5])`` -> ``{b"a": 3, b"b": 5}``."""
    summed: dict[bytes, int] = {}
    for a, b, count in zip(starts, ends, counts):
        summed[bytes(data[a:b])] = summed.get(bytes(data[a:b]), 0) + count
    return dict(sorted(summed.items()))


def ref_strictly_increasing(data: bytes, starts: list[int], ends: list[int]) -> bool:
    """``ref_strictly_increasing(b"ab", [0, 1], [1, 2])`` -> True; ``[1, 0], [2, 1]`` -> False."""
    items = [bytes(data[a:b]) for a, b in zip(starts, ends)]
    return all(a < b for a, b in zip(items, items[1:]))
