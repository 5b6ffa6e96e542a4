"""The Spark reduce of chunk counts (unigram and BPE): count a partition, sum every chunk's count, collect.

    documents (text: binary)
      -> mapInArrow: the algorithm's counter over the partition's ~2 MB shards (Numba, nogil, on the task's
         threads), its tables and statistics summed (:func:`tokenizer.trainers.chunk_table.merge`)
         -> rows (chunk: binary, count: long, stat: string) - a chunk's count (stat null), or a named side
            statistic of the partition (chunk null)
      -> groupBy(chunk, stat).sum(count)                  exact integer reduce
      -> :func:`collect_chunk_table`: the sorted :class:`~tokenizer.trainers.chunk_table.ChunkTable` on the driver

A counter is ``(Arrow batches of one binary column, threads) -> ((chunk data, chunk offsets, counts), stats)``,
the same function the direct count (:mod:`pipelines.direct_count`) runs in its tasks, so both paths give the same
table. Sums are integers and the table is sorted, so the result never depends on the partitioning.

Example::

    frame = chunk_count_frame(documents, partial(pipelines.bpe.count_shards, settings))
    table = collect_chunk_table(frame)     # table.chunks, table.counts, table.stats["documents"]
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from pipelines.shards import binary_array, binary_buffers
from tokenizer.trainers import chunk_table as T

SCHEMA = "chunk binary, count long, stat string"

#: ``(Arrow batches of one binary column, threads) -> ((data uint8, offsets int64, counts int64), stats)``
Counter = Callable[[Iterator, int], tuple[T.Counts, T.Stats]]


def count_partition(counter: Counter, threads: int) -> Callable:
    """The ``mapInArrow`` function: the partition's chunk counts and its side statistics as rows of
    :data:`SCHEMA`."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        (data, offsets, counts), stats = counter(batches, threads)
        if len(counts):
            yield pa.RecordBatch.from_arrays(
                [binary_array(data, offsets), pa.array(np.asarray(counts, np.int64), pa.int64()),
                 pa.nulls(len(counts), pa.string())], names=["chunk", "count", "stat"])
        names = sorted(stats)
        yield pa.RecordBatch.from_arrays(
            [pa.nulls(len(names), pa.binary()), pa.array([int(stats[n]) for n in names], pa.int64()),
             pa.array(names, pa.string())], names=["chunk", "count", "stat"])

    return run


def chunk_count_frame(documents, counter: Counter, threads: int | None = None):
    """The reduced counts of ``documents`` (``text: binary``) as a DataFrame of :data:`SCHEMA` (not collected:
    the unigram job's Spark E-steps read it where it is). ``threads``: counting threads per task (default: the
    session's :func:`~pipelines.session.task_threads`)."""
    from pyspark.sql import functions as F

    from pipelines.session import task_threads

    threads = task_threads(documents.sparkSession) if threads is None else max(1, int(threads))
    counted = documents.select("text").mapInArrow(count_partition(counter, threads), SCHEMA)
    return counted.groupBy("chunk", "stat").agg(F.sum("count").alias("count"))


def chunks_only(frame):
    """The ``(chunk, count)`` rows of a :func:`chunk_count_frame`, statistics left out."""
    return frame.where("chunk is not null").select("chunk", "count")


def collect_chunk_table(frame) -> T.ChunkTable:
    """Collect a :func:`chunk_count_frame` into the sorted :class:`~tokenizer.trainers.chunk_table.ChunkTable`."""
    import pyarrow.compute as pc

    from tokenizer.trainers import bpe

    arrow = frame.toArrow()
    column = arrow.column("chunk").combine_chunks()
    counts = arrow.column("count").to_numpy().astype(np.int64)
    is_stat = column.is_null().to_numpy(zero_copy_only=False)
    stats = T.add_stats(*({name: int(value)} for name, value in
                          zip(arrow.column("stat").to_pylist(), counts.tolist()) if name is not None))
    data, offsets = binary_buffers(column.filter(pc.invert(column.is_null())))
    chunk_data, chunk_offsets = bpe.K.gather_spans(np.ascontiguousarray(data, np.uint8), offsets[:-1], offsets[1:])
    return T.finish((chunk_data, chunk_offsets, counts[~is_stat]), stats)
