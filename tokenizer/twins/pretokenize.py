"""Pure-Python twins of :mod:`tokenizer.kernels.pretokenize` (and of its superword split): the same patterns,
written as a direct reading of the regular expressions over a list of characters (slow, for tests).

    >>> ref_pretokenize(b"I'm  ok!!\\n", "gpt2")
    [b'I', b"'m", b' ', b' ok', b'!!', b'\\n']
"""

from __future__ import annotations

from tokenizer.kernels.pretokenize import LETTER, NUMBER, OTHER, SPACE, char_class_table
from tokenizer.twins.pretokenize_o200k import ref_pretokenize_o200k
from tokenizer.twins.utf8 import ref_utf8_chars


def _chars(data: bytes) -> list[tuple[bytes, int]]:
    """``[(character bytes, class)]``; an invalid UTF-8 byte is one OTHER character."""
    table = char_class_table()
    return [(piece, OTHER if char is None else int(table[ord(char)])) for piece, char in ref_utf8_chars(data)]


def ref_pretokenize(data: bytes, pattern: str = "gpt2") -> list[bytes]:
    """Split ``data`` with the ``"gpt2"``, ``"llama3"``, ``"o200k"``, ``"superword"`` or ``"superbpe"`` pattern;
    ``b"".join(result) == data``."""
    if pattern == "o200k":
        return ref_pretokenize_o200k(data)
    if pattern in ("superword", "superbpe"):
        return ref_superword_chunks(data, pattern)
    chars = _chars(bytes(data))
    n = len(chars)
    out: list[bytes] = []
    i = 0

    def klass(k: int) -> int | None:
        return chars[k][1] if k < n else None

    def char(k: int) -> bytes:
        return chars[k][0] if k < n else b""

    def run(k: int, wanted: set[int]) -> int:
        while k < n and chars[k][1] in wanted:
            k += 1
        return k

    def whitespace(k: int) -> int:  # \s+(?!\S)|\s+
        stop = run(k, {SPACE})
        if stop == n or stop - k == 1:
            return stop
        return stop - 1

    while i < n:
        llama3 = pattern == "llama3"
        rest = b"".join(c for c, _ in chars[i:i + 3])
        probe = rest.lower().replace("ſ".encode(), b"s") if llama3 else rest  # (?i): simple case folding, ſ -> s
        j = None
        for contraction in (b"'s", b"'t", b"'re", b"'ve", b"'m", b"'ll", b"'d"):
            if probe.startswith(contraction):
                j = i + len(contraction)
                break
        if j is None and not llama3:
            start = i + 1 if char(i) == b" " and klass(i + 1) not in (None, SPACE) else i
            if klass(start) == LETTER:
                j = run(start, {LETTER})
            elif klass(start) == NUMBER:
                j = run(start, {NUMBER})
            elif klass(start) == OTHER:
                j = run(start, {OTHER})
            else:
                j = whitespace(i)
        elif j is None:
            if klass(i) == LETTER:
                j = run(i, {LETTER})
            elif klass(i) != NUMBER and char(i) not in (b"\r", b"\n") and klass(i + 1) == LETTER:
                j = run(i + 1, {LETTER})
            elif klass(i) == NUMBER:
                j = i
                while j < n and j - i < 3 and klass(j) == NUMBER:
                    j += 1
            else:
                start = i + 1 if char(i) == b" " and klass(i + 1) == OTHER else i
                if klass(start) == OTHER:
                    j = run(start, {OTHER})
                    while j < n and char(j) in (b"\r", b"\n"):
                        j += 1
                else:
                    stop = run(i, {SPACE})
                    newlines = [k for k in range(i, stop) if char(k) in (b"\r", b"\n")]
                    j = newlines[-1] + 1 if newlines else whitespace(i)
        out.append(b"".join(c for c, _ in chars[i:j]))
        i = j
    return out


def ref_sentencepiece_chunks(text: bytes, script) -> list[bytes]:
    """Twin of ``sentencepiece_chunk_end`` applied from the start to the end of escaped ``text``: SentencePiece's
    words (a run of ``▁`` and the non-``▁`` characters after it), cut where two neighbouring characters both have a
    script and the scripts differ; newline runs, invalid bytes and NUL bytes alone (a tab is an ordinary character). ``script`` is
    indexable by code point (-1 = takes its neighbour's script)."""
    units = []  # (bytes, kind, script): kind 0 char, 1 space symbol, 2 newline, 4 lone byte
    pos = 0
    while pos < len(text):
        if text[pos:pos + 3] == "\u2581".encode():
            units.append((text[pos:pos + 3], 1, -1))
            pos += 3
            continue
        for length in (1, 2, 3, 4):
            try:
                char = text[pos:pos + length].decode("utf-8")
            except UnicodeDecodeError:
                continue
            if len(char) == 1:
                break
        else:
            units.append((text[pos:pos + 1], 4, -1))
            pos += 1
            continue
        kind = {"\n": 2, "\x00": 4}.get(char, 0)
        units.append((text[pos:pos + length], kind, int(script[ord(char)]) if kind == 0 else -1))
        pos += length
    chunks: list[list] = []
    for k, (piece, kind, klass) in enumerate(units):
        previous = units[k - 1] if k else None
        if previous is None:
            new = True
        elif kind == 2:
            new = previous[1] != kind or previous[0] != piece
        elif kind == 4 or previous[1] in (2, 4):
            new = True
        elif kind == 1:
            new = previous[1] != 1
        else:  # an ordinary character after a space symbol or another character
            new = previous[1] == 0 and klass != -1 and previous[2] != -1 and klass != previous[2]
        if new:
            chunks.append([])
        chunks[-1].append(piece)
    return [b"".join(c) for c in chunks]


# ---------------------------------------------------------------------------------------------- superword BPE
# Twin of tokenizer.kernels.superword_split (reached through next_pretoken_end): the coarse pattern read alternative
# by alternative, a match tried at every position as a regex search does.
def _superword_match(chars: list[tuple[bytes, int]], i: int, pattern: str) -> int:
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
        j = _superword_match(chars, i, pattern)
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
