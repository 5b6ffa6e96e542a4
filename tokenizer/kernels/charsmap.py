"""Numba kernels that look characters up for SentencePiece's normalizer: the longest precompiled-charsmap key and the
longest user-defined symbol at a position, and the tables of characters and ASCII pairs the charsmap leaves
unchanged (the normalizer's fast paths). Characters are decoded by :mod:`tokenizer.kernels.utf8`.

The precompiled charsmap is a Darts-clone double array (``trie``: uint32 units) whose leaf values index a blob of
NUL-terminated replacement strings; the user-defined symbols are a small trie given as CSR arrays (see
:mod:`tokenizer.kernels.normalize`). Pure-Python twins: :mod:`tokenizer.twins.charsmap`.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel


@kernel(inline="always")
def charsmap_longest_match(trie, text, position, end):
    """Longest key of the Darts-clone double array ``trie`` (uint32) that prefixes ``text[position:end]``.

    Returns ``(length, value)``; ``(0, 0)`` when no key matches. Walks the array as Darts-clone's
    ``commonPrefixSearch`` does: ``node ^= offset(unit)``, ``node ^= byte``, check ``label``, note leaves.
    """
    size = trie.shape[0]
    best_length = 0
    best_value = 0
    if size == 0:
        return best_length, best_value
    unit = np.int64(trie[0])
    node = (unit >> 10) << ((unit & 0x200) >> 6)
    for i in range(position, end):
        byte = np.int64(text[i])
        node ^= byte
        if node >= size:
            break
        unit = np.int64(trie[node])
        if (unit & 0x800000FF) != byte:
            break
        node ^= (unit >> 10) << ((unit & 0x200) >> 6)
        if (unit >> 8) & 1:
            if node >= size:
                break
            best_length = i + 1 - position
            best_value = np.int64(trie[node]) & 0x7FFFFFFF
    return best_length, best_value


@kernel(inline="always")
def user_symbol_longest_match(edge_start, edge_label, edge_target, terminal, text, position, end):
    """Length of the longest user-defined symbol (trie in CSR form, see the module docstring) that prefixes
    ``text[position:end]``; 0 when none does."""
    node = 0
    best = 0
    for i in range(position, end):
        byte = text[i]
        nxt = -1
        for e in range(edge_start[node], edge_start[node + 1]):
            if edge_label[e] == byte:
                nxt = edge_target[e]
                break
        if nxt < 0:
            break
        node = nxt
        if terminal[node]:
            best = i + 1 - position
    return best


@kernel
def build_plain_char_table(trie, table):
    """Fill ``table`` (uint8, shape ``(0x10000,)``) with 1 for each BMP code point the charsmap cannot touch: the
    double-array walk over its UTF-8 bytes fails before their end without passing a leaf, so no key starts with it
    and the normalizer copies it. 0 marks code points that need the full walk (and the surrogates, never valid).
    Example: with an empty ``trie`` every entry but the surrogates is 1."""
    encoded = np.zeros(4, dtype=np.uint8)
    for cp in range(0x10000):
        if 0xD800 <= cp < 0xE000:
            table[cp] = 0
            continue
        if cp < 0x80:
            encoded[0] = cp
            length = 1
        elif cp < 0x800:
            encoded[0] = 0xC0 | (cp >> 6)
            encoded[1] = 0x80 | (cp & 0x3F)
            length = 2
        else:
            encoded[0] = 0xE0 | (cp >> 12)
            encoded[1] = 0x80 | ((cp >> 6) & 0x3F)
            encoded[2] = 0x80 | (cp & 0x3F)
            length = 3
        table[cp] = 1
        size = trie.shape[0]
        if size == 0:
            continue
        unit = np.int64(trie[0])
        node = (unit >> 10) << ((unit & 0x200) >> 6)
        matched = 0
        for i in range(length):
            byte = np.int64(encoded[i])
            node ^= byte
            if node >= size:
                break
            unit = np.int64(trie[node])
            if (unit & 0x800000FF) != byte:
                break
            node ^= (unit >> 10) << ((unit & 0x200) >> 6)
            matched += 1
            if (unit >> 8) & 1:
                table[cp] = 0
                break
        if matched == length:
            table[cp] = 0


@kernel
def build_ascii_pair_table(trie, table):
    """Fill ``table`` (uint8, shape ``(128 * 128,)``): entry ``b0 * 128 + b1`` is 1 when, for the ASCII bytes
    ``b0`` then ``b1``, the charsmap has no key starting at ``b0`` (no leaf after ``b0`` and the walk dies at
    ``b1``), so ``b0`` is copied. Letters that start some key (e.g. "e" before a combining accent) usually take this
    shortcut. Example: with an empty ``trie`` every entry is 1."""
    size = trie.shape[0]
    for b0 in range(128):
        for b1 in range(128):
            index = b0 * 128 + b1
            table[index] = 1
            if size == 0:
                continue
            unit = np.int64(trie[0])
            node = (unit >> 10) << ((unit & 0x200) >> 6)
            node ^= b0
            if node >= size:
                continue
            unit = np.int64(trie[node])
            if (unit & 0x800000FF) != b0:
                continue
            node ^= (unit >> 10) << ((unit & 0x200) >> 6)
            if (unit >> 8) & 1:
                table[index] = 0
                continue
            node ^= b1
            if node >= size:
                continue
            unit = np.int64(trie[node])
            if (unit & 0x800000FF) == b1:
                table[index] = 0
