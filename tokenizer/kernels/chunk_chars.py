"""Numba kernels over the characters of chunks: weighted character counts (the trainers' character coverage) and chunks
rewritten as symbol ids (BPE's initial symbols). Their pure-Python twins are in
:mod:`tokenizer.twins.chunk_chars`.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.utf8 import decode_char


@kernel
def weighted_char_counts(data, offsets, weights, out):
    """Add ``weights[i]`` to ``out[cp]`` for every character ``cp`` of span ``data[offsets[i]:offsets[i + 1]]``
    (``out`` int64 of 0x110000); returns the summed weight of invalid UTF-8 bytes (not counted in ``out``).
    ``b"aba"`` with weight 2 -> ``out[97] += 4``, ``out[98] += 2``."""
    invalid = np.int64(0)
    for i in range(offsets.shape[0] - 1):
        pos = offsets[i]
        end = offsets[i + 1]
        w = weights[i]
        while pos < end:
            cp, length = decode_char(data, pos, end)
            if cp < 0:
                invalid += w
            else:
                out[cp] += w
            pos += length
    return invalid


@kernel
def chars_to_symbols(data, offsets, char_symbol):
    """Rewrite spans of UTF-8 bytes as symbol ids: a character with ``char_symbol[cp] >= 0`` becomes that id, any
    other byte stays its own id (0-255). Returns ``(symbols int32, symbol offsets int64)`` per span.
    With ``char_symbol[0xE9] = 300``: ``b"\xc3\xa9t"`` -> ``[300, 116]``."""
    symbols = np.empty(offsets[-1] - offsets[0], np.int32)
    out_offsets = np.zeros(offsets.shape[0], np.int64)
    w = 0
    for i in range(offsets.shape[0] - 1):
        pos = offsets[i]
        end = offsets[i + 1]
        while pos < end:
            cp, length = decode_char(data, pos, end)
            if cp >= 0 and char_symbol[cp] >= 0:
                symbols[w] = char_symbol[cp]
                pos += length
            else:
                symbols[w] = data[pos]
                pos += 1
            w += 1
        out_offsets[i + 1] = w
    return symbols[:w].copy(), out_offsets
