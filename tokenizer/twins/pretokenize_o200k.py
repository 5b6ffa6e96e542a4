"""Pure-Python twin of :mod:`tokenizer.kernels.pretokenize_o200k`: tiktoken's o200k pattern run by a tiny
backtracking matcher over a list of characters (slow, for tests). Each alternative is written as the regex spells
it, a list of items; an item gives the positions where it may end, the one a backtracking engine tries first
first. Characters are classified with :mod:`unicodedata` directly.

    >>> ref_pretokenize_o200k("HelloWORLD'LL ABCdef x/\\n/y".encode())
    [b'Hello', b"WORLD'LL", b' ABCdef', b' x', b'/\\n/', b'y']
"""

from __future__ import annotations

import unicodedata

from tokenizer.kernels.pretokenize import WHITE_SPACE
from tokenizer.twins.utf8 import ref_utf8_chars

_WHITE_SPACE = {chr(cp) for cp in WHITE_SPACE}
_CONTRACTIONS = ("s", "t", "re", "ve", "m", "ll", "d")


def _chars(data: bytes) -> tuple[list[str | None], list[bytes]]:
    """The characters of ``data``, ``None`` for a byte that starts no valid UTF-8 sequence, and their bytes."""
    units = ref_utf8_chars(data)
    return [char for _, char in units], [piece for piece, _ in units]


def _category(char: str | None) -> str:
    return unicodedata.category(char) if char is not None else "Cn"


def _upper(c):  # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
    return _category(c) in ("Lu", "Lt", "Lm", "Lo") or _category(c)[0] == "M"


def _lower(c):  # [\p{Ll}\p{Lm}\p{Lo}\p{M}]
    return _category(c) in ("Ll", "Lm", "Lo") or _category(c)[0] == "M"


def _space(c):  # \s
    return c in _WHITE_SPACE


def _not_newline_letter_number(c):  # [^\r\n\p{L}\p{N}]
    return c not in ("\r", "\n") and _category(c)[0] not in "LN"


def _not_space_letter_number(c):  # [^\s\p{L}\p{N}]
    return not _space(c) and _category(c)[0] not in "LN"


def ref_pretokenize_o200k(data: bytes) -> list[bytes]:
    """Split ``data`` with the o200k pattern; ``b"".join(result) == data``."""
    chars, pieces = _chars(bytes(data))
    n = len(chars)

    def repeat(test, low, high):
        """``test{low,high}``, greedy: the longest run first, then shorter ones."""
        def ends(k):
            stop = k
            while stop < n and stop - k < high and test(chars[stop]):
                stop += 1
            return list(range(stop, k + low - 1, -1))
        return ends

    def literal(text):
        return lambda k: [k + len(text)] if "".join(c or "\0" for c in chars[k:k + len(text)]) == text else []

    def contraction(k):  # (?i:'s|'t|'re|'ve|'m|'ll|'d)? -- simple case folding: "ſ".casefold() == "s"
        for word in _CONTRACTIONS:
            got = chars[k:k + 1 + len(word)]
            if len(got) == 1 + len(word) and got[0] == "'" and all(
                    c is not None and c.casefold() == w for c, w in zip(got[1:], word)):
                return [k + 1 + len(word), k]
        return [k]

    def not_followed_by_non_space(k):  # (?!\S)
        return [k] if k == n or _space(chars[k]) else []

    def newline(c):
        return c in ("\r", "\n")

    def newline_or_slash(c):
        return c in ("\r", "\n", "/")

    def match(items, k):
        if not items:
            return k
        for stop in items[0](k):
            got = match(items[1:], stop)
            if got is not None:
                return got
        return None

    many = 1 << 62
    alternatives = [
        [repeat(_not_newline_letter_number, 0, 1), repeat(_upper, 0, many), repeat(_lower, 1, many), contraction],
        [repeat(_not_newline_letter_number, 0, 1), repeat(_upper, 1, many), repeat(_lower, 0, many), contraction],
        [repeat(lambda c: _category(c)[0] == "N", 1, 3)],
        [lambda k: [k + 1, k] if literal(" ")(k) else [k], repeat(_not_space_letter_number, 1, many),
         repeat(newline_or_slash, 0, many)],
        [repeat(_space, 0, many), repeat(newline, 1, many)],
        [repeat(_space, 1, many), not_followed_by_non_space],
        [repeat(_space, 1, many)],
    ]
    out, i = [], 0
    while i < n:
        j = next(stop for stop in (match(items, i) for items in alternatives) if stop is not None)
        out.append(b"".join(pieces[i:j]))
        i = j
    return out
