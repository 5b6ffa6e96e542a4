"""What reading a SentencePiece model needs of its normalizer without running it (no kernels, no Numba): the
precompiled charsmap blob's layout, the unknown piece's default surface, the byte of a BYTE piece.

    >>> _byte_piece_value(b"<0x41>"), _byte_piece_value(b"<0x4g>")
    (65, -1)
"""

from __future__ import annotations

import struct

import numpy as np

from tokenizer.errors import ModelError

DEFAULT_UNK_SURFACE = " \u2047 "


def split_charsmap(blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Split a precompiled charsmap into ``(trie, replacements)``: uint32 Darts-clone units and the uint8 blob of
    NUL-terminated replacement strings. Layout: ``<uint32 LE trie byte size><trie><replacements>``.

    Raises :class:`ModelError` when the blob is too short or the sizes disagree (a corrupted model).
    """
    blob = bytes(blob)
    if len(blob) <= 4:
        raise ModelError(f"precompiled charsmap of {len(blob)} bytes is broken (needs a 4-byte size and a trie)")
    (trie_size,) = struct.unpack_from("<I", blob)
    if trie_size > len(blob) - 4 or trie_size % 4 or trie_size == 0:
        raise ModelError(
            f"precompiled charsmap claims a {trie_size}-byte trie in a {len(blob)}-byte blob: the model file is "
            "corrupted; re-export it from SentencePiece"
        )
    trie = np.frombuffer(blob, dtype="<u4", count=trie_size // 4, offset=4).astype(np.uint32)
    replacements = np.frombuffer(blob[4 + trie_size:] + b"\x00", dtype=np.uint8).copy()
    return trie, replacements


def _byte_piece_value(piece: bytes) -> int:
    """The byte of a BYTE piece ``b"<0xAB>"`` (upper-case hex, as SentencePiece writes them), or -1."""
    piece = bytes(piece)
    if len(piece) == 6 and piece.startswith(b"<0x") and piece.endswith(b">"):
        digits = piece[3:5]
        if all(c in b"0123456789ABCDEF" for c in digits):
            return int(digits, 16)
    return -1
