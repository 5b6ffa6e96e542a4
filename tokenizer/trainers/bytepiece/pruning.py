"""BytePiece training's pruning (driver): the unigram :class:`PieceModel` over a fixed piece list, re-segmenting
dropped pieces onto kept ones, and the nested pruning to every requested vocabulary size."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from tokenizer.errors import InputError
from tokenizer.kernels.double_array import DoubleArray, step, unit_value
from tokenizer.kernels.ngram_count import run_length_counts_kernel
from tokenizer.kernels.piece_lattice import piece_forward_backward_kernel, piece_viterbi_counts_kernel
from tokenizer.trainers.bytepiece.chunks import _as_packed, pack_texts
from tokenizer.trainers.bytepiece.pieces import pack_pieces, piece_list
from tokenizer.trainers.bytepiece.settings import TrainSettings


class PieceModel:
    """A unigram model over a fixed piece list: the pieces' double array (built on first use, see :meth:`trie`) and
    log probabilities (``log(c / total)``).

    Plain arrays; picklable (the double array is rebuilt where it is used). ``pieces`` sorted by bytes; ``counts``
    int64 (or float64 for EM's expected counts).
    """

    def __init__(self, pieces: Sequence[bytes], counts):
        self.pieces = list(pieces)
        self.counts = np.asarray(counts)
        counts64 = self.counts.astype(np.float64)
        with np.errstate(divide="ignore"):
            self.scores = np.log(counts64) - np.log(np.float64(counts64.sum()))
        self.piece_data, self.piece_offsets = pack_pieces(self.pieces)
        self._trie = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_trie"] = None
        return state

    def trie(self) -> np.ndarray:
        """The units of a :class:`~tokenizer.kernels.double_array.DoubleArray` of the pieces, valued by their index
        (an empty piece matches nothing; of repeated pieces the last index is matched). Call it once before
        threads share the model: it is built on first use."""
        if self._trie is None:
            try:
                self._trie = DoubleArray.build(self.pieces).units
            except ValueError:  # an empty or repeated piece
                index = {bytes(piece): i for i, piece in enumerate(self.pieces) if len(piece)}
                self._trie = DoubleArray.build(list(index), np.fromiter(index.values(), np.int32, len(index))).units
        return self._trie

    def viterbi_counts(self, data, offsets, weights=None) -> tuple[np.ndarray, int]:
        """``(counts int64[n_pieces], n_tokens)``: pieces of each text's best segmentation, times its weight."""
        data, offsets = _as_packed(data, offsets)
        n_texts = len(offsets) - 1
        weights = np.ones(n_texts, np.int64) if weights is None else np.asarray(weights, np.int64)
        counts = np.zeros(len(self.pieces), np.int64)
        n_tokens, n_bad, _ = piece_viterbi_counts_kernel(data, offsets, weights, self.trie(), self.scores, counts,
                                                         False)
        if n_bad:
            raise InputError(f"{n_bad} texts cannot be segmented with these pieces: the 256 single bytes are missing")
        return counts, int(n_tokens)

    def viterbi_counts_and_pairs(self, data, offsets) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """Piece counts of the best segmentations plus the counts of adjacent piece pairs, keyed
        ``left_index << 32 | right_index`` (sorted, distinct: a count table :func:`merge_counts` sums)."""
        data, offsets = _as_packed(data, offsets)
        counts = np.zeros(len(self.pieces), np.int64)
        _, n_bad, pairs = piece_viterbi_counts_kernel(data, offsets, np.ones(len(offsets) - 1, np.int64), self.trie(),
                                                      self.scores, counts, True)
        if n_bad:
            raise InputError(f"{n_bad} texts cannot be segmented with these pieces: the 256 single bytes are missing")
        pairs.sort()
        return counts, run_length_counts_kernel(pairs)

    def expected_counts(self, data, offsets) -> tuple[np.ndarray, float]:
        data, offsets = _as_packed(data, offsets)
        return piece_forward_backward_kernel(data, offsets, np.ones(len(offsets) - 1), self.trie(), self.scores,
                                             len(self.pieces))

    def segment(self, text: bytes) -> list[bytes]:
        """The best segmentation of one text (for inspection): ``model.segment(b"abc")``. The Viterbi of
        :func:`~tokenizer.kernels.piece_lattice.piece_viterbi_counts_kernel`, with back-pointers, in Python."""
        units = self.trie()
        data = pack_texts([text])[0]
        n = len(data)
        best = [0.0] + [-math.inf] * n
        back = [(0, -1)] * (n + 1)
        for s in range(n):
            if best[s] == -math.inf:
                continue
            node = units[0]
            for e in range(s + 1, n + 1):
                node = step(units, node, data[e - 1])
                if node < 0:
                    break
                p = unit_value(units, node)
                if p >= 0 and best[s] + self.scores[p] > best[e]:
                    best[e], back[e] = best[s] + self.scores[p], (s, p)
        out = []
        e = n
        while e > 0:
            s, p = back[e]
            out.append(self.pieces[p])
            e = s
        return out[::-1]


def resegment_counts(keep: Sequence[bytes], keep_counts, items, item_counts) -> np.ndarray:
    """Counts (int64, one per kept piece) gained by segmenting each item with the kept pieces (unigram Viterbi,
    ``log p = log(c / total)``), weighted by the item's count. Per partition when the dropped pieces are many:
    the results of several partitions add up.

    ``items`` is a list of bytes or ``(piece_data, piece_offsets)``. Example: keep ``a, b, ab`` (+ bytes), item
    ``abab`` seen 3 times -> ``ab`` gains 6.
    """
    model = PieceModel(list(keep), keep_counts)
    data, offsets = (np.asarray(items[0], np.uint8), np.asarray(items[1], np.int64)) if isinstance(items, tuple) \
        else pack_texts(items)
    counts, _ = model.viterbi_counts(data, offsets, np.asarray(item_counts, np.int64))
    return counts


_resegment = resegment_counts


def candidate_mask(lengths, counts, settings: TrainSettings) -> np.ndarray:
    """bool per piece (``lengths``, ``counts``: int64 per piece): kept as a candidate (a single byte, or at most
    ``max_piece_length`` bytes and at least ``min_count`` occurrences); the others are re-segmented onto the
    candidates (:func:`resegment_counts`). Example: lengths [1, 2, 2], counts [1, 9, 3], min_count 8 -> [True,
    True, False]."""
    lengths = np.asarray(lengths, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    return (lengths == 1) | ((lengths <= settings.max_piece_length) & (counts >= settings.min_count))


def _drop_wasted(keep: list[bytes], counts: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    """Re-segment every piece with all pieces; keep those some segmentation uses; repeat until the size is
    stable (BytePiece's "prune wasted pieces" loop)."""
    while True:
        before = len(keep)
        new_counts = _resegment(keep, counts, keep, counts)
        used = np.flatnonzero(new_counts > 0)
        keep = [keep[i] for i in used]
        counts = new_counts[used]
        if len(keep) == before:
            return keep, counts


def complete_bytes(pieces: list[bytes], counts) -> tuple[list[bytes], np.ndarray]:
    """Add each missing single byte with count 1 (as BytePiece does); result sorted by bytes."""
    counts = np.asarray(counts, dtype=np.int64)
    present = {p for p in pieces if len(p) == 1}
    missing = [bytes([b]) for b in range(256) if bytes([b]) not in present]
    merged = sorted(zip(list(pieces) + missing, counts.tolist() + [1] * len(missing)))
    return [p for p, _ in merged], np.array([c for _, c in merged], dtype=np.int64)


_complete_bytes = complete_bytes


def prune_candidates(keep: Sequence[bytes], keep_counts, settings: TrainSettings
                     ) -> dict[int, tuple[list[bytes], np.ndarray]]:
    """The driver's part of pruning once the dropped pieces' counts were moved onto the candidates: the "wasted
    pieces" loop, then every vocab size (largest first, nested). See :func:`prune_pieces`."""
    order = sorted(range(len(keep)), key=keep.__getitem__)
    keep = [bytes(keep[i]) for i in order]
    keep_counts = np.asarray(keep_counts, dtype=np.int64)[order]
    keep, keep_counts = _drop_wasted(keep, keep_counts)
    results: dict[int, tuple[list[bytes], np.ndarray]] = {}
    for vocab_size in sorted(settings.vocab_sizes, reverse=True):
        cap = int(vocab_size) - len(settings.special_tokens)
        if len(keep) > cap:
            rank = sorted(range(len(keep)), key=lambda i: (len(keep[i]) > 1, -int(keep_counts[i]), -len(keep[i]),
                                                           keep[i]))
            top = sorted(rank[:cap])
            rest = rank[cap:]
            new_keep = [keep[i] for i in top]
            new_counts = keep_counts[top]
            new_counts = new_counts + _resegment(new_keep, new_counts, [keep[i] for i in rest], keep_counts[rest])
            keep, keep_counts = _drop_wasted(new_keep, new_counts)
        results[int(vocab_size)] = (list(keep), keep_counts.copy())
    return results


def prune_pieces(pieces, counts, settings: TrainSettings) -> dict[int, tuple[list[bytes], np.ndarray]]:
    """BytePiece's pruning (driver), for every requested vocab size (nested, largest first).

    Args: ``pieces``: list of bytes, or ``(piece_data, piece_offsets)``; ``counts`` int64, one per piece (distinct
    pieces, any order). Returns ``{vocab_size: (pieces sorted by bytes, counts int64)}``; each piece list holds the
    256 single bytes and at most ``vocab_size - len(special_tokens)`` pieces in all (fewer when the corpus offers
    fewer, as in BytePiece). See the module docstring, step 5.

    The same in three distributable steps (the Spark job's, :func:`pipelines.train.bytepiece.reduce_pieces`):
    ``mask = candidate_mask(...)`` per partition, collect the candidates (plus :func:`complete_bytes`), broadcast
    them, sum ``resegment_counts(candidates, counts, dropped, dropped_counts)`` over the partitions of dropped
    pieces, add it to the candidates' counts, then :func:`prune_candidates` on the driver.
    """
    settings.validate()
    if isinstance(pieces, tuple):
        pieces = piece_list(*pieces)
    pieces = [bytes(p) for p in pieces]
    counts = np.asarray(counts, dtype=np.int64)
    if len(pieces) != len(counts):
        raise InputError(f"{len(pieces)} pieces but {len(counts)} counts: pass one count per piece")
    pieces, counts = complete_bytes(pieces, counts)
    kept = candidate_mask(np.fromiter(map(len, pieces), np.int64, len(pieces)), counts, settings)
    keep = [p for p, k in zip(pieces, kept) if k]
    keep_counts = counts[kept]
    drop = [p for p, k in zip(pieces, kept) if not k]
    if drop:
        keep_counts = keep_counts + resegment_counts(keep, keep_counts, drop, counts[~kept])
    return prune_candidates(keep, keep_counts, settings)
