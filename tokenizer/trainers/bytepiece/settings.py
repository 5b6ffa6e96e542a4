"""BytePiece training's settings (:class:`TrainSettings`, stored in every model's provenance)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from tokenizer.errors import ConfigError
from tokenizer.kernels.ngram_count import MAX_ORDER

NORMALIZATIONS = ("identity", "nfc")
EM_MODES = ("viterbi", "expected")


# ============================================================================================================ settings
@dataclass(frozen=True)
class TrainSettings:
    """Everything that affects a BytePiece model (stored in its provenance).

    Attributes:
        order: longest byte n-gram of the language model (1..7; BytePiece's default 6).
        min_count: n-grams and pieces rarer than this are pruned (BytePiece's default 2).
        max_piece_length: longest piece in bytes (36).
        normalization: ``"identity"`` (lossless, any bytes) or ``"nfc"`` (what BytePiece always applies).
        isolate_digits: every Unicode decimal digit is a chunk (so a piece) of its own.
        ensure_unicode: no piece starts on a UTF-8 continuation byte.
        vocab_sizes: requested vocabulary sizes, each counting the 256 byte pieces and the special tokens; one
            model per size, nested (a smaller vocabulary is a subset of a larger one).
        special_tokens: CONTROL pieces appended after the learned pieces (BytePiece reserves 3 ids likewise).
        refine_em_rounds: rounds of unigram EM after pruning (0 = plain BytePiece; 1 = re-estimate only; more
            rounds also fill free vocabulary slots, see the module docstring).
        refine_em_mode: ``"viterbi"`` (counts from the best segmentation) or ``"expected"`` (posterior counts).
        max_chunk_chars: longest chunk in characters before a newline (BytePiece's 10000; <= 0: no limit).
        max_newline_run: newlines a chunk may end with (BytePiece's 100).
    """

    order: int = 6
    min_count: int = 2
    max_piece_length: int = 36
    normalization: str = "identity"
    isolate_digits: bool = False
    ensure_unicode: bool = True
    vocab_sizes: tuple[int, ...] = (32000,)
    special_tokens: tuple[str, ...] = ("<pad>", "<s>", "</s>")
    refine_em_rounds: int = 0
    refine_em_mode: str = "viterbi"
    max_chunk_chars: int = 10000
    max_newline_run: int = 100

    def __post_init__(self) -> None:
        if isinstance(self.vocab_sizes, int):
            object.__setattr__(self, "vocab_sizes", (self.vocab_sizes,))
        object.__setattr__(self, "vocab_sizes", tuple(self.vocab_sizes))
        object.__setattr__(self, "special_tokens", tuple(self.special_tokens))

    def validate(self) -> "TrainSettings":
        """Raise :class:`ConfigError` saying what to change; returns ``self`` when valid."""
        def integer(name: str, low: int, high: int | None = None, hint: str = "") -> None:
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low or (
                    high is not None and value > high):
                bound = f"{low}..{high}" if high is not None else f">= {low}"
                raise ConfigError(f"{name}={value!r} is invalid: use an integer {bound}{hint}")

        integer("order", 1, MAX_ORDER, " (n-gram keys pack at most 7 bytes; BytePiece uses 6)")
        integer("min_count", 1, hint=" (BytePiece's default is 2; 8 suits ~10 MB corpora)")
        integer("max_piece_length", 1, hint=" (BytePiece's default is 36)")
        integer("refine_em_rounds", 0, hint=" (0 turns the EM refinement off)")
        integer("max_newline_run", 1, hint=" (BytePiece uses 100)")
        if not isinstance(self.max_chunk_chars, (int, np.integer)) or isinstance(self.max_chunk_chars, bool):
            raise ConfigError(f"max_chunk_chars={self.max_chunk_chars!r}: use an integer (10000; <= 0: no limit)")
        if self.normalization not in NORMALIZATIONS:
            raise ConfigError(f"normalization={self.normalization!r} is unknown: use one of {NORMALIZATIONS}")
        if self.refine_em_mode not in EM_MODES:
            raise ConfigError(f"refine_em_mode={self.refine_em_mode!r} is unknown: use one of {EM_MODES}")
        for name in ("isolate_digits", "ensure_unicode"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name}={getattr(self, name)!r}: use true or false")
        if len(set(self.special_tokens)) != len(self.special_tokens) or not all(
                isinstance(s, str) and s for s in self.special_tokens):
            raise ConfigError(f"special_tokens={self.special_tokens!r}: use distinct non-empty strings")
        if not self.vocab_sizes:
            raise ConfigError("vocab_sizes is empty: request at least one vocabulary size, e.g. 32000")
        floor = 256 + len(self.special_tokens)
        for size in self.vocab_sizes:
            if not isinstance(size, (int, np.integer)) or isinstance(size, bool):
                raise ConfigError(f"vocab size {size!r} is not an integer: pass whole numbers like 32000")
            if size < floor:
                raise ConfigError(
                    f"vocab size {size} is below the {floor} ids a byte-level model always holds (256 single bytes "
                    f"+ {len(self.special_tokens)} special tokens): request at least {floor}"
                )
        if len(set(self.vocab_sizes)) != len(self.vocab_sizes):
            raise ConfigError(f"vocab_sizes {self.vocab_sizes} repeats a size: list each size once")
        return self

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["vocab_sizes"] = [int(v) for v in self.vocab_sizes]
        out["special_tokens"] = list(self.special_tokens)
        return out
