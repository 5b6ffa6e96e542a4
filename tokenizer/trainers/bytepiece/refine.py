"""BytePiece training's optional EM refinement after pruning: a summable E-step per partition
(:class:`EStepStatistics`), the M-step on the driver, and :func:`refine_em`, the rounds over a chunked corpus."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tokenizer.trainers.bytepiece.ngrams import empty_counts, merge_counts
from tokenizer.trainers.bytepiece.pruning import PieceModel
from tokenizer.trainers.bytepiece.settings import TrainSettings


@dataclass
class EStepStatistics:
    """Summable E-step output of one partition: ``pieces`` (float64 or int64 per piece) and the adjacent-pair
    counts ``(keys, counts)`` (key ``left << 32 | right``, sorted). ``a + b`` merges two partitions'."""

    pieces: np.ndarray
    pairs: tuple[np.ndarray, np.ndarray]

    def __add__(self, other: "EStepStatistics") -> "EStepStatistics":
        return EStepStatistics(self.pieces + other.pieces, merge_counts(self.pairs, other.pairs))

    def to_bytes(self) -> bytes:
        """A self-describing blob (for a Spark row): dtype code, three lengths, then the arrays."""
        pieces = np.ascontiguousarray(self.pieces)
        code = b"i" if pieces.dtype.kind == "i" else b"f"
        pieces = pieces.astype("<i8" if code == b"i" else "<f8")
        keys = np.ascontiguousarray(self.pairs[0], "<i8")
        counts = np.ascontiguousarray(self.pairs[1], "<i8")
        header = code + np.array([len(pieces), len(keys)], "<i8").tobytes()
        return header + pieces.tobytes() + keys.tobytes() + counts.tobytes()

    @classmethod
    def from_bytes(cls, blob: bytes) -> "EStepStatistics":
        """Inverse of :meth:`to_bytes`."""
        code = blob[:1]
        n_pieces, n_pairs = np.frombuffer(blob[1:17], "<i8").tolist()
        body = np.frombuffer(blob[17:], "<i8" if code == b"i" else "<f8", count=n_pieces)
        rest = np.frombuffer(blob[17 + 8 * n_pieces:], "<i8")
        pieces = body.astype(np.int64 if code == b"i" else np.float64)
        return cls(pieces, (rest[:n_pairs].astype(np.int64), rest[n_pairs:2 * n_pairs].astype(np.int64)))


def em_e_step(pieces: Sequence[bytes], counts, data, offsets, settings: TrainSettings, with_pairs: bool = False):
    """Per partition: statistics of the chunks under the unigram model ``(pieces, counts)``, summable across
    partitions.

    ``viterbi`` mode: int64 counts of the pieces of the best segmentations; ``expected``: float64 posterior counts.
    Returns that array, or with ``with_pairs`` an :class:`EStepStatistics` that also counts adjacent pieces in the
    best segmentations (the candidates :func:`em_m_step` fills free vocabulary slots with).
    """
    model = PieceModel(pieces, counts)
    pairs = None
    if with_pairs:
        viterbi, pairs = model.viterbi_counts_and_pairs(data, offsets)
    elif settings.refine_em_mode == "viterbi":
        viterbi = model.viterbi_counts(data, offsets)[0]
    piece_stats = viterbi if settings.refine_em_mode == "viterbi" else model.expected_counts(data, offsets)[0]
    return EStepStatistics(piece_stats, pairs) if with_pairs else piece_stats


def em_m_step(pieces: Sequence[bytes], statistics, settings: TrainSettings | None = None,
              capacity: int | None = None, add_pieces: bool = True) -> tuple[list[bytes], np.ndarray]:
    """Driver: the new model from summed E-step statistics.

    Counts become the E-step's (expected counts rounded to integers, so the model stays a function of integers);
    single bytes keep at least 1 (every text stays segmentable); multi-byte pieces with count 0 are removed. With
    ``add_pieces``, the free slots up to ``capacity`` pieces are filled with the most frequent concatenations of
    two adjacent pieces (at most ``max_piece_length`` bytes, at least ``min_count`` occurrences, ties by bytes),
    each starting with its pair count; the next E-step re-estimates them. ``capacity`` defaults to the current
    number of pieces; a plain array of piece statistics (no pairs) only re-estimates.
    Example: pieces ``a, b`` (+ bytes), pair ``(a, b)`` seen 5 times, one free slot -> ``ab`` added with count 5.
    """
    if not isinstance(statistics, EStepStatistics):  # piece statistics alone: re-estimate only
        statistics = EStepStatistics(np.asarray(statistics), empty_counts())
    settings = settings or TrainSettings()
    capacity = len(pieces) if capacity is None else capacity
    stats = np.asarray(statistics.pieces, dtype=np.float64)
    keep_pieces, keep_counts = [], []
    for piece, value in zip(pieces, stats):
        rounded = int(np.floor(value + 0.5))
        if len(piece) == 1:
            keep_pieces.append(piece)
            keep_counts.append(max(1, rounded))
        elif rounded >= 1:
            keep_pieces.append(piece)
            keep_counts.append(rounded)
    free = capacity - len(keep_pieces)
    if add_pieces and free > 0 and len(statistics.pairs[0]):
        present = set(keep_pieces)
        candidates: dict[bytes, int] = {}
        keys, counts = statistics.pairs
        eligible = counts >= 1
        for key, count in zip(keys[eligible].tolist(), counts[eligible].tolist()):
            piece = pieces[key >> 32] + pieces[key & 0xFFFFFFFF]
            if len(piece) <= settings.max_piece_length and piece not in present:
                candidates[piece] = candidates.get(piece, 0) + count
        ranked = sorted((item for item in candidates.items() if item[1] >= settings.min_count),
                        key=lambda item: (-item[1], item[0]))[:free]
        for piece, count in ranked:
            keep_pieces.append(piece)
            keep_counts.append(count)
    order = sorted(range(len(keep_pieces)), key=keep_pieces.__getitem__)
    return [keep_pieces[i] for i in order], np.array([keep_counts[i] for i in order], dtype=np.int64)


def refine_em(pieces: list[bytes], counts, chunk_shards: Sequence[tuple[np.ndarray, np.ndarray]],
              settings: TrainSettings, capacity: int | None = None) -> tuple[list[bytes], np.ndarray]:
    """``settings.refine_em_rounds`` rounds of EM over the chunked corpus (E-step per shard, summed; M-step).

    Every round but the last also fills free slots (up to ``capacity`` pieces, default ``len(pieces)``) with
    frequent adjacent-piece concatenations; the last round only re-estimates, so every score is a count the final
    model's own segmentation produced.
    """
    counts = np.asarray(counts, dtype=np.int64)
    capacity = len(pieces) if capacity is None else capacity
    rounds = settings.refine_em_rounds
    for r in range(rounds):
        total = None
        for data, offsets in chunk_shards:
            stats = em_e_step(pieces, counts, data, offsets, settings, with_pairs=True)
            total = stats if total is None else total + stats
        if total is None:
            break
        pieces, counts = em_m_step(pieces, total, settings, capacity, add_pieces=r < rounds - 1)
    return pieces, counts
