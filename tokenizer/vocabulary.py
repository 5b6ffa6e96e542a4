"""What each id stands for as bytes (``Tokenizer.id_to_bytes``, ``Tokenizer.get_vocab``).

    >>> from tokenizer.model import Model
    >>> from tokenizer import Tokenizer
    >>> Tokenizer(Model.byte_level([b"ab"], [-1.0])).get_vocab()[b"ab"]
    256
"""

from __future__ import annotations

from tokenizer.piece_types import PieceType

SPACE_SYMBOL = "\u2581".encode("utf-8")


def piece_bytes_of(model, decode_table: list[bytes], normalizer) -> list[bytes]:
    """The bytes each id contributes to a decoded text, by id: ``decode_table`` (the joined bytes before
    ``denormalize``) for models whose normalizer decodes by joining, and for SentencePiece-style models (a
    normalizer with ``decode_ids``) each piece with "▁" as a space (``"▁the"`` -> ``b" the"``), the unknown piece
    as the normalizer's ``unk_surface``, control pieces as nothing, byte pieces as their byte."""
    if getattr(normalizer, "decode_ids", None) is None:
        return list(decode_table)
    unk = normalizer.unk_surface.encode("utf-8")
    out = []
    for piece, kind, decoded in zip(model.pieces, model.types.tolist(), decode_table):
        if kind == PieceType.UNKNOWN:
            out.append(unk)
        elif kind in (PieceType.CONTROL, PieceType.BYTE):
            out.append(decoded if kind == PieceType.BYTE else b"")
        else:
            out.append(piece.replace(SPACE_SYMBOL, b" "))
    return out


def vocab_of(model, piece_bytes: list[bytes]) -> dict[bytes, int]:
    """``{bytes: id}`` of ``piece_bytes`` (by id): empty entries left out; of equal bytes, a piece that is no BYTE
    piece wins over a BYTE piece, then the lowest id. ``[b"a", b"", b"a"]`` (all NORMAL) -> ``{b"a": 0}``."""
    vocab: dict[bytes, int] = {}
    kinds = model.types.tolist()
    for i, data in enumerate(piece_bytes):
        if not data:
            continue
        held = vocab.get(data)
        if held is None or (kinds[held] == PieceType.BYTE and kinds[i] != PieceType.BYTE):
            vocab[data] = i
    return vocab
