"""Twins of :mod:`tokenizer.kernels.double_array`: common-prefix search over a plain ``dict``, and a reader of the
compact units spelled out field by field.

    >>> ref_common_prefix_search({b"a": 7, b"ab": 8, b"b": 9}, b"abc", 0)
    [(7, 1), (8, 2)]
"""

from __future__ import annotations

def ref_common_prefix_search(pieces: dict[bytes, int], data: bytes, start: int) -> list[tuple[int, int]]:
    """Every ``(id, length)`` with ``data[start:start+length]`` a key of ``pieces``, shortest first."""
    return [(pieces[data[start:end]], end - start) for end in range(start + 1, len(data) + 1)
            if data[start:end] in pieces]


def ref_units_prefixes(units, data: bytes, start: int) -> list[tuple[int, int]]:
    """Twin of :func:`tokenizer.kernels.double_array.common_prefix_search` that reads the compact units with the
    layout spelled out field by field (see that module): every ``(id, length)`` of a key prefixing ``data[start:]``.
    """
    found = []
    node = int(units[0])
    for k in range(start, len(data)):
        if node >> 10 & 1:                      # IS_LEAF: no children
            break
        base = node >> 11
        child = int(units[base + 1 + data[k]])
        if child & 0x1FF != data[k]:            # tag: the byte leading here (256 = no node)
            break
        node = child
        if child >> 9 & 1:                      # HAS_VALUE
            value = child >> 11 if child >> 10 & 1 else int(units[child >> 11]) >> 11
            found.append((value, k - start + 1))
    return found

