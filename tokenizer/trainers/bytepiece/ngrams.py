"""BytePiece training's n-gram step: byte n-gram counts of chunks (a monoid: :func:`count_ngrams`,
:func:`merge_counts`, :func:`empty_counts`) and the pruned n-gram language model built from them on the driver."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tokenizer.errors import ConfigError
from tokenizer.kernels.ngram_count import (MAX_ORDER, expand_prefixes_kernel, maximal_ngram_keys_kernel,
                                           merge_sorted_counts_kernel, pack_ngram, run_length_counts_kernel,
                                           sort_keys_kernel)
from tokenizer.kernels.ngram_segment import build_lookup_table_kernel, lookup_table_size
from tokenizer.memory import fresh_array
from tokenizer.trainers.bytepiece.chunks import _as_packed
from tokenizer.trainers.bytepiece.settings import TrainSettings


_BYTE_SHIFT_FIRST = 3 + 8 * 6  # a packed key's first byte sits at this bit


def empty_counts() -> tuple[np.ndarray, np.ndarray]:
    """The empty n-gram count (the monoid's identity): ``(int64[0], int64[0])``."""
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)


def count_maximal_ngrams(data, offsets, order: int, block_positions: int = 1 << 24
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Count the longest n-gram at every position of each chunk (length ``min(order, bytes left in the chunk)``).

    Args: as :func:`count_ngrams`. Returns ``(keys, counts)``: int64, sorted by key, distinct; each count is the
    number of positions whose longest n-gram the key is. Blocks of at most ``block_positions`` keys are sorted and
    run-length counted, blocks merged. Every n-gram's count is the sum over the longest ones it begins
    (:func:`expand_maximal`). Example: ``count_maximal_ngrams(b"aab", [0, 3], 2)`` -> ``{aa: 1, ab: 1, b: 1}``.
    """
    if not 1 <= int(order) <= MAX_ORDER:
        raise ConfigError(f"order={order} is invalid: use 1..{MAX_ORDER}")
    data, offsets = _as_packed(data, offsets)
    maximal = empty_counts()
    if len(offsets) < 2 or offsets[-1] == offsets[0]:
        return maximal
    first = 0
    scratch = np.zeros(0, np.int64)
    while first < len(offsets) - 1:
        last = int(np.searchsorted(offsets, offsets[first] + block_positions, side="right")) - 1
        last = min(max(last, first + 1), len(offsets) - 1)
        keys = maximal_ngram_keys_kernel(data, offsets[first:last + 1], int(order))
        if len(scratch) < len(keys):
            scratch = np.empty(len(keys), np.int64)
        sort_keys_kernel(keys, scratch)
        maximal = merge_counts(maximal, run_length_counts_kernel(keys))
        first = last
    return maximal


def expand_maximal(maximal: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Every n-gram's count from the counts of the longest ones (:func:`count_maximal_ngrams`): an n-gram's count is
    the sum over the longest n-grams it begins, found in one pass over them in sorted order. Example:
    ``{aa: 1, ab: 1, b: 1}`` -> ``{a: 2, aa: 1, ab: 1, b: 1}``."""
    return expand_prefixes_kernel(np.asarray(maximal[0], np.int64), np.asarray(maximal[1], np.int64))


def count_ngrams(data, offsets, order: int, block_positions: int = 1 << 24) -> tuple[np.ndarray, np.ndarray]:
    """Count every byte n-gram of length ``1..order`` inside each chunk.

    Args: ``data`` uint8, ``offsets`` int64 ``(n_chunks + 1,)`` (from :func:`chunk_texts`), ``order`` 1..7.
    Returns ``(keys, counts)``: int64, sorted by key (= by bytes), distinct; keys packed as
    :mod:`tokenizer.kernels.ngram_count` documents (bytes at the top, length in the low 3 bits).

    Only one n-gram per position, the longest, is materialized and counted (:func:`count_maximal_ngrams`); every
    shorter n-gram's count is then the sum over the longest ones it begins (:func:`expand_maximal`). (Sorting beat
    an open-addressing hash count here several times over: sequential memory traffic instead of a cache miss per
    byte.) Example: ``count_ngrams(b"aab", [0, 3], 2)`` -> ``{a: 2, aa: 1, ab: 1, b: 1}``.
    """
    return expand_maximal(count_maximal_ngrams(data, offsets, order, block_positions))


#: bits of a packed key below its second byte: keys equal above them begin with the same two bytes
_BELOW_SECOND_BYTE = 3 + 8 * (6 - 1)


def leading_pair(keys: np.ndarray) -> np.ndarray:
    """The packed keys cut to their first two bytes (int64; a single byte keeps one): every n-gram of two or more
    bytes has the leading pair of the longest n-grams it begins, so a table split by it can be expanded part by
    part (:func:`expand_prefix_form`). Example: the keys of ``abc`` and ``ab`` -> both the key of ``ab`` without
    its length bits."""
    return (np.asarray(keys, np.int64) >> _BELOW_SECOND_BYTE) << _BELOW_SECOND_BYTE


def prefix_form(maximal: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A maximal count (:func:`count_maximal_ngrams`) as what the n-gram reduce shuffles: the exact count of every
    single byte (the longest n-grams it begins), plus the longest n-grams of two or more bytes. Sums of such
    tables (:func:`merge_counts`) stay in this form, and any part of one holding every key of some leading pairs
    (:func:`leading_pair`) expands to the exact counts of the n-grams of those pairs (:func:`expand_prefix_form`).
    Example: ``{aa: 1, ab: 1, b: 1}`` -> ``{a: 2, aa: 1, ab: 1, b: 1}`` (here already every n-gram)."""
    keys, counts = np.asarray(maximal[0], np.int64), np.asarray(maximal[1], np.int64)
    if not len(keys):
        return empty_counts()
    first_byte = keys >> _BYTE_SHIFT_FIRST
    starts = np.flatnonzero(np.concatenate(([True], first_byte[1:] != first_byte[:-1])))
    byte_counts = (first_byte[starts] << _BYTE_SHIFT_FIRST | 1, np.add.reduceat(counts, starts))
    longer = (keys & 7) != 1
    return merge_counts(byte_counts, (keys[longer], counts[longer]))


def expand_prefix_form(table: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Exact n-gram counts from a :func:`prefix_form` table (or a sum of them, or a part holding whole leading
    pairs): single bytes as they are, every n-gram of two or more bytes summed over the longest ones it begins.
    ``expand_prefix_form(prefix_form(m)) == expand_maximal(m)``. Example: ``{a: 5, ab: 2, abc: 1}`` ->
    ``{a: 5, ab: 3, abc: 1}``."""
    keys, counts = np.asarray(table[0], np.int64), np.asarray(table[1], np.int64)
    single = (keys & 7) == 1
    expanded_keys, expanded_counts = expand_maximal((keys[~single], counts[~single]))
    longer = (expanded_keys & 7) != 1
    return merge_counts((keys[single], counts[single]), (expanded_keys[longer], expanded_counts[longer]))


def merge_counts(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sum two n-gram counts (each sorted by key, distinct). Associative, commutative, ``empty_counts()`` neutral."""
    return merge_sorted_counts_kernel(np.asarray(a[0], np.int64), np.asarray(a[1], np.int64),
                                        np.asarray(b[0], np.int64), np.asarray(b[1], np.int64))


def join_counts(tables: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The sum of n-gram counts ``(keys, counts)`` (int64, each sorted by key) as one sorted table, in about 32 bytes
    per entry at most: the tables are copied into one pair of arrays and ``tables`` is emptied (views of a
    collect's buffers can then be freed), sorted stably (timsort merges the sorted runs) and equal keys summed.
    Example: ``[([1, 5], [2, 1]), ([3, 5], [4, 4])]`` -> ``([1, 3, 5], [2, 4, 5])``; ``[]`` -> two empty arrays."""
    from tokenizer.memory import release_freed_memory

    keys = np.concatenate([np.asarray(t[0], np.int64) for t in tables] + [np.zeros(0, np.int64)])
    counts = np.concatenate([np.asarray(t[1], np.int64) for t in tables] + [np.zeros(0, np.int64)])
    tables.clear()
    release_freed_memory()
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    counts = counts[order]
    del order
    if len(keys) > 1 and bool((keys[1:] == keys[:-1]).any()):
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        counts = np.add.reduceat(counts, starts)
        keys = keys[starts]
    return keys, counts


MODEL_BLOCK = 1 << 20  # n-grams per block of build_ngram_model's passes


@dataclass
class NgramTable:
    """What the driver gets from the n-gram pass (pipelines.train.bytepiece.reduce_ngrams): the kept n-grams' packed
    keys and counts (int64), the pass's statistics and what the driver's memory bound dropped."""

    keys: np.ndarray
    counts: np.ndarray
    distinct_ngrams: int
    documents: int
    chunks: int
    chunk_bytes: int
    fingerprint: str
    bound: dict = field(default_factory=dict)  # what the driver's memory bound dropped


@dataclass
class NgramModel:
    """BytePiece's pruned n-gram language model: plain arrays, picklable (a Spark broadcast).

    Attributes:
        keys: int64, sorted packed n-gram keys (all 256 single bytes, longer n-grams with count >= min_count).
        log_probs: float64, ``log c(g) - log c(g[:-1])`` per key (``c(b"")`` = total bytes).
        order, ensure_unicode: as in :class:`TrainSettings`.
    """

    keys: np.ndarray
    log_probs: np.ndarray
    order: int
    ensure_unicode: bool = True
    _table: tuple | None = field(default=None, repr=False, compare=False)

    def lookup_table(self) -> tuple:
        """The tables of :func:`tokenizer.kernels.ngram_segment.build_lookup_table_kernel`, built once; the hash
        table (tens of MB for a large corpus) in huge pages where the system gives them (fewer TLB misses)."""
        if self._table is None:
            table = fresh_array(int(lookup_table_size(self.keys)), np.int64)
            self._table = build_lookup_table_kernel(self.keys, self.log_probs, table)
        return self._table

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_table"] = None
        return state

    def log_prob(self, gram: bytes) -> float:
        """``log p`` of an n-gram, ``-inf`` when pruned: ``model.log_prob(b"ab")``."""
        i = int(np.searchsorted(self.keys, pack_ngram(gram)))
        return float(self.log_probs[i]) if i < len(self.keys) and self.keys[i] == pack_ngram(gram) else -math.inf


def kept_ngrams(keys: np.ndarray, counts: np.ndarray, min_count: int) -> np.ndarray:
    """bool mask of the packed n-grams the model keeps: every single byte, and longer n-grams with
    ``count >= min_count``. The same rule prunes the merged counts on the driver (:func:`build_ngram_model`) and
    in Spark's reduce tasks, so only what the model needs is collected.
    Example: keys of ``a``, ``ab``, ``abc`` with counts 1, 5, 2 and min_count 3 -> ``[True, True, False]``."""
    return ((keys & 7) == 1) | (counts >= min_count)


def build_ngram_model(keys, counts, settings: TrainSettings) -> NgramModel:
    """Prune the merged n-gram counts and turn them into BytePiece's conditional log probabilities (driver).

    The driver need not hold every n-gram: dropping those of length >= 2 with count < ``min_count`` before
    collecting (a filter after the reduce) gives the same model, as only the single bytes' total and the kept
    n-grams enter it.

    Example: chunk ``b"aab"``, order 2, min_count 1: total = 3 + 253 missing bytes = 256, so
    ``log p(a) = log 2 - log 256`` and ``log p(ab) = log 1 - log 2``.
    """
    keys = np.asarray(keys, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    byte_keys = (np.arange(256, dtype=np.int64) << 51) | 1
    total, present, longest = 0, np.zeros(0, np.int64), 0
    for a in range(0, len(keys), MODEL_BLOCK):  # in blocks: a few bytes per n-gram of temporaries at most
        lengths = keys[a:a + MODEL_BLOCK] & 7
        longest = max(longest, int(lengths.max()))
        single = lengths == 1
        total += int(counts[a:a + MODEL_BLOCK][single].sum())
        present = np.union1d(present, keys[a:a + MODEL_BLOCK][single])
    if longest > settings.order:
        raise ConfigError(f"the counts hold n-grams longer than order={settings.order}: count with the same order")
    missing = byte_keys[~np.isin(byte_keys, present)]
    total += len(missing)
    keep = kept_ngrams(keys, counts, settings.min_count)
    if not keep.all():
        keys, counts = keys[keep], counts[keep]
    del keep
    if len(keys) > 1 and not bool(np.all(keys[1:] >= keys[:-1])):
        order = np.argsort(keys, kind="stable")
        keys, counts = keys[order], counts[order]
        del order
    if len(missing):  # sorted keys stay sorted, equal keys cannot occur (these bytes are absent)
        at = np.searchsorted(keys, missing)
        keys, counts = np.insert(keys, at, missing), np.insert(counts, at, 1)
    log_probs = np.empty(len(keys), dtype=np.float64)
    log_total = np.log(np.float64(total))
    for a in range(0, len(keys), MODEL_BLOCK):
        block = keys[a:a + MODEL_BLOCK]
        lengths = block & 7
        logs = np.log(counts[a:a + MODEL_BLOCK].astype(np.float64))
        prefix_logs = np.full(len(block), log_total)
        multi = lengths != 1
        if multi.any():
            shifts = 3 + 8 * (7 - (lengths[multi] - 1))
            prefixes = ((block[multi] >> shifts) << shifts) | (lengths[multi] - 1)
            prefix_logs[multi] = np.log(counts[np.searchsorted(keys, prefixes)].astype(np.float64))
        log_probs[a:a + MODEL_BLOCK] = logs - prefix_logs
    return NgramModel(keys=keys, log_probs=log_probs, order=int(settings.order),
                      ensure_unicode=bool(settings.ensure_unicode))
