"""BytePiece training's piece step: chunks segmented with the n-gram language model and the pieces counted (a
monoid: :func:`segment_and_count_pieces`, :func:`merge_piece_counts`, :func:`empty_piece_counts`), and the
helpers between piece lists and packed arrays."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from tokenizer.kernels.byte_string_count import count_byte_strings_kernel, merge_byte_string_counts_kernel
from tokenizer.kernels.ngram_segment import ngram_viterbi_kernel
from tokenizer.packed import unpack
from tokenizer.trainers.bytepiece.chunks import _as_packed, pack_texts
from tokenizer.trainers.bytepiece.ngrams import NgramModel
from tokenizer.trainers.bytepiece.settings import TrainSettings


def empty_piece_counts() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The empty piece count: ``(piece_data uint8[0], piece_offsets int64[1] = [0], counts int64[0])``."""
    return np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)


def segment_chunks(model: NgramModel, data, offsets) -> np.ndarray:
    """Piece end offsets (int64) of the n-gram Viterbi over every chunk (see :func:`segment_and_count_pieces`)."""
    data, offsets = _as_packed(data, offsets)
    table, bits, unigrams, bigrams = model.lookup_table()
    return ngram_viterbi_kernel(data, offsets, int(model.order), bool(model.ensure_unicode), table, int(bits),
                                  unigrams, bigrams)


def segment_and_count_pieces(model: NgramModel, data, offsets, settings: TrainSettings
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Segment every chunk with the n-gram model and count the pieces (per partition).

    Args: ``data`` uint8, ``offsets`` int64 ``(n_chunks + 1,)`` from :func:`chunk_texts`.
    Returns ``(piece_data uint8, piece_offsets int64 (n + 1,), counts int64 (n,))``, distinct pieces sorted by
    bytes: the buffers of an Arrow binary array plus its counts. Example: with an n-gram model of single bytes
    only, ``[b"aba"]`` -> pieces ``a`` (2), ``b`` (1).
    """
    del settings  # the model carries order and ensure_unicode
    data, offsets = _as_packed(data, offsets)
    if len(offsets) < 2 or offsets[-1] == offsets[0]:
        return empty_piece_counts()
    ends = segment_chunks(model, data, offsets)
    # chunks are contiguous, so every piece starts where the previous one ended
    starts = np.empty_like(ends)
    starts[1:] = ends[:-1]
    starts[0] = offsets[0]
    return count_byte_strings_kernel(data, starts, ends)


def merge_piece_counts(a, b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum two piece counts ``(piece_data, piece_offsets, counts)`` sorted by bytes; ``empty_piece_counts()`` is
    neutral."""
    return merge_byte_string_counts_kernel(np.asarray(a[0], np.uint8), np.asarray(a[1], np.int64),
                                             np.asarray(a[2], np.int64), np.asarray(b[0], np.uint8),
                                             np.asarray(b[1], np.int64), np.asarray(b[2], np.int64))


#: Pieces of packed arrays, ``(b"aab", [0, 1, 3]) -> [b"a", b"ab"]`` (:func:`tokenizer.packed.unpack`).
piece_list = unpack


def pack_pieces(pieces: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``[b"a", b"ab"] -> (uint8 b"aab", int64 [0, 1, 3])``."""
    return pack_texts(pieces)
