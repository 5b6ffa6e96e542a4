"""The coarse pre-split of superword BPE's second stage: pieces that keep the spaces between words inside them.

Superword BPE (SuperBPE, arXiv 2503.13423) first learns ordinary byte-level BPE merges inside regex pre-tokens, then
goes on merging inside coarser chunks, so that pieces may span several words (``" of the"``). The coarse split is a
regular expression whose matches are pieces and whose unmatched stretches between matches are pieces too (Hugging
Face ``Split`` with behavior ``Isolated``)::

    superword: \\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]{2,}[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)

(``superbpe``, the split of the published SuperBPE tokenizers, has ``' +(?!\\S)'`` for the last two alternatives:
only spaces, so its chunks may cross lines) so a chunk is a run of up to three digits, a run of two or more
punctuation characters (with the space before it and the newlines or slashes after it), whitespace that holds a line
break (up to its last one), whitespace before more whitespace or the end of the text, or everything between such
matches: words, the single spaces between them, single punctuation characters (``"the cat, the dog"`` is one
chunk). With ``superword`` line breaks always end a chunk, so no piece crosses a line.

Characters are classified by ``char_class`` (:func:`tokenizer.kernels.pretokenize.char_class_table`: 0 other, 1
letter, 2 number, 3 whitespace); a byte that does not start a valid UTF-8 character is one ``other`` character,
so the chunks tile any bytes. Each position is tried once and a failed try reads at most two characters (in an
unmatched stretch a punctuation character has no punctuation after it and whitespace is a single character), so
a text of n bytes splits in O(n).

Example (hand-checkable): ``b"Hi there, 12345 ok...\\n"`` -> ``["Hi there, ", "123", "45", " ok", "...\\n"]``.
"""

from __future__ import annotations

from tokenizer.kernels import kernel
from tokenizer.kernels.char_classes import (LETTER, NUMBER, OTHER, SPACE, class_at, class_run,
                                            numbers_up_to_three, whitespace_run)

#: the pattern id of the coarse split (``tokenizer.kernels.pretokenize.PATTERNS["superword"]``): far from the
#: other pre-split ids and from the chunk counter's other modes (``tokenizer.kernels.chunk_count``)
PATTERN_SUPERWORD = 16
PATTERN_SUPERBPE = 17  # the published SuperBPE tokenizers' split (pretokenize_patterns.PATTERN_TEXT["superbpe"])


@kernel
def superword_match_end(char_class, data, pos, end, pattern):
    """End of the coarse pattern's match at ``data[pos]`` (``pos < end``), or -1 when none of its alternatives
    matches there (``pattern``: :data:`PATTERN_SUPERWORD` or :data:`PATTERN_SUPERBPE`). Example: ``b"a b"`` at 0
    -> -1; ``b"!!x"`` at 0 -> 2."""
    klass, width = class_at(char_class, data, pos, end)
    if klass == NUMBER:
        return numbers_up_to_three(char_class, data, pos, end)
    # ' ?[^\s\p{L}\p{N}]{2,}[\r\n/]*'
    start, first_class, first_width = pos, klass, width
    if data[pos] == 32 and pos + 1 < end:
        start = pos + 1
        first_class, first_width = class_at(char_class, data, start, end)
    if first_class == OTHER and start + first_width < end:
        second_class, _ = class_at(char_class, data, start + first_width, end)
        if second_class == OTHER:
            stop = class_run(char_class, data, start + first_width, end, OTHER)
            while stop < end and (data[stop] == 13 or data[stop] == 10 or data[stop] == 47):
                stop += 1
            return stop
    if klass != SPACE:
        return -1
    if pattern == PATTERN_SUPERBPE:  # ' +(?!\S)': spaces only
        stop = pos
        while stop < end and data[stop] == 32:
            stop += 1
        if stop == pos:
            return -1
        if stop >= end:
            return stop
        next_class, _ = class_at(char_class, data, stop, end)
        if next_class == SPACE:
            return stop
        return stop - 1 if stop - 1 > pos else -1
    # \s*[\r\n]+ : the whitespace run up to its last line break; else \s+(?!\S)
    stop, last, last_newline = whitespace_run(char_class, data, pos, end)
    if last_newline >= 0:
        return last_newline + 1
    if stop >= end:
        return stop
    if last > pos:  # the run but its last character, which is whitespace: (?!\S) holds
        return last
    return -1


@kernel
def superword_chunk_end(char_class, data, pos, end, pattern):
    """End (exclusive) of the coarse chunk that starts at ``data[pos]`` (``pos < end``): the pattern's match there,
    else the stretch up to the next position where it matches (or ``end``). Example: ``b"a b!!"`` at 0 -> 3."""
    stop = superword_match_end(char_class, data, pos, end, pattern)
    if stop > pos:
        return stop
    _, width = class_at(char_class, data, pos, end)
    stop = pos + width
    while stop < end:
        byte = data[stop]
        if byte < 0x80 and char_class[byte] == LETTER:  # an ASCII letter starts no match: most of the text
            stop += 1
            continue
        if byte == 32 and stop + 1 < end and data[stop + 1] < 0x80 and char_class[data[stop + 1]] == LETTER:
            stop += 2  # a space before a letter starts none either, nor does the letter
            continue
        if superword_match_end(char_class, data, stop, end, pattern) >= 0:
            break
        _, width = class_at(char_class, data, stop, end)
        stop += width
    return stop
