"""The unigram trainer's settings (:class:`UnigramSettings`, SentencePiece's names and defaults) and the constants
its steps share."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tokenizer.errors import ConfigError
from tokenizer.model import PieceType

WS = "\u2581".encode()
UNK_CHAR = "\u2585"
E_STEP_SCALE = float(1 << 24)  # expected counts in units of 2**-24: exact sums up to ~5e11 tokens per piece
UNK_PENALTY = 10.0
MIN_EXPECTED = 0.5
MIN_SCORE_PENALTY_DELTA = 0.0001
LOCAL_BLOCK_BYTES = 1 << 18  # chunk bytes per block of the local E-step (fixed: results never depend on threads)
VARIANTS = ("sentencepiece", "byte")
#: What a meta piece (user-defined or control symbol) in the text becomes before the text is split into chunks:
#: a character no piece may hold, as sentencepiece 0.2's ``kPretokenizationBoundaryChar`` (U+001F).
BOUNDARY = b"\x1f"


@dataclass(frozen=True)
class UnigramSettings:
    """Training settings; names and defaults are SentencePiece's (``spm_train --help``)."""

    vocab_size: int = 8000
    variant: str = "sentencepiece"
    character_coverage: float = 0.9995
    seed_sentencepiece_size: int = 1_000_000
    shrinking_factor: float = 0.75
    num_sub_iterations: int = 2
    max_sentencepiece_length: int = 16
    max_sentence_length: int = 4192
    split_by_whitespace: bool = True
    split_by_number: bool = True
    split_by_unicode_script: bool = True
    split_digits: bool = False
    treat_whitespace_as_suffix: bool = False
    allow_whitespace_only_pieces: bool = False
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    byte_fallback: bool = False
    charsmap: bytes = b""
    normalizer_name: str = "identity"
    user_defined_symbols: tuple[str, ...] = ()
    control_symbols: tuple[str, ...] = ()
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    unk_piece: str = "<unk>"
    bos_piece: str = "<s>"
    eos_piece: str = "</s>"
    pad_piece: str = "<pad>"

    def validate(self) -> "UnigramSettings":
        if self.variant not in VARIANTS:
            raise ConfigError(f"unigram variant {self.variant!r} is unknown: use one of {VARIANTS}")
        if not 0.98 <= self.character_coverage <= 1.0:
            raise ConfigError(f"character_coverage={self.character_coverage}: use a value in 0.98..1.0")
        if not 0.0 < self.shrinking_factor < 1.0:
            raise ConfigError(f"shrinking_factor={self.shrinking_factor}: use a value in (0, 1)")
        if self.num_sub_iterations < 1 or self.seed_sentencepiece_size < 1:
            raise ConfigError("num_sub_iterations and seed_sentencepiece_size must be >= 1")
        if not 1 <= self.max_sentencepiece_length <= 512:
            raise ConfigError(f"max_sentencepiece_length={self.max_sentencepiece_length}: use 1..512")
        if self.max_sentence_length < 0:
            raise ConfigError("max_sentence_length must be >= 0 (0: no limit)")
        if self.variant == "sentencepiece":
            meta = self.meta_pieces()
            if len(meta) + 1 > self.vocab_size:
                raise ConfigError(
                    f"vocab_size={self.vocab_size} leaves no room beside {len(meta)} meta pieces (special, "
                    "user-defined, control and byte pieces): raise --vocab-size"
                    + (" (byte fallback's 256 byte pieces are among them; --no-byte-fallback leaves them out, "
                       "and characters outside the vocabulary then become <unk>)" if self.byte_fallback else ""))
        elif self.vocab_size <= 256 + len(self.byte_specials()):
            raise ConfigError(f"vocab_size={self.vocab_size}: the byte variant needs more than the 256 byte pieces "
                              f"and its {len(self.byte_specials())} control tokens: raise --vocab-size")
        return self

    def byte_specials(self) -> tuple[str, ...]:
        """The byte variant's control tokens, placed after its pieces: bos, eos and pad where their ids are set
        (>= 0), then the control symbols. Defaults: ``("<s>", "</s>")``."""
        ends = ((self.bos_id, self.bos_piece), (self.eos_id, self.eos_piece), (self.pad_id, self.pad_piece))
        return tuple(piece for id_, piece in ends if id_ >= 0) + tuple(self.control_symbols)

    def meta_pieces(self) -> dict[int, tuple[str, int]]:
        """``{id: (piece, PieceType)}`` of the special, control, user-defined and byte pieces, placed as
        SentencePiece's ``InitMetaPieces`` places them. Raises :class:`ConfigError` for clashing ids or names."""
        meta: dict[int, tuple[str, int]] = {}
        for id_, piece in ((self.unk_id, self.unk_piece), (self.bos_id, self.bos_piece),
                           (self.eos_id, self.eos_piece), (self.pad_id, self.pad_piece)):
            if id_ < 0:
                continue
            if id_ >= self.vocab_size:
                raise ConfigError(f"vocab size {self.vocab_size} is too small for the special pieces: {piece} has id "
                                  f"{id_}; raise --vocab-size above the special ids (or move them)")
            if id_ in meta:
                raise ConfigError(f"special id {id_} is given to both {meta[id_][0]} and {piece}: give each its own id")
            meta[id_] = (piece, PieceType.UNKNOWN if piece == self.unk_piece else PieceType.CONTROL)
        if self.unk_id < 0:
            raise ConfigError("unk_id must be >= 0: SentencePiece models need an unknown piece")
        seen: set[str] = set()
        next_id = 0
        extra = [(w, PieceType.CONTROL) for w in self.control_symbols]
        extra += [(w, PieceType.USER_DEFINED) for w in self.user_defined_symbols]
        if self.byte_fallback:
            extra += [(f"<0x{b:02X}>", PieceType.BYTE) for b in range(256)]
        for piece, kind in extra:
            if piece in seen or piece == self.unk_piece or not piece:
                raise ConfigError(f"symbol {piece!r} is empty, duplicated or the unknown piece: remove it")
            seen.add(piece)
            special = {self.bos_piece: self.bos_id, self.eos_piece: self.eos_id, self.pad_piece: self.pad_id}
            if special.get(piece, -1) >= 0:
                meta[special[piece]] = (piece, kind)
                continue
            while next_id in meta:
                next_id += 1
            meta[next_id] = (piece, kind)
        return meta

    def to_dict(self) -> dict:
        out = asdict(self)
        out["charsmap"] = f"<{len(self.charsmap)} bytes>"
        out["user_defined_symbols"] = list(self.user_defined_symbols)
        out["control_symbols"] = list(self.control_symbols)
        return out
