"""Regex pre-split of UTF-8 text into pre-tokens, hand-written for the GPT-2 and Llama-3 (cl100k-style) patterns
(and, through :mod:`tokenizer.kernels.pretokenize_o200k`, tiktoken's o200k pattern).

Byte-level BPE tokenizers first cut text with a regular expression, then run BPE inside each piece. These kernels
reproduce two such patterns exactly (leftmost alternative wins, as in a backtracking regex engine) without a regex
engine::

    gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
    llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*
            |\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+

Characters are classified by ``char_class`` (uint8, one entry per code point, built by :func:`char_class_table`
from :mod:`unicodedata`): ``OTHER`` 0, ``LETTER`` 1 (categories L*), ``NUMBER`` 2 (N*), ``SPACE`` 3 (the Unicode
``White_Space`` property, what ``\\s`` means in Unicode regex engines). A byte that does not start a valid UTF-8
sequence counts as a one-byte ``OTHER`` character, so any bytes split losslessly: the pre-tokens always tile the
input.

Example (hand-checkable), gpt2: ``b"I'm  ok!!\\n"`` -> ``["I", "'m", " ", " ok", "!!", "\\n"]``: ``'m`` is a
contraction; of the two spaces before ``ok`` the first is ``\\s+(?!\\S)`` and the second goes with ``ok``; ``!!`` is
a run of other characters; the final newline is a whitespace run at the end of the text.
"""

from __future__ import annotations

import functools
import hashlib
import os
import unicodedata

import numpy as np

from tokenizer.kernels import KERNELS_DIRECTORY, kernel
from tokenizer.kernels.char_classes import (LETTER, NUMBER, OTHER, SPACE, class_at, class_run,
                                            numbers_up_to_three, whitespace_run)
from tokenizer.kernels.pretokenize_o200k import O200K_CLASSES, o200k_class_of, o200k_classified, o200k_pretoken_end
from tokenizer.kernels.superword_split import PATTERN_SUPERBPE, PATTERN_SUPERWORD, superword_chunk_end
from tokenizer.kernels.utf8 import decode_char

PATTERN_GPT2 = 1
PATTERN_LLAMA3 = 2
PATTERN_O200K = 8  # tiktoken's o200k pattern (tokenizer.kernels.pretokenize_o200k); 3..6 are chunk_count's modes
PATTERNS = {"gpt2": PATTERN_GPT2, "llama3": PATTERN_LLAMA3, "o200k": PATTERN_O200K,
            # superword BPE's coarse splits (tokenizer.kernels.superword_split)
            "superword": PATTERN_SUPERWORD, "superbpe": PATTERN_SUPERBPE}
# The Unicode White_Space property (stable since Unicode 6.3); Python's str.isspace() differs (it includes
# U+001C..U+001F and excludes nothing else), so it is listed here.
WHITE_SPACE = (list(range(0x09, 0x0E)) + [0x20, 0x85, 0xA0, 0x1680] + list(range(0x2000, 0x200B))
               + [0x2028, 0x2029, 0x202F, 0x205F, 0x3000])


@functools.lru_cache(maxsize=1)
def char_class_table() -> np.ndarray:
    """uint8 array of shape ``(2 * 0x110000,)``: the class of every code point (see the module docstring), then
    from ``O200K_CLASSES`` on the o200k classes (:mod:`tokenizer.kernels.pretokenize_o200k`).

    Classified from :mod:`unicodedata` (planes 0-3 and 14; the rest hold no letters or numbers) once per Unicode
    version: the table is kept beside the compiled kernels with its SHA-256 (:func:`_stored_table`), so a process
    loads it instead of asking :mod:`unicodedata` about 270,000 code points. ``char_class_table()[ord("a")] ==
    LETTER``.
    """
    path = os.path.join(KERNELS_DIRECTORY, "__pycache__",
                        f"char-and-o200k-classes-unicode-{unicodedata.unidata_version}.npy")
    table = _stored_table(path)
    if table is None:
        table = _classified()
        _store_table(path, table)
    table.flags.writeable = False
    return table


