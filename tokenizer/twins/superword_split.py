"""Pure-Python twin of :mod:`tokenizer.kernels.superword_split`: the coarse pattern read alternative by alternative
over a list of characters, trying a match at every position as a regex search does (slow, for tests).

    >>> ref_superword_chunks(b"Hi there, 12345 ok...\\n")
    [b'Hi there, ', b'123', b'45', b' ok', b'...\\n']
"""

from __future__ import annotations

from tokenizer.kernels.pretokenize import NUMBER, OTHER, SPACE
from tokenizer.twins.pretokenize import _chars


def _match(chars: list[tuple[bytes, int]], i: int, pattern: str) -> int:
    """Index after the pattern's match at character ``i``, or -1 (alternatives in the pattern's order)."""
    n = len(chars)
    kind = lambda k: chars[k][1] if k < n else None  # noqa: E731
    if kind(i) == NUMBER:  # \p{N}{1,3}
        j = i
        while j < n and j - i < 3 and kind(j) == NUMBER:
            j += 1
        return j
    for start in ([i + 1, i] if chars[i][0] == b" " else [i]):  # ' ?[^\s\p{L}\p{N}]{2,}[\r\n/]*'
        j = start
        while j < n and kind(j) == OTHER:
            j += 1
        if j - start >= 2:
            while j < n and chars[j][0] in (b"\r", b"\n", b"/"):
                j += 1
            return j
    if pattern == "superbpe":  # ' +(?!\S)', longest first
        j = i
        while j < n and chars[j][0] == b" ":
            j += 1
        for stop in range(j, i, -1):
            if stop == n or kind(stop) == SPACE:
                return stop
        return -1
    j = i  # \s*[\r\n]+ : the longest whitespace run that ends with a line break
    best = -1
    while j < n and kind(j) == SPACE:
        j += 1
        if chars[j - 1][0] in (b"\r", b"\n"):
            best = j
    if best >= 0:
        return best
    for stop in range(j, i, -1):  # \s+(?!\S), longest first
        if stop == n or kind(stop) == SPACE:
            return stop
    return -1


def ref_superword_chunks(data: bytes, pattern: str = "superword") -> list[bytes]:
    """Split ``data`` with the coarse pattern (``"superword"`` or ``"superbpe"``), matches and the stretches
    between them alike; ``b"".join(result) == data``."""
    chars = _chars(bytes(data))
    out, i, gap = [], 0, 0
    while i < len(chars):
        j = _match(chars, i, pattern)
        if j < 0:
            i += 1
            continue
        if gap < i:
            out.append(b"".join(c for c, _ in chars[gap:i]))
        out.append(b"".join(c for c, _ in chars[i:j]))
        i = gap = j
    if gap < len(chars):
        out.append(b"".join(c for c, _ in chars[gap:]))
    return out
