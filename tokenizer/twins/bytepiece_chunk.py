"""Slow, obviously-correct Python twin of :mod:`tokenizer.kernels.bytepiece_chunk` (for tests only): BytePiece's own
chunking regex, so that the tests compare the kernel against the algorithm as BytePiece writes it.

    >>> ref_chunk_text("ab12\\n\\ncd", 10, True)
    ['ab', '1', '2', '\\n\\n', 'cd']
"""

from __future__ import annotations

import re


def ref_chunk_text(text: str, max_chars: int, isolate_digits: bool, max_newlines: int = 100) -> list[str]:
    """BytePiece's chunking regex on a str (``max_chars <= 0``: unbounded)."""
    if max_chars > 0:
        if isolate_digits:
            regex = r"\d|[^\n\d]{,%d}\n{1,%d}|[^\n\d]{1,%d}" % (max_chars, max_newlines, max_chars)
        else:
            regex = r".{,%d}\n{1,%d}|.{1,%d}" % (max_chars, max_newlines, max_chars)
    else:
        if isolate_digits:
            regex = r"\d|[^\n\d]*\n{1,%d}|[^\n\d]+" % max_newlines
        else:
            regex = r".*\n{1,%d}|.+" % max_newlines
    return re.findall(regex, text)

