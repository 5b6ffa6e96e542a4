"""Write a :class:`Model` as a SentencePiece ``.model`` (a serialized ``ModelProto``) that sentencepiece loads and
that gives the ids shardpiece gives.

What exports: unigram and BPE models with SentencePiece normalization (``pretokenizer`` ``"sentencepiece"``:
trained by ``--algorithm unigram``, or imported from SentencePiece): pieces, scores and types go over as they are,
with the normalizer (charsmap and whitespace flags) and the trainer fields the encoder reads (model type, byte
fallback, special pieces and ids, ``treat_whitespace_as_suffix``, ``unk_surface``).

What is refused, with an :class:`ExportError` that says why: byte-level models (BytePiece, ``--unigram-variant
byte``, byte-level BPE). SentencePiece pieces are UTF-8 text, so a piece that holds part of a character cannot be
one; and even when every piece is whole characters, SentencePiece scores an uncovered character as one unknown
node (the lowest score minus 10) before spelling it in byte pieces, whereas a byte-level model scores each of its
bytes as a piece of its own, so the two pick different segmentations around such characters: the ids would differ.
Models without an unknown piece are refused too (SentencePiece needs one).

Example::

    save_sentencepiece(Tokenizer.load("unigram.model").model, "unigram-sp.model")
"""

from __future__ import annotations

import os

from tokenizer.errors import ExportError
from tokenizer.interop import protobuf as pb
from tokenizer.normalizers.sentencepiece_spec import DEFAULT_UNK_SURFACE, _byte_piece_value
from tokenizer.files import write_atomic
from tokenizer.model import Model, PieceType

# field numbers of sentencepiece_model.proto
_MODEL_PIECES, _MODEL_TRAINER, _MODEL_NORMALIZER = 1, 2, 3
_PIECE, _SCORE, _TYPE = 1, 2, 3
_T_MODEL_TYPE, _T_VOCAB_SIZE, _T_WS_SUFFIX, _T_BYTE_FALLBACK = 3, 4, 24, 35
_T_UNK_ID, _T_BOS_ID, _T_EOS_ID, _T_PAD_ID = 40, 41, 42, 43
_T_UNK_SURFACE, _T_UNK_PIECE, _T_BOS_PIECE, _T_EOS_PIECE, _T_PAD_PIECE = 44, 45, 46, 47, 48
_N_NAME, _N_CHARSMAP, _N_DUMMY_PREFIX, _N_REMOVE_WS, _N_ESCAPE_WS = 1, 2, 3, 4, 5
_MODEL_TYPES = {"unigram": 1, "bpe": 2}


def _check_exportable(model: Model) -> None:
    if model.pretokenizer.get("name") != "sentencepiece":
        raise ExportError(
            "this is a byte-level model (no SentencePiece normalization), which SentencePiece cannot reproduce "
            "exactly: its pieces are UTF-8 text, so a byte piece holding part of a character cannot be one, and its "
            "byte fallback scores an uncovered character as one unknown node where this model scores each byte, so "
            "segmentations (and ids) would differ. Train with --algorithm unigram (default variant) or import a "
            "SentencePiece model to get a SentencePiece-compatible model; export this one --to huggingface instead"
        )
    if model.algorithm not in _MODEL_TYPES:
        raise ExportError(f"algorithm {model.algorithm!r} has no SentencePiece model type")
    if model.normalizer.get("name") not in ("identity", "precompiled"):
        raise ExportError(f"normalizer {model.normalizer.get('name')!r} has no SentencePiece equivalent")
    if model.unk_id < 0 or model.types[model.unk_id] != PieceType.UNKNOWN:
        raise ExportError(f"SentencePiece's format needs an <unk> piece, which a {model.algorithm} model of this kind "
                          "does not have: export it --to huggingface instead (that export carries every piece), or "
                          "train --algorithm unigram for a model SentencePiece can load")
    seen: set[bytes] = set()
    byte_pieces = 0
    for index, (piece, kind) in enumerate(zip(model.pieces, model.types.tolist())):
        if not piece or piece in seen:
            raise ExportError(f"piece {index} ({piece!r}) is empty or duplicated, which SentencePiece rejects")
        seen.add(piece)
        try:
            piece.decode("utf-8")
        except UnicodeDecodeError:
            raise ExportError(f"piece {index} ({piece!r}) is not valid UTF-8; SentencePiece pieces are text") from None
        if kind == PieceType.BYTE:
            if _byte_piece_value(piece) < 0:
                raise ExportError(f"BYTE piece {index} ({piece!r}) is not of the form <0xAB>")
            byte_pieces += 1
    if model.byte_fallback and byte_pieces != 256:
        raise ExportError(f"byte_fallback is on but the model has {byte_pieces} of the 256 byte pieces")


