"""Numba kernel of BytePiece training's chunking: texts cut into chunks of at most ``max_chars`` non-newline characters
plus the newlines after them, digits optionally chunks of their own; and the UTF-8 decoder it reads characters with.
Its slow, obviously-correct twin lives in :mod:`tokenizer.twins.bytepiece_chunk`; hypothesis tests check that the
two agree.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel


@kernel
def _decode_char(data, i, end):
    """(code point, byte length) of the UTF-8 character at ``data[i]``; an invalid sequence is one byte, cp -1."""
    b0 = np.int64(data[i])
    if b0 < 0x80:
        return b0, 1
    if b0 < 0xC2:
        return -1, 1
    if b0 < 0xE0:
        n = 2
        cp = b0 & 0x1F
    elif b0 < 0xF0:
        n = 3
        cp = b0 & 0x0F
    elif b0 < 0xF5:
        n = 4
        cp = b0 & 0x07
    else:
        return -1, 1
    if i + n > end:
        return -1, 1
    for t in range(1, n):
        b = np.int64(data[i + t])
        if b < 0x80 or b > 0xBF:
            return -1, 1
        cp = (cp << 6) | (b & 0x3F)
    if (n == 3 and cp < 0x800) or (n == 4 and (cp < 0x10000 or cp > 0x10FFFF)) or (0xD800 <= cp < 0xE000):
        return -1, 1
    return cp, n


@kernel
def chunk_offsets_kernel(data, offsets, max_chars, max_newlines, isolate_digits, is_digit):
    """Split each text into BytePiece chunks; returns the chunk offsets (int64, shape ``(n_chunks + 1,)``).

    Per text, repeatedly from the current position (this is BytePiece's ``normalize`` regex
    ``\\d|[^\\n\\d]{,M}\\n{1,100}|[^\\n\\d]{1,M}`` with ``M = max_chars`` (``M <= 0``: no limit); without
    ``isolate_digits`` the digit alternative is absent and ``\\d`` reads as nothing):

    - a digit character (``is_digit[cp] == 1``, only with ``isolate_digits``) is a chunk of its own;
    - else let ``r`` be the number of characters before the next newline or digit (or the text end): if ``r <= M``
      and a newline follows, the chunk is those ``r`` characters plus up to ``max_newlines`` newlines; if
      ``r <= M`` otherwise, the ``r`` characters; if ``r > M``, the next ``M`` characters.

    Characters are UTF-8 code points; an invalid byte counts as one (non-digit) character. Empty texts give no
    chunk. Example: ``b"ab\\n\\ncd"`` with ``max_chars=10000`` -> chunks ``b"ab\\n\\n"``, ``b"cd"`` -> ``[0, 4, 6]``.
    """
    n_texts = len(offsets) - 1
    out = np.empty(len(data) + 1, dtype=np.int64)
    n_out = 0
    out[0] = offsets[0] if n_texts >= 0 else 0
    for d in range(n_texts):
        pos = offsets[d]
        end = offsets[d + 1]
        while pos < end:
            cp, width = _decode_char(data, pos, end)
            if isolate_digits and cp >= 0 and is_digit[cp] == 1:
                pos += width
                n_out += 1
                out[n_out] = pos
                continue
            # run of characters that are neither newline nor (isolated) digit, at most max_chars + 1 of them
            q = pos
            r = 0
            nxt = -2  # -2: text end; else the code point that stopped the run
            while q < end:
                cp, width = _decode_char(data, q, end)
                if cp == 10 or (isolate_digits and cp >= 0 and is_digit[cp] == 1):
                    nxt = cp
                    break
                if max_chars > 0 and r == max_chars:
                    nxt = -3  # run longer than max_chars
                    break
                r += 1
                q += width
            if nxt == 10:
                k = 0
                while q < end and data[q] == 10 and k < max_newlines:
                    q += 1
                    k += 1
            pos = q
            n_out += 1
            out[n_out] = pos
    return out[:n_out + 1].copy()
