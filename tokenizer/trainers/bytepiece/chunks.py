"""BytePiece training's input step: texts packed Arrow-style (:func:`pack_texts`, shared by every trainer) and
split into BytePiece's chunks (:func:`chunk_texts`: normalize, cut at newlines, optionally isolate digits)."""

from __future__ import annotations

from typing import Iterable

import numpy as np

from tokenizer.errors import InputError
from tokenizer.kernels.bytepiece_chunk import chunk_offsets_kernel
from tokenizer.normalizers import NORMALIZERS
from tokenizer.packed import as_packed, offsets_valid, pack
from tokenizer.trainers.bytepiece.settings import TrainSettings

_DIGIT_TABLE: np.ndarray | None = None


def _digit_table() -> np.ndarray:
    """uint8[0x110000]: 1 where ``re``'s ``\\d`` matches the code point (``str.isdecimal``, category Nd)."""
    global _DIGIT_TABLE
    if _DIGIT_TABLE is None:
        table = np.zeros(0x110000, dtype=np.uint8)
        for cp in range(0x110000):
            if chr(cp).isdecimal():
                table[cp] = 1
        _DIGIT_TABLE = table
    return _DIGIT_TABLE


_NO_DIGITS = np.zeros(1, dtype=np.uint8)


def _as_packed(data, offsets) -> tuple[np.ndarray, np.ndarray]:
    """:func:`tokenizer.packed.as_packed` with BytePiece's checks of the offsets (a single offset is any position)."""
    data, offsets = as_packed(data, offsets, check=False)
    if offsets.ndim != 1 or len(offsets) < 1:
        raise InputError("offsets must be a 1-d int64 array of n_texts + 1 positions (use [0] for no text)")
    if len(offsets) > 1 and not offsets_valid(offsets, len(data)):
        raise InputError(
            f"offsets must rise from >= 0 to <= len(data) = {len(data)}: rebuild them from the Arrow array's offsets"
        )
    return data, offsets


def pack_texts(texts: Iterable[bytes | str]) -> tuple[np.ndarray, np.ndarray]:
    """Pack texts Arrow-style: ``pack_texts([b"ab", "c"]) -> (uint8 [97, 98, 99], int64 [0, 2, 3])``."""
    blobs = []
    for i, text in enumerate(texts):
        if isinstance(text, str):
            text = text.encode("utf-8", errors="surrogatepass")
        elif not isinstance(text, (bytes, bytearray, memoryview)):
            raise InputError(f"text {i} is a {type(text).__name__}: pass str or bytes")
        blobs.append(bytes(text))
    return pack(blobs, writable=True)


def chunk_texts(data, offsets, settings: TrainSettings) -> tuple[np.ndarray, np.ndarray]:
    """Normalize documents and split them into BytePiece chunks.

    Args: ``data`` uint8 (all documents' bytes), ``offsets`` int64 ``(n_docs + 1,)``.
    Returns ``(data, chunk_offsets)`` in the same layout, one entry per chunk (empty documents give none).
    Raises :class:`InputError` for invalid UTF-8 under ``normalization="nfc"``.

    Example: ``[b"ab\\n\\ncd"]`` -> chunks ``[b"ab\\n\\n", b"cd"]``; with ``isolate_digits``, ``[b"a12"]`` ->
    ``[b"a", b"1", b"2"]``.
    """
    data, offsets = _as_packed(data, offsets)
    if settings.normalization != "identity":
        data, offsets = NORMALIZERS[settings.normalization]().normalize_batch(data, offsets)
        data = np.ascontiguousarray(data, dtype=np.uint8)
    table = _digit_table() if settings.isolate_digits else _NO_DIGITS
    chunk_offsets = chunk_offsets_kernel(data, offsets, int(settings.max_chunk_chars),
                                           int(settings.max_newline_run), bool(settings.isolate_digits), table)
    return data, chunk_offsets
