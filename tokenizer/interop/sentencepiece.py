"""Read SentencePiece ``.model`` files (a serialized ``sentencepiece.ModelProto``) into a :class:`Model`.

The file is read with the minimal wire-format reader of :mod:`tokenizer.interop.protobuf`; field numbers follow
SentencePiece's ``sentencepiece_model.proto``. The result encodes and decodes exactly as SentencePiece does: the
normalizer is :class:`~tokenizer.normalizers.sentencepiece.SentencePieceNormalizer` (``pretokenizer``
``{"name": "sentencepiece", ...}``), pieces keep their ids, types and scores.

What is refused, with a :class:`ModelFileError` that says so (rather than a model that would differ silently):
model types WORD and CHAR, a denormalizer charsmap (``denormalizer_spec``), pieces SentencePiece itself rejects
(empty, duplicated, several UNKNOWN, none, BYTE pieces without ``byte_fallback`` or an incomplete set of 256).

Example::

    model = load_sentencepiece("m.model")      # or the file's bytes
    model.pieces[model.unk_id]                 # b"<unk>"
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tokenizer._version import __version__
from tokenizer.errors import ModelError, ModelFileError
from tokenizer.interop import protobuf as pb
from tokenizer.normalizers.sentencepiece_spec import DEFAULT_UNK_SURFACE, _byte_piece_value, split_charsmap
from tokenizer.model import Model, PieceType

# ModelProto
MODEL_PIECES, MODEL_TRAINER_SPEC, MODEL_NORMALIZER_SPEC, MODEL_SELF_TEST_DATA, MODEL_DENORMALIZER_SPEC = 1, 2, 3, 4, 5
# ModelProto.SentencePiece
PIECE_PIECE, PIECE_SCORE, PIECE_TYPE = 1, 2, 3
# NormalizerSpec
NORM_NAME, NORM_CHARSMAP, NORM_ADD_DUMMY_PREFIX, NORM_REMOVE_EXTRA_WS, NORM_ESCAPE_WS, NORM_RULE_TSV = 1, 2, 3, 4, 5, 6
# TrainerSpec.ModelType
MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}

# TrainerSpec fields kept in the provenance: (field number, name, kind, default as in the .proto).
TRAINER_FIELDS: tuple[tuple[int, str, str, Any], ...] = (
    (3, "model_type", "enum", 1),
    (4, "vocab_size", "int", 8000),
    (10, "character_coverage", "float", 0.9995),
    (11, "input_sentence_size", "int", 0),
    (14, "seed_sentencepiece_size", "int", 1000000),
    (15, "shrinking_factor", "float", 0.75),
    (17, "num_sub_iterations", "int", 2),
    (18, "max_sentence_length", "int", 4192),
    (20, "max_sentencepiece_length", "int", 16),
    (21, "split_by_unicode_script", "bool", True),
    (22, "split_by_whitespace", "bool", True),
    (23, "split_by_number", "bool", True),
    (24, "treat_whitespace_as_suffix", "bool", False),
    (25, "split_digits", "bool", False),
    (26, "allow_whitespace_only_pieces", "bool", False),
    (30, "control_symbols", "strings", ()),
    (31, "user_defined_symbols", "strings", ()),
    (33, "hard_vocab_limit", "bool", True),
    (34, "use_all_vocab", "bool", False),
    (35, "byte_fallback", "bool", False),
    (40, "unk_id", "int", 0),
    (41, "bos_id", "int", 1),
    (42, "eos_id", "int", 2),
    (43, "pad_id", "int", -1),
    (44, "unk_surface", "string", DEFAULT_UNK_SURFACE),
    (45, "unk_piece", "string", "<unk>"),
    (46, "bos_piece", "string", "<s>"),
    (47, "eos_piece", "string", "</s>"),
    (48, "pad_piece", "string", "<pad>"),
    (53, "pretokenization_delimiter", "string", ""),
)


@dataclass
class SentencePieceProto:
    """The parts of a ``ModelProto`` shardpiece uses, plus the raw messages (unknown fields kept) for export."""

    pieces: list[bytes]
    scores: list[float]
    types: list[int]
    trainer: dict[str, Any]
    normalizer_name: str
    charsmap: bytes
    add_dummy_prefix: bool
    remove_extra_whitespaces: bool
    escape_whitespaces: bool
    has_denormalizer_charsmap: bool
    raw: pb.Message = field(repr=False, default_factory=pb.Message)


def _text(value: bytes, what: str) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelError(f"{what} is not valid UTF-8") from None


def parse_model_proto(data: bytes) -> SentencePieceProto:
    """Decode a serialized ``ModelProto``. Raises :class:`pb.ProtobufError` (malformed bytes) or
    :class:`ModelError` (well-formed but not a usable SentencePiece model)."""
    root = pb.Message.parse(data)
    pieces, scores, types = [], [], []
    for index, raw_piece in enumerate(root.all(MODEL_PIECES, pb.LENGTH_DELIMITED)):
        piece = pb.Message.parse(raw_piece)
        pieces.append(piece.get_bytes(PIECE_PIECE, b""))
        scores.append(piece.get_float(PIECE_SCORE, 0.0))
        types.append(piece.get_int32(PIECE_TYPE, int(PieceType.NORMAL)))

    trainer_msg = root.message(MODEL_TRAINER_SPEC) or pb.Message()
    trainer: dict[str, Any] = {}
    for number, name, kind, default in TRAINER_FIELDS:
        if kind == "enum" or kind == "int":
            trainer[name] = trainer_msg.get_int32(number, default)
        elif kind == "float":
            trainer[name] = trainer_msg.get_float(number, default)
        elif kind == "bool":
            trainer[name] = trainer_msg.get_bool(number, default)
        elif kind == "string":
            raw = trainer_msg.get_bytes(number)
            trainer[name] = default if raw is None else _text(raw, f"trainer_spec.{name}")
        else:
            trainer[name] = [_text(v, f"trainer_spec.{name}") for v in trainer_msg.all(number, pb.LENGTH_DELIMITED)]
    trainer["has_unk_surface"] = trainer_msg.has(44)

    norm = root.message(MODEL_NORMALIZER_SPEC) or pb.Message()
    denorm = root.message(MODEL_DENORMALIZER_SPEC)
    return SentencePieceProto(
        pieces=pieces, scores=scores, types=types, trainer=trainer,
        normalizer_name=_text(norm.get_bytes(NORM_NAME, b""), "normalizer_spec.name"),
        charsmap=norm.get_bytes(NORM_CHARSMAP, b""),
        add_dummy_prefix=norm.get_bool(NORM_ADD_DUMMY_PREFIX, True),
        remove_extra_whitespaces=norm.get_bool(NORM_REMOVE_EXTRA_WS, True),
        escape_whitespaces=norm.get_bool(NORM_ESCAPE_WS, True),
        has_denormalizer_charsmap=bool(denorm is not None and denorm.get_bytes(NORM_CHARSMAP, b"")),
        raw=root,
    )


def _check_pieces(proto: SentencePieceProto) -> int:
    """Apply SentencePiece's own load-time checks; returns the unknown piece's id."""
    if not proto.pieces:
        raise ModelError("the model has no pieces")
    seen: dict[bytes, int] = {}
    unk_id = -1
    byte_found = [False] * 256
    byte_fallback = proto.trainer["byte_fallback"]
    valid_types = {int(t) for t in PieceType}
    for index, (piece, kind) in enumerate(zip(proto.pieces, proto.types)):
        if not piece:
            raise ModelError(f"piece {index} is empty (SentencePiece rejects empty pieces)")
        _text(piece, f"piece {index}")
        if kind not in valid_types:
            raise ModelError(f"piece {index} ({piece!r}) has type {kind}, which is not a SentencePiece piece type")
        if piece in seen:
            raise ModelError(f"piece {piece!r} appears twice (ids {seen[piece]} and {index})")
        seen[piece] = index
        if kind == PieceType.UNKNOWN:
            if unk_id >= 0:
                raise ModelError(f"two UNKNOWN pieces (ids {unk_id} and {index}); SentencePiece allows one")
            unk_id = index
        if kind == PieceType.BYTE:
            if not byte_fallback:
                raise ModelError(f"byte piece {piece!r} (id {index}) found although byte_fallback is false")
            value = _byte_piece_value(piece)
            if value < 0:
                raise ModelError(f"byte piece {piece!r} (id {index}) is not of the form <0xAB>")
            byte_found[value] = True
    if unk_id < 0:
        raise ModelError("no UNKNOWN piece (<unk>) is defined")
    if byte_fallback and not all(byte_found):
        raise ModelError(f"byte_fallback is on but only {sum(byte_found)} of the 256 byte pieces exist")
    return unk_id


def model_from_proto(proto: SentencePieceProto) -> Model:
    """The :class:`Model` of a parsed SentencePiece model (see :func:`load_sentencepiece`)."""
    model_type = MODEL_TYPES.get(proto.trainer["model_type"])
    if model_type not in ("unigram", "bpe"):
        raise ModelError(
            f"model_type {model_type or proto.trainer['model_type']!r} is not supported: shardpiece imports "
            "SentencePiece unigram and bpe models only (retrain with --model_type=unigram or bpe)"
        )
    if proto.has_denormalizer_charsmap:
        raise ModelError(
            "the model has a denormalization rule (denormalizer_spec with a charsmap), which shardpiece does not "
            "apply: retrain without denormalization_rule_tsv"
        )
    unk_id = _check_pieces(proto)
    if proto.charsmap:
        split_charsmap(proto.charsmap)  # validates the blob's layout
    piece_ids = {p: i for i, p in enumerate(proto.pieces)}

    def special(piece_name: str) -> int:
        name = proto.trainer[piece_name] or dict((n, d) for _, n, _, d in TRAINER_FIELDS)[piece_name]
        index = piece_ids.get(name.encode(), -1)
        return index if index >= 0 and proto.types[index] == PieceType.CONTROL else -1

    trainer = proto.trainer
    pretokenizer = {
        "name": "sentencepiece",
        "add_dummy_prefix": proto.add_dummy_prefix,
        "remove_extra_whitespaces": proto.remove_extra_whitespaces,
        "escape_whitespaces": proto.escape_whitespaces,
        "treat_whitespace_as_suffix": trainer["treat_whitespace_as_suffix"],
        "unk_surface": trainer["unk_surface"],
    }
    settings = {name: trainer[name] for _, name, _, _ in TRAINER_FIELDS}
    settings["model_type"] = model_type
    provenance = {
        "shardpiece_version": __version__,
        "source_format": "sentencepiece",
        "sentencepiece_normalizer": proto.normalizer_name or ("identity" if not proto.charsmap else "custom"),
        "sentencepiece_trainer_spec": settings,
    }
    return Model(
        pieces=proto.pieces,
        scores=np.asarray(proto.scores, dtype=np.float32),
        types=np.asarray(proto.types, dtype=np.int8),
        algorithm=model_type,
        normalizer={"name": "precompiled"} if proto.charsmap else {"name": "identity"},
        charsmap=proto.charsmap,
        pretokenizer=pretokenizer,
        unk_id=unk_id,
        bos_id=special("bos_piece"),
        eos_id=special("eos_piece"),
        pad_id=special("pad_piece"),
        byte_fallback=trainer["byte_fallback"],
        provenance=provenance,
    )


def load_sentencepiece(path_or_bytes: str | os.PathLike | bytes | bytearray | memoryview, *,
                       source: str | None = None) -> Model:
    """A :class:`Model` from a SentencePiece ``.model`` file (a path) or its bytes.

    Raises :class:`ModelFileError` naming the file (``source``, or the path, or ``"<bytes>"``) and the problem when
    the data is not a SentencePiece model, is truncated or corrupted, or uses a feature shardpiece does not
    reproduce exactly.
    """
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data = bytes(path_or_bytes)
        name = source or "<bytes>"
    else:
        name = source or os.fspath(path_or_bytes)
        try:
            with open(path_or_bytes, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise ModelFileError(name, f"cannot read the file: {exc.strerror}") from None
    if not data:
        raise ModelFileError(name, "the file is empty, not a SentencePiece model")
    try:
        proto = parse_model_proto(data)
    except pb.ProtobufError as exc:
        raise ModelFileError(
            name, f"not a SentencePiece model or truncated/corrupted ({exc}); re-copy the file or check its format"
        ) from None
    except ModelError as exc:
        raise ModelFileError(name, f"not a usable SentencePiece model: {exc}") from None
    try:
        return model_from_proto(proto)
    except ModelError as exc:
        raise ModelFileError(name, str(exc)) from None


def looks_like_sentencepiece(data: bytes) -> bool:
    """Whether ``data`` starts like a ``ModelProto``: field 1 (a piece) as a well-formed length-delimited message
    whose own first field is the piece text. A cheap format sniff for ``Tokenizer.load``; :func:`load_sentencepiece`
    does the full checks."""
    try:
        tag, position = pb.decode_varint(data, 0)
        if tag != (MODEL_PIECES << 3) | pb.LENGTH_DELIMITED:
            return False
        length, position = pb.decode_varint(data, position)
        if position + length > len(data):
            return False
        first_piece = pb.parse_message(data[position:position + length])
    except pb.ProtobufError:
        return False
    return bool(first_piece) and first_piece[0].number == PIECE_PIECE
