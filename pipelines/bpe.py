"""BPE training as Spark steps around :mod:`tokenizer.trainers.bpe`::

    documents (text: binary)
      -> mapInArrow: count_chunks per ~2 MB shard (one Numba pass: pre-tokenize + hash count -> chunk bytes and
         counts as arrays), the task's threads counting shards at once, merge_chunk_counts over the partition
         -> rows (chunk: binary, count: long), once per partition
      -> groupBy(chunk).sum(count)                  exact integer reduce, spillable
      -> collect the chunk count table, sorted by bytes (the driver's memory bound: every distinct chunk)
      -> train_from_table on the driver (Numba, incremental merges), one model per vocab size

On a local master, local text and Parquet files skip Spark's reader and the reduce: :func:`count_chunks_direct`
reads them with pyarrow in the tasks (:mod:`pipelines.direct_count`), same table. ``jobs/train_bpe.py --master
none`` runs the same monoid and the same driver step without Spark
(:func:`tokenizer.trainers.bpe.count_chunks_threaded`), so both give the same model bytes.

Counts are integers summed exactly and the driver sorts the table, so the models do not depend on the
partitioning: they equal :func:`tokenizer.trainers.bpe.train_bpe_local` on the same documents with the same
``provenance``.

Example::

    result = train_bpe_spark(corpus.documents, BpeSettings(vocab_sizes=(32000,)))
    result.models[32000].save("bpe-32000.model")
"""

from __future__ import annotations

import time
from functools import partial
from typing import Callable, Iterator

import numpy as np

from pipelines import direct_count
from pipelines.bytepiece import (SHARD_BYTES, StageReport, TrainResult, binary_array, binary_buffers, iter_shards,
                                map_shards)
from pipelines.direct_count import DirectCount
from tokenizer.errors import InputError
from tokenizer.trainers import bpe


def count_shards(settings: bpe.BpeSettings, batches: Iterator, threads: int, shard_bytes: int = SHARD_BYTES):
    """``((chunk data, chunk offsets, counts), non-empty documents)`` of Arrow batches of one binary column: cut into
    ~``shard_bytes`` shards, ``threads`` shards counted at once (:func:`~pipelines.bytepiece.map_shards`; the
    Numba pass pre-tokenizes and hash-counts, nogil), the tables summed in shard order in one pass."""
    bpe.P.char_class_table(), bpe.sentencepiece_script_table()  # cached tables, built before the threads
    tables = []
    documents = 0

    def count(shard):
        data, offsets = shard
        return int(np.count_nonzero(np.diff(offsets))), bpe.count_chunks(data, offsets, settings)

    for shard_documents, table in map_shards(count, iter_shards(batches, shard_bytes), threads):
        documents += shard_documents
        tables.append(table)
    return bpe.merge_chunk_counts(*tables), documents


def count_chunks_direct(spark, units, settings: bpe.BpeSettings, holdout_fraction: float, *,
                        threads: int | None = None, shard_bytes: int = SHARD_BYTES,
                        keep_documents: int = 2000, text_column: str = "text") -> DirectCount:
    """The chunk table of local text or Parquet files (:func:`pipelines.direct_count.direct_units`) counted by
    Spark tasks that read them with pyarrow (:func:`pipelines.direct_count.count_chunks_direct`): the table
    :func:`reduce_chunks` gives on the training documents, so the same model bytes. The result's ``tally`` is the
    number of non-empty training documents."""
    settings.validate()
    return direct_count.count_chunks_direct(spark, units, partial(count_shards, settings, shard_bytes=shard_bytes),
                                            holdout_fraction, threads=threads, keep_documents=keep_documents,
                                            text_column=text_column)


