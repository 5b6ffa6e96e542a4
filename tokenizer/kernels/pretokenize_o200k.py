"""Regex pre-split of UTF-8 text for tiktoken's o200k pattern (o200k_base), hand-written, without a regex engine.

The pattern, as ``tiktoken_ext/openai_public.py`` joins it (seven alternatives, one a line, the leftmost
that matches wins)::

    [^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+
        (?i:'s|'t|'re|'ve|'m|'ll|'d)?
    [^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*
        (?i:'s|'t|'re|'ve|'m|'ll|'d)?
    \\p{N}{1,3}
     ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*
    \\s*[\\r\\n]+
    \\s+(?!\\S)
    \\s+

Call the first letter class ``U`` (upper: Lu Lt Lm Lo M) and the second ``W`` (lower: Ll Lm Lo M). Lm, Lo and the
marks are in both, and a mark is no letter, so it is also in the optional first class ``P`` = ``[^\\r\\n\\p{L}\\p{N}]``.
A backtracking engine gives, from a start ``s`` (after an optional ``P`` character, tried first, then without it):

- alternative 1 (``U*W+``): let ``r`` be the end of the run of ``U`` characters from ``s``. If the character at
  ``r`` is in ``W``, the match is the run plus the run of ``W`` characters from ``r``; else it ends after the last
  character of the run that is also in ``W`` (``U*`` gives back only down to there); with none, it fails;
- alternative 2 (``U+W*``), tried only when alternative 1 failed both with and without ``P``: the run itself (the
  ``W*`` after it is empty then, or alternative 1 would have matched);
- either is followed by an optional contraction, ASCII case-insensitive, where ``s`` also matches ``ſ`` (U+017F,
  whose simple case folding is ``s``).

The rest is as in the Llama-3 pattern, except that ``[\\r\\n/]*`` after a run of other characters also takes ``/``.
Every character is classified once by the o200k half of :func:`tokenizer.kernels.pretokenize.char_class_table`
(entries ``O200K_CLASSES + code point``): a sum of the bits below (:func:`o200k_class_of`). A byte that does not
start a valid UTF-8 sequence is a one-byte character of class 0 (in ``P``, not a letter), so the pre-tokens tile any
bytes. Each character is read a bounded number of times: a pre-token costs a pass over the runs it looks at, and a
run that one pre-token looks at past its own end is taken whole by the next (linear in the text).

Example (hand-checkable): ``"HelloWORLD'LL ABCdef x/\\n/y"`` -> ``["Hello", "WORLD'LL", " ABCdef", " x",
"/\\n/", "y"]``: ``WORLD`` has no lower-case letter, so alternative 2 takes it with its contraction; in ``ABCdef``
the upper-case run is followed by a lower-case one (alternative 1); the ``/`` run takes the newline and the
second ``/``.
"""

from __future__ import annotations

import unicodedata

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.utf8 import decode_char

#: where the o200k classes start in the character class table (one entry per code point after the first half)
O200K_CLASSES = 0x110000
#: class bits: in U, in W, a letter (\p{L}), a number (\p{N}), whitespace (\s), \r or \n; AT_END past the text
UPPER, LOWER, LETTER, NUMBER, SPACE, NEWLINE, AT_END = 1, 2, 4, 8, 16, 32, 64
_CATEGORY_CLASS = {"Lu": UPPER | LETTER, "Lt": UPPER | LETTER, "Ll": LOWER | LETTER,
                   "Lm": UPPER | LOWER | LETTER, "Lo": UPPER | LOWER | LETTER,
                   "Mn": UPPER | LOWER, "Mc": UPPER | LOWER, "Me": UPPER | LOWER,
                   "Nd": NUMBER, "Nl": NUMBER, "No": NUMBER}
_NOT_P = LETTER | NUMBER | NEWLINE | AT_END  # [^\r\n\p{L}\p{N}]
_NOT_Q = LETTER | NUMBER | SPACE | AT_END  # [^\s\p{L}\p{N}]


def o200k_class_of(char: str, white_space: bool) -> int:
    """The o200k class bits of one character (``white_space``: it has the Unicode White_Space property).
    ``o200k_class_of("a", False) == LOWER | LETTER``; a combining acute accent is ``UPPER | LOWER``."""
    kind = _CATEGORY_CLASS.get(unicodedata.category(char), 0)
    if white_space:
        kind |= SPACE | (NEWLINE if char in "\r\n" else 0)
    return kind


def o200k_classified(white_space) -> np.ndarray:
    """uint8 array of shape ``(0x110000,)``: :func:`o200k_class_of` of every code point (planes 0-3 and 14; the
    rest hold no letters, marks or numbers); ``white_space`` lists the White_Space code points."""
    table = np.zeros(0x110000, dtype=np.uint8)
    for low, high in ((0, 0x40000), (0xE0000, 0xE1000)):
        for cp in range(low, high):
            table[cp] = _CATEGORY_CLASS.get(unicodedata.category(chr(cp)), 0)
    for cp in white_space:
        table[cp] = o200k_class_of(chr(cp), True)
    return table


