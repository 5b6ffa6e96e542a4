"""The one strict UTF-8 decoder of the kernels: the character at a position of a uint8 array.

Strict means what Python's ``bytes.decode("utf-8")`` accepts (the well-formed sequences of the Unicode standard,
table 3-7): a lead byte ``C2..F4`` followed by the right number of continuation bytes ``80..BF``, with the second
byte narrowed after ``E0`` (``A0..BF``, no overlong 3-byte form), ``ED`` (``80..9F``, no surrogate), ``F0``
(``90..BF``, no overlong 4-byte form) and ``F4`` (``80..8F``, nothing past U+10FFFF). Anything else -- a stray
continuation byte, ``C0``, ``C1``, ``F5..FF``, a bad continuation, or a sequence cut off by ``end`` -- is an
invalid byte: a one-byte "character" with code point -1, so a text of any bytes splits into characters losslessly.

Example (hand-checkable): in ``b"a\\xc3\\xa9\\xe4\\xb8"`` (``end = 5``) position 0 is ``(0x61, 1)``; position 1 is
``é``, ``(0xE9, 2)`` (``(0xC3 & 0x1F) << 6 | (0xA9 & 0x3F) = 0xC0 | 0x29``); position 3 starts a 3-byte form that
``end`` cuts off, ``(-1, 1)``, and so is position 4, a lone continuation byte.

Kernels only: arrays and scalars in, scalars out, no allocation. Their twin in the tests is Python's strict codec.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel


@kernel
def decode_char(data, pos, end):
    """``(code point, byte length)`` of the UTF-8 character at ``data[pos]`` (``data``: uint8, ``pos < end <=
    len(data)``); ``(-1, 1)`` for an invalid byte (see the module docstring). Both are int64.
    ``b"\\xe4\\xb8\\xad"`` -> ``(0x4E2D, 3)``; ``b"\\xe4a"`` -> ``(-1, 1)``; ``b"\\xed\\xa0\\x80"`` (a surrogate)
    -> ``(-1, 1)``."""
    b0 = np.int64(data[pos])
    if b0 < 0x80:
        return b0, np.int64(1)
    lo = 0x80
    hi = 0xBF
    if 0xC2 <= b0 <= 0xDF:
        need = 1
        cp = b0 & 0x1F
    elif b0 == 0xE0:
        need = 2
        lo = 0xA0
        cp = b0 & 0x0F
    elif b0 == 0xED:
        need = 2
        hi = 0x9F
        cp = b0 & 0x0F
    elif 0xE1 <= b0 <= 0xEF:
        need = 2
        cp = b0 & 0x0F
    elif b0 == 0xF0:
        need = 3
        lo = 0x90
        cp = b0 & 0x07
    elif 0xF1 <= b0 <= 0xF3:
        need = 3
        cp = b0 & 0x07
    elif b0 == 0xF4:
        need = 3
        hi = 0x8F
        cp = b0 & 0x07
    else:
        return np.int64(-1), np.int64(1)
    if pos + need >= end:
        return np.int64(-1), np.int64(1)
    b1 = np.int64(data[pos + 1])
    if b1 < lo or b1 > hi:
        return np.int64(-1), np.int64(1)
    cp = (cp << 6) | (b1 & 0x3F)
    for k in range(2, need + 1):
        bk = np.int64(data[pos + k])
        if bk < 0x80 or bk > 0xBF:
            return np.int64(-1), np.int64(1)
        cp = (cp << 6) | (bk & 0x3F)
    return cp, np.int64(need + 1)


@kernel
def char_length(data, pos, end):
    """Byte length (1-4) of the UTF-8 character at ``data[pos]``, 1 for an invalid byte: the length
    :func:`decode_char` gives. ``b"\\xe4\\xb8\\xad"`` -> 3, ``b"\\xe4a"`` -> 1."""
    return decode_char(data, pos, end)[1]


@kernel
def valid_char_length(data, pos, end):
    """Byte length (1-4) of the valid UTF-8 character at ``data[pos]``, or 0 when the byte there starts none (what
    SentencePiece's normalizer asks: its ``DecodeUTF8`` reports such a byte as invalid, and it writes U+FFFD).
    Same rules as :func:`decode_char`. ``b"\\xc3\\xa9"`` -> 2; ``b"\\xc3"`` alone -> 0."""
    cp, length = decode_char(data, pos, end)
    return length if cp >= 0 else np.int64(0)
