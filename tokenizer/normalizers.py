"""Normalizers: the text transform applied before segmentation, and its inverse applied after decoding.

A normalizer maps the UTF-8 bytes of one text to the bytes the segmenter sees, and ``denormalize`` maps the
concatenated piece bytes back to text. The default, :class:`Identity`, is lossless and accepts arbitrary bytes.

    >>> NFKC().normalize("ｶ①".encode())  == "カ1".encode()
    True
    >>> Identity().normalize(b"\\xff a")
    b'\\xff a'

``for_model(model)`` builds the normalizer a :class:`~tokenizer.model.Model` describes (its ``normalizer`` and
``pretokenizer`` specs together).
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

import numpy as np

from tokenizer.errors import InputError, ModelError

if TYPE_CHECKING:  # pragma: no cover
    from tokenizer.model import Model


class Normalizer:
    """Base class. Subclasses override :meth:`normalize` (bytes -> bytes) and, if needed, :meth:`denormalize`."""

    name = "base"
    is_identity = False

    def normalize(self, data: bytes) -> bytes:
        raise NotImplementedError

    def denormalize(self, data: bytes) -> bytes:
        """Inverse direction for decoding; the default returns the piece bytes unchanged."""
        return data

    def normalize_batch(self, data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Normalize texts packed Arrow-style: ``data`` uint8 (total bytes), ``offsets`` int64 (n + 1).

        Returns new ``(data, offsets)`` of the same layout. The base version loops in Python; fast normalizers
        override it with a kernel.
        """
        if self.is_identity:
            return data, offsets
        blob = data.tobytes()
        outputs = [self.normalize(blob[offsets[i]:offsets[i + 1]]) for i in range(len(offsets) - 1)]
        new_offsets = np.zeros(len(outputs) + 1, dtype=np.int64)
        np.cumsum([len(o) for o in outputs], out=new_offsets[1:])
        return np.frombuffer(b"".join(outputs), dtype=np.uint8), new_offsets


class Identity(Normalizer):
    """No change: any bytes in, the same bytes out (lossless, invalid UTF-8 included)."""

    name = "identity"
    is_identity = True

    def normalize(self, data: bytes) -> bytes:
        return bytes(data)


class _UnicodeForm(Normalizer):
    form = "NFC"

    def normalize(self, data: bytes) -> bytes:
        data = bytes(data)
        if data.isascii():  # ASCII is invariant under every Unicode normalization form
            return data
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{self.name} normalization needs valid UTF-8, but byte {exc.start} is not: "
                "fix the input encoding, or use a model with the identity normalizer (it accepts any bytes)"
            ) from None
        return unicodedata.normalize(self.form, text).encode("utf-8")

    def normalize_batch(self, data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`Normalizer.normalize_batch`, with a fast path: when the texts together are valid UTF-8 with
        every text starting on a character boundary, and already in this form (one C-speed check of the whole
        range), they are returned unchanged. A substring of a normalized string cut at character boundaries is
        normalized too, so no text is skipped that per-text normalization would change."""
        offsets = np.asarray(offsets, dtype=np.int64)
        first, last = int(offsets[0]), int(offsets[-1])
        starts = offsets[:-1][offsets[1:] > offsets[:-1]]
        if not np.any((data[starts] & 0xC0) == 0x80):
            try:
                text = data[first:last].tobytes().decode("utf-8")
            except UnicodeDecodeError:
                text = None  # the per-text path names the invalid text
            if text is not None and unicodedata.is_normalized(self.form, text):
                return data, offsets
        return super().normalize_batch(data, offsets)


class NFC(_UnicodeForm):
    """Unicode NFC (canonical composition): what BytePiece applies before training and encoding."""

    name = "nfc"
    form = "NFC"


class NFKC(_UnicodeForm):
    """Unicode NFKC (compatibility composition)."""

    name = "nfkc"
    form = "NFKC"


NORMALIZERS: dict[str, type[Normalizer]] = {"identity": Identity, "nfc": NFC, "nfkc": NFKC}


def for_model(model: "Model") -> Normalizer:
    """The normalizer described by ``model.normalizer`` and ``model.pretokenizer``."""
    name = model.normalizer.get("name", "identity")
    pretokenizer = model.pretokenizer.get("name", "none")
    if name == "precompiled" or pretokenizer == "sentencepiece":
        from tokenizer.interop.sentencepiece_normalizer import SentencePieceNormalizer

        return SentencePieceNormalizer.from_model(model)
    if name not in NORMALIZERS:
        raise ModelError(f"unknown normalizer {name!r}: use one of {sorted(NORMALIZERS)} or 'precompiled'")
    if pretokenizer not in ("none", "byte_level"):  # byte_level: the encoder's regex pre-split, no normalization
        raise ModelError(f"unknown pretokenizer {pretokenizer!r} for normalizer {name!r}")
    return NORMALIZERS[name]()
