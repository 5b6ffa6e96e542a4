"""Piece types of a model: what the encoder does with each piece (its own module, so that the model and the
modules the model uses can all name them), and the byte a BYTE piece stands for."""

from __future__ import annotations

import enum

from tokenizer.errors import ModelError


class PieceType(enum.IntEnum):
    """Piece types; the values equal SentencePiece's ``ModelProto.SentencePiece.Type`` so imports map 1:1."""

    NORMAL = 1        # learned piece, matched against text
    UNKNOWN = 2       # the unknown piece (<unk>); never matched, emitted for uncovered characters
    CONTROL = 3       # special tokens (<s>, </s>, <pad>); never matched against text, decode to b""
    USER_DEFINED = 4  # always matched as one piece when it appears in the text
    UNUSED = 5        # kept for its id, never produced by the encoder
    BYTE = 6          # byte-fallback piece "<0xAB>", decodes to the single byte 0xAB


def byte_piece_value(piece: bytes) -> int:
    """The byte a BYTE piece stands for: ``b"<0x41>"`` -> 0x41 (raises ModelError if malformed)."""
    if len(piece) == 6 and piece.startswith(b"<0x") and piece.endswith(b">"):
        try:
            return int(piece[3:5], 16)
        except ValueError:
            pass
    raise ModelError(f"BYTE piece {piece!r} is not of the form <0xAB>")
