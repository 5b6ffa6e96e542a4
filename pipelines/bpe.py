"""BPE's count as Spark steps around :mod:`tokenizer.trainers.bpe`::

    documents (text: binary)
      -> mapInArrow: count_chunks per ~2 MB shard (one Numba pass: pre-tokenize + hash count -> chunk bytes and
         counts as arrays), the task's threads counting shards at once, summed over the partition
      -> the count reduce of :mod:`pipelines.reduce` (exact integer sums; side statistic: documents)
      -> the chunk table, sorted by bytes, on the driver (its memory bound: every distinct chunk)
    then, in ``shardpiece train`` (:mod:`jobs.train_algorithms`), the driver's merges
    (:func:`tokenizer.trainers.bpe.learn_bpe`, Numba, incremental) and one model per vocab size.

On a local master, local text and Parquet files skip Spark's reader and the reduce: :func:`count_chunks_direct`
reads them with pyarrow in the tasks (:mod:`pipelines.direct_count`), same table. ``--master none`` runs the same
monoid without Spark (:func:`tokenizer.trainers.bpe.count_chunks_threaded`), so all three give the same model
bytes, equal to :func:`tokenizer.trainers.bpe.train_bpe_local` on the same documents with the same provenance.

Example::

    table = count_chunks(corpus.documents, BpeSettings(vocab_sizes=(32000,)))
    table.chunks[:3], table.counts[:3], table.stats["documents"]
"""

from __future__ import annotations

from functools import partial
from typing import Iterator

import numpy as np

from pipelines import direct_count, reduce
from pipelines.shards import SHARD_BYTES, iter_shards, map_shards
from tokenizer.trainers import bpe
from tokenizer.trainers import chunk_table as T


def count_shards(settings: bpe.BpeSettings, batches: Iterator, threads: int, shard_bytes: int = SHARD_BYTES):
    """``((chunk data, chunk offsets, counts), {"documents": non-empty documents})`` of Arrow batches of one binary
    column: cut into ~``shard_bytes`` shards, ``threads`` shards counted at once
    (:func:`~pipelines.shards.map_shards`; the Numba pass pre-tokenizes and hash-counts, nogil), the tables summed
    in one pass (a :data:`pipelines.reduce.Counter` once ``settings`` is bound)."""
    bpe.P.char_class_table(), bpe.sentencepiece_script_table()  # cached tables, built before the threads

    def count(shard):
        data, offsets = shard
        return bpe.count_chunks(data, offsets, settings), {"documents": int(np.count_nonzero(np.diff(offsets)))}

    return T.merge(*map_shards(count, iter_shards(batches, shard_bytes), threads))


def counter(settings: bpe.BpeSettings, shard_bytes: int = SHARD_BYTES) -> reduce.Counter:
    """The job's counter (picklable: it runs in the tasks)."""
    settings.validate()
    return partial(count_shards, settings, shard_bytes=shard_bytes)


def count_chunks(documents, settings: bpe.BpeSettings, threads: int | None = None,
                 shard_bytes: int = SHARD_BYTES, limit: int | None = None) -> T.ChunkTable:
    """The chunk table of a DataFrame of documents (``text: binary``) through Spark's reduce, at most ``limit``
    chunks (the most frequent, :func:`pipelines.reduce.bounded_collect`); ``threads`` counting threads per task
    (default: the session's :func:`~pipelines.session.task_threads`)."""
    return chunk_table_of(reduce.reduce_counts(documents, counter(settings, shard_bytes), "bytes", threads=threads,
                                               limit=limit))


def chunk_table_of(reduced: reduce.Reduced) -> T.ChunkTable:
    """The sorted :class:`~tokenizer.trainers.chunk_table.ChunkTable` of a reduced ``bytes`` table; its statistics
    as the counters gave them (the reduce's own ``distinct_keys`` is in the bound's report)."""
    stats = {k: v for k, v in reduced.stats.items() if k != "distinct_keys"}
    return T.finish(reduced.table, stats, reduced.held_out, reduced.training, reduced.bound)


def count_chunks_direct(spark, units, settings: bpe.BpeSettings, holdout_fraction: float, *,
                        threads: int | None = None, shard_bytes: int = SHARD_BYTES, keep_documents: int = 2000,
                        text_column: str = "text", limit: int | None = None) -> T.ChunkTable:
    """The chunk table of local text or Parquet files (:func:`pipelines.direct_count.direct_units`) counted by
    Spark tasks that read them with pyarrow: the table :func:`count_chunks` gives on the training documents."""
    return chunk_table_of(direct_count.count_chunks_direct(
        spark, units, counter(settings, shard_bytes), holdout_fraction, threads=threads,
        keep_documents=keep_documents, text_column=text_column, limit=limit))