def count_chunks_partition(settings: bpe.BpeSettings, shard_bytes: int = SHARD_BYTES, threads: int = 1) -> Callable:
    """The ``mapInArrow`` function: ``(chunk: binary, count: long)`` rows of one partition, plus one row with a
    null chunk holding the partition's document count. ``threads`` shards are counted at once
    (:func:`~pipelines.bytepiece.map_shards`; the kernels release the GIL) and summed in shard order."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        (chunk_data, chunk_offsets, counts), documents = count_shards(settings, batches, threads, shard_bytes)
        if len(counts):
            yield pa.RecordBatch.from_arrays(
                [binary_array(chunk_data, chunk_offsets), pa.array(np.asarray(counts, np.int64), pa.int64())],
                names=["chunk", "count"])
        yield pa.RecordBatch.from_arrays([pa.array([None], pa.binary()), pa.array([documents], pa.int64())],
                                         names=["chunk", "count"])

    return run


def reduce_chunks(documents, settings: bpe.BpeSettings, shard_bytes: int = SHARD_BYTES,
                  threads: int | None = None) -> tuple[list[bytes], np.ndarray, int]:
    """``(chunks sorted by bytes, counts, documents)`` over a DataFrame of documents (``text: binary``);
    ``threads`` counting threads per task (default: the session's :func:`~pipelines.session.task_threads`)."""
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    from pipelines.session import task_threads

    threads = task_threads(documents.sparkSession) if threads is None else max(1, int(threads))
    counted = documents.mapInArrow(count_chunks_partition(settings, shard_bytes, threads), "chunk binary, count long")
    table = counted.groupBy("chunk").agg(F.sum("count").alias("count")).toArrow()
    counts = table.column("count").to_numpy().astype(np.int64)
    column = table.column("chunk").combine_chunks()
    is_null = column.is_null().to_numpy(zero_copy_only=False)
    n_documents = int(counts[is_null].sum())
    kept = column.filter(pc.invert(column.is_null()))
    data, offsets = binary_buffers(kept)
    chunk_data, chunk_offsets = bpe.K.gather_spans(np.ascontiguousarray(data, np.uint8), offsets[:-1], offsets[1:])
    chunks, sorted_counts = bpe.sort_chunks(chunk_data, chunk_offsets, counts[~is_null])
    return chunks, sorted_counts, n_documents


def train_bpe_spark(documents, settings: bpe.BpeSettings, *, provenance: dict | None = None,
                    progress: Callable[[str], None] = lambda message: None,
                    shard_bytes: int = SHARD_BYTES, threads: int | None = None, counted=None) -> TrainResult:
    """Train BPE models (one per ``settings.vocab_sizes``) on a DataFrame of documents (``text: binary``);
    ``threads``: counting threads per task (default: the session's task cores); same models for any value.
    ``counted``: a chunk table already counted by :func:`count_chunks_direct` (``documents`` is then not read)."""
    settings.validate()
    stages: list[StageReport] = []

    def stage(name: str, started: float, **counts) -> None:
        report = StageReport(name, time.perf_counter() - started, counts)
        stages.append(report)
        shown = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in counts.items())
        progress(f"[{name}] {report.seconds:.1f} s" + (f": {shown}" if shown else ""))

    started = time.perf_counter()
    if counted is None:
        progress(f"[chunks] pre-tokenizing ({settings.pretokenizer}) and counting chunks per partition, then "
                 "reducing")
        chunks, counts, n_documents = reduce_chunks(documents, settings, shard_bytes, threads)
    else:
        chunks, counts, n_documents = counted.chunks, counted.counts, counted.tally
        started -= counted.seconds
    if not chunks:
        raise InputError("the corpus has no text (every document is empty): check --input and --text-column")
    stage("chunks", started, documents=n_documents, distinct_chunks=len(chunks), chunks=int(counts.sum()))

    started = time.perf_counter()
    merges, models, fingerprint = bpe.train_from_table(chunks, counts, settings, provenance)
    stage("merges", started, merges=len(merges.left))
    return TrainResult(models=models, stages=stages, fingerprint=fingerprint, documents=n_documents)


bpe_table_fingerprint = bpe.bpe_table_fingerprint  # kept here too: tests and callers import it from the pipeline
