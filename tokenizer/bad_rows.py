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

from typing import Any, Mapping, Sequence

BAD_ROW_POLICIES = ("error", "skip", "keep")
BAD_ROW_KINDS = ("null", "malformed", "invalid_utf8", "too_large")
#: the sentence every ``error`` message ends with: the two other choices
BAD_ROW_CHOICES = ("pass --on-bad-row skip to drop such rows or --on-bad-row keep to keep them (no text or a "
                   "malformed line -> an empty document, invalid UTF-8 -> U+FFFD replacements, huge -> taken "
                   "whole); either way they are counted in the summary")
#: what is wrong with invalid UTF-8 for a text model, in every command's error line
INVALID_UTF8 = "not valid UTF-8 (this model's normalizer works on characters)"


def keeps_invalid_utf8(pretokenizer: Mapping[str, Any] | str) -> bool:
    """Whether a model with this pre-tokenizer (a model's ``pretokenizer`` dict, or its ``name``: ``"none"`` for
    BytePiece, ``"byte_level"``, ``"sentencepiece"``) keeps invalid UTF-8 byte for byte (a byte-level model), so
    that such text is no bad row for it."""
    name = pretokenizer if isinstance(pretokenizer, str) else pretokenizer.get("name", "none")
    return name != "sentencepiece"


def invalid_utf8_indices(texts: Sequence[bytes | None]) -> list[int]:
    """The indices of the ``texts`` that are not valid UTF-8 (Python's strict codec: no overlong forms, surrogates
    or code points past U+10FFFF); ``None`` counts as valid. The common, valid batch costs one decode of the texts
    joined by ``\\n``, which neither ends nor continues a multi-byte character, so the join is valid exactly when
    every text is; the texts are decoded one by one only when it is not. Example::

        >>> invalid_utf8_indices([b"ok", b"\\xe4\\xb8", b"\\xad", None])  # 2nd + 3rd: one valid character
        [1, 2]
    """
    try:
        b"\n".join(text for text in texts if text is not None).decode("utf-8")
        return []
    except UnicodeDecodeError:
        pass
    invalid = []
    for index, text in enumerate(texts):
        if text is None:
            continue
        try:
            text.decode("utf-8")
        except UnicodeDecodeError:
            invalid.append(index)
    return invalid
