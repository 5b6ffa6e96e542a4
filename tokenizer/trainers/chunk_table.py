"""The chunk count table that unigram and BPE training fit their models to, as a monoid any engine can drive.

A shard's count is ``(data uint8, offsets int64, counts int64)`` (a chunk's bytes are
``data[offsets[i]:offsets[i + 1]]``) plus named side statistics (``{"documents": 12, "skipped_sentences": 1}``);
:func:`merge` adds two of them (chunk counts and statistics alike) and :func:`empty` is the neutral element. Spark
(:mod:`pipelines.spark.reduce`), the tasks that read files themselves (:mod:`pipelines.spark.direct_count`) and the
single-process path all reduce with these, then :func:`finish` sorts the result into a :class:`ChunkTable`, the
input of :func:`tokenizer.trainers.unigram.train_from_chunks` and :func:`tokenizer.trainers.bpe.learn_bpe`.

    >>> a = (np.frombuffer(b"abc", np.uint8), np.array([0, 2, 3]), np.array([1, 4]))    # "ab" x1, "c" x4
    >>> b = (np.frombuffer(b"ab", np.uint8), np.array([0, 2]), np.array([2]))            # "ab" x2
    >>> table = finish(*merge((a, {"documents": 1}), (b, {"documents": 2})))
    >>> list(table.chunks), table.counts.tolist(), table.stats
    ([b'ab', b'c'], [3, 4], {'documents': 3})
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tokenizer.packed import PackedBytes

Stats = dict[str, int]
Counts = tuple[np.ndarray, np.ndarray, np.ndarray]


def empty() -> tuple[Counts, Stats]:
    """The neutral element: no chunks, no statistics."""
    return (np.zeros(0, np.uint8), np.zeros(1, np.int64), np.zeros(0, np.int64)), {}


def add_stats(*stats: Stats) -> Stats:
    """Sum named statistics key by key: ``add_stats({"a": 1}, {"a": 2, "b": 1})`` -> ``{'a': 3, 'b': 1}``."""
    total: Stats = {}
    for part in stats:
        for key, value in part.items():
            total[key] = total.get(key, 0) + int(value)
    return total


def merge(*parts: tuple[Counts, Stats]) -> tuple[Counts, Stats]:
    """Sum any number of shard counts in one pass (chunk counts and statistics)."""
    from tokenizer.trainers.bpe import merge_chunk_counts

    if not parts:
        return empty()
    return merge_chunk_counts(*(counts for counts, _ in parts)), add_stats(*(stats for _, stats in parts))


@dataclass
class ChunkTable:
    """A reduced chunk table: ``chunks`` sorted by bytes (packed: a sequence of ``bytes`` without a Python object
    per chunk), their ``counts`` (int64), summed ``stats``, the first
    held-out and training documents of the corpus when the count read them itself (for the evaluation sample),
    and what the driver's memory bound dropped (``bound``, :func:`tokenizer.trainers.table_bound.report`)."""

    chunks: PackedBytes
    counts: np.ndarray
    stats: Stats
    held_out: list[bytes] = field(default_factory=list)
    training: list[bytes] = field(default_factory=list)
    bound: dict = field(default_factory=dict)

    @property
    def chunk_bytes(self) -> int:
        return self.chunks.nbytes


def finish(counts: Counts, stats: Stats, held_out: list[bytes] | None = None,
           training: list[bytes] | None = None, bound: dict | None = None) -> ChunkTable:
    """The canonical :class:`ChunkTable` of a reduced count: chunks sorted by bytes (what every fit reads)."""
    from tokenizer.trainers.bpe import sort_chunks

    chunks, sorted_counts = sort_chunks(*counts)
    return ChunkTable(chunks, sorted_counts, dict(sorted(stats.items())), list(held_out or []),
                      list(training or []), dict(bound or {}))