def _classified() -> np.ndarray:
    """The table of :func:`char_class_table`, classified code point by code point."""
    table = np.zeros(0x110000, dtype=np.uint8)
    category = unicodedata.category
    for low, high in ((0, 0x40000), (0xE0000, 0xE1000)):
        for cp in range(low, high):
            major = category(chr(cp))[0]
            if major == "L":
                table[cp] = LETTER
            elif major == "N":
                table[cp] = NUMBER
    table[WHITE_SPACE] = SPACE
    return np.concatenate([table, o200k_classified(WHITE_SPACE)])


def _stored_table(path: str) -> np.ndarray | None:
    """The table kept at ``path`` (its bytes, then their SHA-256), or ``None`` when there is none, it is damaged
    or it disagrees with :mod:`unicodedata` on a few code points (then it is classified again)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    body, digest = data[:2 * 0x110000], data[2 * 0x110000:]
    if len(body) != 2 * 0x110000 or hashlib.sha256(body).digest() != digest:
        return None
    table = np.frombuffer(body, dtype=np.uint8).copy()
    probes = {ord("a"): LETTER, 0x4E00: LETTER, ord("7"): NUMBER, 0xBD: NUMBER, 0x20: SPACE, 0x3000: SPACE,
              ord("!"): OTHER}
    probes.update({O200K_CLASSES + cp: o200k_class_of(chr(cp), cp in WHITE_SPACE) for cp in (0x41, 0x61, 0x301, 0x0A)})
    return table if all(table[cp] == kind for cp, kind in probes.items()) else None


def _store_table(path: str, table: np.ndarray) -> None:
    """Keep ``table`` at ``path`` for the next processes (best effort: an unwritable place only costs them the
    classification)."""
    from tokenizer.errors import OutputWriteError
    from tokenizer.files import write_atomic

    body = table.tobytes()
    try:
        write_atomic(path, body + hashlib.sha256(body).digest(), what="character class table")
    except OutputWriteError:
        pass


@kernel(inline="always")
def _run_not(char_class, data, pos, end, llama3):
    """End of the run of characters that are neither letters, numbers nor whitespace."""
    pos = class_run(char_class, data, pos, end, OTHER)
    if llama3:
        while pos < end and (data[pos] == 13 or data[pos] == 10):
            pos += 1
    return pos


@kernel
def _lower(byte):
    if 65 <= byte <= 90:
        return byte + 32
    return byte


@kernel
def _contraction(data, pos, end, ignore_case):
    """Length of ``'s|'t|'re|'ve|'m|'ll|'d`` at ``pos`` (0 if none); with ``ignore_case`` (``(?i:...)``, as the
    regex engines fold case) ``ſ`` (U+017F) counts as ``s``: ``b"'\xc5\xbfx"`` -> 3."""
    if data[pos] != 39 or pos + 1 >= end:
        return 0
    c1 = data[pos + 1]
    if ignore_case:
        c1 = _lower(c1)
        if c1 == 0xC5 and pos + 2 < end and data[pos + 2] == 0xBF:  # U+017F, long s
            return 3
    if c1 == 115 or c1 == 116 or c1 == 109 or c1 == 100:  # s t m d
        return 2
    if pos + 2 < end:
        c2 = data[pos + 2]
        if ignore_case:
            c2 = _lower(c2)
        if (c1 == 114 and c2 == 101) or (c1 == 118 and c2 == 101) or (c1 == 108 and c2 == 108):  # re ve ll
            return 3
    return 0


@kernel(inline="always")
def _whitespace(char_class, data, pos, end):
    """``\\s+(?!\\S)|\\s+`` at ``pos`` (a whitespace character): all of the run if it reaches the end of the text or
    is one character long, else the run minus its last character."""
    stop = pos
    last = pos
    while stop < end:
        klass, length = class_at(char_class, data, stop, end)
        if klass != SPACE:
            break
        last = stop
        stop += length
    if stop >= end or last == pos:
        return stop
    return last


@kernel(inline="always")
def next_pretoken_end(char_class, pattern, data, pos, end):
    """End (exclusive) of the pre-token that starts at ``data[pos]`` (``pos < end``), for ``pattern``
    ``PATTERN_GPT2``, ``PATTERN_LLAMA3``, ``PATTERN_O200K``, ``PATTERN_SUPERWORD`` or ``PATTERN_SUPERBPE``.
    ``char_class`` is :func:`char_class_table`."""
    if pattern == PATTERN_O200K:
        return o200k_pretoken_end(char_class, data, pos, end)
    if pattern >= PATTERN_SUPERWORD:
        return superword_chunk_end(char_class, data, pos, end, pattern)
    llama3 = pattern == PATTERN_LLAMA3
    length = _contraction(data, pos, end, llama3)
    if length:
        return pos + length
    klass, width = class_at(char_class, data, pos, end)
    if not llama3:
        # ' ?\p{L}+ | ' ?\p{N}+ | ' ?[^\s\p{L}\p{N}]+'
        start = pos
        if data[pos] == 32 and pos + 1 < end:
            next_class, _ = class_at(char_class, data, pos + 1, end)
            if next_class != SPACE:
                start = pos + 1
                klass = next_class
        if klass == LETTER:
            return class_run(char_class, data, start, end, LETTER)
        if klass == NUMBER:
            return class_run(char_class, data, start, end, NUMBER)
        if klass == OTHER:
            return _run_not(char_class, data, start, end, False)
        return _whitespace(char_class, data, pos, end)
    # llama3: [^\r\n\p{L}\p{N}]?\p{L}+
    if klass == LETTER:
        return class_run(char_class, data, pos, end, LETTER)
    if klass != NUMBER and data[pos] != 13 and data[pos] != 10 and pos + width < end:
        next_class, _ = class_at(char_class, data, pos + width, end)
        if next_class == LETTER:
            return class_run(char_class, data, pos + width, end, LETTER)
    if klass == NUMBER:
        return numbers_up_to_three(char_class, data, pos, end)
    # ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    start = pos
    if data[pos] == 32 and pos + 1 < end:
        next_class, _ = class_at(char_class, data, pos + 1, end)
        if next_class == OTHER:
            start = pos + 1
            klass = OTHER
    if klass == OTHER:
        return _run_not(char_class, data, start, end, True)
    # \s*[\r\n]+ : the whitespace run up to and including its last \r or \n (backtracking \s* gives up the rest)
    _, _, last_newline = whitespace_run(char_class, data, pos, end)
    if last_newline >= 0:
        return last_newline + 1
    return _whitespace(char_class, data, pos, end)


@kernel
def pretokenize_into(char_class, pattern, data, start, end, out_ends, count):
    """Write the end offset of every pre-token of ``data[start:end]`` to ``out_ends[count:]`` (int64, room for
    ``end - start`` entries); returns the new count. Example (gpt2): ``b"a b"`` -> ends ``[1, 3]``."""
    pos = start
    while pos < end:
        pos = next_pretoken_end(char_class, pattern, data, pos, end)
        out_ends[count] = pos
        count += 1
    return count


@kernel
def pretokenize_batch(char_class, pattern, data, offsets, out_ends, out_doc_counts):
    """Pre-tokens of every document ``data[offsets[i]:offsets[i + 1]]``: ends into ``out_ends`` (int64, room for
    ``offsets[-1] - offsets[0]``), number per document into ``out_doc_counts`` (int64, ``len(offsets) - 1``);
    returns the total. A pre-token never spans two documents."""
    count = 0
    for i in range(offsets.shape[0] - 1):
        before = count
        count = pretokenize_into(char_class, pattern, data, offsets[i], offsets[i + 1], out_ends, count)
        out_doc_counts[i] = count - before
    return count


# ---------------------------------------------------------------------------------------------- SentencePiece style
# SentencePiece-style chunks are cut from text whose spaces are already escaped to U+2581 (see escape_spaces_packed).
# ``script`` is an int16 table with one entry per code point: the character's script as SentencePiece's trainer
# compares it (Hiragana and Katakana count as Han, unknown as Common), or SCRIPT_ANY for characters that take their
# neighbour's script (Inherited). It is built by tokenizer.trainers.bpe.sentencepiece_script_table().
SCRIPT_ANY = -1


@kernel
def escape_spaces_packed(data, offsets, out, out_offsets):
    """Copy ``data[offsets[0]:offsets[-1]]`` into ``out`` with every space (0x20) replaced by U+2581 (``e2 96 81``),
    writing the shifted document offsets (starting at 0) into ``out_offsets``. ``out`` (uint8) needs room for the
    text plus two bytes per space; returns the number of bytes written. ``b"a b"`` -> ``b"a\\xe2\\x96\\x81b"``."""
    w = 0
    out_offsets[0] = 0
    for d in range(offsets.shape[0] - 1):
        for i in range(offsets[d], offsets[d + 1]):
            byte = data[i]
            if byte == 0x20:
                out[w] = 0xE2
                out[w + 1] = 0x96
                out[w + 2] = 0x81
                w += 3
            else:
                out[w] = byte
                w += 1
        out_offsets[d + 1] = w
    return w


@kernel
def is_space_symbol(data, pos, end):
    """True when ``data[pos:pos + 3]`` is U+2581 (the escaped space)."""
    return pos + 2 < end and data[pos] == 0xE2 and data[pos + 1] == 0x96 and data[pos + 2] == 0x81


@kernel
def _sentencepiece_unit(script, data, pos, end):
    """``(kind, script, length)`` of the character at ``pos``: kind 0 an ordinary character (the tab too, as in
    sentencepiece 0.2), 1 the space symbol, 2 a newline, 4 a byte that is not a character of its own here (invalid
    UTF-8 or NUL)."""
    if is_space_symbol(data, pos, end):
        return 1, SCRIPT_ANY, 3
    byte = data[pos]
    if byte == 0x0A:
        return 2, SCRIPT_ANY, 1
    if byte == 0:
        return 4, SCRIPT_ANY, 1
    cp, length = decode_char(data, pos, end)
    if cp < 0:
        return 4, SCRIPT_ANY, 1
    return 0, np.int64(script[cp]), length


@kernel
def sentencepiece_chunk_end(script, data, pos, end):
    """End (exclusive) of the SentencePiece-style chunk at ``data[pos]`` (escaped text, ``pos < end``).

    SentencePiece's ``SplitIntoWords`` (allow_whitespace_only_pieces): a word is a run of space symbols plus the
    non-space characters after it (``"▁▁ab▁c"`` -> ``"▁▁ab"``, ``"▁c"``). Within a word no piece may join two
    characters of different scripts, so the word is cut there too, where both characters have a script
    (``"ab,"`` -> ``"ab"``, ``","``) — this changes no merge, only what is counted together. Runs of newlines
    are chunks of their own, and so is each invalid UTF-8 byte or NUL byte; a tab is an ordinary character of the
    Common script. Example: ``"a▁▁bc\\n\\nd"`` -> ``"a"``, ``"▁▁bc"``, ``"\\n\\n"``, ``"d"``.
    """
    kind, klass, length = _sentencepiece_unit(script, data, pos, end)
    if kind == 2:
        stop = pos + 1
        while stop < end and data[stop] == data[pos]:
            stop += 1
        return stop
    if kind == 4:
        return pos + 1
    stop = pos
    if kind == 1:
        while stop < end and is_space_symbol(data, stop, end):
            stop += 3
        if stop >= end:
            return stop
        kind, klass, length = _sentencepiece_unit(script, data, stop, end)
        if kind != 0:
            return stop
    previous = klass
    stop += length
    while stop < end:
        kind, klass, length = _sentencepiece_unit(script, data, stop, end)
        if kind != 0:
            break
        if klass != SCRIPT_ANY and previous != SCRIPT_ANY and klass != previous:
            break
        previous = klass
        stop += length
    return stop


@kernel
def sentencepiece_batch(script, data, offsets, out_ends, out_doc_counts):
    """``pretokenize_batch`` for SentencePiece-style chunks (``sentencepiece_chunk_end``) of escaped text."""
    count = 0
    for i in range(offsets.shape[0] - 1):
        before = count
        pos = offsets[i]
        while pos < offsets[i + 1]:
            pos = sentencepiece_chunk_end(script, data, pos, offsets[i + 1])
            out_ends[count] = pos
            count += 1
        out_doc_counts[i] = count - before
    return count
