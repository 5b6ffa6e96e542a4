"""SentencePiece-style unigram training's count, on any engine (:mod:`pipelines.train.engine`)::

    documents (text: binary)
      -> ChunkSplitter.count (normalize, meta pieces -> boundary, split at "▁", hash count: Numba) per ~2 MB shard
         on the engine's threads, summed (:func:`count_shards`, a :data:`pipelines.train.tables.Counter`)
      -> the engine's reduce (exact integer sums; side statistics: documents, skipped sentences)
      -> the chunk table, sorted (seeds, M-step and pruning run in this process)
    EM rounds (:mod:`pipelines.train.algorithms`), each E-step on this process's threads, or on Spark for a large
    table (:mod:`pipelines.spark.estep`)

Every reduction is an integer sum and every driver step sorts its input, so the model's bytes do not depend on
the engine, the number of partitions or the E-step mode.

Example::

    reduced = engine.count(counter(UnigramSettings(vocab_size=32000)), "bytes")
    table = pipelines.train.tables.chunk_table_of(reduced)
    model = train_from_chunks(table.chunks, table.counts, UnigramSettings(vocab_size=32000))
"""

from __future__ import annotations

from functools import partial
from typing import Iterator

import numpy as np

from pipelines.train.tables import Counter
from pipelines.read.shards import SHARD_BYTES, iter_shards, map_shards
from tokenizer.trainers import chunk_table as T
from tokenizer.trainers import unigram as ug


def count_shards(settings: ug.UnigramSettings, batches: Iterator, threads: int, shard_bytes: int = SHARD_BYTES):
    """``((chunk data, chunk offsets, counts), {"documents": n, "skipped_sentences": k})`` of Arrow batches of one
    text column: cut into ~``shard_bytes`` shards counted by ``threads`` threads at once
    (:meth:`~tokenizer.trainers.unigram.ChunkSplitter.count`, Numba, nogil), the tables summed in one pass (a
    :data:`pipelines.train.tables.Counter` once ``settings`` is bound)."""
    splitter = ug.ChunkSplitter(settings)
    splitter.normalizer, splitter.meta_pattern  # built once, before the threads share them

    def count(shard):
        chunk_data, chunk_offsets, counts, dropped = splitter.count(*shard)
        return (chunk_data, chunk_offsets, counts), {"documents": int(np.count_nonzero(np.diff(shard[1]))),
                                                     "skipped_sentences": int(dropped)}

    return T.merge(*map_shards(count, iter_shards(batches, shard_bytes), threads))


def counter(settings: ug.UnigramSettings, shard_bytes: int = SHARD_BYTES) -> Counter:
    """The job's counter (picklable: it runs in the tasks); the chunks do not depend on the vocab size."""
    settings.validate()
    return partial(count_shards, settings, shard_bytes=shard_bytes)
