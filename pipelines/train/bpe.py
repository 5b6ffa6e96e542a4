"""BPE's count, on any engine (:mod:`pipelines.train.engine`)::

    documents (text: binary)
      -> count_chunks per ~2 MB shard (one Numba pass: pre-tokenize + hash count -> chunk bytes and counts as
         arrays), the engine's threads counting shards at once, summed (:func:`count_shards`)
      -> the engine's reduce (exact integer sums; side statistic: documents)
      -> the chunk table, sorted by bytes, in this process (its memory bound: every distinct chunk)
    then the merges (:func:`tokenizer.trainers.bpe.learn_bpe`, Numba, incremental) and one model per vocab size
    (:mod:`pipelines.train.algorithms`).

Every engine gives the same table, so the same model bytes, equal to :func:`tokenizer.trainers.bpe.train_bpe_local`
on the same documents with the same provenance.

Example::

    table = pipelines.train.tables.chunk_table_of(engine.count(counter(BpeSettings(vocab_sizes=(32000,))), "bytes"))
    table.chunks[:3], table.counts[:3], table.stats["documents"]
"""

from __future__ import annotations

from functools import partial
from typing import Iterator

import numpy as np

from pipelines.train.tables import Counter
from pipelines.read.shards import SHARD_BYTES, iter_shards, map_shards
from tokenizer.trainers import bpe
from tokenizer.trainers import chunk_table as T


def count_shards(settings: bpe.BpeSettings, batches: Iterator, threads: int, shard_bytes: int = SHARD_BYTES):
    """``((chunk data, chunk offsets, counts), {"documents": non-empty documents})`` of Arrow batches of one binary
    column: cut into ~``shard_bytes`` shards, ``threads`` shards counted at once
    (:func:`~pipelines.read.shards.map_shards`; the Numba pass pre-tokenizes and hash-counts, nogil), the tables summed
    in one pass (a :data:`pipelines.train.tables.Counter` once ``settings`` is bound)."""
    bpe.P.char_class_table(), bpe.sentencepiece_script_table()  # cached tables, built before the threads

    def count(shard):
        data, offsets = shard
        return bpe.count_chunks(data, offsets, settings), {"documents": int(np.count_nonzero(np.diff(offsets)))}

    return T.merge(*map_shards(count, iter_shards(batches, shard_bytes), threads))


def counter(settings: bpe.BpeSettings, shard_bytes: int = SHARD_BYTES) -> Counter:
    """The job's counter (picklable: it runs in the tasks)."""
    settings.validate()
    return partial(count_shards, settings, shard_bytes=shard_bytes)
