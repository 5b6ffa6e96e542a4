"""A double array over characters: one array read per input *character* where pieces start and end at characters.

A unigram model that is not in byte mode segments text at character boundaries, so its lattice may walk a trie
whose labels are characters rather than bytes: one step where a 3-byte CJK character takes three
(``benchmarks/encode.py``). Characters become small *char ids* (``0 .. alphabet - 1``, the characters of more
keys first) through a two-level table, ``pages`` (int32, one entry per 256 code points: the block of that page,
0 for a page no key uses) and ``blocks`` (int32, 256 per block; block 0 is all -1)::

    char_id = blocks[pages[cp >> 8] * 256 + (cp & 255)]        # -1: a character in no key

An invalid byte ``b`` (a one-byte character of :mod:`tokenizer.kernels.utf8`) has the code point ``0xDC00 + b``,
as Python's ``surrogateescape`` spells it (no valid character is a surrogate): a key of any bytes splits into the
characters that text holding it splits into, wherever the walk can end at a character boundary of the text.

``units``: the layout of :mod:`tokenizer.kernels.double_array` with a 21-bit tag, int64::

    bits 0..20  tag: the char id leading to this node, or CHAR_NOT_A_TARGET (2**21 - 1)
    bit  21     HAS_VALUE;  bit 22  IS_LEAF;  bits 23..  payload (base, or a leaf's value)

Example (hand-checkable)::

    >>> trie = CharTrie.build(["中".encode(), "中国".encode(), b"a"], [5, 6, 7])
    >>> data = np.frombuffer("中国a".encode(), dtype=np.uint8)
    >>> ids = np.empty(3, np.int32)
    >>> char_ids_into(trie.pages, trie.blocks, data, 0, 7, ids, 0), ids.tolist()  # 中 is in two keys; a < 国
    (3, [0, 2, 1])
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.double_array import placed_units
from tokenizer.kernels.utf8 import decode_char

CHAR_TAG_BITS = 21
CHAR_TAG_MASK = (1 << CHAR_TAG_BITS) - 1
CHAR_NOT_A_TARGET = CHAR_TAG_MASK
CHAR_HAS_VALUE = 1 << CHAR_TAG_BITS
CHAR_IS_LEAF = 1 << (CHAR_TAG_BITS + 1)
CHAR_PAYLOAD_SHIFT = CHAR_TAG_BITS + 2
CHAR_LAYOUT = (CHAR_NOT_A_TARGET, CHAR_HAS_VALUE, CHAR_IS_LEAF, CHAR_PAYLOAD_SHIFT)
INVALID_BYTE_BASE = 0xDC00  # the code point of invalid byte b is INVALID_BYTE_BASE + b (Python's surrogateescape)
PAGES = 0x110000 >> 8


def key_code_points(key: bytes) -> list[int]:
    """The code points of ``key``'s characters as text splits them (an invalid byte ``b`` -> ``0xDC00 + b``).
    ``"中".encode() + b"\\xff"`` -> ``[0x4E2D, 0xDCFF]``."""
    return [ord(ch) for ch in key.decode("utf-8", "surrogateescape")]


@kernel(inline="always")
def char_id(pages, blocks, data, p, end):
    """``(char id, byte length)`` of the character at ``data[p]`` (``p < end``); the id is -1 for a character in no
    key. Tables as the module docstring says."""
    cp, length = decode_char(data, p, end)
    if cp < 0:
        cp = INVALID_BYTE_BASE + np.int64(data[p])
    return blocks[np.int64(pages[cp >> 8]) * 256 + (cp & 255)], length


@kernel
def char_ids_into(pages, blocks, data, start, end, out, pos):
    """Write the char id of each character of ``data[start:end]`` at ``out[pos:]`` (int32, room for ``end - start``);
    returns how many characters there are."""
    j = pos
    p = start
    while p < end:
        c, length = char_id(pages, blocks, data, p, end)
        out[j] = c
        j += 1
        p += length
    return j - pos


@dataclass
class CharTrie:
    """A built character double array: ``units`` int64, ``pages`` and ``blocks`` int32 (module docstring)."""

    units: np.ndarray
    pages: np.ndarray
    blocks: np.ndarray

    @classmethod
    def build(cls, keys: list[bytes], values: list[int] | np.ndarray, *, reverse: bool = False) -> "CharTrie":
        """Build from byte-string keys (non-empty, distinct) and their int32 values (>= 0); with ``reverse``, the
        units hold each key's characters last to first (char ids as without)."""
        values = np.ascontiguousarray(values, dtype=np.int32)
        if values.shape != (len(keys),):
            raise ValueError(f"{len(keys)} keys but {values.shape[0]} values: pass one value per key")
        code_points = [key_code_points(k) for k in keys]
        holders = Counter(cp for cps in code_points for cp in set(cps))
        order = sorted(holders, key=lambda cp: (-holders[cp], cp))
        id_of = {cp: i for i, cp in enumerate(order)}
        pages = np.zeros(PAGES, np.int32)
        used_pages = sorted({cp >> 8 for cp in order})
        pages[used_pages] = np.arange(1, len(used_pages) + 1, dtype=np.int32)
        blocks = np.full(256 * (len(used_pages) + 1), -1, np.int32)
        for cp, i in id_of.items():
            blocks[pages[cp >> 8] * 256 + (cp & 255)] = i
        char_keys = [tuple(id_of[cp] for cp in (cps[::-1] if reverse else cps)) for cps in code_points]
        labels = np.fromiter((i for key in char_keys for i in key), dtype=np.int32,
                             count=sum(len(key) for key in char_keys))
        offsets = np.zeros(len(keys) + 1, np.int64)
        np.cumsum([len(key) for key in char_keys], out=offsets[1:])
        units = placed_units(char_keys, labels, offsets, values, max(len(order), 1), CHAR_LAYOUT, wide=True)
        return cls(units, pages, blocks)
