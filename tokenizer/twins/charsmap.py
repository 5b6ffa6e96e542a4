"""Slow, obviously-correct Python twins of SentencePiece's charsmap kernels (:mod:`tokenizer.kernels.charsmap`), for
tests: the charsmap walked unit by unit. The normalizer's own twins are in :mod:`tokenizer.twins.normalize`, UTF-8
lengths in :mod:`tokenizer.twins.utf8`.

    >>> ref_charsmap_longest_match([], b"a", 0)   # an empty charsmap matches nothing
    (0, 0)
"""

from __future__ import annotations


def ref_charsmap_longest_match(trie: list[int], text: bytes, position: int) -> tuple[int, int]:
    """Twin of :func:`tokenizer.kernels.charsmap.charsmap_longest_match`: collects every match as Darts-clone does,
    keeps the longest."""
    if not trie:
        return 0, 0

    def offset(unit: int) -> int:
        return (unit >> 10) << ((unit & (1 << 9)) >> 6)

    matches = []
    node = offset(trie[0])
    for i in range(position, len(text)):
        node ^= text[i]
        if node >= len(trie) or (trie[node] & ((1 << 31) | 0xFF)) != text[i]:
            break
        unit = trie[node]
        node ^= offset(unit)
        if (unit >> 8) & 1:
            if node >= len(trie):
                break
            matches.append((i + 1 - position, trie[node] & ((1 << 31) - 1)))
    return max(matches) if matches else (0, 0)


def ref_plain_char(trie: list[int], cp: int) -> bool:
    """Twin of one entry of :func:`tokenizer.kernels.charsmap.build_plain_char_table`: the charsmap cannot touch
    ``chr(cp)`` when no key starts with it, i.e. the walk over its bytes ends early and no key is a prefix of it."""
    if 0xD800 <= cp < 0xE000:
        return False
    char = chr(cp).encode()
    if not trie:
        return True
    if ref_charsmap_longest_match(trie, char, 0)[0]:
        return False

    def offset(unit: int) -> int:
        return (unit >> 10) << ((unit & (1 << 9)) >> 6)

    node = offset(trie[0])
    for byte in char:
        node ^= byte
        if node >= len(trie) or (trie[node] & ((1 << 31) | 0xFF)) != byte:
            return True
        node ^= offset(trie[node])
    return False  # every byte matched: longer keys may start with this character


def ref_ascii_pair(trie: list[int], b0: int, b1: int) -> bool:
    """Twin of one entry of :func:`tokenizer.kernels.charsmap.build_ascii_pair_table`: no charsmap key starts with
    byte ``b0`` when ``b1`` follows it (no key equals ``b0`` or ``b0 b1``, and no longer key starts with ``b0 b1``)."""
    if not trie:
        return True
    pair = bytes([b0, b1])
    if ref_charsmap_longest_match(trie, pair, 0)[0]:
        return False

    def offset(unit: int) -> int:
        return (unit >> 10) << ((unit & (1 << 9)) >> 6)

    node = offset(trie[0])
    for byte in pair:
        node ^= byte
        if node >= len(trie) or (trie[node] & ((1 << 31) | 0xFF)) != byte:
            return True
        node ^= offset(trie[node])
    return False
