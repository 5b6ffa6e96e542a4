"""One rule for bad rows, shared by ``train``, ``tokenize`` and ``encode``.

A bad row is a row a command cannot take as it is: no text (``null``), a JSON line that is not an object
(``malformed``), text that is not valid UTF-8 for a model that works on characters (``invalid_utf8``), a document
over the size limit (``too_large``). What happens to it is the user's choice, the same in every command:

* ``error`` (the default): stop with one line naming where the row is (file and line, byte offset or row group)
  and the two other choices;
* ``skip``: drop the row;
* ``keep``: keep it as a document: no text and a malformed line become an empty document, invalid UTF-8 becomes
  U+FFFD replacements (a changed document), a huge document is taken whole.

Whatever was skipped or changed is counted by kind in the command's summary (and the manifest of the jobs).

Invalid UTF-8 is a bad row only for text models: SentencePiece-style models (unigram and ``--pretokenizer
sentencepiece`` BPE), whose normalizer works on characters and would turn each invalid byte into U+FFFD. Byte-level
models (BytePiece, byte-level BPE) segment bytes and keep every byte of any input, so for them it is an ordinary
row. Example::

    >>> keeps_invalid_utf8({"name": "sentencepiece"}), keeps_invalid_utf8({"name": "byte_level"})
    (False, True)
"""

from __future__ import annotations

import codecs
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    import numpy as np

BAD_ROW_POLICIES = ("error", "skip", "keep")
BAD_ROW_KINDS = ("null", "malformed", "invalid_utf8", "too_large")
#: the sentence every ``error`` message ends with: the two other choices
BAD_ROW_CHOICES = ("pass --on-bad-row skip to drop such rows or --on-bad-row keep to keep them (no text or a "
                   "malformed line -> an empty document, invalid UTF-8 -> U+FFFD replacements, huge -> taken "
                   "whole); either way they are counted in the summary")
#: what is wrong with invalid UTF-8 for a text model, in every command's error line
INVALID_UTF8 = "not valid UTF-8 (this model's normalizer works on characters)"
_CHECK_BYTES = 8 << 20  # bytes decoded at a time when checking UTF-8


def keeps_invalid_utf8(pretokenizer: Mapping[str, Any] | str) -> bool:
    """Whether a model with this pre-tokenizer (a model's ``pretokenizer`` dict, or its ``name``: ``"none"`` for
    BytePiece, ``"byte_level"``, ``"sentencepiece"``) keeps invalid UTF-8 byte for byte (a byte-level model), so
    that such text is no bad row for it."""
    name = pretokenizer if isinstance(pretokenizer, str) else pretokenizer.get("name", "none")
    return name != "sentencepiece"


def invalid_utf8_mask(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``bool[rows]``: which rows (``data[offsets[k]:offsets[k+1]]``, uint8 data and int offsets) are not valid
    UTF-8, as Spark's ``is_valid_utf8`` decides (overlong forms, surrogates, code points past U+10FFFF are invalid).
    Fast path: the rows' bytes decoded at once, all valid when no non-empty row starts with a continuation byte
    (which could complete its neighbour); otherwise row by row. Example: rows ``b"ok"``, ``b"\xe4\xb8"``,
    ``b"\xad"`` -> ``[False, True, True]`` (though their bytes join into valid UTF-8)."""
    import numpy as np  # here: `shardpiece train --help` imports this module, and no numpy

    offsets = np.asarray(offsets, dtype=np.int64)
    rows = len(offsets) - 1
    if rows <= 0:
        return np.zeros(0, bool)
    lengths = np.diff(offsets)
    firsts = data[offsets[:-1][lengths > 0]]
    if not np.any(firsts & 0xC0 == 0x80) and valid_utf8(data[offsets[0]:offsets[-1]]):
        return np.zeros(rows, bool)
    return np.fromiter((not valid_utf8(data[offsets[k]:offsets[k + 1]]) for k in range(rows)), bool, rows)


def valid_utf8(values) -> bool:
    """Whether ``values`` (uint8 array or bytes) are valid UTF-8. ``valid_utf8(b"\xed\xa0\x80")`` -> ``False``."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for start in range(0, len(values), _CHECK_BYTES):
            chunk = values[start:start + _CHECK_BYTES]
            decoder.decode(chunk if isinstance(chunk, bytes) else chunk.tobytes())
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True
