"""Twins of :mod:`tokenizer.kernels.char_trie`: text split into characters by Python's strict codec, char ids from
a plain ``dict``, and a reader of the character units spelled out field by field.

    >>> ref_characters(b"a\\xe4\\xb8\\xad\\xff")
    [b'a', b'\\xe4\\xb8\\xad', b'\\xff']
    >>> [hex(ref_code_point(c)) for c in ref_characters(b"a\\xe4\\xb8\\xad\\xff")]
    ['0x61', '0x4e2d', '0xdcff']
"""

from __future__ import annotations

from tokenizer.twins.utf8 import ref_char_length


def ref_characters(data: bytes) -> list[bytes]:
    """``data`` split into its characters (an invalid byte is a character of its own)."""
    chars, p = [], 0
    while p < len(data):
        n = ref_char_length(data, p)
        chars.append(data[p:p + n])
        p += n
    return chars


def ref_code_point(char: bytes) -> int:
    """The code point of one character of :func:`ref_characters`; ``0xDC00 + byte`` for an invalid byte."""
    try:
        return ord(char.decode("utf-8"))
    except UnicodeDecodeError:
        return 0xDC00 + char[0]


def ref_char_id_table(keys: list[bytes]) -> dict[int, int]:
    """Code point -> char id: the characters held by more keys first, then by code point."""
    holders: dict[int, int] = {}
    for key in keys:
        for cp in {ref_code_point(c) for c in ref_characters(key)}:
            holders[cp] = holders.get(cp, 0) + 1
    return {cp: i for i, cp in enumerate(sorted(holders, key=lambda cp: (-holders[cp], cp)))}


def ref_char_ids(keys: list[bytes], data: bytes) -> list[int]:
    """Twin of :func:`tokenizer.kernels.char_trie.char_ids_into`: the char id of each character, -1 if in no key."""
    table = ref_char_id_table(keys)
    return [table.get(ref_code_point(c), -1) for c in ref_characters(data)]


def ref_char_units_prefixes(units, ids: list[int], start: int) -> list[tuple[int, int]]:
    """Every ``(value, characters)`` of a key prefixing the char ids ``ids[start:]``, read from the units with their
    layout spelled out: tag bits 0..20 (2**21 - 1: no node), HAS_VALUE bit 21, IS_LEAF bit 22, payload from 23."""
    found = []
    node = int(units[0])
    for k in range(start, len(ids)):
        if node >> 22 & 1 or ids[k] < 0:
            break
        child = int(units[(node >> 23) + 1 + ids[k]])
        if child & (2 ** 21 - 1) != ids[k]:
            break
        node = child
        if child >> 21 & 1:
            value = child >> 23 if child >> 22 & 1 else int(units[child >> 23]) >> 23
            found.append((value, k - start + 1))
    return found