def _int(message: pb.Message, number: int, value: int) -> None:
    message.set(number, pb.VARINT, value if value >= 0 else value + (1 << 64))


def model_to_sentencepiece(model: Model) -> bytes:
    """The serialized ``ModelProto`` of ``model``; raises :class:`ExportError` (see the module docstring)."""
    _check_exportable(model)
    root = pb.Message()
    for piece, score, kind in zip(model.pieces, model.scores.tolist(), model.types.tolist()):
        entry = pb.Message()
        entry.set(_PIECE, pb.LENGTH_DELIMITED, piece)
        entry.set(_SCORE, pb.FIXED32, pb.float_bits(score))
        if kind != PieceType.NORMAL:
            entry.set(_TYPE, pb.VARINT, int(kind))
        root.fields.append(pb.Field(_MODEL_PIECES, pb.LENGTH_DELIMITED, entry.serialize()))

    spec = model.pretokenizer
    trainer = pb.Message()
    _int(trainer, _T_MODEL_TYPE, _MODEL_TYPES[model.algorithm])
    _int(trainer, _T_VOCAB_SIZE, model.vocab_size)
    if spec.get("treat_whitespace_as_suffix", False):
        _int(trainer, _T_WS_SUFFIX, 1)
    if model.byte_fallback:
        _int(trainer, _T_BYTE_FALLBACK, 1)
    defaults = {"bos": "<s>", "eos": "</s>", "pad": "<pad>"}
    _int(trainer, _T_UNK_ID, model.unk_id)
    trainer.set(_T_UNK_PIECE, pb.LENGTH_DELIMITED, model.pieces[model.unk_id])
    for name, id_field, piece_field in (("bos", _T_BOS_ID, _T_BOS_PIECE), ("eos", _T_EOS_ID, _T_EOS_PIECE),
                                        ("pad", _T_PAD_ID, _T_PAD_PIECE)):
        special = getattr(model, f"{name}_id")
        _int(trainer, id_field, special)
        piece = model.pieces[special] if special >= 0 else defaults[name].encode()
        trainer.set(piece_field, pb.LENGTH_DELIMITED, piece)
    unk_surface = spec.get("unk_surface", DEFAULT_UNK_SURFACE)
    if unk_surface != DEFAULT_UNK_SURFACE:
        trainer.set(_T_UNK_SURFACE, pb.LENGTH_DELIMITED, unk_surface.encode())
    root.fields.append(pb.Field(_MODEL_TRAINER, pb.LENGTH_DELIMITED, trainer.serialize()))

    normalizer = pb.Message()
    name = model.provenance.get("sentencepiece_normalizer") or (
        "identity" if model.normalizer.get("name") == "identity" else "custom")
    normalizer.set(_N_NAME, pb.LENGTH_DELIMITED, str(name).encode())
    if model.normalizer.get("name") == "precompiled":
        normalizer.set(_N_CHARSMAP, pb.LENGTH_DELIMITED, bytes(model.charsmap))
    normalizer.set(_N_DUMMY_PREFIX, pb.VARINT, int(bool(spec.get("add_dummy_prefix", True))))
    normalizer.set(_N_REMOVE_WS, pb.VARINT, int(bool(spec.get("remove_extra_whitespaces", True))))
    normalizer.set(_N_ESCAPE_WS, pb.VARINT, int(bool(spec.get("escape_whitespaces", True))))
    root.fields.append(pb.Field(_MODEL_NORMALIZER, pb.LENGTH_DELIMITED, normalizer.serialize()))
    return root.serialize()


def save_sentencepiece(model: Model, path: str | os.PathLike) -> None:
    """Write ``model`` as a SentencePiece ``.model`` file, atomically."""
    write_atomic(path, model_to_sentencepiece(model), what="SentencePiece model")
