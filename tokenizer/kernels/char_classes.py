r"""The character classes of the regex pre-splits (gpt2, llama3 in :mod:`tokenizer.kernels.pretokenize`, superword in
:mod:`tokenizer.kernels.superword_split`): the ids a ``char_class`` table (uint8 per code point:
:func:`tokenizer.kernels.pretokenize.char_class_table`) holds, and the class of the character at a position.

Example (hand-checkable): with ``char_class[0x61] == LETTER``, ``class_at(char_class, b"a", 0, 1)`` -> ``(LETTER,
1)``; at the end, ``class_at(char_class, b"a", 1, 1)`` -> ``(-1, 0)``; the invalid byte ``0xff`` -> ``(OTHER, 1)``.
``whitespace_run(char_class, b" \n x", 0, 4)`` -> ``(3, 2, 1)``; ``class_run(char_class, b"ab1", 0, 3, LETTER)``
-> 2; ``numbers_up_to_three(char_class, b"12345", 0, 5)`` -> 3.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.utf8 import decode_char

OTHER, LETTER, NUMBER, SPACE = 0, 1, 2, 3


@kernel(inline="always")
def class_at(char_class, data, pos, end):
    """``(class, byte length)`` of the character at ``pos``; ``(-1, 0)`` at the end; a byte that starts no valid
    UTF-8 character is one ``OTHER`` character of its own length (:func:`tokenizer.kernels.utf8.decode_char`)."""
    if pos >= end:
        return -1, 0
    cp, length = decode_char(data, pos, end)
    if cp < 0:
        return OTHER, length
    return np.int64(char_class[cp]), length


@kernel(inline="always")
def whitespace_run(char_class, data, pos, end):
    r"""``(stop, last, last_newline)`` of the run of whitespace characters from ``pos``: where it ends, where its
    last character starts (``pos`` for an empty run) and where its last ``\r`` or ``\n`` is (-1 for none): what
    ``\s*[\r\n]+`` (up to ``last_newline + 1``) and ``\s+(?!\S)`` (up to ``last``, or ``stop`` at the end)
    match at ``pos``."""
    stop = pos
    last = pos
    last_newline = -1
    while stop < end:
        next_class, width = class_at(char_class, data, stop, end)
        if next_class != SPACE:
            break
        if data[stop] == 13 or data[stop] == 10:
            last_newline = stop
        last = stop
        stop += width
    return stop, last, last_newline


@kernel(inline="always")
def class_run(char_class, data, pos, end, wanted):
    """End of the run of characters of class ``wanted`` starting at ``pos`` (ASCII bytes looked up directly: most
    runs are ASCII, and a byte < 0x80 is its own code point)."""
    while pos < end:
        byte = data[pos]
        if byte < 0x80:
            if char_class[byte] != wanted:
                break
            pos += 1
            continue
        klass, length = class_at(char_class, data, pos, end)
        if klass != wanted:
            break
        pos += length
    return pos


@kernel(inline="always")
def numbers_up_to_three(char_class, data, pos, end):
    r"""End of ``\p{N}{1,3}`` at ``pos``: up to three NUMBER characters (``pos`` itself when there is none)."""
    for _ in range(3):
        klass, width = class_at(char_class, data, pos, end)
        if klass != NUMBER:
            break
        pos += width
    return pos
