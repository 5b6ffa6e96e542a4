"""Numba kernel of BytePiece training's chunking: texts cut into chunks of at most ``max_chars`` non-newline characters
plus the newlines after them, digits optionally chunks of their own (characters decoded by
:mod:`tokenizer.kernels.utf8`). Its slow, obviously-correct twin lives in :mod:`tokenizer.twins.bytepiece_chunk`;
hypothesis tests check that the two agree.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.utf8 import decode_char


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
            cp, width = decode_char(data, pos, end)
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
                cp, width = decode_char(data, q, end)
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
