"""Pure-Python twins of :mod:`tokenizer.kernels.batch`'s segmenting: where an entry cuts a document into the
segments it encodes one at a time, written from their definitions (slow, for tests).

    >>> ref_longest_segment([b"ab\\n\\ncd"], lines=True)
    4
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


def ref_longest_segment(documents: list[bytes], pattern: str | None = None, words: bool = False,
                        lines: bool = False, whole_up_to: int = 0) -> int:
    """Twin of :func:`tokenizer.kernels.batch.longest_segment`: the longest regex pre-token (``pattern``
    ``"gpt2"``/``"llama3"``), word (``words``) or line with its newlines (``lines``, BytePiece's chunks
    ``[^\\n]*\\n+|[^\\n]+``) of the documents over ``whole_up_to`` bytes; other documents, or no cutting, count
    whole."""
    longest = 0
    for document in documents:
        if len(document) <= whole_up_to or (pattern is None and not words and not lines):
            parts = [document]
        elif pattern is not None:
            parts = ref_pretokenize(document, pattern)
        elif words:
            parts = _words(document)
        else:
            parts = re.findall(rb"[^\n]*\n+|[^\n]+", document)
        assert b"".join(parts) == document
        longest = max([longest] + [len(part) for part in parts])
    return longest
