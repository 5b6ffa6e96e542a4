"""Normalizers: the text transform applied before segmentation, and its inverse applied after decoding.

:mod:`~tokenizer.normalizers.unicode`: the base class, :class:`Identity` (lossless, the default), NFC and NFKC;
:mod:`~tokenizer.normalizers.sentencepiece`: SentencePiece's normalizer (charsmap, whitespace rules). ``for_model``
builds the one a :class:`~tokenizer.model.Model` describes (its ``normalizer`` and ``pretokenizer`` specs together):
``for_model(Model.byte_level([b"ab"], [-1.0]))`` is an :class:`Identity`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenizer.errors import ModelError
from tokenizer.normalizers.unicode import NFC, NFKC, Identity, Normalizer

if TYPE_CHECKING:  # pragma: no cover
    from tokenizer.model import Model

__all__ = ["NFC", "NFKC", "NORMALIZERS", "Identity", "Normalizer", "SentencePieceNormalizer", "for_model"]

NORMALIZERS: dict[str, type[Normalizer]] = {"identity": Identity, "nfc": NFC, "nfkc": NFKC}


def for_model(model: "Model") -> Normalizer:
    """The normalizer described by ``model.normalizer`` and ``model.pretokenizer``."""
    name = model.normalizer.get("name", "identity")
    pretokenizer = model.pretokenizer.get("name", "none")
    if name == "precompiled" or pretokenizer == "sentencepiece":
        from tokenizer.normalizers.sentencepiece import SentencePieceNormalizer

        return SentencePieceNormalizer.from_model(model)
    if name not in NORMALIZERS:
        raise ModelError(f"unknown normalizer {name!r}: use one of {sorted(NORMALIZERS)} or 'precompiled'")
    if pretokenizer not in ("none", "byte_level"):  # byte_level: the encoder's regex pre-split, no normalization
        raise ModelError(f"unknown pretokenizer {pretokenizer!r} for normalizer {name!r}")
    return NORMALIZERS[name]()


def __getattr__(name: str):
    """``SentencePieceNormalizer`` on first use: its kernels load Numba, which identity models never need."""
    if name == "SentencePieceNormalizer":
        from tokenizer.normalizers.sentencepiece import SentencePieceNormalizer

        return SentencePieceNormalizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
