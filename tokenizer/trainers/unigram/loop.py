"""The unigram trainer's driver loop: how E-steps run (:class:`EStepRunner`, :func:`local_runner` on threads over
fixed blocks), checkpoints of the loop's state, and :func:`run_em`, SentencePiece's EM-and-prune loop."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from tokenizer.errors import ConfigError
from tokenizer.kernels import unigram_train as kt
from tokenizer.packed import pack
from tokenizer.trainers.unigram.em import PieceTrie, lattice_probabilities, m_step, prune, unknown_score
from tokenizer.trainers.unigram.settings import E_STEP_SCALE, LOCAL_BLOCK_BYTES, UnigramSettings


@dataclass
class EStepRunner:
    """How the E-step and the Viterbi counts run: ``local`` over packed chunks here, or any callable pair with
    the same signatures (the Spark pipeline passes distributed ones). Both must return exact monoid sums."""

    e_step: Callable[[PieceTrie, np.ndarray], tuple[np.ndarray, float]]
    viterbi: Callable[[PieceTrie, np.ndarray], tuple[np.ndarray, int]]


def chunk_blocks(offsets: np.ndarray, block_bytes: int = LOCAL_BLOCK_BYTES) -> np.ndarray:
    """Boundaries (int64 chunk indices, first 0, last n) of contiguous blocks of about ``block_bytes`` bytes each.

    They depend only on the chunk table, never on the number of threads, so per-block float partials summed in
    block order give the same value for any thread count. Example: offsets [0, 3, 6, 9], 4 -> [0, 2, 3]."""
    n = len(offsets) - 1
    total = int(offsets[-1] - offsets[0]) if n > 0 else 0
    if n <= 0 or total <= block_bytes:
        return np.array([0, max(n, 0)], np.int64)
    targets = offsets[0] + np.arange(1, -(-total // block_bytes)) * block_bytes
    inner = np.searchsorted(offsets, targets, side="left")
    return np.unique(np.concatenate(([0], np.clip(inner, 1, n), [n]))).astype(np.int64)


def local_runner(chunks: Sequence[bytes], counts: np.ndarray, threads: int = 1,
                 block_bytes: int | None = None) -> EStepRunner:
    """The E-step and Viterbi counts over packed chunks in this process, on ``threads`` threads (the kernels
    release the GIL). The chunks are cut into fixed blocks (:func:`chunk_blocks`); the int64 counts add up exactly
    and the float objective is summed in block order, so every thread count gives the same results."""
    if threads < 1:
        raise ConfigError(f"threads={threads}: use 1 or more")
    data, offsets = pack(chunks)
    weights = np.asarray(counts, np.int64)
    blocks = chunk_blocks(offsets, block_bytes or LOCAL_BLOCK_BYTES)
    ranges = [(int(a), int(b)) for a, b in zip(blocks[:-1], blocks[1:])]

    def over_blocks(kernel_name: str, trie: PieceTrie, scores: np.ndarray):
        if kernel_name == "e":
            weights_of_pieces, weight_of_unknown = lattice_probabilities(scores)
        else:
            weights_of_pieces, weight_of_unknown = scores, unknown_score(scores)
        per_block = np.zeros(len(ranges), np.float64)
        n_workers = max(1, min(threads, len(ranges)))
        totals = [np.zeros(len(trie.pieces), np.int64) for _ in range(n_workers)]
        next_block = [0]
        lock = threading.Lock()

        def work(total: np.ndarray) -> None:
            while True:
                with lock:
                    k = next_block[0]
                    next_block[0] += 1
                if k >= len(ranges):
                    return
                a, b = ranges[k]
                if kernel_name == "e":
                    per_block[k] = kt.expected_counts(trie.units, weights_of_pieces, weight_of_unknown,
                                                      trie.max_bytes, trie.byte_mode, data, offsets[a:b + 1],
                                                      weights[a:b], E_STEP_SCALE, total)
                else:
                    per_block[k] = kt.viterbi_counts(trie.units, weights_of_pieces, weight_of_unknown,
                                                     trie.max_bytes, trie.byte_mode, data, offsets[a:b + 1],
                                                     weights[a:b], total)

        if n_workers == 1:
            work(totals[0])
        else:
            with ThreadPoolExecutor(max_workers=n_workers) as pool:
                for future in [pool.submit(work, total) for total in totals]:
                    future.result()
        for other in totals[1:]:
            totals[0] += other  # int64: exact in any order
        extra = 0.0
        for value in per_block.tolist():  # block order: the same float sum for every thread count
            extra += value
        return totals[0], extra

    return EStepRunner(e_step=lambda trie, scores: over_blocks("e", trie, scores),
                       viterbi=lambda trie, scores: (lambda r: (r[0], int(r[1])))(over_blocks("v", trie, scores)))


@dataclass
class TrainReport:
    seed_pieces: int = 0
    required_characters: int = 0
    em_rounds: int = 0
    log: list[str] = field(default_factory=list)


@dataclass
class EmState:
    """Where :func:`run_em` stands after a pruning round: every piece of its trie (bytes, in trie order), their
    float64 scores (``-inf`` once pruned), the surviving pieces' indices (int64, in list order) and the EM rounds
    run. Saving and restoring it gives the same rounds after it, bit for bit, as a run that never stopped."""

    pieces: list[bytes]
    scores: np.ndarray
    order: np.ndarray
    rounds: int


class Checkpoints:
    """Where :func:`run_em` saves its state after each pruning round and finds it again: ``load()`` -> the last
    saved :class:`EmState` or ``None``; ``save(state)``. This one keeps nothing (a run that cannot resume)."""

    def load(self) -> EmState | None:
        return None

    def save(self, state: EmState) -> None:
        pass


def run_em(pieces: list[bytes], scores: np.ndarray, runner: EStepRunner, settings: UnigramSettings,
           sentence_total: int, progress: Callable[[str], None] = lambda m: None,
           report: TrainReport | None = None, threads: int = 1,
           checkpoints: Checkpoints | None = None) -> tuple[list[bytes], np.ndarray]:
    """Rounds of EM sub-iterations then pruning, until a pruning round leaves at most ``1.1 * vocab_size``
    pieces (SentencePiece 0.2's loop: the last step is a pruning, so the result holds no piece that Viterbi never
    uses or that a split of it always beats, and its scores are the last M-step's). Returns the surviving pieces
    in list order and their scores (float64). After every pruning round the state goes to ``checkpoints``; a
    saved state found there is where the loop starts (``pieces`` and ``scores`` are then not used)."""
    checkpoints = checkpoints or Checkpoints()
    byte_mode = settings.variant == "byte"
    saved = checkpoints.load()
    if saved is not None:
        trie = PieceTrie(saved.pieces, byte_mode)
        scores, order, rounds = np.asarray(saved.scores, np.float64).copy(), np.asarray(saved.order, np.int64), \
            int(saved.rounds)
        progress(f"[em] resumed after round {rounds}: {len(order):,} pieces")
    else:
        trie = PieceTrie(pieces, byte_mode)
        scores = np.asarray(scores, np.float64).copy()
        order = np.arange(len(pieces), dtype=np.int64)
        rounds = 0
    desired = int(settings.vocab_size * 1.1)
    done = saved is not None and len(order) <= desired  # resumed from the last round's state
    while not done:
        for sub in range(settings.num_sub_iterations):
            started = time.perf_counter()
            expected, objective = runner.e_step(trie, scores)
            active = np.isfinite(scores)
            scores = m_step(active, expected)
            order = order[np.isfinite(scores[order])]
            rounds += 1
            progress(f"[em] round {rounds} (sub {sub}): {len(order):,} pieces, objective "
                     f"{-objective / max(sentence_total, 1):.4f}, {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        freq, _ = runner.viterbi(trie, scores)
        viterbi_seconds = time.perf_counter() - started
        scores, order = prune(trie, scores, order, freq, sentence_total, desired, settings.shrinking_factor,
                              threads)
        progress(f"[prune] {len(order):,} pieces kept: Viterbi counts {viterbi_seconds:.1f} s, pruning "
                 f"{time.perf_counter() - started - viterbi_seconds:.1f} s")
        if 4 * len(order) < len(trie.pieces):  # rebuild a smaller trie (faster lookups)
            kept = [trie.pieces[k] for k in order]
            kept_scores = scores[order]
            trie = PieceTrie(kept, byte_mode)
            scores = kept_scores.copy()
            order = np.arange(len(kept), dtype=np.int64)
        checkpoints.save(EmState(list(trie.pieces), scores, order, rounds))
        done = len(order) <= desired
    if report is not None:
        report.em_rounds = rounds
    return [trie.pieces[k] for k in order], scores[order]
