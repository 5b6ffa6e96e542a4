"""The base normalizer, the identity and the Unicode normal forms (NFC, NFKC).

A normalizer maps the UTF-8 bytes of one text to the bytes the segmenter sees, and ``denormalize`` maps the
concatenated piece bytes back to text. The default, :class:`Identity`, is lossless and accepts arbitrary bytes.

    >>> NFKC().normalize("ｶ①".encode())  == "カ1".encode()
    True
    >>> Identity().normalize(b"\\xff a")
    b'\\xff a'
"""

from __future__ import annotations

import unicodedata

import numpy as np

from tokenizer.errors import InputError
from tokenizer.packed import pack


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
        return pack(outputs)


class Identity(Normalizer):
    """No change: any bytes in, the same bytes out (lossless, invalid UTF-8 included)."""

    name = "identity"
    is_identity = True

    def normalize(self, data: bytes) -> bytes:
        return bytes(data)


# BMP characters that are the second of a two-character canonical decomposition (so may compose with the
# character before them), as unicodedata 14.0.0 has them; another Unicode version computes its own set.
_COMPOSITION_SECONDS_14 = (
    0x0300, 0x0301, 0x0302, 0x0303, 0x0304, 0x0306, 0x0307, 0x0308, 0x0309, 0x030A, 0x030B, 0x030C, 0x030F, 0x0311,
    0x0313, 0x0314, 0x031B, 0x0323, 0x0324, 0x0325, 0x0326, 0x0327, 0x0328, 0x032D, 0x032E, 0x0330, 0x0331, 0x0338,
    0x0342, 0x0345, 0x05B4, 0x05B7, 0x05B8, 0x05B9, 0x05BC, 0x05BF, 0x05C1, 0x05C2, 0x0653, 0x0654, 0x0655, 0x093C,
    0x09BC, 0x09BE, 0x09D7, 0x0A3C, 0x0B3C, 0x0B3E, 0x0B56, 0x0B57, 0x0BBE, 0x0BD7, 0x0C56, 0x0CC2, 0x0CD5, 0x0CD6,
    0x0D3E, 0x0D57, 0x0DCA, 0x0DCF, 0x0DDF, 0x0F72, 0x0F74, 0x0F80, 0x0FB5, 0x0FB7, 0x102E, 0x1B35, 0x3099, 0x309A,
)
_STABLE_TABLES: dict[str, np.ndarray] = {}


def composition_seconds() -> set[int]:
    """BMP code points that canonical composition may join to the character before them: the second characters of
    two-character canonical decompositions, and Hangul's vowel and trailing jamo (composed by rule)."""
    if unicodedata.unidata_version == "14.0.0":
        seconds = set(_COMPOSITION_SECONDS_14)
    else:
        seconds = set()
        for cp in range(0x110000):
            decomposition = unicodedata.decomposition(chr(cp)).split()
            if len(decomposition) == 2 and not decomposition[0].startswith("<"):
                second = int(decomposition[1], 16)
                if second < 0x10000:
                    seconds.add(second)
    return seconds | set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))


def stable_characters(form: str) -> np.ndarray:
    """uint8[0x10000]: 1 for each BMP character ``c`` that normalization to ``form`` (NFC or NFKC) leaves alone
    wherever it stands: ``c`` is its own ``form``, has combining class 0, and neither ``c`` nor the first character
    of its decomposition may compose with a character before it. A text made only of such characters (and ASCII)
    is in ``form`` already: the Unicode quick check's "yes" with a narrower table. Built once per process.
    Example: ``stable_characters("NFC")[ord("が")] == 1``, ``[0x3099] == 0`` (a combining voiced mark)."""
    table = _STABLE_TABLES.get(form)
    if table is None:
        decomposed = "NFD" if form == "NFC" else "NFKD"
        seconds = composition_seconds()
        table = np.zeros(0x10000, dtype=np.uint8)
        for cp in range(0x10000):
            if 0xD800 <= cp < 0xE000 or cp in seconds:
                continue
            char = chr(cp)
            if unicodedata.combining(char) or unicodedata.normalize(form, char) != char:
                continue
            if ord(unicodedata.normalize(decomposed, char)[0]) in seconds:
                continue
            table[cp] = 1
        _STABLE_TABLES[form] = table
    return table


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
        """As :meth:`Normalizer.normalize_batch`, with a fast path: when every text is valid UTF-8 on its own and
        already in this form, the texts are returned unchanged. A substring of a normalized string cut at character
        boundaries is normalized too, so no text is skipped that per-text normalization would change. "Already in
        this form" is first asked of a Numba kernel without the GIL (every character in
        :func:`stable_characters`: :func:`tokenizer.kernels.normalize.marked_texts`), then, of texts that are
        all valid, of ``unicodedata.is_normalized``."""
        from tokenizer.kernels.normalize import TEXTS_MARKED, TEXTS_VALID, marked_texts

        offsets = np.asarray(offsets, dtype=np.int64)
        verdict = marked_texts(data, offsets, stable_characters(self.form))
        if verdict == TEXTS_MARKED:
            return data, offsets
        if verdict == TEXTS_VALID:
            text = data[offsets[0]:offsets[-1]].tobytes().decode("utf-8")
            if unicodedata.is_normalized(self.form, text):
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
