"""Pure-Python twins of :mod:`tokenizer.kernels.batch`'s segmenting: where an entry cuts a document into the
segments it encodes one at a time, written from their definitions (slow, for tests).

    >>> ref_segment_lengths(b"ab\\n\\ncd", lines=True)
    [4, 2]
"""

from __future__ import annotations

import re

from tokenizer.twins.pretokenize import ref_pretokenize

WORD_MARKER = "\u2581".encode()


def _words(document: bytes) -> list[bytes]:
    """Words as SentencePiece-style BPE cuts them: a new word at each "▁" that does not follow another "▁" of the
    same word (and not at the word's own start)."""
    words, start = [], 0
    while start < len(document):
        end = start + 1
        while True:
            end = document.find(WORD_MARKER, end)
            if end < 0:
                end = len(document)
                break
            if not (end - 3 >= start and document[end - 3:end] == WORD_MARKER):
                break
            end += 3
        words.append(document[start:end])
        start = end
    return words


def ref_segment_lengths(document: bytes, pattern: str | None = None, words: bool = False,
                        lines: bool = False) -> list[int]:
    """Twin of :func:`tokenizer.kernels.batch.segment_end` walked over a whole document: the lengths of its
    regex pre-tokens (``pattern`` ``"gpt2"``/``"llama3"``/``"o200k"``), words (``words``) or lines with their newlines
    (``lines``, BytePiece's chunks ``[^\n]*\n+|[^\n]+``); the document whole without any."""
    if pattern is not None:
        parts = ref_pretokenize(document, pattern)
    elif words:
        parts = _words(document)
    elif lines:
        parts = re.findall(rb"[^\n]*\n+|[^\n]+", document)
    else:
        parts = [document] if document else []
    assert b"".join(parts) == document
    return [len(part) for part in parts]
