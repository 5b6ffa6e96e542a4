"""The unigram trainer's EM steps over a :class:`PieceTrie`: the E-step (expected counts, an exact int64 monoid),
the Bayesian M-step, Viterbi counts, and SentencePiece's loss-based pruning."""

from __future__ import annotations

import functools
import math
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np

from tokenizer.kernels import unigram_train as kt
from tokenizer.kernels.double_array import DoubleArray
from tokenizer.packed import pack
from tokenizer.trainers.unigram.settings import E_STEP_SCALE, MIN_EXPECTED, UNK_PENALTY

digamma = kt.digamma  # SentencePiece's digamma (Numba; its Python twin: tokenizer.twins.unigram_train.ref_digamma)


class PieceTrie:
    """Double-array trie over a fixed list of pieces (values: their indices); scores change per round, ``-inf``
    marks removed pieces. Picklable (plain arrays) so a Spark broadcast can carry it with the scores.
    Example: ``PieceTrie([b"a", b"ab"], False).max_bytes`` -> 2.
    """

    def __init__(self, pieces: Sequence[bytes], byte_mode: bool):
        self.pieces = list(pieces)
        self.byte_mode = bool(byte_mode)
        self.units = DoubleArray.build(self.pieces).units
        self.max_bytes = int(max((len(p) for p in self.pieces), default=1))

    @functools.cached_property
    def index(self) -> dict[bytes, int]:
        """``{piece: id}``, built on first use (training never needs it; a broadcast trie does not carry it)."""
        return {p: i for i, p in enumerate(self.pieces)}


def unknown_score(scores: np.ndarray) -> float:
    """The unknown node's log score: the lowest active score minus :data:`UNK_PENALTY` (SentencePiece's rule;
    ``-UNK_PENALTY`` when no piece is active). ``unknown_score(np.array([-1.0, -3.0, -inf]))`` -> -13.0."""
    active = scores[np.isfinite(scores)]
    return float(active.min()) - UNK_PENALTY if len(active) else -UNK_PENALTY


def lattice_probabilities(scores: np.ndarray) -> tuple[np.ndarray, float]:
    """What the E-step kernel takes: ``(exp(scores) float64 with 0 for inactive pieces, the unknown node's
    probability)``. ``lattice_probabilities(np.array([0.0, -inf]))`` -> ``([1.0, 0.0], exp(-10))``."""
    return np.exp(scores), math.exp(unknown_score(scores))


def e_step(trie: PieceTrie, scores: np.ndarray, data: np.ndarray, offsets: np.ndarray,
           weights: np.ndarray) -> tuple[np.ndarray, float]:
    """Expected counts of one shard of chunks: ``(int64 fixed-point counts per trie piece, sum weight*logZ)``.
    A monoid: shards' results add up (the int64 part exactly)."""
    expected = np.zeros(len(trie.pieces), np.int64)
    probs, unk_prob = lattice_probabilities(scores)
    objective = kt.expected_counts(trie.units, probs, unk_prob, trie.max_bytes, trie.byte_mode, data, offsets,
                                   weights, E_STEP_SCALE, expected)
    return expected, float(objective)


def m_step(active: np.ndarray, expected_fixed: np.ndarray) -> np.ndarray:
    """New scores (float64, ``-inf`` for dropped pieces) from summed fixed-point expected counts: pieces expected
    fewer than 0.5 times go; the others get ``digamma(count) - digamma(total)`` (SentencePiece's Bayesian EM)."""
    expected = expected_fixed.astype(np.float64) / E_STEP_SCALE
    keep = active & (expected >= MIN_EXPECTED)
    scores = np.empty(len(expected), np.float64)
    total = float(expected[keep].sum())
    kt.bayesian_scores(expected, keep, digamma(total), scores)
    return scores


def viterbi_step(trie: PieceTrie, scores: np.ndarray, data, offsets, weights) -> tuple[np.ndarray, int]:
    """Viterbi piece frequencies of one shard (int64, exact monoid) and its weighted token count."""
    freq = np.zeros(len(trie.pieces), np.int64)
    tokens = kt.viterbi_counts(trie.units, scores, unknown_score(scores), trie.max_bytes, trie.byte_mode, data,
                               offsets, weights, freq)
    return freq, int(tokens)


