"""Read a BytePiece model (its JSON file) into a :class:`~tokenizer.model.Model` that encodes to BytePiece's ids.

BytePiece's file maps ``base64(piece bytes) -> [id, piece text, count]``; ids 0, 1, 2 are ``<pad>``, ``<bos>``,
``<eos>`` (not in the file) and the pieces take ids 3.. (all 256 single bytes are always present). Its tokenizer
scores a piece ``log(count) - log(sum of counts)`` in float64, applies NFC, cuts the text after every run of
``\\n`` (regex ``.*\\n+|.+``) and runs Viterbi on each chunk, the longest last piece winning ties. The Model
therefore keeps BytePiece's id order, normalizer ``nfc``, pretokenizer ``{"name": "none",
"split_after_newlines": true}`` and the integer counts (``provenance["log_count_scores"]``) so the encoder sums
the exact float64 scores; ``scores`` holds the same values rounded to float32.

Example::

    >>> obj = {"YQ==": [3, "a", 5]}   # a one-piece file (real files hold all 256 bytes)
    >>> m = model_from_bytepiece_json(obj, "x.json")
    >>> m.pieces[:4], m.types.tolist()[:4]
    ([b'<pad>', b'<bos>', b'<eos>', b'a'], [3, 3, 3, 1])
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import Any

import numpy as np

from tokenizer._version import __version__
from tokenizer.errors import ModelFileError
from tokenizer.interop import read_json_file
from tokenizer.model import Model, PieceType

SPECIALS = (b"<pad>", b"<bos>", b"<eos>")


def load_bytepiece(path: str | os.PathLike) -> Model:
    """Read BytePiece's model JSON at ``path`` (see the module docstring)."""
    obj, source = read_json_file(path, ": is this a BytePiece model file?")
    return model_from_bytepiece_json(obj, source)


def model_from_bytepiece_json(obj: Any, source: str = "<json>") -> Model:
    """The Model for BytePiece's parsed JSON ``obj``; ``source`` names the file in errors."""
    if not isinstance(obj, dict) or not obj:
        raise ModelFileError(source, "a BytePiece model is a non-empty JSON object {base64 piece: [id, text, count]}")
    by_id: dict[int, tuple[bytes, int]] = {}
    for key, entry in obj.items():
        try:
            piece = base64.b64decode(key, validate=True)
            ident, count = entry[0], entry[-1]
        except (binascii.Error, ValueError, TypeError, IndexError, KeyError):
            raise ModelFileError(source, f"entry {key!r}: {entry!r} is not 'base64 piece: [id, text, count]'") from None
        if not isinstance(ident, int) or not isinstance(count, int) or count <= 0 or not piece:
            raise ModelFileError(source, f"entry {key!r}: id and count must be positive integers, the piece non-empty")
        if ident in by_id:
            raise ModelFileError(source, f"id {ident} is used twice ({by_id[ident][0]!r} and {piece!r})")
        by_id[ident] = (piece, count)
    expected = set(range(3, 3 + len(by_id)))
    if set(by_id) != expected:
        missing = sorted(expected - set(by_id))[:3]
        raise ModelFileError(source, f"piece ids must be 3..{2 + len(by_id)} without gaps (missing e.g. {missing})")
    pieces = list(SPECIALS) + [by_id[i][0] for i in range(3, 3 + len(by_id))]
    counts = [0, 0, 0] + [by_id[i][1] for i in range(3, 3 + len(by_id))]
    log_total = np.log(sum(counts))
    scores = np.array([0.0] * 3 + [np.log(c) - log_total for c in counts[3:]], dtype=np.float32)
    types = np.array([PieceType.CONTROL] * 3 + [PieceType.NORMAL] * len(by_id), dtype=np.int8)
    return Model(
        pieces, scores, types, algorithm="unigram", normalizer={"name": "nfc"},
        pretokenizer={"name": "none", "split_after_newlines": True},
        pad_id=0, bos_id=1, eos_id=2,
        provenance={"shardpiece_version": __version__, "imported_from": "bytepiece",
                    "log_count_scores": {"counts": counts}},
    )