@kernel(inline="always")
def _class_at(char_class, data, pos, end):
    """``(o200k class, byte length)`` of the character at ``pos``; ``(AT_END, 0)`` at the end."""
    if pos >= end:
        return np.int64(AT_END), np.int64(0)
    byte = data[pos]
    if byte < 0x80:
        return np.int64(char_class[O200K_CLASSES + np.int64(byte)]), np.int64(1)
    cp, length = decode_char(data, pos, end)
    if cp < 0:
        return np.int64(0), length
    return np.int64(char_class[O200K_CLASSES + cp]), length


@kernel(inline="always")
def _run(char_class, data, pos, end, bits):
    """End of the run of characters from ``pos`` whose class has one of ``bits``."""
    while True:
        klass, width = _class_at(char_class, data, pos, end)
        if not klass & bits:
            return pos
        pos += width


@kernel(inline="always")
def _cased_word(char_class, data, start, end):
    """``(end of alternative 1, end of alternative 2)`` from ``start`` without their contraction, -1 where one fails
    (the end of alternative 2 is only meaningful when alternative 1 fails): see the module docstring."""
    pos = start
    last_lower = -1
    while True:
        klass, width = _class_at(char_class, data, pos, end)
        if not klass & UPPER:
            break
        pos += width
        if klass & LOWER:
            last_lower = pos
    if klass & LOWER:
        return _run(char_class, data, pos + width, end, LOWER), pos
    return last_lower, (pos if pos > start else -1)


@kernel(inline="always")
def _lower_ascii(byte):
    return byte + 32 if 65 <= byte <= 90 else byte


@kernel(inline="always")
def _with_contraction(data, pos, end):
    """``pos`` plus the length of ``(?i:'s|'t|'re|'ve|'m|'ll|'d)`` at ``pos`` (``ſ`` counts as ``s``)."""
    if pos + 1 >= end or data[pos] != 39:
        return pos
    c1 = _lower_ascii(data[pos + 1])
    if c1 == 115 or c1 == 116 or c1 == 109 or c1 == 100:  # s t m d
        return pos + 2
    if c1 == 0xC5 and pos + 2 < end and data[pos + 2] == 0xBF:  # U+017F, long s
        return pos + 3
    if pos + 2 < end:
        c2 = _lower_ascii(data[pos + 2])
        if (c1 == 114 and c2 == 101) or (c1 == 118 and c2 == 101) or (c1 == 108 and c2 == 108):  # re ve ll
            return pos + 3
    return pos


@kernel
def o200k_pretoken_end(char_class, data, pos, end):
    """End (exclusive) of the o200k pre-token that starts at ``data[pos]`` (``pos < end``); ``char_class`` is
    :func:`tokenizer.kernels.pretokenize.char_class_table`. ``b"ABCdef"`` from 0 -> 6; ``b"WORLD'LL x"`` -> 8."""
    klass, width = _class_at(char_class, data, pos, end)
    in_p = not klass & _NOT_P
    cased = klass & (UPPER | LOWER)
    if in_p or cased:
        after_p = -1
        if in_p:
            stop, after_p = _cased_word(char_class, data, pos + width, end)
            if stop >= 0:
                return _with_contraction(data, stop, end)
        without_p = -1
        if cased:
            stop, without_p = _cased_word(char_class, data, pos, end)
            if stop >= 0:
                return _with_contraction(data, stop, end)
        if after_p >= 0:
            return _with_contraction(data, after_p, end)
        if without_p >= 0:
            return _with_contraction(data, without_p, end)
    if klass & NUMBER:  # \p{N}{1,3}
        stop = pos + width
        for _ in range(2):
            next_class, next_width = _class_at(char_class, data, stop, end)
            if not next_class & NUMBER:
                break
            stop += next_width
        return stop
    start = pos  # ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
    if data[pos] == 32:
        next_class, _ = _class_at(char_class, data, pos + 1, end)
        if not next_class & _NOT_Q:
            start = pos + 1
            klass = next_class
    if not klass & _NOT_Q:
        stop = start
        while True:
            next_class, next_width = _class_at(char_class, data, stop, end)
            if next_class & _NOT_Q:
                break
            stop += next_width
        while stop < end and (data[stop] == 13 or data[stop] == 10 or data[stop] == 47):
            stop += 1
        return stop
    # whitespace: \s*[\r\n]+ takes the run up to its last \r or \n; else \s+(?!\S) all of it but its last
    # character (unless it ends the text or is one character long), else \s+
    stop = pos
    last = pos
    after_newline = -1
    while True:
        next_class, next_width = _class_at(char_class, data, stop, end)
        if not next_class & SPACE:
            break
        if next_class & NEWLINE:
            after_newline = stop + 1
        last = stop
        stop += next_width
    if after_newline >= 0:
        return after_newline
    if stop >= end or last == pos:
        return stop
    return last