def prune(trie: PieceTrie, scores: np.ndarray, order: np.ndarray, freq: np.ndarray, sentence_total: int,
          desired: int, shrinking_factor: float, threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """SentencePiece's ``PruneSentencePieces``: keep pieces without a second-best segmentation, then those whose
    removal would lose the most likelihood, down to ``max(desired, shrinking_factor * size)`` pieces.

    ``order``: the active pieces' trie ids in SentencePiece's list order. Returns ``(new scores, new order)``.
    ``threads``: the pieces' second-best segmentations are found on that many threads (each piece's alone: the
    same result for any value).
    """
    pieces = [trie.pieces[k] for k in order]
    piece_data, piece_offsets = pack(pieces)
    status, alt_offsets, alt_ids = piece_alternatives(trie, scores, order, piece_data, piece_offsets, threads)
    freq_f = freq.astype(np.float64)
    total = float(freq_f[order].sum())
    log_total = math.log(total) if total > 0 else 0.0
    losses = np.empty(len(order), np.float64)
    kt.pruning_losses(order.astype(np.int64), freq_f, status, alt_offsets, alt_ids, float(sentence_total), total,
                      log_total, losses)
    used = freq[order] != 0
    kept = order[used & (status == 0)].tolist()
    candidate_positions = np.flatnonzero(used & (status == 2))
    candidate_ids = order[candidate_positions]
    ranked = candidate_ids[np.lexsort((candidate_ids, -losses[candidate_positions]))]  # loss desc, then id
    target = max(desired, int(shrinking_factor * len(order)))
    kept.extend(ranked[:max(0, target - len(kept))].tolist())
    new_scores = np.full(len(scores), -np.inf)
    kept_array = np.asarray(kept, np.int64)
    new_scores[kept_array] = scores[kept_array]
    return new_scores, kept_array


def piece_alternatives(trie: PieceTrie, scores: np.ndarray, order: np.ndarray, piece_data: np.ndarray,
                       piece_offsets: np.ndarray, threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``kt.piece_alternatives`` over the pieces ``order`` (packed as ``piece_data``/``piece_offsets``), the pieces
    cut into ``threads`` contiguous parts run at once (the kernel releases the GIL; every piece is independent)
    and the parts' ``(status int8, alternative offsets int64, alternative ids int64)`` joined in order."""
    order = np.asarray(order, np.int64)
    unk = unknown_score(scores)
    n = len(order)
    cuts = np.unique(np.linspace(0, n, max(1, min(int(threads), n)) + 1).astype(np.int64))

    def part(a: int, b: int):
        data = piece_data[piece_offsets[a]:piece_offsets[b]]
        offsets = piece_offsets[a:b + 1] - piece_offsets[a]
        status = np.zeros(b - a, np.int8)
        alt_offsets = np.zeros(b - a + 1, np.int64)
        alt_ids = np.zeros(max(1, len(data)), np.int64)
        written = kt.piece_alternatives(trie.units, scores, unk, trie.max_bytes, trie.byte_mode, data, offsets,
                                        order[a:b], status, alt_offsets, alt_ids)
        return status, alt_offsets, alt_ids[:written]

    ranges = [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]
    if len(ranges) <= 1:
        results = [part(0, n)]
    else:
        with ThreadPoolExecutor(max_workers=len(ranges)) as pool:
            results = list(pool.map(lambda r: part(*r), ranges))
    status = np.concatenate([r[0] for r in results])
    alt_offsets = np.zeros(n + 1, np.int64)
    base = 0
    for (a, b), r in zip(ranges, results):
        alt_offsets[a + 1:b + 1] = r[1][1:] + base
        base += len(r[2])
    alt_ids = np.concatenate([r[2] for r in results] + [np.zeros(1, np.int64)])
    return status, alt_offsets, alt_ids
